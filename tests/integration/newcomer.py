#!/usr/bin/env python3
"""A newcomer's paper cuts, each a real run of the built warden.  TAP.

  - `warden approve --json` prints the grant as one object (id, argv, cwd,
    workspace, policy, ttl, expires, ...) that is really recorded (`check`
    then says approved), a model's control bytes escaped, and bad input as
    {"status":125,"error":...};
  - `warden serve --socket` refuses an empty path and a path directly in /
    (what "$XDG_RUNTIME_DIR/warden.sock" becomes with the variable unset)
    with 125 naming --socket, creating nothing; a path in a directory
    still serves;
  - examples/agent_loop.py without warden on PATH says "warden not found"
    and exits non-zero, no traceback.

usage: newcomer.py WARDEN AGENT_LOOP"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HANG_S = 60
n = 0
failures = 0


def tap(ok, what, detail=""):
    global n, failures
    n += 1
    if not ok:
        failures += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what), flush=True)
    if detail and not ok:
        for line in str(detail).rstrip("\n").splitlines()[-20:]:
            print("#   " + line, flush=True)


def run(argv, env, cwd=None, stdin=subprocess.DEVNULL):
    """A refusal returns at once; a command still running after HANG_S
    (a server that was not refused: it serves until stopped) is killed
    and reported as status -1."""
    try:
        return subprocess.run(argv, env=env, cwd=cwd, stdin=stdin, capture_output=True,
                              timeout=HANG_S)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(argv, -1, e.stdout or b"",
                                           (e.stderr or b"") + b"\n(still running: killed)")


def pause(warden, env, ws, command):
    p = run([warden, "check", "--json", "-w", ws, "--command", command], env)
    d = json.loads(p.stdout)
    return p.returncode, d


def approve(warden, env, ws):
    rc, d = pause(warden, env, ws, "git push origin main")
    tap(rc == 123 and d.get("decision") == "pause", "check: git push pauses (123)",
        "%d %r" % (rc, d))
    full = d["approval_id"]
    p = run([warden, "approve", "--json", full[:12]], env)
    try:
        g = json.loads(p.stdout)
    except ValueError:
        g = {}
    tap(p.returncode == 0 and set(g) == {"id", "argv", "env", "cwd", "workspace", "system", "state",
                                         "policy", "policy_source", "rule", "reason",
                                         "granted", "expires", "ttl"}
        and g["state"].get("complete") is True,
        "approve --json: one object with the grant's fields",
        "status %d\nstdout %r\nstderr %r" % (p.returncode, p.stdout, p.stderr))
    tap(g.get("id") == full and g.get("argv") == ["git", "push", "origin", "main"]
        and g.get("cwd") == "." and g.get("workspace") == os.path.realpath(ws)
        and g.get("system") == "host"
        and g.get("policy") == d.get("policy") and g.get("ttl") == 600
        and g.get("expires", 0) - g.get("granted", 0) == 600
        and abs(g.get("granted", 0) - time.time()) < 3600,
        "approve --json: the full id from a prefix, the exact argv, cwd, workspace, "
        "policy digest, ttl 600 and expires = granted + ttl", repr(g))
    rc, d2 = pause(warden, env, ws, "git push origin main")
    tap(d2.get("approved") is True, "the grant is recorded: check says approved", repr(d2))

    # --ttl, and a model's argument holding an escape sequence
    rc, d = pause(warden, env, ws, "git push origin '\x1b[2Kmain\u202e'")
    p = run([warden, "approve", "--json", "--ttl", "7", d["approval_id"]], env)
    g = json.loads(p.stdout) if p.returncode == 0 else {}
    tap(g.get("ttl") == 7 and g.get("expires", 0) - g.get("granted", 0) == 7,
        "approve --json --ttl 7: ttl and expires say 7 s", repr(g))
    tap(p.returncode == 0 and b"\x1b" not in p.stdout and b"\xe2\x80\xae" not in p.stdout
        and g.get("argv", [None])[-1:] != [None],
        "approve --json: the model's ESC and U+202E are escaped, not printed raw",
        repr(p.stdout))

    for args, names in ((["deadbeefdead"], "deadbeefdead"), (["--ttl", "0", "x"], "--ttl"),
                        ([], "approval id"), (["--bogus", "x"], "--bogus")):
        p = run([warden, "approve", "--json"] + args, env)
        try:
            e = json.loads(p.stdout)
        except ValueError:
            e = {}
        tap(p.returncode == 125 and e.get("status") == 125 and names in e.get("error", ""),
            "approve --json %s: 125, {\"status\":125,\"error\"} naming %s"
            % (" ".join(args), names),
            "status %d\nstdout %r\nstderr %r" % (p.returncode, p.stdout, p.stderr))


def serve_socket(warden, env, top):
    root_sock_before = os.path.lexists("/warden.sock")
    env_unset = dict(env)
    env_unset.pop("XDG_RUNTIME_DIR", None)
    cases = [
        (["bash", "-c", 'exec "$0" serve --socket "$XDG_RUNTIME_DIR/warden.sock"', warden],
         None, "\"$XDG_RUNTIME_DIR/warden.sock\" with the variable unset"),
        ([warden, "serve", "--socket", ""], None, "--socket ''"),
        ([warden, "serve", "--socket", "//warden.sock"], None, "--socket //warden.sock"),
        ([warden, "serve", "--socket", "/tmp/../warden.sock"], None,
         "--socket /tmp/../warden.sock"),
        ([warden, "serve", "--socket", "warden.sock"], "/", "--socket warden.sock in /"),
    ]
    for argv, cwd, what in cases:
        p = run(argv, env_unset, cwd=cwd)
        err = p.stderr.decode(errors="replace")
        tap(p.returncode == 125 and "--socket" in err and "directory" in err,
            "serve %s: 125 naming --socket, suggesting a directory" % what,
            "status %d\nstderr %s" % (p.returncode, err))
    if not root_sock_before:
        made = os.path.lexists("/warden.sock")
        tap(not made, "nothing created at /warden.sock")
        if made:
            os.unlink("/warden.sock")  # this test's own server made it
    # the control: a socket in a directory serves
    sock = os.path.join(top, "ok.sock")
    srv = subprocess.Popen([warden, "serve", "--socket", sock], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + HANG_S
        while not os.path.exists(sock) and srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        tap(os.path.exists(sock) and srv.poll() is None,
            "serve --socket DIR/ok.sock: listening", "exit %r" % srv.poll())
    finally:
        srv.terminate()
        srv.wait(timeout=HANG_S)


def agent_loop(loop):
    for extra, what in (([], "PATH cleared"), (["--warden", "/nonexistent/warden"],
                                                "--warden /nonexistent/warden")):
        p = subprocess.run([sys.executable, "-B", loop] + extra, env={"PATH": ""},
                           capture_output=True, timeout=HANG_S, cwd="/")
        err = p.stderr.decode(errors="replace")
        tap(p.returncode not in (0, 77) and "warden not found" in err
            and "Traceback" not in err,
            "agent_loop.py, %s: \"warden not found\", exit %d, no traceback"
            % (what, p.returncode), err)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    warden, loop = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    top = tempfile.mkdtemp(prefix="wd-newcomer.")
    try:
        state = os.path.join(top, "state")
        os.mkdir(state, 0o700)
        ws = os.path.join(top, "ws")
        os.mkdir(ws)
        env = dict(os.environ, WARDEN_STATE_DIR=state)
        approve(warden, env, ws)
        serve_socket(warden, env, top)
        agent_loop(loop)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("1..%d" % n)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
