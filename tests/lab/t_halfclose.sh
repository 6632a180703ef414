#!/bin/bash
# An initiator that closes first (tcpct-connect without +wait-eof, netcat's
# default): its FIN goes with the request, before the server answers, and it
# must still take the whole answer, up to the server's FIN (RFC 9293
# FIN-WAIT-1 and -2; issue 25).  Against a real HTTP/1.0 server (Python's
# http.server, which closes after its answer), IPv4 and IPv6, direct and
# through tcpctd, plain TCP and TCPCT:
#  - socat (kernel TCP, half-closing the same way) gives each path's answer;
#  - tcpct-connect alone writes out the same answer, and with -n every one
#    of its connections completes with every byte of its answer;
#  - nothing is sent again through tcpctd that is not sent again direct:
#    the retransmissions in a capture of the client's link, each way, and
#    those tcpct-connect counts.
#
#   client (tcpct-connect, socat) ── gw (routing, or tcpctd) ── backend (http.server :80)
. "$(dirname "$0")/scenario.sh"

CONNECT=$TOP/build/tcpct-connect
N=${HALFCLOSE_N:-300}		# short connections per -n run
BIG_N=${HALFCLOSE_BIG_N:-30}	# of them for the 64 KiB answer
SOCAT_N=${HALFCLOSE_SOCAT_N:-20}

lab_up >/dev/null && http_start || { not_ok "lab with http.server"; t_summary; exit 1; }
# MTU-sized segments on the wire: what a capture counts is what was sent.
lab_offload off || not_ok "offloads off"
head -c 65536 /dev/urandom >"$HTTP_DIR/big"
printf 'GET /hello HTTP/1.0\r\n\r\n' >"$LAB_DIR/hello.req"
printf 'GET /big HTTP/1.0\r\n\r\n' >"$LAB_DIR/big.req"

# Every run from an address of its own: no 4-tuple of one run meets state
# another left (the client's ports start over at each -n).
NEXT_HOST=10
fresh_addr() {	# fresh_addr 4|6: FRESH, a new address of the client's
	if [ "$1" = 4 ]; then
		FRESH=198.51.100.$NEXT_HOST
		in_client ip addr add "$FRESH/24" dev veth-gw
	else
		FRESH=2001:db8:c::$(printf %x "$NEXT_HOST")
		in_client ip addr add "$FRESH/64" dev veth-gw nodad
	fi || not_ok "client address $FRESH"
	NEXT_HOST=$((NEXT_HOST + 1))
}
server() { if [ "$1" = 4 ]; then echo "$BACKEND4"; else echo "$BACKEND6"; fi; }
# socat_to FAM [ADDR]: socat's address of the server, from ADDR if given.
socat_to() {
	local b=${2:-}
	if [ "$1" = 4 ]; then
		echo "TCP4:$BACKEND4:80${b:+,bind=$b}"
	else
		echo "TCP6:[$BACKEND6]:80${b:+,bind=[$b]}"
	fi
}

# retransmissions FILE ADDR: the segments a capture shows sent again from
# ADDR (the client), and towards it: "FROM TO".
retransmissions() {
	tshark -r "$1" -Y tcp.analysis.retransmission -T fields -e ip.src -e ipv6.src \
		2>/dev/null | awk -v a="$2" '{ if ($1 == a) c++; else s++ }
			END { print c + 0, s + 0 }'
}
# no_date: an answer without its Date header, which is the second's.
no_date() { grep -av '^Date: '; }

# socat_answers FAM ADDR REQ COUNT: COUNT exchanges by socat from ADDR;
# prints the bytes of each answer, one line each.
socat_answers() {
	local i
	for ((i = 0; i < $4; i++)); do
		in_client timeout 10 socat -t 5 - "$(socat_to "$1" "$2")" <"$3" | wc -c
	done
}

# run_n NAME FAM REQ COUNT ARGS...: tcpct-connect -n COUNT from a fresh
# address with a capture of the client's link; sets OUT (its totals line),
# RT_OUT and RT_IN (retransmissions in the capture from the client and
# towards it) and T_* (OUT's fields).
run_n() {
	local name=$1 fam=$2 req=$3 count=$4 addr pcap
	shift 4
	fresh_addr "$fam"
	addr=$FRESH
	pcap=$LAB_DIR/$name.pcap
	capture_start "$NS_CLIENT" veth-gw "$pcap" "tcp port 80 and host $addr" ||
		not_ok "$name: capture starts"
	OUT=$(in_client timeout 120 "$CONNECT" -$fam -n "$count" -b "$addr" "$@" \
		"$(server "$fam")" 80 <"$req" 2>"$LAB_DIR/$name.err")
	capture_stop "$pcap"
	read -r RT_OUT RT_IN < <(retransmissions "$pcap" "$addr")
	set -- $OUT
	T_CONNS=${2:-} T_DONE=${4:-} T_FAILED=${6:-} T_TCPCT=${8:-} T_SECS=${10:-}
	T_BYTES=${14:-} T_RT=${16:-}
	echo "# $name: $OUT; retransmissions on the wire: $RT_OUT from the client, $RT_IN to it"
}

# check_n NAME COUNT ANSWER TCPCT: the -n run made COUNT connections, all
# completed, every answer whole (ANSWER bytes each), TCPCT COUNT or 0 times.
check_n() {
	local name=$1 count=$2 answer=$3 ct=$4
	if [ "$T_CONNS" = "$count" ] && [ "$T_DONE" = "$count" ] && [ "$T_FAILED" = 0 ] &&
		[ "$T_BYTES" = $((count * answer)) ] && [ "$T_TCPCT" = "$ct" ]; then
		ok "$name: $count of $count completed, $T_BYTES of $((count * answer)) bytes ($T_SECS s)"
	else
		not_ok "$name: $count of $count completed, $((count * answer)) bytes" \
			"$OUT; $(head -c 300 "$LAB_DIR/$name.err")"
	fi
}

# DIALECTS PATH: what tcpct-connect speaks on PATH (direct: the backend
# knows no TCPCT); ARGS DIALECT: its arguments for it.
dialects() { if [ "$1" = direct ]; then echo plain; else echo plain TCPCT; fi; }
args() { [ "$1" = TCPCT ] || echo +notcpct; }

# ANSWER[fam]: the hello answer's bytes, BIG[fam] the 64 KiB file's, as
# socat gets them direct; RT_OUT_DIRECT[fam], RT_IN_DIRECT[fam] and
# RT_DIRECT[fam], the retransmissions of the direct -n run (capture both
# ways, tcpct-connect's count).
declare -A ANSWER BIG RT_OUT_DIRECT RT_IN_DIRECT RT_DIRECT

# one_path PATH: socat's answers, and tcpct-connect's alone, on PATH.
one_path() {
	local path=$1 fam lens d rc
	for fam in 4 6; do
		fresh_addr "$fam"
		lens=$(socat_answers "$fam" "$FRESH" "$LAB_DIR/hello.req" "$SOCAT_N" | sort -u)
		if [ "$path" = direct ]; then
			ANSWER[$fam]=$lens
			BIG[$fam]=$(socat_answers "$fam" "$FRESH" "$LAB_DIR/big.req" 1)
			check "direct -$fam: socat gets one answer $SOCAT_N times (${lens//$'\n'/, } bytes; 64 KiB file: ${BIG[$fam]})" \
				[ "$(echo "$lens" | wc -l)" = 1 -a "${lens:-0}" -gt 100 -a "${BIG[$fam]}" -gt 65536 ]
		else
			check "tcpctd -$fam: socat gets the direct answer $SOCAT_N times (${lens//$'\n'/, } bytes)" \
				[ "$lens" = "${ANSWER[$fam]}" ]
		fi
		in_client timeout 10 socat -t 5 - "$(socat_to "$fam")" <"$LAB_DIR/hello.req" |
			no_date >"$LAB_DIR/socat.out"
		for d in $(dialects "$path"); do
			fresh_addr "$fam"
			in_client timeout 20 "$CONNECT" -$fam $(args "$d") -b "$FRESH" \
				"$(server "$fam")" 80 <"$LAB_DIR/hello.req" 2>"$LAB_DIR/one.err" |
				no_date >"$LAB_DIR/one.out"
			rc=${PIPESTATUS[0]}
			if [ "$rc" -eq 0 ] && cmp -s "$LAB_DIR/one.out" "$LAB_DIR/socat.out"; then
				ok "$path -$fam $d: tcpct-connect alone writes out socat's answer, exit 0"
			else
				not_ok "$path -$fam $d: tcpct-connect alone writes out socat's answer, exit 0" \
					"exit $rc, $(wc -c <"$LAB_DIR/one.out") of $(wc -c <"$LAB_DIR/socat.out") bytes; $(cat "$LAB_DIR/one.err")"
			fi
		done
	done
}

# n_runs PATH: on PATH, tcpct-connect -n: N hello answers, BIG_N big ones,
# per family and dialect.
n_runs() {
	local path=$1 fam d name ct
	for fam in 4 6; do
		for d in $(dialects "$path"); do
			name=$path-$fam-$d
			ct=0
			[ "$d" = TCPCT ] && ct=$N
			run_n "$name" "$fam" "$LAB_DIR/hello.req" "$N" $(args "$d")
			check_n "$path -$fam $d: -n $N, our FIN first" "$N" "${ANSWER[$fam]}" "$ct"
			if [ "$path" = direct ]; then
				RT_OUT_DIRECT[$fam]=$RT_OUT
				RT_IN_DIRECT[$fam]=$RT_IN
				RT_DIRECT[$fam]=$T_RT
			elif [ "$d" = TCPCT ]; then
				# tshark reads TCPCT's header extension as data, and
				# its sequence analysis then finds retransmissions
				# that are none: tcpct-connect's own count.
				check "$path -$fam $d: tcpct-connect sends nothing again that it does not direct ($T_RT; direct ${RT_DIRECT[$fam]})" \
					[ "$T_RT" -le "${RT_DIRECT[$fam]}" ]
			else
				check "$path -$fam $d: the client sends nothing again that it does not direct (on the wire $RT_OUT, direct ${RT_OUT_DIRECT[$fam]}; tcpct-connect's count $T_RT, direct ${RT_DIRECT[$fam]})" \
					[ "$RT_OUT" -le "${RT_OUT_DIRECT[$fam]}" -a "$T_RT" -le "${RT_DIRECT[$fam]}" ]
				# The server's kernel sends its last segment again
				# (a tail loss probe, a few ms on) when no ACK came
				# back in time: the initiator, or tcpctd between,
				# is a process on a loaded machine and was not run
				# (seen direct: 0 to 5 of 300 connections; through
				# tcpctd: 0 to 2), which is no loss of the path.
				check "$path -$fam $d: the server sends nothing again that it does not direct, within 2 % ($RT_IN; direct ${RT_IN_DIRECT[$fam]})" \
					[ "$RT_IN" -le $((RT_IN_DIRECT[$fam] + N / 50)) ]
			fi
			[ "$d" = TCPCT ] && ct=$BIG_N
			run_n "$name-big" "$fam" "$LAB_DIR/big.req" "$BIG_N" $(args "$d")
			check_n "$path -$fam $d: -n $BIG_N, 64 KiB answers after our FIN" \
				"$BIG_N" "${BIG[$fam]}" "$ct"
		done
	done
}

one_path direct
n_runs direct
tcpctd_start --protect "$BACKEND4:80" --protect "[$BACKEND6]:80" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
one_path tcpctd
n_runs tcpctd
# The clients' FINs that came while their backend connection opened went
# with the held request (held_fin), none was dropped.
dropped=$(tcpctd_counter early_dropped)
check "tcpctd dropped no early segment (early_dropped $dropped, held_fin $(tcpctd_counter held_fin))" \
	[ "$dropped" -eq 0 ]
tcpctd_finish
t_summary
