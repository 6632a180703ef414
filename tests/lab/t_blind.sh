#!/bin/bash
# Off-path attackers (issue 21): a kept DNS connection (release-always: its
# backend half released after each answer, the client bound again) gets,
# with its 4-tuple, 2,000 segments an attacker who knows only the tuple
# sends — FIN|ACK, RST, RST|ACK, pure ACKs and data, random seq and ack, a
# TSval 2^30 ahead — and answers its next query; none of them reaches the
# backend, each is counted, and the challenge ACKs they draw are few.
# Then the same against a connection spliced to its backend.
# Then (issue 31) the backend's half forged from the client's side: the
# client, which knows every number but the backend's seq, sends segments
# with the backend's address acknowledging all it sent.  The rules drop
# them before any queue, counted (kernel_backend_spoofed_dropped_*); with
# that rule taken out, as a one-armed gateway has it, tcpctd judges them
# against the backend's own numbers and drops them (backend_unacceptable),
# although the client's window (65535 << 14) would take half of them.
# Either way the connection answers its next query, and kdig is answered.
#
#   client (kernel TCP + scapy on its tuple) ── gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

N=2000
lab_with_nsd 100
lab_offload off || { not_ok "offloads off"; t_summary; exit 1; }
capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/backend.pcap" \
	"dst host $BACKEND4 or dst host $BACKEND6" || not_ok "capture starts"

# blind_round LABEL: one connection per family through the running tcpctd.
blind_round() {
	local label=$1 server out
	for server in "$BACKEND4" "$BACKEND6"; do
		out=$(in_client timeout 120 /usr/bin/python3 "$HERE/blind.py" "$server" \
			"$CLIENT_IF" "$N" 2>&1)
		echo "# $out"
		check "$label, $server: answered before the blind segments" \
			grep -q 'first=OK' <<<"$out"
		check "... and after them, on the same connection" grep -q 'second=OK' <<<"$out"
	done
}

# dropped: the client segments tcpctd refused as no receiver would take them.
dropped() {
	local n sum=0
	for n in rst_out_of_window rst_challenged out_of_window ack_unsent ack_too_old; do
		sum=$((sum + $(tcpctd_counter "$n")))
	done
	echo "$sum"
}

tcpctd_start --protect "$BACKEND4:53,release-always=1" \
	--protect "[$BACKEND6]:53,release-always=1" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
blind_round "kept (released and bound again)"
kept=$(tcpctd_counter release_kept)
check "both connections were released and kept ($kept)" [ "$kept" -ge 2 ]
d=$(dropped); ch=$(tcpctd_counter challenge_ack)
check "the $((2 * N)) blind segments dropped and counted ($d)" [ "$d" -ge $((2 * N)) ]
check "... drawing few challenge ACKs ($ch)" [ "$ch" -le 20 ]
tcpctd_stop

tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" ||
	{ not_ok "tcpctd restarts"; t_summary; exit 1; }
blind_round "spliced"
d=$(dropped)
check "the $((2 * N)) blind segments dropped and counted ($d)" [ "$d" -ge $((2 * N)) ]

# spoof_round LABEL N KINDS: forged backend segments on a spliced
# connection per family; sets SPOOFED4, SPOOFED6 (the rules' drops) and
# UNACCEPTABLE (tcpctd's) from their counters' moves.
spoof_round() {
	local label=$1 n=$2 kinds=$3 server gw out s4 s6 u
	s4=$(tcpctd_counter kernel_backend_spoofed_dropped_ipv4)
	s6=$(tcpctd_counter kernel_backend_spoofed_dropped_ipv6)
	u=$(tcpctd_counter backend_unacceptable)
	for server in "$BACKEND4" "$BACKEND6"; do
		gw=$GW_CLIENT4
		[ "$server" = "$BACKEND6" ] && gw=$GW_CLIENT6
		out=$(in_client timeout 120 /usr/bin/python3 "$HERE/blind.py" backend \
			"$server" "$CLIENT_IF" "$gw" "$n" "$kinds" 2>&1)
		echo "# $out"
		check "$label, $server: answered before the forged backend segments" \
			grep -q 'first=OK' <<<"$out"
		check "... and after them, on the same connection" grep -q 'second=OK' <<<"$out"
	done
	SPOOFED4=$(($(tcpctd_counter kernel_backend_spoofed_dropped_ipv4) - s4))
	SPOOFED6=$(($(tcpctd_counter kernel_backend_spoofed_dropped_ipv6) - s6))
	UNACCEPTABLE=$(($(tcpctd_counter backend_unacceptable) - u))
}

# The client's window as wide as TCP has it (65535 << 14), which the
# client alone chooses: the backend's seq must not be judged by it alone.
in_client sysctl -qw net.ipv4.tcp_rmem="4096 1073741824 1073741824"
in_client ip route change default via "$GW_CLIENT4" initrwnd 1000000
in_client ip -6 route change default via "$GW_CLIENT6" initrwnd 1000000
spoof_round "the backend forged from the client's side" "$N" A,FA,PA
check "the rules dropped each (kernel_backend_spoofed_dropped_ipv4 +$SPOOFED4, _ipv6 +$SPOOFED6)" \
	[ "$SPOOFED4" -eq "$N" -a "$SPOOFED6" -eq "$N" ]
check "... before any queue (backend_unacceptable +$UNACCEPTABLE)" [ "$UNACCEPTABLE" -eq 0 ]
# The rule out: what a one-armed gateway sees.  Pure ACKs only: one taken
# (one in 2^15 each) acknowledges what the backend acknowledged anyway.
for ipt in iptables ip6tables; do
	in_gw "$ipt" -t raw -S TCPCTD | grep -- '-m rpfilter' | sed 's/^-A /-D /' |
		while read -r rule; do
			# shellcheck disable=SC2086
			in_gw "$ipt" -t raw $rule
		done
done
check "the rpfilter rules taken out" [ "$(in_gw iptables -t raw -S TCPCTD | grep -c rpfilter)" -eq 0 ]
spoof_round "no rpfilter rule" 200 A
check "tcpctd dropped them ($UNACCEPTABLE of 400 backend_unacceptable)" \
	[ "$UNACCEPTABLE" -ge 399 -a "$SPOOFED4" -eq 0 -a "$SPOOFED6" -eq 0 ]
for b in "$BACKEND4" "$BACKEND6"; do
	check "a real client still gets its answer over TCP from $b" \
		[ -n "$(kdig_answer "$NS_CLIENT" "$b" "$ZONE" SOA)" ]
done
capture_stop

got=$(tshark -r "$LAB_DIR/backend.pcap" -Y 'frame contains "BLIND"' 2>/dev/null | wc -l)
check "no blind data reached the backend ($got)" [ "$got" -eq 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
