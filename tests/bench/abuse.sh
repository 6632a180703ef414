#!/bin/bash
# tests/bench/abuse.sh: the legitimate answer rate while abusive DNS-over-TCP
# clients hold, stall and storm nsd's TCP port, in one run on one lab:
#
#   direct     gw only routes
#   synproxy   kernel SYNPROXY in front of port 53
#   tcpctd     tcpctd with --protect 192.0.2.2:53,backend-max=TCP_COUNT
#
# nsd has tcp-count ABUSE_TCP_COUNT (64) and its default tcp-timeout (120 s)
# and is restarted before every row, and SYNPROXY's conntrack table
# emptied.  Each row: loadgen -m MODE from 198.18.0.0/15 at ABUSE_RATE
# connections/s (2,000) for ABUSE_DUR s (10) and, from the client, a
# legitimate loadgen at ABUSE_LEGIT queries/s (500) for the last
# ABUSE_DUR - 3 s of it (abuse_round in tests/lab/lib.sh).  Modes
# (tests/load/loadgen.c; kxdpgun's -T1/2/3/5/7/8/9): none (the legitimate
# load alone), syn (SYN only), idle (handshake then nothing), silent
# (handshake and no reaction), partial (a query short of its last byte),
# noack (no ACK of the answer), noclose (never closes), nofinack (no last
# ACK).
#
# Usage: tests/bench/abuse.sh    (ABUSE_MODES to pick, "none syn idle ...")
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
TCP_COUNT=${ABUSE_TCP_COUNT:-64}
RATE=${ABUSE_RATE:-2000}
LEGIT=${ABUSE_LEGIT:-500}
DUR=${ABUSE_DUR:-10}
MODES=${ABUSE_MODES:-"none syn idle silent partial noack noclose nofinack"}
lab_trap
lab_up >/dev/null && nsd_start "$TCP_COUNT" >/dev/null || exit 1

declare -A pct peak
for path in direct synproxy tcpctd; do
	case $path in
	synproxy) synproxy_up 53 >/dev/null || exit 1 ;;
	tcpctd)
		tcpctd_start --protect "$BACKEND4:53,backend-max=$TCP_COUNT" \
			--max-per-addr 0 --max-per-prefix 0 >/dev/null || exit 1
		;;
	esac
	for mode in $MODES; do
		nsd_start "$TCP_COUNT" >/dev/null || exit 1
		# The legitimate client draws the same source ports in every
		# row: SYNPROXY would fail them on the last row's conntrack
		# entries (the port-reuse row of BENCHMARKS.md), not on the
		# abuse.  Its table starts empty (as in run.sh).
		[ "$path" != synproxy ] || in_gw /usr/bin/python3 "$HERE/ctflush.py" || exit 1
		abuse_round "$mode" "$RATE" "$LEGIT" "$DUR" || exit 1
		pct[$path.$mode]=$ABUSE_LEGIT_PCT
		peak[$path.$mode]=$ABUSE_PEAK
		echo "# $path $mode: legit $ABUSE_LEGIT_PCT %, abusers established $ABUSE_EST %, nsd peak $ABUSE_PEAK" >&2
	done
	case $path in
	synproxy) synproxy_down ;;
	tcpctd) tcpctd_stop ;;
	esac
done

echo "| abuse (loadgen -m) | direct: legit answered | nsd peak | SYNPROXY: legit answered | nsd peak | tcpctd: legit answered | nsd peak |"
echo "|---|---|---|---|---|---|---|"
for mode in $MODES; do
	printf '| %s | %s %% | %s | %s %% | %s | %s %% | %s |\n' "$mode" \
		"${pct[direct.$mode]}" "${peak[direct.$mode]}" \
		"${pct[synproxy.$mode]}" "${peak[synproxy.$mode]}" \
		"${pct[tcpctd.$mode]}" "${peak[tcpctd.$mode]}"
done
