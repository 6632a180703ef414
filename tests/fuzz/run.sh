#!/bin/bash
# tests/fuzz/run.sh SECONDS [TARGET...]: every fuzz target (or those named)
# first replays its regression inputs (tests/fuzz/regress/TARGET: inputs that
# once crashed it), then runs for SECONDS from its seeds (tests/fuzz/corpus/
# TARGET) and what earlier runs kept (build/fuzz/corpus/TARGET).  Prints
# executions, edges covered and corpus size per target; fails when a target
# crashed, leaving the input in build/fuzz/artifacts/.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SECONDS_EACH=${1:?usage: tests/fuzz/run.sh SECONDS [TARGET...]}
shift
TARGETS=${*:-parse worker cookie dns config control keys utcp}
failed=0

for t in $TARGETS; do
	bin=$BUILD/fuzz/fuzz_$t
	corpus=$BUILD/fuzz/corpus/$t
	log=$BUILD/fuzz/$t.log
	mkdir -p "$corpus" "$BUILD/fuzz/artifacts"
	if [ ! -x "$bin" ]; then
		echo "not ok - fuzz_$t: $bin is not built (make fuzz-build)"
		failed=1
		continue
	fi
	if [ -d "tests/fuzz/regress/$t" ]; then
		n=$(find "tests/fuzz/regress/$t" -type f | wc -l)
		if ! "$bin" -runs=1 -timeout=10 "tests/fuzz/regress/$t"/* >"$log" 2>&1; then
			echo "not ok - fuzz_$t: a regression input fails again (see $log)"
			failed=1
			continue
		fi
		echo "ok - fuzz_$t: $n regression inputs pass"
	fi
	"$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$BUILD/fuzz/artifacts/$t-" \
		"$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
	stats=$(grep -aE '^#[0-9]+' "$log" | tail -1 |
		sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/\1 edges, \2 features, corpus \3/')
	if [ $rc -eq 0 ]; then
		echo "ok - fuzz_$t: ${runs:-?} runs in ${SECONDS_EACH} s, $stats"
	else
		echo "not ok - fuzz_$t: status $rc after ${runs:-?} runs; $(grep -m1 -E 'ERROR|broken' "$log")"
		grep -E 'broken:|SUMMARY|Test unit written' "$log" | sed 's/^/#  /'
		failed=1
	fi
done
exit $failed
