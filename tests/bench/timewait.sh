#!/bin/bash
# tests/bench/timewait.sh: the backend's TIME-WAIT after TW_N short
# connections where the server closes first (HTTP/1.0 from Python's
# http.server, a real peer), in one run on one lab:
#
#   direct     gw only routes
#   synproxy   kernel SYNPROXY in front of port 80
#   classic    plain TCP through tcpctd (classic SYN cookie + splice)
#   tcpct      TCPCT through tcpctd (--tcpct-timewait-rst yes, the default)
#   tcpct-keep TCPCT through tcpctd with --tcpct-timewait-rst no
#
# Every row is made by the same initiator (build/tcpct-connect -n, plain TCP
# with +notcpct): TW_PAR processes, each making its share of the row's
# connections one after another from an address of its own
# (198.51.100.10 and up) over the ports 1024-65535, so no 4-tuple repeats
# within or across rows: a SYN to a tuple in TIME-WAIT would reopen it and
# hide one.  Two counts per row, on the backend: the TIME-WAITs it entered
# (TcpExt TW, counted when one is scheduled), and those still there at the
# end towards the row's addresses.  TIME-WAIT lasts 60 s, so the second
# undercounts a row that takes longer (flagged).
#
# Usage: tests/bench/timewait.sh    (TW_N connections per row, 100000;
#                                    TW_PAR processes, 8)
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
N=${TW_N:-100000}
CONNECT=$TOP/build/tcpct-connect
lab_trap
lab_up >/dev/null && http_start || exit 1
in_client sysctl -qw net.ipv4.ip_local_port_range="1024 65535" || exit 1
# The namespace's default (131072 here) would cap the plain rows.
in_backend sysctl -qw net.ipv4.tcp_max_tw_buckets=2000000 || exit 1
printf 'GET /hello HTTP/1.0\r\n\r\n' >"$LAB_DIR/req"

PAR=${TW_PAR:-8}
ADDR=10
# tw_entered: the backend's TcpExt TW counter.
tw_entered() {
	in_backend awk '/^TcpExt:/ { if (!n) { for (i = 2; i <= NF; i++) if ($i == "TW") c = i; n = 1 }
		else print $c }' /proc/net/netstat
}
# row NAME ARGS...: N connections from PAR addresses; one table line.
row() {
	local name=$1 k a tw0 left filter='' pids=()
	shift
	tw0=$(tw_entered)
	for ((k = 0; k < PAR; k++)); do
		a=198.51.100.$((ADDR + k))
		in_client ip addr add "$a/24" dev veth-gw || return 1
		filter="$filter${filter:+ or }dst $a"
		ip netns exec "$NS_CLIENT" "$CONNECT" +wait-eof -n $(((N + PAR - 1 - k) / PAR)) \
			-b "$a" "$@" "$BACKEND4" 80 <"$LAB_DIR/req" >"$LAB_DIR/row.$k" &
		pids+=($!)
	done
	ADDR=$((ADDR + PAR))
	wait "${pids[@]}"
	left=$(in_backend ss -Htan state time-wait "( sport = :80 and ( $filter ) )" | wc -l)
	cat "$LAB_DIR"/row.* | awk -v name="$name" -v entered=$(($(tw_entered) - tw0)) -v left="$left" '
		{ n += $2; done += $4; secs = $10 > secs ? $10 : secs; rt += $16 }
		END {
			flag = secs > 60 ? " (longer than TIME-WAIT: undercounts)" : ""
			printf "| %s | %d of %d | %.0f | %d | %.1f | %d | **%d**%s |\n", name, done, n,
				(secs > 0 ? done / secs : 0), rt, secs, entered, left, flag
		}'
	rm -f "$LAB_DIR"/row.*
}

# Warm the server and the neighbour tables; not a row.
ip netns exec "$NS_CLIENT" "$CONNECT" +notcpct +wait-eof -n 2000 "$BACKEND4" 80 \
	<"$LAB_DIR/req" >/dev/null
echo "| path | completed | connections/s | retransmitted | seconds | backend entered TIME-WAIT | still in TIME-WAIT at the end |"
echo "|---|---|---|---|---|---|---|"
row "direct" +notcpct
synproxy_up 80 || exit 1
row "kernel SYNPROXY" +notcpct
synproxy_down
tcpctd_start --protect "$BACKEND4:80" >/dev/null || exit 1
row "through tcpctd, classic cookie" +notcpct
row "through tcpctd, TCPCT"
tcpctd_stop
tcpctd_start --protect "$BACKEND4:80" --tcpct-timewait-rst no >/dev/null || exit 1
row "through tcpctd, TCPCT, --tcpct-timewait-rst no"
tcpctd_stop
