#!/bin/bash
# Gateways sharing a master secret verify each other's cookies: a SYN-ACK
# made by one tcpctd is accepted by another started with the same secret
# file (a second gateway behind ECMP, or the same one restarted), and
# refused by one with another secret.  Crafted with scapy from the client.
#
#   client (scapy) ── gw (tcpctd A, then B, then C) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd
secret=$LAB_DIR/secret other=$LAB_DIR/other
(umask 077; head -c 32 /dev/urandom >"$secret"; head -c 32 /dev/urandom >"$other")
# The client's kernel knows nothing of scapy's connection: keep its RSTs in.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP

# syn PORT: send a SYN with timestamps from the client, print "ISN TSVAL" of
# the SYN-ACK that comes back (TSVAL "-" when it has none).
syn() {
	ip netns exec "$NS_CLIENT" timeout 20 /usr/bin/python3 - "$BACKEND4" "$1" <<'PY'
import sys
from scapy.all import IP, TCP, sr1, conf
conf.verb = 0
dst, sport = sys.argv[1], int(sys.argv[2])
syn = IP(dst=dst) / TCP(sport=sport, dport=53, flags="S", seq=1000,
                        options=[("MSS", 1460), ("SAckOK", b""),
                                 ("Timestamp", (4242, 0)), ("WScale", 7)])
# The kernel shield answers within microseconds, which scapy's capture
# may start too late to see: the SYN again, whose SYN-ACK is the same.
for _ in range(5):
    r = sr1(syn, timeout=2)
    if r is not None:
        break
if r is None or r[TCP].flags != "SA":
    sys.exit(1)
# Without timestamps until a probe of nsd has found them: "-".
ts = dict(r[TCP].options).get("Timestamp", ("-", 0))[0]
print(r[TCP].seq, ts)
PY
}
# ack PORT ISN TSVAL: the third packet of that handshake, with the first
# bytes of a query (the kernel shield starts a DNS flow at its data).
ack() {
	ip netns exec "$NS_CLIENT" timeout 20 /usr/bin/python3 - "$BACKEND4" "$@" <<'PY'
import sys
from scapy.all import IP, TCP, send, conf
conf.verb = 0
dst, sport, isn, tsval = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
# Timestamps only when the SYN-ACK had them (RFC 7323 §3.2).
opts = [("NOP", None), ("NOP", None), ("Timestamp", (4243, int(tsval)))] if tsval != "-" else []
send(IP(dst=dst) / TCP(sport=sport, dport=53, flags="PA", seq=1001, ack=isn + 1,
                       window=502, options=opts) / b"\x00\x20")
PY
}
# across SECRET_A SECRET_B PORT: SYN answered by A, ACK verified by B?
# Prints B's ack_verified.
across() {
	local got v
	tcpctd_start --protect "$BACKEND4:53" --secret-file "$1" || return 1
	got=$(syn "$3") || { tcpctd_stop; return 1; }
	tcpctd_stop
	tcpctd_start --protect "$BACKEND4:53" --secret-file "$2" || return 1
	ack "$3" $got
	sleep 0.5
	v=$(tcpctd_counter ack_verified)
	tcpctd_stop
	echo "$v"
}

new=$LAB_DIR/made/secret
mkdir -p "$LAB_DIR/made"
v=$(across "$new" "$new" 40003)
check "a secret file that is not there is made: mode $(stat -c %a "$new" 2>/dev/null), $(stat -c %s "$new" 2>/dev/null) bytes" \
	[ "$(stat -c %a.%s "$new" 2>/dev/null)" = 600.32 ]
check "... and kept: a cookie made with it verifies after a restart ($v)" [ "$v" = 1 ]
check "a secret readable by others is refused" \
	bash -c "chmod 644 '$other'; ! ip netns exec '$NS_GW' '$TCPCTD_BIN' --protect $BACKEND4:53 --secret-file '$other' 2>/dev/null"
chmod 600 "$other"
v=$(across "$secret" "$secret" 40001)
check "a cookie from one tcpctd verifies at another with the same secret ($v)" [ "$v" = 1 ]
v=$(across "$secret" "$other" 40002)
check "a cookie from one tcpctd is refused by one with another secret ($v)" [ "$v" = 0 ]
t_summary
