#!/usr/bin/env python3
"""A test upstream for `ratelab serve --upstream`, on 127.0.0.1 port 0.

Prints "listening on PORT" once bound, then serves until stdin closes
(its parent went away) or SIGTERM.  Paths:
  /echo...   200, a JSON body: method, path (the target as sent), headers, body
  /status/N  status N, body "status N"
  /hang      reads the request, never answers (closes after 30 s at most)
  /close     reads the request, closes without a byte
  /huge      200 with a body of 4 MiB
  /big/N     200 with a body of N bytes
  /part      200, Content-Length 11: "first\n" at once, "rest\n" once /release was asked
  /release   lets every /part go on
  /interim   a 100 Continue carrying Content-Length: 5, then a chunked 200 of "hello world"
  /late      200, Content-Length 11: "first\n" once /release was asked, never the rest
             (the connection closes after 30 s at most)
  /raw/BYTES the percent-decoded BYTES as they are (a whole answer, or not), then closes
Every answer carries "X-Upstream: test"; /stats counts requests per path kind,
and "connections" the connections accepted.
"""
import json
import socketserver
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNTS = {}
LOCK = threading.Lock()
HUGE = b"x" * (4 << 20)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        # One handler per connection: /stats "connections" tells kept-alive reuse from new connections.
        super().setup()
        with LOCK:
            COUNTS["connections"] = COUNTS.get("connections", 0) + 1

    def count(self, kind):
        with LOCK:
            COUNTS[kind] = COUNTS.get(kind, 0) + 1

    def answer(self, status, body, ctype="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Upstream", "test")
        self.end_headers()
        if self.command != "HEAD":
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                # The proxy stops reading past its bound: that is the point of /huge.
                self.close_connection = True

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        path = self.path
        if path.startswith("/stats"):
            with LOCK:
                self.answer(200, json.dumps(COUNTS).encode(), "application/json")
            return
        if path.startswith("/echo"):
            self.count("echo")
            doc = {"method": self.command, "path": path, "headers": dict(self.headers.items()),
                   "body": body.decode("latin-1")}
            self.answer(200, json.dumps(doc).encode(), "application/json")
        elif path.startswith("/status/"):
            self.count("status")
            code = int(path.split("/")[2])
            self.answer(code, ("status %d" % code).encode())
        elif path.startswith("/hang"):
            self.count("hang")
            STOP.wait(30)
            self.close_connection = True
        elif path.startswith("/close"):
            self.count("close")
            self.close_connection = True
        elif path.startswith("/big/"):
            self.count("big")
            self.answer(200, b"b" * int(path.split("/")[2]))
        elif path.startswith("/part"):
            self.count("part")
            self.send_response(200)
            self.send_header("Content-Length", "11")
            self.end_headers()
            self.wfile.write(b"first\n")
            self.wfile.flush()
            RELEASE.wait(30)
            self.wfile.write(b"rest\n")
        elif path.startswith("/late"):
            self.count("late")
            RELEASE.wait(30)
            self.send_response(200)
            self.send_header("Content-Length", "11")
            self.end_headers()
            self.wfile.write(b"first\n")
            self.wfile.flush()
            STOP.wait(30)
            self.close_connection = True
        elif path.startswith("/interim"):
            self.count("interim")
            self.wfile.write(b"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n"
                             b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Upstream: test\r\n\r\n"
                             b"b\r\nhello world\r\n0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif path.startswith("/raw/"):
            self.count("raw")
            self.wfile.write(urllib.parse.unquote_to_bytes(path[len("/raw/"):]))
            self.wfile.flush()
            self.close_connection = True
        elif path.startswith("/release"):
            self.count("release")
            RELEASE.set()
            self.answer(200, b"released")
        elif path.startswith("/huge"):
            self.count("huge")
            self.answer(200, HUGE)
        else:
            self.count("other")
            self.answer(404, b"no such path")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


STOP = threading.Event()
RELEASE = threading.Event()


def main():
    socketserver.TCPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("listening on %d" % srv.server_address[1], flush=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    # Ends when the parent closes stdin (or dies): the test never leaves it behind.
    sys.stdin.read()
    STOP.set()
    srv.shutdown()


if __name__ == "__main__":
    main()
