"""A client of `warden serve` (JSON-RPC 2.0 over stdio or a unix socket).

Standard library only.  One connection carries any number of calls at
once, from any number of threads: a reader thread matches answers to
callers by id and hands streamed output to the callback of the call it
belongs to.

    from warden import Client, Denied, Paused

    with Client.stdio(workspace="/path/to/repo") as client:   # starts warden
        with client.sandbox() as sb:
            r = sb.exec("pytest -q", on_output=lambda stream, text: print(text, end=""))
            print(r.status)
            sb.write_file("notes.txt", "hello\\n")
            print(sb.read_file("notes.txt"))

    client = Client.connect("/run/user/1000/warden.sock")      # a running server
"""
import base64
import itertools
import json
import os
import shutil
import socket
import subprocess
import threading

# JSON-RPC error codes (docs/server.md, "Errors")
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
FAILED = -32000
NO_SANDBOX = -32001
NOT_INITIALIZED = -32002
FORBIDDEN = -32003
DUPLICATE_ID = -32004
BUSY = -32005
NOT_AVAILABLE = -32006
FILE_REFUSED = -32007
TOO_LARGE = -32008
APPLY_REFUSED = -32009
CANCELLED = -32800


class WardenError(Exception):
    """Anything that went wrong talking to warden."""


class ConnectionClosed(WardenError):
    """The server went away (or was never there)."""


class RPCError(WardenError):
    """A JSON-RPC error object from the server."""

    def __init__(self, code, message, data=None):
        super().__init__("%s (%d)" % (message, code))
        self.code = code
        self.message = message
        self.data = data


class NoSuchSandbox(RPCError):
    pass


class Forbidden(RPCError):
    """Not on this channel: approvals are granted on the owner's socket only."""


class NotAvailable(RPCError):
    """Not available here: apply/discard of a direct sandbox (its writes
    are in the directory already), a cow sandbox on a host that cannot
    make one, audit.verify without an audit trail."""


class FileRefused(RPCError):
    """A file operation refused: outside the workspace, protected, missing."""

    @property
    def errno_name(self):
        return (self.data or {}).get("errno")


class ApplyRefused(RPCError):
    """sandbox.apply stopped by conflicts (files the host changed since the
    sandbox first saw them) or protected paths: nothing was applied.  Name
    the other paths to apply them, discard the conflicting ones."""

    @property
    def conflicts(self):
        return (self.data or {}).get("conflicts", [])

    @property
    def protected(self):
        return (self.data or {}).get("protected", [])

    @property
    def report(self):
        return (self.data or {}).get("report", {})


class Cancelled(RPCError):
    pass


_ERRORS = {NO_SANDBOX: NoSuchSandbox, FORBIDDEN: Forbidden, NOT_AVAILABLE: NotAvailable,
           FILE_REFUSED: FileRefused, APPLY_REFUSED: ApplyRefused, CANCELLED: Cancelled}


class CommandError(WardenError):
    """A command that did not run as asked; .result says what happened."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class Denied(CommandError):
    """The policy refused the command: nothing ran."""

    @property
    def rule(self):
        return self.result.decision.get("rule")

    @property
    def reason(self):
        return self.result.decision.get("reason") or self.result.raw.get("refusal")

    @property
    def advice(self):
        return self.result.decision.get("advice")


class Paused(CommandError):
    """The command waits for a human's approval: nothing ran."""

    @property
    def approval_id(self):
        return self.result.decision.get("approval_id")


class Timeout(CommandError):
    """The command ran past its timeout and was killed (status 124)."""


class CommandFailed(CommandError):
    """With check=True: the command ran and exited non-zero."""


class Result:
    """What a command did (sandbox.exec / sandbox.run)."""

    def __init__(self, raw):
        self.raw = raw
        self.outcome = raw.get("outcome")
        self.status = raw.get("status")
        self.exit_code = raw.get("exit_code")
        self.signal = raw.get("signal")
        self.timed_out = raw.get("timed_out", False)
        self.oom_killed = raw.get("oom_killed", False)
        self.sandbox_id = raw.get("sandbox_id")
        self.policy = raw.get("policy")
        self.protections = raw.get("protections", {})
        self.decision = raw.get("decision") or {}
        out, err = raw.get("stdout") or {}, raw.get("stderr") or {}
        self.stdout = out.get("data", "")
        self.stderr = err.get("data", "")
        self.stdout_omitted = out.get("omitted_bytes", 0)
        self.stderr_omitted = err.get("omitted_bytes", 0)

    @property
    def ok(self):
        return self.outcome == "ran" and self.status == 0

    def __repr__(self):
        return "Result(outcome=%r, status=%r)" % (self.outcome, self.status)


def _raise_for(result, check):
    if result.outcome == "denied":
        d = result.decision
        raise Denied("denied by the policy (%s): %s" % (d.get("rule"), d.get("reason") or
                                                       result.raw.get("refusal")), result)
    if result.outcome == "paused":
        raise Paused("paused for a human's approval: %s" % result.decision.get("approval_id"),
                     result)
    if result.timed_out:
        raise Timeout("timed out (status 124)", result)
    if check and result.status != 0:
        raise CommandFailed("exited with status %d" % result.status, result)
    return result


class _Call:
    def __init__(self, on_output):
        self.done = threading.Event()
        self.msg = None
        self.on_output = on_output


class Client:
    """A connection to warden serve.  Thread-safe."""

    def __init__(self, rfile, wfile, closer=None, process=None):
        self._r = rfile
        self._w = wfile
        self._closer = closer
        self.process = process
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._wlock = threading.Lock()
        self._calls = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # ---- constructors ----
    @classmethod
    def stdio(cls, workspace=None, policy=None, audit=None, warden=None, args=(), env=None):
        """Start `warden serve --stdio` and talk to it."""
        exe = warden or os.environ.get("WARDEN") or shutil.which("warden") or "warden"
        cmd = [exe, "serve", "--stdio"]
        if workspace:
            cmd += ["--workspace", workspace]
        if policy:
            cmd += ["--policy", policy]
        if audit:
            cmd += ["--audit", audit]
        cmd += list(args)
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

        def closer():
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.terminate()
                p.wait()
        return cls(p.stdout, p.stdin, closer, p)

    @classmethod
    def connect(cls, path):
        """Connect to `warden serve --socket PATH`."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError as e:
            s.close()
            raise ConnectionClosed("cannot connect to %s: %s" % (path, e)) from e
        r, w = s.makefile("rb"), s.makefile("wb")

        def closer():
            # shutdown first: it wakes the reader thread blocked in a read,
            # whose buffer lock a close() would otherwise wait for
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            for f in (w, r):
                try:
                    f.close()
                except OSError:
                    pass
            s.close()
        return cls(r, w, closer)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self._closer:
            self._closer()
        self._reader.join(5)
        try:
            self._r.close()
        except OSError:
            pass

    # ---- the wire ----
    def _read_loop(self):
        try:
            for line in self._r:
                if not line.strip():
                    continue
                msg = json.loads(line)
                for m in msg if isinstance(msg, list) else [msg]:
                    self._dispatch(m)
        except (OSError, ValueError):
            pass
        with self._lock:
            calls, self._calls = self._calls, {}
        for c in calls.values():
            c.done.set()

    def _dispatch(self, m):
        if "method" in m:
            if m["method"] == "sandbox.output":
                p = m.get("params", {})
                with self._lock:
                    c = self._calls.get(p.get("id"))
                if c and c.on_output:
                    c.on_output(p.get("stream"), p.get("data", ""))
            return
        with self._lock:
            c = self._calls.pop(m.get("id"), None)
        if c:
            c.msg = m
            c.done.set()

    def call(self, method, params=None, on_output=None, timeout=None):
        """Send a request and wait for its result; raises RPCError."""
        if self._closed:
            raise ConnectionClosed("the client is closed")
        rid = next(self._ids)
        c = _Call(on_output)
        with self._lock:
            self._calls[rid] = c
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        data = json.dumps(msg).encode() + b"\n"
        try:
            with self._wlock:
                self._w.write(data)
                self._w.flush()
        except OSError as e:
            with self._lock:
                self._calls.pop(rid, None)
            raise ConnectionClosed("warden went away: %s" % e) from e
        if not c.done.wait(timeout):
            self.cancel(rid)
            raise WardenError("no answer within %s s (cancelled)" % timeout)
        if c.msg is None:
            raise ConnectionClosed("warden closed the connection")
        if "error" in c.msg:
            e = c.msg["error"]
            raise _ERRORS.get(e.get("code"), RPCError)(e.get("code"), e.get("message"),
                                                       e.get("data"))
        return c.msg.get("result")

    def cancel(self, request_id, reason="cancelled by the client"):
        msg = {"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": request_id, "reason": reason}}
        try:
            with self._wlock:
                self._w.write(json.dumps(msg).encode() + b"\n")
                self._w.flush()
        except OSError:
            pass

    # ---- commands ----
    @staticmethod
    def _cmd_params(command, argv, cwd, env, timeout, policy, tool, output_limit):
        p = {}
        if command is not None:
            p["command"] = command
        if argv is not None:
            p["argv"] = list(argv)
            p["policy"] = policy
        for k, v in (("cwd", cwd), ("env", env), ("timeout", timeout), ("tool", tool),
                     ("output_limit", output_limit)):
            if v is not None:
                p[k] = v
        return p

    def run(self, command=None, argv=None, cwd=None, env=None, timeout=None, on_output=None,
            check=False, policy=False, tool=None, output_limit=None):
        """Run one command in a fresh sandbox (sandbox.run).  Raises Denied,
        Paused, Timeout (and CommandFailed with check=True)."""
        p = self._cmd_params(command, argv, cwd, env, timeout, policy, tool, output_limit)
        p["stream"] = on_output is not None
        return _raise_for(Result(self.call("sandbox.run", p, on_output)), check)

    def sandbox(self, memory=None, pids=None, cpus=None, timeout=None, output_limit=None,
                env=None, reproducible=False, workspace_mode=None, disk=None, protect=None,
                image=None):
        """A live sandbox (sandbox.create) for several commands; a context
        manager that destroys it.

        workspace_mode "cow" keeps what the sandbox writes out of the
        workspace, in a change set that diff() shows, apply() writes into
        the directory and discard() drops; disk bounds it (bytes, or a size
        such as "512M"; at most the server's --disk).  protect: more paths
        kept read-only, inside and to the file methods.  image: one the
        server offers (warden serve --image, --allow-image; default its
        --image); another raises RPCError (-32602) naming it.  The sandbox's
        image and image_digest say what it runs in."""
        limits = {k: v for k, v in (("memory", memory), ("pids", pids), ("cpus", cpus),
                                    ("timeout", timeout), ("output_limit", output_limit))
                  if v is not None}
        p = {}
        if limits:
            p["limits"] = limits
        if env:
            p["env"] = env
        if reproducible:
            p["reproducible"] = True
        if workspace_mode is not None:
            p["workspace_mode"] = workspace_mode
        if disk is not None:
            p["disk"] = disk
        if protect is not None:
            p["protect"] = list(protect)
        if image is not None:
            p["image"] = image
        r = self.call("sandbox.create", p)
        sb = Sandbox(self, r["sandbox"], r.get("workspace_mode", "direct"))
        sb.image, sb.image_digest = r.get("image"), r.get("image_digest")
        return sb

    def sandboxes(self):
        return self.call("sandbox.list")["sandboxes"]

    def review(self, sandbox_id):
        """Another connection's live sandbox, for a human to review: diff(),
        apply() and discard() of, say, a model's cow sandbox made with the
        MCP tool sandbox_create (whose id the model reports).  Only on the
        server's unix socket, from the user who started it, on a connection
        that is not an MCP session; the sandbox stays its creator's (close()
        does not destroy it, exec and the file methods raise NoSuchSandbox)."""
        return Sandbox(self, sandbox_id, "cow", owned=False)

    # ---- the policy, approvals, audit ----
    def check(self, command=None, argv=None, cwd=None, image=None, sandbox=None):
        """The policy's decision, nothing run, for the sandbox the command
        would run in: the live sandbox `sandbox` (an id), else `image` (one
        the server offers), else the server's default image or the host's,
        so the approval id is the one that run pauses with."""
        p = {"command": command} if command is not None else {"argv": list(argv)}
        if cwd:
            p["cwd"] = cwd
        if image is not None:
            p["image"] = image
        if sandbox is not None:
            p["sandbox"] = getattr(sandbox, "id", sandbox)
        return self.call("policy.check", p)

    def route(self, tool):
        return self.call("tool.route", {"tool": tool})

    def approvals(self):
        """The paused commands (the owner's socket only)."""
        return self.call("approval.list")["pending"]

    def approve(self, approval_id, ttl=None):
        """Grant a paused command once (the owner's socket only)."""
        p = {"id": approval_id}
        if ttl:
            p["ttl"] = ttl
        return self.call("approval.grant", p)["summary"]

    def verify_audit(self):
        return self.call("audit.verify")


class Sandbox:
    """A live sandbox: commands share its processes' environment; files
    are the workspace as the sandbox sees it (for a cow sandbox, its own
    copy until apply())."""

    def __init__(self, client, sandbox_id, workspace_mode="direct", owned=True):
        self.client = client
        self.id = sandbox_id
        self.workspace_mode = workspace_mode
        self.owned = owned  # False: another connection's (Client.review)
        self.closed = not owned
        self.image = self.image_digest = None  # sandbox.create's

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Sandbox(%s)" % self.id

    def _call(self, method, **params):
        params["sandbox"] = self.id
        on_output = params.pop("_on_output", None)
        return self.client.call(method, params, on_output)

    def exec(self, command=None, argv=None, cwd=None, env=None, timeout=None, on_output=None,
             check=False, policy=False, tool=None, output_limit=None):
        """Run one command in this sandbox.  Raises Denied, Paused,
        Timeout (and CommandFailed with check=True)."""
        p = self.client._cmd_params(command, argv, cwd, env, timeout, policy, tool, output_limit)
        p["stream"] = on_output is not None
        return _raise_for(Result(self._call("sandbox.exec", _on_output=on_output, **p)), check)

    run = exec

    def read_file(self, path, binary=False, offset=None, length=None):
        """A file's content: str (text), or bytes with binary=True."""
        p = {"path": path, "encoding": "base64" if binary else "auto"}
        if offset is not None:
            p["offset"] = offset
        if length is not None:
            p["length"] = length
        r = self._call("sandbox.read_file", **p)
        data = r["content"]
        if r["encoding"] == "base64":
            raw = base64.b64decode(data)
            return raw if binary else raw.decode("utf-8", "surrogateescape")
        return data.encode() if binary else data

    def write_file(self, path, data, mkdirs=True):
        if isinstance(data, bytes):
            return self._call("sandbox.write_file", path=path, mkdirs=mkdirs, encoding="base64",
                              content=base64.b64encode(data).decode())
        return self._call("sandbox.write_file", path=path, content=data, mkdirs=mkdirs)

    def edit_file(self, path, old, new, replace_all=False):
        return self._call("sandbox.edit_file", path=path, old_string=old, new_string=new,
                          replace_all=replace_all)["replacements"]

    def list_dir(self, path=".", depth=1):
        return self._call("sandbox.list_dir", path=path, depth=depth)["entries"]

    def search(self, pattern, path=None, regex=False, ignore_case=False, glob=None,
               max_results=100):
        p = {"pattern": pattern, "regex": regex, "ignore_case": ignore_case,
             "max_results": max_results}
        if path:
            p["path"] = path
        if glob:
            p["glob"] = glob
        return self._call("sandbox.search_files", **p)["matches"]

    @staticmethod
    def _paths(paths):
        if paths is None:
            return {}
        return {"paths": [paths] if isinstance(paths, str) else list(paths)}

    def diff(self, path=None, format=None, paths=None, all=False):
        """The sandbox's changes (sandbox.diff): a dict with "files" and,
        unless format is "json", the text in "diff" (format "unified", the
        default, "stat" or "names").  A cow sandbox's change set is exact;
        a direct sandbox's is what git sees in the workspace.  What the
        directory's .gitignore ignores is summarised in "ignored", unless
        all (then listed, each file with "ignored")."""
        p = self._paths(paths)
        if path:
            p["path"] = path
        if format:
            p["format"] = format
        if all:
            p["all"] = True
        return self._call("sandbox.diff", **p)

    def apply(self, paths=None, all=False):
        """Write a cow sandbox's changes (or those at or below paths) into
        the directory; returns the report.  Ignored changes (see diff) are
        written only with all.  Raises ApplyRefused (nothing applied;
        .conflicts, .protected) and, for a direct sandbox, NotAvailable."""
        p = self._paths(paths)
        if all:
            p["all"] = True
        return self._call("sandbox.apply", **p)

    def discard(self, paths=None):
        """Drop a cow sandbox's changes (or those at or below paths); the
        number dropped.  Raises NotAvailable for a direct sandbox."""
        return self._call("sandbox.discard", **self._paths(paths))["discarded"]

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self._call("sandbox.destroy")
            except ConnectionClosed:
                pass

    destroy = close
