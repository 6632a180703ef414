#!/bin/bash
# A SYN flood from spoofed sources at the highest rate the attacker's
# kxdpgun produces, while a client makes 2,000 DNS connections a second:
# >= 99 % of the legitimate ones answered, the backend sees no flood SYN,
# and tcpctd's memory does not grow with the flood (no state per SYN).
#
#   client (kxdpgun -T, 2,000 conn/s) ── gw (tcpctd) ── backend (nsd)
#   attacker (kxdpgun -T1, 198.18.0.0/15) ─┘
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/tcpctd.sh"
lab_trap

FLOOD_SYNS=${FLOOD_SYNS:-10000000}
FLOOD_PPS=${FLOOD_PPS:-1000000}		# asked for; kxdpgun sends what it can
lab_with_nsd 1000
# The legitimate load comes from one address, where it stands for many
# clients: no per-address cap (t_policy.sh tests it).
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --queues 2 --max-per-addr 0 \
	--backend-max 1000 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

# Warm up every path once, so that RSS counts only what the flood adds.
# The client's own kernel picks its ports (Linux: 32768-60999): its
# connections spread over both workers' shares of the port space.
for _ in $(seq 40); do
	ip netns exec "$NS_CLIENT" timeout 20 kdig +tcp @"$BACKEND4" "$ZONE" A >/dev/null
done
q2=$(tcpctd_counter kernel_queue2_packets) q3=$(tcpctd_counter kernel_queue3_packets)
check "40 connections from one Linux client reach both workers (SYN queues: $q2, $q3; the kernel's count: $(queue_packets 2), $(queue_packets 3))" \
	[ "$q2" -gt 0 -a "$q3" -gt 0 -a "$q2" -eq "$(queue_packets 2)" ]
ip netns exec "$NS_ATTACKER" timeout -k 5 20 kxdpgun -T1 -t 1 -Q 50000 \
	-i "$KXDPGUN_QUERIES" -l "$SPOOF4" "$BACKEND4" >/dev/null 2>&1
sleep 1
rss0=$(tcpctd_rss_kib)
capture_start "$NS_BACKEND" "$BACKEND_IF" "$LAB_DIR/backend.pcap" \
	"tcp[tcpflags] & tcp-syn != 0 and src net $SPOOF4"

secs=$(( (FLOOD_SYNS + FLOOD_PPS - 1) / FLOOD_PPS ))
syns=0 round=0 legit_sent=0 legit_replies=0 start=$(date +%s)
# kxdpgun stops after its duration: repeat until the flood has sent its
# count (bounded by rounds and by time).
while [ "$syns" -lt "$FLOOD_SYNS" ] && [ "$round" -lt 20 ] &&
	[ $(($(date +%s) - start)) -lt 240 ]; do
	round=$((round + 1))
	ip netns exec "$NS_ATTACKER" timeout -k 5 $((secs + 30)) kxdpgun -T1 -t "$secs" \
		-Q "$FLOOD_PPS" -i "$KXDPGUN_QUERIES" -l "$SPOOF4" "$BACKEND4" \
		>"$LAB_DIR/flood.out" 2>&1 &
	flood=$!
	sleep 1
	legit=$(ip netns exec "$NS_CLIENT" timeout -k 5 $((secs + 30)) kxdpgun -T \
		-t $((secs > 3 ? secs - 2 : 1)) -Q 2000 -i "$KXDPGUN_QUERIES" "$BACKEND4" 2>&1)
	wait "$flood"
	syns=$((syns + $(kxdpgun_count "$(cat "$LAB_DIR/flood.out")" SYNs)))
	legit_sent=$((legit_sent + $(kxdpgun_count "$legit" SYNs)))
	legit_replies=$((legit_replies + $(kxdpgun_count "$legit" replies)))
	# After the first round the rate is known: size the rest to the count.
	rate=$(kxdpgun_count "$(cat "$LAB_DIR/flood.out")" SYNs)
	[ "$rate" -gt 0 ] && secs=$(( (FLOOD_SYNS - syns) / (rate / secs + 1) + 1 ))
	[ "$secs" -gt 0 ] || secs=1
done
capture_stop
rss1=$(tcpctd_rss_kib)
elapsed=$(($(date +%s) - start))
echo "# flood: $syns SYNs in $elapsed s ($round rounds); legit $legit_replies of $legit_sent; kernel queue drops: $(( $(tcpctd_counter kernel_queue0_dropped_full) + $(tcpctd_counter kernel_queue1_dropped_full) ))"

if [ "$syns" -ge "$FLOOD_SYNS" ]; then ok "flood sent $syns SYNs"
else not_ok "flood sent $FLOOD_SYNS SYNs" "only $syns"; fi
if [ "$legit_sent" -gt 0 ] && [ $((legit_replies * 100)) -ge $((legit_sent * 99)) ]; then
	ok "2,000 legit conn/s under the flood: $legit_replies of $legit_sent answered"
else
	not_ok "2,000 legit conn/s under the flood answered >= 99 %" "$legit_replies of $legit_sent"
fi
growth=$((rss1 - rss0))
if [ "$growth" -lt 1024 ]; then ok "RSS grew $growth KiB over the flood (< 1 MiB)"
else not_ok "RSS grew < 1 MiB over the flood" "$rss0 -> $rss1 KiB"; fi
leaked=$(tshark -r "$LAB_DIR/backend.pcap" 2>/dev/null | wc -l)
check "no flood SYN reached the backend ($leaked)" [ "$leaked" -eq 0 ]
half=$(ip netns exec "$NS_BACKEND" ss -Htn state syn-recv | wc -l)
check "no half-open connection on the backend ($half)" [ "$half" -eq 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
