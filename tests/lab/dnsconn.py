#!/usr/bin/env python3
"""dnsconn.py: DNS-over-TCP connections that keep to the framing or break it
on purpose, for the policy tests (tests/lab/t_policy.sh).

  dnsconn.py SERVER MODE [ARG] [--timeout S] [--port P]

MODE is what the client does after connecting:
  query N      N queries one after another on the connection, each waiting
               for its answer, 0.3 s apart
  short        a message whose length (5) is under a DNS header
  answer       a message with QR set (an answer, which no client sends)
  half         the length and half of a query, then nothing
  silent       nothing at all
  hold N       N connections that each send nothing (kept open)

silent and hold send nothing, so they serve any service (--port, default 53).
It prints one line: "answers=A end=HOW after=SECONDS", where HOW is reset,
eof or timeout (nothing happened within --timeout, default 15 s); for hold,
one such line per connection, and "connected=C" once all are opened.  Exit status 0.
"""
import errno
import select
import socket
import struct
import sys
import time


def query(qid, qname=b"example.test"):
    """A query for qname A, after its 2-byte length."""
    name = b"".join(bytes([len(p)]) + p for p in qname.split(b".")) + b"\0"
    msg = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + name + struct.pack("!HH", 1, 1)
    return struct.pack("!H", len(msg)) + msg


def read_answer(s, deadline):
    """One whole answer, or the way the connection ended."""
    buf = b""
    while True:
        if len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
            return "answer"
        left = deadline - time.monotonic()
        r, _, _ = select.select([s], [], [], max(left, 0))
        if not r:
            return "timeout"
        try:
            data = s.recv(65536)
        except ConnectionResetError:
            return "reset"
        if not data:
            return "eof"
        buf += data


def wait_end(s, deadline):
    """Reads until the peer ends the connection; how it did."""
    while True:
        how = read_answer(s, deadline)
        if how != "answer":
            return how


PORT = 53


def connect(server, timeout):
    fam = socket.AF_INET6 if ":" in server else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect((server, PORT))
    s.setblocking(True)
    return s


def one(server, mode, arg, timeout):
    t0 = time.monotonic()
    deadline = t0 + timeout
    answers = 0
    try:
        s = connect(server, timeout)
    except OSError as e:
        return "answers=0 end=%s after=%.2f" % (
            "reset" if e.errno == errno.ECONNREFUSED else "timeout", time.monotonic() - t0)
    how = "timeout"
    try:
        if mode == "query":
            for i in range(arg):
                s.sendall(query(0x4000 + i))
                how = read_answer(s, deadline)
                if how != "answer":
                    break
                answers += 1
                time.sleep(0.3)
            else:
                how = wait_end(s, deadline)
        elif mode == "short":
            s.sendall(struct.pack("!H", 5) + b"hello")
            how = wait_end(s, deadline)
        elif mode == "answer":
            q = bytearray(query(0x5000))
            q[4] |= 0x80
            s.sendall(bytes(q))
            how = wait_end(s, deadline)
        elif mode == "half":
            q = query(0x6000)
            s.sendall(q[: len(q) // 2])
            how = wait_end(s, deadline)
        elif mode == "silent":
            how = wait_end(s, deadline)
    except (BrokenPipeError, ConnectionResetError):
        how = "reset"
    finally:
        s.close()
    return "answers=%d end=%s after=%.2f" % (answers, how, time.monotonic() - t0)


def hold(server, n, timeout):
    """N silent connections at once, each reported as it ends."""
    socks = []
    t0 = time.monotonic()
    for _ in range(n):
        try:
            socks.append(connect(server, 3))
        except OSError as e:
            # The RST can beat connect() back: the same refusal.
            print("answers=0 end=%s after=%.2f" % (
                "reset" if e.errno in (errno.ECONNRESET, errno.ECONNREFUSED) else "error",
                time.monotonic() - t0), flush=True)
    print("connected=%d" % len(socks), flush=True)
    live = list(socks)
    while live:
        left = t0 + timeout - time.monotonic()
        r, _, _ = select.select(live, [], [], max(left, 0))
        if not r:
            break
        for s in r:
            try:
                how = "eof" if not s.recv(65536) else None
            except ConnectionResetError:
                how = "reset"
            if how:
                print("answers=0 end=%s after=%.2f" % (how, time.monotonic() - t0), flush=True)
                live.remove(s)
    for s in live:
        print("answers=0 end=timeout after=%.2f" % (time.monotonic() - t0), flush=True)
    for s in socks:
        s.close()


def main():
    global PORT
    args = sys.argv[1:]
    timeout = 15.0
    if "--timeout" in args:
        i = args.index("--timeout")
        timeout = float(args[i + 1])
        del args[i : i + 2]
    if "--port" in args:
        i = args.index("--port")
        PORT = int(args[i + 1])
        del args[i : i + 2]
    server, mode = args[0], args[1]
    arg = int(args[2]) if len(args) > 2 else 1
    if mode == "hold":
        hold(server, arg, timeout)
    else:
        print(one(server, mode, arg, timeout), flush=True)


if __name__ == "__main__":
    main()
