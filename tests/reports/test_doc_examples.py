#!/usr/bin/python3
"""The ranking tables the documentation shows are coact-plot's output.

A code block in README.md or docs/*.md that shows a ranking is preceded by a
marker naming the stored profile it was printed from:

    <!-- ranking of PROFILE -->
    <!-- ranking of PROFILE; namespaces dropped: NS -->

(PROFILE relative to the repository root; NS, when given, is removed from
every region name, the column widths left as printed). This test prints
`coact-plot profile PROFILE` and compares its table and its settled line with
the block, so a change to what coact-plot prints, or to the stored profile,
fails here instead of leaving the documentation showing an older tool's
output. To update a block, print the command and paste the table up to and
including its `settled:` / `not settled:` line.
"""

import os
import re
import unittest

from support import ROOT, read, run_cli

MARKER = re.compile(r"^<!-- ranking of (?P<path>\S+?)(?:; namespaces dropped: (?P<ns>\S+))? -->$")


def documents():
    """README.md and docs/*.md, as paths relative to ROOT."""
    docs = os.path.join(ROOT, "docs")
    return ["README.md"] + sorted(os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md"))


def marked_blocks(text):
    """(marker line number, profile path, namespace or None, block lines) for
    every marker in text; the block is the fenced code block that follows the
    marker (blank lines between them allowed). A marker with no block after it
    yields block None."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        block = None
        if j < len(lines) and lines[j].startswith("```"):
            end = next((k for k in range(j + 1, len(lines)) if lines[k].startswith("```")), None)
            if end is not None:
                block = lines[j + 1:end]
        yield i + 1, m.group("path"), m.group("ns"), block


def printed_table(path, ns):
    """coact-plot profile PATH's table and its settled line, NS removed from
    the region names."""
    p = run_cli("profile", os.path.join(ROOT, path))
    if p.returncode != 0:
        raise AssertionError(f"coact-plot profile {path} exited {p.returncode}: {p.stderr}")
    out = []
    for line in p.stdout.splitlines():
        out.append(line.replace(ns, "") if ns else line)
        if line.startswith(("settled:", "not settled:")):
            return out
    raise AssertionError(f"coact-plot profile {path} printed no settled line:\n{p.stdout}")


class DocumentedRankingsTest(unittest.TestCase):
    def test_marker_grammar(self):
        blocks = list(marked_blocks("x\n<!-- ranking of a/b.coz; namespaces dropped: n:: -->\n\n```\nt\n```\n"
                                    "<!-- ranking of c.jsonl -->\nprose\n"))
        self.assertEqual(blocks, [(2, "a/b.coz", "n::", ["t"]), (7, "c.jsonl", None, None)])

    def test_every_marked_table_is_what_coact_plot_prints(self):
        seen = 0
        for doc in documents():
            for lineno, path, ns, block in marked_blocks(read(os.path.join(ROOT, doc))):
                where = f"{doc}:{lineno}"
                seen += 1
                with self.subTest(where=where):
                    self.assertIsNotNone(block, f"{where}: a ranking marker must be followed by a code block")
                    self.assertTrue(os.path.isfile(os.path.join(ROOT, path)), f"{where}: no file {path}")
                    self.assertEqual(block, printed_table(path, ns),
                                     f"{where}: the block is not what `coact-plot profile {path}` prints now")
        # The README's and profiling.md's examples are marked: a marker lost in
        # an edit would otherwise pass with nothing checked.
        self.assertGreaterEqual(seen, 2)


if __name__ == "__main__":
    unittest.main()
