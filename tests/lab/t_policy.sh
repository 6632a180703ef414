#!/bin/bash
# The service's policy on verified connections to a real nsd (HACKING.md
# §4): DNS framing, max-queries, the message, idle and lifetime clocks, the
# per-address cap, the connection rate, the same limits on a generic (HTTP)
# service with delayed binding, and the SYN-ACK rate per prefix.  Each limit that closes a
# connection resets both sides: the client sees a RST, and nsd's end is gone
# at once (ss in the backend shows no connection left).
#
#   client (dnsconn.py, kdig) ── gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
DNSCONN=("$HERE/dnsconn.py" "$BACKEND4")

# conn ARGS...: one dnsconn.py run from the client; its result line(s).
conn() { ip netns exec "$NS_CLIENT" timeout 30 /usr/bin/python3 "${DNSCONN[@]}" "$@"; }
# backend_conns: nsd's TCP connections from the client, any state but
# TIME-WAIT (the kernel's, not nsd's).
backend_conns() {
	ip netns exec "$NS_BACKEND" ss -Htn state established state syn-recv \
		state close-wait state fin-wait-1 state fin-wait-2 state last-ack \
		"sport = :53" | grep -c "$CLIENT4" || true
}
# ended HOW MIN MAX LINE: LINE ended by HOW after MIN..MAX seconds.
ended() {
	local how=${4#*end=}
	how=${how%% *}
	[ "$how" = "$1" ] && awk -v l="$4" -v lo="$2" -v hi="$3" \
		'BEGIN { sub(/.*after=/, "", l); exit !(l + 0 >= lo && l + 0 <= hi) }'
}

tcpctd_start --protect "$BACKEND4:53,max-queries=3,idle-timeout=3,msg-timeout=1000" \
	--protect "[$BACKEND6]:53" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }

r=$(conn query 3 --timeout 10)
check "three queries on one connection are answered, then idle closes it ($r)" \
	ended reset 3.5 6 "$r"
[[ $r == answers=3* ]] || not_ok "all three answered" "$r"
r=$(conn query 5 --timeout 10)
check "a fourth query is one too many: reset at once ($r)" ended reset 0.5 2.5 "$r"
[[ $r == answers=3* ]] || not_ok "the first three answered" "$r"
r=$(conn short --timeout 5)
check "a length under a DNS header: reset at once ($r)" ended reset 0 0.5 "$r"
r=$(conn answer --timeout 5)
check "an answer sent by a client: reset at once ($r)" ended reset 0 0.5 "$r"
r=$(conn half --timeout 8)
check "half a query: reset after msg-timeout, 1 s ($r)" ended reset 0.9 2 "$r"
# A silent connection: with the shield nothing is made for it until it
# asks (its cookie ACK verified and dropped there), so nothing is held or
# reset; without, its flow is reset at idle-timeout.
d0=$(tcpctd_counter shield_ack_deferred)
r=$(conn silent --timeout 8)
if [ "$(tcpctd_counter shield_interfaces)" -gt 0 ]; then
	idle_silent=0
	check "a silent connection: nothing made for it at the gateway, its ACK dropped by the shield ($(($(tcpctd_counter shield_ack_deferred) - d0))), never reset ($r)" \
		eval '[ $(($(tcpctd_counter shield_ack_deferred) - d0)) -eq 1 ] && ended timeout 7.9 9 "$r"'
else
	idle_silent=1
	check "a silent connection: reset after idle-timeout, 3 s ($r)" ended reset 2.9 4.5 "$r"
fi
check "nsd keeps no connection of them ($(backend_conns))" \
	wait_until 3 eval '[ "$(backend_conns)" -eq 0 ]'
check "counted: dns_short $(tcpctd_counter dns_short), dns_not_request $(tcpctd_counter dns_not_request), dns_max_queries $(tcpctd_counter dns_max_queries), dns_msg_timeout $(tcpctd_counter dns_msg_timeout)" \
	[ "$(tcpctd_counter dns_short)" -eq 1 -a "$(tcpctd_counter dns_not_request)" -eq 1 \
	  -a "$(tcpctd_counter dns_max_queries)" -eq 1 -a "$(tcpctd_counter dns_msg_timeout)" -eq 1 ]
check "released by reason: dns_framing 2, max_queries 1, msg_timeout 1, idle $((1 + idle_silent))" \
	[ "$(tcpctd_counter flows_released_dns_framing)" -eq 2 \
	  -a "$(tcpctd_counter flows_released_max_queries)" -eq 1 \
	  -a "$(tcpctd_counter flows_released_msg_timeout)" -eq 1 \
	  -a "$(tcpctd_counter flows_released_idle)" -eq $((1 + idle_silent)) ]
check "kdig over IPv6 (defaults) still answered" \
	[ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND6" "$ZONE" AAAA)" ]

# Caps and rates: 4 per address; 3 new connections a second per /24.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53,max-per-addr=4,max-lifetime=2" ||
	not_ok "tcpctd restarts"
out=$(conn hold 6 --timeout 4)
held=$(echo "$out" | grep -c "end=timeout" || true)
reset=$(echo "$out" | grep -c "end=reset after=0" || true)
check "per address: 4 connections held, the 5th and 6th reset at once ($held, $reset: $(echo $out))" \
	[ "$held" -eq 4 -a "$reset" -eq 2 ]
check "counted: refused_addr $(tcpctd_counter refused_addr)" [ "$(tcpctd_counter refused_addr)" -eq 2 ]
r=$(conn query 20 --timeout 8)
check "max-lifetime 2 s: a busy connection is reset at 2 s ($r)" ended reset 1.9 3 "$r"
# (The four held ones went the same way when they closed, past 2 s.)
check "counted: lifetime_closed $(tcpctd_counter lifetime_closed)" \
	[ "$(tcpctd_counter lifetime_closed)" -ge 1 ]
check "and once they are gone, the address is welcome again" \
	[ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)" ]

tcpctd_stop
tcpctd_start --protect "$BACKEND4:53,conn-rate=3" || not_ok "tcpctd restarts"
sleep 1
# The six at once, just past a second's start: one after another they can
# take more than a second on a busy machine, and then twice 3 pass.
sleep "$(printf '0.%03d' $(( 999 - 10#$(date +%N | cut -c1-3) )))"
pids=()
for i in 1 2 3 4 5 6; do
	ip netns exec "$NS_CLIENT" timeout 5 kdig +tcp +time=1 +retry=0 +noall +answer \
		@"$BACKEND4" "$ZONE" A >"$LAB_DIR/rate$i.out" 2>/dev/null &
	pids+=($!)
done
wait "${pids[@]}"
ok_n=0
for i in 1 2 3 4 5 6; do
	[ -s "$LAB_DIR/rate$i.out" ] && ok_n=$((ok_n + 1))
done
check "conn-rate 3/s: of 6 quick queries 3 to 5 answered ($ok_n), the rest refused ($(tcpctd_counter refused_rate))" \
	[ "$ok_n" -ge 3 -a "$ok_n" -le 5 -a "$(tcpctd_counter refused_rate)" -ge 1 ]
# A generic service (HTTP) gets the same limits, without DNS framing; with
# delay-bind its backend is called for the first byte, not before.
tcpctd_stop
http_start >/dev/null || not_ok "http server starts"
tcpctd_start --protect "$BACKEND4:80,delay-bind=1,idle-timeout=2,max-per-addr=3" ||
	not_ok "tcpctd restarts"
check "generic: curl fetches through delayed binding" \
	[ "$(ip netns exec "$NS_CLIENT" timeout 10 curl -s "http://$BACKEND4/hello")" = hello ]
r=$(conn silent --port 80 --timeout 6)
check "generic: a silent connection is reset after idle-timeout, 2 s ($r)" ended reset 1.9 3.5 "$r"
out=$(conn hold 4 --port 80 --timeout 1)
check "generic: 3 connections per address held, the 4th reset ($(echo $out))" \
	[ "$(echo "$out" | grep -c "end=timeout")" -eq 3 -a "$(echo "$out" | grep -c "end=reset")" -eq 1 ]
check "generic: the backend was called once, for curl's request (backend_syn $(tcpctd_counter backend_syn))" \
	[ "$(tcpctd_counter backend_syn)" -eq 1 ]

# Reflection: a spoofed SYN flood from one /24 gets at most synack-rate
# SYN-ACKs a second back; another prefix is answered meanwhile.
tcpctd_stop
SYNACK_RATE=1000 FLOOD_S=4
tcpctd_start --protect "$BACKEND4:53" --synack-rate "$SYNACK_RATE" || not_ok "tcpctd restarts"
back0=$(spoof_synacks)
loadgen_bg "$NS_ATTACKER" "$LAB_DIR/reflect.out" -m syn -t "$FLOOD_S" -r 20000 \
	-l 198.18.7.0/24 "$BACKEND4"
flood=$LAB_PID
sleep 1
during=$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)
loadgen_wait "$flood" "$LAB_DIR/reflect.out" || not_ok "the flood generator ran"
sleep 0.2
sent=$(load_count "$(cat "$LAB_DIR/reflect.out")" sent)
back=$(($(spoof_synacks) - back0))
# Whole seconds: a run of a little over FLOOD_S s touches FLOOD_S + 2 of
# them at most.
check "synack-rate $SYNACK_RATE: $back SYN-ACKs for $sent spoofed SYNs from one /24 in $FLOOD_S s" \
	[ "$sent" -gt $((4 * SYNACK_RATE * FLOOD_S)) -a "$back" -ge "$SYNACK_RATE" \
	  -a "$back" -le $((SYNACK_RATE * (FLOOD_S + 2))) ]
capped=$(tcpctd_counter synack_capped)
check "counted: synack_capped $capped of the $((sent - back)) unanswered" \
	[ "$capped" -le $((sent - back)) -a $((capped * 10)) -ge $(((sent - back) * 9)) ]
check "another prefix answered during the flood" [ -n "$during" ]
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
