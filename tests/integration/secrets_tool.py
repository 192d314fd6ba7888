#!/usr/bin/env python3
"""Helpers for secrets.sh: local upstreams that check the
credential warden's proxy injects, and a scanner of a process's memory.
Loopback only.

  serve CERT KEY ROOT LOG SECRETS_JSON [plain]
      One HTTP(S) server for several names, routed by Host:
        api.test    /user needs "Authorization: Bearer GITHUB_TOKEN";
                    /redirect answers 302 to other.test/landing;
                    /echo returns the request's fields (the credential too)
        git.test    git-http-backend (smart HTTP) behind Basic
                    x-access-token:GITHUB_TOKEN, repositories in ROOT/git
        pypi.test   a PEP 503 index (ROOT/pypi) behind Basic __token__:PYPI_TOKEN
        npm.test    an npm registry stub (ROOT/npm) behind Bearer NPM_TOKEN
        plain.test  (plain HTTP) /data needs "X-Api-Key: PLAIN_KEY"
        other.test  anything: 200
      Every request is logged to LOG as one JSON line (host, method, path,
      headers, body) so the test can say what reached which host.
  make-npm ROOT HOSTPORT    a package wd-demo 1.0.0 in ROOT/npm
  scan PID NEEDLE_HEX       count the occurrences of the bytes in the
                            process's readable memory
"""
import base64
import hashlib
import io
import json
import os
import re
import ssl
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, code, body, ctype="text/plain", extra=()):
        self.send_response(code)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def record(self, data):
        entry = {"host": self.headers.get("Host", ""), "method": self.command,
                 "path": self.path, "headers": dict(self.headers.items()),
                 "body": data.decode("latin-1")}
        with self.server.lock, open(self.server.log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def auth_is(self, scheme, cred):
        got = self.headers.get("Authorization", "")
        return got == "%s %s" % (scheme, cred)

    def basic(self, user, password):
        return base64.b64encode(("%s:%s" % (user, password)).encode()).decode()

    def handle_any(self):
        data = self.body()
        self.record(data)
        host = self.headers.get("Host", "").split(":")[0]
        sec = self.server.secrets
        if host == "api.test":
            if self.path == "/redirect":
                self.reply(302, b"moved\n", extra=[(
                    "Location", "https://other.test:%d/landing" % self.server.port)])
            elif self.path == "/echo":
                # a debugging endpoint: the request's fields back, the
                # credential among them (warden must mask it)
                self.reply(200, json.dumps(dict(self.headers.items())).encode(),
                           "application/json",
                           extra=[("X-Echo-Auth", self.headers.get("Authorization", ""))])
            elif self.auth_is("Bearer", sec["GITHUB_TOKEN"]):
                self.reply(200, b"api: hello, octocat\n")
            else:
                self.reply(401, b"api: bad credentials\n")
        elif host == "git.test":
            if not self.auth_is("Basic", self.basic("x-access-token", sec["GITHUB_TOKEN"])):
                self.reply(401, b"git: authentication required\n",
                           extra=[("WWW-Authenticate", 'Basic realm="git"')])
                return
            self.git(data)
        elif host == "pypi.test":
            if not self.auth_is("Basic", self.basic("__token__", sec["PYPI_TOKEN"])):
                self.reply(401, b"pypi: token required\n",
                           extra=[("WWW-Authenticate", 'Basic realm="pypi"')])
                return
            self.static(self.server.root + "/pypi", self.path)
        elif host == "npm.test":
            if not self.auth_is("Bearer", sec["NPM_TOKEN"]):
                self.reply(401, b'{"error":"auth required"}', "application/json")
                return
            path = self.path.split("?")[0]
            if path.endswith(".tgz"):
                self.static(self.server.root + "/npm", path)
            else:
                self.static(self.server.root + "/npm", path.rstrip("/") + "/index.json",
                            "application/json")
        elif host == "plain.test":
            if self.headers.get("X-Api-Key") == sec["PLAIN_KEY"]:
                self.reply(200, b"plain: key accepted\n")
            else:
                self.reply(403, b"plain: no key\n")
        else:
            self.reply(200, b"other: got it\n")

    do_GET = do_POST = do_PUT = do_HEAD = handle_any

    def static(self, root, path, ctype="application/octet-stream"):
        path = path.split("?")[0]
        if path.endswith("/"):
            path += "index.html"
            ctype = "text/html"
        full = os.path.realpath(root + path)
        if not full.startswith(os.path.realpath(root) + "/") or not os.path.isfile(full):
            self.reply(404, b"not found\n")
            return
        with open(full, "rb") as f:
            self.reply(200, f.read(), ctype)

    def git(self, data):
        """git-http-backend as CGI (git help http-backend)."""
        path, _, query = self.path.partition("?")
        env = {
            "GIT_PROJECT_ROOT": self.server.root + "/git",
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(data)),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=data, env=env,
                             capture_output=True).stdout
        head, _, body = out.partition(b"\r\n\r\n")
        if not _:
            head, _, body = out.partition(b"\n\n")
        code, extra, ctype = 200, [], "application/octet-stream"
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            v = v.strip()
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k.lower() == "content-type":
                ctype = v
            elif k:
                extra.append((k, v))
        self.reply(code, body, ctype, extra)


def serve(cert, key, root, log, secrets_json, plain=None):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None
    srv.root, srv.log, srv.lock = root, log, threading.Lock()
    with open(secrets_json) as f:
        srv.secrets = json.load(f)
    srv.port = srv.server_address[1]
    if not plain:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.port, flush=True)
    srv.serve_forever()


def make_npm(root, hostport):
    """wd-demo 1.0.0: a packument and its tarball, as a registry serves them."""
    os.makedirs(root + "/npm/wd-demo/-", exist_ok=True)
    files = {
        "package/package.json": json.dumps(
            {"name": "wd-demo", "version": "1.0.0", "main": "index.js"}).encode(),
        "package/index.js": b"module.exports = 'hello from the local registry';\n",
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    tgz = buf.getvalue()
    with open(root + "/npm/wd-demo/-/wd-demo-1.0.0.tgz", "wb") as f:
        f.write(tgz)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
    doc = {"name": "wd-demo", "dist-tags": {"latest": "1.0.0"},
           "versions": {"1.0.0": {
               "name": "wd-demo", "version": "1.0.0", "main": "index.js",
               "dist": {"tarball": "https://%s/wd-demo/-/wd-demo-1.0.0.tgz" % hostport,
                        "shasum": hashlib.sha1(tgz).hexdigest(), "integrity": integrity}}}}
    with open(root + "/npm/wd-demo/index.json", "w") as f:
        json.dump(doc, f)


def scan(pid, needle_hex):
    """How many times the bytes occur in the process's readable mappings
    (root reads another process's memory through /proc/PID/mem)."""
    needle = bytes.fromhex(needle_hex)
    count = 0
    with open("/proc/%s/maps" % pid) as maps, open("/proc/%s/mem" % pid, "rb", 0) as mem:
        for line in maps:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
            start, end, perms = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
            # skip what cannot hold a heap or a mapping of warden's own:
            # sanitizer shadow regions are terabytes of reserved zeroes
            if perms[0] != "r" or "[vvar" in line or "[vsyscall" in line or \
                    end - start > (1 << 32):
                continue
            pos, tail = start, b""
            while pos < end:
                try:
                    mem.seek(pos)
                    data = mem.read(min(end - pos, 1 << 24))
                except (OSError, ValueError, OverflowError):
                    break
                if not data:
                    break
                count += (tail + data).count(needle)
                tail = data[-(len(needle) - 1):] if len(needle) > 1 else b""
                pos += len(data)
    print(count)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"serve": serve, "make-npm": make_npm, "scan": scan}[cmd](*args)
