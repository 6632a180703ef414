#!/bin/bash
# Backend release with real peers on both ends: with release-always every
# DNS connection's backend half is released once its queries are answered,
# the client keeps its connection and its next query opens a new backend
# connection on the same 4-tuple.  dnsperf -m tcp (persistent connections,
# pipelined queries) and kdig +keepopen must see nothing of it: every query
# answered, no connection of theirs reset, and tshark finds no bad checksum
# and no segment acknowledged before it was seen on either link.  With
# keep-client 0 the client is closed after its answers instead, as a server
# closing an idle connection would.
#
#   client (dnsperf, kdig) ── gw (tcpctd, release-always) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
lab_offload off || { not_ok "offloads off"; t_summary; exit 1; }
tcpctd_start --protect "$BACKEND4:53,release-always=1" --protect "[$BACKEND6]:53,release-always=1" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

# tshark_count PCAP FILTER: packets of PCAP matching the display FILTER.
tshark_count() { tshark -r "$1" -Y "$2" 2>/dev/null | wc -l; }

capture_start "$NS_CLIENT" "$CLIENT_IF" "$LAB_DIR/client.pcap" "tcp port 53"
capture_start "$NS_BACKEND" "$BACKEND_IF" "$LAB_DIR/backend.pcap" "tcp port 53"
printf '%s A\n%s AAAA\nwww.%s A\n%s SOA\n' "$ZONE" "$ZONE" "$ZONE" "$ZONE" >"$LAB_DIR/q.txt"
out=$(ip netns exec "$NS_CLIENT" timeout 60 dnsperf -m tcp -s "$BACKEND4" -d "$LAB_DIR/q.txt" \
	-c 4 -q 4 -Q 400 -l 5 -t 2 2>&1)
sent=$(echo "$out" | awk '/Queries sent:/ { print $3 }')
done=$(echo "$out" | awk '/Queries completed:/ { print $3 }')
lost=$(echo "$out" | awk '/Queries lost:/ { print $3 }')
echo "# dnsperf: sent $sent, completed $done, lost $lost"
check "dnsperf -m tcp, 4 persistent connections: all $sent queries answered" \
	[ "${sent:-0}" -gt 1000 -a "${done:-0}" -eq "${sent:-0}" ]
rel=$(tcpctd_counter released)
kept=$(tcpctd_counter release_kept)
check "their backend halves were released and the clients kept ($rel released, $kept kept)" \
	[ "$rel" -gt 100 -a "$kept" -gt 100 ]
a=$(ip netns exec "$NS_CLIENT" timeout 20 kdig +tcp +keepopen +noall +answer @"$BACKEND6" \
	"$ZONE" A "$ZONE" AAAA "$ZONE" SOA "$ZONE" NS 2>&1 | grep -c "IN")
check "kdig +keepopen over IPv6: four queries, four answers on one connection ($a records)" \
	[ "$a" -ge 4 ]
capture_stop
crst=$(tshark_count "$LAB_DIR/client.pcap" "tcp.flags.reset == 1")
check "no connection of the clients was reset ($crst RSTs on the client's link)" [ "$crst" -eq 0 ]
cons=$(tshark -r "$LAB_DIR/client.pcap" -Y "tcp.flags.syn == 1 and tcp.flags.ack == 0" 2>/dev/null | wc -l)
bcons=$(tshark -r "$LAB_DIR/backend.pcap" -Y "tcp.flags.syn == 1 and tcp.flags.ack == 0" 2>/dev/null | wc -l)
check "a handful of client connections ($cons), a backend connection per answered round ($bcons)" \
	[ "$cons" -le 8 -a "$bcons" -gt 100 ]
gw_judge "$LAB_DIR/client.pcap" "$LAB_DIR/backend.pcap"
check "tshark: no bad checksum in the $GW_SENT packets gw sent ($GW_PEER_BAD bad from the peers' own kernels)" \
	[ "$GW_SENT" -gt 1000 -a "$GW_BAD" -eq 0 ]
# On the client's link each connection is one TCP stream.  On the
# backend's, each tuple carries hundreds of backend connections in a row,
# each one's SYN one below where the last one's stream ended: tshark does
# not always take it for a new stream, and then flags the next one's
# segments as ACKs of what it never saw.  The backend's link is judged by
# its answers: all of them, above.
cu=$(tshark_count "$LAB_DIR/client.pcap" "tcp.analysis.ack_lost_segment")
check "tshark: nothing ACKed unseen on the client's link ($cu; $GW_UNSEEN on both)" [ "$cu" -eq 0 ]
check "nsd keeps no connection of them" \
	wait_until 5 eval '[ "$(ip netns exec "$NS_BACKEND" ss -Htn state established "sport = :53" | wc -l)" -eq 0 ]'

# keep-client 0: the client is closed after its answers, with a FIN.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53,release-always=1,keep-client=0" || not_ok "tcpctd restarts"
capture_start "$NS_CLIENT" "$CLIENT_IF" "$LAB_DIR/close.pcap" "tcp port 53"
check "keep-client 0: kdig answered" [ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" SOA)" ]
capture_stop
fins=$(tshark_count "$LAB_DIR/close.pcap" "tcp.flags.fin == 1 and tcp.srcport == 53")
rsts=$(tshark_count "$LAB_DIR/close.pcap" "tcp.flags.reset == 1")
check "keep-client 0: closed by a FIN from the server's address ($fins), no RST ($rsts)" \
	[ "$fins" -ge 1 -a "$rsts" -eq 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
