#!/usr/bin/env python3
"""scripts/deps.py (test `layering`) on copies of the tree with a fault put in:

- the tree as it is passes, and names how many headers it checked;
- a cycle among a module's own headers (src/server/srv.h including
  server/run.h, which includes srv.h) is refused, naming both headers;
- a header including itself is refused;
- the server's message layer reaching the library (server/base.h
  including warden.h, which rpc.c, tooldefs.c and the rest of
  server_pure_sources include) is refused with the chain of includes;
- ... and so is it reaching the server's own API through a header of
  the layer (server/rpc.h including server/server.h).

  deps_check.py SOURCE_ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print("%s %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        FAILED += 1


def copy_tree(root, dst):
    """What deps.py reads: docs/architecture.md and src/ (sources, meson.build)."""
    os.makedirs(os.path.join(dst, "docs"))
    shutil.copy(os.path.join(root, "docs", "architecture.md"), os.path.join(dst, "docs"))
    shutil.copytree(os.path.join(root, "src"), os.path.join(dst, "src"),
                    ignore=lambda d, names: [n for n in names
                                             if os.path.isfile(os.path.join(d, n)) and
                                             not n.endswith((".c", ".h", "meson.build"))])


def add_include(path, after, line):
    """Put `line` after the first line matching the regex `after`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(after, text, re.M)
    assert m, f"{path}: no line matching {after}"
    end = text.index("\n", m.end()) + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:end] + line + "\n" + text[end:])


def run(deps, tree):
    p = subprocess.run([sys.executable, deps, tree], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main(root):
    deps = os.path.join(root, "scripts", "deps.py")
    with tempfile.TemporaryDirectory(prefix="wd-deps-check.") as d:
        clean = os.path.join(d, "clean")
        copy_tree(root, clean)
        rc, out = run(deps, clean)
        check(rc == 0 and re.search(r"\d+ headers, no cycle", out),
              "the tree as it is passes, its headers counted")
        if rc != 0:
            print(out)

        def faulty(path, after, line):
            """deps.py on the copy with line added to path (then taken out)."""
            full = os.path.join(clean, path)
            with open(full, encoding="utf-8") as f:
                kept = f.read()
            add_include(full, after, line)
            try:
                return run(deps, clean)
            finally:
                with open(full, "w", encoding="utf-8") as f:
                    f.write(kept)

        rc, out = faulty("src/server/srv.h", r'^#include "server/rpc.h"',
                         '#include "server/run.h"')
        check(rc == 1 and re.search(r"cycle between headers of src/server: .*"
                                    r"src/server/run.h <-> src/server/srv.h", out),
              "srv.h <-> run.h: a cycle among the server's headers is refused, both named")

        rc, out = faulty("src/server/http.h", r"^#define WD_SERVER_HTTP_H",
                         '#include "server/http.h"')
        check(rc == 1 and "src/server/http.h: includes itself" in out,
              "a header including itself is refused")

        rc, out = faulty("src/server/base.h", r"^#define WD_SERVER_BASE_H",
                         '#include "warden.h"')
        check(rc == 1 and re.search(r"src/server/rpc.c:\d+ -> (src/server/\w+\.h:\d+ -> )*"
                                    r"src/server/base.h:\d+: the message layer \(rpc.c, "
                                    r".*reaches warden.h", out),
              "base.h including warden.h: the message layer's chain to the library is named")

        rc, out = faulty("src/server/rpc.h", r"^#define WD_SERVER_RPC_H",
                         '#include "server/server.h"')
        check(rc == 1 and "reaches server/server.h" in out and "tooldefs.c" in out,
              "rpc.h including server/server.h: refused for every file that reaches it")
    print("deps_check: %d failure(s)" % FAILED)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(__file__), "..", "..")))
