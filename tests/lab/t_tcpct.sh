#!/bin/bash
# TCP Cookie Transactions (RFC 6013) through tcpctd to a legacy backend: the
# project's initiator (build/tcpct-query, build/tcpct-connect) against nsd
# and socat, IPv4 and IPv6; captures on both sides of the gateway; forged
# pairs and repeated SYNs crafted with scapy; the backend's TIME-WAIT.
#
#   client (tcpct-*, scapy) ── gw (tcpctd) ── backend (nsd :53, socat)
. "$(dirname "$0")/scenario.sh"
. "$HERE/synproxy.sh"

QUERY=$TOP/build/tcpct-query
CONNECT=$TOP/build/tcpct-connect
PROTECT=(--protect "$BACKEND4:53" --protect "[$BACKEND6]:53"
	--protect "$BACKEND4:9000" --protect "[$BACKEND6]:9000"
	--protect "$BACKEND4:9001")

lab_with_nsd

# norm: answer lines only, fields single-spaced, sorted (kdig and
# tcpct-query align their columns differently).
norm() { grep -v '^;' | awk 'NF { $1 = $1; print }' | sort; }
kdig_norm() { kdig_answer "$NS_CLIENT" "$@" | norm; }
# tcpct NAME TYPE SERVER [ARGS]: tcpct-query's answer section; its report
# line goes to LAB_DIR/tcpct.err.
tcpct() {
	local name=$1 type=$2 server=$3
	shift 3
	ip netns exec "$NS_CLIENT" timeout 20 "$QUERY" @"$server" "$name" "$type" "$@" \
		2>"$LAB_DIR/tcpct.err" | norm
}
report() { cat "$LAB_DIR/tcpct.err"; }

QUERIES=("$ZONE A $BACKEND4" "$ZONE AAAA $BACKEND6" "$ZONE_BIG TXT $BACKEND4"
	"$ZONE_MANY A $BACKEND6")
declare -A direct
for q in "${QUERIES[@]}"; do
	set -- $q
	direct[$q]=$(kdig_norm "$3" "$1" "$2")
	[ -n "${direct[$q]}" ] || not_ok "kdig +tcp direct answers: $q"
done

# A server that knows no TCPCT (nsd itself): plain TCP, same answer.
set -- ${QUERIES[0]}
got=$(tcpct "$1" "$2" "$3")
if [ "$got" = "${direct[${QUERIES[0]}]}" ] && report | grep -q 'TCPCT: no (plain TCP)'; then
	ok "tcpct-query falls back to plain TCP against plain nsd"
else
	not_ok "tcpct-query falls back to plain TCP against plain nsd" "$(report) ${got:0:80}"
fi

tcpctd_start "${PROTECT[@]}" || { not_ok "tcpctd starts"; t_summary; exit 1; }
# Checksums are only meaningful on the wire without offloads.
lab_offload off
capture_start "$NS_GW" "$GW_IF_CLIENT" "$LAB_DIR/client.pcap" "port 53" &&
	capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/backend.pcap" "port 53" ||
	not_ok "captures start"

# H: handshakes made, T: transactions answered in the SYN-ACK.
H=0 T=0
for mode in +handshake +transaction; do
	for q in "${QUERIES[@]}"; do
		set -- $q
		got=$(tcpct "$1" "$2" "$3" "$mode")
		if [ -n "$got" ] && [ "$got" = "${direct[$q]}" ] &&
			report | grep -q 'TCPCT: yes'; then
			ok "tcpct-query $mode through tcpctd equals kdig direct: $q"
		else
			not_ok "tcpct-query $mode through tcpctd equals kdig direct: $q" \
				"$(report) ${got:0:80}"
		fi
		if report | grep -q 'in the SYN-ACK with FIN'; then
			T=$((T + 1))
		else
			H=$((H + 1))
		fi
	done
done
# The small answers fit a SYN-ACK; the big TXT (2.2 kB) and the many As do
# not (truncated over UDP, or past 1220 bytes) and fall back.
check "+transaction: the two small answers came in the SYN-ACK ($T)" [ "$T" -eq 2 ]
check "+transaction: every answer too big for one went by handshake" \
	[ "$(tcpctd_counter tcpct_txn_too_big)" -eq $((${#QUERIES[@]} - T)) ]
check "+transaction: each answered one was closed by the client's ACK" \
	[ "$(tcpctd_counter tcpct_txn_closed)" -eq "$T" ]
n=$H
check "every TCPCT handshake verified by its pair ($H)" \
	[ "$(tcpctd_counter tcpct_verified)" -eq "$H" ]
check "no flow for a transaction: flows made = handshakes" \
	[ "$(tcpctd_counter flows_created)" -eq "$H" ]
check "no client FIN, RST or last ACK came without its pair" \
	[ "$(tcpctd_counter tcpct_unguarded)" -eq 0 ]
check "every backend FIN went to the client with the pair" \
	[ "$(tcpctd_counter tcpct_guarded)" -ge "$n" ]
wait_until 3 [ "$(tcpctd_counter flows_active)" -eq 0 ]
check "no responder state left: flow table back to 0" \
	[ "$(tcpctd_counter flows_active)" -eq 0 ]
check "no flow lingered: all released on the last ACK" \
	[ "$(tcpctd_counter flows_released_done)" -eq "$n" ]
capture_stop
lab_offload on

# On the wire: the client side speaks TCPCT (253 in SYN and SYN-ACK, 254 in
# the third packet), the backend side never sees either, nor bad checksums.
kinds() { tshark -r "$1" -Y "$2" -T fields -e tcp.option_kind 2>/dev/null | tr ',' '\n' | sort -u | tr '\n' ' '; }
syn=$(kinds "$LAB_DIR/client.pcap" 'tcp.flags.syn == 1 && tcp.flags.ack == 0')
synack=$(kinds "$LAB_DIR/client.pcap" 'tcp.flags.syn == 1 && tcp.flags.ack == 1')
third=$(kinds "$LAB_DIR/client.pcap" 'tcp.flags.syn == 0 && tcp.srcport != 53 && tcp.len > 40')
back=$(kinds "$LAB_DIR/backend.pcap" 'tcp')
# A transaction on the wire: SYN with the query, SYN-ACK with the answer and
# FIN, the client's ACK and FIN, our ACK: four packets, no connection.
txsa=$(tshark -r "$LAB_DIR/client.pcap" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.flags.fin == 1 && tcp.len > 12' 2>/dev/null | wc -l)
txsyn=$(tshark -r "$LAB_DIR/client.pcap" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.len > 12' 2>/dev/null | wc -l)
check "client side: $T SYN-ACKs carried an answer and FIN ($txsa), of $txsyn SYNs with a query" \
	[ "$txsa" -eq "$T" -a "$txsyn" -eq "${#QUERIES[@]}" ]
udpsrc=$(tshark -r "$LAB_DIR/backend.pcap" -Y 'udp.dstport == 53' -T fields -e ip.src -e ipv6.src 2>/dev/null | tr -d '\t' | sort -u | tr '\n' ' ')
check "backend side: the transactions' UDP queries come from the client's own addresses: '$udpsrc'" \
	[ "$udpsrc" = "$CLIENT4 $CLIENT6 " ]
check "client side: SYN and SYN-ACK carry the Cookie option (253): '$syn' '$synack'" \
	eval '[[ " $syn " == *" 253 "* && " $synack " == *" 253 "* ]]'
check "client side: third packets carry Timestamps Extended (254): '$third'" \
	eval '[[ " $third " == *" 254 "* ]]'
check "backend side: neither 253 nor 254, ever: '$back'" \
	eval '[[ -n "$back" && " $back " != *" 253 "* && " $back " != *" 254 "* ]]'
bad=$(tshark -r "$LAB_DIR/backend.pcap" -o tcp.check_checksum:TRUE \
	-Y "$TCP_CSUM_BAD || tcp.analysis.ack_lost_segment" 2>/dev/null | wc -l)
check "backend side: no bad checksum, no ACKed unseen segment ($bad)" [ "$bad" -eq 0 ]
nsyn=$(tshark -r "$LAB_DIR/backend.pcap" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' 2>/dev/null | wc -l)
check "backend side: one SYN per verified handshake ($nsyn)" [ "$nsyn" -eq "$n" ]

# Many in a row (-n, one broad RST rule, one packet socket): all TCPCT.
out=$(ip netns exec "$NS_CLIENT" timeout 60 "$QUERY" @"$BACKEND4" "$ZONE" A -n 300)
check "tcpct-query -n 300: all answered over TCPCT ($out)" \
	eval '[[ "$out" == "queries 300 answered 300 failed 0 tcpct 300 "* ]]'
check "and the client's RST rule is gone afterwards" \
	eval '! in_client iptables -S OUTPUT | grep -q RST'

# Crafted segments: a SYN answered twice (no state), a good pair, a pair
# with one bit flipped and a pair from another connection.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP
capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/crafted.pcap" "tcp port 53" ||
	not_ok "capture starts"
refused() { echo $(($(tcpctd_counter tcpct_bad) + $(tcpctd_counter tcpct_expired))); }
before_bad=$(refused)
before_ok=$(tcpctd_counter tcpct_verified)
out=$(ip netns exec "$NS_CLIENT" timeout 30 /usr/bin/python3 - "$BACKEND4" "$ZONE" <<'PY'
import struct, sys
from scapy.all import IP, TCP, Raw, sr1, send, conf
conf.verb = 0
dst = sys.argv[1]
ci = bytes(range(1, 17))

def syn(sport):
    s = IP(dst=dst) / TCP(sport=sport, dport=53, flags="S", seq=1000,
                          options=[("MSS", 1460), ("SAckOK", b""),
                                   ("Timestamp", (4242, 0)), ("WScale", 7),
                                   ("NOP", None), ("NOP", None),
                                   (253, ci)])
    r = sr1(s, timeout=3)
    if r is None or r[TCP].flags != "SA":
        return None
    o = dict((k, v) for k, v in r[TCP].options if not isinstance(k, int))
    cr = [v for k, v in r[TCP].options if k == 253]
    return r[TCP].seq, o["Timestamp"][0], cr[0] if cr else b""

def third(sport, isn, tsecr, cr):
    # TSX (Extend = 12 words: TS pair 2, NOP NOP pair 9, MSS 1), then the
    # extension, then no data.
    ext = struct.pack("!II", 4243, tsecr) + b"\x01\x01" + bytes([253, 34]) + ci + cr
    ext += bytes([2, 4, 5, 0xb4])
    assert len(ext) % 4 == 0
    send(IP(dst=dst) / TCP(sport=sport, dport=53, flags="A", seq=1001,
                           ack=isn + 1, window=502,
                           options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext))

a = syn(41001)
b = syn(41001)          # the same SYN again: answered again
print("twice", a is not None and b is not None and len(a[2]) == 16 and len(b[2]) == 16)
c = syn(41002)
flipped = bytes([c[2][0]]) + bytes([c[2][1] ^ 0x10]) + c[2][2:]
third(41002, c[0], c[1], flipped)      # one bit off
d = syn(41003)
third(41003, d[0], d[1], c[2])         # another connection's cookie
third(41003, d[0], d[1] + 1, d[2])     # the right cookie, another TSecr
e = syn(41004)
third(41004, e[0], e[1], e[2])         # the right pair: verified
# A guarded FIN for a connection tcpctd does not hold: a RST that copies
# the pair (RFC 6013 §7).
cr = bytes(range(101, 117))
ext = struct.pack("!II", 5000, 6000) + b"\x01\x01" + bytes([253, 34]) + ci + cr
r = sr1(IP(dst=dst) / TCP(sport=41005, dport=53, flags="FA", seq=7000,
                          ack=9000, window=502,
                          options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext),
        timeout=3)
ok = (r is not None and r[TCP].flags == "RA" and r[TCP].seq == 9000 and
      r[TCP].ack == 7001 and (ci + cr) in bytes(r[TCP].payload) and
      struct.pack("!I", 5000) in bytes(r[TCP].payload))
print("advisory", ok)

# A transaction's SYN sent twice: each gets the whole answer (no state kept
# between them, the backend is asked again).
from scapy.all import DNS, DNSQR, DNSRROPT
q = bytes(DNS(id=0x5151, rd=1, qd=DNSQR(qname=sys.argv[2], qtype="A"),
              ar=DNSRROPT(rclass=1232)))
def txn(sport):
    s = IP(dst=dst) / TCP(sport=sport, dport=53, flags="S", seq=3000,
                          options=[("MSS", 1460), ("SAckOK", b""),
                                   ("Timestamp", (777, 0)), ("WScale", 7),
                                   ("NOP", None), ("NOP", None), (253, ci)]) / \
        Raw(struct.pack("!H", len(q)) + q)
    r = sr1(s, timeout=3)
    if r is None or "F" not in r[TCP].flags or r[TCP].ack != 3001 + 2 + len(q):
        return None
    return bytes(r[TCP].payload)
a1 = txn(41006)
a2 = txn(41006)
print("txn-twice", a1 is not None and a1 == a2 and len(a1) > 14 and
      a1[2:4] == b"\x51\x51")
print("sent")
PY
)
sleep 1
capture_stop
check "a repeated SYN is answered again, each time with a 16-byte cookie" \
	eval '[[ "$out" == *"twice True"* ]]'
check "three altered pairs refused (tcpct_bad + tcpct_expired: +3)" \
	[ "$(refused)" -eq $((before_bad + 3)) ]
check "the unaltered pair verified (tcpct_verified +1)" \
	[ "$(tcpctd_counter tcpct_verified)" -eq $((before_ok + 1)) ]
leaked=$(tshark -r "$LAB_DIR/crafted.pcap" -Y 'tcp.srcport >= 41001 && tcp.srcport <= 41003' 2>/dev/null | wc -l)
good=$(tshark -r "$LAB_DIR/crafted.pcap" -Y 'tcp.srcport == 41004 && tcp.flags.syn == 1' 2>/dev/null | wc -l)
check "nothing of the altered handshakes reached the backend ($leaked)" [ "$leaked" -eq 0 ]
check "the verified one opened a backend connection ($good SYN)" [ "$good" -ge 1 ]
check "a guarded FIN with no flow gets a RST copying its pair and TSval" \
	eval '[[ "$out" == *"advisory True"* ]]'
check "counted: tcpct_advisory_rst = 1" [ "$(tcpctd_counter tcpct_advisory_rst)" -eq 1 ]
check "a transaction's SYN sent twice gets the same whole answer twice" \
	eval '[[ "$out" == *"txn-twice True"* ]]'
in_client iptables -D OUTPUT -p tcp --tcp-flags RST RST -j DROP

# Bulk through a real TCP server with 1% loss on the gateway (both ways,
# after tcpctd), 10 MiB each way.  Download: the server closes first, so
# its TIME-WAIT is what tcpctd clears.  The servers take every connection
# (fork): tcpctd probes a backend that is down every 5 s, and a server
# that took one connection only would serve the probe that came first.
head -c 10485760 /dev/urandom >"$LAB_DIR/blob"
want=$(sha256sum <"$LAB_DIR/blob" | awk '{ print $1 }')
gw_loss() {	# gw_loss add|del: 1% of forwarded packets dropped
	local ipt op=-A
	[ "$1" = del ] && op=-D
	for ipt in iptables ip6tables; do
		in_gw "$ipt" -w "$op" FORWARD -m statistic --mode random \
			--probability 0.01 -j DROP 2>/dev/null || [ "$1" = del ]
	done
}
lab_on_down 'gw_loss del'
gw_loss add || not_ok "loss rules"
for fam in 4 6; do
	[ $fam = 4 ] && addr=$BACKEND4 || addr=$BACKEND6
	: >"$LAB_DIR/up$fam"
	lab_spawn "$NS_BACKEND" "$LAB_DIR/sink$fam.log" socat -u \
		"TCP$fam-LISTEN:9000,bind=$addr,reuseaddr,fork" "OPEN:$LAB_DIR/up$fam,append"
	sink=$LAB_PID
	wait_port "$NS_BACKEND" "$addr" 9000 10 || not_ok "socat sink on $addr"
	ip netns exec "$NS_CLIENT" timeout 120 "$CONNECT" -$fam "$addr" 9000 \
		<"$LAB_DIR/blob" >/dev/null 2>"$LAB_DIR/up$fam.err" ||
		not_ok "tcpct-connect -$fam upload exits 0" "$(cat "$LAB_DIR/up$fam.err")"
	wait_until 20 eval '[ "$(stat -c %s "$LAB_DIR/up'"$fam"'")" -ge 10485760 ]'
	got=$(sha256sum <"$LAB_DIR/up$fam" | awk '{ print $1 }')
	check "tcpct-connect -$fam carries 10 MiB up to socat with 1% loss, sha256 intact" \
		[ "$got" = "$want" ]
	grep -q 'TCPCT: yes' "$LAB_DIR/up$fam.err" || not_ok "upload -$fam was TCPCT" "$(cat "$LAB_DIR/up$fam.err")"
	lab_kill "$sink"
done
# -U: from the file on the right, opened anew by each connection's child.
lab_spawn "$NS_BACKEND" "$LAB_DIR/source.log" socat -U \
	"TCP4-LISTEN:9001,bind=$BACKEND4,reuseaddr,fork" "OPEN:$LAB_DIR/blob,rdonly"
src=$LAB_PID
wait_port "$NS_BACKEND" "$BACKEND4" 9001 10 || not_ok "socat source"
ip netns exec "$NS_CLIENT" timeout 120 "$CONNECT" +wait-eof -4 "$BACKEND4" 9001 </dev/null \
	>"$LAB_DIR/down" 2>"$LAB_DIR/down.err"
rc=$?
got=$(sha256sum <"$LAB_DIR/down" | awk '{ print $1 }')
if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then
	ok "tcpct-connect carries 10 MiB down from socat with 1% loss, sha256 intact"
else
	not_ok "tcpct-connect carries 10 MiB down from socat with 1% loss, sha256 intact" \
		"rc $rc, $(stat -c %s "$LAB_DIR/down") bytes, $(cmp "$LAB_DIR/down" "$LAB_DIR/blob" 2>&1 | head -1); $(cat "$LAB_DIR/down.err")"
fi
grep -q 'TCPCT: yes' "$LAB_DIR/down.err" || not_ok "download was TCPCT" "$(cat "$LAB_DIR/down.err")"
lab_kill "$src"
drops=$(for ipt in iptables ip6tables; do in_gw "$ipt" -w -L FORWARD -nvx; done 2>/dev/null |
	awk '/statistic/ { n += $1 } END { print n + 0 }')
check "loss was in place: $drops packets dropped" [ "$drops" -gt 100 ]
gw_loss del

# TIME-WAIT: short connections where the backend closes first, made by
# tcpct-connect -n (each on a tuple of its own).  With the default, tcpctd
# clears each backend TIME-WAIT; without, one stays per connection, as
# behind SYNPROXY.
timewaits() { in_backend ss -Htan state time-wait "( sport = :9001 )" | wc -l; }
hi_start() {	# a server that says hi and closes, on BACKEND4:9001; HI_CMD
	# what it runs instead (reading a request first: its close must not
	# beat the request, whose arrival would then reset the connection)
	lab_spawn "$NS_BACKEND" "$LAB_DIR/hi.log" socat \
		"TCP4-LISTEN:9001,bind=$BACKEND4,reuseaddr,fork,backlog=1024" \
		SYSTEM:"${HI_CMD:-echo hi}"
	HI_PID=$LAB_PID
	wait_port "$NS_BACKEND" "$BACKEND4" 9001 10
}
short_conns() {	# short_conns N [ARGS]: N connections to hi_start's server,
	# each sending SC_IN (a file; none by default)
	local n=$1 ct=$1 out rc
	shift
	[[ " $* " == *" +notcpct "* ]] && ct=0
	hi_start || return 1
	out=$(ip netns exec "$NS_CLIENT" timeout 120 "$CONNECT" +wait-eof -n "$n" "$@" \
		"$BACKEND4" 9001 <"${SC_IN:-/dev/null}")
	lab_kill "$HI_PID"
	set -- $out
	[ "$4" = "$n" ] && [ "$8" = "$ct" ] && [ "${14}" = $((3 * n)) ] && [ "${18}" = no ]
	rc=$?
	[ $rc -eq 0 ] || echo "# $out"
	return $rc
}
N=1000
rst_before=$(tcpctd_counter tcpct_timewait_rst)
check "$N short TCPCT connections, backend closes first, all answered" short_conns $N
tw=$(timewaits)
check "tcpctd cleared the backend's TIME-WAITs: $tw left of $N" [ "$tw" -eq 0 ]
check "counted: tcpct_timewait_rst +$N" \
	[ "$(tcpctd_counter tcpct_timewait_rst)" -eq $((rst_before + N)) ]
tcpctd_stop
tcpctd_start "${PROTECT[@]}" --tcpct-timewait-rst no || not_ok "tcpctd restarts"
check "$N more with --tcpct-timewait-rst no" short_conns $N
tw=$(timewaits)
check "without it the backend keeps one TIME-WAIT per connection: $tw of $N" [ "$tw" -eq "$N" ]

# The amplification budget: 130 answer bytes/s for the client's prefix take
# one 123-byte answer (125 in the SYN-ACK); the next ones, unless 0.92 s
# have passed for the budget to drain back, go by handshake, and are answered.
tcpctd_stop
tcpctd_start "${PROTECT[@]}" --txn-rate 130 || not_ok "tcpctd restarts"
set -- ${QUERIES[0]}
fine=0
for i in 1 2 3; do
	got=$(tcpct "$1" "$2" "$3" +transaction)
	[ "$got" = "${direct[${QUERIES[0]}]}" ] && fine=$((fine + 1))
done
check "--txn-rate 130: 3 of 3 answered" [ "$fine" -eq 3 ]
check "one in the SYN-ACK, two over the budget" \
	[ "$(tcpctd_counter tcpct_txn_answered)" -eq 1 -a "$(tcpctd_counter tcpct_txn_over_budget)" -eq 2 ]
# A backend that does not answer over UDP in time: the client gets a
# handshake after --txn-timeout and its answer over TCP.
in_backend iptables -I INPUT -p udp --dport 53 -j DROP
got=$(tcpct "$1" "$2" "$3" +transaction)
in_backend iptables -D INPUT -p udp --dport 53 -j DROP
if [ "$got" = "${direct[${QUERIES[0]}]}" ] && [ "$(tcpctd_counter tcpct_txn_timeout)" -eq 1 ]; then
	ok "backend silent on UDP: answered by handshake after the timeout"
else
	not_ok "backend silent on UDP: answered by handshake after the timeout" \
		"got '$got'; tcpct-query: $(report | tr '\n' ' ' | cut -c1-300); $(for c in tcpct_txn_timeout tcpct_txn_repeated tcpct_verified tcpct_bad backend_syn backend_synack rst_out_of_window stray_client stray_backend; do printf '%s %s, ' $c "$(tcpctd_counter $c)"; done)"
fi

# --tcpct no: a TCPCT client gets a classic SYN-ACK and carries on as plain TCP.
tcpctd_stop
tcpctd_start "${PROTECT[@]}" --tcpct no || not_ok "tcpctd restarts"
set -- ${QUERIES[0]}
got=$(tcpct "$1" "$2" "$3")
if [ "$got" = "${direct[${QUERIES[0]}]}" ] && report | grep -q 'TCPCT: no (plain TCP)'; then
	ok "with --tcpct no, tcpct-query falls back to a classic cookie handshake"
else
	not_ok "with --tcpct no, tcpct-query falls back to a classic cookie handshake" "$(report)"
fi
check "and the classic path verified it" [ "$(tcpctd_counter ack_verified)" -ge 1 ]
tcpctd_finish

# The initiator against kernel SYNPROXY, whose SYN-ACK offers a window of 0:
# the third packet must still go, as a bare ACK, though a request waits to
# be sent.  tcpctd's rules go first; an address of its own, so that no
# tuple used above is reused.
tcpctd_stop
hi_start && synproxy_up 9001 || not_ok "SYNPROXY rules"
lab_kill "$HI_PID"
in_client ip addr add 198.51.100.3/24 dev veth-gw
echo hello >"$LAB_DIR/hello.req"
SC_IN=$LAB_DIR/hello.req HI_CMD='head -c 6 >/dev/null; echo hi' check \
	"tcpct-connect -n with a request, through kernel SYNPROXY (zero-window SYN-ACK): 5 of 5" \
	short_conns 5 +notcpct -b 198.51.100.3
synproxy_down

t_summary
