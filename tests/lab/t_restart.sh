#!/bin/bash
# A restart loses no connection (issue 32): with --kernel-flows the shield
# carries established connections and keeps them, its maps and the
# workers' tables pinned in a bpf filesystem, while one daemon stops (as
# systemctl restart and a package's upgrade stop it) and the next takes
# them over.  A 20 MiB download at 2 MiB/s and kept DNS connections go on
# across a SIGTERM and a new start, and across a kill -9 and a new start:
# every byte of the download, every answer; the new daemon says how many
# flows it took over.  Then --rules remove (a last stop's) takes the shield
# and its pins away.
#
#   client (curl, dnsconn.py) ── gw (tcpctd, stopped and started) ── backend (http :80, nsd :53)
. "$(dirname "$0")/scenario.sh"

shield_scenario "without the shield the daemon's flows end with it"
lab_up >/dev/null || { not_ok "lab up"; t_summary; exit 1; }
nsd_start >/dev/null && http_start >/dev/null ||
	{ not_ok "nsd and http in the backend"; t_summary; exit 1; }
if [ -z "$LAB_BPF" ]; then
	not_ok "the lab's bpf filesystem is mounted (mount -t bpf)"
	t_summary
	exit
fi
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--protect "$BACKEND4:80" --protect "[$BACKEND6]:80" --kernel-flows yes ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

# The connections that must live through it all.
in_client timeout 60 curl -sg --limit-rate 2M -o "$LAB_DIR/blob4" "$HTTP_URL4" &
curl4=$!
in_client timeout 60 curl -sg --limit-rate 2M -o "$LAB_DIR/blob6" "$HTTP_URL6" &
curl6=$!
in_client /usr/bin/python3 "$HERE/dnsconn.py" "$BACKEND4" query 30 --timeout 20 \
	>"$LAB_DIR/dns4.out" 2>&1 &
dns4=$!
in_client /usr/bin/python3 "$HERE/dnsconn.py" "$BACKEND6" query 30 --timeout 20 \
	>"$LAB_DIR/dns6.out" 2>&1 &
dns6=$!
sleep 2
check "the kernel carries them (flows_carried $(tcpctd_counter flows_carried))" \
	[ "$(tcpctd_counter flows_carried)" -ge 2 ]

# restart HOW: the daemon stopped by HOW (TERM, KILL), then started again
# with the same arguments; TAKEN: what it took over, from its log.
restart() {
	local log=$LAB_DIR/tcpctd.$1.log
	kill -"$1" "$TCPCTD_PID"
	wait "$TCPCTD_PID" 2>/dev/null
	_lab_forget "$TCPCTD_PID"
	TCPCTD_PID=
	sleep 0.5
	: >"$log"
	lab_spawn "$NS_GW" "$log" "$TCPCTD_BIN" "${TCPCTD_ARGS[@]}"
	TCPCTD_PID=$LAB_PID
	TCPCTD_LOG=$log
	TAKEN=
	wait_log "$log" protecting 10 || { cat "$log" >&2; return 1; }
	TAKEN=$(sed -n 's/.*taken over from the daemon before, with \([0-9]*\) flow.*/\1/p' "$log")
}
restart TERM
check "SIGTERM, a new start: it took over the flows ($TAKEN)" [ "${TAKEN:-0}" -ge 4 ]
sleep 2
restart KILL
check "kill -9, a new start: it took over the flows ($TAKEN)" [ "${TAKEN:-0}" -ge 4 ]

wait "$curl4"; rc4=$?
wait "$curl6"; rc6=$?
wait "$dns4" "$dns6"
sum() { sha256sum "$1" 2>/dev/null | awk '{ print $1 }'; }
check "the IPv4 download across both: every byte (curl $rc4)" \
	[ "$rc4" = 0 -a "$(sum "$LAB_DIR/blob4")" = "$HTTP_BLOB_SHA256" ]
check "the IPv6 download across both: every byte (curl $rc6)" \
	[ "$rc6" = 0 -a "$(sum "$LAB_DIR/blob6")" = "$HTTP_BLOB_SHA256" ]
check "the kept DNS connection over IPv4: $(cat "$LAB_DIR/dns4.out")" grep -q '^answers=30 ' "$LAB_DIR/dns4.out"
check "the kept DNS connection over IPv6: $(cat "$LAB_DIR/dns6.out")" grep -q '^answers=30 ' "$LAB_DIR/dns6.out"
answered() { [ -n "$(kdig_answer "$NS_CLIENT" "$1" "$ZONE" SOA)" ]; }
check "a new client after them, IPv4" answered "$BACKEND4"
check "a new client after them, IPv6" answered "$BACKEND6"

# A last stop: the daemon leaves its shield; --rules remove takes it and its
# pins away.
kill -TERM "$TCPCTD_PID"
wait "$TCPCTD_PID" 2>/dev/null
_lab_forget "$TCPCTD_PID"
TCPCTD_PID=
pins=$(find "$LAB_BPF/gw" -mindepth 1 2>/dev/null | wc -l)
check "a stop leaves the pins for a successor ($pins)" [ "$pins" -gt 0 ]
tcpctd_stop
pins=$(find "$LAB_BPF/gw" -mindepth 1 2>/dev/null | wc -l)
filters=$(in_gw tc filter show dev "$GW_IF_CLIENT" ingress 2>/dev/null | grep -c ' name shield ')
check "--rules remove took the shield ($filters) and its pins ($pins) away" \
	[ "$pins" -eq 0 -a "$filters" -eq 0 ]
t_summary
