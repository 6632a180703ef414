#!/bin/bash
# --rules install|remove|print: idempotent, complete, and removing only
# what tcpctd added, with both iptables-nft and iptables-legacy.
. "$(dirname "$0")/scenario.sh"
lab_up >/dev/null || { not_ok "lab up"; t_summary; exit 1; }

ARGS=(--protect "$BACKEND4:53" --protect "[$BACKEND6]:53" --protect "$BACKEND4:80"
	--queues 2 --bypass --allow "$NET_ATTACKER4" --deny "$SPOOF6")
for flavour in nft legacy; do
	ipt=iptables-$flavour ip6t=ip6tables-$flavour
	if ! command -v "$ipt" >/dev/null; then
		not_ok "$ipt is installed"
		continue
	fi
	run() { in_gw "$TCPCTD_BIN" --iptables "$ipt" --ip6tables "$ip6t" "$@"; }
	# The rules, not the chains' packet counters: the namespace's own IPv6
	# (MLD, DAD) may pass OUTPUT between two saves.
	save() {
		{ in_gw "$ipt-save" -t raw; in_gw "$ip6t-save" -t raw; } |
			grep -v '^#' | sed 's/ \[[0-9]*:[0-9]*\]$//'
	}
	# acct_exists / acct_gone: whether the nfacct counters of the rules,
	# the fragments' and the spoofed backend packets' of each family, all
	# exist (a rule can name them) or none does.
	acct_probe() {
		local f n=0 name fam
		for f in "$ipt" "$ip6t"; do
			fam=ipv4
			[ "$f" = "$ip6t" ] && fam=ipv6
			in_gw "$f" -t raw -N acct-probe
			for name in "tcpctd-fragments-$fam" "tcpctd-backend-spoofed-$fam"; do
				in_gw "$f" -t raw -A acct-probe -m nfacct --nfacct-name "$name" \
					2>/dev/null && n=$((n + 1))
			done
			in_gw "$f" -t raw -F acct-probe
			in_gw "$f" -t raw -X acct-probe
		done
		echo "$n"
	}
	acct_exists() { [ "$(acct_probe)" -eq 4 ]; }
	acct_gone() { [ "$(acct_probe)" -eq 0 ]; }
	# Someone else's rule in the same table must survive.
	in_gw "$ipt" -t raw -A PREROUTING -p udp --dport 9 -j ACCEPT
	before=$(save)
	check "$flavour: install" run --rules install "${ARGS[@]}"
	once=$(save)
	check "$flavour: install again" run --rules install "${ARGS[@]}"
	twice=$(save)
	check "$flavour: installing twice changes nothing" [ "$once" = "$twice" ]
	# Worker 0's share of the client ports starts 0:4680, worker 1's
	# 4681:9361 (policy/rules.c), in one multiport match each.
	n4=$(echo "$once" | grep -E -- '-A TCPCTD .*-p tcp .*-j NFQUEUE --queue-num [01] --queue-bypass' |
		grep -cE -- '-m multiport --(sports|dports) (0:4680|4681:9361),')
	check "$flavour: a flow queue rule per direction, service and worker (got $n4)" [ "$n4" -eq 12 ]
	check "$flavour: both directions of a port share meet in one worker" \
		[ "$(echo "$once" | grep -cE -- '-p tcp .*--(sports|dports) 4681:9361,.* -j NFQUEUE --queue-num 1 ')" -eq 6 ]
	ns=$(echo "$once" | grep -cE -- '-A TCPCTD .*--tcp-flags FIN,SYN,RST,ACK SYN .*-j NFQUEUE --queue-num [23] --queue-bypass')
	check "$flavour: a SYN queue rule per service and worker (got $ns)" [ "$ns" -eq 6 ]
	check "$flavour: SYN queues split the client ports" \
		[ "$(echo "$once" | grep -cE -- 'SYN -m multiport --sports (0:4680|4681:9361),.* -j NFQUEUE --queue-num [23] ')" -eq 6 ]
	check "$flavour: one jump from PREROUTING per family" \
		[ "$(echo "$once" | grep -c -- '-A PREROUTING -j TCPCTD')" -eq 2 ]
	# Two DNS services × two workers: the UDP answers of TCPCT transactions.
	nt=$(echo "$once" | grep -cE -- '-A TCPCTD .*-p udp .*--sport 53 .*--dport (61440:61503|61504:61567) -j NFQUEUE --queue-num [01]')
	check "$flavour: a transaction answer rule per DNS service and worker (got $nt)" [ "$nt" -eq 4 ]
	nd=$(echo "$once" | grep -c -- "-A TCPCTD -s 2001:db8:f::/48 -d $BACKEND6/128 -p tcp -m tcp --dport 53 -j DROP")
	na=$(echo "$once" | grep -c -- "-A TCPCTD .*$NET_ATTACKER4 .*-j RETURN")
	check "$flavour: the deny list on the IPv6 service ($nd), the allow list both ways on both IPv4 ones ($na)" \
		[ "$nd" -eq 1 -a "$na" -eq 4 ]
	# Fragments of TCP datagrams: one rule per protected address (two
	# services share 192.0.2.2), the first of its family's chain, ahead of
	# the allow list, each counted in its family's nfacct counter; in
	# IPv6 every fragment, after one that lets pass those whose header
	# chain resolves to another protocol.
	f4=$(echo "$once" | grep -E -- "-A TCPCTD -d $BACKEND4/32 -p tcp -m u32 --u32 \"0x4&0x3fff=0x1:0x3fff\" -m nfacct --nfacct-name +tcpctd-fragments-ipv4 -j DROP")
	r6=$(echo "$once" | grep -E -- "-A TCPCTD -d $BACKEND6/128 ! -p tcp -m frag( --fragid 0:4294967295)? -j RETURN")
	f6=$(echo "$once" | grep -E -- "-A TCPCTD -d $BACKEND6/128 -m frag( --fragid 0:4294967295)? -m nfacct --nfacct-name +tcpctd-fragments-ipv6 -j DROP")
	check "$flavour: a fragment rule per protected address" \
		[ "$(grep -c . <<<"$f4")" -eq 1 -a "$(grep -c . <<<"$f6")" -eq 1 -a "$(grep -c . <<<"$r6")" -eq 1 ]
	check "$flavour: ... first in its chain" \
		[ "$(echo "$once" | awk '/^\*raw/ { n = 0; t++ } /^-A TCPCTD / && n++ < t')" = "$(printf '%s\n' "$f4" "$r6" "$f6")" ]
	check "$flavour: ... and their counters made" acct_exists
	# Issue 31: what has a backend's address and port (TCP per service, the
	# transaction answers per DNS service and worker) is dropped, counted,
	# when it comes in where the route to it does not go out, ahead of the
	# rules that untrack and queue it.
	sp=$(echo "$once" | grep -cE -- "-A TCPCTD -s ($BACKEND4/32|$BACKEND6/128) -p (tcp|udp) .*--sport (53|80) .*-m rpfilter --invert -m nfacct --nfacct-name +tcpctd-backend-spoofed-ipv[46] -j DROP")
	check "$flavour: a spoofed-backend rule per service, and per worker for transaction answers (got $sp)" \
		[ "$sp" -eq 7 ]
	check "$flavour: ... each ahead of what it guards" \
		[ "$(echo "$once" | awk '/^-A TCPCTD -s .*--sport / && !/RETURN/ {
			k = $0; sub(/ -m (rpfilter|multiport|nfacct|comment).*| -j .*/, "", k)
			if (/rpfilter/) seen[k] = 1; else if (!seen[k]) bad++ }
			END { print bad + 0 }')" -eq 0 ]
	check "$flavour: print matches what was installed" \
		[ "$(run --rules print "${ARGS[@]}" | grep -c NFQUEUE)" -eq 22 -a \
		  "$(run --rules print "${ARGS[@]}" | grep -c -- '-m nfacct .* -j DROP')" -eq 9 ]
	out=$(run --rules remove "${ARGS[@]}")
	check "$flavour: remove, and it says so per family ($(echo $out))" \
		[ "$(grep -c 'the TCPCTD and TCPCTD_OUT chains removed' <<<"$out")" -eq 2 ]
	check "$flavour: remove restores the table exactly" [ "$(save)" = "$before" ]
	check "$flavour: ... and deletes the rules' counters" acct_gone
	out=$(run --rules remove "${ARGS[@]}")
	check "$flavour: remove with nothing installed succeeds, and says so ($(echo $out))" \
		[ "$(grep -c "no rules of tcpctd's to remove" <<<"$out")" -eq 2 ]
	run --rules install "${ARGS[@]}" >/dev/null
	out=$(run --rules remove)
	check "$flavour: remove without a configuration removes them all, and says so" \
		[ "$(save)" = "$before" -a "$(grep -c 'chains removed' <<<"$out")" -eq 2 ]
	# A file broken since the start (a reload refused it): the service's
	# stop still removes the rules.
	printf '[service dns]\nprotect = %s:53\nidle-timeout = soon\n' "$BACKEND4" \
		>"$LAB_DIR/broken.conf"
	run --rules install "${ARGS[@]}" >/dev/null
	check "$flavour: remove with a configuration that does not parse" \
		run -c "$LAB_DIR/broken.conf" --rules remove
	check "$flavour: ... still restores the table exactly" [ "$(save)" = "$before" ]
	in_gw "$ipt" -t raw -D PREROUTING -p udp --dport 9 -j ACCEPT
done
t_summary
