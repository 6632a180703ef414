#!/bin/bash
# Issue 35: tcpctd as the TCPCT initiator in front of a resolver that knows
# nothing of it.  Two gateways end to end: the lab's client namespace is
# the resolver's router, running tcpctd in upstream mode for the backend's
# prefixes, and the lab's gateway the far side's, a tcpctd responder in
# front of nsd.  kdig in a resolver namespace behind the first asks over
# plain TCP; every answer must be the one nsd gives directly.  Then the
# responder goes and nsd is a legacy server: every answer over plain TCP;
# then behind a firewall that drops TCPCT SYNs: plain within one
# retransmission, and cached.
# IPv4 and IPv6; tshark finds no bad checksum on either leg.
#
#   resolver (kdig) ── client (tcpctd --upstream) ── gw (tcpctd --protect) ── backend (nsd)
#   198.19.53.0/24        the local leg  |  the middle link (TCPCT)  |
#   2001:db8:53::/64
. "$(dirname "$0")/scenario.sh"

NS_RESOLVER=$LAB-resolver
LAB_NAMESPACES="$LAB_NAMESPACES $NS_RESOLVER"
RESOLVER4=198.19.53.2
RESOLVER6=2001:db8:53::2
UPGW4=198.19.53.1
UPGW6=2001:db8:53::1
NET_RESOLVER4=198.19.53.0/24
NET_RESOLVER6=2001:db8:53::/64
UP_IF=veth-resolver
UPSTREAM=(--shield no --upstream "$NET_BACKEND4:53" --upstream "[$NET_BACKEND6]:53")
UP_PID=
UP_LOG=

lab_with_nsd

# The resolver's namespace behind the client's, which routes for it; the
# gateway routes its prefix back there (past the spoofed sources' route).
resolver_up() {
	_lab ip -n "$NS_CLIENT" link add "$UP_IF" type veth peer name veth-up \
		netns "$NS_RESOLVER" || return 1
	_lab ip -n "$NS_CLIENT" addr add "$UPGW4/24" dev "$UP_IF" || return 1
	_lab ip -n "$NS_CLIENT" addr add "$UPGW6/64" dev "$UP_IF" nodad || return 1
	_lab ip -n "$NS_RESOLVER" addr add "$RESOLVER4/24" dev veth-up || return 1
	_lab ip -n "$NS_RESOLVER" addr add "$RESOLVER6/64" dev veth-up nodad || return 1
	_lab ip -n "$NS_CLIENT" link set "$UP_IF" up || return 1
	_lab ip -n "$NS_RESOLVER" link set veth-up up || return 1
	_lab ip -n "$NS_RESOLVER" route add default via "$UPGW4" || return 1
	_lab ip -n "$NS_RESOLVER" -6 route add default via "$UPGW6" || return 1
	_lab ip netns exec "$NS_CLIENT" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv6.conf.all.forwarding=1 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0 "net.ipv4.conf.$UP_IF.rp_filter=0" \
		net.ipv4.conf.veth-gw.rp_filter=0 || return 1
	_lab ip -n "$NS_GW" route add "$NET_RESOLVER4" via "$CLIENT4" || return 1
	_lab ip -n "$NS_GW" -6 route add "$NET_RESOLVER6" via "$CLIENT6" || return 1
	# Checksums mean something on the wire only without offloads.
	_lab ip netns exec "$NS_RESOLVER" ethtool -K veth-up tx off rx off tso off \
		gso off gro off >/dev/null || return 1
	_lab ip netns exec "$NS_CLIENT" ethtool -K "$UP_IF" tx off rx off tso off \
		gso off gro off >/dev/null || return 1
}

upstream_stop() {
	if [ -n "$UP_PID" ]; then
		lab_kill "$UP_PID" 10
		UP_PID=
	fi
	[ -e "/run/netns/$NS_CLIENT" ] &&
		ip netns exec "$NS_CLIENT" "$TCPCTD_BIN" --rules remove "${UPSTREAM[@]}" \
			>/dev/null 2>&1 || true
}

upstream_start() {
	UP_LOG=$LAB_DIR/upstream.log
	in_client "$TCPCTD_BIN" --rules install "${UPSTREAM[@]}" >/dev/null || return 1
	lab_on_down upstream_stop
	: >"$UP_LOG"
	lab_spawn "$NS_CLIENT" "$UP_LOG" "$TCPCTD_BIN" "${UPSTREAM[@]}"
	UP_PID=$LAB_PID
	wait_log "$UP_LOG" 'protecting' 10 || { cat "$UP_LOG" >&2; return 1; }
}

_up_dumped() { [ "$(grep -c '^packets ' "$UP_LOG")" -gt "$1" ]; }
# up_counter NAME: the upstream daemon's counter (its SIGUSR1 dump).
up_counter() {
	local before
	before=$(grep -c '^packets ' "$UP_LOG" 2>/dev/null || true)
	kill -USR1 "$UP_PID" 2>/dev/null || return 1
	wait_until 5 _up_dumped "$before" || return 1
	awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "$UP_LOG"
}

norm() { grep -v '^;' | awk 'NF { $1 = $1; print }' | sort; }
ask() { kdig_answer "$NS_RESOLVER" "$@" | norm; }

resolver_up >/dev/null || { not_ok "resolver namespace"; t_summary; exit 1; }

# What nsd answers, straight (no tcpctd anywhere yet).
QUERIES=("$ZONE A $BACKEND4" "$ZONE AAAA $BACKEND6" "$ZONE NS $BACKEND4"
	"$ZONE_MANY A $BACKEND6" "$ZONE_BIG TXT $BACKEND4" "$ZONE_BIG TXT $BACKEND6")
declare -A direct
for q in "${QUERIES[@]}"; do
	set -- $q
	direct[$q]=$(ask "$3" "$1" "$2")
	[ -n "${direct[$q]}" ] || not_ok "kdig answers directly: $q"
done

# The TIME-WAITs nsd holds already (kdig's direct connections, which nsd
# may close first): those the gateways' rounds leave are what counts.
tw_known() { in_backend ss -Htn state time-wait 2>/dev/null | awk '{ print $3, $4 }' | sort; }
TW_BEFORE=$(tw_known)

tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" ||
	{ not_ok "the responder starts"; t_summary; exit 1; }
upstream_start || { not_ok "the upstream gateway starts"; t_summary; exit 1; }
lab_offload off
capture_start "$NS_CLIENT" "$UP_IF" "$LAB_DIR/local.pcap" "port 53" &&
	capture_start "$NS_CLIENT" veth-gw "$LAB_DIR/middle.pcap" "port 53" ||
	not_ok "captures start"

# judge_round WHAT: every query answered as nsd answers it, twice over:
# three small answers (in a transaction) and three too big for a SYN-ACK
# (a TCPCT connection) a round.
judge_round() {
	local what=$1 q got bad=
	for round in 1 2; do
		for q in "${QUERIES[@]}"; do
			set -- $q
			got=$(ask "$3" "$1" "$2")
			[ "$got" = "${direct[$q]}" ] || bad="$bad [$q: ${got:0:60}]"
		done
	done
	if [ -z "$bad" ]; then
		ok "$what: every answer right, IPv4 and IPv6"
	else
		not_ok "$what: every answer right, IPv4 and IPv6" "$bad"
	fi
}

judge_round "through both gateways"
answered=$(up_counter upstream_answered)
conn=$(up_counter upstream_tcpct_conn)
asked=$(up_counter upstream_asked)
check "the small answers came in the far SYN-ACK (transactions: $answered of $asked asked)" \
	[ "$answered" -ge 6 ]
check "the big ones over a TCPCT connection ($conn)" [ "$conn" -ge 6 ]
txn=$(tcpctd_counter tcpct_txn_answered)
verified=$(tcpctd_counter tcpct_verified)
check "the responder answered them in its SYN-ACK ($txn) and verified the third packets ($verified)" \
	[ "$txn" -ge "$answered" -a "$verified" -ge "$conn" ]
check "no far server taken for legacy ($(up_counter upstream_plain) plain, $(up_counter upstream_silent) silent)" \
	[ "$(up_counter upstream_plain)" -eq 0 -a "$(up_counter upstream_silent)" -eq 0 ]
# nsd kept nothing for the transactions: they never reached it over TCP.
sleep 1
tw=$(comm -13 <(printf '%s\n' "$TW_BEFORE") <(tw_known) | grep -c . || true)
check "nsd holds no TIME-WAIT of theirs ($tw)" [ "$tw" -eq 0 ]

# The responder goes: nsd is a legacy server now.
tcpctd_stop
judge_round "to a legacy nsd"
plain=$(up_counter upstream_plain)
cached=$(up_counter upstream_plain_cached)
check "over plain TCP ($plain SYN-ACKs without TCPCT, then $cached asked plainly at once)" \
	[ "$plain" -ge 1 -a "$cached" -ge 8 ]

# A firewall before nsd that drops SYNs with an option it does not know
# (RFC 6013's 253): a new upstream daemon (nothing cached) takes the plain
# SYN at its first retransmission, and then asks plainly at once.
upstream_stop
upstream_start || not_ok "the upstream gateway starts again"
in_gw iptables -I FORWARD -p tcp --dport 53 --tcp-option 253 -j DROP &&
	in_gw ip6tables -I FORWARD -p tcp --dport 53 --tcp-option 253 -j DROP ||
	not_ok "the firewall's rules"
judge_round "past a firewall that drops TCPCT SYNs"
silent=$(up_counter upstream_silent)
cached=$(up_counter upstream_plain_cached)
check "the fallback within one retransmission ($silent), cached ($cached asked plainly at once)" \
	[ "$silent" -eq 2 -a "$cached" -ge 10 ]

capture_stop
bad=
for f in local middle; do
	l=$(_gw_bad_frames "$LAB_DIR/$f.pcap")
	[ -z "$l" ] || bad="$bad $f: $(echo "$l" | head -3 | tr '\n\t' '; ')"
done
n=$(tshark -r "$LAB_DIR/middle.pcap" 2>/dev/null | wc -l)
check "tshark: $n segments on the middle link, no bad checksum on either leg${bad:+:$bad}" \
	[ -z "$bad" -a "$n" -gt 0 ]
if grep -qE 'Sanitizer|runtime error:' "$UP_LOG"; then
	not_ok "no sanitizer report (upstream)" "$(grep -m3 -E 'Sanitizer|runtime error:' "$UP_LOG")"
else
	ok "no sanitizer report (upstream)"
fi
t_summary
