# shellcheck shell=bash
# tests/lab/tcpctd.sh: start and stop tcpctd in the lab's gateway, read its
# counters, and report checks.  Sourced after lib.sh.

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TCPCTD_BIN=${TCPCTD_BIN:-$TOP/build/tcpctd}
TCPCTL_BIN=${TCPCTL_BIN:-$TOP/build/tcpctl}
TCPCTD_PID=
TCPCTD_LOG=
TCPCTD_ARGS=()
T_PASSED=0
T_FAILED=0

# ok DESCRIPTION / not_ok DESCRIPTION [DETAIL]: one line per check.
ok() { T_PASSED=$((T_PASSED + 1)); printf 'ok - %s\n' "$1"; }
not_ok() {
	T_FAILED=$((T_FAILED + 1))
	printf 'not ok - %s\n' "$1"
	[ -z "${2:-}" ] || printf '#   %s\n' "$2"
}
# check DESCRIPTION CMD...: ok when CMD succeeds.
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d" "failed: $*"; fi
}
# refused RC OUT PATTERN: a command refused (status 1) and said PATTERN.
refused() { [ "$1" -eq 1 ] && grep -q "$3" <<<"$2"; }
# t_summary: the closing line, and the exit status.
t_summary() {
	printf '%d passed, %d failed\n' "$T_PASSED" "$T_FAILED"
	[ "$T_FAILED" -eq 0 ]
}

# lab_with_nsd [TCP_COUNT]: the lab up with nsd in the backend (nsd_start),
# or the scenario ends there with a failed check.
lab_with_nsd() {
	lab_up >/dev/null && nsd_start "$@" >/dev/null && return 0
	not_ok "lab with nsd"
	t_summary
	exit 1
}

# shield_scenario WHY: a scenario of the kernel shield's ends here, skipped (with
# WHY), when the lab runs without it (TCPCTD_SHIELD=no).
shield_scenario() {
	[ "${TCPCTD_SHIELD:-auto}" = no ] || return 0
	ok "# SKIP TCPCTD_SHIELD=no: $1"
	t_summary
	exit
}
# shield_running: the scenario ends here, failed, when the daemon runs without
# its shield (the kernel refused it, which t_shield's checks show).
shield_running() {
	[ "$(tcpctd_counter shield_interfaces)" -eq 0 ] || return 0
	not_ok "the shield is on (the kernel took it in t_shield's checks)"
	tcpctd_finish
	t_summary
	exit
}

# tcpctd_start ARGS...: install the rules and start tcpctd in gw, protecting
# ARGS (--protect ... and options); waits until its queues are bound.
# TCPCTD_NICE (default 0): its nice value.  A gateway has CPUs of its own;
# the lab's shares 2 cores with the load generator and the backend, and the
# load tests give it a head start over them as its own CPU would.
tcpctd_start() {
	# TCPCTD_SHIELD (auto, yes, no): the kernel shield's setting for the
	# scenario's daemons, unless the scenario sets one (the last wins);
	# the daemon's default when unset.
	# TCPCTD_KERNEL_FLOWS (yes, no): whether the shield carries
	# established flows, unless the scenario says (the last wins).
	# Its pins (the kernel's flows) in the lab's own bpf filesystem,
	# never the host's: none where the lab has none.
	TCPCTD_ARGS=(${TCPCTD_SHIELD:+--shield "$TCPCTD_SHIELD"}
		${TCPCTD_KERNEL_FLOWS:+--kernel-flows "$TCPCTD_KERNEL_FLOWS"}
		--pin-dir "${LAB_BPF:+$LAB_BPF/gw}" "$@")
	TCPCTD_LOG=$LAB_DIR/tcpctd.log
	in_gw "$TCPCTD_BIN" --rules install "${TCPCTD_ARGS[@]}" >/dev/null || return 1
	lab_on_down 'tcpctd_stop'
	# Emptied here: the background job's own redirection may come after
	# wait_log's first look, which would find an earlier daemon's line.
	: >"$TCPCTD_LOG"
	lab_spawn "$NS_GW" "$TCPCTD_LOG" nice -n "${TCPCTD_NICE:-0}" \
		"$TCPCTD_BIN" "${TCPCTD_ARGS[@]}"
	TCPCTD_PID=$LAB_PID
	wait_log "$TCPCTD_LOG" 'protecting' 10 || { cat "$TCPCTD_LOG" >&2; return 1; }
}

# tcpctd_stop: stop tcpctd (its counters go to the log) and remove the rules.
tcpctd_stop() {
	if [ -n "$TCPCTD_PID" ]; then
		_tcpctd_queues_empty 2>/dev/null ||
			echo "# tcpctd_stop: queued packets without a verdict (queue waiting):" \
				"$(in_gw awk '{ printf "%s %s, ", $1, $3 }' /proc/net/netfilter/nfnetlink_queue)"
		lab_kill "$TCPCTD_PID" 10
		TCPCTD_PID=
	fi
	if [ -e "/run/netns/$NS_GW" ] && [ ${#TCPCTD_ARGS[@]} -gt 0 ]; then
		ip netns exec "$NS_GW" "$TCPCTD_BIN" --rules remove \
			"${TCPCTD_ARGS[@]}" >/dev/null 2>&1 || true
	fi
}

# tcpctd_finish: stop tcpctd with SIGTERM and check that it stopped
# cleanly: exit status 0 within 10 s, and no sanitizer report in its log.
tcpctd_finish() {
	local rc=0 n=100
	[ -n "$TCPCTD_PID" ] || { not_ok "tcpctd was running at the end"; return; }
	# Every packet the kernel queued has had its verdict: one without
	# stays in the queue for good, and enough of them fill it.
	if wait_until 3 _tcpctd_queues_empty; then
		ok "no queued packet left without a verdict"
	else
		not_ok "no queued packet left without a verdict" \
			"(queue waiting): $(in_gw awk '{ printf "%s %s, ", $1, $3 }' /proc/net/netfilter/nfnetlink_queue)"
	fi
	kill -TERM "$TCPCTD_PID"
	while kill -0 "$TCPCTD_PID" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	wait "$TCPCTD_PID" || rc=$?
	_lab_forget "$TCPCTD_PID"
	TCPCTD_PID=
	check "tcpctd stops on SIGTERM with status 0 (got $rc)" [ "$rc" -eq 0 ]
	if grep -qE 'Sanitizer|runtime error:' "$TCPCTD_LOG"; then
		not_ok "no sanitizer report" "$(grep -m3 -E 'Sanitizer|runtime error:' "$TCPCTD_LOG")"
	else
		ok "no sanitizer report"
	fi
}

# queue_packets N: how many packets the kernel has handed queue N so far
# (its last packet id).
queue_packets() {
	in_gw awk -v q="$1" '$1 == q { print $8 }' /proc/net/netfilter/nfnetlink_queue
}

_tcpctd_queues_empty() {
	in_gw awk '$3 != 0 { busy = 1 } END { exit busy }' /proc/net/netfilter/nfnetlink_queue
}

# tcpctl_metric SOCK SAMPLE: the value of SAMPLE, a family's name with its labels as
# the exposition writes them (tcpctd_reloads_total{result="taken"}), in what
# `tcpctl metrics` answers on SOCK in gw; nothing when there is no such sample.
tcpctl_metric() {
	in_gw "$TCPCTL_BIN" -s "$1" metrics | awk -v n="$2" '$1 == n { print $2 }'
}

# tcpctl_eval [NS] SOCK EXPR: a Python expression over the counters of the
# tcpctd answering on SOCK, in NS (gw's by default): each counter is a
# name, and d the whole dictionary.
tcpctl_eval() {
	local ns=$NS_GW
	[ $# -eq 3 ] && { ns=$1; shift; }
	ip netns exec "$ns" "$TCPCTL_BIN" -s "$1" -j stats | /usr/bin/python3 -c \
		"import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1], {'d': d}, d))" "$2"
}

# tcpctd_counter NAME: the current value of counter NAME (SIGUSR1 dump), the
# kernel shield's share of it included.
tcpctd_counter() {
	local before
	before=$(grep -c '^packets ' "$TCPCTD_LOG" 2>/dev/null || true)
	kill -USR1 "$TCPCTD_PID" 2>/dev/null || return 1
	wait_until 5 _tcpctd_dumped "$before" || return 1
	# The last dump's row, and the kernel shield's of the same name: what
	# the gateway counted, whichever path answered.
	awk -v n="$1" '$1 == n { v = $2 } $1 == "shield/" n { k = $2 }
		END { print v + k + 0 }' "$TCPCTD_LOG"
}
# tcpctd_refused: the verified clients refused (a RST) by a per-client cap or
# the rate so far, summed, then those counters and the segments dropped at a
# pending cap, which refuse no one: "3 refused_rate=0 refused_addr=3 ...".
tcpctd_refused() {
	tcpctd_counter refused_rate >/dev/null || return 1
	awk 'BEGIN { split("refused_rate refused_addr refused_prefix " \
			   "deferred_pending_addr deferred_pending_prefix", n) }
		{ v[$1] = $2 }
		END { for (i = 1; i in n; i++) {
				if (n[i] ~ /^refused_/)
					s += v[n[i]]
				l = l " " n[i] "=" v[n[i]] + 0
			}
			print s + 0 l }' "$TCPCTD_LOG"
}
_tcpctd_dumped() {
	[ "$(grep -c '^inject_flushes ' "$TCPCTD_LOG" 2>/dev/null || true)" -gt "$1" ]
}

# tcpctd_rss_kib: tcpctd's resident set size in KiB.
tcpctd_rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$TCPCTD_PID/status"; }

# gw_judge CLIENT_PCAP BACKEND_PCAP: tshark's verdict on captures of the
# client's and the backend's links.  Judged is what gw sent, i.e. every
# segment tcpctd translated or injected: toward the client it comes from
# the backend's address, toward the backend from the client's.  What the
# peers' own kernels sent is only reported (a line each).  Sets GW_CAPTURED
# (packets), GW_SENT (of them gw's), GW_BAD (gw's with a bad IP or TCP
# checksum; GW_BADLIST lists them), GW_PEER_BAD, and GW_UNSEEN (segments
# acknowledged before they were seen, either way).
gw_judge() {
	local f pcap sent l
	GW_CAPTURED=0 GW_SENT=0 GW_BAD=0 GW_PEER_BAD=0 GW_UNSEEN=0 GW_BADLIST=
	for f in "$1":"ip.src == $BACKEND4 || ipv6.src == $BACKEND6" \
		"$2":"ip.src == $CLIENT4 || ipv6.src == $CLIENT6"; do
		pcap=${f%%:*} sent=${f#*:}
		GW_CAPTURED=$((GW_CAPTURED + $(tshark -r "$pcap" 2>/dev/null | wc -l)))
		GW_SENT=$((GW_SENT + $(tshark -r "$pcap" -Y "$sent" 2>/dev/null | wc -l)))
		l=$(_gw_bad_frames "$pcap" "$sent")
		[ -z "$l" ] || { GW_BAD=$((GW_BAD + $(echo "$l" | wc -l)))
			GW_BADLIST="$GW_BADLIST ${pcap##*/}: $l;"; }
		l=$(_gw_bad_frames "$pcap" "!($sent)")
		[ -z "$l" ] || { GW_PEER_BAD=$((GW_PEER_BAD + $(echo "$l" | wc -l)))
			echo "# a peer's own segment with a bad checksum, ${pcap##*/}: $l"; }
		l=$(tshark -r "$pcap" -Y 'tcp.analysis.ack_lost_segment' -T fields \
			-e frame.number -e ip.src -e ipv6.src -e tcp.srcport -e tcp.dstport \
			-e tcp.flags.str -e tcp.seq_raw -e tcp.ack_raw 2>/dev/null)
		[ -z "$l" ] || { GW_UNSEEN=$((GW_UNSEEN + $(echo "$l" | wc -l)))
			# An ACK of a segment the capture never had: ours, or a
			# capture that lost packets (tcpdump says how many).
			echo "# ACKed unseen, ${pcap##*/}: $(echo "$l" | head -3 | tr '\n\t' '; ');" \
				"tcpdump: $(grep -h 'dropped by kernel' "$pcap.log" 2>/dev/null | tr '\n' ' ')"; }
	done
}
# A bad TCP checksum for tshark (-o tcp.check_checksum:TRUE), but for 0xffff where
# the sum is 0: Linux's own stack sends that (skb_checksum_help's CSUM_MANGLED_0),
# about one segment in 65536, and a receiver's sum finds it as good (RFC 1624 §3).
TCP_CSUM_BAD='(tcp.checksum.status == 0 && !(tcp.checksum == 0xffff && tcp.checksum_calculated == 0))'
_gw_bad_frames() {	# FILE [FILTER]: bad checksums in FILE, one line each
	tshark -r "$1" -o tcp.check_checksum:TRUE -o ip.check_checksum:TRUE \
		-Y "($TCP_CSUM_BAD || ip.checksum.status == 0)${2:+ && ($2)}" \
		-T fields -e frame.number -e ip.src -e ipv6.src -e tcp.srcport -e tcp.dstport \
		-e tcp.flags.str -e tcp.len -e tcp.checksum -e tcp.checksum_calculated 2>/dev/null
}

# kdig_answer NS SERVER NAME TYPE: the answer section of a DNS-over-TCP
# query, sorted, TTLs kept; empty on failure.
kdig_answer() {
	ip netns exec "$1" timeout 10 kdig +tcp +time=3 +retry=1 +noall +answer \
		@"$2" "$3" "$4" 2>/dev/null | sort
}
