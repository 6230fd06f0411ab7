# Summarizes p1-rounds.txt and p16-rounds.txt of DIR (server-cpu-rounds.sh output):
#   /usr/bin/python3 summarize.py DIR > DIR/summary.txt
# Ratios cand/base: exp(mean of paired log ratios), Student-t 95 % interval.
import math, statistics as st, sys
from scipy import stats
for f, n in [(sys.argv[1] + '/p1-rounds.txt', 100000), (sys.argv[1] + '/p16-rounds.txt', 1000000)]:
    rows = {}
    for line in open(f):
        p = line.split()
        kv = dict(x.split('=') for x in p[2:])
        rows.setdefault(int(p[0]), {})[p[1]] = kv
    pairs = [v for v in rows.values() if len(v) == 2]
    def ratio(key):
        logs = [math.log(float(v['cand'][key]) / float(v['base'][key])) for v in pairs]
        m, se = st.mean(logs), st.stdev(logs) / math.sqrt(len(logs))
        t = stats.t.ppf(0.975, len(logs) - 1)
        return f"{math.exp(m):.3f} [{math.exp(m - t * se):.3f}, {math.exp(m + t * se):.3f}]"
    us = lambda side: st.median(float(v[side]['task-clock']) * 1e3 / n for v in pairs)
    print(f"{f}: {len(pairs)} pairs; server CPU per request base {us('base'):.3f} us, cand {us('cand'):.3f} us; "
          f"cand/base CPU {ratio('task-clock')}, requests/s {ratio('rps')}, context switches {ratio('context-switches')}")
