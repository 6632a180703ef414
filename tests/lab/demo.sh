#!/bin/bash
# make demo: the lab, nsd behind tcpctd with the default configuration, real
# DNS-over-TCP queries, a bounded SYN flood from spoofed sources, and what
# happened.
#
#   client (kdig, loadgen) ── gw (tcpctd) ── backend (nsd)
#   attacker (SYN flood from 198.18.0.0/15) ─┘
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/tcpctd.sh"
lab_trap

say() { printf '\n== %s\n' "$*"; }
# could_not STEP WHY: say that a step did not run, and why; the demo then exits 1
# (as it does when a step ran but went wrong: not_run counts both).
not_run=0
could_not() {
	printf '  !! could not run: %s\n' "$1"
	[ -z "${2:-}" ] || printf '  !! %s\n' "$2"
	not_run=$((not_run + 1))
}

say "building the lab: client, gateway, backend, attacker namespaces ($LAB-*)"
lab_up >/dev/null && nsd_start >/dev/null ||
	{ echo "  !! could not run: the lab or nsd (messages above)"; exit 1; }
echo "nsd serves $ZONE on $BACKEND4 and $BACKEND6 port 53"

say "starting tcpctd in the gateway: $TCPCTD_BIN --protect $BACKEND4:53 --protect [$BACKEND6]:53"
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--control-socket "$LAB_DIR/tcpctd.sock" ||
	{ cat "$TCPCTD_LOG"; echo "  !! could not run: tcpctd (its log above)"; exit 1; }
grep -E 'backend|protecting' "$TCPCTD_LOG" | sed 's/^/  /'
echo "rules it installed (raw table):"
in_gw iptables -t raw -S TCPCTD | sed 's/^/  /'

say "kdig +tcp from the client, through tcpctd"
for s in "$BACKEND4 $ZONE A" "[$BACKEND6] $ZONE AAAA" "$BACKEND4 $ZONE_BIG TXT"; do
	set -- $s
	server=${1#[}; server=${server%]}
	printf '  kdig +tcp @%s %s %s: ' "$server" "$2" "$3"
	out=$(ip netns exec "$NS_CLIENT" kdig +tcp +time=3 +retry=1 @"$server" "$2" "$3" 2>&1)
	if grep -q 'status:' <<<"$out"; then
		awk '/status:/ { st = $6; sub(/;$/, "", st) } /^;; Received/ { sz = $3 }
			END { printf "%s %s bytes\n", st, sz }' <<<"$out"
	else
		echo
		could_not "kdig @$server $2 $3" "$(echo $out)"
	fi
done

say "SYN flood from spoofed sources (loadgen -m syn, random in 198.18.0.0/15, 200,000 SYN/s for 8 s) while a client makes 2,000 connections/s"
synacks0=$(spoof_synacks)
loadgen_bg "$NS_ATTACKER" "$LAB_DIR/flood.out" -m syn -t 8 -r 200000 -l "$SPOOF4" "$BACKEND4"
flood=$LAB_PID
sleep 1
legit=$(loadgen "$NS_CLIENT" -t 5 -r 2000 -i "$LAB_QUERIES" "$BACKEND4") ||
	could_not "the legitimate client (loadgen)" "$(echo $legit)"
loadgen_wait "$flood" "$LAB_DIR/flood.out" ||
	could_not "the SYN flood (loadgen -m syn)" "$(echo $(cat "$LAB_DIR/flood.out"))"
sleep 0.5
flood_out=$(cat "$LAB_DIR/flood.out")
printf '  flood:      %s SYNs sent, %s SYN-ACK cookies came back to the spoofed sources\n' \
	"$(load_count "$flood_out" sent)" "$(($(spoof_synacks) - synacks0))"
# The flood's SYNs never finish a handshake: whatever a per-client cap
# refused was the legitimate client's (or kdig's), which the defaults must
# never refuse.
refused=$(tcpctd_refused) || refused='? (no counters)'
printf '  legitimate: %s connections, %s answered, %s failed, %s refused by a per-client cap\n' \
	"$(load_count "$legit" sent)" "$(load_count "$legit" answered)" \
	"$(load_count "$legit" failed)" "${refused%% *}"
if [ "${refused%% *}" != 0 ]; then
	printf '  !! tcpctd refused the legitimate client:%s\n' "${refused#* }"
	not_run=$((not_run + 1))
fi
echo "  tcpctd RSS: $(tcpctd_rss_kib) KiB; backend half-open connections: $(ip netns exec "$NS_BACKEND" ss -Htn state syn-recv | wc -l)"

say "tcpctl status (its control socket)"
in_gw "$TCPCTL_BIN" -s "$LAB_DIR/tcpctd.sock" status | sed 's/^/  /'

say "what tcpctd counted"
tcpctd_counter packets >/dev/null
awk '/^packets /{ n++ } n == c' c="$(grep -c '^packets ' "$TCPCTD_LOG")" "$TCPCTD_LOG" |
	awk '$2 != 0 && NF >= 2' | sed 's/^/  /'
if [ "$not_run" -gt 0 ]; then
	say "done, but $not_run step(s) could not run or went wrong (see !! above); the lab is removed on exit"
	exit 1
fi
say "done; the lab is removed on exit"
