#!/bin/bash
# The kernel shield (issue 22) on its own: where it runs and what it leaves
# to the daemon.  Every other scenario runs with it too, as it is on by
# default (t_faults: its crashes), unless TCPCTD_SHIELD=no.
#
#  - by default (--shield auto): on every interface of the gateway but
#    loopback, shown by tcpctl status; a real client's SYNs answered in
#    the kernel, none of them queued; its connections spliced by the
#    daemon;
#  - a daemon killed with its shield on, then started with --shield no:
#    the one left behind is removed, and the daemon answers by itself;
#  - a daemon killed with its shield on and not started again, then
#    `tcpctd --rules remove` (the package's removal runs it): the shield
#    goes with the rules, and a real client gets its answer from the
#    backend itself, as if tcpctd had never been there (issue 31);
#  - where BPF cannot load (no CAP_BPF, CAP_PERFMON or CAP_SYS_ADMIN):
#    by default it runs without it and says why once, --shield yes refuses
#    to start.
#
#   client (kdig) ── gw (tcpctd) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

shield_scenario "the scenario is the shield's"
lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
ctl() { in_gw "$TCPCTL_BIN" -s "$SOCK" "$@"; }
answered() { [ -n "$(kdig_answer "$NS_CLIENT" "$1" "$ZONE" SOA)" ]; }
filters() {	# the shield's tc filters on the gateway's interfaces
	local n=0 i
	for i in "$GW_IF_CLIENT" "$GW_IF_BACKEND" "$GW_IF_ATTACKER"; do
		n=$((n + $(in_gw tc filter show dev "$i" ingress 2>/dev/null | grep -c ' name shield ')))
	done
	echo "$n"
}

# The default, --shield auto.
TCPCTD_SHIELD= tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--control-socket "$SOCK" || { not_ok "tcpctd starts"; t_summary; exit 1; }
status=$(ctl status | sed -n 's/^shield: //p')
check "by default: on every interface but loopback ($status)" \
	eval '[ "$(tr " " "\n" <<<"${status#on: }" | sort | tr "\n" " ")" = "$(printf "%s\n" "$GW_IF_ATTACKER" "$GW_IF_BACKEND" "$GW_IF_CLIENT" | sort | tr "\n" " ")" ]'
q0=$(queue_packets 1) a0=$(tcpctd_counter shield/synack_sent)
check "kdig over IPv4 and IPv6 answered" eval 'answered "$BACKEND4" && answered "$BACKEND6"'
q1=$(queue_packets 1) a1=$(tcpctd_counter shield/synack_sent)
check "... their SYNs answered in the kernel ($((a1 - a0)) SYN-ACKs), none queued ($((q1 - q0)))" \
	[ $((a1 - a0)) -ge 2 -a "$q1" -eq "$q0" ]
check "... their handshakes completed by the daemon ($(tcpctd_counter ack_verified) verified)" \
	[ "$(tcpctd_counter ack_verified)" -ge 2 ]

# Killed: its filters stay (they outlive their loader), and a daemon
# without the shield takes them away before it answers.
kill -KILL "$TCPCTD_PID"
wait "$TCPCTD_PID" 2>/dev/null
_lab_forget "$TCPCTD_PID"
TCPCTD_PID=
left=$(filters)
tcpctd_start --protect "$BACKEND4:53" --shield no ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
check "a daemon with --shield no removes the $left filters a killed one left ($(grep -o 'removed [0-9]* left by a daemon' "$TCPCTD_LOG"))" \
	[ "$left" -eq 3 -a "$(filters)" -eq 0 ]
s0=$(tcpctd_counter synack_sent)
check "... and answers by itself" eval 'answered "$BACKEND4" && [ "$(tcpctd_counter synack_sent)" -gt "$s0" ]'
tcpctd_stop

# Killed, and no daemon after it: `--rules remove` takes the shield away
# too.  Left there, it answers the SYNs with cookies whose ACKs go, the
# rules gone, to a backend that never saw the handshake.
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
kill -KILL "$TCPCTD_PID"
wait "$TCPCTD_PID" 2>/dev/null
_lab_forget "$TCPCTD_PID"
TCPCTD_PID=
left=$(filters)
out=$(in_gw "$TCPCTD_BIN" --rules remove "${TCPCTD_ARGS[@]}" 2>&1); rc=$?
check "killed, then --rules remove: the $left filters it left removed, and said so ($(grep '^shield: ' <<<"$out"))" \
	eval '[ "$rc" -eq 0 -a "$left" -eq 3 -a "$(filters)" -eq 0 ] &&
	      grep -qx "shield: tcpctd.s tc filter removed from 3 interfaces" <<<"$out"'
check "... with the rules ($(in_gw iptables -t raw -S | grep -c TCPCTD) left)" \
	eval '! in_gw iptables -t raw -S | grep -q TCPCTD && ! in_gw ip6tables -t raw -S | grep -q TCPCTD'
# The backend's own SYNs from the client: the client's, nothing between.
in_backend iptables -I INPUT -s "$CLIENT4" -p tcp --dport 53 --syn -j ACCEPT
in_backend ip6tables -I INPUT -s "$CLIENT6" -p tcp --dport 53 --syn -j ACCEPT
check "... a real client's queries answered by the backend itself, over IPv4 and IPv6, its SYNs at the backend" \
	eval 'answered "$BACKEND4" && answered "$BACKEND6" &&
	      [ "$(rule_packets "$NS_BACKEND" 1)" -ge 1 ] &&
	      [ "$(in_backend ip6tables -L INPUT -v -x -n | awk "NR == 3 { print \$1 }")" -ge 1 ]'
in_backend iptables -D INPUT -s "$CLIENT4" -p tcp --dport 53 --syn -j ACCEPT
in_backend ip6tables -D INPUT -s "$CLIENT6" -p tcp --dport 53 --syn -j ACCEPT
out=$(in_gw "$TCPCTD_BIN" --rules remove "${TCPCTD_ARGS[@]}" 2>&1)
check "... and removing again finds nothing, and says so" \
	grep -qx "shield: no tc filter of tcpctd's to remove" <<<"$out"

# Without the capabilities BPF needs (as root, CAP_SYS_ADMIN would do).
cat >"$LAB_DIR/tcpctd-nobpf" <<SH
#!/bin/sh
exec setpriv --bounding-set=-bpf,-perfmon,-sys_admin --inh-caps=-bpf,-perfmon,-sys_admin "$TCPCTD_BIN" "\$@"
SH
chmod 755 "$LAB_DIR/tcpctd-nobpf"
out=$(in_gw timeout 10 "$LAB_DIR/tcpctd-nobpf" --protect "$BACKEND4:53" --shield yes 2>&1); rc=$?
check "no CAP_BPF, --shield yes: refuses to start, saying why (status $rc: $(tail -1 <<<"$out"))" \
	eval '[ "$rc" -eq 1 ] && grep -q "^tcpctd: shield: " <<<"$out"'
TCPCTD_SHIELD= TCPCTD_BIN=$LAB_DIR/tcpctd-nobpf tcpctd_start --protect "$BACKEND4:53" ||
	{ not_ok "tcpctd starts without CAP_BPF"; t_summary; exit 1; }
check "no CAP_BPF, by default: runs without the shield, said once ($(grep 'shield off' "$TCPCTD_LOG"))" \
	[ "$(grep -c '^tcpctd: shield off: ' "$TCPCTD_LOG")" -eq 1 -a "$(filters)" -eq 0 ]
check "... and answers by itself" answered "$BACKEND4"
check "tcpctd still running" kill -0 "$TCPCTD_PID"
tcpctd_finish
t_summary
