#!/bin/bash
# tcpctl over the control socket, and the metrics: status, stats and
# backends for a person and as JSON, the Prometheus exposition from tcpctl
# and in the node_exporter textfile, parsed by prometheus_client's own
# parser; errors; the socket's mode; one daemon per socket; systemd's
# notifications and watchdog, which a client trickling its request does not
# stop, nor tcpctl's answers to others, nor 16 tcpctl flows at once.
#
#   client (kdig) ── gw (tcpctd, tcpctl) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
PROM=$LAB_DIR/tcpctd.prom
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--control-socket "$SOCK" --metrics-file "$PROM" --metrics-interval 1 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
ctl() { in_gw "$TCPCTL_BIN" -s "$SOCK" "$@"; }

n=0
for i in 1 2 3; do
	[ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" SOA)" ] && n=$((n + 1))
	[ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND6" "$ZONE" SOA)" ] && n=$((n + 1))
done
check "6 queries answered through tcpctd ($n)" [ "$n" -eq 6 ]

check "the socket is the daemon's and its group's: $(stat -c %a "$SOCK")" \
	[ "$(stat -c %a "$SOCK")" = 660 ]

out=$(ctl status)
echo "$out" | sed 's/^/#  /'
check "status: version, pid and flows" \
	grep -q "^tcpctd .*, pid $TCPCTD_PID, up" <<<"$out"
check "status: the keys, by the id of the secret" \
	grep -Eqx 'keys: a random secret, id [0-9a-f]{8}' <<<"$out"
check "status: both services, their backends probed" \
	[ "$(grep -Ec ' \(dns\): up; mss 14[0-9]0, wscale yes' <<<"$out")" -eq 2 ]

# JSON, read by Python's own parser.
json_check() {	# DESC PYTHON-EXPR: the expression over `d`, the answer
	local desc=$1 expr=$2 got
	shift 2
	got=$(ctl -j "$@" | /usr/bin/python3 -c "import json, sys; d = json.load(sys.stdin); print(bool($expr))" 2>&1)
	check "$desc ($got)" [ "$got" = True ]
}
json_check "status -j: services, profiles, the flow table" \
	"len(d['services']) == 2 and all(s['profiled'] and s['mss'] >= 1440 and s['kind'] == 'dns' for s in d['services']) and d['flows_capacity'] == 65536 and d['pid'] == $TCPCTD_PID" \
	status
json_check "backends -j: as in status" \
	"[s['name'] for s in d] == ['$BACKEND4:53', '[$BACKEND6]:53']" backends
verified=$(tcpctd_counter ack_verified)
json_check "stats -j: every counter, as in the text ($verified verified)" \
	"d['ack_verified'] + d.get('shield/ack_verified', 0) == $verified and d['syn'] + d.get('shield/syn', 0) >= 6 and 'flows_released_done' in d and 'kernel_queue0_waiting' in d" \
	stats
printf '[tcpctd]\ninclude = ctl.d/*.conf\n' >"$LAB_DIR/ctl.conf"
mkdir -p "$LAB_DIR/ctl.d"
printf 'control-socket = %s\n' "$SOCK" >"$LAB_DIR/ctl.d/socket.conf"
check "tcpctl -c FILE: the socket the configuration names (in what it includes)" \
	eval 'in_gw "$TCPCTL_BIN" -c "$LAB_DIR/ctl.conf" status | grep -q "^tcpctd .*, pid $TCPCTD_PID, up"'
check "stats: a counter a line, with what it counts" \
	grep -Eq '^ack_verified +[0-9]+  [a-z]' <<<"$(ctl stats)"
check "stats: a service's counters named after its backend" \
	grep -Eq "^\\[$BACKEND6\\]:53/verified_classic +[1-9][0-9]*  [a-z]" <<<"$(ctl stats)"
json_check "stats -j: each backend's counters in services, by name" \
	"[(s['service'], s['backend']) for s in d['services']] == [('$BACKEND4:53', '$BACKEND4:53'), ('[$BACKEND6]:53', '[$BACKEND6]:53')] and all(s['verified_classic'] >= 3 and s['backend_up'] == 1 for s in d['services']) and not any(k.startswith('service') for k in d if k != 'services')" \
	stats

# flows: a connection in the middle of its queries, as each worker holds it.
in_client /usr/bin/python3 "$HERE/dnsconn.py" "$BACKEND4" query 10 --timeout 5 \
	>/dev/null 2>&1 &
DNS_PID=$!
sleep 1
out=$(ctl flows)
echo "$out" | grep established | sed 's/^/#  /'
check "flows: the connection, established, its translation shown" \
	grep -Eq "^$CLIENT4:[0-9]+ > $BACKEND4:53  established  cookie  .* seq \+[0-9a-f]{8}  ts \+[0-9a-f]{8}  wscale [0-9]+/[0-9]+/[0-9]+  mss 1460" <<<"$out"
json_check "flows -j: the same, with the totals" \
	"any(f['backend'] == '$BACKEND4:53' and f['state'] == 'established' and f['queries'] >= 1 and f['mss'] == 1460 for f in d['flows']) and d['total'] >= len(d['flows']) >= 1" \
	flows
wait "$DNS_PID"

# The Prometheus exposition: tcpctl's, and the textfile's.
PARSE='
import sys, time
from prometheus_client.parser import text_string_to_metric_families
text = sys.stdin.read()
fams = {f.name: f for f in text_string_to_metric_families(text)}
def value(name, **labels):
    for f in fams.values():
        for s in f.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None
checks = [
    fams["tcpctd_ack_verified"].type == "counter",
    value("tcpctd_ack_verified_total") >= 6,
    fams["tcpctd_flows_active"].type == "gauge",
    value("tcpctd_flows_released_total", reason="done") is not None,
    value("tcpctd_backend_profiled", service=sys.argv[1]) == 1,
    value("tcpctd_service_verified_total", service=sys.argv[1], dialect="classic") >= 3,
    value("tcpctd_service_verified_total", service=sys.argv[1], dialect="tcpct") == 0,
    value("tcpctd_service_synacks_total", service=sys.argv[1], dialect="tfo") == 0,
    value("tcpctd_service_segments_total", service=sys.argv[1], direction="to_backend") >= 6,
    value("tcpctd_service_segments_total", service=sys.argv[1], direction="to_client") >= 6,
    value("tcpctd_parse_drops_total", reason="fragment") is not None,
    value("tcpctd_kernel_queue_waiting", queue="0") is not None,
    value("tcpctd_kernel_queue_packets_total", queue="0") > 0,
    value("tcpctd_flows_capacity") == 65536,
    value("tcpctd_backend_up", service=sys.argv[1]) == 1,
    value("tcpctd_build_info", version=sys.argv[2]) == 1,
    0 < time.time() - value("tcpctd_start_time_seconds") < 600,
    value("tcpctd_config_last_reload_successful") == int(sys.argv[3]),
    value("tcpctd_config_last_reload_success_timestamp_seconds") >= value("tcpctd_start_time_seconds"),
    value("tcpctd_reloads_total", result="refused") == int(sys.argv[4]),
    value("tcpctd_control_dropped_total", reason="deadline") == 0,
    value("tcpctd_control_dropped_total", reason="full") == 0,
    "tcpctd_flows_table_full" not in fams,	# one family per concept: flow_full
]
names = [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE")]
checks.append(len(names) == len(set(names)))	# each family once
print(len(fams), "families", "ok" if all(checks) else "failed: %s" % checks)
'
VERSION=$("$TCPCTD_BIN" -V | awk '{ print $2 }')
got=$(ctl metrics | /usr/bin/python3 -c "$PARSE" "$BACKEND4:53" "$VERSION" 1 0 2>&1)
check "tcpctl metrics: parsed by prometheus_client ($got)" grep -q ' ok$' <<<"$got"
wait_until 3 [ -s "$PROM" ]
got=$(/usr/bin/python3 -c "$PARSE" "$BACKEND4:53" "$VERSION" 1 0 <"$PROM" 2>&1)
check "the textfile for node_exporter: the same ($got)" grep -q ' ok$' <<<"$got"
m0=$(stat -c %y "$PROM")
check "... written again every second" wait_until 4 eval '[ "$(stat -c %y "$PROM")" != "$m0" ]'
check "... and never half: no temporary file left" [ ! -e "$PROM.tmp" ]

# Errors: on standard error, with status 1.
err=$(ctl flush 2>&1 >/dev/null); rc=$?
check "an unknown command: status 1, said on stderr ($err)" \
	refused $rc "$err" "^error: unknown command 'flush'"
out=$(ctl -j metrics); rc=$?
check "tcpctl -j metrics: the counters in JSON, as -j stats gives them" \
	eval '[ $rc -eq 0 ] && /usr/bin/python3 -c "import json, sys; d = json.load(sys.stdin); sys.exit(not d)" <<<"$out" &&
	      [ "$(ctl -j stats | /usr/bin/python3 -c "import json, sys; print(sorted(json.load(sys.stdin)))")" = \
	        "$(/usr/bin/python3 -c "import json, sys; print(sorted(json.load(sys.stdin)))" <<<"$out")" ]'
err=$(ctl -j reload 2>&1 >/dev/null); rc=$?
check "reload has no JSON form: status 1" refused $rc "$err" '^error:'
out=$(in_gw "$TCPCTL_BIN" --version); rc=$?
check "tcpctl --version ($out)" eval '[ $rc -eq 0 ] && grep -q "^tcpctl [0-9]" <<<"$out"'
out=$(in_gw "$TCPCTL_BIN" --help); rc=$?
check "tcpctl --help: the usage on stdout, status 0" eval '[ $rc -eq 0 ] && grep -q "^usage: tcpctl" <<<"$out"'
err=$(in_gw "$TCPCTD_BIN" --tcp no -t --protect "$BACKEND4:53" 2>&1); rc=$?
check "tcpctd --tcp (a prefix of three options): refused, status 2" \
	eval '[ $rc -eq 2 ] && grep -q "spelled whole" <<<"$err"'
out=$(in_gw "$TCPCTD_BIN" --idle-timeout 2m --gso on --tfo False -t --protect "$BACKEND4:53"); rc=$?
check "times with units, switches in any spelling ($out)" \
	eval '[ $rc -eq 0 ] && [ "$out" = "configuration OK" ]'
out=$(in_gw "$TCPCTD_BIN" -V); rc=$?
check "tcpctd -V ($out)" eval '[ $rc -eq 0 ] && grep -q "^tcpctd [0-9]" <<<"$out"'
err=$(in_gw "$TCPCTL_BIN" -s "$LAB_DIR/none.sock" status 2>&1); rc=$?
check "no daemon there: status 1 ($err)" [ $rc -eq 1 ]

# One daemon per socket: a second one on it does not start, the first
# keeps it.
err=$(in_gw timeout 10 "$TCPCTD_BIN" --protect "$BACKEND4:53" --queue-base 8 \
	--control-socket "$SOCK" 2>&1); rc=$?
check "a second tcpctd on the socket is refused ($(tail -1 <<<"$err"))" \
	refused $rc "$err" 'another tcpctd answers there'
check "... and the first still answers on it" eval 'ctl status >/dev/null'

check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
check "its socket is gone with it" [ ! -e "$SOCK" ]

# systemd's notification protocol (sd_notify, Type=notify): a datagram
# socket stands for systemd's, the environment for the unit's
# WatchdogSec=400ms.
NOTIFY=$LAB_DIR/notify.sock
lab_spawn "$NS_GW" "$LAB_DIR/notify.log" /usr/bin/python3 -u -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
while True:
    try:
        d = s.recv(4096).decode()
    except socket.timeout:
        break
    print("%.3f %s" % (time.monotonic(), d.replace("\n", " ")))
    if "STOPPING=1" in d:
        break
' "$NOTIFY"
NOTIFY_PID=$LAB_PID
wait_until 5 [ -S "$NOTIFY" ] || not_ok "the notify socket is there"
rm -f "$PROM"
NOTIFY_SOCKET=$NOTIFY WATCHDOG_USEC=400000 tcpctd_start \
	--protect "$BACKEND4:53,max-pending-per-addr=0,max-per-addr=1000" \
	--control-socket "$SOCK" --metrics-file "$PROM" --metrics-interval 1 ||
	not_ok "tcpctd starts under the watchdog"
sleep 2
check "READY=1 once its queues are bound, with a status" \
	grep -q 'READY=1 STATUS=protecting 1 service' "$LAB_DIR/notify.log"
pings=$(grep -c 'WATCHDOG=1' "$LAB_DIR/notify.log")
check "WATCHDOG=1 at half the interval: $pings in 2 s" [ "$pings" -ge 6 ]
check "... still answering meanwhile" [ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" SOA)" ]

# A control client that trickles its request, a byte every 0.5 s, again
# and again for 6 s: each connection has one second for its whole line and
# is cut there; meanwhile tcpctl answers at once, the watchdog's pings and
# the metrics file go on (the main loop served a client a second a read, so
# such a client held it, past WatchdogSec, and systemd restarted it).
lab_spawn "$NS_GW" "$LAB_DIR/trickle.log" /usr/bin/python3 -u -c '
import select, socket, sys, time
REQ = b"status      \n"	# 13 bytes: 6 s
def trickle(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    c0 = time.monotonic()
    try:
        for i, b in enumerate(REQ):
            s.send(bytes([b]))
            if select.select([s], [], [], 0.5 if i < len(REQ) - 1 else 2)[0]:
                return "answered" if s.recv(4096) else "cut", time.monotonic() - c0
    except OSError:
        return "cut", time.monotonic() - c0
    finally:
        s.close()
    return "ignored", time.monotonic() - c0
t0 = time.monotonic()
print("start %.3f" % t0)
while time.monotonic() - t0 < 6:
    print("%s %.3f" % trickle(sys.argv[1]))
print("end %.3f" % time.monotonic())
' "$SOCK"
TRICKLE_PID=$LAB_PID
wait_log "$LAB_DIR/trickle.log" '^start' 5 || not_ok "the trickling client starts"
asked=0 answered=0 slowest=0 mtimes=()
while _lab_alive "$TRICKLE_PID"; do
	t=$(date +%s%N)
	ctl status >/dev/null && answered=$((answered + 1))
	t=$((($(date +%s%N) - t) / 1000000))
	asked=$((asked + 1))
	[ "$t" -le "$slowest" ] || slowest=$t
	mtimes+=("$(stat -c %y "$PROM")")
	sleep 0.1
done
lab_kill "$TRICKLE_PID"
sed 's/^/#  trickle: /' "$LAB_DIR/trickle.log"
# all_cut LOG: every connection of LOG cut at its deadline, 1 s (and a
# little: the loop's turn, the client's wake-up).
all_cut() {
	grep -v '^start\|^end' "$1" |
		awk '$1 != "cut" || $2 < 0.9 || $2 > 1.3 { bad = 1 } END { exit bad }'
}
cuts=$(grep -c '^cut ' "$LAB_DIR/trickle.log")
check "the trickling client cut at its deadline, each time ($cuts times, $(grep -vc '^cut \|^start\|^end' "$LAB_DIR/trickle.log") not)" \
	eval '[ "$cuts" -ge 4 ] && all_cut "$LAB_DIR/trickle.log"'
check "... tcpctl status answered meanwhile, every time at once ($answered of $asked, the slowest in $slowest ms)" \
	eval '[ "$asked" -ge 10 ] && [ "$answered" -eq "$asked" ] && [ "$slowest" -lt 300 ]'
# pings LOG: the watchdog's pings between LOG's start and end lines (their
# monotonic times), and the longest gap between two, in ms.
pings() {
	/usr/bin/python3 -c '
import sys
t0, t1 = (float(l.split()[1]) for l in open(sys.argv[1]) if l.startswith(("start", "end")))
ts = [float(l.split()[0]) for l in open(sys.argv[2]) if "WATCHDOG=1" in l]
points = [t0] + [t for t in ts if t0 < t < t1] + [t1]
print("%d %d" % (len(points) - 2, 1000 * max(b - a for a, b in zip(points, points[1:]))))
' "$1" "$LAB_DIR/notify.log"
}
got=$(pings "$LAB_DIR/trickle.log")
# Pinged every 200 ms, never more than 100 ms late for the clients.
check "... the watchdog pinged on: ${got% *} pings, none more than ${got#* } ms apart (every 200 ms, WatchdogSec 400 ms)" \
	eval '[ "${got% *}" -ge 25 ] && [ "${got#* }" -lt 300 ]'
written=$(printf '%s\n' "${mtimes[@]}" | sort -u | wc -l)
check "... the metrics file written on, every second ($written times)" [ "$written" -ge 4 ]
dropped=$(tcpctl_eval "$SOCK" control_dropped_deadline)
check "... each cut counted: control_dropped_deadline $dropped" [ "$dropped" = "$cuts" ]

# Sixteen tcpctl flows at once, every slot of the socket's, round after
# round for 3 s, against 200 connections held open (max-pending-per-addr=0
# lets one client hold them all; a per-address cap, far above them, has
# the silent connections made at their ACK, which the shield otherwise
# leaves to their first data): each is answered with all of them, as
# ever, and soon, while the watchdog's pings go on, every turn of the main
# loop (as the shield's map sync does).  The main loop waited for each
# worker's copy of its flows, up to a second a request, and answered 16 in
# a turn: 1.6 s without a ping, or the shield's heartbeat, after which the
# shield stands aside under --bypass.
HOLD=200
lab_spawn "$NS_CLIENT" "$LAB_DIR/hold.log" /usr/bin/python3 "$HERE/dnsconn.py" \
	"$BACKEND4" hold "$HOLD" --timeout 8
HOLD_PID=$LAB_PID
wait_log "$LAB_DIR/hold.log" "^connected=$HOLD\$" 5 || not_ok "$HOLD connections held"
lab_spawn "$NS_GW" "$LAB_DIR/flows.log" /bin/bash -c '
mkdir -p "$3/flows"
mono() { /usr/bin/python3 -c "import time; print(\"$1 %.3f\" % time.monotonic())"; }
mono start
end=$(($(date +%s%N) + 3000000000))
while [ "$(date +%s%N)" -lt "$end" ]; do
	t=$(date +%s%N)
	for i in $(seq 16); do
		if [ $((i % 4)) -eq 0 ]; then
			"$1" -s "$2" -j flows >"$3/flows/$i" 2>&1 &
		else
			"$1" -s "$2" flows >"$3/flows/$i" 2>&1 &
		fi
	done
	wait
	printf "round %d\n" $((($(date +%s%N) - t) / 1000000))
	for i in $(seq 16); do
		printf "%s %s %s\n" "$i" "$(wc -l <"$3/flows/$i")" "$(tail -n 1 "$3/flows/$i")"
	done
done
mono end
' flows "$TCPCTL_BIN" "$SOCK" "$LAB_DIR"
FLOWS_PID=$LAB_PID
wait_log "$LAB_DIR/flows.log" '^end' 15 || not_ok "the flows clients end"
lab_kill "$FLOWS_PID"
lab_kill "$HOLD_PID"
# Each answer: text, its summary after a line a flow, every flow shown; or
# JSON, its last line the totals.
got=$(awk -v hold="$HOLD" '
	$1 == "start" || $1 == "end" { next }
	$1 == "round" { rounds++; if ($2 > slowest) slowest = $2; next }
	{ n++ }
	$1 % 4 && match($0, /^[0-9]+ [0-9]+ [0-9]+ of [0-9]+ flows shown/) {
		split($0, w, " ")
		if (w[3] == w[5] && w[3] >= hold && w[2] == w[3] + 1) { good++; next }
	}
	!($1 % 4) && match($0, /"shown": [0-9]+, "total": [0-9]+}$/) {
		split(substr($0, RSTART), w, /[^0-9]+/)
		if (w[2] == w[3] && w[2] >= hold) { good++; next }
	}
	{ if (!bad) first = $0; bad++ }
	END { printf "%d %d %d %d %s", rounds, slowest, n, good, first }' "$LAB_DIR/flows.log")
read -r flows_rounds flows_slowest flows_n flows_good flows_bad <<<"$got"
check "16 tcpctl flows at once, $flows_rounds times: $flows_good of $flows_n answered with all $HOLD flows and more${flows_bad:+ (not: $flows_bad)}" \
	eval '[ "$flows_rounds" -ge 3 ] && [ "$flows_n" -eq $((16 * flows_rounds)) ] && [ "$flows_good" -eq "$flows_n" ]'
check "... all 16 answered within $flows_slowest ms at most" [ "$flows_slowest" -lt 1000 ]
got=$(pings "$LAB_DIR/flows.log")
check "... the watchdog pinged on: ${got% *} pings, none more than ${got#* } ms apart (every 200 ms, WatchdogSec 400 ms)" \
	eval '[ "${got% *}" -ge 12 ] && [ "${got#* }" -lt 300 ]'
check "... and no client cut or refused: control_dropped_deadline still $dropped, full $(tcpctl_eval "$SOCK" control_dropped_full)" \
	eval '[ "$(tcpctl_eval "$SOCK" control_dropped_deadline)" = "$dropped" ] && [ "$(tcpctl_eval "$SOCK" control_dropped_full)" = 0 ]'
tcpctd_finish
wait_until 5 eval '! kill -0 $NOTIFY_PID 2>/dev/null'
check "STOPPING=1 when it stops" grep -q 'STOPPING=1' "$LAB_DIR/notify.log"
t_summary
