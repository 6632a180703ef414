# tests/bench/common.sh: how every bench script starts.  HERE (this
# folder), TOP (the tree, exported for the lab), and the lab's libraries:
# the topology (tests/lab/lib.sh), tcpctd's start, stop and counters
# (tcpctd.sh) and kernel SYNPROXY (synproxy.sh).
# shellcheck shell=bash
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
export TOP
# shellcheck source=../lab/lib.sh
. "$TOP/tests/lab/lib.sh"
# shellcheck source=../lab/tcpctd.sh
. "$TOP/tests/lab/tcpctd.sh"
# shellcheck source=../lab/synproxy.sh
. "$TOP/tests/lab/synproxy.sh"
