#!/usr/bin/python3
"""ctest design_file_map: docs/DESIGN.md's file maps match the tree.

Each section titled "### Where each ... lives (`DIR`)" holds a fenced block
naming the files of DIR with the mechanism each holds. Every .cpp/.hpp under
DIR must be named there (by its path under DIR; by its name alone, for
detail/; through its companion, x.hpp beside a named x.cpp; or under a named
directory "sub/"), and every file the block names must exist. Each file under
DIR must also open with a comment (the line saying which mechanism it holds).

Usage: check_file_map.py SOURCE_DIR. Exit 0 when every map matches, 1 with
one line per mismatch otherwise, 2 for a usage error.
"""
import os
import re
import sys

SECTION = re.compile(r"^### Where each .* lives \(`([^`]+)`\)\s*$", re.M)
NAME = re.compile(r"[\w./-]*\w\.(?:cpp|hpp|py)\b")
DIRECTORY = re.compile(r"^([\w-]+/)\s", re.M)


def maps(design):
    """(DIR, block text) for each map section of DESIGN.md."""
    out = []
    for m in SECTION.finditer(design):
        start = design.index("```", m.end())
        end = design.index("```", start + 3)
        out.append((m.group(1), design[start + 3:end]))
    return out


def files_under(root):
    found = []
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith((".cpp", ".hpp")):
                found.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(found)


def check(source):
    design = open(os.path.join(source, "docs", "DESIGN.md"), encoding="utf-8").read()
    problems = []
    found_maps = maps(design)
    if not found_maps:
        return ["docs/DESIGN.md: no section '### Where each ... lives (`DIR`)'"]
    for rel_dir, block in found_maps:
        root = os.path.join(source, rel_dir)
        if not os.path.isdir(root):
            problems.append(f"docs/DESIGN.md: the map of `{rel_dir}` names a directory that does not exist")
            continue
        named = set(NAME.findall(block))
        dirs = set(DIRECTORY.findall(block))
        tree = files_under(root)
        basenames = {os.path.basename(f) for f in tree}
        for n in sorted(named):
            if not (os.path.isfile(os.path.join(root, n)) or os.path.isfile(os.path.join(source, n))
                    or ("/" not in n and n in basenames)):
                problems.append(f"docs/DESIGN.md: the map of `{rel_dir}` names {n}, which is not in the tree")
        for d in sorted(dirs):
            if not os.path.isdir(os.path.join(root, d)):
                problems.append(f"docs/DESIGN.md: the map of `{rel_dir}` names {d}, which is not a directory")
        for f in tree:
            stem, ext = os.path.splitext(f)
            companion = stem + (".cpp" if ext == ".hpp" else ".hpp")
            covered = (f in named or os.path.basename(f) in named or companion in named
                       or any(f.startswith(d) for d in dirs))
            if not covered:
                problems.append(f"{rel_dir}/{f}: not in docs/DESIGN.md's map of `{rel_dir}`")
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                first = fh.readline()
            if not first.startswith("//"):
                problems.append(f"{rel_dir}/{f}: does not open with a comment saying what it holds")
    return problems


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_file_map.py SOURCE_DIR", file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
