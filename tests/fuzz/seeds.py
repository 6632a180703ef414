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
ANSWER, KEEPSEQ, WAIT = 0x01, 0x10, 0x20  # fuzz_worker.c's ctl bits
# and its configuration bits
RELEASE_ALWAYS, OVERLOAD, NO_TCPCT, NO_KEEP_CLIENT, TIGHT = 0x01, 0x02, 0x04, 0x08, 0x80
LATER = ANSWER | KEEPSEQ


def query(name="example.test", qtype="A", tcp=True):
    m = bytes(DNS(id=0x1234, rd=1, qd=DNSQR(qname=name, qtype=qtype)))
    return struct.pack("!H", len(m)) + m if tcp else m


def ip(v6, src, dst):
    return IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)


def client(v6, seg):
    return bytes(ip(v6, CLIENT6 if v6 else CLIENT4, SERVER6 if v6 else SERVER4) / seg)


def server(v6, seg):
    return bytes(ip(v6, SERVER6 if v6 else SERVER4, CLIENT6 if v6 else CLIENT4) / seg)


def stream(recs):
    out = b""
    for ctl, pkt in recs:
        out += bytes([ctl]) + struct.pack("!H", len(pkt)) + pkt
    return out


def records(*recs, cfg=0):
    return bytes([cfg]) + stream(recs)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def dns_open(v6, port=40000, dport=53):
    """A classic handshake, a query, the backend's handshake and answer."""
    q = query()
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (1001, 0))]
    return [
        (0, client(v6, TCP(sport=port, dport=dport, flags="S", seq=1000, options=OPTS))),
        (ANSWER, client(v6, TCP(sport=port, dport=dport, flags="A", seq=1001, options=ts))),
        (ANSWER, client(v6, TCP(sport=port, dport=dport, flags="PA", seq=1001, options=ts) / Raw(q))),
        (ANSWER, server(v6, TCP(sport=dport, dport=port, flags="SA", seq=5000, options=OPTS))),
        (LATER | WAIT, server(v6, TCP(sport=dport, dport=port, flags="PA", seq=5001,
                                      options=ts) / Raw(q))),
        (LATER, client(v6, TCP(sport=port, dport=dport, flags="A", seq=1001 + len(q),
                               options=ts))),
    ]


def dns_close(v6, port=40000, dport=53, queries=1, bseq=5001):
    """The client's FIN after its queries, the backend's (at bseq after
    its answers), the last ACK."""
    q = query()
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (1002, 0))]
    return [
        (LATER, client(v6, TCP(sport=port, dport=dport, flags="FA", seq=1001 + queries * len(q),
                               options=ts))),
        (LATER | 3 << 5, server(v6, TCP(sport=dport, dport=port, flags="FA",
                                        seq=bseq + len(q), options=ts))),
        (LATER, client(v6, TCP(sport=port, dport=dport, flags="A",
                               seq=1002 + queries * len(q), options=ts))),
    ]


def dns_session(v6, port=40000, dport=53, cfg=0):
    return records(*dns_open(v6, port, dport), *dns_close(v6, port, dport), cfg=cfg)


def tcpct_ext(flags, seq, data=b"", port=40007):
    """A TCPCT segment from the client: TSX, the extension (timestamps, a
    16+16 Cookie-Pair that ANSWER fills in), data."""
    ext = struct.pack("!II", 1001, 0) + b"\x01\x01" + bytes([253, 34]) + bytes(32)
    return client(False, TCP(sport=port, dport=53, flags=flags, seq=seq,
                             options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext + data))


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
    # A TCPCT flow from the third packet to the last ACK: the client's
    # FIN and last ACK carry the pair, the backend's FIN is guarded.
    q, ts = query(), [("NOP", None), ("NOP", None), ("Timestamp", (2, 1))]
    tcpct_flow = [
        (0, client(False, TCP(sport=40007, dport=53, flags="S", seq=7, options=tcpct))),
        (ANSWER, tcpct_ext("A", 8, q)),
        (ANSWER, server(False, TCP(sport=53, dport=40007, flags="SA", seq=5000, options=OPTS))),
        (LATER | WAIT, server(False, TCP(sport=53, dport=40007, flags="PA", seq=5001,
                                         options=ts) / Raw(q))),
        (LATER, client(False, TCP(sport=40007, dport=53, flags="A", seq=8 + len(q),
                                  options=[("Timestamp", (1002, 0))]))),
        (LATER, tcpct_ext("FA", 8 + len(q))),
        (LATER | WAIT, server(False, TCP(sport=53, dport=40007, flags="FA",
                                         seq=5001 + len(q), options=ts))),
        (LATER | 3 << 5, tcpct_ext("A", 9 + len(q))),
    ]
    write("worker", "tcpct_session", records(*tcpct_flow))
    write("worker", "tcpct_release", records(*tcpct_flow[:5], cfg=RELEASE_ALWAYS))
    write("worker", "tcpct_off", records(*tcpct_flow[:2], cfg=NO_TCPCT))
    # release-always: the backend half goes once the answer is acknowledged,
    # and the next query opens a new backend connection.
    q, ts = query(), [("NOP", None), ("NOP", None), ("Timestamp", (1002, 0))]
    second = [
        # The backend takes our FIN and closes its half.
        (LATER, server(False, TCP(sport=53, dport=40010, flags="FA", seq=5001 + len(q),
                                  options=ts))),
        (LATER, client(False, TCP(sport=40010, dport=53, flags="PA", seq=1001 + len(q),
                                  options=ts) / Raw(q))),
        (ANSWER, server(False, TCP(sport=53, dport=40010, flags="SA", seq=7000, options=OPTS))),
        (LATER | WAIT, server(False, TCP(sport=53, dport=40010, flags="PA", seq=7001,
                                         options=ts) / Raw(q))),
        (LATER, client(False, TCP(sport=40010, dport=53, flags="A", seq=1001 + 2 * len(q),
                                  options=ts))),
    ]
    write("worker", "release_always", records(
        *dns_open(False, 40010), *second, *dns_close(False, 40010, queries=2, bseq=7001),
        cfg=RELEASE_ALWAYS))
    write("worker", "release_close", records(*dns_open(True, 40011), cfg=RELEASE_ALWAYS |
                                             NO_KEEP_CLIENT))
    # The overload mode: backend-max 2, three clients.
    write("worker", "overload", records(
        *dns_open(False, 40020)[:4], *dns_open(False, 40021)[:4], *dns_open(False, 40022)[:3],
        *dns_open(False, 40020)[4:], *dns_open(False, 40021)[4:], cfg=OVERLOAD))
    write("worker", "tight", records(*dns_open(False, 40030), *dns_open(False, 40031)[:3],
                                     cfg=TIGHT | OVERLOAD))
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

    # fuzz_utcp: opts, size, then the server's records (fuzz_utcp.c).
    U_ANSWER, U_KEEPSEQ, U_READ, U_WRITE, U_SHUTDOWN, U_RUN = 0x01, 0x02, 0x10, 0x20, 0x40, 0x80
    U_TCPCT, U_SACK, U_TS, U_WS, U_SYN_DATA, U_V6 = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20

    def srv(flags, seq, data=b"", options=None, v6=False):
        return server(v6, TCP(sport=53, dport=40000, flags=flags, seq=seq,
                              options=options or [("NOP", None), ("NOP", None),
                                                  ("Timestamp", (9, 0))]) / Raw(data))

    def srv_ext(flags, seq, extra=b"", clen=16):
        """A server segment with TSX: timestamps, NOP NOP Cookie-Pair (made
        the connection's by ANSWER), extra options."""
        ext = struct.pack("!II", 9, 0) + b"\x01\x01" + bytes([253, 2 + 2 * clen]) + \
            bytes(2 * clen) + extra
        return srv(flags, seq, ext, options=[(254, bytes([len(ext) // 4, 1]))])

    x = b"d" * 100
    write("utcp", "plain", bytes([U_SACK | U_TS | U_WS, 1 << 3]) + stream([
        (U_ANSWER, srv("SA", 5000, options=OPTS)),
        (U_ANSWER, srv("A", 0, x)),
        (U_ANSWER | U_KEEPSEQ, srv("A", 5301, x)),
        (U_ANSWER | U_KEEPSEQ, srv("A", 5501, x)),
        (U_ANSWER, srv("PA", 0, x * 2)),
        (U_READ | U_WRITE | U_RUN, b""),
        (U_ANSWER | U_RUN, srv("A", 0)),
        (U_ANSWER, srv("FA", 0)),
        (U_SHUTDOWN | U_RUN, b""),
        (U_ANSWER, srv("A", 0)),
    ]))
    write("utcp", "v6", bytes([U_TS | U_V6, 0]) + stream([
        (U_ANSWER, srv("SA", 5000, options=OPTS, v6=True)),
        (U_ANSWER | U_READ, srv("PA", 0, x, v6=True)),
        (U_ANSWER | U_KEEPSEQ, srv("R", 1, v6=True)),
    ]))
    cookie = OPTS + [(253, bytes([0xaa] * 16))]
    write("utcp", "tcpct", bytes([U_TCPCT | U_SACK | U_WS | U_SYN_DATA, 4 | 1 << 3]) + stream([
        (U_ANSWER, srv("SA", 5000, x, options=cookie)),
        (U_ANSWER | U_READ, srv("PA", 0, x)),
        (U_ANSWER, srv_ext("FA", 0)),
        (U_SHUTDOWN | U_RUN, b""),
        (U_ANSWER, srv_ext("A", 0)),
    ]))
    sack31 = b"\x01\x01\x05" + bytes([2 + 8 * 31]) + bytes(8 * 31)
    write("utcp", "tcpct_rst", bytes([U_TCPCT | U_TS, 0]) + stream([
        (U_ANSWER, srv("SA", 5000, options=[(253, bytes([0xaa] * 8)), ("Timestamp", (9, 0))])),
        (U_ANSWER | U_WRITE | U_RUN, srv_ext("A", 0, sack31, clen=8)),
        (U_ANSWER, srv("R", 0)),
        (U_ANSWER, srv_ext("R", 0, clen=8)),
    ]))

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
    ext = struct.pack("!II", 4243, 99) + b"\x01\x01" + bytes([253, 18]) + bytes(16) + \
        b"\x01\x01\x05" + bytes([2 + 8 * 31]) + bytes(range(248))
    write("parse", "tcpct_sack31", client(False, TCP(sport=1, dport=53, flags="A",
                                                      options=[(254, bytes([len(ext) // 4, 1]))]) /
                                          Raw(ext)))
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
    write("config", "mistakes", b"\xef\xbb\xbf[tcpctd]\nmark = 0x10\nflows = 010\n"
          b"deny = 10.0.0.1/8\n[service dns]\nprotect = 0.0.0.0:53\n"
          b"protect = [::ffff:192.0.2.2]:53\n[service dns]\nprotect = 192.0.2.2:53\n")
    write("config", "notconf", b"root:x:0:0:root:/root:/bin/bash\n[tcpctd]\n")

    # fuzz_keys: kind, mode (2 bytes), contents (fuzz_keys.c).
    secret = bytes(range(0x30, 0x70))
    for name, kind, mode, body in [
            ("file32", 0, 0o600, secret[:32]), ("file64", 0, 0o400, secret),
            ("group", 0, 0o640, secret[:32]), ("other_group", 8, 0o640, secret[:32]),
            ("short", 0, 0o600, secret[:31]), ("world", 0, 0o644, secret[:32]),
            ("symlink", 1, 0o600, secret[:32]), ("dir", 2, 0o700, b""),
            ("fifo", 3, 0o600, b""), ("none", 4, 0, b""), ("acl", 5, 0o600, secret[:32]),
            ("label", 0, 0o600, b"tcpctd tcpct v1\0" + secret[:47])]:
        write("keys", name, bytes([kind]) + struct.pack("!H", mode) + body)

    # fuzz_control: requests.
    for i, r in enumerate([b"stats json\n", b"keys rotate", b"status\r\n", b"flows json now\n"]):
        write("control", "req%d" % i, r)


if __name__ == "__main__":
    sys.exit(main())
