#!/bin/bash
# tests/bench/tcpct.sh: DNS answers/s and packets per answer for one client
# making queries one after another (build/tcpct-query -n), each on its own
# connection, in one run on one lab:
#
#   direct     plain TCP to nsd, gw only routes
#   classic    plain TCP through tcpctd (classic SYN cookie + splice)
#   tcpct      TCPCT handshake through tcpctd (query in the third packet)
#   txn        TCPCT transaction through tcpctd (query in the SYN, answer in
#              the SYN-ACK, fetched by tcpctd from nsd over UDP)
#
# The same user-space initiator makes every row, so the rows differ only in
# the protocol path.  One connection at a time: this is a latency figure
# (answers/s = 1 / time per query), not the gateway's capacity (see run.sh).
# "packets/answer" counts the client's wire (tool's segments in and out);
# "queued/answer" the packets tcpctd handled on both legs.
#
# Usage: tests/bench/tcpct.sh    (TCPCT_N queries per row, TCPCT_ROUNDS rounds)
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
N=${TCPCT_N:-20000}
ROUNDS=${TCPCT_ROUNDS:-3}
Q=$TOP/build/tcpct-query
lab_trap
# nsd's response rate limiting (200 answers/s per /24 by default) would
# drop or truncate the transactions' UDP leg, which comes from the client's
# own address; one client at thousands of queries/s is not what it guards
# against, so it is off here, as is tcpctd's per-prefix budget.
NSD_EXTRA_CONF=${NSD_EXTRA_CONF:-"rrl-ratelimit: 0"}
export NSD_EXTRA_CONF
lab_up >/dev/null && nsd_start 1000 >/dev/null || exit 1

# row NAME ARGS...: ROUNDS runs of N queries; prints the median round.
row() {
	local name=$1 r out p0 p1
	shift
	for ((r = 0; r < ROUNDS; r++)); do
		p0=0
		[ -n "$TCPCTD_PID" ] && p0=$(tcpctd_counter packets)
		out=$(ip netns exec "$NS_CLIENT" "$Q" @"$BACKEND4" "$ZONE" A -n "$N" "$@")
		p1=0
		[ -n "$TCPCTD_PID" ] && p1=$(tcpctd_counter packets)
		echo "$out queued $((p1 - p0))"
	done | sort -t' ' -k12 -n | awk -v name="$name" -v rounds="$ROUNDS" '
		NR == int((rounds + 1) / 2) {
			printf "| %s | %s of %s | %s | %.2f | %s |\n", name, $4, $2, $12,
				$14, ($4 > 0 && $16 > 0) ? sprintf("%.2f", $16 / $4) : "–"
		}'
}
echo "| path | answered | answers/s | packets/answer (client) | queued/answer (tcpctd) |"
echo "|---|---|---|---|---|"
row "plain TCP, direct" +notcpct
tcpctd_start --protect "$BACKEND4:53" --txn-rate 1073741824 >/dev/null || exit 1
row "plain TCP through tcpctd (classic cookie)" +notcpct
row "TCPCT handshake through tcpctd" +handshake
row "TCPCT transaction through tcpctd" +transaction
tcpctd_stop
