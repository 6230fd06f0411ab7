#!/bin/bash
# usage: predict_binaries.sh OUTDIR N BIN1 BIN2 ... : the Reader prediction (windows alternating 0/${PCT:-19} %, 500 ms, 12 s) per coact-dedup binary, interleaved
OUT=$1; N=$2; shift 2

mkdir -p $OUT
for i in $(seq 1 $N); do c=0; for cfg in "$@"; do c=$((c+1))
env COACT_CAUSAL=1 COACT_CAUSAL_FIXED_REGION="coact::dedup::Reader::on(coact::dedup::Pump)" COACT_CAUSAL_FIXED_SPEEDUP=0 \
 COACT_CAUSAL_ALTERNATE_SPEEDUP=${PCT:-19} COACT_CAUSAL_PROGRESS=chunks COACT_CAUSAL_OUTPUT= COACT_CAUSAL_EXPERIMENT_MS=500 \
 COACT_CAUSAL_MAX_EXPERIMENT_MS=500 COACT_CAUSAL_JSON_OUTPUT=$OUT/p-$c-$i.jsonl \
 $cfg archive /usr/share/doc -o /dev/shm/pr.cdar -q --seconds ${SECS:-12} >/dev/null 2>&1
done; done
/usr/bin/python3 - "$OUT" "$#" <<'PY'
import json,glob,sys,statistics as st
out,n=sys.argv[1],int(sys.argv[2])
for c in range(1,n+1):
    v=[]
    for f in sorted(glob.glob(f'{out}/p-{c}-*.jsonl')):
        recs=[json.loads(l) for l in open(f) if l.startswith('{"type":"experiment"')][1:]
        a={0:[0,0],1:[0,0]}
        for r in recs:
            k=1 if r['speedup']>0 else 0; a[k][0]+=r['progress']['chunks']; a[k][1]+=r['effective_ns']
        v.append(100*((a[1][0]/a[1][1])/(a[0][0]/a[0][1])-1))
    print('cfg',c,[round(x,2) for x in v],'mean %.2f se %.2f'%(st.mean(v),st.stdev(v)/len(v)**.5))
PY
