"""A test router in the shape of agent-sandbox's (for tests only, never
for production): a request's X-Sandbox-ID header names the sandbox, and
so the pod, it goes to; everything else (the token, Mcp-Session-Id, the
body) is passed through untouched, and the pod's answer comes back as it
is.  An unknown sandbox is 404 here; a pod that does not answer, 502.

    r = Router({"pod-a": ("10.213.1.2", 8080), ...})
    r.port                       # listening on 127.0.0.1
    r.picks                      # [(sandbox id, pod address), ...] in order
    r.close()
"""
import http.client
import http.server
import threading

PASS_REQUEST = ("authorization", "mcp-session-id", "mcp-protocol-version", "content-type",
                "accept")
PASS_ANSWER = ("content-type", "mcp-session-id", "www-authenticate", "allow", "retry-after")


class Router:
    def __init__(self, pods):
        self.pods = dict(pods)
        self.picks = []
        self.lock = threading.Lock()
        router = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _answer(self, status, body, headers=()):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            def _forward(self):
                sid = self.headers.get("X-Sandbox-ID", "")
                with router.lock:
                    pod = router.pods.get(sid)
                if not pod:
                    return self._answer(404, b"no such sandbox\n")
                with router.lock:
                    router.picks.append((sid, pod))
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                hdrs = {k: v for k, v in self.headers.items() if k.lower() in PASS_REQUEST}
                try:
                    c = http.client.HTTPConnection(pod[0], pod[1], timeout=120)
                    c.request(self.command, self.path, body=body, headers=hdrs)
                    r = c.getresponse()
                    out = r.read()
                    c.close()
                except OSError as e:
                    return self._answer(502, ("pod %s: %s\n" % (sid, e)).encode())
                keep = [(k, v) for k, v in r.getheaders() if k.lower() in PASS_ANSWER]
                return self._answer(r.status, out, keep)

            do_GET = do_POST = do_DELETE = _forward

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def set_pod(self, sid, addr):
        with self.lock:
            self.pods[sid] = addr

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
