"""The ranking table and the plot say what "program speedup" means (Coz's:
less time per progress visit) and show the same change as a rise in visits
per second, 1/(1-x) - 1 (a user measuring throughput would otherwise read a
predicted 33% as 33% more items per second, when it is 50%)."""
import os
import tempfile
import unittest
import warnings

import matplotlib

matplotlib.use("Agg")

from support import FIXTURES  # noqa: E402

from coact_reports import estimate, plot_curves, ranking  # noqa: E402
from coact_reports.profile import ProfileWarning, load_profiles  # noqa: E402

TOY_COZ = os.path.join(FIXTURES, "toy.coz")
A = "/home/coz/toy/toy.cpp:27"   # planted: program speedup = s / 2


class DefinitionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ProfileWarning)
            cls.results = estimate.analyze(load_profiles([TOY_COZ]), min_points=3)

    def test_table_defines_program_speedup_and_shows_the_rate_gain(self):
        table = ranking.format_ranking(self.results)
        lines = table.splitlines()
        self.assertIn("@50% as rate", lines[0])
        row = next(line for line in lines if A in line)
        # @50% predicts +25.0% less time per visit = 1/(1-0.25) - 1 = +33.3% visits per second.
        self.assertIn("+25.0%", row)
        self.assertIn("  +33.3%  ", row + "  ")
        self.assertIn("time per progress visit", table)
        self.assertIn("1 / (1 - program speedup) - 1", table)

    def test_plot_has_a_rate_axis(self):
        import matplotlib.pyplot as plt
        saved = {}
        real_save = plot_curves._save

        def keep(fig, output):
            saved["fig"] = fig
            real_save(fig, output)
        plot_curves._save = keep
        try:
            with tempfile.TemporaryDirectory() as d:
                plot_curves.plot_profile(self.results[:2], os.path.join(d, "c.png"))
        finally:
            plot_curves._save = real_save
        axes = saved["fig"].get_axes()
        axes += [c for a in axes for c in a.child_axes]   # secondary axes are children
        labels = [a.get_ylabel() for a in axes]
        self.assertTrue(any("time per visit" in l for l in labels), labels)
        self.assertTrue(any("more visits per second" in l for l in labels), labels)
        texts = " ".join(t.get_text() for t in saved["fig"].texts)
        self.assertIn("1/(1-x) - 1", texts)
        plt.close(saved["fig"])


if __name__ == "__main__":
    unittest.main()
