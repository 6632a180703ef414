#!/bin/bash
# Allow and deny lists, IPv4 and IPv6: a denied source is dropped by the
# rules before any queue (its SYN never reaches the backend, tcpctd never
# sees it); an allowed one bypasses the cookie handshake both ways (the
# backend answers it directly, tcpctd never sees it); everyone else goes
# through tcpctd as usual.
#
#   client   (denied)  ─┐
#   attacker (allowed) ─ gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--deny "$NET_CLIENT4" --deny "$NET_CLIENT6" \
	--allow "$NET_ATTACKER4" --allow "$NET_ATTACKER6" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

# quick NS ADDR: kdig +tcp with a short timeout; the answer or nothing.
quick() {
	ip netns exec "$1" timeout 5 kdig +tcp +time=1 +retry=0 +noall +answer \
		@"$2" "$ZONE" SOA 2>/dev/null
}

capture_start "$NS_BACKEND" "$BACKEND_IF" "$LAB_DIR/backend.pcap" "tcp port 53"
for fam in 4 6; do
	b=BACKEND$fam
	syn0=$(tcpctd_counter syn)
	pk0=$(tcpctd_counter packets)
	check "IPv$fam: an allowed source is answered" [ -n "$(quick "$NS_ATTACKER" "${!b}")" ]
	check "IPv$fam: ... past tcpctd, which saw none of it ($pk0 -> $(tcpctd_counter packets) packets)" \
		[ "$(tcpctd_counter packets)" -eq "$pk0" ]
	check "IPv$fam: a denied source is not answered" [ -z "$(quick "$NS_CLIENT" "${!b}")" ]
	check "IPv$fam: ... and tcpctd never saw its SYNs" [ "$(tcpctd_counter syn)" -eq "$syn0" ]
done
capture_stop
from_client=$(tshark -r "$LAB_DIR/backend.pcap" -Y "ip.src == $CLIENT4 or ipv6.src == $CLIENT6" 2>/dev/null | wc -l)
from_attacker=$(tshark -r "$LAB_DIR/backend.pcap" -Y "ip.src == $ATTACKER4 or ipv6.src == $ATTACKER6" 2>/dev/null | wc -l)
check "the backend saw nothing of the denied client ($from_client packets)" [ "$from_client" -eq 0 ]
check "the backend talked to the allowed one directly ($from_attacker packets)" [ "$from_attacker" -gt 0 ]

# Without the lists both go through tcpctd's handshake.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" ||
	not_ok "tcpctd restarts"
for fam in 4 6; do
	b=BACKEND$fam
	check "IPv$fam, no lists: the client is answered" [ -n "$(quick "$NS_CLIENT" "${!b}")" ]
	check "IPv$fam, no lists: the attacker's address is answered" [ -n "$(quick "$NS_ATTACKER" "${!b}")" ]
done
check "... both through cookies ($(tcpctd_counter ack_verified) verified)" \
	[ "$(tcpctd_counter ack_verified)" -eq 4 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
