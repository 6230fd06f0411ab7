#!/usr/bin/python3
"""reports/coact_run.py: the source tree's one launcher of the report package
(reports/coact_reports/) for the scripts and the build: it calls
coact_reports.MODULE.main(ARGS). Run as a script, its directory is first on
Python's import path, which is how the package is found; PYTHONPATH is not
used because the tools run programs (benchmarks, compared builds) that would
inherit it. `coact-plot` from the source tree is reports/coact_plot.py; the
installed commands are reports/coact-plot and reports/coact-perf-compare.

Usage: coact_run.py [--prog NAME] [--installed] MODULE [ARGS...]
  --prog NAME   the name the tool's messages use (a main that takes prog=)
  --installed   run as the installed command (a main that takes installed=)
Exit status: MODULE's; 2 for an unknown module or option of this launcher.
"""
import importlib
import sys

MODULES = ("bench", "bench_groups", "kvbench", "perfcompare", "perfdoc", "estimate", "cli")


def main(argv):
    kwargs = {}
    while argv and argv[0] in ("--prog", "--installed"):
        if argv[0] == "--installed":
            kwargs["installed"] = True
            argv = argv[1:]
        elif len(argv) >= 2:
            kwargs["prog"] = argv[1]
            argv = argv[2:]
        else:
            argv = []
    if not argv or argv[0] not in MODULES:
        got = f"'{argv[0]}'" if argv else "nothing"
        print(f"coact_run.py: expected a module of coact_reports ({', '.join(MODULES)}), got {got}",
              file=sys.stderr)
        return 2
    module = importlib.import_module(f"coact_reports.{argv[0]}")
    return module.main(argv[1:], **kwargs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
