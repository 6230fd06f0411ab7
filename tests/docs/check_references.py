#!/usr/bin/python3
"""What a script can check of the documentation and the comments (the rules
are in CONTRIBUTING.md). Prints each offence as FILE:LINE: WHAT: TEXT and
exits 1 if there is any, 0 otherwise, 2 on a usage error.

1. The README, CONTRIBUTING.md, docs/**/*.md, the tools' READMEs,
   reports/README.md and the installed headers speak of the repository only:
   no path outside it (../shared, seeds/), no seed documents, no issue numbers
   of the project's tracker (a user's clone has none of them).
2. Their relative Markdown links ([text](path), ![alt](path)) name files or
   directories that exist.
3. README.md has at most 350 lines and cites no commit (a 7-40 digit hex word
   that git resolves to a commit of this repository; without git, any such
   word with both letters and digits).
4. No source file (runtime, causal, calibrate, tools, bench, examples,
   reports, scripts, tests) refers to the seed documents.
5. No source file or installed header names a CAPITALS.md document the
   repository does not have (CONVENTIONS.md, say).
6. A code block marked as an excerpt (`<!-- excerpt: PATH -->` on the line
   before its fence) quotes PATH: each of its lines but `// ...` and blank
   ones is a line of PATH (leading and trailing blanks aside).
7. No comment under runtime/, causal/ or calibrate/ carries a date
   (YYYY-MM-DD; an ISO-8601 timestamp given as a format example,
   YYYY-MM-DDThh:mm, is not a date of something that happened).

Usage: check_references.py REPO_ROOT
"""
import glob
import os
import re
import subprocess
import sys

README_MAX_LINES = 350

PATTERNS = [
    (re.compile(r"\.\./shared"), "a path outside the repository"),
    (re.compile(r"\bseeds?/"), "the seed documents"),
    (re.compile(r"\bseed 0\d\d\b"), "a seed document"),
    (re.compile(r"\b[Ii]ssue #?\d+\b"), "an issue of the project's tracker"),
    (re.compile(r"(?<![\w/])DESIGN\.md"), "DESIGN.md without docs/ (it is docs/DESIGN.md)"),
]
SEED_PATTERNS = [
    (re.compile(r"\bseeds?/"), "the seed documents"),
    (re.compile(r"\bseed 0\d\d\b"), "a seed document"),
    (re.compile(r"\bseed (document|section)s?\b", re.I), "a seed document"),
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEX_WORD = re.compile(r"(?<![\w./-])[0-9a-f]{7,40}(?![\w/-])")
DOC_NAME = re.compile(r"(?<![\w.-])((?:[\w.-]+/)*[A-Z][A-Z_]+\.md)\b")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b(?!T\d\d:)")
EXCERPT = re.compile(r"^<!-- excerpt: (\S+) -->$")
SOURCE_EXT = (".cpp", ".hpp", ".h", ".py", ".sh", ".cmake", ".in", "CMakeLists.txt")


def docs_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "CONTRIBUTING.md")]
    files += glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)
    files += glob.glob(os.path.join(root, "tools", "*", "README.md"))
    files += glob.glob(os.path.join(root, "reports", "README.md"))
    return [f for f in files if os.path.isfile(f)]


def header_files(root):
    files = []
    for lib in ("runtime", "causal", "calibrate"):
        files += glob.glob(os.path.join(root, lib, "include", "**", "*.hpp"), recursive=True)
    return files


def source_files(root, dirs):
    out = []
    for d in dirs:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            out += [os.path.join(dirpath, n) for n in names if n.endswith(SOURCE_EXT)]
    return sorted(out)


def is_commit(root, word, cache={}):
    if word not in cache:
        try:
            r = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", word + "^{commit}"],
                               capture_output=True, timeout=30)
            cache[word] = r.returncode == 0 if r.returncode in (0, 1) else None
        except (OSError, subprocess.TimeoutExpired):
            cache[word] = None
        if cache[word] is None:  # no git here: any hex word with letters and digits
            cache[word] = bool(re.search(r"[a-f]", word) and re.search(r"\d", word))
    return cache[word]


def comment_part(line, path):
    """The comment text of a C++ line (after //, or a block comment's line)."""
    if path.endswith(".py") or path.endswith(".sh"):
        i = line.find("#")
        return line[i:] if i >= 0 else ""
    i = line.find("//")
    if i >= 0:
        return line[i:]
    s = line.lstrip()
    if s.startswith("/*") or s.startswith("*"):
        return s
    return ""


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    root = argv[0]
    if not os.path.isfile(os.path.join(root, "README.md")):
        print(f"check_references.py: '{root}' has no README.md: not the repository root", file=sys.stderr)
        return 2
    problems = []

    def bad(path, n, what, text):
        problems.append(f"{os.path.relpath(path, root)}:{n}: {what}: {text.strip()}")

    docs = docs_files(root)
    for path in sorted(set(docs + header_files(root))):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for n, line in enumerate(lines, 1):
            for pat, what in PATTERNS:
                if pat.search(line):
                    bad(path, n, what, line)
            if path.endswith(".md"):
                for target in LINK.findall(line):
                    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                        continue
                    rel = target.split("#", 1)[0]
                    if not os.path.exists(os.path.join(os.path.dirname(path), rel)):
                        bad(path, n, f"a link to '{target}', which does not exist", line)

    for path in sorted(set(docs)):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for i, line in enumerate(lines):
            m = EXCERPT.match(line.strip())
            if not m:
                continue
            src = os.path.join(root, m.group(1))
            if not os.path.isfile(src):
                bad(path, i + 1, f"an excerpt of '{m.group(1)}', which does not exist", line)
                continue
            with open(src, encoding="utf-8") as f:
                have = {l.strip() for l in f}
            j = i + 2  # past the fence
            while j < len(lines) and not lines[j].strip().startswith("```"):
                q = lines[j].strip()
                if q and q != "// ..." and q not in have:
                    bad(path, j + 1, f"not a line of {m.group(1)} (the excerpt's source)", lines[j])
                j += 1

    readme = os.path.join(root, "README.md")
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > README_MAX_LINES:
        bad(readme, len(lines), f"README.md has {len(lines)} lines, more than {README_MAX_LINES}",
            "move what is not for a user to docs/")
    for n, line in enumerate(lines, 1):
        for word in HEX_WORD.findall(line):
            if is_commit(root, word):
                bad(readme, n, f"a commit id ({word}): the README cites no commit", line)

    self_path = os.path.abspath(__file__)
    for path in source_files(root, ("runtime", "causal", "calibrate", "tools", "bench", "examples", "reports",
                                    "scripts", "tests")):
        if os.path.abspath(path) == self_path or os.sep + "fixtures" + os.sep in path:
            continue
        dated = os.path.relpath(path, root).split(os.sep)[0] in ("runtime", "causal", "calibrate")
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                for pat, what in SEED_PATTERNS:
                    if pat.search(line):
                        bad(path, n, what, line)
                for doc in DOC_NAME.findall(line):
                    if os.path.basename(doc) in ("FILE.md", "NAME.md"):  # a usage line's placeholder
                        continue
                    here = os.path.join(os.path.dirname(path), doc)
                    if not any(os.path.exists(p) for p in (os.path.join(root, doc), os.path.join(root, "docs", doc),
                                                            here)):
                        bad(path, n, f"{doc}, which the repository does not have", line)
                if dated and DATE.search(comment_part(line, path)):
                    bad(path, n, "a date in a comment (history goes to docs/perf/history/)", line)

    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
