#!/bin/bash
# Two gateways sharing one master secret behind a router with a multipath
# (ECMP) route: each client connection goes through one of them, by its
# tuple's hash, and a handshake begun at one and finished at the other (the
# router's group changed between the SYN and the ACK: a gateway withdrawn,
# or added) is verified there, for each dialect: a classic cookie's ACK, a
# TCPCT third packet, a Fast Open cookie with data.  With another secret,
# none is; a key rotation done one gateway at a time never breaks the fleet.
#
#   client 198.51.100.66 ── router ─┬─ nexthop 1: gw  (tcpctd) ─┬── backend (nsd)
#                                   └─ nexthop 2: gw2 (tcpctd) ─┘
# The router hashes on addresses and ports (fib_multipath_hash_policy 1).
# The backend answers through the gateway a connection came in by: the
# SYN's mark (set per interface) becomes the socket's (tcp_fwmark_accept),
# and the mark picks the route.
. "$(dirname "$0")/scenario.sh"

NS_GW2=$LAB-gw2
NS_ROUTER=$LAB-router
LAB_NAMESPACES+=" $NS_GW2 $NS_ROUTER"	# made and removed with the lab
lab_with_nsd 100

ECMP_CLIENT4=198.51.100.66	# the client's address behind the router
ECMP_NET4=198.51.100.64/26
ROUTER_CLIENT4=198.51.100.65
ROUTER_GW4=198.51.100.129	# 198.51.100.128/30 to gw
GW_ROUTER4=198.51.100.130
ROUTER_GW2_4=198.51.100.133	# 198.51.100.132/30 to gw2
GW2_ROUTER4=198.51.100.134
GW2_BACKEND4=192.0.2.3
ECMP_GROUP=12			# the router's nexthop group: 1 gw, 2 gw2
ecmp_up() {
	local r=$NS_ROUTER
	ip -n "$r" link add veth-client type veth peer name veth-router netns "$NS_CLIENT" &&
	ip -n "$r" link add veth-gw type veth peer name veth-router netns "$NS_GW" &&
	ip -n "$r" link add veth-gw2 type veth peer name veth-router netns "$NS_GW2" &&
	ip -n "$NS_GW2" link add veth-backend type veth peer name veth-gw2 netns "$NS_BACKEND" &&
	ip -n "$r" addr add "$ROUTER_CLIENT4/26" dev veth-client &&
	ip -n "$r" addr add "$ROUTER_GW4/30" dev veth-gw &&
	ip -n "$r" addr add "$ROUTER_GW2_4/30" dev veth-gw2 &&
	ip -n "$NS_CLIENT" addr add "$ECMP_CLIENT4/26" dev veth-router &&
	ip -n "$NS_GW" addr add "$GW_ROUTER4/30" dev veth-router &&
	ip -n "$NS_GW2" addr add "$GW2_ROUTER4/30" dev veth-router &&
	ip -n "$NS_GW2" addr add "$GW2_BACKEND4/32" dev veth-backend &&
	for l in "$r veth-client" "$r veth-gw" "$r veth-gw2" "$NS_CLIENT veth-router" \
		"$NS_GW veth-router" "$NS_GW2 veth-router" "$NS_GW2 veth-backend" \
		"$NS_BACKEND veth-gw2"; do
		ip -n "${l% *}" link set "${l#* }" up || return 1
	done &&
	ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.fib_multipath_hash_policy=1 net.ipv4.conf.all.rp_filter=0 &&
	ip netns exec "$NS_GW2" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.conf.all.rp_filter=0 &&
	ip -n "$r" nexthop add id 1 via "$GW_ROUTER4" dev veth-gw &&
	ip -n "$r" nexthop add id 2 via "$GW2_ROUTER4" dev veth-gw2 &&
	ip -n "$r" nexthop add id "$ECMP_GROUP" group 1/2 &&
	ip -n "$r" route add "$NET_BACKEND4" nhid "$ECMP_GROUP" &&
	ip -n "$NS_CLIENT" route add "$BACKEND4/32" via "$ROUTER_CLIENT4" src "$ECMP_CLIENT4" &&
	ip -n "$NS_GW" route add "$ECMP_NET4" via "$ROUTER_GW4" &&
	ip -n "$NS_GW2" route add "$ECMP_NET4" via "$ROUTER_GW2_4" &&
	ip -n "$NS_GW2" route add "$BACKEND4/32" dev veth-backend &&
	ip -n "$NS_BACKEND" route add "$GW2_BACKEND4/32" dev veth-gw2 &&
	ip netns exec "$NS_BACKEND" sysctl -qw net.ipv4.tcp_fwmark_accept=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.veth-gw2.rp_filter=0 &&
	in_backend iptables -t mangle -A PREROUTING -i veth-gw2 -j MARK --set-mark 2 &&
	ip -n "$NS_BACKEND" rule add fwmark 2 lookup 102 &&
	ip -n "$NS_BACKEND" route add default via "$GW2_BACKEND4" dev veth-gw2 onlink table 102
}
ecmp_up || { not_ok "the router and the second gateway"; t_summary; exit 1; }
group() { ip -n "$NS_ROUTER" nexthop replace id "$ECMP_GROUP" group "$1"; }	# group 1/2
SECRET=$LAB_DIR/secret
OTHER=$LAB_DIR/other
head -c 32 /dev/urandom >"$SECRET"
head -c 32 /dev/urandom >"$OTHER"
chmod 600 "$SECRET" "$OTHER"

# The second gateway's tcpctd: started and stopped by hand, so that the
# lab's helpers keep to the first.  Without the kernel shield, which the
# first has (the default): a cookie one path made, the other verifies.
GW2_PID=
gw2_start() {	# gw2_start SECRET
	ip netns exec "$NS_GW2" "$TCPCTD_BIN" --protect "$BACKEND4:53" --rules install \
		>/dev/null || return 1
	lab_spawn "$NS_GW2" "$LAB_DIR/gw2.log" "$TCPCTD_BIN" --protect "$BACKEND4:53" \
		--secret-file "$1" --control-socket "$LAB_DIR/gw2.sock" --shield no
	GW2_PID=$LAB_PID
	wait_log "$LAB_DIR/gw2.log" protecting 10
}
gw2_stop() {
	[ -n "$GW2_PID" ] && lab_kill "$GW2_PID" 10
	GW2_PID=
}
lab_on_down gw2_stop
gw2() { tcpctl_eval "$NS_GW2" "$LAB_DIR/gw2.sock" "$1"; }
gw1() { tcpctl_eval "$LAB_DIR/gw.sock" "$1"; }
name() { if [ "$1" = 1 ]; then echo gw; else echo gw2; fi; }	# name 1|2
rotate() {	# rotate gw|gw2: tcpctl keys rotate there
	if [ "$1" = gw ]; then
		ip netns exec "$NS_GW" "$TCPCTL_BIN" -s "$LAB_DIR/gw.sock" keys rotate
	else
		ip netns exec "$NS_GW2" "$TCPCTL_BIN" -s "$LAB_DIR/gw2.sock" keys rotate
	fi
}

keys_of() {	# keys_of gw|gw2: its secret's id, and the accepted one's
	local ns=$NS_GW
	[ "$1" = gw ] || ns=$NS_GW2
	ip netns exec "$ns" "$TCPCTL_BIN" -s "$LAB_DIR/$1.sock" -j status |
		/usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["secret_id"], d["accepted_secret_id"])'
}

# The client's kernel would answer the SYN-ACKs it never asked for.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP

# across BASE [WAY]: each dialect's handshake begun at one gateway and
# finished at the other, from the client behind the router, source ports
# BASE.. .  WAY ecmp (the default): the SYN goes where the router's hash
# sends it (both nexthops in the group), then that gateway is withdrawn
# from the group; 12: the group is gw alone, then gw2 alone; 21: the
# reverse.  Prints "DIALECT True|False N": whether the SYN was answered,
# and the gateway (1 or 2) that answered it.  The group is 1/2 again after.
across() {
	ip netns exec "$NS_CLIENT" timeout 40 /usr/bin/python3 - "$BACKEND4" "$ECMP_CLIENT4" \
		"$1" "${2:-ecmp}" "$NS_ROUTER" "$ECMP_GROUP" "$GW_ROUTER4" <<'PY'
import struct, subprocess, sys
from scapy.all import IP, TCP, Raw, sr1, send, conf
conf.verb = 0
dst, src, base, way, router, gid, gw1 = sys.argv[1:]
base = int(base)

def ip(*args):
    return subprocess.run(["ip", "-n", router] + list(args), check=True,
                          capture_output=True, text=True).stdout

def group(members):
    ip("nexthop", "replace", "id", gid, "group", members)

def hashed(sport):
    """The gateway the router's multipath hash picks for this tuple."""
    out = ip("route", "get", dst, "from", src, "iif", "veth-client", "ipproto", "tcp",
             "sport", str(sport), "dport", "53")
    return 1 if "via " + gw1 + " " in out else 2

def begin(seg):
    """Sends seg toward the first gateway; returns its answer and which it was."""
    first = int(way[0]) if way != "ecmp" else hashed(seg.sport)
    group("1/2" if way == "ecmp" else str(first))
    r = sr1(IP(src=src, dst=dst) / seg, timeout=3)
    group(str(3 - first))
    return (r if r is not None and TCP in r else None), first

def finish(seg, answer):
    pkt = IP(src=src, dst=dst) / seg
    if answer:
        r = sr1(pkt, timeout=3)
        return r if r is not None and TCP in r else None
    send(pkt)

def tsval_of(r):
    return dict((k, v) for k, v in r[TCP].options if not isinstance(k, int))["Timestamp"][0]

try:
    # Classic: the cookie in the ISN, the options in the TSecr.
    opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (4242, 0)), ("WScale", 7)]
    r, at = begin(TCP(sport=base, dport=53, flags="S", seq=1000, options=opts))
    ok = r is not None and r[TCP].flags == "SA"
    if ok:
        # With the first bytes of a query: a DNS flow starts at its
        # data (the kernel shield drops a bare cookie ACK it verified).
        finish(TCP(sport=base, dport=53, flags="PA", seq=1001, ack=r[TCP].seq + 1, window=502,
                   options=[("NOP", None), ("NOP", None), ("Timestamp", (4243, tsval_of(r)))]) /
               Raw(b"\x00\x20"), False)
    print("classic", ok, at)

    # TCPCT (RFC 6013): the third packet carries the cookie pair.
    ci = bytes(range(1, 17))
    r, at = begin(TCP(sport=base + 1, dport=53, flags="S", seq=1000,
                      options=opts + [("NOP", None), ("NOP", None), (253, ci)]))
    cr = [v for k, v in r[TCP].options if k == 253] if r is not None else []
    ok = r is not None and r[TCP].flags == "SA" and len(cr) == 1 and len(cr[0]) == 16
    if ok:
        ext = struct.pack("!II", 4243, tsval_of(r)) + b"\x01\x01" + bytes([253, 34]) + ci + cr[0]
        ext += bytes([2, 4, 5, 0xb4])
        finish(TCP(sport=base + 1, dport=53, flags="A", seq=1001, ack=r[TCP].seq + 1,
                   window=502, options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext), False)
    print("tcpct", ok, at)

    # Fast Open (RFC 7413): a cookie asked of one, used with data at the other.
    r, at = begin(TCP(sport=base + 2, dport=53, flags="S", seq=5000, options=opts + [(34, b"")]))
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
    print("tfo", ok, at)
finally:
    group("1/2")
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

# The router spreads clients over both gateways, and every one is answered.
VERIFIED='ack_verified + tcpct_verified + tfo_valid'
n=32
out=$(in_client kdig +tcp +retry=0 +time=3 @"$BACKEND4" $(for ((i = 0; i < n; i++)); do
	printf '%s A ' "$ZONE"; done) 2>&1)
answered=$(grep -c 'status: NOERROR' <<<"$out")
check "ECMP: $answered of $n kdig +tcp connections answered" [ "$answered" -eq "$n" ]
f1=$(gw1 flows_created)
f2=$(gw2 flows_created)
check "... spread over both gateways (gw made $f1, gw2 $f2)" [ $((f1 > 0 && f2 > 0)) = 1 ]
check "... and $n verified in all ($(gw1 "$VERIFIED") + $(gw2 "$VERIFIED"))" \
	[ $(($(gw1 "$VERIFIED") + $(gw2 "$VERIFIED"))) -eq "$n" ]

# The SYN hashed to one gateway, which is then withdrawn: the other
# verifies the handshake's end, for each dialect.
declare -A COUNTER=([classic]=ack_verified [tcpct]=tcpct_verified [tfo]=tfo_valid)
declare -A BEFORE
for g in 1 2; do
	for d in classic tcpct tfo; do
		BEFORE[$g.$d]=$("gw$g" "${COUNTER[$d]}")
		BEFORE[$g.svc.$d]=$("gw$g" "services[0]['verified_$d']")
	done
done
out=$(across 42000)
sleep 1
for d in classic tcpct tfo; do
	read -r _ answered first < <(grep "^$d " <<<"$out")
	check "$d: $(name "$first") answered the SYN" [ "$answered" = True ]
	[ "$answered" = True ] || continue
	other=$((3 - first))
	got=$(($("gw$other" "${COUNTER[$d]}") - BEFORE[$other.$d]))
	mine=$(($("gw$first" "${COUNTER[$d]}") - BEFORE[$first.$d]))
	check "$d: begun at $(name "$first"), verified at $(name "$other") ($got), not at the first ($mine)" \
		[ "$got.$mine" = 1.0 ]
	got=$(($("gw$other" "services[0]['verified_$d']") - BEFORE[$other.svc.$d]))
	mine=$(($("gw$first" "services[0]['verified_$d']") - BEFORE[$first.svc.$d]))
	check "... counted for its service and dialect there ($got), not at the first ($mine)" \
		[ "$got.$mine" = 1.0 ]
done

# Another secret at gw2: neither gateway takes what the other began.
gw2_stop
gw2_start "$OTHER" || not_ok "tcpctd restarts on gw2"
v1=$(gw1 "$VERIFIED")
out=$(across 43000 12)
out+=$(across 43010 21)
sleep 1
check "with another secret: gw2 verifies none of gw's (ack $(gw2 ack_verified), tcpct $(gw2 tcpct_verified), tfo $(gw2 tfo_valid))" \
	[ "$(gw2 ack_verified)$(gw2 tcpct_verified)$(gw2 tfo_valid)" = 000 ]
check "... nor gw of gw2's ($(($(gw1 "$VERIFIED") - v1)))" [ "$(gw1 "$VERIFIED")" -eq "$v1" ]
check "... and gw2 made no connection of them ($(gw2 flows_created))" [ "$(gw2 flows_created)" -eq 0 ]
ID_A=$(keys_of gw) ID_B=$(keys_of gw2)
check "tcpctl status tells them apart: secret ids $ID_A and $ID_B" \
	[ "${ID_A% None}" != "${ID_B% None}" -a "${ID_A#* }.${ID_B#* }" = None.None ]
ID_A=${ID_A% None} ID_B=${ID_B% None}
gw2_stop

# The fleet's secret rotated from A to B one gateway at a time, with
# `tcpctl keys rotate` after each file change: A,B (B accepted as well);
# then B,A (B makes the cookies, A still verifies); then B.  At every step
# handshakes begun at either gateway are verified at the other.
put "$GW2_SECRET" "$SECRET"
gw2_start "$GW2_SECRET" || not_ok "tcpctd restarts on gw2"
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
check "both show the same secret id ($(keys_of gw), $(keys_of gw2))" \
	[ "$(keys_of gw).$(keys_of gw2)" = "$ID_A None.$ID_A None" ]
put "$GW2_SECRET" "$SECRET" "$OTHER"
out=$(rotate gw2)
check "keys rotate: $(head -1 <<<"$out")" grep -q 'read again: cookies made with its first secret, verified with both' <<<"$out"
check "... $(tail -1 <<<"$out")" grep -qx "keys: secret $GW2_SECRET, id $ID_A, accepting $ID_B" <<<"$out"
both_ways "gw A; gw2 A,B"
put "$GW_SECRET" "$SECRET" "$OTHER"
rotate gw >/dev/null
put "$GW2_SECRET" "$OTHER" "$SECRET"
rotate gw2 >/dev/null
both_ways "gw A,B; gw2 B,A"
put "$GW_SECRET" "$OTHER" "$SECRET"
rotate gw >/dev/null
both_ways "both B,A"
check "both make B's, accept A's ($(keys_of gw), $(keys_of gw2))" \
	[ "$(keys_of gw).$(keys_of gw2)" = "$ID_B $ID_A.$ID_B $ID_A" ]
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
