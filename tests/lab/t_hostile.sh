#!/bin/bash
# Hostile packets (issue 7): truncated and contradictory headers and
# options, fragments, long IPv6 extension chains, bad checksums, flag
# combinations no TCP sends, segments of no flow, and segments outside a
# live connection's window.  tcpctd survives them all, counts each under
# its reason (or the gateway's kernel drops it before any queue), hands
# none of them to the backend, and the live connection goes on.
#
#   client (scapy, a real DNS connection) ── gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --control-socket "$SOCK" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
# The client's kernel would answer the SYN-ACKs it never asked for.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP
in_client ip6tables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP
capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/backend.pcap" \
	"dst host $BACKEND4 or dst host $BACKEND6" || not_ok "capture starts"

out=$(in_client timeout 300 /usr/bin/python3 "$HERE/hostile.py" packets "$BACKEND4" \
	"$BACKEND6" "$CLIENT4" "$CLIENT6" \
	ip netns exec "$NS_GW" "$TCPCTL_BIN" -s "$SOCK" -j stats 2>&1)
n=$(grep -c '^ok ' <<<"$out")
check "$n hostile packets, each counted under its reason or dropped by the kernel" \
	[ "$n" -ge 50 -a "$(grep -vc '^ok ' <<<"$out")" -eq 0 ]
grep -v '^ok ' <<<"$out" | sed 's/^/#  /'
grep '^ok ' <<<"$out" | sed 's/^/#  /'
check "tcpctd still running after them" kill -0 "$TCPCTD_PID"

out=$(in_client timeout 60 /usr/bin/python3 "$HERE/hostile.py" window "$BACKEND4" \
	"$CLIENT_IF" 2>&1)
echo "# $out"
check "a live connection: answered before the out-of-window segments" \
	grep -q 'first=OK' <<<"$out"
check "... and after them, on the same connection" grep -q 'second=OK' <<<"$out"
port=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$out")
capture_stop

# The live connection's kernel-chosen port may fall among them: not counted.
got=$(tshark -r "$LAB_DIR/backend.pcap" \
	-Y "tcp.srcport >= 50000 && tcp.srcport <= 50999 && tcp.srcport != ${port:-0}" \
	2>/dev/null | wc -l)
check "none of the hostile packets reached the backend ($got)" [ "$got" -eq 0 ]
got=$(tshark -r "$LAB_DIR/backend.pcap" -Y 'ip.flags.mf == 1 || ip.frag_offset > 0 || ipv6.fraghdr' \
	2>/dev/null | wc -l)
check "... no fragment either ($got)" [ "$got" -eq 0 ]
got=$(tshark -r "$LAB_DIR/backend.pcap" -Y 'frame contains "HOSTILE"' 2>/dev/null)
check "no out-of-window segment reached it ($(grep -c . <<<"$got"))" [ -z "$got" ]
[ -z "$got" ] || sed 's/^/#  /' <<<"$got"
got=$(tshark -r "$LAB_DIR/backend.pcap" -Y "tcp.srcport == ${port:-0} && tcp.flags.reset == 1 || tcp.srcport == ${port:-0} && tcp.flags.syn == 1 && frame.number > 3" \
	2>/dev/null | wc -l)
check "nor its RST or SYN ($got)" [ "$got" -eq 0 ]

tcpctd_finish
t_summary
