# tests/lab/synproxy.sh: kernel SYNPROXY in the gateway namespace, the
# baseline the benches measure tcpctd against.  Sourced after
# tests/lab/lib.sh.
#
# synproxy_up PORT...: for each port of BACKEND4, SYNPROXY given the options
# the backend really grants there (probe.py, the way tcpctd learns them);
# the rules are left in SYNPROXY_RULES and the options in BACKEND_OPTS.
# synproxy_down removes exactly those rules.
# shellcheck shell=bash
SYNPROXY_RULES=()
BACKEND_OPTS=

synproxy_up() {
	local port opts r
	in_gw sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 || return 1
	for port in "$@"; do
		opts=$(in_gw /usr/bin/python3 "$TOP/tests/lab/probe.py" "$BACKEND4" "$port") ||
			{ lab_log "cannot probe the backend on $port"; return 1; }
		BACKEND_OPTS="$BACKEND_OPTS $port: $opts;"
		SYNPROXY_RULES+=(
			"-t raw -A PREROUTING -p tcp -d $BACKEND4 --dport $port --syn -j CT --notrack"
			"-A FORWARD -p tcp -d $BACKEND4 --dport $port -m conntrack --ctstate INVALID,UNTRACKED -j SYNPROXY $opts"
			"-A FORWARD -p tcp -d $BACKEND4 --dport $port -m conntrack --ctstate INVALID -j DROP"
		)
	done
	lab_on_down synproxy_down
	for r in "${SYNPROXY_RULES[@]}"; do
		# shellcheck disable=SC2086
		in_gw iptables -w $r || return 1
	done
}

synproxy_down() {
	local i r
	for ((i = ${#SYNPROXY_RULES[@]} - 1; i >= 0; i--)); do
		r=" ${SYNPROXY_RULES[i]}"
		r=${r/ -A / -D }
		# shellcheck disable=SC2086
		in_gw iptables -w $r || lab_log "cannot delete: $r"
	done
	SYNPROXY_RULES=()
	in_gw sysctl -qw net.netfilter.nf_conntrack_tcp_loose=1 2>/dev/null || true
}
