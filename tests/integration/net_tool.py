#!/usr/bin/env python3
"""Helpers for the net integration tests: a local upstream HTTP server and
small clients that curl cannot play (a DNS client, many concurrent tunnels,
a slow client, a tunnel held open across a proxy stop).  Loopback only."""
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
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

    def do_GET(self):
        if self.path == "/conn-cl":
            # a response whose Connection names its own framing
            body = b"hello"
            self.send_response(200)
            self.send_header("Connection", "Content-Length")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/big/"):
            n = int(self.path[5:])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
            return
        self.reply(200, ("GET %s host=%s\n" % (self.path, self.headers.get("Host"))).encode())

    do_HEAD = do_GET

    def do_PUT(self):
        data = self.read_body()
        with open(self.server.log, "a") as f:
            f.write("%s %s %d\n" % (self.command, self.path, len(data)))
        self.reply(200, b"%s %d\n" % (self.command.encode(), len(data)))

    do_POST = do_PUT


class Server(ThreadingHTTPServer):
    request_queue_size = 512  # 100 tunnels connect at once


def serve(log, addr="127.0.0.1"):
    srv = Server((addr, 0), Upstream)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None  # clients cut by the proxy's limits
    srv.log = log
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def serve_tls(log, cert, key):
    import ssl
    srv = Server(("127.0.0.1", 0), Upstream)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None
    srv.log = log
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def serve_dir(directory, cert=None, key=None):
    """Static files from directory (a PEP 503 index, a dumb-HTTP git repo)."""
    import functools
    import ssl
    from http.server import SimpleHTTPRequestHandler

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = Server(("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def make_index(root):
    """A PEP 503 simple index with one pure-Python wheel, wardendemo 1.0."""
    import base64
    import hashlib
    import os
    import zipfile
    os.makedirs(root + "/simple/wardendemo", exist_ok=True)
    os.makedirs(root + "/files", exist_ok=True)
    name = "wardendemo-1.0-py3-none-any.whl"
    files = {
        "wardendemo/__init__.py": b"GREETING = 'hello from the local index'\n",
        "wardendemo-1.0.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: wardendemo\nVersion: 1.0\n",
        "wardendemo-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: warden-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (path, digest, len(data))
    record += "wardendemo-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(root + "/files/" + name, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr("wardendemo-1.0.dist-info/RECORD", record)
    sha = hashlib.sha256(open(root + "/files/" + name, "rb").read()).hexdigest()
    with open(root + "/simple/index.html", "w") as f:
        f.write('<!DOCTYPE html><html><body><a href="wardendemo/">wardendemo</a></body></html>\n')
    with open(root + "/simple/wardendemo/index.html", "w") as f:
        f.write('<!DOCTYPE html><html><body><a href="../../files/%s#sha256=%s">%s</a>'
                '</body></html>\n' % (name, sha, name))


def serve_hold(log):
    """Accept connections and log when each one is closed by its peer."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    print(srv.getsockname()[1], flush=True)

    def hold(c):
        with open(log, "a") as f:
            f.write("open\n")
        while c.recv(4096):
            pass
        with open(log, "a") as f:
            f.write("closed\n")

    while True:
        c, _ = srv.accept()
        threading.Thread(target=hold, args=(c,), daemon=True).start()


def cmd_urllib(proxy_port, url, method="GET"):
    """python3 urllib through HTTPS_PROXY, trusting SSL_CERT_FILE."""
    import os
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    proxy = urllib.request.ProxyHandler({"https": "http://127.0.0.1:%s" % proxy_port,
                                         "http": "http://127.0.0.1:%s" % proxy_port})
    opener = urllib.request.build_opener(proxy, urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request(url, method=method, data=b"x" if method != "GET" else None)
    try:
        with opener.open(req, timeout=10) as r:
            print(r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        print(e.code, e.headers.get("X-Warden-Denied"))


def dns_query(port, name, qtype, qid=0x4242):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", qtype, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(q, ("127.0.0.1", port))
    r, _ = s.recvfrom(4096)
    rid, flags, qd, an = struct.unpack(">HHHH", r[:8])
    assert rid == qid, "id mismatch"
    rcode = flags & 0xF
    # skip the question, then read A/AAAA answers (compressed or full names)
    i = 12
    while r[i] != 0:
        i += 1 + r[i]
    i += 5
    addrs = []
    for _ in range(an):
        if r[i] & 0xC0 == 0xC0:
            i += 2
        else:
            while r[i] != 0:
                i += 1 + r[i]
            i += 1
        t, _c, _ttl, rdlen = struct.unpack(">HHIH", r[i:i + 10])
        i += 10
        rd = r[i:i + rdlen]
        i += rdlen
        if t == 1:
            addrs.append(socket.inet_ntop(socket.AF_INET, rd))
        elif t == 28:
            addrs.append(socket.inet_ntop(socket.AF_INET6, rd))
    return rcode, addrs


def cmd_dns(port, name, qtype):
    rcode, addrs = dns_query(int(port), name, int(qtype))
    names = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
    print(names.get(rcode, str(rcode)), " ".join(addrs))


def cmd_dns_burst(port, name, n):
    out = {}
    for k in range(int(n)):
        try:
            rcode, _ = dns_query(int(port), name, 1, qid=k + 1)
        except socket.timeout:
            rcode = -1
        out[rcode] = out.get(rcode, 0) + 1
    print(" ".join("%s=%d" % (k, v) for k, v in sorted(out.items())))


def recv_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def cmd_concurrent(proxy_port, host, port, n):
    """Open n CONNECT tunnels at once, keep them all open, then use each."""
    n = int(n)
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", int(proxy_port)), timeout=10)
        s.sendall(b"CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (
            host.encode(), port.encode(), host.encode(), port.encode()))
        socks.append(s)
    ok = 0
    for s in socks:
        if recv_head(s).startswith(b"HTTP/1.1 200"):
            ok += 1
    served = 0
    for i, s in enumerate(socks):
        s.sendall(b"GET /c%d HTTP/1.1\r\nHost: %s\r\n\r\n" % (i, host.encode()))
    for i, s in enumerate(socks):
        data = recv_head(s)
        while b"GET /c%d " % i not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        if b"GET /c%d " % i in data:
            served += 1
        s.close()
    print("tunnels=%d served=%d" % (ok, served))


def cmd_slow(proxy_port):
    s = socket.create_connection(("127.0.0.1", int(proxy_port)), timeout=10)
    s.sendall(b"GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n")
    t0 = time.monotonic()
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        print("no answer")
        return
    status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    print("%s after %.1fs closed" % (status, time.monotonic() - t0))


def cmd_hold(proxy_port, host, port):
    """Open a CONNECT tunnel, say so, and report how it ends."""
    s = socket.create_connection(("127.0.0.1", int(proxy_port)), timeout=15)
    s.sendall(b"CONNECT %s:%s HTTP/1.1\r\n\r\n" % (host.encode(), port.encode()))
    head = recv_head(s)
    if not head.startswith(b"HTTP/1.1 200"):
        print("not open", head[:40])
        return
    print("open", flush=True)
    t0 = time.monotonic()
    try:
        data = s.recv(4096)
        print("closed" if data == b"" else "data", "after %.1fs" % (time.monotonic() - t0))
    except ConnectionResetError:
        print("closed (reset) after %.1fs" % (time.monotonic() - t0))
    except socket.timeout:
        print("still open")


def cmd_raw(proxy_port, payload):
    """Send raw bytes (Python escapes allowed) and print the status line."""
    s = socket.create_connection(("127.0.0.1", int(proxy_port)), timeout=5)
    s.sendall(payload.encode().decode("unicode_escape").encode("latin-1"))
    data = recv_head(s)
    print(data.split(b"\r\n", 1)[0].decode(errors="replace"))
    for line in data.split(b"\r\n"):
        if line.lower().startswith(b"x-warden-denied"):
            print(line.decode())


def cmd_smuggle(proxy_port, host, port, conn, mode="plain"):
    """A GET whose Connection header names its own framing field (conn:
    Content-Length or Transfer-Encoding) and whose body is a PUT: a proxy
    that obeys the Connection option strips the framing but forwards the
    body, and the upstream reads the PUT as a request of its own.
    mode "plain": absolute-form to the proxy; "tls": CONNECT, then TLS
    trusting SSL_CERT_FILE, then origin-form.  Prints the status line and
    X-Warden-Denied."""
    put = b"PUT /smuggled HTTP/1.1\r\nHost: %s:%s\r\nContent-Length: 3\r\n\r\nabc" % (
        host.encode(), port.encode())
    if conn.lower() == "transfer-encoding":
        framing = b"Transfer-Encoding: chunked\r\n"
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(put), put)
    else:
        framing = b"Content-Length: %d\r\n" % len(put)
        body = put
    s = socket.create_connection(("127.0.0.1", int(proxy_port)), timeout=10)
    if mode == "tls":
        import os
        import ssl
        s.sendall(b"CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (
            host.encode(), port.encode(), host.encode(), port.encode()))
        head = recv_head(s)
        if not head.startswith(b"HTTP/1.1 200"):
            print(head.split(b"\r\n", 1)[0].decode(errors="replace"))
            return
        ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
        s = ctx.wrap_socket(s, server_hostname=host)
        target = b"/front"
    else:
        target = b"http://%s:%s/front" % (host.encode(), port.encode())
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: %s\r\n%s\r\n%s" % (
        target, host.encode(), port.encode(), conn.encode(), framing, body))
    data = recv_head(s)
    print(data.split(b"\r\n", 1)[0].decode(errors="replace"))
    for line in data.split(b"\r\n"):
        if line.lower().startswith(b"x-warden-denied"):
            print(line.decode())


def cmd_tls_records(proxy_port, host, port, big):
    """Through an intercepting proxy: two requests sent as two TLS
    records in one send(), so both arrive in one segment and the proxy's
    read-ahead holds the second while it answers the first (nothing on the
    socket will announce it again); then GET /big/BIG with a pause after
    the first 64 KiB, so the proxy's buffers fill and its upstream side
    has records read ahead while it waits for the client.  Prints the
    statuses and the body length received."""
    import os
    import ssl
    s = socket.create_connection(("127.0.0.1", int(proxy_port)), timeout=10)
    s.sendall(b"CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (
        host.encode(), port.encode(), host.encode(), port.encode()))
    head = recv_head(s)
    if not head.startswith(b"HTTP/1.1 200"):
        print(head.split(b"\r\n", 1)[0].decode(errors="replace"))
        return
    ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname=host)

    def pump():
        data = out.read()
        if data:
            s.sendall(data)

    def feed():
        data = s.recv(65536)
        if not data:
            raise EOFError("proxy closed")
        inc.write(data)

    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            pump()
            feed()
    pump()
    buf = b""

    def read_response():
        nonlocal buf
        while b"\r\n\r\n" not in buf:
            try:
                buf += tls.read(65536)
            except ssl.SSLWantReadError:
                feed()
        head, buf = buf.split(b"\r\n\r\n", 1)
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        return head.split(b"\r\n", 1)[0].decode(errors="replace"), n

    def read_body(n, pause_at=None):
        """Returns (bytes received, the body when it is small)."""
        nonlocal buf
        got, kept = len(buf), buf
        buf = b""
        paused = pause_at is None
        while got < n:
            if not paused and got >= pause_at:
                time.sleep(0.3)
                paused = True
            try:
                data = tls.read(min(65536, n - got))
            except ssl.SSLWantReadError:
                feed()
                continue
            got += len(data)
            if n <= 4096:
                kept += data
        return got, kept

    req = b"GET /%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n"
    tls.write(req % (b"one", host.encode(), port.encode()))
    tls.write(req % (b"two", host.encode(), port.encode()))
    pump()  # both records, one send()
    for _ in range(2):
        status, n = read_response()
        got, body = read_body(n)
        print(status, body.split(b" host=")[0].decode(errors="replace"))
    tls.write(req % (b"big/" + big.encode(), host.encode(), port.encode()))
    pump()
    status, n = read_response()
    print(status, read_body(n, pause_at=65536)[0])

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"serve": serve, "serve-tls": serve_tls, "serve-dir": serve_dir, "serve-hold": serve_hold, "make-index": make_index, "urllib": cmd_urllib, "dns": cmd_dns, "dns-burst": cmd_dns_burst, "concurrent": cmd_concurrent,
     "slow": cmd_slow, "hold": cmd_hold, "raw": cmd_raw, "smuggle": cmd_smuggle, "tls-records": cmd_tls_records}[cmd](*args)
