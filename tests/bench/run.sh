#!/bin/bash
# tests/bench/run.sh: the same loads, in one run on one lab, against three setups of
# the gateway namespace:
#
#   direct     gw only routes
#   synproxy   kernel SYNPROXY (iptables, ip6tables) in front of the protected ports,
#              given the backend's real options (learned the way tcpctd learns them)
#   tcpctd2    tcpctd --queues 2          tcpctd1   tcpctd --queues 1
#              (both --shield no, when the binary has the shield: the daemon alone)
#   tcpctd-kernel  tcpctd-shield with --kernel-flows yes (issue 32: established
#              connections carried in the kernel)
#   tcpctd-shield  tcpctd1 with --shield yes (issue 22: the handshake in a tc BPF
#              program); skipped, with one line saying so, when the binary has no
#              --shield
#
# Each setup is installed, loaded with every case, and removed completely before the
# next; nsd (tcp-count 1000) is restarted before every load. Cases (in this order
# within a setup):
#
#   rate    max DNS-over-TCP connections/s: loadgen (one kernel TCP socket per query)
#           from the attacker, sources 198.19.N.0/24 (a fresh /24 per step, so no tuple
#           is ever reused), at RATES conn/s for RATE_SECS s each: answered/s, % of
#           offered answered
#   flood   loadgen -m syn, a SYN flood from random sources of 198.18.0.0/15 at
#           FLOOD_PPS (0: as fast as its raw socket goes) for FLOOD_SECS s while a
#           client (its second address, LEGIT_SRC) makes LEGIT_QPS conn/s
#   synflood  the same from trafgen (netsniff-ng): SYNs with Linux's options from
#           random sources and ports of 198.18.0.0/15, written into a PF_PACKET
#           TX ring by one process (-P 1) at full speed (no rate option; bounded by
#           -n TRAFGEN_COUNT and timeout FLOOD_SECS); they arrive at gw as non-linear
#           skbs, unlike loadgen's
#   ackflood  trafgen's forged ACKs (random sources, ports, seq, ack and
#           timestamps) at full speed, the same way: how many reached tcpctd's
#           queues, its cookie check, SYNPROXY's, the backend
#   synflood-ipopt  ackflood-ipopt  the two with 4 bytes of IPv4 options (NOP NOP
#           NOP EOL) in every packet (issue 31)
#   synflood-dstopt  ackflood-dstopt  the two over IPv6, from random sources of
#           2001:db8:f::/48 to BACKEND6 (2001:db8:b::2) port 53, each packet behind an
#           8-byte Destination Options header; the legitimate client stays the IPv4
#           one: it shares the machine's CPU with the flood, which is what the flood
#           costs it
#   legit   (run with any of the floods) the legitimate client alone, no
#           flood: its answers and CPU without a flood (SYNPROXY loses some of one
#           address's connections to conntrack's TIME_WAIT tuples even then), and
#           what its own connections put on tcpctd's queues, which the report
#           takes off a flood's queued packets to give the flood's share
#           All the floods: SYN-ACKs back (counted where they arrive), flood
#           packets that reached the backend (counted there), the legitimate
#           client's answers, the machine's busy CPU (/proc/stat) and what other
#           processes of the machine used of it, tcpctd's RSS before and after.
#           Before the setups, each flood generator runs once alone into a blackhole
#           route of gw (192.0.2.254; 2001:db8:b::fe for the IPv6 ones), no client:
#           its own CPU per packet, which the report takes off the machine's CPU to
#           give the CPU per SYN
#           answered (or per forged ACK)
#   bulk    iperf3, one connection, BULK_SECS s, client -> backend 192.0.2.2:5201
#   reuse   80,000 queries from one source address in 8 s (loadgen -t 8 -r 10000, no
#           -l): its 64,512 source ports wrap, 4-tuples in TIME_WAIT are reused
#   cost    (tcpctd only, after the setups) build/tcpctd under valgrind's callgrind:
#           instructions of worker_packet per DNS connection (COST_QPS x COST_SECS) and
#           per SYN answered in a SYN burst (COST_SYN_QPS x COST_SYN_SECS)
#
# Every setup but direct protects port 53 of BACKEND4 and of BACKEND6 (and the iperf3
# port of BACKEND4 when bulk runs). Peak RSS of tcpctd (VmHWM) is read at the end of
# each tcpctd setup.
#
# Usage:  tests/bench/run.sh [CASE...]        (make bench: all cases)
#         SETUPS="direct tcpctd2" tests/bench/run.sh rate
#         BENCH_REF=HEAD tests/bench/run.sh   (measure a commit, built apart)
# Every number above is a variable of the same name (RATES, RATE_SECS, FLOOD_PPS, ...).
# BENCH_TCPCTD_ARGS: more options for tcpctd (to try a setting); BENCH_PERF=1: a
# system-wide perf profile of every load (see perf_start).
# Other lab runs on the machine skew everything: the bench waits up to
# BENCH_WAIT_QUIET (180) s for them to go quiet, and marks (†) the loads in which
# their processes used >= 0.5 CPU s. So do other processes (a build, unit tests):
# before each load the bench waits up to BENCH_WAIT_LOAD (60) s for a second in
# which they used < 0.1 CPU s, and marks (‡) the loads in which they used >= 0.5.
# Output: the tables on stdout and in build/bench/results.md (BENCH_OUT), raw tool
# output, tcpctd logs and callgrind files next to it.
#
# Safety: all traffic stays between the lab's own namespaces (tests/lab/lib.sh); every
# flood is bounded in rate, count and time (timeout); lab_down (trap) removes the
# namespaces and everything started in them on any exit.
# shellcheck source-path=SCRIPTDIR disable=SC2016,SC2153
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

OUT=${BENCH_OUT:-$TOP/build/bench}
RAW=$OUT/raw
TSV=$OUT/results.tsv
SETUPS=${SETUPS:-direct synproxy tcpctd2 tcpctd1 tcpctd-shield}
NSD_TCP_COUNT=${NSD_TCP_COUNT:-1000}
RATES=${RATES:-10000 20000 30000 40000 50000}
RATE_SECS=${RATE_SECS:-5}
REUSE_QPS=${REUSE_QPS:-10000}
REUSE_SECS=${REUSE_SECS:-8}
FLOOD_PPS=${FLOOD_PPS:-0}
FLOOD_SECS=${FLOOD_SECS:-10}
LEGIT_QPS=${LEGIT_QPS:-2000}
LEGIT_SECS=${LEGIT_SECS:-8}
LEGIT_SRC=${LEGIT_SRC:-198.51.100.3}
# trafgen stops after FLOOD_SECS (timeout) or TRAFGEN_COUNT packets, whichever
# comes first; the count is only a bound (it went 0.74M/s into a blackhole here).
TRAFGEN_COUNT=${TRAFGEN_COUNT:-$((FLOOD_SECS * 5000000))}
# The generators' calibration floods this address, which gw routes to a blackhole.
BLACKHOLE4=${BLACKHOLE4:-192.0.2.254}
BLACKHOLE6=${BLACKHOLE6:-2001:db8:b::fe}
BULK_PORT=5201
BULK_SECS=${BULK_SECS:-10}
COST_QPS=${COST_QPS:-200}
COST_SECS=${COST_SECS:-10}
COST_SYN_QPS=${COST_SYN_QPS:-2000}
COST_SYN_SECS=${COST_SYN_SECS:-2}
SETTLE=${SETTLE:-2}	# seconds between loads
FLOOD_CASES="flood synflood ackflood synflood-ipopt ackflood-ipopt synflood-dstopt ackflood-dstopt"
ALL_CASES="rate $FLOOD_CASES bulk reuse cost"

# The tcpctd counters that mean something was lost; reported per case when not 0.
DROP_COUNTERS="queue_rx_enobufs queue_rx_errors queue_verdict_errors queue_nl_errors
inject_errors flow_full hold_full stray_client stray_backend
backend_syn_retrans backend_refused backend_challenge cookie_bad cookie_expired
cookie_no_key"

usage() {
	sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-0}"
}

CASES=()
for a in "$@"; do
	case " $ALL_CASES " in
	*" $a "*) CASES+=("$a") ;;
	*) case $a in -h | --help) usage 0 ;; *) echo "run.sh: unknown case '$a'" >&2; usage 2 ;; esac ;;
	esac
done
[ ${#CASES[@]} -gt 0 ] || read -r -a CASES <<<"$ALL_CASES"
want() { case " ${CASES[*]} " in *" $1 "*) return 0 ;; esac; return 1; }
want_flood() {
	local c
	for c in $FLOOD_CASES; do want "$c" && return 0; done
	return 1
}

[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (network namespaces)" >&2; exit 1; }
[ -n "${BENCH_REF:-}" ] || [ -x "$TCPCTD_BIN" ] ||
	{ echo "run.sh: no $TCPCTD_BIN (make first)" >&2; exit 1; }
for t in "$LOADGEN_BIN" nsd iperf3 trafgen iptables ip6tables valgrind callgrind_annotate /usr/bin/python3; do
	command -v "$t" >/dev/null || { echo "run.sh: $t is missing (make deps)" >&2; exit 1; }
done

T0=$(date +%s)

say() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }

mkdir -p "$OUT"
rm -rf "$RAW"
mkdir -p "$RAW"
# The binary under test. BENCH_REF=<git ref>: build that commit from a clean export
# (git archive) in OUT/src, so uncommitted work in the tree is not measured. Either
# way it is copied: a `make` elsewhere during the run cannot swap it.
BIN_FROM=$TCPCTD_BIN
BIN_COMMIT="$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)$(git -C "$TOP" diff --quiet HEAD -- . ':!tests/bench' 2>/dev/null || echo +dirty)"
if [ -n "${BENCH_REF:-}" ]; then
	BIN_COMMIT=$(git -C "$TOP" rev-parse --short "$BENCH_REF") || exit 1
	rm -rf "$OUT/src"
	mkdir -p "$OUT/src"
	git -C "$TOP" archive "$BENCH_REF" | tar -x -C "$OUT/src" || exit 1
	say "building $BENCH_REF ($BIN_COMMIT) in $OUT/src"
	make -s -C "$OUT/src" build/tcpctd >"$OUT/src/make.log" 2>&1 ||
		{ cat "$OUT/src/make.log" >&2; exit 1; }
	BIN_FROM=$OUT/src/build/tcpctd
elif [ "$TCPCTD_BIN" != "$TOP/build/tcpctd" ]; then
	BIN_COMMIT="unknown (TCPCTD_BIN=$TCPCTD_BIN)"
fi
cp "$BIN_FROM" "$RAW/tcpctd" || exit 1
TCPCTD_BIN=$RAW/tcpctd
# The shield's setup needs a binary that has it; one that has it runs it by
# default, so that the other tcpctd setups (and the callgrind cost, which
# measures the daemon's own path) turn it off.
NO_SHIELD=()
"$TCPCTD_BIN" --help 2>&1 | grep -q -- --shield && NO_SHIELD=(--shield no)
case " $SETUPS " in
*" tcpctd-shield "*)
	if [ ${#NO_SHIELD[@]} -eq 0 ]; then
		say "tcpctd-shield: skipped, this tcpctd ($BIN_COMMIT) has no --shield"
		SETUPS=$(echo " $SETUPS " | sed 's/ tcpctd-shield / /; s/^ *//; s/ *$//')
	fi
	;;
esac
: >"$TSV"
# rec SETUP CASE KEY VALUE: one result.
rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$TSV"; }

# A fresh spoofed /24 for every rate step of the whole run (198.19.0.0/16 is half
# of the lab's 198.18.0.0/15; the flood uses the first addresses of 198.18.0.0).
PREFIX_N=0
next_prefix() { PREFIX_N=$((PREFIX_N + 1)); PREFIX="198.19.$PREFIX_N.0/24"; }

# ---------------------------------------------------------------------------------
# tcpctd counters

# counters_now FILE: make tcpctd dump its counters, write the dump to FILE.
counters_now() {
	local before
	before=$(grep -c '^inject_flushes ' "$TCPCTD_LOG" 2>/dev/null || true)
	kill -USR1 "$TCPCTD_PID" 2>/dev/null || return 1
	wait_until 5 _tcpctd_dumped "$before" || return 1
	_last_dump "$TCPCTD_LOG" >"$1"
}
# _last_dump LOG: the last complete counter dump in LOG ("name value ...").
_last_dump() {
	awk '/^packets / { n = 0; split("", d) } { d[++n] = $1 " " $2 }
	     /^inject_flushes / { m = n; split("", last); for (i = 1; i <= n; i++) last[i] = d[i] }
	     END { for (i = 1; i <= m; i++) print last[i] }' "$1"
}
# counter FILE NAME: a value from a dump (0 when absent).
counter() { awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1"; }
# counters_delta SETUP CASE BEFORE AFTER: rec every DROP_COUNTERS (and the kernel's
# per-queue drop counts, kernel_queueN_dropped_*) that grew.
counters_delta() {
	local c d
	for c in $DROP_COUNTERS $(awk '$1 ~ /^kernel_queue[0-9]+_dropped/ { print $1 }' "$4"); do
		d=$(($(counter "$4" "$c") - $(counter "$3" "$c")))
		[ "$d" -eq 0 ] || rec "$1" "$2" "ctr:$c" "$d"
	done
}

# ---------------------------------------------------------------------------------
# Setups

# protected: the protected services, as tcpctd's --protect takes them: port 53 of
# BACKEND4 and BACKEND6, and BACKEND4's iperf3 port when the bulk case runs (its
# server must be up for the backend probes; it listens on BACKEND4 only).
protected() {
	echo "$BACKEND4:53"
	echo "[$BACKEND6]:53"
	if want bulk; then echo "$BACKEND4:$BULK_PORT"; fi
}

# setup_up NAME / setup_down NAME
setup_up() {
	case $1 in
	direct) ;;
	synproxy)
		local svc
		mapfile -t svc < <(protected)
		synproxy_up "${svc[@]}" || return 1
		printf '%s\n' "${SYNPROXY_RULES[@]}" >"$RAW/synproxy.rules"
		say "synproxy: backend options:$BACKEND_OPTS conntrack max $(in_gw sysctl -n net.netfilter.nf_conntrack_max)"
		;;
	tcpctd*)
		# The loads come from one address each, standing for many
		# clients: no per-address or per-prefix cap, no SYN-ACK cap.
		local extra=() queues=${1#tcpctd} prot=() p
		while read -r p; do prot+=(--protect "$p"); done < <(protected)
		read -ra extra <<<"${BENCH_TCPCTD_ARGS:-}"
		if [ "$1" = tcpctd-shield ]; then
			queues=1
			extra=(--shield yes "${extra[@]}")
		elif [ "$1" = tcpctd-kernel ]; then
			queues=1
			extra=(--shield yes --kernel-flows yes "${extra[@]}")
		else
			extra=("${NO_SHIELD[@]}" "${extra[@]}")
		fi
		tcpctd_start "${prot[@]}" \
			--queues "$queues" --max-per-addr 0 --max-per-prefix 0 \
			--synack-rate 0 --backend-max "$NSD_TCP_COUNT" \
			"${extra[@]}" || return 1
		grep '^tcpctd: backend' "$TCPCTD_LOG" | sed 's/^/    /' >&2
		rec "$1" rss VmRSS_start_kib "$(awk '/^VmRSS:/ { print $2 }' "/proc/$TCPCTD_PID/status")"
		;;
	esac
}

setup_down() {
	case $1 in
	direct) ;;
	synproxy) synproxy_down ;;
	tcpctd*)
		if [ -n "$TCPCTD_PID" ]; then
			rec "$1" rss VmHWM_kib "$(awk '/^VmHWM:/ { print $2 }' "/proc/$TCPCTD_PID/status")"
			rec "$1" rss VmRSS_kib "$(awk '/^VmRSS:/ { print $2 }' "/proc/$TCPCTD_PID/status")"
		fi
		tcpctd_stop
		cp "$TCPCTD_LOG" "$RAW/tcpctd-$1.log"
		;;
	esac
	# Nothing of the setup may remain: gw's tables must be empty again, and no
	# tc filter (the shield's BPF program) may stay on its interfaces.
	local i d ipt left=
	for ipt in iptables ip6tables; do
		if in_gw "$ipt-save" | grep -q '^-A'; then
			lab_log "$ipt rules left in gw after $1:"
			in_gw "$ipt-save" | grep '^-A' >&2
			return 1
		fi
	done
	for i in "$GW_IF_CLIENT" "$GW_IF_BACKEND" "$GW_IF_ATTACKER"; do
		for d in ingress egress; do
			left+=$(tc -n "$NS_GW" filter show dev "$i" "$d" 2>/dev/null)
		done
	done
	if [ -n "$left" ]; then
		lab_log "tc filters left in gw after $1:"
		echo "$left" >&2
		return 1
	fi
}

# ---------------------------------------------------------------------------------
# Cases: each takes the setup's name.

# other_labs: the network namespaces of other lab runs (other users of this machine's
# two cores); empty when this run is alone.
other_labs() {
	ip netns list 2>/dev/null | awk -v me="$LAB-" 'index($1, me) != 1 { print $1 }' |
		sed -n 's/-gw$//p' | tr '\n' ' '
}

# other_cpu: "pid jiffies" of every process in the other labs' namespaces.
other_cpu() {
	local ns p
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		case $ns in "$LAB"-*) continue ;; esac
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			awk -v p="$p" '{ sub(/^.*\) /, ""); print p, $12 + $13 }' "/proc/$p/stat" 2>/dev/null
		done
	done
}
# other_cpu_s BEFORE AFTER: CPU seconds the other labs' processes used in between.
other_cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" 'NR == FNR { b[$1] = $2; next } { n += $2 - b[$1] }
		END { printf "%.1f", n / hz }' "$1" "$2"
}

# backend_listen_drops: the backend kernel's TcpExt ListenDrops (SYNs or handshake
# ACKs it dropped because nsd's accept queue was full, and other listener drops).
backend_listen_drops() {
	in_backend awk '$1 == "TcpExt:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
		$1 == "TcpExt:" { for (i = 2; i <= NF; i++) if (n[i] == "ListenDrops") print $i }' \
		/proc/net/netstat
}

# foreign_ticks: the CPU jiffies (user and system, with those of their reaped
# children) of every process on the machine that is not this run's: neither in its
# process group (OUR_PGRP) nor in its lab's namespaces (OUR_NETNS, the generators
# run there under timeout, which makes a group of its own). Kernel threads are left
# out: they do softirq work for everyone. A process that exits between two samples
# leaves the sum, and its parent's cutime/cstime takes its whole time, so the
# difference of two sums is what the others used in between (unless what exited
# was reaped by a process that exited too).
OUR_PGRP=$(awk '{ sub(/^.*\) /, ""); print $3 }' /proc/$$/stat)
OUR_NETNS=
foreign_ticks() {
	local ino f pid line n=0
	local -a v
	while read -r ino f; do
		case " $OUR_NETNS " in *" $ino "*) continue ;; esac
		pid=${f#/proc/}
		pid=${pid%%/*}
		read -r line 2>/dev/null <"/proc/$pid/stat" || continue
		read -r -a v <<<"${line##*) }"
		# Ours, kthreadd, or a kernel thread.
		if [ "${v[2]}" = "$OUR_PGRP" ] || [ "$pid" = 2 ] || [ "${v[1]}" = 2 ]; then
			continue
		fi
		n=$((n + v[11] + v[12] + v[13] + v[14]))
	done < <(stat -L -c '%i %n' /proc/[0-9]*/ns/net 2>/dev/null)
	echo "$n"
}

# load_quiet: wait, up to BENCH_WAIT_LOAD s, for a second in which the processes
# not of this run used less than 0.1 CPU s.
load_quiet() {
	local f0 f1 until_t=$(($(date +%s) + ${BENCH_WAIT_LOAD:-60}))
	while :; do
		f0=$(foreign_ticks)
		sleep 1
		f1=$(foreign_ticks)
		[ $((f1 - f0)) -ge $(($(getconf CLK_TCK) / 10)) ] || return 0
		if [ "$(date +%s)" -ge "$until_t" ]; then
			say "other processes still busy after ${BENCH_WAIT_LOAD:-60} s; loading anyway"
			return 0
		fi
	done
}

# cpu_ticks: "busy total" jiffies of the whole machine, from /proc/stat.
cpu_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat; }
# tcpctd_ticks: "user system" jiffies of tcpctd, all threads.
tcpctd_ticks() { awk '{ sub(/^.*\) /, ""); print $12, $13 }' "/proc/$TCPCTD_PID/stat" 2>/dev/null || echo "0 0"; }
# tcpctd_rss: tcpctd's VmRSS, KiB.
tcpctd_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$TCPCTD_PID/status" 2>/dev/null; }
# queued BEFORE AFTER: the packets the kernel handed tcpctd's queues in between
# (kernel_queueN_packets, each a 32-bit id that wraps).
queued() {
	awk 'FNR == NR && $1 ~ /^kernel_queue[0-9]+_packets$/ { b[$1] = $2; next }
	     $1 ~ /^kernel_queue[0-9]+_packets$/ { d = $2 - b[$1]; n += d < 0 ? d + 4294967296 : d }
	     END { print n + 0 }' "$1" "$2"
}

# around SETUP CASE FUNC ARGS...: FUNC ARGS as one load, with what it cost recorded
# under CASE: tcpctd's drop counters, SYNPROXY's conntrack entries and rule counters,
# the backend's listen drops, other labs running at the same time. On SYNPROXY the
# conntrack table is emptied first (ctflush.py: the stand-in for a large enough
# nf_conntrack_max, which a namespace cannot raise).
around() {
	local s=$1 c=$2 b=$RAW/ctr-$1-$2.before a=$RAW/ctr-$1-$2.after ld0 busy cb0 ct0 cb1 ct1
	local tu0 ts0 tu1 ts1 ocpu fo0 fo1 rss0=
	shift 2
	load_quiet
	# Every load gets a fresh nsd: connections a load leaves open at nsd (see
	# backend_estab_after) would take tcp-count slots from the next.
	nsd_start "$NSD_TCP_COUNT" >/dev/null || return 1
	case $s in
	tcpctd*) counters_now "$b" || : >"$b" ;;
	synproxy)
		in_gw /usr/bin/python3 "$HERE/ctflush.py" || return 1
		in_gw iptables -w -Z FORWARD
		in_gw ip6tables -w -Z FORWARD
		;;
	esac
	ld0=$(backend_listen_drops)
	busy=$(other_labs)
	other_cpu >"$RAW/other.before"
	fo0=$(foreign_ticks)
	read -r cb0 ct0 < <(cpu_ticks)
	case $s in tcpctd*) read -r tu0 ts0 < <(tcpctd_ticks); rss0=$(tcpctd_rss) ;; esac
	perf_start "$s-$c"
	"$@"
	perf_stop
	read -r cb1 ct1 < <(cpu_ticks)
	fo1=$(foreign_ticks)
	# The busy CPU seconds of the whole machine over the load, and those of it
	# that processes not of this run used (a build, unit tests, another lab).
	rec "$s" "$c" cpu_busy_s "$(awk -v b=$((cb1 - cb0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", b / hz }')"
	rec "$s" "$c" foreign_cpu_s "$(awk -v b=$((fo1 - fo0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", b / hz }')"
	busy="$busy $(other_labs)"
	other_cpu >"$RAW/other.after"
	ocpu=$(other_cpu_s "$RAW/other.before" "$RAW/other.after")
	rec "$s" "$c" backend_listen_drops $(($(backend_listen_drops) - ld0))
	# Connections still open at nsd once the load is over: each pins one of nsd's
	# tcp-count slots for its tcp-timeout (120 s).
	rec "$s" "$c" backend_estab_after "$(in_backend ss -Htn state established '( sport = :53 )' | wc -l)"
	rec "$s" "$c" cpu_busy_pct "$(awk -v b=$((cb1 - cb0)) -v t=$((ct1 - ct0)) 'BEGIN { printf "%.0f", t ? 100 * b / t : 0 }')"
	case $s in
	tcpctd*)
		read -r tu1 ts1 < <(tcpctd_ticks)
		rec "$s" "$c" tcpctd_user_s "$(awk -v x=$((tu1 - tu0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", x / hz }')"
		rec "$s" "$c" tcpctd_sys_s "$(awk -v x=$((ts1 - ts0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", x / hz }')"
		rec "$s" "$c" rss_before_kib "$rss0"
		rec "$s" "$c" rss_after_kib "$(tcpctd_rss)"
		;;
	esac
	# Another lab that only exists (an idle test) does not count; one that used
	# half a CPU second or more during the load does.
	if [ -n "${busy// /}" ] && awk -v c="$ocpu" 'BEGIN { exit !(c >= 0.5) }'; then
		rec "$s" "$c" concurrent "$(echo "$busy" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
		rec "$s" "$c" concurrent_cpu_s "$ocpu"
	fi
	case $s in
	tcpctd*)
		if counters_now "$a"; then
			counters_delta "$s" "$c" "$b" "$a"
			rec "$s" "$c" queued "$(queued "$b" "$a")"
		fi
		;;
	synproxy)
		rec "$s" "$c" conntrack_count "$(in_gw sysctl -n net.netfilter.nf_conntrack_count 2>/dev/null)"
		{ in_gw iptables -w -L FORWARD -nvx; in_gw ip6tables -w -L FORWARD -nvx; } >"$a"
		rec "$s" "$c" synproxy_hits "$(awk '$3 == "SYNPROXY" { n += $1 } END { print n + 0 }' "$a")"
		rec "$s" "$c" invalid_dropped "$(awk '$3 == "DROP" { n += $1 } END { print n + 0 }' "$a")"
		;;
	esac
	sleep "$SETTLE"
}

# perf_start NAME / perf_stop: with BENCH_PERF=1, a system-wide CPU profile (kernel and
# user stacks, cpu-clock) of the load, to RAW/perf-NAME.data: where the time goes, also
# in softirq, which tcpctd's own CPU time does not separate. `perf report -i FILE`.
PERF_PID=
perf_start() {
	[ "${BENCH_PERF:-0}" = 1 ] || return 0
	perf record -q -a -g -e cpu-clock -F "${BENCH_PERF_FREQ:-2000}" \
		-o "$RAW/perf-$1.data" >/dev/null 2>&1 &
	PERF_PID=$!
	sleep 0.5
}
perf_stop() {
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	PERF_PID=
}

# rate_step SETUP RATE: one step of the rate case.
rate_step() {
	local s=$1 r=$2 out sent repl
	next_prefix
	out=$(loadgen "$NS_ATTACKER" -t "$RATE_SECS" -r "$r" -i "$LAB_QUERIES" \
		-l "$PREFIX" "$BACKEND4")
	printf '%s\n' "$out" >"$RAW/$s-rate-$r.txt"
	sent=$(load_count "$out" sent)
	repl=$(load_count "$out" answered)
	rec "$s" rate "sent@$r" "$sent"
	rec "$s" rate "replies@$r" "$repl"
	rec "$s" rate "secs@$r" "$RATE_SECS"
	say "$s rate $r/s: $repl of $sent answered ($(awk -v a="$repl" -v b="$sent" 'BEGIN { printf "%.1f", b ? 100 * a / b : 0 }') %); $(load_brief "$out")"
}

case_rate() {
	local r
	for r in $RATES; do
		around "$1" "rate@$r" rate_step "$1" "$r"
	done
}

case_reuse() {
	local s=$1 out sent repl
	out=$(loadgen "$NS_CLIENT" -t "$REUSE_SECS" -r "$REUSE_QPS" -i "$LAB_QUERIES" "$BACKEND4")
	printf '%s\n' "$out" >"$RAW/$s-reuse.txt"
	sent=$(load_count "$out" sent)
	repl=$(load_count "$out" answered)
	rec "$s" reuse sent "$sent"
	rec "$s" reuse replies "$repl"
	say "$s reuse: $repl of $sent answered; $(load_brief "$out")"
}

# ---------------------------------------------------------------------------------
# Floods

# flood_counters_up: in the backend, two counting rules (no target) per family for
# what comes from the flood prefixes (SPOOF4, SPOOF6) to port 53: SYNs, and everything
# else (ip6tables finds TCP behind extension headers). Once per lab, so that every
# setup and case has the same rules in the backend.
flood_counters_up() {
	local ipt net dst
	for ipt in iptables ip6tables; do
		net=$SPOOF4 dst=$BACKEND4
		[ "$ipt" = iptables ] || net=$SPOOF6 dst=$BACKEND6
		in_backend "$ipt" -w -t raw -A PREROUTING -s "$net" -d "$dst" -p tcp \
			--dport 53 --syn -m comment --comment bench-flood-syn || return 1
		in_backend "$ipt" -w -t raw -A PREROUTING -s "$net" -d "$dst" -p tcp \
			--dport 53 ! --syn -m comment --comment bench-flood-other || return 1
	done
}
# backend_flood: "syns others" of those rules so far, both families together.
backend_flood() {
	{ in_backend iptables -w -t raw -L PREROUTING -nvx; in_backend ip6tables -w -t raw -L PREROUTING -nvx; } |
		awk '/bench-flood-syn/ { s += $1 } /bench-flood-other/ { o += $1 } END { print s + 0, o + 0 }'
}

# flood_load SETUP CASE GEN [DST]: a flood from GEN (loadgen: loadgen -m syn at
# FLOOD_PPS; trafgen-KIND: trafgen_cfg's KIND) to DST (BACKEND4), with the legitimate
# client (IPv4, to BACKEND4, whatever DST's family) from 1 s in when DST is the
# service. Records what was sent and in how long, the SYN-ACKs back at the spoofed
# sources, the flood's packets at the backend, the legitimate answers.
flood_load() {
	local s=$1 c=$2 gen=$3 dst=${4:-$BACKEND4} out=$RAW/$1-$2-attacker.txt
	local fpid legit='' synacks0 synacks sent secs cfg b0 o0 b1 o1
	synacks0=$(spoof_synacks)
	read -r b0 o0 < <(backend_flood)
	case $gen in
	loadgen)
		loadgen_bg "$NS_ATTACKER" "$out" -m syn -t "$FLOOD_SECS" -r "$FLOOD_PPS" \
			-l "$SPOOF4" "$dst"
		;;
	trafgen-*)
		cfg=$(trafgen_cfg "${gen#trafgen-}" "$dst" "$RAW") || return 1
		trafgen_bg "$out" "$cfg" "$FLOOD_SECS" "$TRAFGEN_COUNT"
		;;
	esac
	fpid=$LAB_PID
	if [ "$dst" = "$BACKEND4" ] || [ "$dst" = "$BACKEND6" ]; then
		sleep 1
		legit=$(loadgen "$NS_CLIENT" -t "$LEGIT_SECS" -r "$LEGIT_QPS" -i "$LAB_QUERIES" \
			-l "$LEGIT_SRC/32" "$BACKEND4")
		printf '%s\n' "$legit" >"$RAW/$s-$c-legit.txt"
	fi
	case $gen in
	loadgen)
		loadgen_wait "$fpid" "$out" || return 1
		sent=$(load_count "$(cat "$out")" sent)
		secs=$FLOOD_SECS
		;;
	trafgen-*)
		trafgen_wait "$fpid" "$out" || return 1
		read -r sent secs < <(trafgen_sent "$out")
		;;
	esac
	FLOOD_SENT=$sent
	sleep 0.5
	synacks=$(($(spoof_synacks) - synacks0))
	read -r b1 o1 < <(backend_flood)
	rec "$s" "$c" generator "$gen"
	rec "$s" "$c" dst "$dst"
	rec "$s" "$c" sent "$sent"
	rec "$s" "$c" secs "$secs"
	rec "$s" "$c" synacks "$synacks"
	rec "$s" "$c" backend_syn $((b1 - b0))
	rec "$s" "$c" backend_other $((o1 - o0))
	if [ -n "$legit" ]; then
		rec "$s" "$c" legit_sent "$(load_count "$legit" sent)"
		rec "$s" "$c" legit_replies "$(load_count "$legit" answered)"
	fi
	say "$s $c: $gen sent $sent in $secs s ($(awk -v n="$sent" -v t="$secs" 'BEGIN { printf "%.0f", t ? n / t : 0 }')/s), $synacks SYN-ACKs back, at the backend $((b1 - b0)) SYNs and $((o1 - o0)) others${legit:+; legit $(load_count "$legit" answered) of $(load_count "$legit" sent)}"
}

case_flood() {
	flood_load "$1" flood loadgen "${2:-}" || return 1
	rec "$1" flood syns "$FLOOD_SENT"	# the key of the reports before trafgen's
}
# case_legit SETUP: the floods' legitimate client alone.
case_legit() {
	local out
	out=$(loadgen "$NS_CLIENT" -t "$LEGIT_SECS" -r "$LEGIT_QPS" -i "$LAB_QUERIES" \
		-l "$LEGIT_SRC/32" "$BACKEND4")
	printf '%s\n' "$out" >"$RAW/$1-legit.txt"
	rec "$1" legit legit_sent "$(load_count "$out" sent)"
	rec "$1" legit legit_replies "$(load_count "$out" answered)"
	say "$1 legit alone: $(load_count "$out" answered) of $(load_count "$out" sent)"
}
# trafgen_kind CASE: trafgen_cfg's kind of a trafgen flood case (synflood: syn,
# ackflood-ipopt: ack-ipopt, ...).
trafgen_kind() {
	local k=${1/#synflood/syn}
	echo "${k/#ackflood/ack}"
}
# flood_family CASE: 6 for the IPv6 floods, else 4.
flood_family() { case $1 in *-dstopt) echo 6 ;; *) echo 4 ;; esac; }
# case_trafgen SETUP CASE [DST]: trafgen's flood of CASE, to DST (the service of
# CASE's family).
case_trafgen() {
	local dst=${3:-$BACKEND4}
	[ -n "${3:-}" ] || [ "$(flood_family "$2")" = 4 ] || dst=$BACKEND6
	flood_load "$1" "$2" "trafgen-$(trafgen_kind "$2")" "$dst"
}
# case_load SETUP CASE [DST]: one case of a setup.
case_load() {
	case $2 in
	flood | legit | bulk | reuse) "case_$2" "$1" ${3:+"$3"} ;;
	*flood*) case_trafgen "$@" ;;
	esac
}

# calibrate: each flood generator wanted, alone (no client) for FLOOD_SECS s into a
# blackhole route of gw (BLACKHOLE4, or BLACKHOLE6 for the IPv6 floods): what the
# generator itself costs the machine per packet (its own sending, and the hand-over
# through veth to gw's routing, which drops it there). Recorded as setup "blackhole".
calibrate() {
	local c dst
	say "== the flood generators alone, into gw's blackhole routes to $BLACKHOLE4 and $BLACKHOLE6"
	ip -n "$NS_GW" route add blackhole "$BLACKHOLE4/32" || return 1
	ip -n "$NS_GW" -6 route add blackhole "$BLACKHOLE6/128" || return 1
	for c in $FLOOD_CASES; do
		want "$c" || continue
		dst=$BLACKHOLE4
		[ "$(flood_family "$c")" = 4 ] || dst=$BLACKHOLE6
		around blackhole "$c" case_load blackhole "$c" "$dst" || return 1
	done
	ip -n "$NS_GW" route del blackhole "$BLACKHOLE4/32"
	ip -n "$NS_GW" -6 route del blackhole "$BLACKHOLE6/128"
}

case_bulk() {
	local s=$1 f=$RAW/$1-bulk.json v gbps retr err
	in_client timeout -k 5 $((BULK_SECS + 20)) iperf3 -J -c "$BACKEND4" -p "$BULK_PORT" \
		-t "$BULK_SECS" >"$f" 2>&1
	v=$(/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
e = j["end"]
print("%.3f %d %s" % (e["sum_received"]["bits_per_second"] / 1e9,
                      e["sum_sent"].get("retransmits", 0), j.get("error", "")))
' "$f" 2>/dev/null) || v="0 0 no JSON from iperf3"
	read -r gbps retr err <<<"$v"
	rec "$s" bulk gbps "$gbps"
	rec "$s" bulk retransmits "$retr"
	[ -z "$err" ] || rec "$s" bulk error "iperf3: $err"
	say "$s bulk: $gbps Gbit/s, $retr retransmits${err:+ (iperf3: $err)}"
}

# ---------------------------------------------------------------------------------
# Instructions (callgrind)

# cg_spawn NAME: rules in, then tcpctd under callgrind in gw (queues 1, port 53).
cg_spawn() {
	TCPCTD_ARGS=(--protect "$BACKEND4:53" --queues 1 --max-per-addr 0 --max-per-prefix 0
		--synack-rate 0 --backend-max "$NSD_TCP_COUNT" "${NO_SHIELD[@]}")
	TCPCTD_LOG=$RAW/callgrind-$1.log
	in_gw "$TCPCTD_BIN" --rules install "${TCPCTD_ARGS[@]}" >/dev/null || return 1
	lab_spawn "$NS_GW" "$TCPCTD_LOG" valgrind --tool=callgrind \
		--callgrind-out-file="$RAW/callgrind-$1.out" "$TCPCTD_BIN" "${TCPCTD_ARGS[@]}"
	TCPCTD_PID=$LAB_PID
	wait_log "$TCPCTD_LOG" 'protecting' 60 || { cat "$TCPCTD_LOG" >&2; return 1; }
}
# cg_stop NAME: stop it (callgrind writes its file at exit), rules out; the
# inclusive instruction count of worker_packet goes to CG_IR.
cg_stop() {
	lab_kill "$TCPCTD_PID" 60
	TCPCTD_PID=
	in_gw "$TCPCTD_BIN" --rules remove "${TCPCTD_ARGS[@]}" >/dev/null 2>&1 || true
	callgrind_annotate --inclusive=yes "$RAW/callgrind-$1.out" >"$RAW/callgrind-$1.txt" 2>&1
	CG_IR=$(_cg_fn "$RAW/callgrind-$1.txt" worker_packet)
	CG_RUN=$(_cg_fn "$RAW/callgrind-$1.txt" worker_run)
}
_cg_fn() {
	awk -v fn="$2" '$0 ~ (":" fn " ") || $0 ~ (":" fn "$") { gsub(",", "", $1); print $1; exit }' "$1"
}

case_cost() {
	local out last synacks0
	say "cost: tcpctd under callgrind, $COST_QPS conn/s for $COST_SECS s"
	nsd_start "$NSD_TCP_COUNT" >/dev/null || return 1
	cg_spawn handshakes || return 1
	next_prefix
	out=$(loadgen "$NS_ATTACKER" -t "$COST_SECS" -r "$COST_QPS" -i "$LAB_QUERIES" \
		-l "$PREFIX" "$BACKEND4")
	printf '%s\n' "$out" >"$RAW/cost-handshakes.txt"
	sleep 2
	cg_stop handshakes
	last=$RAW/callgrind-handshakes.ctr
	_last_dump "$TCPCTD_LOG" >"$last"
	rec callgrind cost conn_sent "$(load_count "$out" sent)"
	rec callgrind cost conn_replies "$(load_count "$out" answered)"
	rec callgrind cost conn_verified "$(counter "$last" ack_verified)"
	rec callgrind cost conn_packets "$(counter "$last" packets)"
	rec callgrind cost conn_ir "$CG_IR"
	rec callgrind cost conn_ir_run "$CG_RUN"
	say "cost: $(load_count "$out" answered) of $(load_count "$out" sent) answered, $(counter "$last" ack_verified) verified, worker_packet $CG_IR Ir"

	say "cost: tcpctd under callgrind, a burst of $COST_SYN_QPS SYN/s for $COST_SYN_SECS s"
	cg_spawn syns || return 1
	synacks0=$(spoof_synacks)
	out=$(loadgen "$NS_ATTACKER" -m syn -t "$COST_SYN_SECS" -r "$COST_SYN_QPS" \
		-l "$SPOOF4" "$BACKEND4")
	printf '%s\n' "$out" >"$RAW/cost-syns.txt"
	sleep 2
	cg_stop syns
	last=$RAW/callgrind-syns.ctr
	_last_dump "$TCPCTD_LOG" >"$last"
	rec callgrind cost syn_sent "$(load_count "$out" sent)"
	rec callgrind cost syn_synacks "$(($(spoof_synacks) - synacks0))"
	rec callgrind cost syn_answered "$(counter "$last" synack_sent)"
	rec callgrind cost syn_packets "$(counter "$last" packets)"
	rec callgrind cost syn_ir "$CG_IR"
	rec callgrind cost syn_ir_run "$CG_RUN"
	say "cost: $(counter "$last" synack_sent) SYN-ACKs sent, worker_packet $CG_IR Ir"
	nsd_stop
}

# ---------------------------------------------------------------------------------
# Run

lab_trap
lab_on_down perf_stop
# quiet: 0 when no other lab's processes used 0.2 CPU s or more in 2 s.
quiet() {
	[ -n "$(other_labs)" ] || return 0
	other_cpu >"$RAW/other.before"
	sleep 2
	other_cpu >"$RAW/other.after"
	awk -v c="$(other_cpu_s "$RAW/other.before" "$RAW/other.after")" 'BEGIN { exit !(c < 0.2) }'
}
if ! quiet; then
	say "other lab runs are busy on this machine ($(other_labs)); waiting up to ${BENCH_WAIT_QUIET:-180} s"
	until_t=$(($(date +%s) + ${BENCH_WAIT_QUIET:-180}))
	until quiet; do
		if [ "$(date +%s)" -ge "$until_t" ]; then
			say "still busy; running anyway (the loads they overlap are marked)"
			break
		fi
	done
fi
say "lab up (LAB=$LAB); cases: ${CASES[*]}; setups: $SETUPS"
lab_up || exit 1
# A second client address, for the legitimate load of the flood case: its tuples are
# then never those of the reuse case (SYNPROXY's conntrack would remember them).
ip -n "$NS_CLIENT" addr add "$LEGIT_SRC/24" dev "$CLIENT_IF" || exit 1
# The namespaces whose processes are this run's (foreign_ticks).
for ns in $LAB_NAMESPACES; do
	OUR_NETNS+=" $(stat -L -c %i "/run/netns/$ns")"
done

{
	echo "date	$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "kernel	$(uname -r)"
	echo "cpus	$(nproc)"
	echo "commit	$BIN_COMMIT"
	echo "binary	sha256 $(sha256sum "$TCPCTD_BIN" | cut -c1-12), built $(date -u -r "$BIN_FROM" '+%Y-%m-%d %H:%M UTC')"
	echo "generator	loadgen (tests/load/loadgen.c) at $(git -C "$TOP" log -1 --format=%h -- tests/load/loadgen.c)"
	echo "nsd	$(nsd -v 2>&1 | awk 'NR == 1 { print $NF }')"
	echo "iperf3	$(iperf3 --version | awk 'NR == 1 { print $2 }')"
	echo "trafgen	$(trafgen --version 2>&1 | awk 'NR == 1 { print $2 }')"
	echo "flood_secs	$FLOOD_SECS"
	echo "legit_qps	$LEGIT_QPS"
	echo "valgrind	$(valgrind --version)"
	echo "iptables	$(iptables --version)"
	echo "rates	$RATES"
	echo "rate_secs	$RATE_SECS"
	echo "nsd_tcp_count	$NSD_TCP_COUNT"
	echo "setups	$SETUPS"
	echo "cases	${CASES[*]}"
} >"$OUT/meta.tsv"

if want_flood; then
	flood_counters_up || exit 1
	calibrate || { lab_log "the generators' calibration failed"; exit 1; }
fi
for s in $SETUPS; do
	want rate || want_flood || want bulk || want reuse || break
	say "== setup $s"
	nsd_start "$NSD_TCP_COUNT" >/dev/null || exit 1
	if want bulk; then
		lab_spawn "$NS_BACKEND" "$RAW/iperf3-$s.log" iperf3 -s -B "$BACKEND4" -p "$BULK_PORT"
		IPERF_PID=$LAB_PID
		wait_port "$NS_BACKEND" "$BACKEND4" "$BULK_PORT" 10 || exit 1
	fi
	setup_up "$s" || { lab_log "setup $s failed"; exit 1; }
	if want rate; then case_rate "$s"; fi
	for c in legit $FLOOD_CASES bulk reuse; do
		if [ "$c" = legit ]; then
			want_flood || continue
		else
			want "$c" || continue
		fi
		around "$s" "$c" case_load "$s" "$c"
	done
	setup_down "$s" || exit 1
	if want bulk; then lab_kill "$IPERF_PID"; fi
	nsd_stop
	sleep "$SETTLE"
done
if want cost; then
	case_cost || say "cost: failed"
fi
echo "elapsed	$(($(date +%s) - T0))" >>"$OUT/meta.tsv"
say "done; writing $OUT/results.md"
/usr/bin/python3 "$HERE/report.py" "$OUT" >"$OUT/results.md" || exit 1
cat "$OUT/results.md"
