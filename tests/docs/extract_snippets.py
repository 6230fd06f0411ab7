#!/usr/bin/python3
"""Extracts every fenced ```cpp block of the given Markdown files into OUT_DIR
as one .cpp file each (named after the file and the block's first line), and
prints a manifest line per block: NAME|KIND|SOURCE:LINE, KIND being
"program" (it defines main: built and run) or "fragment" (compiled only).
A file is rewritten only when its content changed, so unchanged snippets are
not rebuilt. Used by tests/docs/CMakeLists.txt at configure time.

Usage: extract_snippets.py OUT_DIR FILE.md...
"""
import os
import re
import sys


def blocks(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```cpp\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i + 1
        j = start
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            sys.exit(f"{path}:{i + 1}: ```cpp block is not closed")
        yield start + 1, "\n".join(lines[start:j]) + "\n"
        i = j + 1


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    root = os.path.commonpath([os.path.abspath(p) for p in argv[1:]] + [os.getcwd()])
    for md in argv[1:]:
        stem = re.sub(r"[^A-Za-z0-9]+", "_", os.path.splitext(os.path.basename(md))[0]).strip("_").lower()
        for line, code in blocks(md):
            name = f"snippet_{stem}_{line}"
            kind = "program" if re.search(r"^\s*int\s+main\s*\(", code, re.M) else "fragment"
            rel = os.path.relpath(os.path.abspath(md), root)
            text = f"// Extracted from {rel}:{line} by tests/docs/extract_snippets.py; edit the Markdown.\n" \
                   f"#line {line} \"{os.path.abspath(md)}\"\n" + code
            dest = os.path.join(out, name + ".cpp")
            old = None
            if os.path.exists(dest):
                with open(dest, encoding="utf-8") as f:
                    old = f.read()
            if old != text:
                with open(dest, "w", encoding="utf-8") as f:
                    f.write(text)
            print(f"{name}|{kind}|{rel}:{line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
