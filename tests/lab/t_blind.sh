#!/bin/bash
# Off-path attackers (issue 21): a kept DNS connection (release-always: its
# backend half released after each answer, the client bound again) gets,
# with its 4-tuple, 2,000 segments an attacker who knows only the tuple
# sends — FIN|ACK, RST, RST|ACK, pure ACKs and data, random seq and ack, a
# TSval 2^30 ahead — and answers its next query; none of them reaches the
# backend, each is counted, and the challenge ACKs they draw are few.
# Then the same against a connection spliced to its backend.
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
capture_stop

got=$(tshark -r "$LAB_DIR/backend.pcap" -Y 'frame contains "BLIND"' 2>/dev/null | wc -l)
check "no blind data reached the backend ($got)" [ "$got" -eq 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
