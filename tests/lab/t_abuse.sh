#!/bin/bash
# Abusive DNS-over-TCP clients against an nsd with a small TCP limit
# (tcp-count 64), each at 2,000 connections/s for 10 s from 198.18.0.0/15
# while a legitimate loadgen asks 500 queries/s from the client:
# loadgen's modes (kxdpgun's -T debug modes, on kernel sockets) idle
# (handshake, then nothing), silent (handshake, no reaction), partial (a
# query without its last byte), noack (the query, but no ACK of the
# answer), noclose (never closes) and nofinack (no last ACK).  Straight to
# nsd the legitimate rate collapses under silent, partial, noack and
# noclose (shown);
# through tcpctd it stays >= 99 % under all six and nsd's open TCP
# connections stay under its limit: delayed binding keeps the first three
# off the backend, and the overload mode (backend-max 64) releases the
# backend's half of the others as soon as their query is answered.  The
# per-client caps are the defaults (pending connections, no whole query
# yet, 25 per address and 256 per /24): the abusers' addresses come one
# after another from a /15, so they are not what holds here either; the
# legitimate client asks at once and never meets them.  A last
# noclose round has dnsperf -m tcp as the legitimate client: 10 persistent
# connections, whose backend halves tcpctd releases and binds again.
#
#   client (loadgen or dnsperf, 500/s) ─┐
#   attacker (loadgen -m MODE) ─ gw (tcpctd) ── backend (nsd, tcp-count 64)
. "$(dirname "$0")/scenario.sh"

TCP_COUNT=64
RATE=2000
LEGIT=500
DUR=10

lab_with_nsd "$TCP_COUNT"

# Straight to nsd: the abusers take its slots (tcp-timeout 120 s).  The
# last round's legitimate client is dnsperf -m tcp instead.
for mode in silent partial noack noclose noclose/dnsperf; do
	[ "${mode#*/}" = dnsperf ] && export ABUSE_LEGIT_TOOL=dnsperf
	mode=${mode%/*}
	nsd_start "$TCP_COUNT" >/dev/null || not_ok "nsd restarts"
	abuse_round "$mode" "$RATE" "$LEGIT" "$DUR" || not_ok "the load generators ran ($mode)"
	echo "# direct, $mode (legit ${ABUSE_LEGIT_TOOL:-loadgen}): legit $ABUSE_LEGIT_PCT % answered, nsd peak $ABUSE_PEAK connections"
	# dnsperf's 10 persistent connections are shown, not checked: whether
	# they get one of nsd's slots before the abusers is luck (0 % in one
	# run, 99 % in the next); a query per connection shows the collapse.
	[ "${ABUSE_LEGIT_TOOL:-}" = dnsperf ] && continue
	check "direct to nsd, $mode, ${ABUSE_LEGIT_TOOL:-loadgen}: the legitimate rate collapses ($ABUSE_LEGIT_PCT % answered)" \
		[ "$ABUSE_LEGIT_PCT" -lt 50 ]
done
unset ABUSE_LEGIT_TOOL

nsd_start "$TCP_COUNT" >/dev/null || not_ok "nsd restarts"
tcpctd_start --protect "$BACKEND4:53,backend-max=$TCP_COUNT" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
for mode in idle silent partial noack noclose nofinack noclose/dnsperf; do
	[ "${mode#*/}" = dnsperf ] && export ABUSE_LEGIT_TOOL=dnsperf
	mode=${mode%/*}
	# Each mode on its own: what the last one left at nsd goes.
	nsd_start "$TCP_COUNT" >/dev/null || not_ok "nsd restarts"
	abuse_round "$mode" "$RATE" "$LEGIT" "$DUR" || not_ok "the load generators ran ($mode)"
	m="$mode, ${ABUSE_LEGIT_TOOL:-loadgen}"
	echo "# tcpctd, $m: legit $ABUSE_LEGIT_PCT % answered, abusers $ABUSE_EST % established, nsd peak $ABUSE_PEAK connections; refused so far: $(tcpctd_refused)"
	check "through tcpctd, $m: legitimate >= 99 % answered ($ABUSE_LEGIT_PCT %)" \
		[ "$ABUSE_LEGIT_PCT" -ge 99 ]
	check "through tcpctd, $m: the abusers completed their handshakes ($ABUSE_EST %)" \
		[ "$ABUSE_EST" -ge 90 ]
	check "through tcpctd, $m: nsd's connections stay under tcp-count ($ABUSE_PEAK < $TCP_COUNT)" \
		[ "$ABUSE_PEAK" -lt "$TCP_COUNT" ]
done
unset ABUSE_LEGIT_TOOL
check "the abusers were reset by the clocks: idle $(tcpctd_counter flows_released_idle), msg_timeout $(tcpctd_counter flows_released_msg_timeout)" \
	[ "$(tcpctd_counter flows_released_idle)" -gt 0 -a "$(tcpctd_counter flows_released_msg_timeout)" -gt 0 ]
check "the overload mode came ($(tcpctd_counter overload_entered)) and released backends: $(tcpctd_counter released), clients kept $(tcpctd_counter release_kept), stuck $(tcpctd_counter release_stuck)" \
	[ "$(tcpctd_counter overload_entered)" -gt 0 -a "$(tcpctd_counter released)" -gt 1000 \
	  -a "$(tcpctd_counter release_kept)" -gt 0 -a "$(tcpctd_counter release_stuck)" -gt 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
