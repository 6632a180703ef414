#!/bin/bash
# Two gateways sharing one master secret, as behind an ECMP route: a
# handshake begun at one and finished at the other (the route changed
# between the SYN and the ACK) is verified there, for each dialect: a
# classic cookie's ACK, a TCPCT third packet, a Fast Open cookie with data.
# With another secret, none is.
#
#   client ─── gw  (tcpctd) ─── backend (nsd)
#         └─── gw2 (tcpctd) ───┘
# The client's SYNs go through gw (its default route); the segment that
# completes each handshake is sent to gw2 over a link of its own, from the
# same client address.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/tcpctd.sh"
lab_trap

lab_with_nsd 100
NS_GW2=$LAB-gw2
GW2_CLIENT4=198.51.100.3
GW2_BACKEND4=192.0.2.3
lab_on_down "ip netns del $NS_GW2 2>/dev/null"
gw2_up() {
	ip netns add "$NS_GW2" &&
	ip -n "$NS_GW2" link set lo up &&
	ip -n "$NS_GW2" link add veth-client type veth peer name veth-gw2 netns "$NS_CLIENT" &&
	ip -n "$NS_GW2" link add veth-backend type veth peer name veth-gw2 netns "$NS_BACKEND" &&
	ip -n "$NS_GW2" addr add "$GW2_CLIENT4/32" dev veth-client &&
	ip -n "$NS_GW2" addr add "$GW2_BACKEND4/32" dev veth-backend &&
	ip -n "$NS_GW2" link set veth-client up &&
	ip -n "$NS_GW2" link set veth-backend up &&
	ip -n "$NS_CLIENT" link set veth-gw2 up &&
	ip -n "$NS_BACKEND" link set veth-gw2 up &&
	ip -n "$NS_GW2" route add "$CLIENT4/32" dev veth-client &&
	ip -n "$NS_GW2" route add "$BACKEND4/32" dev veth-backend &&
	ip -n "$NS_BACKEND" route add "$GW2_BACKEND4/32" dev veth-gw2 &&
	ip netns exec "$NS_GW2" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv4.conf.veth-client.rp_filter=0 &&
	ip netns exec "$NS_CLIENT" sysctl -qw net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.veth-gw2.rp_filter=0
}
gw2_up || { not_ok "the second gateway"; t_summary; exit 1; }
GW2_MAC=$(ip -n "$NS_GW2" -br link show veth-client | awk '{ print $3 }')

SECRET=$LAB_DIR/secret
OTHER=$LAB_DIR/other
head -c 32 /dev/urandom >"$SECRET"
head -c 32 /dev/urandom >"$OTHER"
chmod 600 "$SECRET" "$OTHER"

# The second gateway's tcpctd: started and stopped by hand, so that the
# lab's helpers keep to the first.
GW2_PID=
gw2_start() {	# gw2_start SECRET
	ip netns exec "$NS_GW2" "$TCPCTD_BIN" --protect "$BACKEND4:53" --rules install \
		>/dev/null || return 1
	lab_spawn "$NS_GW2" "$LAB_DIR/gw2.log" "$TCPCTD_BIN" --protect "$BACKEND4:53" \
		--secret-file "$1" --control-socket "$LAB_DIR/gw2.sock"
	GW2_PID=$LAB_PID
	wait_log "$LAB_DIR/gw2.log" protecting 10
}
gw2_stop() {
	[ -n "$GW2_PID" ] && lab_kill "$GW2_PID" 10
	GW2_PID=
}
lab_on_down gw2_stop
at() {	# at NS SOCK EXPR: a Python expression over a gateway's counters
	ip netns exec "$1" "$TCPCTL_BIN" -s "$2" -j stats |
		/usr/bin/python3 -c "import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1], {}, d))" "$3"
}
gw2() { at "$NS_GW2" "$LAB_DIR/gw2.sock" "$1"; }
gw1() { at "$NS_GW" "$LAB_DIR/gw.sock" "$1"; }
rotate() {	# rotate gw|gw2: tcpctl keys rotate there
	if [ "$1" = gw ]; then
		ip netns exec "$NS_GW" "$TCPCTL_BIN" -s "$LAB_DIR/gw.sock" keys rotate
	else
		ip netns exec "$NS_GW2" "$TCPCTL_BIN" -s "$LAB_DIR/gw2.sock" keys rotate
	fi
}

# The client's kernel would answer the SYN-ACKs it never asked for.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP

# across BASE [DIRECTION]: each dialect's handshake begun at one gateway,
# finished at the other: "12" (the default) begins at gw, "21" at gw2.
across() {
	ip netns exec "$NS_CLIENT" timeout 40 /usr/bin/python3 - "$BACKEND4" "$CLIENT4" \
		"$GW2_MAC" "$1" "${2:-12}" <<'PY'
import struct, sys
from scapy.all import Ether, IP, TCP, Raw, sr1, srp1, send, sendp, conf
conf.verb = 0
dst, src, mac, base, way = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]

def at_gw(seg, answer):
    if answer:
        r = sr1(IP(dst=dst) / seg, timeout=3)
        return r if r is not None and TCP in r else None
    send(IP(dst=dst) / seg)

def at_gw2(seg, answer):
    pkt = Ether(dst=mac) / IP(src=src, dst=dst) / seg
    if answer:
        r = srp1(pkt, iface="veth-gw2", timeout=3)
        return r if r is not None and TCP in r else None
    sendp(pkt, iface="veth-gw2")

begin, finish = (at_gw, at_gw2) if way == "12" else (at_gw2, at_gw)

def tsval_of(r):
    return dict((k, v) for k, v in r[TCP].options if not isinstance(k, int))["Timestamp"][0]

# Classic: the cookie in the ISN, the options in the TSecr.
opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (4242, 0)), ("WScale", 7)]
r = begin(TCP(sport=base, dport=53, flags="S", seq=1000, options=opts), True)
ok = r is not None and r[TCP].flags == "SA"
if ok:
    finish(TCP(sport=base, dport=53, flags="A", seq=1001, ack=r[TCP].seq + 1, window=502,
               options=[("NOP", None), ("NOP", None), ("Timestamp", (4243, tsval_of(r)))]),
           False)
print("classic", ok)

# TCPCT (RFC 6013): the third packet carries the cookie pair.
ci = bytes(range(1, 17))
r = begin(TCP(sport=base + 1, dport=53, flags="S", seq=1000,
              options=opts + [("NOP", None), ("NOP", None), (253, ci)]), True)
cr = [v for k, v in r[TCP].options if k == 253] if r is not None else []
ok = r is not None and r[TCP].flags == "SA" and len(cr) == 1 and len(cr[0]) == 16
if ok:
    ext = struct.pack("!II", 4243, tsval_of(r)) + b"\x01\x01" + bytes([253, 34]) + ci + cr[0]
    ext += bytes([2, 4, 5, 0xb4])
    finish(TCP(sport=base + 1, dport=53, flags="A", seq=1001, ack=r[TCP].seq + 1,
               window=502, options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext), False)
print("tcpct", ok)

# Fast Open (RFC 7413): a cookie asked of one, used with data at the other.
r = begin(TCP(sport=base + 2, dport=53, flags="S", seq=5000, options=opts + [(34, b"")]),
          True)
c = None
if r is not None:
    for k, v in r[TCP].options:
        if k in (34, "TFO"):
            c = struct.pack("!II", *v) if isinstance(v, tuple) else bytes(v)
q = b"\x00\x1d\x12\x34\x01\x00\x00\x01" + bytes(23)  # one question
ok = False
if c is not None and len(c) == 8:
    a = finish(TCP(sport=base + 3, dport=53, flags="S", seq=7000,
                   options=opts + [(34, c)]) / Raw(q), True)
    ok = a is not None and a[TCP].flags == "SA" and a[TCP].ack == 7001 + len(q)
print("tfo", ok, "data" if ok else "")
PY
}

GW_SECRET=$LAB_DIR/gw.secret
GW2_SECRET=$LAB_DIR/gw2.secret
put() { (umask 077; cat "${@:2}" >"$1.new") && mv "$1.new" "$1"; }	# put FILE SECRETS...
put "$GW_SECRET" "$SECRET"
tcpctd_start --protect "$BACKEND4:53" --secret-file "$GW_SECRET" \
	--control-socket "$LAB_DIR/gw.sock" ||
	{ not_ok "tcpctd starts on gw"; t_summary; exit 1; }
gw2_start "$SECRET" || { not_ok "tcpctd starts on gw2"; t_summary; exit 1; }

out=$(across 42000)
for d in classic tcpct tfo; do
	check "$d: gw answered the SYN" grep -q "^$d True" <<<"$out"
done
wait_until 3 eval '[ "$(gw2 flows_created)" -ge 3 ]'
check "gw2 verified the classic cookie's ACK (ack_verified $(gw2 ack_verified))" \
	[ "$(gw2 ack_verified)" -eq 1 ]
check "gw2 verified the TCPCT pair (tcpct_verified $(gw2 tcpct_verified))" \
	[ "$(gw2 tcpct_verified)" -eq 1 ]
check "gw2 took the Fast Open cookie and its data (tfo_valid $(gw2 tfo_valid))" \
	[ "$(gw2 tfo_valid)" -eq 1 ]
check "... and holds the three connections ($(gw2 flows_created) made)" \
	[ "$(gw2 flows_created)" -eq 3 ]
check "gw never saw what finished them (verified $(tcpctd_counter ack_verified), tcpct $(tcpctd_counter tcpct_verified))" \
	[ "$(tcpctd_counter ack_verified)$(tcpctd_counter tcpct_verified)" = 00 ]

# Another secret at gw2: nothing of gw's is taken there.
gw2_stop
gw2_start "$OTHER" || not_ok "tcpctd restarts on gw2"
out=$(across 43000)
sleep 1
check "with another secret: gw2 verifies none (ack $(gw2 ack_verified), tcpct $(gw2 tcpct_verified), tfo $(gw2 tfo_valid))" \
	[ "$(gw2 ack_verified)$(gw2 tcpct_verified)$(gw2 tfo_valid)" = 000 ]
check "... and made no connection of them ($(gw2 flows_created))" [ "$(gw2 flows_created)" -eq 0 ]
gw2_stop

# The fleet's secret rotated from A to B one gateway at a time, with
# `tcpctl keys rotate` after each file change: A,B (B accepted as well);
# then B,A (B makes the cookies, A still verifies); then B.  At every step
# handshakes begun at either gateway are verified at the other.
put "$GW2_SECRET" "$SECRET"
gw2_start "$GW2_SECRET" || not_ok "tcpctd restarts on gw2"
VERIFIED='ack_verified + tcpct_verified + tfo_valid'
PORT=44000
both_ways() {	# both_ways DESC
	local v1 v2 o12 o21
	v1=$(gw1 "$VERIFIED")
	v2=$(gw2 "$VERIFIED")
	o12=$(across $PORT 12)
	o21=$(across $((PORT + 10)) 21)
	PORT=$((PORT + 20))
	wait_until 3 eval '[ $(($(gw2 "$VERIFIED") - v2)) -ge 3 ] && [ $(($(gw1 "$VERIFIED") - v1)) -ge 3 ]'
	check "$1: gw to gw2 $(($(gw2 "$VERIFIED") - v2)) of 3 verified, gw2 to gw $(($(gw1 "$VERIFIED") - v1)) of 3" \
		[ "$(($(gw2 "$VERIFIED") - v2)).$(($(gw1 "$VERIFIED") - v1))" = 3.3 ]
}
both_ways "both A"
put "$GW2_SECRET" "$SECRET" "$OTHER"
out=$(rotate gw2)
check "keys rotate: $out" grep -q 'read again: cookies made with its first secret, verified with both' <<<"$out"
both_ways "gw A; gw2 A,B"
put "$GW_SECRET" "$SECRET" "$OTHER"
rotate gw >/dev/null
put "$GW2_SECRET" "$OTHER" "$SECRET"
rotate gw2 >/dev/null
both_ways "gw A,B; gw2 B,A"
put "$GW_SECRET" "$OTHER" "$SECRET"
rotate gw >/dev/null
both_ways "both B,A"
put "$GW_SECRET" "$OTHER"
put "$GW2_SECRET" "$OTHER"
rotate gw >/dev/null
rotate gw2 >/dev/null
both_ways "both B"
# Skipping the middle step breaks it, as it should: gw on B alone, gw2 on
# A alone verify nothing of each other's.
put "$GW2_SECRET" "$SECRET"
rotate gw2 >/dev/null
v1=$(gw1 "$VERIFIED")
out=$(across $PORT 21)
sleep 1
check "gw B, gw2 A: gw verifies nothing of gw2's ($(($(gw1 "$VERIFIED") - v1)))" \
	[ "$(gw1 "$VERIFIED")" -eq "$v1" ]
printf 'short' >"$GW2_SECRET"
out=$(rotate gw2 2>&1); rc=$?
check "a file that holds no secret: refused, the keys in use stay (status $rc)" \
	[ "$rc.$(grep -c 'the keys in use stay' <<<"$out")" = 1.1 ]
gw2_stop

check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
