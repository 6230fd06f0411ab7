#!/usr/bin/python3
"""reports/coact_plot.py: the `coact-plot` command, run from the source tree.

The code lives in the package next to this file, reports/coact_reports/
(installed as `coact-plot`); see reports/README.md. Importing this file
gives the package's public names (``import coact_plot as cp; cp.analyze``).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from coact_reports import *  # noqa: E402,F401,F403
from coact_reports import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
