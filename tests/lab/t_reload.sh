#!/bin/bash
# A reload (tcpctl reload, then the rules installed again, as the unit's
# ExecReload does; and SIGHUP) while a DNS connection asks a query every
# 0.3 s and a 20 MiB HTTP download runs: both go on intact, a service added
# to the file is protected from then on, a changed limit applies, and a file
# that does not parse, that drops a service or that changes what only a
# restart can is refused with the running configuration kept.
#
#   client (dnsconn.py, curl, socat) ── gw (tcpctd -c FILE) ── backend
#                                                   (nsd, HTTP, socat on 9001)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
http_start >/dev/null || { not_ok "http server"; t_summary; exit 1; }
lab_spawn "$NS_BACKEND" "$LAB_DIR/hi.log" socat \
	"TCP4-LISTEN:9001,bind=$BACKEND4,reuseaddr,fork" SYSTEM:'echo hi'
wait_port "$NS_BACKEND" "$BACKEND4" 9001 10 || not_ok "a server on 9001"

CONF=$LAB_DIR/tcpctd.conf
SOCK=$LAB_DIR/tcpctd.sock
ctl() { in_gw "$TCPCTL_BIN" -s "$SOCK" "$@"; }
write_conf() {	# write_conf [EXTRA SERVICE SECTION LINES...]
	{
		printf '[tcpctd]\ncontrol-socket = %s\n\n' "$SOCK"
		printf '[service dns]\nprotect = %s:53\nprotect = [%s]:53\n' \
			"$BACKEND4" "$BACKEND6"
		printf 'idle-timeout = %s\n\n' "${IDLE:-10}"
		printf '[service web]\nprotect = %s:80\nkind = generic\n\n' "$BACKEND4"
		printf '%s\n' "$@"
	} >"$CONF"
}
# reload_as_the_unit: what ExecReload does; the daemon's answer.
reload_as_the_unit() {
	ctl reload && in_gw "$TCPCTD_BIN" -c "$CONF" --rules install >/dev/null
}
hi() { in_client timeout 5 socat -T 3 - "TCP4:$BACKEND4:9001,connect-timeout=3" </dev/null 2>/dev/null; }

write_conf
tcpctd_start -c "$CONF" || { not_ok "tcpctd starts"; t_summary; exit 1; }

v0=$(tcpctd_counter ack_verified)
check "before: port 9001 answers, not through tcpctd" [ "$(hi)" = hi ]
check "... which verified nothing for it ($v0 -> $(tcpctd_counter ack_verified))" \
	[ "$(tcpctd_counter ack_verified)" -eq "$v0" ]

# The load across the reload.
in_client /usr/bin/python3 "$HERE/dnsconn.py" "$BACKEND4" query 20 --timeout 12 \
	>"$LAB_DIR/dns.out" 2>&1 &
DNS_PID=$!
in_client curl -s --limit-rate 5M -o "$LAB_DIR/blob" "$HTTP_URL4" &
CURL_PID=$!
sleep 1.5

IDLE=3 write_conf '[service hi]' "protect = $BACKEND4:9001" 'kind = generic'
out=$(reload_as_the_unit 2>&1)
check "reload: $out" grep -q '^reloaded: 4 services, 1 new' <<<"$out"
check "the new service is in status, probed at the reload" grep -q "^$BACKEND4:9001 (generic, service hi): up; mss" <<<"$(ctl status)"
v0=$(tcpctd_counter ack_verified)
check "after: port 9001 answers through tcpctd now" [ "$(hi)" = hi ]
check "... verified by cookie ($v0 -> $(tcpctd_counter ack_verified))" \
	[ "$(tcpctd_counter ack_verified)" -gt "$v0" ]
check "... counted under the service's name and backend: hi/$BACKEND4:9001/verified_classic" \
	[ "$(tcpctd_counter "hi/$BACKEND4:9001/verified_classic")" -ge 1 ]

wait "$CURL_PID"; rc=$?
got=$(sha256sum <"$LAB_DIR/blob" | awk '{ print $1 }')
check "the HTTP download across the reload: intact (curl $rc)" \
	[ "$rc.$got" = "0.$HTTP_BLOB_SHA256" ]
wait "$DNS_PID"
check "the DNS connection across the reload: $(cat "$LAB_DIR/dns.out")" \
	grep -q '^answers=20 ' "$LAB_DIR/dns.out"
# (A client that asks, then falls silent: one that never asks is nothing
# to the shield's gateway until it does.)
out=$(in_client /usr/bin/python3 "$HERE/dnsconn.py" "$BACKEND4" query 1 --timeout 8)
check "the changed limit applies: a client silent after its answer is reset after the new idle-timeout, 3 s ($out)" \
	awk -v o="$out" 'BEGIN { split(o, f, "after="); exit !(o ~ /^answers=1 end=reset/ && f[2] >= 2.9 && f[2] < 4.5) }'

# Refused, and the running configuration kept: a line that does not parse,
# a change only a restart can make, a service gone.
cp "$CONF" "$LAB_DIR/good.conf"
printf '[service dns]\nidle-timeout = soon\n' >>"$CONF"
out=$(ctl reload 2>&1); rc=$?
check "a bad line: refused, FILE:LINE named (status $rc): $(head -1 <<<"$out")" \
	refused $rc "$out" "tcpctd.conf:[0-9]*: error: .*idle-timeout"
sed 's/^\[tcpctd\]$/[tcpctd]\nqueues = 2/' "$LAB_DIR/good.conf" >"$CONF"
out=$(ctl reload 2>&1); rc=$?
check "queues changed: refused, a restart named (status $rc)" \
	refused $rc "$out" "queues changed: that needs a restart"
write_conf
out=$(ctl reload 2>&1); rc=$?
check "a service gone: refused (status $rc)" \
	refused $rc "$out" "^error: $BACKEND4:9001 (service hi) is gone"
metric() { tcpctl_metric "$SOCK" "$1"; }
check "the metrics: the last reload refused, three refused in all" \
	[ "$(metric tcpctd_config_last_reload_successful)" = 0 -a \
	  "$(metric 'tcpctd_reloads_total{result="refused"}')" = 3 ]
cp "$LAB_DIR/good.conf" "$CONF"
check "... and all the while the running one stayed: 4 services" \
	[ "$(ctl -j status | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["services"]))')" = 4 ]
check "... and answers" [ "$(hi)" = hi ]

# SIGHUP does the same.
IDLE=3 write_conf '[service hi]' "protect = $BACKEND4:9001" 'kind = generic' \
	'[service hi6]' "protect = [$BACKEND6]:9001" 'kind = generic'
kill -HUP "$TCPCTD_PID"
check "SIGHUP: reloaded, the log says" wait_until 5 grep -q 'reloaded: 5 services, 1 new' "$TCPCTD_LOG"
check "the metrics: the last reload taken, two in all, just now" \
	[ "$(metric tcpctd_config_last_reload_successful)" = 1 -a \
	  "$(metric 'tcpctd_reloads_total{result="taken"}')" = 2 -a \
	  $(($(date +%s) - $(metric tcpctd_config_last_reload_success_timestamp_seconds))) -lt 10 ]

check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
