#!/bin/bash
# A SYN flood from random spoofed sources at the highest rate the
# attacker's raw socket produces (loadgen -m syn), while a client makes
# 2,000 DNS connections a second: >= 99 % of the legitimate ones answered,
# the backend sees no flood SYN, and tcpctd's memory does not grow with
# the flood (no state per SYN).
#
#   client (loadgen, 2,000 conn/s) ── gw (tcpctd) ── backend (nsd)
#   attacker (loadgen -m syn, 198.18.0.0/15) ─┘
. "$(dirname "$0")/scenario.sh"

FLOOD_SYNS=${FLOOD_SYNS:-10000000}	# IPv4; IPv6 gets a tenth
# About what kxdpgun made here (210-240k SYN/s). The raw socket goes faster,
# 330-600k SYN/s, but then takes a whole core of the two that the gateway,
# nsd and the client share, and at 250k a compiler running beside the test
# was enough for the SYN queues to overflow: the benchmark's flood case
# (tests/bench) runs every setup at full speed, 0 here.
FLOOD_PPS=${FLOOD_PPS:-200000}
# 50 s at that pace, when the generator keeps it; on these 2 cores it often
# falls a little behind (10M took 59-61 s with this and the previous
# release alike), so the flood is bounded a quarter above that.  On a
# machine that runs slow it falls further (6.3M in 75 s in one CI run):
# the flood is checked to have sent at least half its SYNs (66k SYN/s or
# more, 33 times the legitimate load), and what it sent is logged.
FLOOD_MAX_SECS=${FLOOD_MAX_SECS:-75}
lab_with_nsd 1000
# The legitimate load comes from one address, where it stands for many
# clients: no per-address or per-prefix cap (t_policy.sh tests them).
# Under the flood its connections last longer and more are open at once.
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --queues 2 --max-per-addr 0 \
	--max-per-prefix 0 --backend-max 1000 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

# Warm up every path once, so that RSS counts only what the flood adds.
# The client's own kernel picks its ports (the lab's 1024-65535): its
# connections spread over both workers' shares of the port space.
for _ in $(seq 40); do
	ip netns exec "$NS_CLIENT" timeout 20 kdig +tcp @"$BACKEND4" "$ZONE" A >/dev/null
done
if [ "$(tcpctd_counter shield_interfaces)" -gt 0 ]; then
	# The kernel shield answers their SYNs: their ACKs, verified there,
	# are what reaches the workers, through the flow queues.
	a=$(tcpctd_counter shield/synack_sent)
	q0=$(tcpctd_counter kernel_queue0_packets) q1=$(tcpctd_counter kernel_queue1_packets)
	check "40 connections from one Linux client: the shield answered them ($a SYN-ACKs), both workers have some (flow queues: $q0, $q1)" \
		[ "$a" -ge 40 -a "$q0" -gt 0 -a "$q1" -gt 0 ]
else
	q2=$(tcpctd_counter kernel_queue2_packets) q3=$(tcpctd_counter kernel_queue3_packets)
	check "40 connections from one Linux client reach both workers (SYN queues: $q2, $q3; the kernel's count: $(queue_packets 2), $(queue_packets 3))" \
		[ "$q2" -gt 0 -a "$q3" -gt 0 -a "$q2" -eq "$(queue_packets 2)" ]
fi
loadgen "$NS_ATTACKER" -m syn -t 1 -r 50000 -l "$SPOOF4" "$BACKEND4" >/dev/null
sleep 1
rss0=$(tcpctd_rss_kib)
capture_start "$NS_BACKEND" "$BACKEND_IF" "$LAB_DIR/backend.pcap" \
	"tcp[tcpflags] & tcp-syn != 0 and (src net $SPOOF4 or src net $SPOOF6)"

# flood_round BACKEND PREFIX SYNS: SYNS from random addresses of PREFIX at BACKEND, and
# the legitimate client at 2,000 conn/s to BACKEND in rounds of 3 s for as long as the
# flood lasts; checks both.
flood_round() {
	local backend=$1 prefix=$2 count=$3 synacks0 start flood legit syns synacks elapsed
	local legit_sent=0 legit_replies=0 legit_failed=0
	synacks0=$(spoof_synacks) start=$(date +%s)
	loadgen_bg "$NS_ATTACKER" "$LAB_DIR/flood.out" -m syn -r "$FLOOD_PPS" -n "$count" \
		-t "$FLOOD_MAX_SECS" -l "$prefix" "$backend"
	flood=$LAB_PID
	sleep 1
	while _lab_alive "$flood"; do
		legit=$(loadgen "$NS_CLIENT" -t 3 -r 2000 -i "$LAB_QUERIES" "$backend") ||
			{ legit_failed=1; lab_log "legit loadgen: $legit"; break; }
		legit_sent=$((legit_sent + $(load_count "$legit" sent)))
		legit_replies=$((legit_replies + $(load_count "$legit" answered)))
	done
	loadgen_wait "$flood" "$LAB_DIR/flood.out" || not_ok "the flood generator ran"
	syns=$(load_count "$(cat "$LAB_DIR/flood.out")" sent)
	sleep 0.5
	synacks=$(($(spoof_synacks) - synacks0))
	elapsed=$(($(date +%s) - start))
	echo "# flood from $prefix: $syns SYNs in $elapsed s, $synacks SYN-ACKs back; legit $legit_replies of $legit_sent; kernel queue drops: $(( $(tcpctd_counter kernel_queue2_dropped_full) + $(tcpctd_counter kernel_queue3_dropped_full) ))"
	if [ "$syns" -ge $((count / 2)) ]; then
		ok "flood from $prefix sent $syns SYNs (at least half of $count)"
	else
		not_ok "flood from $prefix sent at least half of $count SYNs" "only $syns"
	fi
	if [ "$legit_failed" = 0 ] && [ "$legit_sent" -gt 0 ] &&
		[ $((legit_replies * 100)) -ge $((legit_sent * 99)) ]; then
		ok "2,000 legit conn/s to $backend under the flood: $legit_replies of $legit_sent answered"
	else
		not_ok "2,000 legit conn/s to $backend under the flood answered >= 99 %" \
			"$legit_replies of $legit_sent"
	fi
}

flood_round "$BACKEND4" "$SPOOF4" "$FLOOD_SYNS"
flood_round "$BACKEND6" "$SPOOF6" $((FLOOD_SYNS / 10))
capture_stop
rss1=$(tcpctd_rss_kib)
growth=$((rss1 - rss0))
if [ "$growth" -lt 1024 ]; then ok "RSS grew $growth KiB over the floods (< 1 MiB)"
else not_ok "RSS grew < 1 MiB over the floods" "$rss0 -> $rss1 KiB"; fi
leaked=$(tshark -r "$LAB_DIR/backend.pcap" 2>/dev/null | wc -l)
check "no flood SYN reached the backend ($leaked)" [ "$leaked" -eq 0 ]
half=$(ip netns exec "$NS_BACKEND" ss -Htn state syn-recv | wc -l)
check "no half-open connection on the backend ($half)" [ "$half" -eq 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
