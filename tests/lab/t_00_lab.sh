#!/usr/bin/env bash
# tests/lab/t_00_lab.sh: the lab works without tcpctd (client, attacker -> gw
# router -> backend nsd and HTTP). Run as root. Topology: see lib.sh.
#
# Prints "ok - ..." / "not ok - ..." per check, "# ..." diagnostics and times, and ends
# with "N passed, N failed"; exits 1 if anything failed.
# LAB_VERBOSE=1 echoes each namespaced command. LAB_SELFTEST_FAIL=1 adds a check that
# fails; LAB_SELFTEST_ABORT=1 aborts mid-run under set -e (both to test the cleanup).
set -eu -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
lab_trap
exec 3>&2 # LAB_VERBOSE=1 echoes go to the real stderr, not into a check's output
LAB_VERBOSE_FD=3

passed=0
failed=0
out=$(mktemp "${TMPDIR:-/tmp}/$LAB.out.XXXXXX")
lab_on_down "rm -f '$out'"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
diag() { sed 's/^/# /' "$@"; }

# check [-v] DESC CMD...: run CMD (output to $out), print ok / not ok with its time and,
# on failure or with -v, CMD's output as diagnostics. Returns 0; last_ok is 1 or 0.
last_ok=0
check() {
	local verbose=0 desc t0 t rc=0
	if [ "$1" = -v ]; then
		verbose=1
		shift
	fi
	desc=$1
	shift
	t0=$(now)
	"$@" >"$out" 2>&1 || rc=$?
	t=$(elapsed "$t0")
	if [ "$rc" = 0 ]; then
		passed=$((passed + 1))
		last_ok=1
		echo "ok - $desc ($t s)"
		if [ "$verbose" = 1 ]; then diag "$out"; fi
	else
		failed=$((failed + 1))
		last_ok=0
		echo "not ok - $desc ($t s)"
		tail -n 30 "$out" | diag
	fi
	return 0
}

# require DESC CMD...: check, and bail out when it fails (a setup step).
require() {
	check "$@"
	[ "$last_ok" = 1 ] || bail "$1"
}

summary() { echo "$passed passed, $failed failed"; }

# bail DESC: a setup step failed, nothing after it can work.
bail() {
	echo "# bailing out: $1"
	summary
	exit 1
}

# dig_ok FAMILY-ADDR QNAME QTYPE EXPECTED-REGEX [MIN-COUNT]: kdig over TCP from the client
# gets NOERROR and at least MIN-COUNT (default 1) answer records matching the regex.
dig_ok() {
	local server=$1 qname=$2 qtype=$3 regex=$4 min=${5:-1} res n
	res=$(in_client kdig +tcp +time=2 +retry=1 @"$server" "$qname" "$qtype") || return 1
	printf '%s\n' "$res" | grep -q 'status: NOERROR' || { printf '%s\n' "$res"; return 1; }
	n=$(printf '%s\n' "$res" | awk '/^;; ANSWER SECTION/ { a = 1; next } /^;;/ { a = 0 } a' |
		grep -Ec -- "$regex" || true)
	echo "answers matching: $n (want >= $min)"
	[ "$n" -ge "$min" ] || { printf '%s\n' "$res"; return 1; }
}

# big_ok SERVER: big TXT over TCP is NOERROR, has all strings and is > 1500 bytes.
big_ok() {
	local res size
	dig_ok "$1" "$ZONE_BIG" TXT '[[:space:]]TXT[[:space:]]' "$ZONE_BIG_STRINGS" || return 1
	res=$(in_client kdig +tcp +time=2 +retry=1 @"$1" "$ZONE_BIG" TXT) || return 1
	size=$(printf '%s\n' "$res" | awk '/^;; Received/ { print $3 }')
	echo "answer size: $size B"
	[ "${size:-0}" -gt 1500 ]
}

# udp_truncated SERVER: the big answer does not fit UDP with EDNS 1232: TC is set.
udp_truncated() {
	local res
	res=$(in_client kdig +notcp +ignore +bufsize=1232 +time=2 +retry=1 @"$1" \
		"$ZONE_BIG" TXT) || return 1
	printf '%s\n' "$res" | grep -E '^;; Flags:' | grep -qw tc
}

# fetch_ok URL: curl the blob from the client; its sha256 must match.
fetch_ok() {
	local f=$LAB_DIR/fetched sum
	rm -f "$f"
	in_client curl -sS -g --max-time 60 -o "$f" -w 'http %{http_code} %{size_download} B %{speed_download} B/s\n' "$1" ||
		return 1
	sum=$(sha256sum "$f" | awk '{ print $1 }')
	rm -f "$f"
	echo "sha256 $sum want $HTTP_BLOB_SHA256"
	[ "$sum" = "$HTTP_BLOB_SHA256" ]
}

# fetch_lossy_ok URL: fetch_ok with lab_loss 1 and proof that packets were dropped.
# Offloads go off meanwhile, so the loss hits MTU-sized packets, not 64 KB GSO ones.
fetch_lossy_ok() {
	local drops rc=0
	lab_offload off || return 1
	if lab_loss 1; then
		echo "loss method: $LAB_LOSS_ACTIVE"
		fetch_ok "$1" || rc=1
		drops=$(lab_loss_drops)
		echo "dropped: $drops packets"
		[ "$drops" -gt 0 ] || rc=1
	else
		rc=1
	fi
	lab_loss_clear
	lab_offload on || rc=1
	return "$rc"
}

# load_ok TARGET PREFIX: loadgen from the attacker, one DNS query per connection from
# the addresses of PREFIX, is all answered.
load_ok() {
	local res
	res=$(loadgen "$NS_ATTACKER" -t 2 -r 1000 -i "$LAB_QUERIES" -l "$2" "$1") || {
		printf '%s\n' "$res"
		return 1
	}
	load_brief "$res"
	[ "$(load_count "$res" sent)" -ge 1900 ] && [ "$(load_pct "$res" answered)" -ge 100 ]
}

# flood_ok TARGET PREFIX: a spoofed SYN flood from PREFIX gets its SYN-ACKs back (at
# least 90 %) to the attacker, which drops them as a host that does not exist would.
flood_ok() {
	local res before after
	before=$(spoof_synacks)
	res=$(loadgen "$NS_ATTACKER" -m syn -t 1 -r 20000 -l "$2" "$1") || {
		printf '%s\n' "$res"
		return 1
	}
	sleep 0.2
	after=$(spoof_synacks)
	echo "$(load_brief "$res"), $((after - before)) SYN-ACKs back"
	[ "$(load_count "$res" sent)" -ge 19000 ] &&
		[ $((after - before)) -ge $(($(load_count "$res" sent) * 9 / 10)) ]
}

# capture_ok: a capture started by capture_start sees the very first packet (the SYN)
# of a kdig right after it returns, and tshark reads the file.
capture_ok() {
	local pcap=$LAB_DIR/client.pcap n
	capture_start "$NS_GW" "$GW_IF_CLIENT" "$pcap" "tcp port 53" || return 1
	in_client kdig +tcp +time=2 +retry=0 @"$BACKEND4" "$ZONE" A >/dev/null || return 1
	capture_stop "$pcap"
	n=$(tshark -r "$pcap" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' 2>/dev/null | wc -l)
	echo "SYNs captured: $n"
	[ "$n" -ge 1 ]
}

t_all=$(now)
echo "# lab $LAB, kernel $(uname -r)"
require "lab_up builds the four namespaces" lab_up
require "nsd_start answers on both addresses" nsd_start 100
check "nsd log says started" wait_log "$NSD_LOG" 'nsd started' 5
require "http_start serves a 20 MiB blob on both addresses" http_start

check "kdig +tcp @$BACKEND4 $ZONE A" dig_ok "$BACKEND4" "$ZONE" A "[[:space:]]A[[:space:]]+$ZONE_A\$"
check "kdig +tcp @$BACKEND6 $ZONE A" dig_ok "$BACKEND6" "$ZONE" A "[[:space:]]A[[:space:]]+$ZONE_A\$"
check "kdig +tcp @$BACKEND6 $ZONE AAAA" dig_ok "$BACKEND6" "$ZONE" AAAA "[[:space:]]AAAA[[:space:]]+$ZONE_AAAA\$"
check "kdig +tcp @$BACKEND4 $ZONE_BIG TXT (> 1500 B)" big_ok "$BACKEND4"
check "kdig +tcp @$BACKEND6 $ZONE_BIG TXT (> 1500 B)" big_ok "$BACKEND6"
check "kdig UDP $ZONE_BIG TXT is truncated (TCP only)" udp_truncated "$BACKEND4"
check "kdig +tcp @$BACKEND4 $ZONE_MANY A has $ZONE_MANY_COUNT records" \
	dig_ok "$BACKEND4" "$ZONE_MANY" A '[[:space:]]A[[:space:]]' "$ZONE_MANY_COUNT"
check "capture_start catches the first SYN, tshark reads the pcap" capture_ok

check -v "curl $HTTP_URL4 sha256 matches" fetch_ok "$HTTP_URL4"
check -v "curl $HTTP_URL6 sha256 matches" fetch_ok "$HTTP_URL6"
check -v "curl $HTTP_URL4 with 1 % loss through gw" fetch_lossy_ok "$HTTP_URL4"

check -v "loadgen -l $SPOOF4 $BACKEND4: every query answered" load_ok "$BACKEND4" "$SPOOF4"
check -v "loadgen -l $SPOOF6 $BACKEND6: every query answered" load_ok "$BACKEND6" "$SPOOF6"
check -v "loadgen -m syn -l $SPOOF4 $BACKEND4: the SYN-ACKs come back" flood_ok "$BACKEND4" "$SPOOF4"
check -v "loadgen -m syn -l $SPOOF6 $BACKEND6: the SYN-ACKs come back" flood_ok "$BACKEND6" "$SPOOF6"
check "loadgen that cannot run fails, with its reason" \
	eval '! lg=$(loadgen "$NS_ATTACKER" -m syn -t 1 "$BACKEND4") && grep -q "needs -l" <<<"$lg"'
check "kdig still answers after the floods" dig_ok "$BACKEND4" "$ZONE" A "$ZONE_A\$"

if [ "${LAB_SELFTEST_FAIL:-0}" = 1 ]; then
	check "deliberate failure (LAB_SELFTEST_FAIL=1)" false
fi
if [ "${LAB_SELFTEST_ABORT:-0}" = 1 ]; then
	echo "# aborting under set -e (LAB_SELFTEST_ABORT=1)"
	false
fi

t_down=$(now)
lab_down
echo "# time: lab_down $(elapsed "$t_down") s, total $(elapsed "$t_all") s"
summary
[ "$failed" = 0 ]
