#!/usr/bin/env python3
"""Every example of README.md and of the pages in docs/ runs as written.  TAP.

The fenced ```sh and ```console blocks of README.md, then of each
docs/*.md beside it, are extracted and run, in order, each page in a
scratch project directory of its own with the built warden first on PATH
(and as build/warden, where the quick start leaves it), each command by
bash in its own shell, with WARDEN_STATE_DIR in a scratch directory of its
own.  A ```python block runs whole with python3, clients/python on
PYTHONPATH, in the same project.  The conventions:

  - a block whose lines start with "$ " is a transcript: those lines are
    the commands (a trailing "\\" continues one), the lines after a command
    its output; every output line shown must match a line the command
    printed (stdout or stderr), "…" matching anything and /home/me/repo
    standing for the project directory;
  - any other block: every line that is not blank or a comment is a command;
  - a command must exit 0, unless its comment ends with "(exit N)";
  - a block that cannot run here is preceded by
    <!-- readme-test: skip (why) -->, the reason being required;
  - in a ```python block, /path/to/repo stands for the project directory,
    and a comment "# prints: TEXT" is output the block must print (a
    line matching TEXT, "…" matching anything).

The project holds what the examples name: src/main.py (with "foo" in it)
and dist/pkg-1.0-py3-none-any.whl (a wheel built here).  Sessions the
examples leave are removed after each page.  Also: the MCP client
configuration of the README, with /path/to/warden as this checkout and
/path/to/repo as the project, names a warden that exists after the quick
start, and its arguments start a server (the warden under test) that
answers initialize; the README links every docs/*.md; and every
relative link of README.md, CONTRIBUTING.md, clients/python/README.md
and docs/*.md names a file that exists, and a
heading of it where the link has a #fragment (GitHub's anchors).

usage: readme.py WARDEN README"""
import glob
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

SKIP_RE = re.compile(r"<!--\s*readme-test:\s*skip\b(.*?)-->")
FENCE_RE = re.compile(r"^```(\w*)\s*$")
EXIT_RE = re.compile(r"\(exit (\d+)\)\s*$")
LINK_RE = re.compile(r"\]\(([^()\s]+)\)")
PRINTS_RE = re.compile(r"#\s*prints:\s*(.*?)\s*$")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# a hang is a failure, not a wait: generous under load and sanitizers
HANG_S = 300

n = 0
failures = 0


def tap(ok, what, detail=""):
    global n, failures
    n += 1
    if not ok:
        failures += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what), flush=True)
    if detail and not ok:
        for line in detail.rstrip("\n").splitlines()[-30:]:
            print("#   " + line, flush=True)


def blocks(readme):
    """(first line number, lang, lines, skip reason or None) per fence."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        lang = m.group(1)
        start = i + 1
        j = start
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        skip = None
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        sm = SKIP_RE.search(lines[k]) if k >= 0 else None
        if sm:
            skip = sm.group(1).strip()
        out.append((start + 1, lang, lines[start:j], skip))
        i = j + 1
    return out


def prose(path):
    """(line number, line) of a page outside its code fences."""
    out = []
    fence = False
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append((i, line))
    return out


def anchors(path):
    """GitHub's anchors of a page's headings: lower case, punctuation but
    '-' and '_' dropped, blanks as '-', repeats numbered."""
    seen = {}
    out = set()
    for _, line in prose(path):
        m = HEADING_RE.match(line)
        if not m:
            continue
        a = re.sub(r"[^\w\- ]", "", m.group(2).replace("`", "").lower()).replace(" ", "-")
        if a in seen:
            seen[a] += 1
            a = "%s-%d" % (a, seen[a])
        else:
            seen[a] = 0
        out.add(a)
    return out


def check_links(top, pages):
    """Every relative link of each page reaches a file, and its heading."""
    for page in pages:
        bad = []
        for ln, line in prose(page):
            for target in LINK_RE.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, https:, mailto:
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(dest):
                    bad.append("%d: %s: no such file" % (ln, target))
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    bad.append("%d: %s: no heading with that anchor" % (ln, target))
        tap(not bad, "%s: every relative link reaches its file and heading"
            % os.path.relpath(page, top), "\n".join(bad))


def commands(first, block):
    """(line number, command, expected status, expected output lines)."""
    cmds = []
    transcript = any(line.startswith("$ ") for line in block)
    i = 0
    while i < len(block):
        line = block[i]
        ln = first + i
        i += 1
        if transcript:
            if not line.startswith("$ "):
                if cmds:
                    cmds[-1][3].append(line)
                continue
            line = line[2:]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\") and i < len(block):
            line = line + "\n" + (block[i][2:] if block[i].startswith("> ") else block[i])
            i += 1
        m = EXIT_RE.search(line)
        cmds.append([ln, line, int(m.group(1)) if m else 0, []])
    return cmds


def shown_matches(expected, printed, project):
    exp = expected.rstrip().replace("/home/me/repo", project)
    if not exp:
        return True
    rx = re.compile(".*".join(re.escape(p) for p in exp.split("…")))
    return any(rx.fullmatch(p.rstrip()) for p in printed.splitlines())


def make_project(top):
    # at most three levels below /, as /home/me/repo is: the README's
    # ../../../etc/passwd leads to /etc/passwd
    project = tempfile.mkdtemp(prefix="wd-readme.", dir="/tmp")
    os.chmod(project, 0o755)
    os.makedirs(os.path.join(project, "src"))
    os.makedirs(os.path.join(project, "dist"))
    with open(os.path.join(project, "src", "main.py"), "w") as f:
        f.write('print("foo")\n')
    files = {
        "pkg/__init__.py": b"VALUE = 1\n",
        "pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n",
        "pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: readme.py\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    whl = os.path.join(project, "dist", "pkg-1.0-py3-none-any.whl")
    with zipfile.ZipFile(whl, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))
        record.append("pkg-1.0.dist-info/RECORD,,")
        z.writestr("pkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return project


def cleanup_sessions(warden, env):
    p = subprocess.run([warden, "ls", "--json"], env=env, capture_output=True, text=True,
                       timeout=HANG_S)
    try:
        ids = [s["id"] for s in json.loads(p.stdout)]
    except (ValueError, KeyError, TypeError):
        ids = []
    if ids:
        subprocess.run([warden, "rm"] + ids, env=env, capture_output=True, timeout=HANG_S)


def mcp_config(readme, warden, project):
    """The README's MCP client configuration starts a server that answers."""
    src = os.path.dirname(os.path.abspath(readme))
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"MCP client's configuration.*?```json\n(.*?)```", text, re.S)
    if not m:
        tap(False, "README: an MCP client configuration (```json after "
                   "\"MCP client's configuration\")")
        return
    conf = json.loads(m.group(1))["mcpServers"]["warden"]
    command = conf["command"].replace("/path/to/warden", src)
    args = [a.replace("/path/to/repo", project) for a in conf["args"]]
    # after the quick start (make build, which make check runs first),
    # build/warden of this checkout exists; the server is then started as
    # configured, with the warden under test (the ASan run's own)
    exists = os.path.isfile(command) and os.access(command, os.X_OK)
    tap(exists and os.path.basename(command) == "warden",
        "README MCP configuration: %s exists after the quick start" % conf["command"],
        "resolved to %s" % command)
    command = warden
    req = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "readme-test", "version": "1"}}}
    p = subprocess.run([command] + args, input=json.dumps(req) + "\n", capture_output=True,
                       text=True, timeout=HANG_S, env=ENV)
    try:
        first = json.loads(p.stdout.splitlines()[0])
        ok = first.get("id") == 1 and "serverInfo" in first.get("result", {})
    except (ValueError, IndexError, AttributeError):
        ok = False
    tap(ok and p.returncode == 0,
        "README MCP configuration: the server starts and answers initialize",
        "status %d\nstdout: %s\nstderr: %s" % (p.returncode, p.stdout, p.stderr))


def main():
    global ENV
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        # the examples' sessions are root's here (cgroup v1: an ordinary
        # user's need --best-effort, which the README does not show)
        if os.environ.get("WD_MUST_WORK") == "1":
            print("not ok 1 - integration tests need root\n1..1")
            return 1
        print("1..0 # SKIP integration tests need root")
        return 77
    warden = os.path.realpath(sys.argv[1])
    readme = sys.argv[2]
    top = tempfile.mkdtemp(prefix="wd-readme-top.")
    state = os.path.join(top, "state")
    os.mkdir(state, 0o700)
    bindir = os.path.join(top, "bin")
    os.mkdir(bindir)
    os.symlink(warden, os.path.join(bindir, "warden"))
    src = os.path.dirname(os.path.abspath(readme))
    pages = [readme] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    ENV = dict(os.environ, WARDEN_STATE_DIR=state,
               PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
    ENV.pop("WARDEN", None)
    pyenv = dict(ENV, PYTHONPATH=os.path.join(src, "clients", "python"))
    total = 0
    project = None
    try:
        for page in pages:
            name = os.path.relpath(page, src)
            project = make_project(top)
            os.mkdir(os.path.join(project, "build"))
            os.symlink(warden, os.path.join(project, "build", "warden"))
            ran = skipped = 0
            for first, lang, block, skip in blocks(page):
                if lang not in ("sh", "console", "python"):
                    continue
                if skip is not None:
                    good = re.fullmatch(r"\(.+\)", skip) is not None
                    tap(good, "%s:%d: skipped %s" % (name, first, skip),
                        "a skip needs its reason: <!-- readme-test: skip (why) -->")
                    skipped += 1
                    continue
                if lang == "python":
                    shown = [m.group(1) for m in map(PRINTS_RE.search, block) if m]
                    todo = [(first, "\n".join(block).replace("/path/to/repo", project), 0,
                             shown)]
                else:
                    todo = commands(first, block)
                for ln, cmd, want, shown in todo:
                    ran += 1
                    argv = ["python3", "-c", cmd] if lang == "python" else ["bash", "-c", cmd]
                    try:
                        p = subprocess.run(argv, cwd=project,
                                           env=pyenv if lang == "python" else ENV,
                                           stdin=subprocess.DEVNULL, capture_output=True,
                                           text=True, errors="replace", timeout=HANG_S)
                        status, printed = p.returncode, p.stdout + p.stderr
                    except subprocess.TimeoutExpired as e:
                        status, printed = "hung (%d s)" % HANG_S, str(e)
                    missing = [s for s in shown if not shown_matches(s, printed, project)]
                    what = "python block" if lang == "python" else cmd.splitlines()[0]
                    tap(status == want and not missing,
                        "%s:%d: %s (exit %d)" % (name, ln, what, want),
                        "exit %s\noutput:\n%s\nnot shown by it:\n%s"
                        % (status, printed, "\n".join(missing)))
            total += ran
            if page == readme:
                # the front page shows each front end working: a test that
                # cannot fail is no test
                tap(ran >= 5, "ran %d commands of README.md (%d blocks skipped)" % (ran, skipped))
                mcp_config(readme, warden, project)
            cleanup_sessions(warden, ENV)
            shutil.rmtree(project, ignore_errors=True)
            project = None
        tap(total >= 15, "ran %d commands of README.md and docs/ in all" % total)
        # the README is the front page: every page of docs/ is linked from it
        linked = {os.path.normpath(os.path.join(src, t.partition("#")[0]))
                  for _, line in prose(readme) for t in LINK_RE.findall(line)}
        unlinked = [os.path.relpath(p, src) for p in pages[1:] if p not in linked]
        tap(not unlinked, "README.md links every page of docs/", "not linked: %s"
            % " ".join(unlinked))
        check_links(src, pages + [os.path.join(src, "CONTRIBUTING.md"),
                                  os.path.join(src, "clients", "python", "README.md")])
    finally:
        cleanup_sessions(warden, ENV)
        if project:
            shutil.rmtree(project, ignore_errors=True)
        shutil.rmtree(top, ignore_errors=True)
    print("1..%d" % n)
    return 1 if failures else 0


ENV = None

if __name__ == "__main__":
    sys.exit(main())
