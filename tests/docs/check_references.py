#!/usr/bin/python3
"""The README, docs/*.md, the tools' READMEs and the installed headers speak
of the repository only: no path outside it (../shared, seeds/), no seed
documents, no issue numbers of the project's tracker (a user's clone has
none of them). Prints each offending line as FILE:LINE: TEXT; exit 1 if any.

Usage: check_references.py REPO_ROOT
"""
import glob
import os
import re
import sys

PATTERNS = [
    (re.compile(r"\.\./shared"), "a path outside the repository"),
    (re.compile(r"\bseeds?/"), "the seed documents"),
    (re.compile(r"\bseed 0\d\d\b"), "a seed document"),
    (re.compile(r"\b[Ii]ssue #?\d+\b"), "an issue of the project's tracker"),
    (re.compile(r"(?<![\w/])DESIGN\.md"), "DESIGN.md without docs/ (it is docs/DESIGN.md)"),
]


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    root = argv[0]
    files = [os.path.join(root, "README.md")]
    files += glob.glob(os.path.join(root, "docs", "*.md"))
    files += glob.glob(os.path.join(root, "tools", "*", "README.md"))
    files += glob.glob(os.path.join(root, "reports", "README.md"))
    for lib in ("runtime", "causal", "calibrate"):
        files += glob.glob(os.path.join(root, lib, "include", "**", "*.hpp"), recursive=True)
    bad = 0
    for path in sorted(files):
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for pat, what in PATTERNS:
                    if pat.search(line):
                        print(f"{os.path.relpath(path, root)}:{n}: {what}: {line.strip()}")
                        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
