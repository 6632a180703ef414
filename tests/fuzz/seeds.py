#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/TARGET/NAME):
packets and packet sequences a real peer sends, DNS streams, configuration
files, control requests.  Run it again after changing a target's input
format; the files it writes are committed."""
import os
import struct
import sys

from scapy.all import IP, IPv6, IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, \
    TCP, UDP, Raw, DNS, DNSQR, conf

conf.verb = 0
HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT4, SERVER4 = "198.51.100.2", "192.0.2.2"
CLIENT6, SERVER6 = "2001:db8:c::2", "2001:db8:b::2"
OPTS = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1000, 0)), ("NOP", None),
        ("WScale", 7)]
ANSWER, WAIT = 0x01, 0x20  # fuzz_worker.c's ctl bits


def query(name="example.test", qtype="A", tcp=True):
    m = bytes(DNS(id=0x1234, rd=1, qd=DNSQR(qname=name, qtype=qtype)))
    return struct.pack("!H", len(m)) + m if tcp else m


def ip(v6, src, dst):
    return IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)


def client(v6, seg):
    return bytes(ip(v6, CLIENT6 if v6 else CLIENT4, SERVER6 if v6 else SERVER4) / seg)


def server(v6, seg):
    return bytes(ip(v6, SERVER6 if v6 else SERVER4, CLIENT6 if v6 else CLIENT4) / seg)


def records(*recs):
    out = b""
    for ctl, pkt in recs:
        out += bytes([ctl]) + struct.pack("!H", len(pkt)) + pkt
    return out


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def dns_session(v6, port=40000, dport=53):
    q = query()
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (1001, 0))]
    return records(
        (0, client(v6, TCP(sport=port, dport=dport, flags="S", seq=1000, options=OPTS))),
        (ANSWER, client(v6, TCP(sport=port, dport=dport, flags="A", seq=1001, options=ts))),
        (ANSWER, client(v6, TCP(sport=port, dport=dport, flags="PA", seq=1001, options=ts) / Raw(q))),
        (ANSWER, server(v6, TCP(sport=dport, dport=port, flags="SA", seq=5000, options=OPTS))),
        (ANSWER | WAIT, server(v6, TCP(sport=dport, dport=port, flags="PA", seq=5001,
                                       options=ts) / Raw(q))),
        (ANSWER, client(v6, TCP(sport=port, dport=dport, flags="FA", seq=1001 + len(q),
                                options=ts))),
        (3 << 5, server(v6, TCP(sport=dport, dport=port, flags="FA", seq=5001 + len(q),
                                options=ts))),
    )


def main():
    # fuzz_worker: whole sessions of each dialect.
    write("worker", "classic4", dns_session(False))
    write("worker", "classic6", dns_session(True))
    write("worker", "generic80", dns_session(False, 40001, 80))
    tcpct = OPTS + [("NOP", None), ("NOP", None), (253, bytes(range(1, 17)))]
    write("worker", "tcpct_syn", records(
        (0, client(False, TCP(sport=40002, dport=53, flags="S", seq=7, options=tcpct))),
        (0, client(False, TCP(sport=40003, dport=53, flags="S", seq=7,
                              options=tcpct) / Raw(query()[2:]))),
        (WAIT, server(False, UDP(sport=53, dport=61440) / Raw(query()[2:])))))
    ext = struct.pack("!II", 1001, 0) + b"\x01\x01" + bytes([253, 34]) + bytes(32)
    third = TCP(sport=40007, dport=53, flags="A", seq=8,
                options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext + query())
    write("worker", "tcpct_session", records(
        (0, client(False, TCP(sport=40007, dport=53, flags="S", seq=7, options=tcpct))),
        (ANSWER, client(False, third)),
        (ANSWER, server(False, TCP(sport=53, dport=40007, flags="SA", seq=5000, options=OPTS))),
        (ANSWER | WAIT, server(False, TCP(sport=53, dport=40007, flags="PA", seq=5001,
                                          options=[("Timestamp", (2, 1))]) / Raw(query())))))
    write("worker", "tfo", records(
        (0, client(False, TCP(sport=40004, dport=53, flags="S", seq=9,
                              options=OPTS + [(34, b"")]))),
        (0, client(True, TCP(sport=40005, dport=53, flags="S", seq=9,
                             options=OPTS + [(34, bytes(8))]) / Raw(query()))),
        (ANSWER, client(True, TCP(sport=40005, dport=53, flags="A", seq=10)))))
    write("worker", "stray", records(
        (0, client(False, TCP(sport=40006, dport=53, flags="A", seq=1, ack=2) / Raw(b"x" * 40))),
        (0, server(False, TCP(sport=53, dport=40006, flags="R", seq=3))),
        (0, client(False, TCP(sport=40006, dport=53, flags="SF", seq=1))),
        (0x02, client(False, TCP(sport=40006, dport=53, flags="S", seq=1, chksum=1)))))

    # fuzz_parse: single packets, IPv4 and IPv6 with extension headers.
    write("parse", "syn4", client(False, TCP(sport=1, dport=53, flags="S", options=OPTS)))
    write("parse", "syn6_ext", bytes(IPv6(src=CLIENT6, dst=SERVER6) / IPv6ExtHdrHopByHop() /
                                     IPv6ExtHdrDestOpt() / TCP(sport=1, dport=53, flags="S",
                                                               options=OPTS)))
    write("parse", "frag6", bytes(IPv6(src=CLIENT6, dst=SERVER6) / IPv6ExtHdrFragment(m=1) /
                                  TCP(sport=1, dport=53) / Raw(b"x" * 16)))
    write("parse", "frag4", bytes(IP(src=CLIENT4, dst=SERVER4, flags="MF") / TCP() / Raw(b"y" * 8)))
    write("parse", "sack", client(False, TCP(sport=1, dport=53, flags="A", options=[
        ("NOP", None), ("NOP", None), ("Timestamp", (5, 6)),
        ("SAck", (100, 200, 300, 400))])))
    ext = struct.pack("!II", 4243, 99) + b"\x01\x01" + bytes([253, 34]) + bytes(32)
    write("parse", "tcpct_tsx", client(False, TCP(sport=1, dport=53, flags="A",
                                                   options=[(254, bytes([len(ext) // 4, 1]))]) /
                                       Raw(ext + b"data")))
    write("parse", "udp_answer", server(False, UDP(sport=53, dport=61440) / Raw(query()[2:])))

    # fuzz_dns: two bytes of cut, then a client's stream.
    write("dns", "two_queries", b"\x00\x07" + query() + query("big.example.test", "TXT"))
    write("dns", "axfr", b"\x01\x00" + query("example.test", "AXFR"))
    write("dns", "edns", b"\x00\x03" + struct.pack("!H", 40) +
          bytes(DNS(id=1, qd=DNSQR(qname="a.test"), ar=None)) +
          bytes.fromhex("0000291000000000000000"))

    # fuzz_cookie: struct input (fuzz_cookie.c) is 100 bytes.
    write("cookie", "zero", bytes(100))
    write("cookie", "v6", bytes([1]) + bytes(range(99)))

    # fuzz_config: the example configuration, and errors.
    with open(os.path.join(HERE, "..", "..", "systemd", "tcpctd.conf"), "rb") as f:
        write("config", "example", f.read())
    write("config", "services", b"[tcpctd]\nqueues = 2\ntfo = no\n[service dns]\n"
          b"protect = 192.0.2.2:53,tcpct=no\nprotect = [2001:db8:b::2]:53\n"
          b"max-per-addr = 5\n[service web]\nprotect = 192.0.2.3:443\nkind = generic\n")
    write("config", "bad", b"[tcpctd\nflows = x\n[service]\nprotect = 1.2.3.4\n")

    # fuzz_control: requests.
    for i, r in enumerate([b"stats json\n", b"keys rotate", b"status\r\n", b"flows json now\n"]):
        write("control", "req%d" % i, r)


if __name__ == "__main__":
    sys.exit(main())
