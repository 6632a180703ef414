#!/bin/bash
# Cookie forgery (issue 7): forged handshake completions from spoofed
# sources, for each dialect, against tcpctd in front of nsd:
#
#   ack     classic cookie ACKs, seq, ISN and TSecr guessed
#   tuple   the adversarial case: one tuple, its seq, the TSecr and the
#           ISN's counter, key id and MSS bits read off a real SYN-ACK;
#           only the 25-bit MAC is guessed (2^-25 a try)
#   tcpct   RFC 6013 third packets with guessed responder cookies of 8
#           bytes, the shortest an initiator may ask for, and a TSecr of
#           now, so that each meets the MAC: 63 bits (2^-63 a try)
#   tfo     Fast Open SYNs with guessed cookies and data (2^-63)
#
# For each: how many tcpctd checked, how many it accepted (the theory's
# expectation beside it), and that nothing of them reached the backend but
# the handshakes of the accepted ones.  FORGE_COUNT per mode (200000 in
# `make check`; tests/bench/forgery.sh sends 10 million), FORGE_RATE a
# second.
#
#   attacker (tcpct-forge, 198.18.0.0/15) ── gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

COUNT=${FORGE_COUNT:-200000}
RATE=${FORGE_RATE:-100000}
FORGE_BIN=${FORGE_BIN:-$HERE/../../build/tcpct-forge}
lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
tcpctd_start --protect "$BACKEND4:53" --control-socket "$SOCK" --synack-rate 0 \
	--queue-maxlen 65536 || { not_ok "tcpctd starts"; t_summary; exit 1; }
stats() { tcpctl_eval "$SOCK" "$1"; }	# stats EXPR
# What reaches the backend from the spoofed prefix: SYNs (tcpctd's, for
# a handshake it verified) and everything else.
in_backend iptables -A INPUT -s "$SPOOF4" -p tcp --syn -j ACCEPT
in_backend iptables -A INPUT -s "$SPOOF4" -p tcp ! --syn -j ACCEPT
backend_saw() { rule_packets "$NS_BACKEND" "$1"; }	# backend_saw 1|2: SYNs, the rest
# The attacker's kernel would answer the SYN-ACKs it gets for them.
in_attacker iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP

# forge NAME MODE CHECKED ACCEPTED P ARGS...: COUNT forged packets, then
# the counters' deltas.  CHECKED and ACCEPTED are expressions over them;
# P is the theory's chance of one acceptance.
forge() {
	local name=$1 mode=$2 checked=$3 accepted=$4 p=$5 c0 a0 s0 o0 c1 a1 s1 o1 out
	shift 5
	c0=$(stats "$checked") a0=$(stats "$accepted")
	s0=$(backend_saw 1) o0=$(backend_saw 2)
	out=$(in_attacker timeout 600 "$FORGE_BIN" "$mode" "$BACKEND4" 53 "$COUNT" -r "$RATE" "$@")
	wait_until 30 _tcpctd_queues_empty
	sleep 1
	c1=$(stats "$checked") a1=$(stats "$accepted")
	s1=$(backend_saw 1) o1=$(backend_saw 2)
	local nc=$((c1 - c0)) na=$((a1 - a0)) ns=$((s1 - s0)) no=$((o1 - o0))
	local expect
	expect=$(awk -v n="$nc" -v p="$p" 'BEGIN { printf "%.3g", n * p }')
	echo "# $name: $out; checked $nc, accepted $na (expected $expect), backend saw $ns SYNs and $no other packets"
	check "$name: tcpctd checked at least 99 % of $COUNT ($nc)" [ $((nc * 100)) -ge $((COUNT * 99)) ]
	# Poisson: with at most 0.5 expected, 4 or more happen less than once
	# in 5000 runs.
	check "$name: accepted $na, expected $expect" \
		awk -v a="$na" -v e="$expect" 'BEGIN { exit !(a <= 3 || a <= 2 * e + 5) }'
	if [ "$na" -eq 0 ]; then
		check "$name: nothing of them reached the backend ($ns SYNs, $no other)" [ "$ns.$no" = 0.0 ]
	else
		check "$name: the backend saw only the accepted handshakes ($ns SYNs for $na)" \
			[ "$ns" -le $((na * 5)) ]
	fi
}

# The kernel shield's refusals count as checks too (the ones it verified
# the daemon counts as cookie_ok), and so do the ACKs without data it
# verified and dropped (a delay-bind service's flow starts at the data):
# accepted.
DEFERRED="d.get('shield_ack_deferred', 0)"
COOKIE="cookie_bad + cookie_expired + cookie_no_key + cookie_ok + $DEFERRED + \
d.get('shield/cookie_bad', 0) + d.get('shield/cookie_expired', 0) + d.get('shield/cookie_no_key', 0)"
ACCEPTED="ack_verified + $DEFERRED"
# Random ISNs: the age (16 counter values, COOKIE_MAX_AGE + 1 of them
# good) and the key id must match, and the 25-bit MAC.
forge ack ack "$COOKIE" "$ACCEPTED" "$(awk 'BEGIN { print 3 / 16 / 2 / 33554432 }')"
# A real SYN from the attacker's own tuple, just before: its SYN-ACK gives
# away the ISN's counter, key id and MSS bits and the TSval's option bits.
read -r ISN TSVAL < <(in_attacker timeout 10 /usr/bin/python3 - "$BACKEND4" <<'PY'
import sys
from scapy.all import IP, TCP, sr1, conf
conf.verb = 0
r = sr1(IP(src="198.18.7.7", dst=sys.argv[1]) / TCP(sport=40000, dport=53, flags="S", seq=1000,
        options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (5, 0)), ("WScale", 7)]), timeout=3)
ts = dict((k, v) for k, v in r[TCP].options if isinstance(k, str))["Timestamp"]
print(r[TCP].seq, ts[0])
PY
)
check "a real SYN-ACK for the adversarial tuple (ISN $ISN)" [ -n "$ISN" ]

forge tuple ack "$COOKIE" "$ACCEPTED" "$(awk 'BEGIN { print 1 / 33554432 }')" \
	-s 198.18.7.7/32 -p 40000 -q 1001 -t "$TSVAL" -i 0xf8000003 "$ISN"
# The control: the same packet with the right ISN is taken, so what was
# refused above was refused for its guess alone.
v0=$(stats "$ACCEPTED")
COUNT=1 forge "tuple, the right ISN" ack "$COOKIE" "$ACCEPTED" 1 \
	-s 198.18.7.7/32 -p 40000 -q 1001 -t "$TSVAL" -i 0xffffffff "$ISN"
check "... which tcpctd accepted ($(($(stats "$ACCEPTED") - v0)))" \
	[ "$(($(stats "$ACCEPTED") - v0))" -eq 1 ]
# Checked means checked by the MAC: none may be refused as too old.
# Past what the daemon takes, the kernel shield drops TCPCT third packets
# unread: refused too.
forge tcpct tcpct "tcpct_verified + tcpct_bad + d.get('shield_shed', 0)" tcpct_verified \
	"$(awk 'BEGIN { print 2 ^ -63 }')" -c 8
# Past what the SYN queue takes, the kernel shield answers Fast Open SYNs
# classically (their data unacknowledged, their cookie unread): refused too.
forge tfo tfo "tfo_valid + tfo_invalid + d.get('shield_classic_fallback', 0)" tfo_valid 0

check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
