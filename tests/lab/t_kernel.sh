#!/bin/bash
# The kernel's flows (issue 32): with --kernel-flows the shield carries
# established connections, and what still crosses NFQUEUE is counted per
# connection from the kernel's own /proc/net/netfilter/nfnetlink_queue,
# for real clients: kdig (one query a connection), dnsperf (queries on
# kept connections), a curl download of 20 MiB, IPv4 and IPv6.  Each must
# stay under its bound, be answered exactly as direct, and leave tshark
# nothing to say about the captures on both sides.
#
#   client (kdig, dnsperf, curl) ── gw (tcpctd --kernel-flows yes) ── backend (nsd :53, http :80)
. "$(dirname "$0")/scenario.sh"

shield_scenario "the kernel carries nothing without the shield"
# What still crosses the queues: per kdig connection, the query, which
# starts the flow (the shield verifies the cookie ACK before it and drops
# it: nothing to do before the client asks) and which the worker binds;
# the backend's SYN-ACK and all after it are the kernel's (were 9 with the
# daemon alone, 3 with the binding the daemon's, 2 with the cookie ACK
# queued); per connection of a client that waits before it asks, the same,
# and now and then its ACK or FIN that came while the worker had the flow
# back to catch up with the answer; per dnsperf query, the query (a DNS
# client's later bytes are framed by the daemon); per download, its
# handshake.
KDIG_MAX=${KDIG_MAX:-1.3}
SLOW_MAX=${SLOW_MAX:-1.3}
DNSPERF_MAX=${DNSPERF_MAX:-1.1}
CURL_MAX=${CURL_MAX:-5}

lab_up >/dev/null || { not_ok "lab up"; t_summary; exit 1; }
nsd_start >/dev/null && http_start >/dev/null ||
	{ not_ok "nsd and http in the backend"; t_summary; exit 1; }
lab_offload off
direct4=$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)
direct6=$(kdig_answer "$NS_CLIENT" "$BACKEND6" "$ZONE" AAAA)
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--protect "$BACKEND4:80" --protect "[$BACKEND6]:80" --kernel-flows yes \
	--max-per-addr 0 --max-per-prefix 0 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
shield_running
capture_start "$NS_GW" "$GW_IF_CLIENT" "$LAB_DIR/client.pcap" "tcp" &&
	capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/backend.pcap" "tcp" ||
	not_ok "captures start"
queued() { in_gw awk '{ n += $8 } END { print n + 0 }' /proc/net/netfilter/nfnetlink_queue; }
# per N BEFORE: the packets queued since BEFORE, per N (two decimals).
per() { awk -v q=$(($(queued) - $2)) -v n="$1" 'BEGIN { printf "%.2f", n ? q / n : q }'; }
under() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v <= m) }'; }

# kdig: 100 connections a family, one query each.
for fam in 4 6; do
	addr=$BACKEND4 qtype=A want=$direct4
	[ "$fam" = 4 ] || { addr=$BACKEND6 qtype=AAAA want=$direct6; }
	q0=$(queued) same=0
	for _ in $(seq 100); do
		[ "$(kdig_answer "$NS_CLIENT" "$addr" "$ZONE" "$qtype")" = "$want" ] && same=$((same + 1))
	done
	sleep 0.5
	p=$(per 100 "$q0")
	check "kdig over IPv$fam: 100 of 100 answered as direct ($same)" [ "$same" -eq 100 ]
	check "kdig over IPv$fam: $p packets queued a connection (at most $KDIG_MAX)" under "$p" "$KDIG_MAX"
done

# A client that connects, waits 0.2 s and asks (bash's /dev/tcp): its
# cookie ACK dropped by the shield, the query starting the flow, the
# backend's SYN-ACK and all after it the kernel's.  Its query, as
# printf escapes: ID 0x1234, RD, one question ($ZONE A IN).
qname=
for label in ${ZONE//./ }; do qname+=$(printf '\\x%02x' ${#label})$label; done
qlen=$((12 + ${#ZONE} + 2 + 4))
query=$(printf '\\x%02x\\x%02x' $((qlen >> 8)) $((qlen & 255)))
query+="\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00$qname\\x00\\x00\\x01\\x00\\x01"
# slow_ask ADDR: the answer's ID (hex), the answer read whole (dd a byte at
# a time), so that the client's close is a FIN, not a RST for unread data.
slow_ask() {
	ip netns exec "$NS_CLIENT" timeout 5 bash -c "
		exec 3<>/dev/tcp/$1/53 && sleep 0.2 && printf '$query' >&3 || exit
		set -- \$(dd bs=1 count=2 <&3 2>/dev/null | od -An -tu1)
		dd bs=1 count=\$((\$1 * 256 + \$2)) <&3 2>/dev/null | od -An -tx1" \
		2>/dev/null | tr -d ' \n' | cut -c1-4
}
for fam in 4 6; do
	addr=$BACKEND4
	[ "$fam" = 4 ] || addr=$BACKEND6
	q0=$(queued) b0=$(tcpctd_counter shield_bound_synack) same=0
	for _ in $(seq 20); do
		[ "$(slow_ask "$addr")" = 1234 ] && same=$((same + 1))
	done
	sleep 0.5
	p=$(per 20 "$q0")
	b=$(($(tcpctd_counter shield_bound_synack) - b0))
	check "a client that waits, over IPv$fam: 20 of 20 answered ($same)" [ "$same" -eq 20 ]
	check "... 20 backend SYN-ACKs answered in the kernel with the query ($b)" \
		[ "$b" -eq 20 ]
	check "... $p packets queued a connection (at most $SLOW_MAX)" under "$p" "$SLOW_MAX"
done

# dnsperf: 1,000 queries a second for 3 s on 4 kept connections.
q0=$(queued)
out=$(ip netns exec "$NS_CLIENT" timeout 60 dnsperf -m tcp -s "$BACKEND4" -d "$LAB_QUERIES" \
	-c 4 -Q 1000 -l 3 -t 5 2>&1)
done_q=$(printf '%s\n' "$out" | awk '/Queries completed:/ { print $3 }')
sent_q=$(printf '%s\n' "$out" | awk '/Queries sent:/ { print $3 }')
sleep 0.5
p=$(per "${done_q:-0}" "$q0")
check "dnsperf: every query answered (${done_q:-0} of ${sent_q:-0})" \
	[ "${sent_q:-0}" -gt 1000 -a "${done_q:-0}" = "${sent_q:-x}" ]
check "dnsperf: $p packets queued a query (at most $DNSPERF_MAX)" under "$p" "$DNSPERF_MAX"

# curl: 20 MiB a family.
for url in "$HTTP_URL4" "$HTTP_URL6"; do
	q0=$(queued)
	check "curl 20 MiB from $url, sha256 intact" http_fetch "$url"
	sleep 0.5
	p=$(per 1 "$q0")
	check "curl 20 MiB from $url: $p packets queued (at most $CURL_MAX)" under "$p" "$CURL_MAX"
done
capture_stop
frames_c=$(_gw_bad_frames "$LAB_DIR/client.pcap")
frames_b=$(_gw_bad_frames "$LAB_DIR/backend.pcap")
bad=$(printf '%s' "$frames_c" | grep -c .)
bad_b=$(printf '%s' "$frames_b" | grep -c .)
printf '%s\n%s\n' "$frames_c" "$frames_b" | grep . | head -20 | tr '\t' ' ' |
	sed 's/^/# bad checksum: /'
check "tshark: no bad checksum on either side ($bad, $bad_b)" [ "$bad" -eq 0 -a "$bad_b" -eq 0 ]
for side in client backend; do
	unseen=$(tshark -r "$LAB_DIR/$side.pcap" -Y 'tcp.analysis.ack_lost_segment' 2>/dev/null | wc -l)
	check "tshark: no ACKed unseen segment on the $side side ($unseen)" [ "$unseen" -eq 0 ]
done
given=$(tcpctd_counter carry_given)
check "the worker gave flows to the kernel ($given)" \
	[ "$given" -gt 0 ]
tcpctd_finish
t_summary
