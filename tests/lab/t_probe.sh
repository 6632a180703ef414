#!/bin/bash
# Backend probes never hold up the main loop: ten silent backends (no host
# answers for them: their connects time out) and nsd.  tcpctd starts in
# about one probe timeout, not ten; tcpctl answers at once while the
# probes are in flight; each backend is up or down in tcpctl status and
# the metrics, and a change is logged: nsd stopped goes down, started
# again comes up.
#
#   gw (tcpctd: 192.0.2.2:53 and 192.0.2.50-59:53) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
ctl() { in_gw "$TCPCTL_BIN" -s "$SOCK" "$@"; }
silent=()
for i in $(seq 50 59); do
	silent+=(--protect "192.0.2.$i:53")
done

t0=$(date +%s%N)
tcpctd_start --protect "$BACKEND4:53" "${silent[@]}" --control-socket "$SOCK" \
	--probe-interval 1 || { not_ok "tcpctd starts"; t_summary; exit 1; }
ms=$((($(date +%s%N) - t0) / 1000000))
check "started in $ms ms with ten silent backends (their probes at once: < 3000)" \
	[ "$ms" -lt 3000 ]

out=$(ctl status)
check "status: nsd's backend up, with its profile" \
	grep -q "^$BACKEND4:53 (dns): up; mss 14[0-9]0" <<<"$out"
check "status: the ten silent ones down ($(grep -c ': down; ' <<<"$out"))" \
	[ "$(grep -c ': down; ' <<<"$out")" -eq 10 ]
check "logged once each: down (timed out)" \
	[ "$(grep -c 'backend 192.0.2.5[0-9]:53: down (Connection timed out)' "$TCPCTD_LOG")" -eq 10 ]

# Probes of the silent ten are in flight most of the time now (every
# second, a second each): tcpctl is answered meanwhile all the same.
slow=0
for _ in $(seq 10); do
	t0=$(date +%s%N)
	ctl status >/dev/null || slow=$((slow + 1000))
	t=$((($(date +%s%N) - t0) / 1000000))
	[ "$t" -le "$slow" ] || slow=$t
	sleep 0.2
done
check "tcpctl status answered within 300 ms while probes are in flight (slowest $slow ms)" \
	[ "$slow" -lt 300 ]

# up ADDR:PORT: tcpctd_backend_up of that service (named by its one backend).
up() { tcpctl_metric "$SOCK" "tcpctd_backend_up{service=\"$1\",backend=\"$1\"}"; }
check "metrics: tcpctd_backend_up 1 for nsd, 0 for a silent one" \
	[ "$(up "$BACKEND4:53")" = 1 -a \
	  "$(up 192.0.2.50:53)" = 0 ]

nsd_stop
wait_until 5 grep -q "backend $BACKEND4:53: down (Connection refused)" "$TCPCTD_LOG"
check "nsd stopped: down in the log (refused)" \
	grep -q "backend $BACKEND4:53: down (Connection refused)" "$TCPCTD_LOG"
check "... in status and the metrics" \
	eval 'ctl status | grep -q "^$BACKEND4:53 (dns): down; mss 14[0-9]0" &&
	      [ "$(up "$BACKEND4:53")" = 0 ]'
nsd_start 100 >/dev/null || not_ok "nsd starts again"
wait_until 8 grep -q "backend $BACKEND4:53: up again" "$TCPCTD_LOG"
check "nsd started again: up again in the log, status and metrics" \
	eval 'grep -q "backend $BACKEND4:53: up again" "$TCPCTD_LOG" &&
	      ctl status | grep -q "^$BACKEND4:53 (dns): up; " &&
	      [ "$(up "$BACKEND4:53")" = 1 ]'
check "and answers through tcpctd" \
	[ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" SOA)" ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
