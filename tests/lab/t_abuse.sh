#!/bin/bash
# Abusive DNS-over-TCP clients against an nsd with a small TCP limit
# (tcp-count 64): kxdpgun's debug modes -T2 (handshake, then nothing), -T3
# (handshake, no reaction) and -T5 (a query without its last byte), each at
# 2,000 connections/s for 10 s from 198.18.0.0/15, while a legitimate
# kxdpgun -T asks 500 queries/s from the client.  Straight to nsd the
# legitimate rate collapses (shown); through tcpctd, whose delayed binding
# keeps such clients off the backend, it stays >= 99 % and nsd's open TCP
# connections stay under its limit.  The per-client caps are off: they are
# not what holds here (kxdpgun's connections come from one address until
# its ports run out).
#
#   client (kxdpgun -T, 500/s) ─┐
#   attacker (kxdpgun -T<mode>) ─ gw (tcpctd) ── backend (nsd, tcp-count 64)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/tcpctd.sh"
lab_trap

TCP_COUNT=64
RATE=2000
LEGIT=500
DUR=10

lab_up >/dev/null && nsd_start "$TCP_COUNT" >/dev/null ||
	{ not_ok "lab with nsd"; t_summary; exit 1; }

# nsd_conns: nsd's established TCP connections now.
nsd_conns() {
	ip netns exec "$NS_BACKEND" ss -Htn state established "sport = :53" | wc -l
}

# round MODE: the abusive mode and the legitimate load at once; sets
# LEGIT_PCT (legitimate answers, % of SYNs), ABUSE_EST and PEAK (nsd's most
# connections seen).
round() {
	local mode=$1 apid lout aout sampler peakf=$LAB_DIR/peak
	echo 0 >"$peakf"
	aout=$LAB_DIR/abuse.out
	ip netns exec "$NS_ATTACKER" timeout -k 5 40 kxdpgun "-T$mode" -t "$DUR" -Q "$RATE" \
		-i "$KXDPGUN_QUERIES" -l "$SPOOF4" "$BACKEND4" >"$aout" 2>&1 &
	apid=$!
	LAB_PIDS+=("$apid")
	(
		peak=0
		while sleep 0.25; do
			n=$(nsd_conns)
			[ "$n" -le "$peak" ] || { peak=$n; echo "$peak" >"$peakf"; }
		done
	) &
	sampler=$!
	LAB_PIDS+=("$sampler")
	# The abuse first fills what it can, then the legitimate clients come.
	sleep 2
	lout=$(ip netns exec "$NS_CLIENT" timeout -k 5 40 kxdpgun -T -t $((DUR - 3)) -Q "$LEGIT" \
		-i "$KXDPGUN_QUERIES" "$BACKEND4" 2>&1)
	wait "$apid" 2>/dev/null
	_lab_forget "$apid"
	lab_kill "$sampler" 1
	LEGIT_PCT=$(kxdpgun_pct "$lout" replies)
	ABUSE_EST=$(kxdpgun_pct "$(cat "$aout")" established)
	PEAK=$(cat "$peakf")
	[ "$(kxdpgun_count "$lout" SYNs)" -gt 0 ] || LEGIT_PCT=0
}

# Straight to nsd: the abusers take its slots (tcp-timeout 120 s).
for mode in 3 5; do
	nsd_start "$TCP_COUNT" >/dev/null || not_ok "nsd restarts"
	round "$mode"
	echo "# direct, -T$mode: legit $LEGIT_PCT % answered, nsd peak $PEAK connections"
	check "direct to nsd, -T$mode: the legitimate rate collapses ($LEGIT_PCT % answered)" \
		[ "$LEGIT_PCT" -lt 50 ]
done

nsd_start "$TCP_COUNT" >/dev/null || not_ok "nsd restarts"
tcpctd_start --protect "$BACKEND4:53" --max-per-addr 0 --max-per-prefix 0 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
for mode in 2 3 5; do
	round "$mode"
	echo "# tcpctd, -T$mode: legit $LEGIT_PCT % answered, abusers $ABUSE_EST % established, nsd peak $PEAK connections"
	check "through tcpctd, -T$mode: legitimate >= 99 % answered ($LEGIT_PCT %)" \
		[ "$LEGIT_PCT" -ge 99 ]
	check "through tcpctd, -T$mode: the abusers completed their handshakes ($ABUSE_EST %)" \
		[ "$ABUSE_EST" -ge 90 ]
	check "through tcpctd, -T$mode: nsd's connections stay under tcp-count ($PEAK < $TCP_COUNT)" \
		[ "$PEAK" -lt "$TCP_COUNT" ]
done
check "the abusers were reset by the clocks: idle $(tcpctd_counter flows_released_idle), msg_timeout $(tcpctd_counter flows_released_msg_timeout)" \
	[ "$(tcpctd_counter flows_released_idle)" -gt 0 -a "$(tcpctd_counter flows_released_msg_timeout)" -gt 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
