#!/bin/bash
# Faults (issue 7): tcpctd killed under load, with the rules' two policies;
# the time it takes to protect again; the backend refusing or silent; the
# kernel queue overflowing while tcpctd stalls; a full flow table.  Each
# ends as the README says it does.
#
#   client (dnsload.py, kdig, scapy) ── gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
# SYNs from the client that reach the backend: tcpctd's (after a verified
# handshake) or the client's own (when nothing protects).
in_backend iptables -A INPUT -s "$CLIENT4" -p tcp --dport 53 --syn -j ACCEPT
backend_syns() { rule_packets "$NS_BACKEND" 1; }

# crash WHAT ARGS...: DNS connections one after another for 9 s; tcpctd
# killed with SIGKILL at 2 s, started again at 5 s.  Prints the load's
# lines.  Sets DOWN_SYNS: client SYNs the backend got while it was down,
# and UP_MS: from the new start to "protecting".
crash() {
	local load=$LAB_DIR/load.$1 relog=$LAB_DIR/tcpctd.$1.restart.log t0 pid s0
	shift
	tcpctd_start "$@" || return 1
	in_client /usr/bin/python3 "$HERE/dnsload.py" "$BACKEND4" 9 >"$load" 2>&1 &
	pid=$!
	sleep 2
	SHIELD_BEFORE=$(shield_prog)
	kill -KILL "$TCPCTD_PID"
	wait "$TCPCTD_PID" 2>/dev/null
	_lab_forget "$TCPCTD_PID"
	TCPCTD_PID=
	SHIELD_DOWN=$(shield_prog)
	s0=$(backend_syns)
	sleep 3
	DOWN_SYNS=$(($(backend_syns) - s0))
	t0=$(date +%s%N)
	lab_spawn "$NS_GW" "$relog" "$TCPCTD_BIN" "${TCPCTD_ARGS[@]}"
	TCPCTD_PID=$LAB_PID
	wait_log "$relog" protecting 10
	UP_MS=$((($(date +%s%N) - t0) / 1000000))
	SHIELD_AFTER=$(shield_prog)
	TCPCTD_LOG=$relog
	wait "$pid"
	LOAD=$load
}
# shield_prog: the id of the kernel shield's program on the gateway's client
# side, or nothing.
shield_prog() {
	in_gw tc filter show dev "$GW_IF_CLIENT" ingress 2>/dev/null |
		sed -n 's/.* id \([0-9]*\) name shield .*/\1/p' | head -1
}
# span FROM TO: "ok/all" of the load's connections begun in [FROM, TO) s.
span() {
	awk -v a="$1" -v b="$2" '$1 >= a && $1 < b { n++; if ($2 == "ok") k++ }
		END { printf "%d/%d", k, n }' "$LOAD"
}
all_ok() { [ "${1%/*}" = "${1#*/}" ] && [ "${1#*/}" -gt 0 ]; }
none_ok() { [ "${1%/*}" = 0 ] && [ "${1#*/}" -gt 0 ]; }

# Fail-closed, the default: while nothing reads the queue, its packets
# are dropped; new handshakes wait (and time out), the backend sees none.
crash closed --protect "$BACKEND4:53" --shield auto || not_ok "tcpctd starts"
before=$(span 0 1.9) down=$(span 2.3 4.9) after=$(span 6 9)
check "fail-closed: answered before the kill ($before)" all_ok "$before"
check "... none while tcpctd was down ($down)" none_ok "$down"
check "... and no client SYN reached the backend meanwhile ($DOWN_SYNS)" [ "$DOWN_SYNS" -eq 0 ]
check "... protecting again $UP_MS ms after its start, answered after ($after)" \
	all_ok "$after"
RESTART_MS=$UP_MS
if [ -n "$SHIELD_BEFORE" ]; then
	# A killed daemon cannot take its filter away: it stays, answering
	# SYNs with the keys it had, and the restart puts its own in place.
	check "... its kernel shield stayed through the kill (program $SHIELD_DOWN) and the restart replaced it ($SHIELD_AFTER)" \
		[ "$SHIELD_DOWN" = "$SHIELD_BEFORE" -a -n "$SHIELD_AFTER" -a "$SHIELD_AFTER" != "$SHIELD_BEFORE" ]
fi
# The daemon's own stop, before the rules' removal (which takes a shield
# away too).  One that carries flows in the kernel (--kernel-flows) leaves
# them, and its shield, to the next daemon: --rules remove, a last stop's,
# takes them away.
lab_kill "$TCPCTD_PID" 10
TCPCTD_PID=
if [ -n "$SHIELD_BEFORE" ] && grep -q 'left with its flows' "$TCPCTD_LOG"; then
	check "... a clean stop left it with the flows it carries, for the next daemon ($(shield_prog))" \
		[ -n "$(shield_prog)" ]
	tcpctd_stop
	check "... and --rules remove took it away ($(shield_prog))" [ -z "$(shield_prog)" ]
else
	if [ -n "$SHIELD_BEFORE" ]; then
		check "... and a clean stop took it away ($(shield_prog))" [ -z "$(shield_prog)" ]
	fi
	tcpctd_stop
fi

# --bypass: the rules let traffic through when no tcpctd listens;
# unprotected, straight to the backend, while it is down.
crash open --protect "$BACKEND4:53" --bypass --shield auto || not_ok "tcpctd starts"
# The kernel shield answers SYNs until it has missed the daemon for 1.5 s
# (their ACKs then meet no one): the bypass holds from then on.
down_from=2.3
[ "$(tcpctd_counter shield_interfaces)" -eq 0 ] || down_from=3.8
before=$(span 0 1.9) down=$(span "$down_from" 4.9) after=$(span 6 9)
check "--bypass: answered before the kill ($before)" all_ok "$before"
check "... and while tcpctd was down ($down), unprotected" all_ok "$down"
check "... the client's own SYNs reached the backend ($DOWN_SYNS)" [ "$DOWN_SYNS" -gt 0 ]
s0=$(backend_syns)
out=$(in_client /usr/bin/python3 "$HERE/dnsload.py" "$BACKEND4" 1)
check "... protected again after its restart: answered ($(grep -c ' ok' <<<"$out")), the backend's SYNs tcpctd's" \
	[ "$(grep -vc ' ok' <<<"$out")" -eq 0 ]
tcpctd_stop
echo "# restart to protecting: $RESTART_MS ms (fail-closed), $UP_MS ms (--bypass)"

# one_conn TIMEOUT: one DNS connection from the client; sets OUT to how it
# ended ("ok", "fail answer:Connection_reset_by_peer", ...) and MS.
one_conn() {
	local t0
	t0=$(date +%s%N)
	OUT=$(in_client /usr/bin/python3 "$HERE/dnsload.py" "$BACKEND4" 0.001 --timeout "$1")
	MS=$((($(date +%s%N) - t0) / 1000000))
	OUT=${OUT#* }
}

# The backend refuses (nsd stopped): the client gets a RST at once.
tcpctd_start --protect "$BACKEND4:53" --syn-retries 2 || not_ok "tcpctd starts"
nsd_stop
one_conn 5
out=$OUT
check "backend down: the client is reset after $MS ms ($out), not left to its 5 s timeout" \
	eval '[ "$MS" -lt 1500 ] && grep -q reset <<<"$out"'
check "... counted (backend_refused $(tcpctd_counter backend_refused))" \
	[ "$(tcpctd_counter backend_refused)" -ge 1 ]
nsd_start >/dev/null
check "backend back: answered again" [ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)" ]

# The backend silent (its host drops the SYNs): after --syn-retries 2
# (0.25 + 0.5 + 1 s) the client is reset, not left hanging.
in_backend iptables -I INPUT -p tcp --dport 53 --syn -j DROP
one_conn 8
out=$OUT
check "backend silent: the client is reset after $MS ms of SYN retries ($out), not left to its 8 s timeout" \
	eval '[ "$MS" -lt 4000 ] && grep -q reset <<<"$out"'
in_backend iptables -D INPUT -p tcp --dport 53 --syn -j DROP
check "backend answering again: answered" [ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)" ]
tcpctd_stop

# syns100: 100 SYNs from the client, each from a port of its own.
syns100() {
	in_client timeout 20 /usr/bin/python3 - "$BACKEND4" <<'PY'
import sys
from scapy.all import IP, TCP, send, conf
conf.verb = 0
send([IP(dst=sys.argv[1]) / TCP(sport=45000 + i, dport=53, flags="S", seq=i) for i in range(100)])
PY
}
# stall ARGS...: tcpctd with a SYN queue of 16, stopped (SIGSTOP) while
# 100 SYNs come.  Sets PASSED (SYNs at the backend), DROPPED (by the full
# queue) and ANSWERED (SYN-ACKs sent once it went on).
stall() {
	local s0
	# The daemon's queue is what is tested: without the kernel shield,
	# which would answer these SYNs itself (checked at the end).
	TCPCTD_SHIELD=no tcpctd_start --protect "$BACKEND4:53" --queue-maxlen 16 \
		--control-socket "$LAB_DIR/ctl.sock" "$@" >/dev/null || return 1
	s0=$(backend_syns)
	kill -STOP "$TCPCTD_PID"
	syns100
	sleep 0.5
	PASSED=$(($(backend_syns) - s0))
	kill -CONT "$TCPCTD_PID"
	sleep 0.5
	read -r DROPPED ANSWERED < <(tcpctl_eval "$LAB_DIR/ctl.sock" \
		"'%d %d' % (sum(v for k, v in d.items() if k.endswith('_dropped_full')), synack_sent)")
}
# The client's kernel would answer the SYN-ACKs with RSTs.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP
stall || not_ok "tcpctd starts"
check "queue full, fail-closed: $DROPPED of 100 SYNs dropped by the kernel, counted" \
	[ "$DROPPED" -ge 80 ]
check "... none reached the backend ($PASSED), the $ANSWERED queued were answered" \
	[ "$PASSED" -eq 0 -a "$ANSWERED" -ge 1 -a $((ANSWERED + DROPPED)) -eq 100 ]
tcpctd_stop
stall --fail-open || not_ok "tcpctd starts"
check "queue full, --fail-open: $PASSED of 100 SYNs passed to the backend unprotected" \
	[ "$PASSED" -ge 80 -a $((PASSED + ANSWERED)) -eq 100 ]
tcpctd_stop
# With the kernel shield (where it loads), the SYNs of a stopped daemon
# are answered all the same, and none is queued.
tcpctd_start --protect "$BACKEND4:53" --queue-maxlen 16 --shield auto || not_ok "tcpctd starts"
if [ "$(tcpctd_counter shield_interfaces)" -gt 0 ]; then
	s0=$(backend_syns)
	kill -STOP "$TCPCTD_PID"
	syns100
	sleep 0.5
	kill -CONT "$TCPCTD_PID"
	answered=$(tcpctd_counter shield/synack_sent) queued=$(queue_packets 1)
	check "queue full, shield: all 100 SYNs of a stopped daemon answered in the kernel ($answered), none queued ($queued), none at the backend ($(($(backend_syns) - s0)))" \
		[ "$answered" -eq 100 -a "${queued:-0}" -eq 0 -a "$(backend_syns)" -eq "$s0" ]
else
	ok "queue full, shield: # SKIP the kernel shield is off ($TCPCTD_BIN)"
fi
tcpctd_stop
in_client iptables -D OUTPUT -p tcp --tcp-flags RST RST -j DROP

# A full flow table (16 entries): 16 connections querying away, and a
# seventeenth client, verified, is reset at once; the 16 lose nothing.
tcpctd_start --protect "$BACKEND4:53" --flows 16 || not_ok "tcpctd starts"
pids=()
for i in $(seq 16); do
	in_client /usr/bin/python3 "$HERE/dnsconn.py" "$BACKEND4" query 10 --timeout 10 \
		>"$LAB_DIR/conn.$i" 2>&1 &
	pids+=($!)
done
sleep 1
one_conn 5
out=$OUT
wait "${pids[@]}"
full=$(tcpctd_counter flow_full)
check "table full: the seventeenth client reset after $MS ms ($out; flow_full $full)" \
	eval '[ "$MS" -lt 1500 -a "$full" -ge 1 ] && grep -q reset <<<"$out"'
got=$(cat "$LAB_DIR"/conn.* | grep -c '^answers=10 ')
check "... the 16 in the table: all answered, 10 queries each ($got of 16)" [ "$got" -eq 16 ]

tcpctd_finish
t_summary
