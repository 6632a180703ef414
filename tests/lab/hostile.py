#!/usr/bin/env python3
"""hostile.py: packets no honest peer sends, one at a time, towards a
protected service, each followed by a look at the gateway's counters.

  hostile.py packets SERVER4 SERVER6 CLIENT4 CLIENT6 TCPCTL_CMD...
  hostile.py window SERVER4 IFACE
  hostile.py fragments SERVER4 SERVER6 ROUNDS
  hostile.py chains SERVER6 ROUNDS

Run in the client's namespace; TCPCTL_CMD prints the gateway's counters as
JSON (ip netns exec GW tcpctl -s SOCK -j stats).  For each packet it prints
"name: moved=COUNTER+N,... expect=A|B|kernel" and "ok"/"bad": ok when one
of the expected counters moved (kernel: the gateway's kernel drops it
before any queue, so nothing may move but "packets" of other kinds;
kernel_fragments_dropped_*: the rules drop it, and count it there).
Every packet uses a source port in 50000..50999, so that a capture at the
backend tells whether any of them got through.

window: a real DNS connection (the kernel's TCP), one query answered; then,
on its tuple, segments outside its window (data far ahead and far behind,
an ACK of data never sent, a RST out of the window, a SYN), their payloads
marked HOSTILE; then a second query on the connection.  Prints
"window: first=OK second=OK", each OK or what went wrong.

fragments: run where the spoofed prefixes are local (the attacker): whole
fragment trains, as an attacker sends them, of SYNs to port 53 with
Linux's options, with and without 100 bytes of data, in fragments of 16
and of 24 bytes (scapy's fragment() and fragment6()), each datagram from
its own address in 198.18.0.0/15 or 2001:db8:f::/48 and a source port in
20000..29999; ROUNDS times.  Prints "fragments: ipv4=N ipv6=M datagrams=D
short=S": N and M fragments, of D datagrams of each family, S of which
have a first fragment that holds less than a whole TCP header.

chains: run where the spoofed prefixes are local (the attacker): IPv6 SYNs
to port 53 behind two Destination Options headers, in two fragments each,
whose header chain does not resolve in the first: Frag(nh=60) +
DSTOPT(nh=60), the next header in the next fragment, which holds the
second DSTOPT(nh=6) and the SYN.  The second fragment's own Next Header is
60 (an extension header) in one datagram of each pair, 17 (UDP, a claim
only the first fragment's headers could make good) in the other.  Each
from its own address in 2001:db8:f::/48 and a source port in
30000..30999; ROUNDS pairs.  Prints "chains: fragments=N datagrams=D
udp=U": U of the N fragments name UDP.
"""
import json
import random
import subprocess
import sys
import time

from blind import answered, watched_query
from dnsconn import query
from scapy.all import IP, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPOption_RR, \
    PadN, TCP, Raw, send, conf, fragment, fragment6

conf.verb = 0
TS = ("Timestamp", (1000, 0))
TCPCTL = []


def counters():
    """The daemon's own counters (each service's are in a list)."""
    out = subprocess.run(TCPCTL, check=True, capture_output=True, text=True).stdout
    return {k: v for k, v in json.loads(out).items() if isinstance(v, int)}


def raw_opts(b):
    """TCP options given as bytes, padded to a word."""
    return b + bytes((4 - len(b) % 4) % 4)


def cases(v6, port, S4, S6, C4, C6):
    src, dst = (C6, S6) if v6 else (C4, S4)
    L3 = (lambda **kw: IPv6(src=src, dst=dst, nh=6, **kw)) if v6 else \
         (lambda **kw: IP(src=src, dst=dst, proto=6, **kw))
    syn = dict(sport=port, dport=53, flags="S", seq=1000)
    p = port
    # The IP length ends inside the TCP header: 10 of its 20 bytes.
    cut = L3(plen=10) if v6 else L3(len=30)
    yield "TCP header cut short", cut / Raw(bytes(TCP(**syn))[:10]), \
        ["drop_truncated", "kernel"]
    yield "data offset past the end", L3() / TCP(dataofs=15, **syn), ["drop_bad_tcp_doff"]
    yield "data offset 4", L3() / TCP(dataofs=4, **syn), ["drop_bad_tcp_doff", "kernel"]
    yield "option length 0", L3() / TCP(options=[(2, b"")], **syn) / Raw(), \
        ["drop_option_bad_length"]
    yield "option length 0 (raw)", L3() / TCP(dataofs=6, **syn) / Raw(b"\x02\x00\x00\x00"), \
        ["drop_option_bad_length"]
    yield "option length 1", L3() / TCP(dataofs=6, **syn) / Raw(b"\x08\x01\x00\x00"), \
        ["drop_option_bad_length"]
    yield "option past the end", L3() / TCP(dataofs=6, **syn) / Raw(b"\x01\x01\x08\x0a"), \
        ["drop_option_overrun"]
    yield "MSS of length 3", L3() / TCP(dataofs=6, **syn) / Raw(b"\x02\x03\x05\x01"), \
        ["drop_option_bad_length"]
    yield "MSS twice", L3() / TCP(options=[("MSS", 1460), ("MSS", 536)], **syn), \
        ["drop_option_duplicate"]
    yield "Timestamps twice", L3() / TCP(options=[TS, TS], **syn), ["drop_option_duplicate"]
    yield "Timestamps and TSX", L3() / TCP(options=[TS, (254, b"\x01\x01")], **syn), \
        ["drop_option_exclusive"]
    yield "two cookie options", L3() / TCP(options=[(253, bytes(8)), (253, bytes(8))],
                                           **syn), ["drop_option_exclusive"]
    yield "window scale 200", L3() / TCP(options=[("WScale", 200), TS], **syn), \
        ["synack_sent", "tcpct_synack"]
    if not v6:
        yield "IP options", IP(src=src, dst=dst, options=[IPOption_RR()]) / TCP(**syn), \
            ["synack_sent"]
        yield "first fragment", IP(src=src, dst=dst, flags="MF", id=7) / \
            TCP(**syn) / Raw(b"f" * 16), ["kernel_fragments_dropped_ipv4"]
        yield "non-first fragment", IP(src=src, dst=dst, frag=2, proto=6, id=8) / \
            Raw(bytes(TCP(**syn)) + b"g" * 8), ["kernel_fragments_dropped_ipv4"]
    else:
        yield "fragment header", IPv6(src=src, dst=dst) / IPv6ExtHdrFragment(m=1, id=9) / \
            TCP(**syn) / Raw(b"f" * 16), ["kernel_fragments_dropped_ipv6"]
        yield "nine extension headers", IPv6(src=src, dst=dst) / \
            IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / \
            IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / \
            IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / TCP(**syn), \
            ["drop_ipv6_exthdr_limit"]
    yield "SYN, bad checksum", L3() / TCP(chksum=0x1234, **syn), ["bad_csum"]
    yield "ACK, bad checksum", L3() / TCP(sport=p, dport=53, flags="A", seq=5, ack=6,
                                          chksum=0x1234), ["bad_csum"]
    yield "SYN+FIN", L3() / TCP(sport=p, dport=53, flags="SF"), ["syn_bad_flags"]
    yield "SYN+RST", L3() / TCP(sport=p, dport=53, flags="SR"), ["syn_bad_flags"]
    yield "SYN+ACK from a client", L3() / TCP(sport=p, dport=53, flags="SA"), \
        ["syn_bad_flags"]
    yield "no flags", L3() / TCP(sport=p, dport=53, flags=""), ["no_ack_flag"]
    yield "FIN+PSH+URG", L3() / TCP(sport=p, dport=53, flags="FPU"), ["no_ack_flag"]
    yield "ACK with data, no flow", L3() / TCP(sport=p, dport=53, flags="PA", seq=7, ack=9) / \
        Raw(b"\x00\x05hello"), ["cookie_bad", "cookie_expired", "cookie_no_key"]
    yield "FIN+ACK, no flow", L3() / TCP(sport=p, dport=53, flags="FA", seq=7, ack=9), \
        ["cookie_bad", "cookie_expired", "cookie_no_key"]
    yield "RST, no flow", L3() / TCP(sport=p, dport=53, flags="R", seq=7), ["stray_client"]
    yield "window probe, no flow", L3() / TCP(sport=p, dport=53, flags="A", seq=6, ack=9) / \
        Raw(b"x"), ["cookie_bad", "cookie_expired", "cookie_no_key"]


def packets(S4, S6, C4, C6, tcpctl):
    TCPCTL[:] = tcpctl
    port = 50000
    for v6 in (False, True):
        for name, pkt, expect in cases(v6, port, S4, S6, C4, C6):
            before = counters()
            send(pkt)
            moved = {}
            for _ in range(20):
                time.sleep(0.05)
                after = counters()
                moved = {k: after[k] - before.get(k, 0) for k in after
                         if after[k] != before.get(k, 0) and k != "packets" and
                         not k.startswith(("queue_", "kernel_queue", "inject_"))}
                if moved or expect == ["kernel"]:
                    break
            if expect == ["kernel"]:
                good = not moved
            else:
                # The kernel shield's count of the same name is as good.
                good = any(k in moved or "shield/" + k in moved for k in expect) or \
                    ("kernel" in expect and not moved)
            print("%s %s: moved=%s expect=%s" % ("ok" if good else "bad",
                  ("IPv6 " if v6 else "IPv4 ") + name,
                  ",".join("%s+%d" % kv for kv in sorted(moved.items())) or "-",
                  "|".join(expect)))
            port += 1


def window(server, iface):
    s, first, last, tsval, tsecr = watched_query(server, iface, 0.3)
    port = s.getsockname()[1]
    seq, ack = last[TCP].seq, last[TCP].ack
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (tsval + 1, tsecr))]
    l3 = IP(src=last[IP].src, dst=server)
    seg = dict(sport=port, dport=53, options=ts)
    far = 1 << 30
    for pkt in (l3 / TCP(flags="PA", seq=(seq + far) % (1 << 32), ack=ack, **seg) /
                Raw(query(9, b"HOSTILE-A.test")),
                l3 / TCP(flags="PA", seq=(seq - far) % (1 << 32), ack=ack, **seg) /
                Raw(query(9, b"HOSTILE-B.test")),
                l3 / TCP(flags="PA", seq=seq, ack=(ack + far) % (1 << 32), **seg) /
                Raw(query(9, b"HOSTILE-C.test")),
                l3 / TCP(flags="R", seq=(seq + far) % (1 << 32), **seg),
                l3 / TCP(flags="S", seq=(seq + far) % (1 << 32), **seg)):
        send(pkt)
    time.sleep(0.3)
    s.sendall(query(2))
    second = answered(s)
    s.close()
    print("window: first=%s second=%s port=%d" % (first, second, port))


def fragments(server4, server6, rounds):
    rnd = random.Random(21)
    opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (rnd.randrange(1 << 32), 0)),
            ("NOP", None), ("WScale", 7)]
    v4, v6, datagrams, short = [], [], 0, 0
    for _ in range(int(rounds)):
        for size in (16, 24):
            for data in (b"", b"x" * 100):
                syn = TCP(sport=rnd.randrange(20000, 30000), dport=53, flags="S",
                          seq=rnd.randrange(1 << 32), options=opts) / Raw(data)
                src4 = "198.%d.%d.%d" % (rnd.randrange(18, 20), rnd.randrange(256),
                                         rnd.randrange(1, 255))
                src6 = "2001:db8:f:%x::%x" % (rnd.randrange(1 << 16), rnd.randrange(1, 1 << 16))
                v4 += fragment(IP(src=src4, dst=server4, id=rnd.randrange(1 << 16)) / syn,
                               fragsize=size)
                # fragment6's size is the whole packet's: 40 + 8 + size.
                v6 += fragment6(IPv6(src=src6, dst=server6) /
                                IPv6ExtHdrFragment(id=rnd.randrange(1 << 32)) / syn,
                                48 + size)
                datagrams += 1
                short += size < 20
    send(v4 + v6)
    print("fragments: ipv4=%d ipv6=%d datagrams=%d short=%d" % (len(v4), len(v6), datagrams,
                                                                short))


def chains(server6, rounds):
    rnd = random.Random(31)
    opts = [("MSS", 1440), ("SAckOK", b""), ("Timestamp", (rnd.randrange(1 << 32), 0)),
            ("NOP", None), ("WScale", 7)]
    pad = [PadN(optdata=bytes(4))]     # an 8-byte Destination Options header
    out, datagrams, udp = [], 0, 0
    for _ in range(int(rounds)):
        for second_nh in (60, 17):
            src6 = "2001:db8:f:%x::%x" % (rnd.randrange(1 << 16), rnd.randrange(1, 1 << 16))
            ident = rnd.randrange(1 << 32)
            syn = TCP(sport=rnd.randrange(30000, 31000), dport=53, flags="S",
                      seq=rnd.randrange(1 << 32), options=opts)
            # The whole datagram, for its TCP checksum; its fragmentable
            # part cut after the first Destination Options header.
            whole = bytes(IPv6(src=src6, dst=server6) / IPv6ExtHdrDestOpt(nh=60, options=pad) /
                          IPv6ExtHdrDestOpt(nh=6, options=pad) / syn)[40:]
            out.append(IPv6(src=src6, dst=server6) /
                       IPv6ExtHdrFragment(nh=60, offset=0, m=1, id=ident) / Raw(whole[:8]))
            out.append(IPv6(src=src6, dst=server6) /
                       IPv6ExtHdrFragment(nh=second_nh, offset=1, m=0, id=ident) / Raw(whole[8:]))
            datagrams += 1
            udp += second_nh == 17
    send(out)
    print("chains: fragments=%d datagrams=%d udp=%d" % (len(out), datagrams, udp))


if __name__ == "__main__":
    if sys.argv[1] == "packets":
        packets(*sys.argv[2:6], sys.argv[6:])
    elif sys.argv[1] == "fragments":
        fragments(*sys.argv[2:5])
    elif sys.argv[1] == "chains":
        chains(*sys.argv[2:4])
    else:
        window(*sys.argv[2:4])
