#!/bin/bash
# Runs every netns scenario (tests/lab/t_*.sh) and sums their results.
# Needs root (namespaces, iptables, NFQUEUE, raw sockets for loadgen).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
passed=0 failed=0 broken=0 failures=
before=$(ip netns list | awk '{ print $1 }')
if [ "$(id -u)" -ne 0 ]; then
	echo "tests/lab: needs root (network namespaces)" >&2
	exit 1
fi
# Functional scenarios also run against the ASan/UBSan build, when built;
# the load and flood ones measure rates and run the release build only.
# Every scenario's daemon runs as configured by default, with the kernel
# shield where this kernel takes it (TCPCTD_SHIELD=no runs them without);
# the ASan round runs the daemon alone (ASAN_SHIELD, default no), which
# answers every SYN itself, so that both paths run in every `make check`.
ASAN_BIN=$HERE/../../build/tcpctd-asan
ASAN_SCENARIOS=${ASAN_SCENARIOS:-"t_splice t_tcpct t_tfo t_release t_hostile t_blind t_soak t_halfclose"}
runs=()
for t in "$HERE"/t_*.sh; do
	name=$(basename "$t" .sh)
	[ $# -eq 0 ] || [[ " $* " == *" $name "* ]] || continue
	runs+=("$t")
	[ -x "$ASAN_BIN" ] && [[ " $ASAN_SCENARIOS " == *" $name "* ]] && runs+=("$t:asan")
done
# The load scenarios measure rates on two cores that the load generator,
# the gateway and the backend share, and a busy or slow machine can push
# one past its bound: such a scenario that fails is run once more, and
# only the second run counts.  The first run's failures stay in the log and
# in the summary at the end, marked "retried".
RETRY_SCENARIOS=${RETRY_SCENARIOS:-"t_flood t_optflood t_load t_forgery t_abuse"}

# scenario RUN: runs one scenario (RUN is its path, with :asan for the
# ASan round); sets out, rc and line (its "N passed, M failed").
scenario() {
	local t=${1%:asan}
	if [ "$1" != "$t" ]; then
		out=$(TCPCTD_SHIELD=${ASAN_SHIELD:-no} TCPCTD_BIN=$ASAN_BIN bash "$t" 2>&1)
	else
		out=$(bash "$t" 2>&1)
	fi
	rc=$?
	printf '%s\n' "$out"
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
}

# noted RUN [MARK]: its failures, again for the summary at the end, where a
# log cut short at its top still shows them.
noted() {
	failures+=$(printf '%s\n' "$out" | grep -A2 '^not ok' |
		grep -Ev -e '^--$' -e '^[0-9]+ passed, [0-9]+ failed$' |
		sed "s|^|$(basename "$1")${2:+ ($2)}: |")$'\n'
}

for run in "${runs[@]}"; do
	name=$(basename "$run")
	echo "# $name"
	start=$(date +%s)
	scenario "$run"
	if [[ " $RETRY_SCENARIOS " == *" ${name%.sh} "* ]] &&
		{ [ "$rc" -ne 0 ] || [ -z "$line" ] || [ "${line#*, }" != "0 failed" ]; }; then
		noted "$run" retried
		echo "# $name failed once; a load scenario, so it runs again and the second run counts"
		scenario "$run"
	fi
	noted "$run"
	if [ -z "$line" ]; then
		echo "not ok - $name ended without a summary (exit $rc)"
		failures+="$name: ended without a summary (exit $rc)"$'\n'
		broken=$((broken + 1))
	else
		passed=$((passed + ${line%% passed*}))
		f=${line#*, }
		failed=$((failed + ${f%% failed*}))
		[ "$rc" -eq 0 ] || [ "${f%% failed*}" -gt 0 ] || broken=$((broken + 1))
	fi
	echo "# $name: $(($(date +%s) - start)) s"
done
# Namespaces of this run only: other runs may share the machine.
left=$(comm -13 <(echo "$before" | sort) <(ip netns list | awk '{ print $1 }' | sort) | grep -c . || true)
[ "$left" -eq 0 ] || { echo "not ok - $left lab namespaces left behind"; broken=$((broken + 1)); }
failed=$((failed + broken))
if [ -n "$(printf '%s' "$failures" | tr -d '\n')" ]; then
	echo "# what failed, scenario by scenario:"
	printf '%s' "$failures" | grep -v '^$' | cut -c1-300
fi
echo "netns: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
