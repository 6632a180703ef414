#!/bin/bash
# Hostile packets (issue 7): truncated and contradictory headers and
# options, fragments, long IPv6 extension chains, bad checksums, flag
# combinations no TCP sends, segments of no flow, and segments outside a
# live connection's window.  tcpctd survives them all, counts each under
# its reason (or the gateway's kernel drops it before any queue), hands
# none of them to the backend, and the live connection goes on.
# Then whole fragment trains of SYNs from spoofed sources (issue 21): no
# fragment reaches the backend, each is counted, without conntrack in the
# gateway and with it (its defragmentation then hands tcpctd whole SYNs),
# and a real client is still answered.  IPv6 trains whose first fragment's
# header chain does not resolve (issue 31): none of them reaches the
# backend but the non-first fragments that name UDP, of which the backend
# makes nothing; and a fragmented UDP query is still answered.
#
#   client (scapy, a real DNS connection) ──┐
#                                            gw (tcpctd) ── backend (nsd)
#   attacker (scapy, spoofed fragments) ────┘
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
# field NAME TEXT: the number of NAME=N in a hostile.py report line.
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
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
port=$(field port "$out")
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

# stat NAME: one of the daemon's counters.
stat() {
	in_gw "$TCPCTL_BIN" -s "$SOCK" -j stats |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], -1))' "$1"
}
# train NAME FILTER MODE ARGS...: hostile.py MODE ARGS from the attacker,
# captured on the backend's link (FILTER) into PCAP; sets OUT (its report)
# and DROP4, DROP6, SYNACKS (the fragment counters' and the SYN-ACKs' moves).
train() {
	local name=$1 filter=$2 d4 d6 s
	shift 2
	PCAP=$LAB_DIR/$name.pcap
	capture_start "$NS_GW" "$GW_IF_BACKEND" "$PCAP" "$filter" ||
		not_ok "$name: capture starts"
	d4=$(stat kernel_fragments_dropped_ipv4) d6=$(stat kernel_fragments_dropped_ipv6)
	s=$(stat synack_sent)
	OUT=$(in_attacker timeout 120 /usr/bin/python3 "$HERE/hostile.py" "$@" 2>&1)
	echo "# $name: $OUT"
	sleep 0.5
	capture_stop "$PCAP"
	DROP4=$(($(stat kernel_fragments_dropped_ipv4) - d4))
	DROP6=$(($(stat kernel_fragments_dropped_ipv6) - d6))
	SYNACKS=$(($(stat synack_sent) - s))
}
# frag_round NAME: fragment trains from the attacker (train); sets SENT4,
# SENT6, DGRAMS, SEEN (fragments of them at the backend) and SHORT
# (datagrams whose first fragment holds less than a TCP header).
frag_round() {
	train "$1" "dst host $BACKEND4 or dst host $BACKEND6" fragments "$BACKEND4" "$BACKEND6" 4
	SENT4=$(field ipv4 "$OUT") SENT6=$(field ipv6 "$OUT")
	DGRAMS=$(field datagrams "$OUT") SHORT=$(field short "$OUT")
	SEEN=$(tshark -r "$PCAP" -Y '(ip.src == 198.18.0.0/15 || ipv6.src == 2001:db8:f::/48) &&
		(ip.flags.mf == 1 || ip.frag_offset > 0 || ipv6.fraghdr)' 2>/dev/null | wc -l)
}

# No conntrack in gw: nothing reassembles, the rules drop every fragment.
frag_round no-conntrack
check "fragment trains sent ($SENT4 IPv4, $SENT6 IPv6 fragments of $DGRAMS SYNs each)" \
	[ "${SENT4:-0}" -gt 0 -a "${SENT6:-0}" -gt 0 ]
check "none reached the backend ($SEEN)" [ "$SEEN" -eq 0 ]
check "each was counted (kernel_fragments_dropped_ipv4 +$DROP4, _ipv6 +$DROP6)" \
	[ "$DROP4" -eq "${SENT4:-0}" -a "$DROP6" -eq "${SENT6:-0}" ]

# chain_round NAME: IPv6 trains of SYNs behind a header chain that the
# first fragment does not resolve (hostile.py chains), captured both ways
# (train); sets CSENT, CDGRAMS, CUDP (the non-first fragments that name
# UDP), UNRESOLVED and NAMED_UDP (fragments of them at the backend), REASM
# (datagrams the backend reassembled) and ANSWERS (the backend's packets to
# their sources).
reasm_oks() { in_backend awk '$1 == "Ip6ReasmOKs" { print $2 }' /proc/net/snmp6; }
chain_round() {
	local r
	r=$(reasm_oks)
	train "$1" "host $BACKEND6" chains "$BACKEND6" 8
	REASM=$(($(reasm_oks) - r))
	CSENT=$(field fragments "$OUT") CDGRAMS=$(field datagrams "$OUT") CUDP=$(field udp "$OUT")
	UNRESOLVED=$(tshark -r "$PCAP" -Y 'ipv6.src == 2001:db8:f::/48 && ipv6.fraghdr && ipv6.fraghdr.nxt != 17' \
		2>/dev/null | wc -l)
	NAMED_UDP=$(tshark -r "$PCAP" -Y 'ipv6.src == 2001:db8:f::/48 && ipv6.fraghdr.nxt == 17' \
		2>/dev/null | wc -l)
	ANSWERS=$(tshark -r "$PCAP" -Y "ipv6.src == $BACKEND6 && ipv6.dst == 2001:db8:f::/48" \
		2>/dev/null | wc -l)
}
chain_round chains-no-conntrack
check "IPv6 trains, the first fragment's chain unresolved ($CSENT fragments of $CDGRAMS SYNs)" \
	[ "${CSENT:-0}" -gt 0 -a "${CUDP:-0}" -gt 0 ]
check "... none of those that do not resolve reached the backend ($UNRESOLVED), each counted (+$DROP6 of $((CSENT - CUDP)))" \
	[ "$UNRESOLVED" -eq 0 -a "$DROP6" -eq $((CSENT - CUDP)) ]
check "... the non-first ones that name UDP passed ($NAMED_UDP of $CUDP), and the backend made nothing of them: no datagram reassembled ($REASM), nothing answered ($ANSWERS)" \
	[ "$NAMED_UDP" -eq "$CUDP" -a "$REASM" -eq 0 -a "$ANSWERS" -eq 0 ]

# A real client's UDP query too large for one packet: its fragments, whose
# chain resolves to UDP (the first) or names it (the others), reach the
# backend, which answers.
for b in "$BACKEND4" "$BACKEND6"; do
	pcap=$LAB_DIR/udp-$b.pcap
	capture_start "$NS_GW" "$GW_IF_BACKEND" "$pcap" "dst host $b" || not_ok "capture starts"
	got=$(in_client kdig +notcp +padding=3000 +bufsize=4096 +time=2 +retry=1 @"$b" "$ZONE" A 2>&1)
	capture_stop "$pcap"
	frags=$(tshark -r "$pcap" -Y "(ip.src == $CLIENT4 || ipv6.src == $CLIENT6) &&
		(ip.flags.mf == 1 || ip.frag_offset > 0 || ipv6.fraghdr)" 2>/dev/null | wc -l)
	check "a fragmented UDP query to $b ($frags fragments at the backend) is answered" \
		eval '[ "$frags" -ge 2 ] && grep -q "^$ZONE\..*A.*$ZONE_A" <<<"$got"'
done

# An unrelated conntrack rule in gw loads its defragmentation: the raw
# table then sees whole datagrams, which tcpctd answers itself.  But an
# IPv6 first fragment without a whole TCP header (RFC 8200 §4.5) is not
# reassembled: nf_defrag_ipv6 passes it on, and the rules drop it; the
# rest of its datagram expires in gw.
in_gw iptables -A INPUT -p udp --dport 9 -m conntrack --ctstate NEW -j ACCEPT
in_gw ip6tables -A INPUT -p udp --dport 9 -m conntrack --ctstate NEW -j ACCEPT
frag_round conntrack
check "with conntrack in the gateway: none reached the backend ($SEEN)" [ "$SEEN" -eq 0 ]
check "... reassembled before the rules, but for $SHORT IPv6 first fragments too short (fragment counters +$DROP4, +$DROP6)" \
	[ "$DROP4" -eq 0 -a "$DROP6" -eq "${SHORT:-0}" ]
check "... and tcpctd answered each whole SYN ($SYNACKS SYN-ACKs for $((2 * ${DGRAMS:-0} - ${SHORT:-0})))" \
	[ "$SYNACKS" -eq $((2 * ${DGRAMS:-0} - ${SHORT:-0})) ]

# With it, the trains that do not resolve are whole SYNs before the rules,
# which tcpctd answers.
chain_round chains-conntrack
check "... with conntrack: none reached the backend ($UNRESOLVED, $NAMED_UDP), tcpctd answered each whole SYN ($SYNACKS SYN-ACKs for $CDGRAMS), nothing counted (+$DROP6)" \
	[ "$UNRESOLVED" -eq 0 -a "$NAMED_UDP" -eq 0 -a "$SYNACKS" -eq "${CDGRAMS:-0}" -a "$DROP6" -eq 0 -a "$ANSWERS" -eq 0 ]

for b in "$BACKEND4" "$BACKEND6"; do
	got=$(in_client kdig +tcp +time=2 +retry=1 @"$b" "$ZONE" A 2>&1)
	check "a real client still gets its answer over TCP from $b" \
		grep -q "^$ZONE\..*A.*$ZONE_A" <<<"$got"
done

tcpctd_finish
t_summary
