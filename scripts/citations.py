#!/usr/bin/env python3
"""citations.py [SOURCE_ROOT]: fail when a tracked file cites a document or
an issue a reader of this repository cannot open.

The repository is its own map: a comment or page that says why cites
docs/architecture.md, docs/threat-model.md, CONTRIBUTING.md or another
file in the tree, never a design document or issue tracker kept
elsewhere. Checked: every file git tracks (every file under the root when
it is not a git checkout), except this script and the fuzz corpora
(inputs, not prose). A citation is "DESIGN.md", "STYLE.md" or "issue N",
also wrapped over two comment lines. Prints file:line: text for each and
exits 1; 0 when there is none.
"""
import os
import re
import subprocess
import sys

CITE = re.compile(r"\b(?:DESIGN|STYLE)\.md\b|\bissue\s*(?:\n[ \t]*(?:\*|#|//)?[ \t]*)?[0-9]+",
                  re.IGNORECASE)
SELF = "scripts/citations.py"


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    bad = 0
    for rel in sorted(tracked(root)):
        if rel == SELF or rel.startswith("fuzz/corpus/"):
            continue
        try:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        except OSError:
            continue  # a tracked file deleted in the work tree cites nothing
        if b"\0" in data:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for m in CITE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            shown = m.group(0).replace("\n", " ")
            print(f"{rel}:{line}: cites '{shown}', which is not in this repository")
            bad += 1
    if bad:
        print(f"citations: {bad} citation(s) of documents or issues outside the repository; "
              "cite docs/architecture.md, docs/threat-model.md or CONTRIBUTING.md instead")
        return 1
    print("citations: none outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
