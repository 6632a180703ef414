#!/bin/bash
# make demo: the lab, nsd behind tcpctd with the default configuration, real
# DNS-over-TCP queries, a bounded SYN flood from spoofed sources, and what
# happened.
#
#   client (kdig, kxdpgun) ── gw (tcpctd) ── backend (nsd)
#   attacker (SYN flood from 198.18.0.0/15) ─┘
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/tcpctd.sh"
lab_trap

say() { printf '\n== %s\n' "$*"; }

say "building the lab: client, gateway, backend, attacker namespaces ($LAB-*)"
lab_up >/dev/null && nsd_start >/dev/null || { echo "lab failed"; exit 1; }
echo "nsd serves $ZONE on $BACKEND4 and $BACKEND6 port 53"

say "starting tcpctd in the gateway: $TCPCTD_BIN --protect $BACKEND4:53 --protect [$BACKEND6]:53"
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--control-socket "$LAB_DIR/tcpctd.sock" || { cat "$TCPCTD_LOG"; exit 1; }
grep -E 'backend|protecting' "$TCPCTD_LOG" | sed 's/^/  /'
echo "rules it installed (raw table):"
in_gw iptables -t raw -S TCPCTD | sed 's/^/  /'

say "kdig +tcp from the client, through tcpctd"
for s in "$BACKEND4 $ZONE A" "[$BACKEND6] $ZONE AAAA" "$BACKEND4 $ZONE_BIG TXT"; do
	set -- $s
	server=${1#[}; server=${server%]}
	printf '  kdig +tcp @%s %s %s: ' "$server" "$2" "$3"
	ip netns exec "$NS_CLIENT" kdig +tcp +time=3 +retry=1 @"$server" "$2" "$3" 2>&1 |
		awk '/status:/ { st = $6 } /^;; Received/ { sz = $3 } END { printf "%s %s bytes\n", st, sz }'
done

say "SYN flood from spoofed sources (kxdpgun -T1, 198.18.0.0/15, 8 s) while a client makes 2,000 connections/s"
ip netns exec "$NS_ATTACKER" timeout -k 5 30 kxdpgun -T1 -t 8 -Q 200000 -i "$KXDPGUN_QUERIES" \
	-l "$SPOOF4" "$BACKEND4" >"$LAB_DIR/flood.out" 2>&1 &
flood=$!
sleep 1
legit=$(ip netns exec "$NS_CLIENT" timeout -k 5 30 kxdpgun -T -t 5 -Q 2000 -i "$KXDPGUN_QUERIES" "$BACKEND4" 2>&1)
wait "$flood"
echo "  flood:      $(grep 'total SYNs' "$LAB_DIR/flood.out" | sed 's/ \+/ /g')"
echo "  legitimate: $(echo "$legit" | grep 'total SYNs' | sed 's/ \+/ /g')"
echo "              $(echo "$legit" | grep 'total replies' | sed 's/ \+/ /g')"
echo "  tcpctd RSS: $(tcpctd_rss_kib) KiB; backend half-open connections: $(ip netns exec "$NS_BACKEND" ss -Htn state syn-recv | wc -l)"

say "tcpctl status (its control socket)"
in_gw "$TCPCTL_BIN" -s "$LAB_DIR/tcpctd.sock" status | sed 's/^/  /'

say "what tcpctd counted"
tcpctd_counter packets >/dev/null
awk '/^packets /{ n++ } n == c' c="$(grep -c '^packets ' "$TCPCTD_LOG")" "$TCPCTD_LOG" |
	awk '$2 != 0 && NF >= 2' | sed 's/^/  /'
say "done; the lab is removed on exit"
