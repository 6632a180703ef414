#!/usr/bin/env python3
"""dnsload.py: one DNS-over-TCP connection after another for a while, each
a new handshake with one query, and what became of each.

  dnsload.py SERVER SECONDS [--timeout S]

Prints one line per connection: "T ok|fail WHY", T the seconds since the
start when it began; connections that fail do so within --timeout (0.5 s).
WHY is the connect error, or how the connection ended instead of answering
(dnsconn.py's read_answer: reset, eof, timeout).
"""
import socket
import sys
import time

from dnsconn import query, read_answer


def one(server, qid, timeout):
    try:
        s = socket.create_connection((server, 53), timeout=timeout)
    except OSError as e:
        return "fail connect:" + (e.strerror or "timeout").replace(" ", "_")
    try:
        s.sendall(query(qid))
        how = read_answer(s, time.monotonic() + timeout)
        return "ok" if how == "answer" else "fail answer:" + how
    except OSError as e:
        return "fail answer:" + (e.strerror or "timeout").replace(" ", "_")
    finally:
        s.close()


def main():
    server, seconds = sys.argv[1], float(sys.argv[2])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--timeout" else 0.5
    start = time.monotonic()
    qid = 0
    while time.monotonic() - start < seconds:
        t = time.monotonic() - start
        qid = (qid + 1) & 0xffff
        print("%.2f %s" % (t, one(server, qid, timeout)), flush=True)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
