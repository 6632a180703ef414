#!/bin/bash
# tests/bench/forgery.sh: 10 million forged handshake completions per
# dialect against tcpctd (tests/lab/t_forgery.sh with FORGE_COUNT and a
# rate it keeps up with), for RELIABILITY.md: how many it checked, how many
# it accepted against the theory's expectation, and what reached the
# backend.
#
# Usage: tests/bench/forgery.sh    (FORGE_COUNT per dialect, 10000000;
#                                   FORGE_RATE a second, 150000)
set -u
cd "$(dirname "$0")/../.."
export FORGE_COUNT=${FORGE_COUNT:-10000000} FORGE_RATE=${FORGE_RATE:-150000}
tests/lab/t_forgery.sh | grep -E '^# [a-z]+:|^not ok|passed'
