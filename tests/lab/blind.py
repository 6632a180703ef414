#!/usr/bin/env python3
"""blind.py: an off-path attacker against a kept DNS connection.

  blind.py SERVER IFACE N

Run in the client's namespace.  A real DNS connection (the kernel's TCP)
asks one query and gets its answer; then, with the connection's 4-tuple,
N segments an attacker who knows only the tuple would send: FIN|ACK, RST,
RST|ACK, pure ACKs and data marked BLIND, each with random seq and ack and
a TSval 2^30 ahead of the client's; then a second query on the connection.
Prints "blind: first=OK second=OK port=P sent=N", each OK or how the
connection ended.

  blind.py backend SERVER IFACE GW N KINDS

The same, but the N segments claim to be the backend's (SERVER, port 53,
to the connection's port) and come from the client's side: sent on IFACE
to GW's link address, as a client that can put a packet with the
backend's address on its link would.  Each acknowledges all the client
sent (its SND.NXT, which it knows), with a random seq; KINDS are the
flags, comma-separated (A, FA, PA: data marked BLIND).
"""
import random
import socket
import sys
import time

from dnsconn import query, read_answer
from scapy.all import IP, IPv6, TCP, Raw, Ether, send, sendp, conf, AsyncSniffer
from scapy.layers.l2 import getmacbyip
from scapy.layers.inet6 import getmacbyip6

conf.verb = 0


def answered(s):
    how = read_answer(s, time.monotonic() + 5)
    return "OK" if how == "answer" else how


def watched_query(server, iface, settle):
    """A kernel TCP connection to SERVER:53 that asks one query, watched on
    IFACE for settle s after the answer: (socket, first, its last segment,
    its TSval and TSecr there)."""
    s = socket.create_connection((server, 53), timeout=5)
    port = s.getsockname()[1]
    sniff = AsyncSniffer(iface=iface, filter="tcp and src port %d" % port)
    sniff.start()
    time.sleep(0.3)
    s.sendall(query(1))
    first = answered(s)
    time.sleep(settle)
    sniff.stop()
    last = [p for p in sniff.results if TCP in p][-1]
    opts = dict((k, v) for k, v in last[TCP].options if isinstance(k, str))
    tsval, tsecr = opts.get("Timestamp", (0, 0))
    return s, first, last, tsval, tsecr


def main(server, iface, n):
    v6 = ":" in server
    # Long enough for the release (the client's ACK of the answer ends it).
    s, first, _, tsval, tsecr = watched_query(server, iface, 0.5)
    port = s.getsockname()[1]
    ts = [("NOP", None), ("NOP", None),
          ("Timestamp", ((tsval + (1 << 30)) % (1 << 32), tsecr))]
    l3 = IPv6(src=s.getsockname()[0], dst=server) if v6 else \
        IP(src=s.getsockname()[0], dst=server)
    rnd = random.Random(port)
    kinds = ("FA", "R", "RA", "A", "PA")
    pkts = []
    for i in range(n):
        flags = kinds[i % len(kinds)]
        seg = TCP(sport=port, dport=53, flags=flags, seq=rnd.getrandbits(32),
                  ack=rnd.getrandbits(32) if "A" in flags else 0, options=ts)
        pkts.append(l3 / seg / Raw(query(9, b"BLIND.test")) if flags == "PA"
                    else l3 / seg)
    send(pkts)
    time.sleep(0.3)
    s.sendall(query(2))
    second = answered(s)
    s.close()
    print("blind: first=%s second=%s port=%d sent=%d" % (first, second, port, n))


def main_backend(server, iface, gw, n, kinds):
    v6 = ":" in server
    s, first, last, tsval, _ = watched_query(server, iface, 0.5)
    port = s.getsockname()[1]
    client = s.getsockname()[0]
    # The client's last segment acknowledged the answer: its seq is the
    # client's SND.NXT.
    snd_nxt = last[TCP].seq + len(last[TCP].payload)
    mac = getmacbyip6(gw) if v6 else getmacbyip(gw)
    l3 = IPv6(src=server, dst=client) if v6 else IP(src=server, dst=client)
    rnd = random.Random(port)
    kinds = kinds.split(",")
    pkts = []
    for i in range(n):
        flags = kinds[i % len(kinds)]
        ts = [("NOP", None), ("NOP", None),
              ("Timestamp", (rnd.getrandbits(32), tsval))]
        seg = TCP(sport=53, dport=port, flags=flags, seq=rnd.getrandbits(32),
                  ack=snd_nxt, window=65535, options=ts)
        pkt = Ether(dst=mac) / l3 / seg
        pkts.append(pkt / Raw(query(9, b"BLIND.test")) if flags == "PA" else pkt)
    sendp(pkts, iface=iface)
    time.sleep(0.3)
    s.sendall(query(2))
    second = answered(s)
    s.close()
    print("blind: first=%s second=%s port=%d sent=%d win=%d" %
          (first, second, port, n, last[TCP].window))


if __name__ == "__main__":
    if sys.argv[1] == "backend":
        main_backend(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
                     sys.argv[6])
    else:
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
