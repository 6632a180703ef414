# tests/lab/synproxy.sh: kernel SYNPROXY in the gateway namespace, the
# baseline the benches measure tcpctd against.  Sourced after
# tests/lab/lib.sh.
#
# synproxy_up SERVICE...: for each SERVICE, a port of BACKEND4 ("53") or an
# address and port as tcpctd's --protect takes them ("192.0.2.2:53",
# "[2001:db8:b::2]:53"), SYNPROXY (iptables or ip6tables) given the options
# the backend really grants there (probe.py, the way tcpctd learns them);
# the rules are left in SYNPROXY_RULES ("iptables ARGS" or "ip6tables ARGS")
# and the options in BACKEND_OPTS.  synproxy_down removes exactly those rules.
# shellcheck shell=bash
SYNPROXY_RULES=()
BACKEND_OPTS=

synproxy_up() {
	local svc addr port ipt opts r
	in_gw sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 || return 1
	for svc in "$@"; do
		case $svc in
		\[*\]:*) addr=${svc%]:*} addr=${addr#\[} port=${svc##*:} ipt=ip6tables ;;
		*:*) addr=${svc%:*} port=${svc##*:} ipt=iptables ;;
		*) addr=$BACKEND4 port=$svc ipt=iptables ;;
		esac
		opts=$(in_gw /usr/bin/python3 "$TOP/tests/lab/probe.py" "$addr" "$port") ||
			{ lab_log "cannot probe the backend on $svc"; return 1; }
		BACKEND_OPTS="$BACKEND_OPTS $svc: $opts;"
		SYNPROXY_RULES+=(
			"$ipt -t raw -A PREROUTING -p tcp -d $addr --dport $port --syn -j CT --notrack"
			"$ipt -A FORWARD -p tcp -d $addr --dport $port -m conntrack --ctstate INVALID,UNTRACKED -j SYNPROXY $opts"
			"$ipt -A FORWARD -p tcp -d $addr --dport $port -m conntrack --ctstate INVALID -j DROP"
		)
	done
	lab_on_down synproxy_down
	for r in "${SYNPROXY_RULES[@]}"; do
		# shellcheck disable=SC2086
		in_gw ${r%% *} -w ${r#* } || return 1
	done
}

synproxy_down() {
	local i r
	for ((i = ${#SYNPROXY_RULES[@]} - 1; i >= 0; i--)); do
		r=" ${SYNPROXY_RULES[i]#* }"
		r=${r/ -A / -D }
		# shellcheck disable=SC2086
		in_gw ${SYNPROXY_RULES[i]%% *} -w $r || lab_log "cannot delete: ${SYNPROXY_RULES[i]}"
	done
	SYNPROXY_RULES=()
	in_gw sysctl -qw net.netfilter.nf_conntrack_tcp_loose=1 2>/dev/null || true
}
