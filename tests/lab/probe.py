#!/usr/bin/python3
"""probe.py ADDR PORT: connect to ADDR:PORT and print the TCP options the server
granted, as SYNPROXY arguments: "--mss N [--wscale N] [--sack-perm] [--timestamp]".

The same method as tcpctd's own probe (gateway/probe.c): TCP_INFO after the
handshake; the peer's MSS is mss_cache plus the 12 bytes of the timestamp option
when timestamps are on. Run it in the gateway namespace, so the path is the one
SYNPROXY's clients take.
"""
import socket
import struct
import sys

TCPI_OPT_TIMESTAMPS, TCPI_OPT_SACK, TCPI_OPT_WSCALE = 1, 2, 4


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((addr, port))
    ti = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    s.close()
    # struct tcp_info: 8 u8 (state, ca_state, retransmits, probes, backoff,
    # options, snd_wscale:4|rcv_wscale:4, delivery flags), then u32 rto, ato,
    # snd_mss, rcv_mss, ...
    options, wscales = ti[5], ti[6]
    snd_wscale = wscales & 0x0F
    snd_mss = struct.unpack_from("=I", ti, 16)[0]
    ts = bool(options & TCPI_OPT_TIMESTAMPS)
    args = ["--mss", str(snd_mss + (12 if ts else 0))]
    if options & TCPI_OPT_WSCALE:
        args += ["--wscale", str(snd_wscale)]
    if options & TCPI_OPT_SACK:
        args.append("--sack-perm")
    if ts:
        args.append("--timestamp")
    print(" ".join(args))


if __name__ == "__main__":
    main()
