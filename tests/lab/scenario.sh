# shellcheck shell=bash
# tests/lab/scenario.sh: how every netns scenario (tests/lab/t_*.sh) begins,
#	. "$(dirname "$0")/scenario.sh"
# set -u, HERE (the scenario's folder), the lab (lib.sh) and tcpctd's helpers
# (tcpctd.sh), and lab_down on any exit (lab_trap).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/tcpctd.sh"
lab_trap
