#!/usr/bin/env python3
"""A hostile Redis for the tests: a real process speaking RESP on 127.0.0.1.

usage: fake_redis.py [NAME=REPLY]...

It keeps strings in memory and answers what ratelab sends (PING, SELECT,
TIME, GET, SET [NX] [EX|PX], INCR, EXPIRE, PEXPIRE, EXISTS, MGET, DEL,
UNLINK, SCAN, SCRIPT LOAD, EVALSHA, EVAL) like Redis does, except for the
commands named on the command line: NAME (a command, upper case) is then
answered with REPLY, raw RESP with Python escapes (\\r\\n, \\x00).  NAME:KEY
overrides only a GET of KEY.  It prints "port N" once it listens, and exits
when its stdin closes (the test that started it is gone) or after 120 s.
"""
import socket
import sys
import threading
import time

SHA = "0123456789abcdef0123456789abcdef01234567"


def bulk(v):
    if v is None:
        return b"$-1\r\n"
    if isinstance(v, str):
        v = v.encode()
    return b"$%d\r\n%s\r\n" % (len(v), v)


def array(items):
    return b"*%d\r\n" % len(items) + b"".join(items)


class Store:
    def __init__(self, overrides):
        self.kv = {}
        self.lock = threading.Lock()
        self.overrides = overrides

    def answer(self, args):
        name = args[0].decode(errors="replace").upper()
        if name == "GET" and len(args) > 1:
            key = "GET:" + args[1].decode(errors="replace")
            if key in self.overrides:
                return self.overrides[key]
        if name in self.overrides:
            return self.overrides[name]
        with self.lock:
            return self.builtin(name, args[1:])

    def builtin(self, name, a):
        kv = self.kv
        if name == "PING":
            return b"+PONG\r\n"
        if name in ("SELECT", "AUTH"):
            return b"+OK\r\n"
        if name == "TIME":
            now = time.time()
            return array([bulk(str(int(now))), bulk(str(int((now % 1) * 1e6)))])
        if name == "GET":
            return bulk(kv.get(a[0]))
        if name == "SET":
            flags = [x.upper() for x in a[2:]]
            if b"NX" in flags and a[0] in kv:
                return b"$-1\r\n"
            kv[a[0]] = a[1]
            return b"+OK\r\n"
        if name == "INCR":
            v = int(kv.get(a[0], b"0")) + 1
            kv[a[0]] = str(v).encode()
            return b":%d\r\n" % v
        if name in ("EXPIRE", "PEXPIRE"):
            return b":1\r\n"
        if name == "EXISTS":
            return b":%d\r\n" % sum(1 for k in a if k in kv)
        if name == "MGET":
            return array([bulk(kv.get(k)) for k in a])
        if name in ("DEL", "UNLINK"):
            return b":%d\r\n" % sum(1 for k in a if kv.pop(k, None) is not None)
        if name == "SCAN":
            return array([bulk("0"), array([])])
        if name == "SCRIPT":
            return bulk(SHA)
        if name in ("EVALSHA", "EVAL"):
            return array([b":1\r\n", b":0\r\n", b":4\r\n", b":5\r\n", b":1000000000\r\n", b":0\r\n", b":0\r\n"])
        return b"-ERR unknown command '%s'\r\n" % name.encode()


def read_command(f):
    """One command (an array of bulk strings); None at the end of the stream."""
    line = f.readline(1024)
    if not line.startswith(b"*"):
        return None
    args = []
    for _ in range(min(int(line[1:]), 4096)):
        head = f.readline(1024)
        if not head.startswith(b"$"):
            return None
        n = int(head[1:])
        if n < 0 or n > 64 << 20:
            return None
        args.append(f.read(n + 2)[:n])
    return args or None


def serve(conn, store):
    f = conn.makefile("rb")
    try:
        while True:
            args = read_command(f)
            if args is None:
                break
            conn.sendall(store.answer(args))
    except (OSError, ValueError):
        pass
    finally:
        conn.close()


def main():
    overrides = {}
    for arg in sys.argv[1:]:
        name, _, reply = arg.partition("=")
        name = name.upper() if ":" not in name else "GET:" + name.split(":", 1)[1]
        overrides[name] = reply.encode("latin-1").decode("unicode_escape").encode("latin-1")
    store = Store(overrides)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    print("port %d" % lsock.getsockname()[1], flush=True)
    # stdin closing (the test is gone) or 120 s ends the process
    gone = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), gone.set()), daemon=True).start()
    lsock.settimeout(0.2)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not gone.is_set():
        try:
            conn, _ = lsock.accept()
        except socket.timeout:
            continue
        except OSError:
            break
        threading.Thread(target=serve, args=(conn, store), daemon=True).start()


if __name__ == "__main__":
    main()
