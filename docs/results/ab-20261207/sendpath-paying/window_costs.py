# Per real row of a validate run (its --out directory): the prediction windows at 0 and at s,
# their rate gain, the other handlers' time per unit of progress, s x the region's time share,
# and the cores busy in handlers. Usage: window_costs.py OUT_DIR...
import json,glob,collections,sys
for d in sys.argv[1:]:
  print('==',d)
  byreg=collections.defaultdict(lambda:{0:collections.Counter(),1:collections.Counter()})
  for f in glob.glob(d+'/*.jsonl'):
    try: recs=[json.loads(l) for l in open(f) if l.startswith('{"type":"experiment"')]
    except Exception: continue
    if len(recs)<3 or len(set(r['speedup'] for r in recs))!=2: continue
    reg=recs[0]['region']; agg=byreg[reg]
    for r in recs[1:]:
        k=1 if r['speedup']>0 else 0; a=agg[k]
        a['prog']+=sum(r['progress'].values()); a['dur']+=r['duration_ns']; a['eff']+=r['effective_ns']; a['delay']+=r['delay_ns']; a['n']+=1
        a['sel']+=r['region_ns']; a['s']=r['speedup'] if k else 0
        a['other']+=sum(h['ns'] for n,h in r['handlers'].items() if n!=reg)
  for reg,agg in byreg.items():
    a0,a1=agg[0],agg[1]
    if not a0['prog'] or not a1['prog']: continue
    pred=a1['prog']/a1['eff']/(a0['prog']/a0['eff'])-1
    o0=a0['other']/a0['prog']; o1=a1['other']/a1['prog']
    sel0=a0['sel']/a0['prog']; tot0=o0+sel0
    print('%-55s s=%.2f n=%d pred %+.2f%%  other/unit %+.2f%%  s*sel/total %.2f%%  busy0 %.2f busy1 %.2f'%(reg[-55:],a1['s'],a0['n']+a1['n'],100*pred,100*(o1/o0-1),100*a1['s']*sel0/tot0, (a0['other']+a0['sel'])/a0['dur'], (a1['other']+a1['sel'])/a1['dur']))
