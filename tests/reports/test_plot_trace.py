"""tests/reports/test_plot_trace.py: `coact-plot trace` (reports/coact_reports/
plot_trace.py) on a synthetic per-mail trace: the spans it reads are the
handler slices' args, the plot is written, and a file that is not a coact
trace is a data error (exit 1) named in one line."""

import json
import os
import unittest

from support import TempDirCase

from coact_reports import cli
from coact_reports.plot_trace import load_spans, percentile


def handler(name, construct, queued, drain, run):
    return {"name": name, "cat": "handler", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": run,
            "args": {"t_sent": 0, "construct_us": construct, "queued_us": queued, "drain_us": drain,
                     "handler_us": run}}


class PlotTrace(TempDirCase):
    def setUp(self):
        super().setUp()
        ev = [handler("A::on(M)", 1, float(i), 0, 2) for i in range(1, 101)]
        ev += [handler("B::on(N)", 0, 5, 7, 9)] * 3
        ev.append({"name": "C::on(M)", "cat": "handler", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 1,
                   "args": {}})  # untraced: not counted
        self.path = self.write("t.json", json.dumps({"traceEvents": ev}))

    def test_spans_and_plot(self):
        s = load_spans(self.path)
        self.assertEqual(sorted(s), ["A::on(M)", "B::on(N)"])
        self.assertEqual(len(s["A::on(M)"]["queued_us"]), 100)
        self.assertEqual(percentile(s["A::on(M)"]["queued_us"], 0.9), 90.0)
        self.assertEqual(s["B::on(N)"]["drain_us"], [7.0] * 3)
        out = os.path.join(self.tmp, "spans.png")
        self.assertEqual(cli.main(["trace", self.path, "-o", out]), 0)
        self.assertGreater(os.path.getsize(out), 1000)

    def test_not_a_trace(self):
        bad = self.write("bad.json", "[1, 2]")
        self.assertEqual(cli.main(["trace", bad, "-o", os.path.join(self.tmp, "x.png")]), 1)
        self.assertEqual(cli.main(["trace", self.path, "-o", os.path.join(self.tmp, "x.pdf")]), 2)


if __name__ == "__main__":
    unittest.main()
