#!/bin/bash
mkdir -p /tmp/sendpath-paying
# Reader row's truth: alternating run, direct sends vs the paying path at speedup 0, interleaved.
B=/work/main/build/relwithdebinfo/examples/dedup/coact-dedup
cd /tmp/sendpath-paying
for i in $(seq 1 ${1:-6}); do for buf in 0 1; do
COACT_CAUSAL=1 COACT_CAUSAL_FIXED_REGION="coact::dedup::Reader::on(coact::dedup::Pump)" COACT_CAUSAL_FIXED_SPEEDUP=0 \
COACT_CAUSAL_PAYING_BASELINE=$buf COACT_CAUSAL_PROGRESS=chunks COACT_CAUSAL_OUTPUT= COACT_CAUSAL_EXPERIMENT_MS=1000 \
COACT_CAUSAL_MAX_EXPERIMENT_MS=1000 COACT_CAUSAL_JSON_OUTPUT=/tmp/sendpath-paying/p-$buf-$i.jsonl \
$B archive /usr/share/doc -o /dev/shm/sp.cdar -q --seconds 9 --fast-reader --alternate --summary-json /tmp/sendpath-paying/s-$buf-$i.json
done; done
/usr/bin/python3 - <<'PY'
import json,statistics as st,glob
for buf in (0,1):
    sp=[]
    for f in sorted(glob.glob(f'/tmp/sendpath-paying/s-{buf}-*.json')):
        j=json.load(open(f))['alternate']
        a=st.mean(j['baseline']['seconds']); b=st.mean(j['variant']['seconds']); sp.append(100*(1-b/a))
    print('paying' if buf else 'direct', [round(x,1) for x in sp], 'mean %.2f sd %.2f se %.2f'%(st.mean(sp), st.stdev(sp), st.stdev(sp)/len(sp)**.5))
PY
