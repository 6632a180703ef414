#!/bin/bash
# TCP Fast Open (RFC 7413) through tcpctd to a legacy backend: real clients
# (kdig +fastopen, Linux's own TFO client) ask for a cookie, get one in
# tcpctd's SYN-ACK and bring it back with their next query, which tcpctd
# takes from the SYN, acknowledges in its SYN-ACK and delivers to nsd as
# soon as nsd's handshake is done.  Forged cookies, cookie requests in both
# forms and a burst over the pending limit are crafted with scapy.
#
#   client (kdig, curl, scapy) ── gw (tcpctd) ── backend (nsd :53, http.server :80)
. "$(dirname "$0")/scenario.sh"

lab_with_nsd
# Linux's client side of TFO (bit 0, the default); a cookie is cached per
# destination, so each family starts from none.
in_client sysctl -qw net.ipv4.tcp_fastopen=1
in_client ip tcp_metrics flush all 2>/dev/null

# kdig_tfo SERVER: the answer section of a +fastopen query.
kdig_tfo() {
	ip netns exec "$NS_CLIENT" timeout 10 kdig +tcp +fastopen +time=3 +retry=1 \
		+noall +answer @"$1" "$ZONE" A 2>/dev/null | sort
}
direct4=$(kdig_answer "$NS_CLIENT" "$BACKEND4" "$ZONE" A)
direct6=$(kdig_answer "$NS_CLIENT" "$BACKEND6" "$ZONE" A)
[ -n "$direct4" ] && [ -n "$direct6" ] || not_ok "kdig +tcp direct answers"

tcpctd_start --protect "$BACKEND4:53" --protect "[$BACKEND6]:53" ||
	{ not_ok "tcpctd starts"; t_summary; exit 1; }
lab_offload off
capture_start "$NS_GW" "$GW_IF_CLIENT" "$LAB_DIR/client.pcap" "tcp port 53" ||
	not_ok "capture starts"
for fam in 4 6; do
	[ $fam = 4 ] && addr=$BACKEND4 || addr=$BACKEND6
	[ $fam = 4 ] && want=$direct4 || want=$direct6
	first=$(kdig_tfo "$addr")
	second=$(kdig_tfo "$addr")
	check "IPv$fam: kdig +fastopen through tcpctd, twice, answers as direct" \
		[ -n "$first" -a "$first" = "$want" -a "$second" = "$want" ]
done
capture_stop
fields() {	# fields FILTER FIELD...: tshark's fields of the matching packets
	local filter=$1
	shift
	tshark -r "$LAB_DIR/client.pcap" -Y "$filter" -T fields "${@/#/-e}" 2>/dev/null
}
for fam in 4 6; do
	[ $fam = 4 ] && ip=ip || ip=ipv6
	req=$(fields "$ip && tcp.flags == 0x002 && tcp.options.tfo.request" frame.number | wc -l)
	cookie=$(fields "$ip && tcp.flags == 0x012 && tcp.options.tfo.cookie" tcp.options.tfo.cookie |
		tr -d : | awk 'length($0) == 16' | wc -l)
	data=$(fields "$ip && tcp.flags == 0x002 && tcp.options.tfo.cookie && tcp.len > 0" frame.number | wc -l)
	check "IPv$fam capture: a cookie request ($req), a SYN-ACK with an 8-byte cookie ($cookie), a SYN with the cookie and the query ($data)" \
		[ "$req" -ge 1 -a "$cookie" -ge 1 -a "$data" -ge 1 ]
done
# The SYN with the cookie and the query: its SYN-ACK acknowledges the
# query too, and the query is never sent again.
syn_data=$(tshark -r "$LAB_DIR/client.pcap" -Y "tcp.flags == 0x002 && tcp.len > 0" -T fields \
	-e tcp.srcport -e tcp.seq_raw -e tcp.len 2>/dev/null |
	awk '{ printf "%s\t%u\n", $1, ($2 + 1 + $3) % 4294967296 }' | sort -u)
acked=$(tshark -r "$LAB_DIR/client.pcap" -Y "tcp.flags == 0x012" -T fields \
	-e tcp.dstport -e tcp.ack_raw 2>/dev/null | sort -u)
taken=$(comm -12 <(echo "$syn_data") <(echo "$acked") | grep -c .)
check "both SYN-ACKs to a SYN with the query acknowledge the query ($taken of 2)" [ "$taken" -eq 2 ]
resent=0
for port in $(echo "$syn_data" | cut -f1); do
	n=$(tshark -r "$LAB_DIR/client.pcap" -Y "tcp.srcport == $port && tcp.flags.syn == 0 && tcp.len > 0" \
		2>/dev/null | wc -l)
	resent=$((resent + n))
done
check "and the client never sends the query again ($resent data segments after the SYN)" [ "$resent" -eq 0 ]
bad=$(tshark -r "$LAB_DIR/client.pcap" -o tcp.check_checksum:TRUE \
	-Y "$TCP_CSUM_BAD" 2>/dev/null | wc -l)
check "no bad TCP checksum in the capture ($bad)" [ "$bad" -eq 0 ]
check "counted: tfo_request $(tcpctd_counter tfo_request), tfo_cookie_sent $(tcpctd_counter tfo_cookie_sent), tfo_valid $(tcpctd_counter tfo_valid), tfo_taken $(tcpctd_counter tfo_taken)" \
	[ "$(tcpctd_counter tfo_request)" -ge 2 -a "$(tcpctd_counter tfo_cookie_sent)" -ge 2 \
	  -a "$(tcpctd_counter tfo_valid)" -ge 2 -a "$(tcpctd_counter tfo_taken)" -ge 2 ]

# Crafted: a request in both forms, a forged cookie, the right cookie with
# a bit flipped, the right one (its query reaches nsd), the same SYN again,
# and the right one from another address.
in_client iptables -A OUTPUT -p tcp --tcp-flags RST RST -j DROP
lab_on_down 'in_client iptables -D OUTPUT -p tcp --tcp-flags RST RST -j DROP 2>/dev/null'
in_client ip addr add 198.51.100.3/24 dev veth-gw
invalid0=$(tcpctd_counter tfo_invalid)
capture_start "$NS_GW" "$GW_IF_BACKEND" "$LAB_DIR/backend.pcap" "tcp port 53" ||
	not_ok "capture starts"
out=$(ip netns exec "$NS_CLIENT" timeout 30 /usr/bin/python3 - "$BACKEND4" <<'PY'
import struct, sys
from scapy.all import IP, TCP, Raw, sr1, conf
conf.verb = 0
dst = sys.argv[1]

def syn(sport, opt, data=b"", src=None):
    ip = IP(dst=dst) if src is None else IP(src=src, dst=dst)
    r = sr1(ip / TCP(sport=sport, dport=53, flags="S", seq=5000,
                     options=[("MSS", 1460), ("SAckOK", b""),
                              ("Timestamp", (77, 0)), ("WScale", 7), opt])
            / Raw(data), timeout=3)
    if r is None or r[TCP].flags != "SA":
        return None, None
    for k, v in r[TCP].options:
        if k in (34, "TFO"):
            # scapy reads an 8-byte cookie as two 32-bit words
            return r[TCP].ack, struct.pack("!II", *v) if isinstance(v, tuple) else bytes(v)
        if k == 254 and bytes(v)[:2] == b"\xf9\x89":
            return r[TCP].ack, bytes(v)[2:]
    return r[TCP].ack, b""

ack, c = syn(42001, (34, b""))
print("request34", ack == 5001 and c is not None and len(c) == 8)
ack, ce = syn(42002, (254, b"\xf9\x89"))
print("request254", ack == 5001 and ce is not None and len(ce) == 8)
print("sameform", c == ce)
q = b"\x00\x1d\x12\x34\x01\x00\x00\x01" + bytes(23)  # one question
ack, n = syn(42003, (34, bytes(8)), q)
print("forged", ack == 5001 and n == c)
flipped = bytes([c[0] ^ 1]) + c[1:]
ack, n = syn(42004, (34, flipped), q)
print("flipped", ack == 5001 and n == c)
ack, n = syn(42005, (34, c), q)
print("valid", ack == 5001 + len(q) and n == b"")
ack, n = syn(42005, (34, c), q)
print("again", ack == 5001 + len(q) and n == b"")
ack, n = syn(42006, (34, c), q, src="198.51.100.3")
print("otheraddr", ack == 5001 and n is not None and len(n) == 8 and n != c)
print("cookie", c.hex())
PY
)
capture_stop
for t in request34 request254 sameform forged flipped valid again otheraddr; do
	case $t in
	request34) d="a SYN asking in kind 34 gets an 8-byte cookie" ;;
	request254) d="a SYN asking in kind 254 (ExID 0xF989) gets one in that form" ;;
	sameform) d="the same cookie in both forms for one address" ;;
	forged) d="a forged cookie: the data is not taken, a fresh cookie is sent" ;;
	flipped) d="the cookie with one bit flipped: likewise" ;;
	valid) d="the valid cookie: no new cookie, the data acknowledged in the SYN-ACK" ;;
	again) d="the same SYN again (SYN-ACK lost): the same answer" ;;
	otheraddr) d="the cookie from another address is not valid there" ;;
	esac
	check "$d" eval '[[ "$out" == *"$t True"* ]]'
done
check "counted: tfo_invalid +3 ($(($(tcpctd_counter tfo_invalid) - invalid0))), tfo_syn_repeated $(tcpctd_counter tfo_syn_repeated)" \
	[ "$(($(tcpctd_counter tfo_invalid) - invalid0))" -eq 3 -a "$(tcpctd_counter tfo_syn_repeated)" -eq 1 ]
bport() {	# bport PORT: client segments of that port at the backend, and their data bytes
	tshark -r "$LAB_DIR/backend.pcap" -Y "tcp.srcport == $1" -T fields -e tcp.len 2>/dev/null |
		awk '{ n++; b += $1 } END { printf "%d %d", n, b }'
}
check "nothing of the forged and flipped cookies' SYNs reaches nsd ($(bport 42003), $(bport 42004))" \
	[ "$(bport 42003)" = "0 0" -a "$(bport 42004)" = "0 0" ]
got=$(bport 42005)
check "the valid one's query reaches nsd once, after its handshake ($got: SYN, data)" \
	[ "${got#* }" -eq 31 ]

# The pending limit: 60 SYNs with a valid cookie (asked for first: the key
# is new) and a query from one address, never acknowledged, against
# --tfo-pending 20.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53" --tfo-pending 20 || not_ok "tcpctd restarts"
# A new key: the cookie kdig keeps from before is stale.  Its query is
# answered all the same, by the handshake, and it gets a fresh cookie.
got=$(kdig_tfo "$BACKEND4")
check "a stale cookie falls back: answered, the SYN data left to be sent again, a new cookie" \
	[ "$got" = "$direct4" -a "$(tcpctd_counter tfo_invalid)" -eq 1 \
	  -a "$(tcpctd_counter tfo_data_deferred)" -eq 1 -a "$(tcpctd_counter tfo_cookie_sent)" -eq 1 ]
# One SYN with both a TCPCT cookie and a Fast Open request: TCPCT wins.
both=$(ip netns exec "$NS_CLIENT" timeout 10 /usr/bin/python3 - "$BACKEND4" <<'PY'
import sys
from scapy.all import IP, TCP, sr1, conf
conf.verb = 0
r = sr1(IP(dst=sys.argv[1]) / TCP(sport=42998, dport=53, flags="S", seq=1,
        options=[("MSS", 1460), ("NOP", None), ("NOP", None),
                 ("Timestamp", (1, 0)), (253, bytes(range(1, 9))), (34, b"")]),
        timeout=3)
kinds = [k for k, v in r[TCP].options] if r is not None else []
print("tcpct" if 253 in kinds and 34 not in kinds and "TFO" not in kinds else kinds)
PY
)
check "a SYN with both TCPCT and Fast Open is answered as TCPCT ($both)" [ "$both" = tcpct ]
ip netns exec "$NS_CLIENT" timeout 30 /usr/bin/python3 - "$BACKEND4" <<'PY'
import struct, sys
from scapy.all import IP, TCP, Raw, send, sr1, conf
conf.verb = 0
dst = sys.argv[1]
r = sr1(IP(dst=dst) / TCP(sport=42999, dport=53, flags="S", seq=9000,
                          options=[("MSS", 1460), (34, b"")]), timeout=3)
c = [v for k, v in r[TCP].options if k in (34, "TFO")][0]
c = struct.pack("!II", *c) if isinstance(c, tuple) else bytes(c)
q = b"\x00\x1d\x12\x34\x01\x00\x00\x01" + bytes(23)  # one question
send([IP(dst=dst) / TCP(sport=43000 + i, dport=53, flags="S", seq=9000,
                        options=[("MSS", 1460), (34, c)]) / Raw(q)
      for i in range(60)], inter=0.002)
PY
wait_until 5 eval '[ $(($(tcpctd_counter tfo_taken) + $(tcpctd_counter tfo_over_limit))) -ge 60 ]'
check "the pending limit holds: $(tcpctd_counter tfo_taken) taken, $(tcpctd_counter tfo_over_limit) answered classically" \
	[ "$(tcpctd_counter tfo_taken)" -eq 20 -a "$(tcpctd_counter tfo_over_limit)" -eq 40 ]
# Never acknowledged, they are given up after --syn-retries SYN-ACKs, a
# second apart, and free their places.
wait_until 10 eval '[ "$(tcpctd_counter tfo_unacked)" -ge 20 ]'
check "unacknowledged flows given up: $(tcpctd_counter tfo_unacked) of 20, after $(tcpctd_counter tfo_synack_retrans) SYN-ACKs again" \
	[ "$(tcpctd_counter tfo_unacked)" -eq 20 -a "$(tcpctd_counter tfo_synack_retrans)" -ge 80 ]

# curl --tcp-fastopen through tcpctd to a real HTTP server: the request in
# the SYN (the cookie from the address's cache), the file intact.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:80" --protect "[$BACKEND6]:80" || not_ok "tcpctd restarts"
http_start || not_ok "http server"
in_client ip tcp_metrics flush all 2>/dev/null
capture_start "$NS_GW" "$GW_IF_CLIENT" "$LAB_DIR/http.pcap" "tcp port 80" || not_ok "capture starts"
for fam in 4 6; do
	[ $fam = 4 ] && url=http://$BACKEND4/blob || url=http://[$BACKEND6]/blob
	fine=0
	for i in 1 2; do
		ip netns exec "$NS_CLIENT" timeout 30 curl -s --tcp-fastopen -o "$LAB_DIR/got" "$url" &&
			[ "$(sha256sum <"$LAB_DIR/got" | awk '{ print $1 }')" = "$HTTP_BLOB_SHA256" ] &&
			fine=$((fine + 1))
	done
	check "IPv$fam: curl --tcp-fastopen fetches the file intact, twice" [ "$fine" -eq 2 ]
done
capture_stop
# With 2 % loss both ways through gw, so that SYNs with data, SYN-ACKs and
# the held segment to the backend are lost too.
lab_loss 2 || not_ok "loss"
fine=0
for i in $(seq 30); do
	[ "$(ip netns exec "$NS_CLIENT" timeout 20 curl -s --tcp-fastopen -m 15 \
		"http://$BACKEND4/hello")" = hello ] && fine=$((fine + 1))
done
ip netns exec "$NS_CLIENT" timeout 60 curl -s --tcp-fastopen -o "$LAB_DIR/got" "http://$BACKEND4/blob"
got=$(sha256sum <"$LAB_DIR/got" | awk '{ print $1 }')
drops=$(lab_loss_drops)
lab_loss_clear
check "with 2 % loss ($drops dropped): 30 of 30 short fetches ($fine), 20 MiB intact" \
	[ "$fine" -eq 30 -a "$got" = "$HTTP_BLOB_SHA256" ]
n=$(tshark -r "$LAB_DIR/http.pcap" -Y 'tcp.flags == 0x002 && tcp.options.tfo.cookie && http.request' \
	2>/dev/null | wc -l)
check "the second fetches' GET rode in the SYN ($n of 2)" [ "$n" -eq 2 ]
check "counted: tfo_taken $(tcpctd_counter tfo_taken)" [ "$(tcpctd_counter tfo_taken)" -ge 30 ]
http_stop

# Two workers: a flow made at a Fast Open SYN (in the worker of the SYN
# queue) is met by the same worker afterwards (the flow queues take the
# same share of client ports), so its data goes to one backend connection.
# The client's ports span both workers' shares.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53" --queues 2 || not_ok "tcpctd restarts"
in_client sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
fine=0
for i in $(seq 12); do
	[ "$(kdig_tfo "$BACKEND4")" = "$direct4" ] && fine=$((fine + 1))
done
# Backend connections opened: the SYNs less their retransmissions (a
# sanitizer's build can be slow enough for the backend's SYN-ACK to be late).
taken=$(tcpctd_counter tfo_taken)
syns=$(($(tcpctd_counter backend_syn) - $(tcpctd_counter backend_syn_retrans)))
check "--queues 2: 12 of 12 kdig +fastopen answered ($fine), $taken from the SYN, $syns backends opened for 12" \
	[ "$fine" -eq 12 -a "$taken" -ge 10 -a "$syns" -eq 12 ]

# --tfo no: a cookie request gets a SYN-ACK without one.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53" --tfo no || not_ok "tcpctd restarts"
got=$(kdig_tfo "$BACKEND4")
check "with --tfo no, kdig +fastopen is answered" [ "$got" = "$direct4" ]
check "and no cookie was sent" [ "$(tcpctd_counter tfo_cookie_sent)" -eq 0 ]

# tfo=no for one service: its clients get none, the other's do.
tcpctd_stop
tcpctd_start --protect "$BACKEND4:53,tfo=no" --protect "[$BACKEND6]:53" ||
	not_ok "tcpctd restarts"
got4=$(kdig_tfo "$BACKEND4")
got6=$(kdig_tfo "$BACKEND6")
check "tfo=no on $BACKEND4:53 only: kdig +fastopen answered by both" \
	[ "$got4.$got6" = "$direct4.$direct6" ]
c4=$(tcpctd_counter "$BACKEND4:53/synacks_tfo") c6=$(tcpctd_counter "[$BACKEND6]:53/synacks_tfo")
check "... Fast Open SYN-ACKs: none for it ($c4), some for the other ($c6)" \
	[ "$c4" -eq 0 -a "$c6" -ge 1 ]
tcpctd_finish

t_summary
