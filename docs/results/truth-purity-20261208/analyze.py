# Per archiver stage, from alternating truth runs (summaries.jsonl: one line per round, the
# run's --summary-json): the measured speedup, the share of the baseline's handler time per
# unit that the variant's units saved in the stage's own handler, in the other handlers and
# in all, and the cores busy in handlers; mean with a Student-t 95% half-width over rounds.
# Usage: /usr/bin/python3 analyze.py [summaries.jsonl]
import json, sys, statistics as st
from collections import defaultdict
from scipy import stats

REGION = {'Compressor': 'coact::dedup::Compressor::on(coact::dedup::NewChunk)',
          'Reader': 'coact::dedup::Reader::on(coact::dedup::Pump)',
          'Chunker': 'coact::dedup::Chunker::on(coact::dedup::Block)',
          'Fingerprinter': 'coact::dedup::Fingerprinter::on(coact::dedup::RawChunk)',
          'Index': 'coact::dedup::Index::on(coact::dedup::HashedChunk)',
          'Writer': 'coact::dedup::Writer::on(coact::dedup::PackedChunk)'}
path = sys.argv[1] if len(sys.argv) > 1 else __file__.rsplit('/', 1)[0] + '/summaries.jsonl'
rounds = defaultdict(list)
for line in open(path):
    j = json.loads(line)
    rounds[j['stage']].append(j['summary']['alternate'])


def mean_t95(v):
    m = st.mean(v)
    return m, stats.t.ppf(0.975, len(v) - 1) * st.stdev(v) / len(v) ** 0.5


print('%-13s %2s %15s %15s %15s %15s %6s' % ('stage', 'n', 'speedup %', 'own saved %', 'others saved %',
                                             'all saved %', 'busy'))
for stage, reg in REGION.items():
    cols = defaultdict(list)
    for a in rounds.get(stage, []):
        per = {}
        for arm in ('baseline', 'variant'):
            n = len(a[arm]['seconds'])
            per[arm] = {h: v['ns'] / n for h, v in a[arm]['regions'].items()}
        tot = sum(per['baseline'].values())
        cols['speedup'].append(100 * (1 - st.mean(a['variant']['seconds']) / st.mean(a['baseline']['seconds'])))
        cols['own'].append(100 * (per['baseline'][reg] - per['variant'][reg]) / tot)
        cols['others'].append(100 * sum(per['baseline'][h] - per['variant'].get(h, 0)
                                        for h in per['baseline'] if h != reg) / tot)
        cols['all'].append(100 * (1 - sum(per['variant'].values()) / tot))
        cols['busy'].append(tot / 1e9 / st.mean(a['baseline']['seconds']))
    if len(cols['speedup']) < 2:
        continue
    cells = ['%6.2f ± %5.2f' % mean_t95(cols[k]) for k in ('speedup', 'own', 'others', 'all')]
    print('%-13s %2d %s %6.2f' % (stage, len(cols['speedup']), ' '.join('%15s' % c for c in cells),
                                 st.mean(cols['busy'])))
