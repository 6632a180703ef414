#!/bin/bash
# A soak (issue 7): SOAK_SECONDS (30 in `make check`, 600 in `make soak`,
# which runs the ASan/UBSan build) of mixed load at once:
#
#   - legitimate DNS: one connection after another, a query each (IPv4)
#   - legitimate HTTP: a 4 MiB file fetched again and again, sha256 checked
#   - a flood: forged ACKs and Fast Open SYNs from 198.18.0.0/15
#   - abusive DNS clients: half queries, silence, framing no client sends
#   - reloads, about 20 a second (each swaps the configuration the workers
#     read under them: one found a worker mixing two), and a key rotation
#     every 11 s
#
# Then: no sanitizer report, every legitimate transfer intact, RSS flat
# after the warm-up, and the flow table back to zero once the load stops.
. "$(dirname "$0")/scenario.sh"

SECS=${SOAK_SECONDS:-30}
# ASan keeps freed memory in quarantine, 256 MiB of it by default, and
# each reload frees some: the RSS of the ASan build would grow until then.
# 4 MiB, full within the warm-up, still catches a use of what was freed
# lately; the release build has no quarantine at all.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=4}
FORGE_BIN=${FORGE_BIN:-$HERE/../../build/tcpct-forge}
lab_with_nsd 100
http_start >/dev/null || { not_ok "http in the backend"; t_summary; exit 1; }
head -c 4194304 "$HTTP_BLOB" >"$HTTP_DIR/small"
SMALL_SHA=$(sha256sum <"$HTTP_DIR/small" | awk '{ print $1 }')
SOCK=$LAB_DIR/tcpctd.sock
SECRET=$LAB_DIR/secret
head -c 32 /dev/urandom >"$SECRET.a"
head -c 32 /dev/urandom >"$SECRET.b"
cp "$SECRET.a" "$SECRET"
chmod 600 "$SECRET" "$SECRET.a" "$SECRET.b"
# Short closing timers, so that the table empties soon after the load.
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --protect "$BACKEND4:80" \
	--control-socket "$SOCK" --secret-file "$SECRET" --closing-timeout 5 \
	--closed-linger 1 --synack-rate 0 || { not_ok "tcpctd starts"; t_summary; exit 1; }
stat_of() { tcpctl_eval "$SOCK" "$1"; }	# stat_of NAME
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$TCPCTD_PID/status"; }

pids=()
# The loaders are subshells of this script: ended with it, also on failure.
stop_loaders() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null; }
lab_on_down stop_loaders
in_client /usr/bin/python3 "$HERE/dnsload.py" "$BACKEND4" "$SECS" --timeout 3 \
	>"$LAB_DIR/dns.log" 2>&1 &
pids+=($!)
(
	end=$((SECONDS + SECS))
	while [ "$SECONDS" -lt "$end" ]; do
		sum=$(ip netns exec "$NS_CLIENT" timeout 30 curl -sSg "http://$BACKEND4/small" \
			2>"$LAB_DIR/curl.err" | sha256sum | awk '{ print $1 }')
		if [ "$sum" = "$SMALL_SHA" ]; then
			echo "$((SECONDS - end + SECS)) ok"
		else
			echo "$((SECONDS - end + SECS)) fail $(tr '\n' ' ' <"$LAB_DIR/curl.err")"
		fi
	done
) >"$LAB_DIR/http-load.log" 2>&1 &
pids+=($!)
(
	end=$((SECONDS + SECS))
	while [ "$SECONDS" -lt "$end" ]; do
		ip netns exec "$NS_ATTACKER" "$FORGE_BIN" ack "$BACKEND4" 53 20000 -r 20000
		ip netns exec "$NS_ATTACKER" "$FORGE_BIN" tfo "$BACKEND4" 53 5000 -r 5000
	done
) >"$LAB_DIR/flood.log" 2>&1 &
pids+=($!)
(
	end=$((SECONDS + SECS))
	while [ "$SECONDS" -lt "$end" ]; do
		for mode in half silent short answer; do
			ip netns exec "$NS_ATTACKER" timeout 5 /usr/bin/python3 "$HERE/dnsconn.py" \
				"$BACKEND4" "$mode" --timeout 3
		done
	done
) >"$LAB_DIR/abuse.log" 2>&1 &
pids+=($!)
(
	end=$((SECONDS + SECS))
	while [ "$SECONDS" -lt "$end" ]; do
		in_gw "$TCPCTL_BIN" -s "$SOCK" reload
		sleep 0.05
	done
) >"$LAB_DIR/reload.log" 2>&1 &
pids+=($!)

# Rotations and RSS samples, until the load is over.
start=$SECONDS rotations=0 rss=() use=A
while [ $((SECONDS - start)) -lt "$SECS" ]; do
	sleep 1
	t=$((SECONDS - start))
	if [ $((t % 11)) -eq 0 ]; then
		# Two secrets, the new one first, then it alone: as a fleet
		# rotates (README).
		if [ "$use" = A ]; then
			cat "$SECRET.b" "$SECRET.a" >"$SECRET.new" && use=B
		else
			cat "$SECRET.a" "$SECRET.b" >"$SECRET.new" && use=A
		fi
		chmod 600 "$SECRET.new" && mv "$SECRET.new" "$SECRET"
		in_gw "$TCPCTL_BIN" -s "$SOCK" keys rotate >/dev/null && rotations=$((rotations + 1))
	fi
	rss+=("$(rss_kb)")
done
wait "${pids[@]}"
reloads=$(grep -c '^reloaded' "$LAB_DIR/reload.log")

dns_all=$(grep -c . "$LAB_DIR/dns.log") dns_ok=$(grep -c ' ok$' "$LAB_DIR/dns.log")
check "$SECS s: $dns_ok of $dns_all legitimate DNS connections answered" \
	[ "$dns_all" -gt 0 -a "$dns_ok" -eq "$dns_all" ]
grep -v ' ok$' "$LAB_DIR/dns.log" | head -5 | sed 's/^/#  /'
http_all=$(grep -c . "$LAB_DIR/http-load.log") http_ok=$(grep -c ' ok$' "$LAB_DIR/http-load.log")
check "... $http_ok of $http_all HTTP downloads of 4 MiB intact" \
	[ "$http_all" -gt 0 -a "$http_ok" -eq "$http_all" ]
grep -v ' ok$' "$LAB_DIR/http-load.log" | head -5 | sed 's/^/#  /'
check "... under $(grep -c '^sent' "$LAB_DIR/flood.log") bursts of forged packets, $(grep -c answers= "$LAB_DIR/abuse.log") abusive clients, $reloads reloads and $rotations key rotations" \
	[ "$reloads" -ge "$SECS" -a "$rotations" -ge 1 ]
grep -v '^reloaded' "$LAB_DIR/reload.log" | head -3 | sed 's/^/#  /'
# RSS: from the end of the warm-up on, flat.  The warm-up is a third of
# the run, and at least 20 s: the ASan build's allocator takes that long
# to fill its caches and quarantine under the reloads.
n=${#rss[@]} w=$((n / 3))
[ "$w" -ge 20 ] || w=20
[ "$w" -le $((n - 5)) ] || w=$((n - 5))
warm=${rss[$w]} last=${rss[$((n - 1))]} max=0
for r in "${rss[@]:$w}"; do [ "$r" -gt "$max" ] && max=$r; done
# The ASan allocator's size-class caches still settle after that.
slack=1024
case $TCPCTD_BIN in *asan*) slack=2048 ;; esac
echo "# RSS (KiB) every second: ${rss[*]}"
check "RSS flat after the warm-up: $warm KiB then, at most $max, $last at the end (+$((slack / 1024)) MiB allowed)" \
	[ "$max" -le $((warm + slack)) ]
check "the flow table back to zero once the load stopped" \
	wait_until 20 eval '[ "$(stat_of flows_active)" -eq 0 ]'
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
