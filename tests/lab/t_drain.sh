#!/bin/bash
# Draining, as haproxy's operators take a server out: tcpctl drain refuses
# a backend's new clients as a closed port does (a RST at once, so that a
# resolver tries another server) while its open connections stay spliced;
# tcpctl enable takes them again.  A stop with --stop-grace drains every
# backend and waits for the connections open to end.
#
#   client (dnsconn.py, kdig) ── gw (tcpctd, tcpctl) ── backend (nsd)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd 100
SOCK=$LAB_DIR/tcpctd.sock
tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" \
	--control-socket "$SOCK" --stop-grace 15 ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
ctl() { in_gw "$TCPCTL_BIN" -s "$SOCK" "$@"; }
conn() { in_client /usr/bin/python3 "$HERE/dnsconn.py" "$@"; }

check "before: $BACKEND4 answers through tcpctd" \
	[ -n "$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" SOA)" ]

# A connection open on the backend when it is drained: 12 queries, 0.3 s
# apart, then the client closes.
conn "$BACKEND4" query 12 --timeout 6 >"$LAB_DIR/open.out" 2>&1 &
OPEN_PID=$!
sleep 1
out=$(ctl drain "$BACKEND4:53")
check "drain: $out" grep -q "^$BACKEND4:53: draining, 1 connection open to it$" <<<"$out"
check "status: the backend drained" \
	grep -q "^$BACKEND4:53 (dns): up, draining; " <<<"$(ctl status)"
got=$(conn "$BACKEND4" query 1 --timeout 3)
check "a new client of the drained backend is refused at once ($got)" \
	awk -v o="$got" 'BEGIN { split(o, f, "after="); exit !(o ~ /^answers=0 end=reset/ && f[2] < 0.5) }'
got=$(conn "$BACKEND6" query 1 --timeout 3)
check "the other backend takes new clients ($got)" grep -q '^answers=1 ' <<<"$got"
wait "$OPEN_PID"
check "the connection open when it was drained: every query answered ($(cat "$LAB_DIR/open.out"))" \
	grep -q '^answers=12 ' "$LAB_DIR/open.out"
check "counted: $BACKEND4:53/drained $(tcpctd_counter "$BACKEND4:53/drained"), a gauge for Prometheus" \
	eval '[ "$(tcpctd_counter "$BACKEND4:53/drained")" -ge 1 ] &&
	      [ "$(tcpctl_metric "$SOCK" "tcpctd_draining{service=\"$BACKEND4:53\",backend=\"$BACKEND4:53\"}")" = 1 ]'
out=$(ctl drain nothing 2>&1); rc=$?
check "drain of nothing protected: status $rc, said ($out)" \
	[ "$rc.$out" = "1.error: no service or backend 'nothing'" ]
out=$(ctl enable all)
check "enable all: $(tr '\n' ' ' <<<"$out")" [ "$(grep -c ': enabled, ' <<<"$out")" -eq 2 ]
got=$(conn "$BACKEND4" query 1 --timeout 3)
check "enabled again: a new client answered ($got)" grep -q '^answers=1 ' <<<"$got"
grep -q "backend $BACKEND4:53: draining: new connections refused" "$TCPCTD_LOG" &&
	grep -q "backend $BACKEND4:53: taking new connections again" "$TCPCTD_LOG"
check "each change logged" [ $? -eq 0 ]

# A TCPCT client (RFC 6013) heeds only a RST that carries its cookie pair:
# its handshake begun before the drain, its third packet after, gets one.
# Scapy's client; its kernel's RSTs for the SYN-ACK are held back.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP
out=$(ip netns exec "$NS_CLIENT" timeout 30 /usr/bin/python3 - "$BACKEND4" "$CLIENT4" \
	"$NS_GW" "$TCPCTL_BIN" "$SOCK" <<'PY'
import struct, subprocess, sys
from scapy.all import IP, TCP, Raw, sr1, conf
conf.verb = 0
dst, src, ns, tcpctl, sock = sys.argv[1:]
ctl = lambda *a: subprocess.run(["ip", "netns", "exec", ns, tcpctl, "-s", sock] + list(a),
                                check=True, capture_output=True)
ci = bytes(range(1, 17))
opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (4242, 0)), ("WScale", 7),
        ("NOP", None), ("NOP", None), (253, ci)]
r = sr1(IP(src=src, dst=dst) / TCP(sport=45000, dport=53, flags="S", seq=1000, options=opts),
        timeout=3)
cr = [v for k, v in r[TCP].options if k == 253] if r is not None and TCP in r else []
if len(cr) != 1 or len(cr[0]) != 16:
    print("no-synack")
    sys.exit()
ctl("drain", dst + ":53")
tsval = dict((k, v) for k, v in r[TCP].options if not isinstance(k, int))["Timestamp"][0]
ext = struct.pack("!II", 4243, tsval) + b"\x01\x01" + bytes([253, 34]) + ci + cr[0]
ext += bytes([2, 4, 5, 0xb4])
a = sr1(IP(src=src, dst=dst) / TCP(sport=45000, dport=53, flags="A", seq=1001,
                                   ack=r[TCP].seq + 1, window=502,
                                   options=[(254, bytes([len(ext) // 4, 1]))]) / Raw(ext),
        timeout=3)
ctl("enable", "all")
if a is None or TCP not in a:
    print("none")
else:
    print("%s %s" % (a[TCP].flags, "guarded" if any(k == 254 for k, v in a[TCP].options)
                     else "unguarded"))
PY
)
check "TCPCT: the third packet after the drain gets a guarded RST ($out)" [ "$out" = "RA guarded" ]
in_client iptables -D OUTPUT -p tcp --tcp-flags RST RST -j DROP

# A stop with --stop-grace: every backend drained, the connection open
# runs to its end, then the daemon exits (well before the 15 s).
conn "$BACKEND6" query 10 --timeout 5 >"$LAB_DIR/stop.out" 2>&1 &
OPEN_PID=$!
sleep 1
start=$(date +%s%N)
kill -TERM "$TCPCTD_PID"
sleep 0.3
check "SIGTERM with --stop-grace: running on while a connection is open" kill -0 "$TCPCTD_PID"
got=$(conn "$BACKEND4" query 1 --timeout 3)
check "... its new clients refused meanwhile ($got)" grep -q '^answers=0 end=reset ' <<<"$got"
out=$(ctl enable all 2>&1)
check "... and tcpctl enable refused: $out" [ "$out" = "error: stopping: every backend stays drained" ]
wait "$OPEN_PID"
check "... the open connection answered to its end ($(cat "$LAB_DIR/stop.out"))" \
	grep -q '^answers=10 ' "$LAB_DIR/stop.out"
wait_until 5 eval '! kill -0 "$TCPCTD_PID" 2>/dev/null'
ms=$((($(date +%s%N) - start) / 1000000))
rc=0
wait "$TCPCTD_PID" || rc=$?
_lab_forget "$TCPCTD_PID"
TCPCTD_PID=
check "... then it stopped, status $rc, ${ms} ms after SIGTERM: when the connection ended, not at 15 s" \
	[ "$rc" -eq 0 -a "$ms" -ge 3000 -a "$ms" -lt 10000 ]
check "... and said so" \
	eval 'grep -q "stopping: every backend drained, waiting up to 15 s for 1 connection" "$TCPCTD_LOG" &&
	      grep -q "stopping: 0 connections still open to backends" "$TCPCTD_LOG"'
check "no sanitizer report" eval '! grep -qE "Sanitizer|runtime error:" "$TCPCTD_LOG"'
t_summary
