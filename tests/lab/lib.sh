# shellcheck shell=bash disable=SC2034,SC2119,SC2120,SC2016
# tests/lab/lib.sh: the network-namespace lab shared by tests, demo and benchmarks.
# Source it from bash (it is set -u and set -e safe); it changes no shell option.
#
#   client   198.51.100.2/24  2001:db8:c::2/64 ─veth─┐
#                                                     │ 198.51.100.1  2001:db8:c::1  (veth-client)
#   attacker 203.0.113.2/24   2001:db8:a::2/64 ─veth─ gw 203.0.113.1 2001:db8:a::1  (veth-attacker)
#            local 198.18.0.0/15, 2001:db8:f::/48     │ 192.0.2.1     2001:db8:b::1  (veth-backend)
#   backend  192.0.2.2/24     2001:db8:b::2/64 ─veth─┘
#
# gw is a router (forwarding on, rp_filter off) and routes the spoofed-source prefixes
# 198.18.0.0/15 and 2001:db8:f::/48 back to the attacker, so a spoofed flood from the
# attacker completes its handshakes. Every leaf's interface is "veth-gw". Namespaces are
# $LAB-client, $LAB-gw, $LAB-backend, $LAB-attacker with LAB=${LAB:-tct$$}.
#
# Usage:
#   . tests/lab/lib.sh
#   lab_trap                      # trap lab_down EXIT, and exit on INT/TERM (runs lab_down)
#   lab_up && nsd_start 10 && http_start
#   in_client kdig +tcp @"$BACKEND4" example.test A
#
# What was found out here (Linux 6.18.44, NSD 4.6.1, iproute2, Debian 12):
#
# loadgen (tests/load/loadgen.c, build/loadgen)
#  - The lab's load, on the kernel's own sockets. kxdpgun (knot-dnsutils) did it with
#    AF_XDP until 6.18.44, whose verifier refuses its XDP program ("program of this type
#    cannot use helper bpf_xdp_adjust_meta#54"), also with LIBXDP_SKIP_DISPATCHER=1.
#  - DNS modes: one kernel TCP socket per query, paced; from the next address of -l
#    PREFIX each time (IP_FREEBIND, IP_BIND_ADDRESS_NO_PORT: the kernel picks the port
#    at connect). The attacker's `local 198.18.0.0/15 dev lo` makes those addresses its
#    own, and gw routes them back. The abusive modes (idle, silent, partial, noack,
#    noclose, nofinack) are kxdpgun's -T2/-T3/-T5/-T7/-T8/-T9; "ignore everything" is a
#    socket filter that drops every segment before TCP sees it, so nothing more is ACKed.
#  - syn mode: SYNs with Linux's options from random addresses of PREFIX (all 80 host
#    bits of the IPv6 /48), by an IPPROTO_RAW socket and sendmmsg. Measured here, quiet
#    machine: 430k SYN/s at nsd directly, 330-600k through tcpctd (kxdpgun made
#    210-240k). At full speed it takes a core of the two.
#  - The SYN-ACKs that answer a spoofed SYN reach the attacker's kernel, which would
#    RST them and so free the server's half-open at once. _lab_spoof_sinks drops what
#    reaches a spoofed address with no socket instead (mangle, -m socket), as a host
#    that does not exist would, and counts the SYN-ACKs (spoof_synacks).
#  - One address making 10k connections/s runs out of ports in TIME_WAIT: client and
#    attacker get ip_local_port_range 1024-65535 and tcp_tw_reuse=1 (80,000 queries in
#    8 s from one address: 0 failures directly; the default range failed 14k of 28k).
#  - Report on stdout, "name: count" lines (sent, established, answered, noerror,
#    closed, held, refused, reset, timeout, bad_answer, no_source, failed); exit 0.
#    Exit 2 with "loadgen: ..." on stderr when it could not run. load_count, load_pct
#    and load_brief read the report.
#  - Through tcpctd a load from one address is never refused by the default per-client caps,
#    which count only connections that have not sent a whole query (max-pending-per-addr
#    25): over it tcpctd drops a handshake's ACK, and takes the connection with its query
#    (deferred_pending_*). It meets synack-rate (10,000 SYN-ACKs/s per /24) above that
#    rate: the tests that stand one address for many clients turn that off.
#
# netem
#  - This kernel is built without CONFIG_NET_SCH_NETEM and has no modules, so
#    `tc qdisc replace ... netem loss 1%` fails: "Error: Specified qdisc kind is unknown."
#    lab_loss then falls back to iptables `-m statistic --mode random` drops in the raw
#    PREROUTING of client and backend, on packets coming from gw. That is the loss netem
#    on gw's two egress interfaces would give (each packet through gw is lost once with
#    probability PCT, tcpctd's own injected packets included); it is silent for senders
#    (a drop in gw's OUTPUT or POSTROUTING would make a raw-socket sendto fail with
#    EPERM); and it keeps its rules out of gw, where tcpctd sets its own. Neighbour
#    discovery is exempt. LAB_LOSS_ACTIVE tells which method is in place (LAB_LOSS_METHOD
#    forces one); lab_loss_drops counts what was dropped.
#  - Loss hits whatever crosses the veth: with the default offloads a 20 MiB curl is
#    ~330 GSO packets and 1 % loss dropped 6 of them; after `lab_offload off` it dropped
#    144-198 MTU-sized packets, and the curl still took < 0.6 s.
#
# Other
#  - veth keeps TSO/GSO and checksum offload on (GRO off): packets cross it as 64 KB GSO
#    super-packets with partial checksums, so an NFQUEUE sees them segmented only if it
#    does not set NFQA_CFG_F_GSO, and a capture shows bad checksums for the kernel's own
#    packets. lab_offload off gives MTU-sized, fully checksummed packets.
#  - tcpdump needs --immediate-mode: otherwise libpcap hands packets over in blocks (1 s
#    timeout) and the SIGTERM of capture_stop lost the whole kdig exchange just captured.
#    It prints "tcpdump: listening on IFACE, ..." once the capture is in place.
#  - A netns has the host's /etc/resolv.conf and no route to its server, so anything that
#    resolves names or addresses waits for the resolver's timeout: `python3 -m http.server`
#    calls getfqdn() on its bind address and took 5 s to start. Use numeric addresses
#    and -n flags; http_start runs its own small server on http.server's classes.
#  - Processes keep a deleted netns alive, so lab_down kills what lab_spawn started and
#    then whatever else still runs inside the lab's own namespaces (`ip netns pids`).
#    `ip netns exec NS CMD &` gives CMD's own PID (ip execs it), but `(...) &` or
#    `a && b &` gives a subshell's: killing that one leaves CMD running.
#  - A script started with `&` from a non-interactive shell (CI, a test runner) has
#    SIGINT ignored, and bash cannot trap it then: only SIGTERM stops such a run cleanly.
#    From a terminal, Ctrl-C runs lab_trap's handler and the script exits 130 after
#    cleaning up, also while loadgen (which catches SIGINT) runs.
#  - nsd -d (foreground) forks its server and xfrd children in the same netns; TERM to
#    the parent stops them all. Its default cookie-secret-file, xfrdir and zonelistfile
#    point at system paths; nsd_start sets them all inside its temp dir.
#  - There is no ping in this image; check reachability with kdig/curl/socat.
#  - Measured here (2 cores, while another lab ran): lab_up 0.1 s, nsd_start 0.1 s,
#    http_start 0.25 s (20 MiB blob included), curl of the blob 0.1 s over IPv4 and over
#    IPv6, loadgen -t 2 runs 2 s, lab_down 0.13 s; t_00_lab.sh 10 s in all.

# ---------------------------------------------------------------------------------------
# Names and addresses

LAB=${LAB:-tct$$}
LOADGEN_BIN=${LOADGEN_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/loadgen}
NS_CLIENT=$LAB-client
NS_GW=$LAB-gw
NS_BACKEND=$LAB-backend
NS_ATTACKER=$LAB-attacker
LAB_NAMESPACES="$NS_CLIENT $NS_GW $NS_BACKEND $NS_ATTACKER"

# Interfaces: the leaves each have one, facing gw; gw has one per leaf.
LEAF_IF=veth-gw
CLIENT_IF=$LEAF_IF
BACKEND_IF=$LEAF_IF
ATTACKER_IF=$LEAF_IF
GW_IF_CLIENT=veth-client
GW_IF_BACKEND=veth-backend
GW_IF_ATTACKER=veth-attacker

CLIENT4=198.51.100.2
CLIENT6=2001:db8:c::2
GW_CLIENT4=198.51.100.1
GW_CLIENT6=2001:db8:c::1
BACKEND4=192.0.2.2
BACKEND6=2001:db8:b::2
GW_BACKEND4=192.0.2.1
GW_BACKEND6=2001:db8:b::1
ATTACKER4=203.0.113.2
ATTACKER6=2001:db8:a::2
GW_ATTACKER4=203.0.113.1
GW_ATTACKER6=2001:db8:a::1
NET_CLIENT4=198.51.100.0/24
NET_CLIENT6=2001:db8:c::/64
NET_BACKEND4=192.0.2.0/24
NET_BACKEND6=2001:db8:b::/64
NET_ATTACKER4=203.0.113.0/24
NET_ATTACKER6=2001:db8:a::/64
SPOOF4=198.18.0.0/15            # routed by gw to the attacker, local there
SPOOF6=2001:db8:f::/48

# DNS zone served by nsd_start.
ZONE=example.test
ZONE_A=$BACKEND4                # example.test A
ZONE_AAAA=$BACKEND6             # example.test AAAA
ZONE_NS=ns1.example.test
ZONE_BIG=big.example.test       # TXT, answer > 1500 bytes: TCP only
ZONE_BIG_STRINGS=8              # character-strings of 250 bytes each
ZONE_MANY=many.example.test     # ZONE_MANY_COUNT A records 198.18.1.1 ...
ZONE_MANY_COUNT=100

# Filled in by lab_up / nsd_start / http_start / lab_spawn / capture_start.
LAB_DIR=${LAB_DIR:-}
LAB_BPF=${LAB_BPF:-}
LAB_PID=
LAB_PIDS=()
LAB_ON_DOWN=()
declare -A LAB_CAPTURES=()
CAPTURE_PID=
LAB_LOSS_METHOD=${LAB_LOSS_METHOD:-auto}
LAB_LOSS_ACTIVE=
NSD_PID=
NSD_DIR=
NSD_CONF=
NSD_LOG=
LAB_QUERIES=
HTTP_DIR=
HTTP_PIDS=()
HTTP_BLOB=
HTTP_BLOB_SIZE=$((20 * 1024 * 1024))
HTTP_BLOB_SHA256=
HTTP_URL4=http://$BACKEND4/blob
HTTP_URL6=http://[$BACKEND6]/blob

# ---------------------------------------------------------------------------------------
# Small helpers

# rule_packets NS N: the packets rule N (from 1) of NS's filter INPUT chain has matched.
rule_packets() {
	ip netns exec "$1" iptables -L INPUT -v -x -n | awk -v r="$2" 'NR == r + 2 { print $1 }'
}

lab_log() { printf 'lab: %s\n' "$*" >&2; }

# _lab CMD...: run CMD; on failure say which command failed and return 1.
_lab() {
	_lab_echo "+ $*"
	"$@" && return 0
	lab_log "failed: $*"
	return 1
}

# _lab_echo TEXT: with LAB_VERBOSE=1, print TEXT on fd LAB_VERBOSE_FD (default 2, stderr;
# a test that captures its checks' stderr can dup the real one, e.g. exec 3>&2).
_lab_echo() {
	[ "${LAB_VERBOSE:-0}" = 1 ] || return 0
	printf '%s\n' "$*" >&"${LAB_VERBOSE_FD:-2}"
}

# in_ns NS CMD...: run CMD in netns NS, echoing "[NS] CMD" first when LAB_VERBOSE=1.
in_ns() {
	local ns=$1
	shift
	_lab_echo "[$ns] $*"
	ip netns exec "$ns" "$@"
}
in_client() { in_ns "$NS_CLIENT" "$@"; }
in_gw() { in_ns "$NS_GW" "$@"; }
in_backend() { in_ns "$NS_BACKEND" "$@"; }
in_attacker() { in_ns "$NS_ATTACKER" "$@"; }

# _lab_tenths SECONDS: SECONDS (may be a decimal) in tenths, at least 1.
_lab_tenths() { awk -v t="$1" 'BEGIN { n = int(t * 10); print (n < 1 ? 1 : n) }'; }

# wait_until TIMEOUT CMD...: rerun CMD every 0.1 s until it succeeds; 1 after TIMEOUT s.
wait_until() {
	local n
	n=$(_lab_tenths "$1")
	shift
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# wait_log FILE REGEX TIMEOUT: 0 once FILE has a line matching the extended REGEX.
wait_log() {
	wait_until "$3" grep -Eq -- "$2" "$1" && return 0
	lab_log "no /$2/ in $1 after $3 s"
	return 1
}

# _lab_alive PID: 0 while PID exists and is not a zombie.
_lab_alive() {
	local state
	kill -0 "$1" 2>/dev/null || return 1
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ "$state" != Z ]
}

# kill_wait PID [TIMEOUT]: SIGTERM PID, SIGKILL it after TIMEOUT s (default 5), and reap
# it when it is our child. 0 when it is gone (also when it was gone already).
kill_wait() {
	local pid=$1 n
	n=$(_lab_tenths "${2:-5}")
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	while _lab_alive "$pid" && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	if _lab_alive "$pid"; then
		lab_log "pid $pid ignored SIGTERM, sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		wait_until 2 eval "! _lab_alive $pid" || true
	fi
	wait "$pid" 2>/dev/null || true
	return 0
}

# _lab_forget PID: drop PID from LAB_PIDS.
_lab_forget() {
	local p keep=()
	for p in "${LAB_PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	LAB_PIDS=("${keep[@]}")
}

# lab_spawn NS LOG CMD...: start CMD in netns NS in the background, stdin from /dev/null,
# stdout and stderr to LOG. Its PID goes to LAB_PID and onto LAB_PIDS, which lab_down
# kills. (ip netns exec execs CMD, so the PID is CMD's own.)
lab_spawn() {
	local ns=$1 log=$2
	shift 2
	_lab_echo "[$ns] $* &"
	ip netns exec "$ns" "$@" </dev/null >"$log" 2>&1 &
	LAB_PID=$!
	LAB_PIDS+=("$LAB_PID")
}

# lab_kill PID: kill_wait PID and forget it.
lab_kill() {
	kill_wait "$1" "${2:-5}"
	_lab_forget "$1"
}

# wait_port NS ADDR PORT [TIMEOUT]: 0 once a TCP socket listens on ADDR:PORT in NS
# (a wildcard listener counts). Looks with ss, so it sends nothing. TIMEOUT default 10 s.
wait_port() {
	wait_until "${4:-10}" _lab_listening "$1" "$2" "$3" && return 0
	lab_log "nothing listens on $2 port $3 in $1"
	return 1
}
_lab_listening() {
	ip netns exec "$1" ss -Hltn "sport = :$3" |
		awk -v a="$2" -v p="$3" '
			{ l = $4 }
			l == a ":" p || l == "[" a "]:" p || l == "*:" p ||
			l == "0.0.0.0:" p || l == "[::]:" p { found = 1 }
			END { exit !found }'
}

# lab_trap: make lab_down run on exit, and turn INT/TERM into an exit (128 + signal).
lab_trap() {
	trap lab_down EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# lab_on_down CMD: eval CMD first thing in lab_down (extra cleanup of a test).
lab_on_down() { LAB_ON_DOWN+=("$1"); }

# ---------------------------------------------------------------------------------------
# Topology

# lab_up: remove any lab of this $LAB, then build the four namespaces, links, addresses
# and routes, and a temp dir LAB_DIR for everything else. 0 on success; on failure it
# names the command that failed and returns 1 (lab_down still cleans up).
lab_up() {
	local ns leaf ifc i
	_lab_teardown
	LAB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$LAB.XXXXXX") || return 1
	# A bpf filesystem of the lab's own, for what tcpctd pins (the kernel's
	# flows across a restart): each mount is a filesystem apart, so that
	# labs running side by side never see each other's pins.
	LAB_BPF=$LAB_DIR/bpf
	mkdir -p "$LAB_BPF" && mount -t bpf lab-bpf "$LAB_BPF" 2>/dev/null || LAB_BPF=
	for ns in $LAB_NAMESPACES; do
		_lab ip netns add "$ns" || return 1
		_lab ip -n "$ns" link set lo up || return 1
		# Before any interface exists, so every address (link-local too) is usable at once.
		_lab ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.conf.default.accept_dad=0 || return 1
	done
	for leaf in client backend attacker; do
		ifc=veth-$leaf
		_lab ip -n "$NS_GW" link add "$ifc" type veth peer name "$LEAF_IF" \
			netns "$LAB-$leaf" || return 1
	done

	_lab ip -n "$NS_GW" addr add "$GW_CLIENT4/24" dev "$GW_IF_CLIENT" || return 1
	_lab ip -n "$NS_GW" addr add "$GW_CLIENT6/64" dev "$GW_IF_CLIENT" nodad || return 1
	_lab ip -n "$NS_GW" addr add "$GW_BACKEND4/24" dev "$GW_IF_BACKEND" || return 1
	_lab ip -n "$NS_GW" addr add "$GW_BACKEND6/64" dev "$GW_IF_BACKEND" nodad || return 1
	_lab ip -n "$NS_GW" addr add "$GW_ATTACKER4/24" dev "$GW_IF_ATTACKER" || return 1
	_lab ip -n "$NS_GW" addr add "$GW_ATTACKER6/64" dev "$GW_IF_ATTACKER" nodad || return 1
	_lab ip -n "$NS_CLIENT" addr add "$CLIENT4/24" dev "$LEAF_IF" || return 1
	_lab ip -n "$NS_CLIENT" addr add "$CLIENT6/64" dev "$LEAF_IF" nodad || return 1
	_lab ip -n "$NS_BACKEND" addr add "$BACKEND4/24" dev "$LEAF_IF" || return 1
	_lab ip -n "$NS_BACKEND" addr add "$BACKEND6/64" dev "$LEAF_IF" nodad || return 1
	_lab ip -n "$NS_ATTACKER" addr add "$ATTACKER4/24" dev "$LEAF_IF" || return 1
	_lab ip -n "$NS_ATTACKER" addr add "$ATTACKER6/64" dev "$LEAF_IF" nodad || return 1

	for i in "$GW_IF_CLIENT" "$GW_IF_BACKEND" "$GW_IF_ATTACKER"; do
		_lab ip -n "$NS_GW" link set "$i" up || return 1
	done
	for ns in "$NS_CLIENT" "$NS_BACKEND" "$NS_ATTACKER"; do
		_lab ip -n "$ns" link set "$LEAF_IF" up || return 1
	done

	# Clients that open thousands of connections a second from one address (loadgen):
	# every port, and TIME_WAIT's tuples reused after a second as RFC 6191 allows.
	for ns in "$NS_CLIENT" "$NS_ATTACKER"; do
		_lab ip netns exec "$ns" sysctl -qw "net.ipv4.ip_local_port_range=1024 65535" \
			net.ipv4.tcp_tw_reuse=1 || return 1
	done
	_lab ip netns exec "$NS_GW" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv6.conf.all.forwarding=1 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0 || return 1
	for i in "$GW_IF_CLIENT" "$GW_IF_BACKEND" "$GW_IF_ATTACKER"; do
		_lab ip netns exec "$NS_GW" sysctl -qw "net.ipv4.conf.$i.rp_filter=0" || return 1
	done

	_lab ip -n "$NS_CLIENT" route add default via "$GW_CLIENT4" || return 1
	_lab ip -n "$NS_CLIENT" -6 route add default via "$GW_CLIENT6" || return 1
	_lab ip -n "$NS_BACKEND" route add default via "$GW_BACKEND4" || return 1
	_lab ip -n "$NS_BACKEND" -6 route add default via "$GW_BACKEND6" || return 1
	_lab ip -n "$NS_ATTACKER" route add default via "$GW_ATTACKER4" || return 1
	_lab ip -n "$NS_ATTACKER" -6 route add default via "$GW_ATTACKER6" || return 1
	# Spoofed-source prefixes: gw sends the answers to the attacker, which takes them as local.
	_lab ip -n "$NS_GW" route add "$SPOOF4" via "$ATTACKER4" || return 1
	_lab ip -n "$NS_GW" -6 route add "$SPOOF6" via "$ATTACKER6" || return 1
	_lab ip -n "$NS_ATTACKER" route add local "$SPOOF4" dev lo || return 1
	_lab ip -n "$NS_ATTACKER" -6 route add local "$SPOOF6" dev lo || return 1
	_lab_spoof_sinks || return 1
	return 0
}

# _lab_spoof_sinks: in the attacker, the spoofed prefixes behave as hosts that do not
# exist: what reaches an address of theirs with no socket of loadgen's (a SYN-ACK to a
# flooded SYN, say) is dropped, where the kernel would answer it with a RST. Chain
# lab-spoof's rule 2 counts those SYN-ACKs (spoof_synacks reads it).
_lab_spoof_sinks() {
	local ipt net
	for ipt in iptables ip6tables; do
		net=$SPOOF4
		[ "$ipt" = iptables ] || net=$SPOOF6
		_lab ip netns exec "$NS_ATTACKER" "$ipt" -t mangle -N lab-spoof || return 1
		_lab ip netns exec "$NS_ATTACKER" "$ipt" -t mangle -A PREROUTING -d "$net" -p tcp \
			-j lab-spoof || return 1
		_lab ip netns exec "$NS_ATTACKER" "$ipt" -t mangle -A lab-spoof \
			-m socket --nowildcard -j RETURN || return 1
		_lab ip netns exec "$NS_ATTACKER" "$ipt" -t mangle -A lab-spoof \
			-p tcp --tcp-flags SYN,ACK,RST SYN,ACK -j DROP || return 1
		_lab ip netns exec "$NS_ATTACKER" "$ipt" -t mangle -A lab-spoof -j DROP || return 1
	done
}

# spoof_synacks: the SYN-ACKs that reached spoofed sources without a socket (IPv4 and
# IPv6 together) since the lab came up.
spoof_synacks() {
	local ipt n=0 c
	for ipt in iptables ip6tables; do
		c=$(ip netns exec "$NS_ATTACKER" "$ipt" -t mangle -L lab-spoof -v -x -n |
			awk 'NR == 4 { print $1 }')
		n=$((n + ${c:-0}))
	done
	echo "$n"
}

# lab_down: stop captures and every process of the lab, delete its namespaces and LAB_DIR.
# Safe to call any number of times, with or without a lab, also from an EXIT trap
# under set -e. Always returns 0.
lab_down() {
	local errexit=0 cmd
	case $- in *e*) errexit=1 ;; esac
	set +e
	for cmd in "${LAB_ON_DOWN[@]}"; do
		eval "$cmd"
	done
	LAB_ON_DOWN=()
	_lab_teardown
	if [ "$errexit" = 1 ]; then set -e; fi
	return 0
}

# _lab_teardown: lab_down without the lab_on_down hooks (lab_up starts with it).
_lab_teardown() {
	local errexit=0 ns pid i
	case $- in *e*) errexit=1 ;; esac
	set +e
	capture_stop
	for ((i = ${#LAB_PIDS[@]} - 1; i >= 0; i--)); do
		kill_wait "${LAB_PIDS[i]}"
	done
	LAB_PIDS=()
	NSD_PID=
	HTTP_PIDS=()
	for ns in $LAB_NAMESPACES; do
		[ -e "/run/netns/$ns" ] || continue
		# Anything still running in our own namespaces was started by this lab.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill_wait "$pid" 2
		done
		ip netns del "$ns" 2>/dev/null || lab_log "cannot delete netns $ns"
	done
	[ -z "${LAB_BPF:-}" ] || umount "$LAB_BPF" 2>/dev/null || lab_log "cannot unmount $LAB_BPF"
	LAB_BPF=
	case $LAB_DIR in
	"${TMPDIR:-/tmp}/$LAB".??????) rm -rf -- "$LAB_DIR" ;;
	esac
	LAB_DIR=
	LAB_LOSS_ACTIVE=
	if [ "$errexit" = 1 ]; then set -e; fi
	return 0
}

# lab_reap_stale: delete the namespaces tct<PID>-* and temp files tct<PID>.* left by runs
# whose PID is gone (SIGKILL), killing what still runs in them. Not called by lab_up:
# call it by hand or from a CI runner. Always 0.
lab_reap_stale() {
	local ns pid p d
	for ns in $(ip netns list | awk '{ print $1 }'); do
		case $ns in
		tct*-client | tct*-gw | tct*-backend | tct*-attacker | tct*-gw2 | tct*-router) ;;
		*) continue ;;
		esac
		pid=${ns#tct}
		pid=${pid%%-*}
		case $pid in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null && continue
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill_wait "$p" 2
		done
		ip netns del "$ns" && lab_log "removed stale netns $ns"
	done
	for d in "${TMPDIR:-/tmp}"/tct[0-9]*.*; do
		[ -e "$d" ] || continue
		pid=${d##*/tct}
		pid=${pid%%.*}
		case $pid in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null && continue
		rm -rf -- "$d" && lab_log "removed stale $d"
	done
	return 0
}

# lab_offload off|on: off switches checksum offload, TSO, GSO and GRO off on every veth of
# the lab (MTU-sized, fully checksummed packets on the wire); on restores veth's
# defaults (tx, rx, tso, gso on; gro off). 1 if ethtool fails.
lab_offload() {
	local ns i gro=off
	case $1 in
	on | off) ;;
	*) lab_log "lab_offload: on or off, not '$1'"; return 1 ;;
	esac
	for ns in "$NS_CLIENT" "$NS_BACKEND" "$NS_ATTACKER" "$NS_GW"; do
		for i in $(ip -n "$ns" -o link show type veth | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
			_lab ip netns exec "$ns" ethtool -K "$i" tx "$1" rx "$1" tso "$1" gso "$1" \
				gro "$gro" >/dev/null || return 1
		done
	done
}

# ---------------------------------------------------------------------------------------
# Loss

# lab_loss PCT: lose PCT percent (decimal allowed) of the packets gw sends to the client
# and to the backend, i.e. of both directions through gw. netem on gw's two egress
# interfaces when the kernel has it, else iptables random drops where those packets
# arrive (see the top of this file). LAB_LOSS_METHOD=auto|netem|iptables picks;
# LAB_LOSS_ACTIVE says which is in place. 1 with a message when none can be set up.
lab_loss() {
	local pct=$1 prob ns ipt err
	lab_loss_clear
	if [ "$LAB_LOSS_METHOD" != iptables ]; then
		if err=$(tc -n "$NS_GW" qdisc replace dev "$GW_IF_CLIENT" root netem \
			loss "$pct%" 2>&1) &&
			err=$(tc -n "$NS_GW" qdisc replace dev "$GW_IF_BACKEND" root netem \
				loss "$pct%" 2>&1); then
			LAB_LOSS_ACTIVE=netem
			return 0
		fi
		tc -n "$NS_GW" qdisc del dev "$GW_IF_CLIENT" root 2>/dev/null || true
		if [ "$LAB_LOSS_METHOD" = netem ]; then
			lab_log "lab_loss: sch_netem does not work here: $err"
			return 1
		fi
	fi
	prob=$(awk -v p="$pct" 'BEGIN { printf "%.6f", p / 100 }')
	for ns in "$NS_CLIENT" "$NS_BACKEND"; do
		for ipt in iptables ip6tables; do
			if ! _lab_loss_rules "$ns" "$ipt" "$prob"; then
				lab_log "lab_loss: neither netem nor $ipt statistic drops work here"
				lab_loss_clear
				return 1
			fi
		done
	done
	LAB_LOSS_ACTIVE=iptables
	return 0
}

# _lab_loss_rules NS IPTABLES PROB: chain LAB_LOSS in NS's raw table drops packets that
# come in on LEAF_IF with probability PROB (neighbour discovery excepted).
_lab_loss_rules() {
	local ns=$1 ipt=$2 t
	ip netns exec "$ns" "$ipt" -w -t raw -N LAB_LOSS || return 1
	if [ "$ipt" = ip6tables ]; then
		for t in neighbour-solicitation neighbour-advertisement; do
			ip netns exec "$ns" "$ipt" -w -t raw -A LAB_LOSS -p icmpv6 \
				--icmpv6-type "$t" -j RETURN || return 1
		done
	fi
	ip netns exec "$ns" "$ipt" -w -t raw -A LAB_LOSS -m statistic --mode random \
		--probability "$3" -j DROP || return 1
	ip netns exec "$ns" "$ipt" -w -t raw -I PREROUTING -i "$LEAF_IF" -j LAB_LOSS
}

# lab_loss_clear: remove what lab_loss set up (either kind). Always 0.
lab_loss_clear() {
	local ns ipt
	tc -n "$NS_GW" qdisc del dev "$GW_IF_CLIENT" root 2>/dev/null || true
	tc -n "$NS_GW" qdisc del dev "$GW_IF_BACKEND" root 2>/dev/null || true
	for ns in "$NS_CLIENT" "$NS_BACKEND"; do
		[ -e "/run/netns/$ns" ] || continue
		for ipt in iptables ip6tables; do
			ip netns exec "$ns" "$ipt" -w -t raw -D PREROUTING -i "$LEAF_IF" \
				-j LAB_LOSS 2>/dev/null || true
			ip netns exec "$ns" "$ipt" -w -t raw -F LAB_LOSS 2>/dev/null || true
			ip netns exec "$ns" "$ipt" -w -t raw -X LAB_LOSS 2>/dev/null || true
		done
	done
	LAB_LOSS_ACTIVE=
	return 0
}

# lab_loss_drops: print how many packets lab_loss has dropped so far.
lab_loss_drops() {
	local ns ipt total=0 n
	case $LAB_LOSS_ACTIVE in
	netem)
		for n in "$GW_IF_CLIENT" "$GW_IF_BACKEND"; do
			n=$(tc -n "$NS_GW" -s qdisc show dev "$n" |
				awk '/dropped/ { sub(",", "", $7); print $7; exit }') || n=0
			total=$((total + ${n:-0}))
		done
		;;
	iptables)
		for ns in "$NS_CLIENT" "$NS_BACKEND"; do
			for ipt in iptables ip6tables; do
				n=$(ip netns exec "$ns" "$ipt" -w -t raw -L LAB_LOSS -nvx |
					awk '$3 == "DROP" { print $1 }') || n=0
				total=$((total + ${n:-0}))
			done
		done
		;;
	esac
	echo "$total"
}

# ---------------------------------------------------------------------------------------
# DNS backend

# nsd_start [TCP_COUNT]: start nsd in the backend on BACKEND4 and BACKEND6 port 53 with
# zone $ZONE, from a config in LAB_DIR/nsd that touches no system file. TCP_COUNT is
# nsd's tcp-count (default 100). Environment: NSD_TCP_TIMEOUT (tcp-timeout, nsd default
# 120), NSD_VERBOSITY (default 1), NSD_SERVERS (server-count, default 1), NSD_EXTRA_CONF
# (lines added to server:). Also writes LAB_QUERIES. 0 once nsd answers over TCP on
# both addresses; NSD_PID, NSD_LOG set.
nsd_start() {
	local tcp_count=${1:-100} i
	[ -n "$LAB_DIR" ] || { lab_log "nsd_start: no lab (lab_up first)"; return 1; }
	nsd_stop
	NSD_DIR=$LAB_DIR/nsd
	NSD_CONF=$NSD_DIR/nsd.conf
	NSD_LOG=$NSD_DIR/nsd.log
	mkdir -p "$NSD_DIR" || return 1
	cat >"$NSD_CONF" <<-EOF || return 1
		server:
			ip-address: $BACKEND4
			ip-address: $BACKEND6
			port: 53
			username: ""
			chroot: ""
			database: ""
			zonesdir: "$NSD_DIR"
			zonelistfile: "$NSD_DIR/zone.list"
			xfrdfile: "$NSD_DIR/xfrd.state"
			xfrdir: "$NSD_DIR"
			pidfile: "$NSD_DIR/nsd.pid"
			logfile: "$NSD_LOG"
			cookie-secret-file: "$NSD_DIR/cookiesecrets.txt"
			server-count: ${NSD_SERVERS:-1}
			tcp-count: $tcp_count
			tcp-timeout: ${NSD_TCP_TIMEOUT:-120}
			verbosity: ${NSD_VERBOSITY:-1}
			hide-version: yes
		${NSD_EXTRA_CONF:-}
		remote-control:
			control-enable: no
		zone:
			name: "$ZONE."
			zonefile: "$ZONE.zone"
	EOF
	{
		printf '$ORIGIN %s.\n$TTL 300\n' "$ZONE"
		printf '@ IN SOA %s. hostmaster.%s. 1 3600 900 604800 300\n' "$ZONE_NS" "$ZONE"
		printf '@ IN NS %s.\n' "$ZONE_NS"
		printf '@ IN A %s\n@ IN AAAA %s\n' "$ZONE_A" "$ZONE_AAAA"
		printf 'ns1 IN A %s\nns1 IN AAAA %s\n' "$BACKEND4" "$BACKEND6"
		printf 'www IN A %s\nwww IN AAAA %s\n' "$BACKEND4" "$BACKEND6"
		for ((i = 0; i < ZONE_BIG_STRINGS; i++)); do
			printf 'big IN TXT "%s"\n' "$(printf "%0250d" "$i" | tr 0 x)"
		done
		for ((i = 1; i <= ZONE_MANY_COUNT; i++)); do
			printf 'many IN A 198.18.%d.%d\n' $((i / 250 + 1)) $((i % 250))
		done
	} >"$NSD_DIR/$ZONE.zone" || return 1
	LAB_QUERIES=$LAB_DIR/queries.txt
	printf '%s. A\n%s. AAAA\nwww.%s. A\nwww.%s. AAAA\n%s. SOA\n' \
		"$ZONE" "$ZONE" "$ZONE" "$ZONE" "$ZONE" >"$LAB_QUERIES" || return 1
	_lab nsd-checkconf "$NSD_CONF" || return 1
	lab_spawn "$NS_BACKEND" "$NSD_DIR/nsd.stderr" nsd -d -c "$NSD_CONF"
	NSD_PID=$LAB_PID
	if ! wait_until 10 _nsd_answers "$BACKEND4" || ! wait_until 5 _nsd_answers "$BACKEND6"; then
		lab_log "nsd_start: nsd does not answer; log:"
		cat "$NSD_LOG" "$NSD_DIR/nsd.stderr" >&2 2>/dev/null || true
		nsd_stop
		return 1
	fi
}
_nsd_answers() {
	_lab_alive "$NSD_PID" || return 1
	ip netns exec "$NS_BACKEND" kdig +tcp +time=1 +retry=0 @"$1" "$ZONE" SOA 2>&1 |
		grep -q 'status: NOERROR'
}

# nsd_stop: stop the nsd of nsd_start, if any.
nsd_stop() {
	[ -n "$NSD_PID" ] || return 0
	lab_kill "$NSD_PID"
	NSD_PID=
}

# ---------------------------------------------------------------------------------------
# HTTP backend

# http_start: serve LAB_DIR/http on port 80 of BACKEND4 and BACKEND6 (python3's
# http.server classes, threaded, one process for both addresses). It holds "blob",
# HTTP_BLOB_SIZE random bytes (20 MiB) whose sha256 is HTTP_BLOB_SHA256, and "hello".
# URLs: HTTP_URL4, HTTP_URL6. Access log: LAB_DIR/http.log.
http_start() {
	local a
	[ -n "$LAB_DIR" ] || { lab_log "http_start: no lab (lab_up first)"; return 1; }
	http_stop
	HTTP_DIR=$LAB_DIR/http
	HTTP_BLOB=$HTTP_DIR/blob
	mkdir -p "$HTTP_DIR" || return 1
	head -c "$HTTP_BLOB_SIZE" /dev/urandom >"$HTTP_BLOB" || return 1
	HTTP_BLOB_SHA256=$(sha256sum "$HTTP_BLOB" | awk '{ print $1 }')
	echo hello >"$HTTP_DIR/hello"
	# `python3 -m http.server` calls getfqdn() on its address: a reverse lookup that
	# waits 5 s for the host's unreachable resolver. This one skips it.
	cat >"$LAB_DIR/httpd.py" <<-'EOF' || return 1
		import functools, http.server, socket, socketserver, sys, threading
		directory, port, addrs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
		handler = functools.partial(http.server.SimpleHTTPRequestHandler,
		                            directory=directory)
		class Server(http.server.ThreadingHTTPServer):
		    def server_bind(self):
		        socketserver.TCPServer.server_bind(self)
		        self.server_name, self.server_port = self.server_address[:2]
		servers = []
		for a in addrs:
		    Server.address_family = socket.AF_INET6 if ":" in a else socket.AF_INET
		    servers.append(Server((a, port), handler))
		for s in servers[1:]:
		    threading.Thread(target=s.serve_forever, daemon=True).start()
		print("serving", directory, "on", addrs, "port", port, flush=True)
		servers[0].serve_forever()
	EOF
	lab_spawn "$NS_BACKEND" "$LAB_DIR/http.log" /usr/bin/python3 -u "$LAB_DIR/httpd.py" \
		"$HTTP_DIR" 80 "$BACKEND4" "$BACKEND6"
	HTTP_PIDS=("$LAB_PID")
	for a in "$BACKEND4" "$BACKEND6"; do
		wait_port "$NS_BACKEND" "$a" 80 10 || { cat "$LAB_DIR/http.log" >&2; http_stop; return 1; }
	done
}

# http_stop: stop the servers of http_start, if any.
# http_fetch URL: the blob from URL with curl in the client (at most 110 s); 0 when
# its sha256 is the blob's.
http_fetch() {
	local out=$LAB_DIR/fetched sum
	rm -f "$out"
	ip netns exec "$NS_CLIENT" timeout 120 curl -sg --max-time 110 -o "$out" "$1" || return 1
	sum=$(sha256sum "$out" | awk '{ print $1 }')
	rm -f "$out"
	[ "$sum" = "$HTTP_BLOB_SHA256" ]
}

http_stop() {
	local p
	for p in "${HTTP_PIDS[@]}"; do
		lab_kill "$p"
	done
	HTTP_PIDS=()
}

# ---------------------------------------------------------------------------------------
# Attacker

# loadgen NS ARGS...: run the lab's load generator (tests/load/loadgen.c) with ARGS in
# NS, bounded in time (its -t plus LAB_LOADGEN_SLACK, default 30 s). Prints its report
# (stdout and stderr); returns its status, which is not 0 when it could not run: a test
# reads that as a failure with the tool's message, never as zero answers.
loadgen() {
	local ns=$1
	shift
	in_ns "$ns" timeout -k 5 "$(_loadgen_limit "$@")" "$LOADGEN_BIN" "$@" 2>&1
}

# loadgen_bg NS OUT ARGS...: loadgen in the background, its report into OUT; the PID is
# LAB_PID (lab_down stops it). loadgen_wait PID OUT: wait for it; 1, with its report on
# stderr, when it failed.
loadgen_bg() {
	local ns=$1 out=$2
	shift 2
	lab_spawn "$ns" "$out" timeout -k 5 "$(_loadgen_limit "$@")" "$LOADGEN_BIN" "$@"
}
loadgen_wait() {
	local rc=0
	wait "$1" || rc=$?
	_lab_forget "$1"
	[ "$rc" -eq 0 ] && return 0
	lab_log "loadgen failed (exit $rc): $(tr '\n' ' ' <"$2")"
	return 1
}

# _loadgen_limit ARGS...: loadgen's -t in ARGS (default 2) plus LAB_LOADGEN_SLACK.
_loadgen_limit() {
	local t=2
	while [ $# -gt 0 ]; do
		[ "$1" != -t ] || { t=${2:-2}; shift; }
		shift
	done
	awk -v t="$t" -v s="${LAB_LOADGEN_SLACK:-30}" 'BEGIN { printf "%d\n", t + s + 0.999 }'
}

# trafgen_cfg KIND DST DIR: the trafgen configuration (written once into DIR) of a flood
# KIND to DST port 53 from random addresses and ports of SPOOF4 (DST IPv4) or SPOOF6
# (IPv6); prints its path. trafgen fills in every checksum (csumip, csumtcp, csumtcp6).
#   syn          SYNs with the options a Linux client sends (MSS 1460, SACK permitted,
#                timestamps, window scale 7);
#   ack          forged ACKs with random sequence and acknowledgment numbers and
#                timestamps, as a blind attacker sends them;
#   syn-ipopt    the SYNs with 4 bytes of IPv4 options (NOP NOP NOP EOL);
#   ack-ipopt    the ACKs with them;
#   syn-dstopt   IPv6: the SYNs behind an 8-byte Destination Options header (a PadN);
#   ack-dstopt   IPv6: the ACKs behind one.
trafgen_cfg() {
	local kind=$1 dst=$2 f=$3/trafgen-$1-$2.cfg mac daddr tcp
	[ "$SPOOF4" = 198.18.0.0/15 ] && [ "$SPOOF6" = 2001:db8:f::/48 ] ||
		{ lab_log "trafgen_cfg: written for 198.18.0.0/15 and 2001:db8:f::/48"; return 1; }
	[ -e "$f" ] && { echo "$f"; return 0; }
	mac=$(ip -n "$NS_GW" -br link show "$GW_IF_ATTACKER" | awk '{ print $3 }')
	daddr=$(/usr/bin/python3 -c 'import ipaddress, sys
print(", ".join(str(b) for b in ipaddress.ip_address(sys.argv[1]).packed))' "$dst") || return 1
	# TCP from its source port to its urgent pointer, then its options: the SYN's
	# MSS, SACK permitted, TS (TSval, TSecr 0), NOP, WS; the ACK's NOP, NOP, TS.
	case $kind in
	syn*) tcp='drnd(2), c16(53), drnd(4), c32(0), 0xa0, 0x02, c16(64240), CSUM, c16(0),
  c8(2), c8(4), c16(1460), c8(4), c8(2), c8(8), c8(10), drnd(4), c32(0), c8(1), c8(3), c8(3), c8(7)' ;;
	ack*) tcp='drnd(2), c16(53), drnd(4), drnd(4), 0x80, 0x10, c16(502), CSUM, c16(0),
  c8(1), c8(1), c8(8), c8(10), drnd(4), drnd(4)' ;;
	esac
	{
		echo "# tests/lab/lib.sh: $kind flood -> $dst:53"
		echo '{'
		case $kind in
		*-dstopt) echo "  eth(da=$mac, type=0x86dd)," ;;
		*-ipopt) echo "  eth(da=$mac, type=0x0800)," ;;
		*) echo "  eth(da=$mac)," ;;
		esac
		case $kind in
		syn)
			echo "  ipv4(id=drnd(), df, ttl=64, sa=198.18.0.0, sa[1]=drnd(18, 19), sa[2:2]=drnd(), da=$dst),"
			echo '  tcp(sp=drnd(1024, 65535), dp=53, seq=drnd(), syn, win=64240, doff=10),'
			echo '  c8(2), c8(4), c16(1460), c8(4), c8(2), c8(8), c8(10), drnd(4), c32(0),'
			echo '  c8(1), c8(3), c8(3), c8(7)'
			;;
		ack)
			echo "  ipv4(id=drnd(), df, ttl=64, sa=198.18.0.0, sa[1]=drnd(18, 19), sa[2:2]=drnd(), da=$dst),"
			echo '  tcp(sp=drnd(1024, 65535), dp=53, seq=drnd(), aseq=drnd(), ack, win=502, doff=8),'
			echo '  c8(1), c8(1), c8(8), c8(10), drnd(4), drnd(4)'
			;;
		syn-ipopt | ack-ipopt)
			# The IPv4 header whole (IHL 6), from 14 to 37; TCP from 38.
			echo "  0x46, 0, c16($([ "$kind" = syn-ipopt ] && echo 64 || echo 56)), drnd(2), c16(0x4000), 64, 6, csumip(14, 37),"
			echo "  198, dinc(18, 19), drnd(2), $daddr, 1, 1, 1, 0,"
			echo "  ${tcp/CSUM/csumtcp(14, 38)}"
			;;
		syn-dstopt | ack-dstopt)
			# IPv6 (next header 60) from 14, the Destination Options header
			# (next header TCP, PadN) from 54, TCP from 62.
			echo "  0x60, 0, 0, 0, c16($([ "$kind" = syn-dstopt ] && echo 48 || echo 40)), 60, 64,"
			echo "  0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0f, drnd(10), $daddr,"
			echo '  6, 0, 1, 4, 0, 0, 0, 0,'
			echo "  ${tcp/CSUM/csumtcp6(14, 62)}"
			;;
		*) lab_log "trafgen_cfg: no kind '$kind'"; return 1 ;;
		esac
		echo '}'
	} >"$f" || return 1
	echo "$f"
}

# trafgen_bg OUT CFG SECS COUNT: trafgen in the attacker, at full speed (no rate or gap
# option: the TX ring, the qdisc bypassed) from one process (-P 1, which trafgen pins to
# CPU 0), until SECS (timeout's SIGINT, on which it prints its counts) or COUNT packets.
# It neither tunes the host's socket memory nor touches IRQ affinity. PID in LAB_PID.
trafgen_bg() {
	lab_spawn "$NS_ATTACKER" "$1" timeout -k 5 -s INT "$3" trafgen -i "$2" \
		-o "$ATTACKER_IF" -P 1 -n "$4" --no-sock-mem --notouch-irq
}
# trafgen_wait PID OUT: wait for it; 1, with its output on stderr, when it failed
# (timeout's 124 is its normal end).
trafgen_wait() {
	local rc=0
	wait "$1" || rc=$?
	_lab_forget "$1"
	if { [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; } && grep -q 'packets outgoing' "$2"; then
		return 0
	fi
	lab_log "trafgen failed (exit $rc): $(tr '\r\n' '  ' <"$2")"
	return 1
}
# trafgen_sent OUT: "packets seconds" from its closing lines ("S sec, U usec on CPUn
# (P packets)", one per process).
trafgen_sent() {
	tr '\r' '\n' <"$1" | awk '$2 == "sec," && $4 == "usec" {
		t = $1 + $3 / 1e6; if (t > m) m = t; p = $7; gsub(/[^0-9]/, "", p); n += p }
		END { printf "%d %.3f\n", n, m }'
}

# load_count OUTPUT NAME: the count on loadgen's line "NAME: N" (sent, established,
# answered, failed, ...); 0 when OUTPUT has no such line.
load_count() {
	printf '%s\n' "$1" | awk -v n="$2:" '$1 == n { v = $2 } END { print v + 0 }'
}

# load_pct OUTPUT NAME: NAME as a whole percentage of "sent" (0 when nothing was sent).
load_pct() {
	printf '%s\n' "$1" | awk -v n="$2:" '
		$1 == "sent:" { s = $2 } $1 == n { v = $2 }
		END { printf "%d\n", s ? v * 100 / s : 0 }'
}

# load_brief OUTPUT: loadgen's report on one line, its zero counters left out.
load_brief() {
	printf '%s\n' "$1" | awk '$2 != "0" { printf "%s%s %s", sep, $1, $2; sep = " " }
		END { print "" }'
}

# abuse_round MODE RATE LEGIT DUR: loadgen -m MODE (an abusive DNS client: idle, silent,
# partial, noack, noclose, nofinack; see tests/load/loadgen.c) from SPOOF4 at RATE
# connections/s for DUR s, and from the client, starting 2 s later, a legitimate loadgen
# at LEGIT queries/s for DUR - 3 s, both at BACKEND4. Sets ABUSE_LEGIT_PCT (legitimate
# answers, % of its connections), ABUSE_EST (the abuser's handshakes completed, %) and
# ABUSE_PEAK (the most established connections nsd's port 53 had, sampled every 0.25 s).
# MODE "none" runs the legitimate load alone. With ABUSE_LEGIT_TOOL=dnsperf the
# legitimate load is dnsperf -m tcp instead (10 persistent connections, reopened when
# closed; ABUSE_LEGIT_PCT is then completed queries, % of those sent). Returns 1 when a
# generator failed to run. The reports: LAB_DIR/abuse.out and abuse-legit.out.
abuse_round() {
	local mode=$1 rate=$2 legit=$3 dur=$4 apid='' lout aout=$LAB_DIR/abuse.out sampler
	local peakf=$LAB_DIR/abuse.peak rc=0
	echo 0 >"$peakf"
	: >"$aout"
	ABUSE_LEGIT_PCT=0 ABUSE_EST=0 ABUSE_PEAK=0
	if [ "$mode" != none ]; then
		loadgen_bg "$NS_ATTACKER" "$aout" -m "$mode" -t "$dur" -r "$rate" \
			-i "$LAB_QUERIES" -l "$SPOOF4" "$BACKEND4"
		apid=$LAB_PID
	fi
	(
		peak=0
		while sleep 0.25; do
			n=$(ip netns exec "$NS_BACKEND" ss -Htn state established "sport = :53" | wc -l)
			[ "$n" -le "$peak" ] || { peak=$n; echo "$peak" >"$peakf"; }
		done
	) &
	sampler=$!
	LAB_PIDS+=("$sampler")
	# The abuse first takes what it can, then the legitimate clients come.
	sleep 2
	if [ "${ABUSE_LEGIT_TOOL:-loadgen}" = dnsperf ]; then
		# dnsperf exits 1 also when every socket of its failed (nsd full): that is
		# a result. It did not run when it never began sending.
		lout=$(ip netns exec "$NS_CLIENT" timeout -k 5 $((dur + 30)) dnsperf -m tcp \
			-s "$BACKEND4" -d "$LAB_QUERIES" -c 10 -Q "$legit" -l $((dur - 3)) -t 2 2>&1)
		grep -q 'Sending queries' <<<"$lout" || { lab_log "dnsperf failed: $lout"; rc=1; }
		ABUSE_LEGIT_PCT=$(printf '%s\n' "$lout" | awk '
			/Queries sent:/ { s = $3 } /Queries completed:/ { c = $3 }
			END { printf "%d\n", s ? c * 100 / s : 0 }')
	else
		lout=$(loadgen "$NS_CLIENT" -t $((dur - 3)) -r "$legit" -i "$LAB_QUERIES" \
			"$BACKEND4") || { lab_log "loadgen failed: $lout"; rc=1; }
		ABUSE_LEGIT_PCT=$(load_pct "$lout" answered)
	fi
	printf '%s\n' "$lout" >"$LAB_DIR/abuse-legit.out"
	if [ -n "$apid" ]; then
		loadgen_wait "$apid" "$aout" || rc=1
	fi
	lab_kill "$sampler" 1
	ABUSE_EST=$(load_pct "$(cat "$aout")" established)
	ABUSE_PEAK=$(cat "$peakf")
	return "$rc"
}

# ---------------------------------------------------------------------------------------
# Captures

# capture_start NS IFACE FILE [FILTER]: capture IFACE in NS into the pcap FILE (tcpdump,
# packet-buffered, so FILE can be read while it runs), with the optional pcap FILTER.
# Returns once the capture is really running ("listening on" from tcpdump, printed after
# the socket and filter are in place); the PID is CAPTURE_PID. 1 on failure.
# -B 65536: a 64 MiB ring, so that a loaded machine drops no packet of a 20 MiB transfer
# (a CI run lost 590 with the default 2 MiB).
# --immediate-mode: without it libpcap hands packets over in blocks (TPACKET_V3, 1 s
# timeout) and a SIGTERM loses the last block: a kdig's packets were all missing.
capture_start() {
	local ns=$1 ifc=$2 file=$3 filter=${4:-} pid
	local log=$file.log
	set -- tcpdump -i "$ifc" -n -s 0 -B 65536 --immediate-mode -U -Z root -w "$file"
	[ -z "$filter" ] || set -- "$@" "$filter"
	lab_spawn "$ns" "$log" "$@"
	pid=$LAB_PID
	if ! wait_until 10 grep -q 'listening on' "$log"; then
		lab_log "capture_start: tcpdump on $ifc in $ns did not start:"
		cat "$log" >&2 || true
		lab_kill "$pid"
		return 1
	fi
	LAB_CAPTURES[$file]=$pid
	CAPTURE_PID=$pid
}

# capture_stop [FILE]: stop the capture into FILE, or every capture; FILE is complete
# when it returns (it first gives tcpdump 0.2 s for packets already in flight). Always 0.
capture_stop() {
	local f
	[ "${#LAB_CAPTURES[@]}" -gt 0 ] || return 0
	sleep 0.2
	if [ $# -gt 0 ]; then
		[ -n "${LAB_CAPTURES[$1]:-}" ] || return 0
		lab_kill "${LAB_CAPTURES[$1]}"
		unset 'LAB_CAPTURES[$1]'
		return 0
	fi
	for f in "${!LAB_CAPTURES[@]}"; do
		lab_kill "${LAB_CAPTURES[$f]}"
	done
	LAB_CAPTURES=()
	CAPTURE_PID=
	return 0
}
