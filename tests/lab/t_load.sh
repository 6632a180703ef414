#!/bin/bash
# Load through tcpctd with loadgen (one kernel TCP connection per DNS query):
#  - 50,000 connections at up to 10,000/s from 198.18.0.0/15, made within
#    10 s and answered >= 99.9 %;
#  - 80,000 queries at up to 10,000/s from one client address, made within
#    16 s, so that its 64,512 source ports wrap and tuples in TIME_WAIT are
#    reused (tcp_tw_reuse), answered >= 99.9 %, and none refused by the
#    default per-client caps:
#    a busy resolver has dozens of connections open at any instant, each
#    for a few ms; the caps count only those without a whole query yet,
#    and over them tcpctd takes a connection with its query instead of
#    its handshake's ACK (deferred_pending_addr), refusing none.
#
#   client (loadgen, own address) ── gw (tcpctd) ── backend (nsd)
#   attacker (loadgen -l 198.18.0.0/15) ─┘
. "$(dirname "$0")/scenario.sh"

# Two nsd servers with their own listening sockets (SO_REUSEPORT), as an
# operator would run it for 10k conn/s: one process's accept queue (nsd's
# backlog is 256) overflows whenever a busy 2-core machine leaves it off
# the CPU for 25 ms, and the backend drops the SYNs then.
NSD_SERVERS=2 NSD_EXTRA_CONF="	reuseport: yes" lab_with_nsd 1000
# The per-client caps are the defaults, which refuse no client that asks
# (t_policy.sh has them set); the SYN-ACK cap (10,000/s per /24) is off,
# as a load from one /24 at its rate would meet it.  nsd takes 1000
# connections.
TCPCTD_NICE=-10 tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --backend-max 1000 \
	--synack-rate 0 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

# 10,000 connections/s is what these two cores can carry with the load
# generator, the gateway and the backend all on them: the generator falls
# behind a little or a lot with the machine.  So the two big loads are
# counts, offered at up to that rate and made within twice their time:
# what they check is that every connection made is answered, and a rate
# of at least half, not the machine's speed on the day.

# load_check DESC MIN_PCT MIN_SENT NS ARGS...: run loadgen in NS, check that it made at
# least MIN_SENT connections and MIN_PCT % of them were answered.
load_check() {
	local desc=$1 min=$2 min_sent=$3 ns=$4 out sent replies rc=0
	shift 4
	out=$(loadgen "$ns" "$@") || rc=$?
	sent=$(load_count "$out" sent)
	replies=$(load_count "$out" answered)
	if [ "$rc" -eq 0 ] && [ "$sent" -ge "$min_sent" ] &&
		awk -v r="$replies" -v s="$sent" -v m="$min" 'BEGIN { exit !(r * 100 >= s * m) }'; then
		ok "$desc: $replies of $sent answered, in $(load_count "$out" duration) s"
	else
		not_ok "$desc" "$replies of $sent answered; loadgen (exit $rc): $(load_brief "$out")"
	fi
	# What tcpctd saw (counters since its start): SYNs the backend
	# dropped (its accept queue full), flows given up on, the queues'
	# overflows, and the backend's own count.
	local c line=
	for c in syn synack_sent ack_verified replaced backend_syn \
		backend_synack backend_syn_retrans backend_challenge \
		held_unacked backlog_queued backlog_timeout flow_full \
		queue_rx_enobufs cookie_bad cookie_expired cookie_no_key \
		flows_active shield_ack_marked shield_pass_flow \
		shield_map_errors shield_unreadable; do
		line="$line $c=$(tcpctd_counter $c)"
	done
	echo "#  tcpctd:$line"
	echo "#  backend:$(in_backend nstat -azs TcpExtListenOverflows 2>/dev/null |
		awk '/^Tcp/ { printf " %s=%s", $1, $2 }'); queues (id waiting dropped user_dropped):$(in_gw awk '{ printf " %s %s %s %s", $1, $3, $6, $7 }' /proc/net/netfilter/nfnetlink_queue)"
}

load_check "50,000 connections at up to 10k/s from $SPOOF4 (IPv4)" 99.9 49000 "$NS_ATTACKER" \
	-n 50000 -t 10 -r 10000 -i "$LAB_QUERIES" -l "$SPOOF4" "$BACKEND4"
sleep 1
refused0=$(tcpctd_refused)
load_check "80,000 queries at up to 10k/s from one address, ports wrap (IPv4)" 99.9 78000 \
	"$NS_CLIENT" -n 80000 -t 16 -r 10000 -i "$LAB_QUERIES" "$BACKEND4"
refused=$(tcpctd_refused)
check "up to 10k conn/s from one address: none refused by the default per-client caps (${refused#* })" \
	[ "${refused%% *}" -eq "${refused0%% *}" ]
sleep 1
load_check "5k conn/s for 4 s from $SPOOF6 (IPv6)" 99.9 19500 "$NS_ATTACKER" \
	-t 4 -r 5000 -i "$LAB_QUERIES" -l "$SPOOF6" "$BACKEND6"
sleep 1
load_check "5k conn/s for 4 s from one address (IPv6)" 99.9 19500 "$NS_CLIENT" \
	-t 4 -r 5000 -i "$LAB_QUERIES" "$BACKEND6"
check "no verified handshake refused for a full table" \
	[ "$(tcpctd_counter flow_full)" -eq 0 ]
refused=$(tcpctd_refused)
check "no verified client refused by a per-client cap in any load (${refused#* })" \
	[ "${refused%% *}" -eq 0 ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
