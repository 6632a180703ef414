#!/bin/bash
# tests/bench/tfo.sh: what TCP Fast Open saves a DNS client, in one run on
# one lab: kdig +tcp and kdig +tcp +fastopen, TFO_N queries each, one
# connection per query, against nsd direct and through tcpctd.
#
# From a capture on the client's link, per connection: round trips (the
# times the client waited for the server before the answer came) and the
# time from the client's SYN to the first byte of the answer.  The first
# +fastopen query of a row only fetches the cookie and is left out.  The
# lab's links add no delay (sch_netem is missing on these machines), so the
# times are the stacks' and tcpctd's own; on a real path each round trip
# adds an RTT.  answers/s is 1 / that time: one client, one query at a time.
#
# Direct TFO needs the backend kernel's server side (net.ipv4.tcp_fastopen
# bit 1) and a listener that enables it; the row says whether nsd took the
# data from the SYN.
#
# Usage: tests/bench/tfo.sh    (TFO_N queries per row, 50)
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
N=${TFO_N:-50}
lab_trap
lab_up >/dev/null || exit 1
in_backend sysctl -qw net.ipv4.tcp_fastopen=3
in_client sysctl -qw net.ipv4.tcp_fastopen=1
nsd_start >/dev/null || exit 1

# row NAME KDIG_ARGS...: N queries, one table line.
row() {
	local name=$1 i pcap=$LAB_DIR/row.pcap
	shift
	in_client ip tcp_metrics flush all 2>/dev/null
	capture_start "$NS_CLIENT" veth-gw "$pcap" "tcp port 53" || return 1
	for ((i = 0; i < N; i++)); do
		ip netns exec "$NS_CLIENT" kdig +tcp "$@" +time=3 +retry=0 +noall +answer \
			@"$BACKEND4" "$ZONE" A >/dev/null 2>&1
	done
	capture_stop
	tshark -r "$pcap" -T fields -e tcp.stream -e frame.time_relative -e tcp.srcport \
		-e tcp.len -e tcp.flags.syn -e tcp.flags.ack -e tcp.ack_raw -e tcp.seq_raw \
		2>/dev/null | awk -v skip="$([[ " $* " == *" +fastopen "* ]] && echo 1 || echo 0)" '
		$3 != 53 && $5 == 1 && $6 == 0 { if (!($1 in t0)) { t0[$1] = $2; synlen[$1] = $4; isn[$1] = $8 } }
		$1 in t0 && !($1 in t1) {
			# A round trip: the first segment from the server after the client
			# sent a SYN or data (a bare ACK asks for nothing).
			if ($3 != 53) { if ($5 == 1 || $4 > 0) pend[$1] = 1 }
			else if (pend[$1]) { rt[$1]++; pend[$1] = 0 }
			if ($3 == 53 && $5 == 1 && $4 == 0 && synlen[$1] > 0)
				took[$1] = ($7 - isn[$1] - 1 + 4294967296) % 4294967296 == synlen[$1]
			if ($3 == 53 && $4 > 0) t1[$1] = $2
		}
		END { for (s in t1) if (s + 0 >= skip)
			printf "%.6f %d %d\n", (t1[s] - t0[s]) * 1000, rt[s], took[s] }' |
		sort -n | awk -v name="$name" '
		{ d[++n] = $1; r += $2; tk += $3 }
		END {
			med = n ? d[int((n + 1) / 2)] : 0
			printf "| %s | %d | %.1f | %.3f | %.0f | %d of %d |\n", name, n,
				(n ? r / n : 0), med, (med > 0 ? 1000 / med : 0), tk, n
		}'
}

echo "| path | connections | round trips to the answer | SYN to answer, ms (median) | answers/s | query taken from the SYN |"
echo "|---|---|---|---|---|---|"
row "direct, kdig +tcp"
row "direct, kdig +tcp +fastopen" +fastopen
tcpctd_start --protect "$BACKEND4:53" >/dev/null || exit 1
row "through tcpctd, kdig +tcp"
row "through tcpctd, kdig +tcp +fastopen" +fastopen
tcpctd_stop
