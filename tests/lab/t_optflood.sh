#!/bin/bash
# Floods that carry IPv4 options or an IPv6 Destination Options header
# (issue 31), at trafgen's full speed, while a client makes 2,000 DNS
# connections a second: the shield reads past them as past any header, so
# the legitimate client is answered as under the plain floods (>= 99.5 %),
# under 5 % of the flood crosses NFQUEUE, and none of it reaches the
# backend.  Before, such packets went round the shield to the queues, and
# the client got nothing.
#
#   client (loadgen, 2,000 conn/s) ── gw (tcpctd) ── backend (nsd)
#   attacker (trafgen: SYNs or forged ACKs, 198.18.0.0/15, 2001:db8:f::/48) ─┘
. "$(dirname "$0")/scenario.sh"

shield_scenario "without the shield every such packet is the daemon's"
# Each flood lasts FLOOD_SECS or FLOOD_COUNT packets, whichever comes first.
FLOOD_SECS=${FLOOD_SECS:-10}
FLOOD_COUNT=${FLOOD_COUNT:-6000000}
lab_with_nsd 1000
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --queues 2 --max-per-addr 0 \
	--max-per-prefix 0 --backend-max 1000 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
shield_running
capture_start "$NS_BACKEND" "$BACKEND_IF" "$LAB_DIR/backend.pcap" \
	"tcp and (src net $SPOOF4 or src net $SPOOF6)"
# queued: every packet the kernel handed the gateway's queues so far.
queued() { in_gw awk '{ n += $8 } END { print n + 0 }' /proc/net/netfilter/nfnetlink_queue; }

# What the legitimate client's own connections put on the queues (its ACKs, queries,
# the backend's answers), per 1,000 connections, each family alone: what the floods'
# counts are net of.
per_1000() {
	local q0 out sent
	q0=$(queued)
	out=$(loadgen "$NS_CLIENT" -t 3 -r 2000 -i "$LAB_QUERIES" "$1") || { echo 0; return; }
	sent=$(load_count "$out" sent)
	sleep 0.5
	awk -v q=$(($(queued) - q0)) -v n="$sent" 'BEGIN { printf "%d\n", n ? 1000 * q / n : 0 }'
}
LEGIT4=$(per_1000 "$BACKEND4") LEGIT6=$(per_1000 "$BACKEND6")
echo "# the legitimate client alone: $LEGIT4 (IPv4) and $LEGIT6 (IPv6) packets queued per 1,000 connections"

# opt_flood KIND BACKEND: trafgen's KIND flood at BACKEND port 53, the legitimate
# client at 2,000 conn/s to BACKEND in rounds of 3 s for as long as it lasts.
opt_flood() {
	local kind=$1 backend=$2 cfg out=$LAB_DIR/trafgen-$1.out pid q0 q1 sent secs legit
	local legit_sent=0 legit_replies=0 legit_failed=0 pct own=$LEGIT4
	[ "$backend" = "$BACKEND4" ] || own=$LEGIT6
	cfg=$(trafgen_cfg "$kind" "$backend" "$LAB_DIR") || { not_ok "$kind: trafgen's configuration"; return; }
	q0=$(queued)
	trafgen_bg "$out" "$cfg" "$FLOOD_SECS" "$FLOOD_COUNT"
	pid=$LAB_PID
	sleep 1
	while _lab_alive "$pid"; do
		legit=$(loadgen "$NS_CLIENT" -t 3 -r 2000 -i "$LAB_QUERIES" "$backend") ||
			{ legit_failed=1; lab_log "legit loadgen: $legit"; break; }
		legit_sent=$((legit_sent + $(load_count "$legit" sent)))
		legit_replies=$((legit_replies + $(load_count "$legit" answered)))
	done
	trafgen_wait "$pid" "$out" || { not_ok "$kind: trafgen ran"; return; }
	read -r sent secs < <(trafgen_sent "$out")
	sleep 0.5
	q1=$(queued)
	# The legitimate client's own packets cross too: only what is left beyond
	# them is the flood's.
	pct=$(awk -v q=$((q1 - q0)) -v l=$((legit_sent * own / 1000)) -v n="$sent" \
		'BEGIN { f = q - l; if (f < 0) f = 0; printf "%.2f", n ? 100 * f / n : 100 }')
	echo "# $kind: $sent packets in $secs s, $((q1 - q0)) queued (the flood's share at most $pct %); legit $legit_replies of $legit_sent"
	check "$kind: trafgen sent a flood ($sent packets, 100,000 or more)" [ "$sent" -ge 100000 ]
	if [ "$legit_failed" = 0 ] && [ "$legit_sent" -gt 0 ] &&
		[ $((legit_replies * 1000)) -ge $((legit_sent * 995)) ]; then
		ok "$kind: 2,000 legit conn/s to $backend under the flood: $legit_replies of $legit_sent answered"
	else
		not_ok "$kind: 2,000 legit conn/s to $backend under the flood answered >= 99.5 %" \
			"$legit_replies of $legit_sent"
	fi
	check "$kind: under 5 % of the flood crossed NFQUEUE ($pct %)" \
		awk -v p="$pct" 'BEGIN { exit !(p < 5) }'
}

opt_flood syn-ipopt "$BACKEND4"
opt_flood ack-ipopt "$BACKEND4"
opt_flood syn-dstopt "$BACKEND6"
opt_flood ack-dstopt "$BACKEND6"
capture_stop
leaked=$(tshark -r "$LAB_DIR/backend.pcap" 2>/dev/null | wc -l)
check "no flood packet reached the backend ($leaked)" [ "$leaked" -eq 0 ]
# A real client, after them all.
answered() { [ -n "$(kdig_answer "$NS_CLIENT" "$1" "$ZONE" SOA)" ]; }
check "kdig answered over IPv4 after the floods" answered "$BACKEND4"
check "kdig answered over IPv6 after the floods" answered "$BACKEND6"
tcpctd_finish
t_summary
