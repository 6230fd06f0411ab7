#!/usr/bin/python3
"""reports/coact_plot.py: the `coact-plot` command, run from the source tree.

The code lives in the package next to this file, reports/coact_reports/
(installed as `coact-plot`); see reports/README.md. Run as a script, its
directory is first on Python's import path, so the package is found without
PYTHONPATH. Importing this file gives the package's public names
(``import coact_plot as cp; cp.analyze``) to code with reports/ on its path.
"""

import sys

from coact_reports import *  # noqa: F401,F403
from coact_reports import main

if __name__ == "__main__":
    sys.exit(main())
