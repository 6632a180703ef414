#!/bin/bash
# Real clients through tcpctd to real servers, IPv4 and IPv6: kdig to nsd,
# curl to an HTTP server (20 MiB, with client options off and with loss),
# tshark on the captured flows, forged ACKs from spoofed sources.
#
#   client ── gw (tcpctd) ── backend (nsd :53, http :80)
#   attacker ─┘  (spoofed sources 198.18.0.0/15)
. "$(dirname "$0")/scenario.sh"

PROTECT=(--protect "$BACKEND4:53" --protect "[$BACKEND6]:53"
	--protect "$BACKEND4:80" --protect "[$BACKEND6]:80")

lab_up >/dev/null || { not_ok "lab up"; t_summary; exit 1; }
nsd_start >/dev/null && http_start >/dev/null ||
	{ not_ok "nsd and http in the backend"; t_summary; exit 1; }

# Checksums are only meaningful on the wire without offloads; off from the
# start, so that no segment queued before the switch is captured.
lab_offload off
declare -A direct
for q in "$BACKEND4 $ZONE A" "$BACKEND6 $ZONE AAAA" "$BACKEND4 $ZONE_BIG TXT" \
	"$BACKEND6 $ZONE_MANY A"; do
	direct[$q]=$(kdig_answer "$NS_CLIENT" $q)
done

tcpctd_start "${PROTECT[@]}" || { not_ok "tcpctd starts"; t_summary; exit 1; }
ok "tcpctd starts and binds its queue"
capture_start "$NS_GW" "$GW_IF_CLIENT" "$LAB_DIR/client.pcap" "tcp" &&
	capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/backend.pcap" "tcp" ||
	not_ok "captures start"

for q in "${!direct[@]}"; do
	got=$(kdig_answer "$NS_CLIENT" $q)
	if [ -n "$got" ] && [ "$got" = "${direct[$q]}" ]; then
		ok "kdig +tcp through tcpctd equals direct: $q"
	else
		not_ok "kdig +tcp through tcpctd equals direct: $q" "got '${got:0:80}'"
	fi
done



# A capture must not lose packets to be judged: 4 MiB each way is enough.
head -c 4194304 "$HTTP_BLOB" >"$HTTP_DIR/small"
small() {	# small URL: the 4 MiB file, compared
	local got want
	got=$(ip netns exec "$NS_CLIENT" timeout 60 curl -sg "$1" | sha256sum)
	want=$(sha256sum <"$HTTP_DIR/small")
	[ "$got" = "$want" ]
}
check "curl 4 MiB over IPv4 (captured), intact" small "${HTTP_URL4%blob}small"
check "curl 4 MiB over IPv6 (captured), intact" small "${HTTP_URL6%blob}small"
capture_stop
lost=$(cat "$LAB_DIR"/client.pcap.log "$LAB_DIR"/backend.pcap.log |
	awk '/dropped by kernel/ { n += $1 } END { print n + 0 }')
check "captures lost no packet ($lost)" [ "$lost" -eq 0 ]
lab_offload on
check "curl 20 MiB over IPv4, sha256 intact" http_fetch "$HTTP_URL4"
check "curl 20 MiB over IPv6, sha256 intact" http_fetch "$HTTP_URL6"

gw_judge "$LAB_DIR/client.pcap" "$LAB_DIR/backend.pcap"
if [ "$GW_SENT" -gt 1000 ] && [ "$GW_BAD" -eq 0 ]; then
	ok "tshark: no bad checksum in the $GW_SENT packets gw sent ($GW_CAPTURED captured, $GW_PEER_BAD bad from peers)"
else
	not_ok "tshark: no bad checksum in what gw sent" "$GW_BAD bad of $GW_CAPTURED:$(echo "$GW_BADLIST" | head -c 600)"
fi
if [ "$GW_CAPTURED" -gt 1000 ] && [ "$GW_UNSEEN" -eq 0 ]; then
	ok "tshark: no ACKed unseen segment"
else
	not_ok "tshark: no ACKed unseen segment" "$GW_UNSEEN of $GW_CAPTURED"
fi

# The client without timestamps (only the MSS survives a cookie), and
# without SACK and window scaling at all.
for opt in tcp_timestamps tcp_sack tcp_window_scaling; do
	in_client sysctl -qw "net.ipv4.$opt=0"
done
check "curl IPv4 with client timestamps, SACK, wscale off" http_fetch "$HTTP_URL4"
check "curl IPv6 with client timestamps, SACK, wscale off" http_fetch "$HTTP_URL6"
in_client sysctl -qw net.ipv4.tcp_timestamps=1
check "curl IPv4 with timestamps on, SACK and wscale off" http_fetch "$HTTP_URL4"
for opt in tcp_sack tcp_window_scaling; do
	in_client sysctl -qw "net.ipv4.$opt=1"
done

# Loss hits MTU-sized packets, not 64 KiB offloaded ones.
lab_offload off
if lab_loss 1; then
	check "curl IPv4 with 1% loss both ways" http_fetch "$HTTP_URL4"
	check "curl IPv6 with 1% loss both ways" http_fetch "$HTTP_URL6"
	drops=$(lab_loss_drops)
	lab_loss_clear
	if [ "$drops" -gt 10 ]; then ok "loss really dropped packets ($drops)"
	else not_ok "loss really dropped packets" "$drops"; fi
else
	not_ok "1% loss can be injected"
fi

# Forged ACKs from spoofed sources never reach the backend.
cookies_refused() {
	echo $(($(tcpctd_counter cookie_bad) + $(tcpctd_counter cookie_expired) +
		$(tcpctd_counter cookie_no_key)))
}
capture_start "$NS_BACKEND" "$BACKEND_IF" "$LAB_DIR/forged.pcap" \
	"tcp and (src net $SPOOF4 or src net 2001:db8:f::/48)"
bad_before=$(cookies_refused)
in_attacker timeout 20 hping3 -q -A -p 53 -s 40000 -a 198.18.7.7 -c 2000 -i u500 \
	"$BACKEND4" >/dev/null 2>&1
in_attacker timeout 20 hping3 -q -A -p 80 -s 40000 -a 198.19.1.1 -c 1000 -i u500 -d 100 \
	"$BACKEND4" >/dev/null 2>&1
in_attacker timeout 20 /usr/bin/python3 - "$BACKEND6" <<'PY' >/dev/null 2>&1
import sys
from scapy.all import IPv6, TCP, send, RandShort, RandInt
send([IPv6(src="2001:db8:f::%x" % i, dst=sys.argv[1]) /
      TCP(sport=RandShort(), dport=53, flags="A", seq=RandInt(), ack=RandInt())
      for i in range(1, 1001)], verbose=0)
PY
capture_stop
leaked=$(tshark -r "$LAB_DIR/forged.pcap" 2>/dev/null | wc -l)
bad_after=$(cookies_refused)
if [ "$leaked" -eq 0 ]; then ok "4000 forged ACKs: none reached the backend"
else not_ok "forged ACKs: none reached the backend" "$leaked leaked"; fi
if [ $((bad_after - bad_before)) -ge 3900 ]; then
	ok "forged ACKs counted as refused cookies ($((bad_after - bad_before)))"
else
	not_ok "forged ACKs counted as refused cookies" "$((bad_after - bad_before))"
fi

# After all that, a real client still gets its answer.
got=$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)
check "kdig still answered after the hostile traffic" [ "$got" = "${direct["$BACKEND4 $ZONE A"]}" ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
