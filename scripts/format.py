#!/usr/bin/env python3
"""format.py [SOURCE_ROOT] [--fix]: fail when a tracked C file is not as
clang-format (.clang-format at the root) would write it.

Checked: every *.c and *.h git tracks (every one under the root, build
trees aside, when it is not a git checkout).  A file that must keep a
hand-made layout marks the lines with "clang-format off/on" comments and
says why.  Prints FILE:LINE: for the first lines clang-format would change
in each file and exits 1; 0 when every file is formatted.  --fix rewrites
the files in place (clang-format -i).  Without clang-format the check
cannot run: exit 77 (a skip, which WD_MUST_WORK=1 makes a failure;
scripts/deps.sh installs it).
"""
import os
import re
import shutil
import subprocess
import sys

BUILD_DIRS = ("build", "build-asan", "build-tsan", "build-fuzz", "build-cache", "build-image")


def sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.c", "*.h"],
                             check=True, capture_output=True).stdout
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, subdirs, files in os.walk(root):
            rel = os.path.relpath(d, root)
            subdirs[:] = [s for s in subdirs
                          if not (rel == "." and (s.startswith(BUILD_DIRS) or s.startswith(".")))]
            found += [os.path.normpath(os.path.join(rel, f)) for f in files
                      if f.endswith((".c", ".h"))]
        return sorted(found)


def main():
    args = [a for a in sys.argv[1:] if a != "--fix"]
    fix = "--fix" in sys.argv[1:]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    tool = shutil.which("clang-format")
    if not tool:
        print("format: clang-format is not installed (scripts/deps.sh installs it)")
        return 77
    files = sources(root)
    if fix:
        subprocess.run([tool, "-i", "--style=file"] + files, cwd=root, check=True)
        return 0
    bad = 0
    where = re.compile(r"^(.*?):(\d+):\d+: (?:warning|error):")
    for i in range(0, len(files), 64):
        batch = files[i:i + 64]
        r = subprocess.run([tool, "--dry-run", "--style=file", "--ferror-limit=3"] + batch,
                           cwd=root, capture_output=True, text=True, errors="replace")
        seen = set()
        for line in r.stderr.splitlines():
            m = where.match(line)
            if m and (m.group(1), m.group(2)) not in seen:
                seen.add((m.group(1), m.group(2)))
                print(f"{os.path.relpath(m.group(1), root) if os.path.isabs(m.group(1)) else m.group(1)}:"
                      f"{m.group(2)}: not as clang-format writes it")
        bad += len({f for f, _ in seen})
    if bad:
        print(f"format: {bad} of {len(files)} files differ from clang-format's layout; "
              f"python3 scripts/format.py --fix rewrites them")
        return 1
    print(f"format: {len(files)} files as clang-format writes them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
