#!/usr/bin/python3
"""tools/coact-trace/trace_view.py: a minimal local viewer for a coact trace
(Chrome trace-event JSON): writes one self-contained HTML page that draws a
time window of it on a canvas (one track per thread, complete slices coloured
by name, instants as ticks, flow arrows from s to f, counters as steps), for
a headless browser to screenshot where Perfetto's UI is not available:

  trace_view.py TRACE.json OUT.html [--from-us T] [--span-us D]
  chromium --headless --screenshot=view.png --window-size=1600,700 file://$PWD/OUT.html

Default window: the first 2000 us after the first handler slice.
"""

import argparse
import json
import sys

PAGE = r"""<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0;font:12px sans-serif;background:#fff}canvas{display:block}</style></head><body>
<canvas id="c"></canvas><script>
const T = __TRACE__; const W0 = __FROM__, SPAN = __SPAN__;
const c = document.getElementById('c'), g = c.getContext('2d');
const W = window.innerWidth, LEFT = 170, TRACKH = 44, TOP = 30;
const names = {}; const tids = [];
for (const e of T) if (e.ph === 'M' && e.name === 'thread_name') names[e.tid] = e.args.name;
for (const e of T) if (e.tid !== undefined && e.tid > 0 && !tids.includes(e.tid)) tids.push(e.tid);
tids.sort((a, b) => a - b);
const counterRow = T.some(e => e.ph === 'C');
c.width = W; c.height = TOP + TRACKH * (tids.length + (counterRow ? 1 : 0)) + 20;
const x = ts => LEFT + (ts - W0) / SPAN * (W - LEFT - 10);
const y = tid => TOP + tids.indexOf(tid) * TRACKH;
function hue(s) { let h = 0; for (const ch of s) h = (h * 31 + ch.charCodeAt(0)) >>> 0; return h % 360; }
g.fillStyle = '#222'; g.fillText(`coact trace, ${W0.toFixed(0)}..${(W0 + SPAN).toFixed(0)} us`, 8, 16);
for (let i = 0; i <= 10; i++) { const t = W0 + SPAN * i / 10; g.fillStyle = '#ccc'; g.fillRect(x(t), TOP - 4, 1, c.height); g.fillStyle = '#555'; g.fillText(`${(t - W0).toFixed(0)} us`, x(t) + 2, TOP - 6); }
for (const tid of tids) { g.fillStyle = '#f4f4f4'; g.fillRect(0, y(tid), W, TRACKH - 4); g.fillStyle = '#000'; g.fillText(names[tid] || `tid ${tid}`, 6, y(tid) + 16); }
const inWin = (a, b) => b >= W0 && a <= W0 + SPAN;
for (const e of T) if (e.ph === 'X' && inWin(e.ts, e.ts + e.dur)) {
  const depth = e.cat === 'handler' ? 0 : (e.cat === 'idle' ? 0 : 1);
  const x0 = Math.max(x(e.ts), LEFT), x1 = Math.min(x(e.ts + e.dur), W);
  g.fillStyle = e.cat === 'idle' ? '#ddd' : `hsl(${hue(e.name)},60%,62%)`;
  g.fillRect(x0, y(e.tid) + 4 + depth * 18, Math.max(1, x1 - x0), 16);
  if (x1 - x0 > 60) { g.fillStyle = '#000'; g.save(); g.beginPath(); g.rect(x0, y(e.tid), x1 - x0, TRACKH); g.clip(); g.fillText(e.name.replace(/\(anonymous namespace\)::|coact::dedup::/g, ''), x0 + 2, y(e.tid) + 16 + depth * 18); g.restore(); }
}
for (const e of T) if ((e.ph === 'i') && e.tid !== undefined && inWin(e.ts, e.ts)) { g.fillStyle = e.name === 'park' ? '#c00' : (e.name === 'wake' ? '#0a0' : '#06c'); g.fillRect(x(e.ts), y(e.tid) + 2, 2, TRACKH - 8); }
const starts = {}; for (const e of T) if (e.ph === 's') starts[e.id] = e;
g.strokeStyle = 'rgba(0,0,0,0.45)';
for (const e of T) if (e.ph === 'f' && starts[e.id]) { const s = starts[e.id]; if (!inWin(Math.min(s.ts, e.ts), Math.max(s.ts, e.ts))) continue;
  g.beginPath(); g.moveTo(x(s.ts), y(s.tid) + 30); g.lineTo(x(e.ts), y(e.tid) + 6); g.stroke(); }
if (counterRow) { const cy = TOP + tids.length * TRACKH; g.fillStyle = '#000'; g.fillText('causal experiment (speedup %)', 6, cy + 16);
  let last = null; for (const e of T) if (e.ph === 'C') { if (last && inWin(last.ts, e.ts)) { g.fillStyle = '#a60'; const h = (last.args.speedup_pct || 0) / 100 * 30; g.fillRect(Math.max(x(last.ts), LEFT), cy + 34 - h, x(e.ts) - Math.max(x(last.ts), LEFT), h); } last = e; } }
</script></body></html>"""


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("out")
    p.add_argument("--from-us", type=float)
    p.add_argument("--span-us", type=float, default=2000.0)
    a = p.parse_args(argv)
    try:
        with open(a.trace) as f:
            doc = json.load(f)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
    except (OSError, ValueError, KeyError, TypeError) as ex:
        print(f"trace_view.py: {a.trace}: not a trace-event JSON file ({ex})", file=sys.stderr)
        return 2
    if a.from_us is None:
        hs = [e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") == "handler"]
        a.from_us = min(hs) if hs else 0.0
    lo, hi = a.from_us - a.span_us, a.from_us + 2 * a.span_us
    keep = [e for e in events
            if e.get("ph") in ("M", "C") or (e.get("ts", 0) <= hi and e.get("ts", 0) + e.get("dur", 0) >= lo)]
    html = PAGE.replace("__TRACE__", json.dumps(keep)).replace("__FROM__", repr(a.from_us)).replace(
        "__SPAN__", repr(a.span_us))
    with open(a.out, "w") as f:
        f.write(html)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
