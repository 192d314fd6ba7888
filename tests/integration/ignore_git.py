#!/usr/bin/env python3
"""warden's ignore matcher (files/ignore.c) against git's own.

git is the reference: for generated trees (.gitignore files in several
directories with patterns drawn from every rule of gitignore(5), and
.git/info/exclude), every path of the tree is asked of `git check-ignore
--no-index` and of wd-ignore (the same matcher `warden diff` uses), and
the answers must be the same.  A fixed seed per round: a failure names the
round, the patterns and the paths that differ.  TAP.

usage: ignore_git.py WD_IGNORE"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROUNDS = int(os.environ.get("WD_IGNORE_ROUNDS", "40"))
NAMES = ["a", "b", "ab", "abc", "x.log", "y.log", "build", "dist", "node_modules",
         "src", "deep", "a.c", "b.h", "foo", "foo bar", "#h", "!bang", "[x]", "a*b", "1",
         "doc", "Makefile", "tmp.o", "q?"]
ATOMS = ["a", "b", "ab", "*", "?", "**", "*.log", "x.*", "[ab]", "[!a]", "[a-c]*", "[^b]",
         "build", "dist", "node_modules", "src", "deep", "*.c", "foo*", "f?o", "a*b",
         "\\#h", "\\!bang", "\\[x]", "[[:digit:]]", "[[:alpha:]]*", "a**", "**b", "a\\*b",
         "doc", "q\\?", "foo bar", "[]a]", "[a-]", "*[!.]*"]


def pattern(rng):
    n = rng.choice([1, 1, 1, 2, 2, 3])
    parts = [rng.choice(ATOMS) for _ in range(n)]
    p = "/".join(parts)
    r = rng.random()
    if r < 0.15:
        p = "/" + p
    elif r < 0.25:
        p = "**/" + p
    if rng.random() < 0.2:
        p += "/"
    elif rng.random() < 0.05:
        p += "/**"
    if rng.random() < 0.2:
        p = "!" + p
    r = rng.random()
    if r < 0.05:
        p += "   "  # trailing spaces: trimmed
    elif r < 0.08:
        p += "\\ "  # an escaped one: kept
    elif r < 0.1:
        p = "# " + p  # a comment
    elif r < 0.12:
        p += "\r"  # a CRLF line
    return p


def build(rng, root):
    paths = []

    def mk(rel, depth):
        for name in rng.sample(NAMES, rng.randint(2, 6)):
            p = f"{rel}/{name}" if rel else name
            if depth < 3 and rng.random() < 0.45:
                os.mkdir(os.path.join(root, p))
                paths.append(p)
                mk(p, depth + 1)
            else:
                with open(os.path.join(root, p), "w") as f:
                    f.write("x")
                paths.append(p)

    mk("", 0)
    dirs = [""] + [p for p in paths if os.path.isdir(os.path.join(root, p))]
    rules = {}
    for d in rng.sample(dirs, min(len(dirs), rng.randint(1, 4))):
        lines = [pattern(rng) for _ in range(rng.randint(1, 6))]
        rules[os.path.join(d, ".gitignore")] = lines
        with open(os.path.join(root, d, ".gitignore"), "w") as f:
            f.write("\n".join(lines) + "\n")
        paths.append(os.path.join(d, ".gitignore"))
    if rng.random() < 0.5:
        lines = [pattern(rng) for _ in range(rng.randint(1, 3))]
        rules[".git/info/exclude"] = lines
        os.makedirs(os.path.join(root, ".git/info"), exist_ok=True)
        with open(os.path.join(root, ".git/info/exclude"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return paths, rules


def ask(argv, paths, cwd, env):
    r = subprocess.run(argv, input="".join(p + "\0" for p in paths).encode(), cwd=cwd,
                       env=env, capture_output=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"Bail out! {argv[0]} failed: {r.stderr.decode(errors='replace')}")
    return set(x.decode() for x in r.stdout.split(b"\0") if x)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 125
    helper = sys.argv[1]
    if not shutil.which("git"):
        # scripts/deps.sh installs it: missing in CI is a failure
        if os.environ.get("WD_MUST_WORK") == "1":
            print("Bail out! no git (the reference), and WD_MUST_WORK=1")
            return 1
        print("1..0 # SKIP no git (the reference)")
        return 77
    # git as the reference, and nothing of this machine's configuration:
    # no global excludes file, no system config
    home = tempfile.mkdtemp(prefix="wd-ignore-home.")
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C")
    print(f"1..{ROUNDS + 1}")
    total = ignored = 0
    failed = 0
    for rnd in range(ROUNDS):
        rng = random.Random(1000 + rnd)
        root = tempfile.mkdtemp(prefix="wd-ignore.")
        try:
            subprocess.run(["git", "init", "-q", root], env=env, check=True)
            paths, rules = build(rng, root)
            want = ask(["git", "check-ignore", "--no-index", "-z", "--stdin"], paths, root, env)
            got = ask([helper, root], paths, root, env)
            total += len(paths)
            ignored += len(want)
            if want == got:
                print(f"ok {rnd + 1} - round {rnd}: {len(paths)} paths, {len(want)} ignored, "
                      "the same as git check-ignore")
            else:
                failed += 1
                print(f"not ok {rnd + 1} - round {rnd}: differs from git check-ignore")
                for f, lines in rules.items():
                    print(f"#   {f}: {lines!r}")
                for p in sorted(want - got):
                    print(f"#   git ignores, warden does not: {p!r}")
                for p in sorted(got - want):
                    print(f"#   warden ignores, git does not: {p!r}")
        finally:
            shutil.rmtree(root)
    shutil.rmtree(home)
    # a corpus where nothing or everything is ignored proves nothing
    ok = 0 < ignored < total
    print(f"{'ok' if ok else 'not ok'} {ROUNDS + 1} - the corpus has both answers: "
          f"{ignored} of {total} paths ignored")
    return 1 if failed or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
