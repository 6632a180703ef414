#!/bin/bash
# The Debian packages (make deb) under a real systemd.  A Debian 12 root of
# its own (debootstrap, kept in build/systemd-root for the next run) is
# booted by systemd-nspawn with a network of its own; a oneshot unit inside
# runs the checks: apt-get installs tcpctd and tcpct-tools (their user,
# files and modes; the unit neither enabled nor started), a service is
# configured and the unit started, reloaded, restarted and stopped while
# what the daemon, its rules and the journal show is checked; then an
# upgrade to a second build of the package while it runs (it restarts,
# keeps its secret and its rules), a removal after a crash left its rules
# and its kernel shield (a real client then reaches a backend through the
# container as if tcpctd had never been there), and a purge, after which nothing of it is left but its user.  The
# container then powers itself off.  Never the host's root: the
# container's is the debootstrap tree.  Run by `make check`; needs root.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${SYSTEMD_ROOT:-$TOP/build/systemd-root}
LOG=$TOP/build/systemd-test.log
passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok - %s\n' "$1"; }
not_ok() { failed=$((failed + 1)); printf 'not ok - %s\n' "$1"; [ -z "${2:-}" ] || printf '#   %s\n' "$2"; }
summary() { printf 'systemd: %d passed, %d failed\n' "$passed" "$failed"; [ "$failed" -eq 0 ]; }
[ "$(id -u)" -eq 0 ] || { echo "tests/systemd.sh: needs root" >&2; exit 1; }

# The root: debootstrap's minimal system, systemd, iptables and the
# libraries tcpctd links.  From the mirror apt uses; made again when a
# library tcpctd links since is missing from it.
if [ ! -x "$ROOT/bin/systemctl" ] || ! ls "$ROOT"/usr/lib/*/libbpf.so.1 >/dev/null 2>&1 ||
	[ ! -x "$ROOT/sbin/tc" ]; then
	mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources \
		2>/dev/null | grep -v security | head -1)
	mirror=${mirror:-http://deb.debian.org/debian}
	rm -rf "$ROOT.new" "$ROOT"
	mkdir -p "$(dirname "$ROOT")"
	echo "# debootstrap bookworm from $mirror into $ROOT (once)"
	if ! debootstrap --variant=minbase \
		--include=systemd,systemd-sysv,dbus,iptables,procps,libnetfilter-queue1,libmnl0,libinih1,libssl3,libbpf1,iproute2 \
		bookworm "$ROOT.new" "$mirror" >"$LOG" 2>&1; then
		# Nothing of the project stops it: the mirror did.
		echo "ok - # SKIP no root for a container: debootstrap failed ($(tail -1 "$LOG"))"
		rm -rf "$ROOT.new"
		summary
		exit
	fi
	mv "$ROOT.new" "$ROOT"
fi

# What is tested: this tree's packages (make deb, nothing done when they
# are up to date), and a second build of them for the upgrade, made from
# the same source with a changelog entry of its own (+test1).
make -C "$TOP" -s deb >/dev/null ||
	{ not_ok "make deb" "$(tail -5 "$TOP/build/deb/build.log" 2>/dev/null | tr '\n' ' ')"; summary; exit 1; }
version=$(awk 'NR == 1 { gsub(/[()]/, "", $2); print $2 }' "$TOP/debian/changelog")
src=$TOP/build/deb/tcpctd-$version
commit=$(cat "$src/.commit")
up=$TOP/build/deb-upgrade
if [ ! -e "$up/tcpctd_${version}+test1_$(dpkg --print-architecture).deb" ] ||
	[ "$up/built" -ot "$TOP/build/deb/tcpctd_${version}_$(dpkg --print-architecture).changes" ]; then
	rm -rf "$up" && mkdir -p "$up" && cp -a "$src" "$up/tcpctd-$version+test1"
	{
		printf 'tcpctd (%s+test1) unstable; urgency=medium\n\n' "$version"
		printf '  * A second build of %s, for the upgrade in tests/systemd.sh.\n\n' "$version"
		printf ' -- %s  %s\n\n' "$(sed -n '0,/^ -- /s/^ -- \(.*>\).*/\1/p' "$TOP/debian/changelog")" "$(date -R)"
		cat "$TOP/debian/changelog"
	} >"$up/tcpctd-$version+test1/debian/changelog"
	(cd "$up/tcpctd-$version+test1" && dpkg-buildpackage -us -uc -b -tc -J) >"$up/build.log" 2>&1 ||
		{ not_ok "the upgrade's build" "$(tail -5 "$up/build.log" | tr '\n' ' ')"; summary; exit 1; }
	touch "$up/built"
fi
rm -rf "$ROOT/root/debs" && mkdir -p "$ROOT/root/debs/base" "$ROOT/root/debs/upgrade"
cp "$TOP"/build/deb/tcpctd_*.deb "$TOP"/build/deb/tcpct-tools_*.deb "$ROOT/root/debs/base/"
cp "$up"/tcpctd_*.deb "$ROOT/root/debs/upgrade/"
# Every file and directory of their own the packages hold, for the purge.
for d in "$ROOT"/root/debs/base/*.deb; do dpkg-deb -c "$d"; done |
	awk '{ sub(/^\./, "", $6); print $6 }' | sed 's|/$||' |
	grep -E '^/(usr/(s?bin|lib/sysusers.d|share/(doc|man/man[158]))/|lib/systemd/system/|etc/tcpctd)' |
	grep -vxE '/usr/share/man/man[158]' >"$ROOT/root/debs/paths"
cat >"$ROOT/usr/local/sbin/tcpctd-check" <<'SH'
#!/bin/bash
# Inside the container, as a unit of its systemd: each step's output.
exec >/tcpctd-check.out 2>&1
export DEBIAN_FRONTEND=noninteractive
pkg() { apt-get -y -q --no-install-recommends "$@" >>/root/apt.log 2>&1; }
rules() { { iptables -t raw -S; ip6tables -t raw -S; } 2>/dev/null | grep -c TCPCTD; }
# A clean slate: no package, user, files or rules of an earlier run.
pkg purge tcpctd tcpct-tools
rm -rf /etc/tcpctd /var/lib/tcpctd /etc/systemd/system/multi-user.target.wants/tcpctd.service
userdel tcpctd 2>/dev/null; groupdel tcpctd 2>/dev/null
echo "fresh $(getent passwd tcpctd | wc -l) $(rules)"

# The operator's way in: apt-get install of the .debs.
pkg install /root/debs/base/tcpctd_*.deb /root/debs/base/tcpct-tools_*.deb; echo "install $?"
echo "sysuser $(getent passwd tcpctd | cut -d: -f3,6,7) $(getent group tcpctd | cut -d: -f1)"
stat -c 'mode %n %a %U:%G' /usr/sbin/tcpctd /usr/sbin/tcpctl /usr/bin/tcpct-query \
	/usr/bin/tcpct-connect /etc/tcpctd /etc/tcpctd/conf.d /etc/tcpctd/tcpctd.conf \
	/lib/systemd/system/tcpctd.service /usr/lib/sysusers.d/tcpctd.conf \
	/usr/share/man/man8/tcpctd.8.gz /usr/share/man/man8/tcpctl.8.gz \
	/usr/share/man/man5/tcpctd.conf.5.gz /usr/share/man/man1/tcpct-query.1.gz \
	/usr/share/man/man1/tcpct-connect.1.gz /usr/share/doc/tcpctd/README.md 2>&1
echo "conffiles $(dpkg-query -W -f='${Conffiles}' tcpctd | awk '{ print $1 }' | tr '\n' ' ')"
echo "version $(tcpctd -V)"
echo "unit $(systemctl is-enabled tcpctd) $(systemctl is-active tcpctd) $(rules)"
# Installed again while it is stopped (an upgrade's scripts): still stopped.
pkg install --reinstall /root/debs/base/tcpctd_*.deb; echo "reinstall $? $(systemctl is-enabled tcpctd) $(systemctl is-active tcpctd)"

# A service configured, as an operator would: the conffile edited.
cat >/etc/tcpctd/tcpctd.conf <<'CONF'
[tcpctd]
shield = auto
control-socket = /run/tcpctd/tcpctd.sock
secret-file = /var/lib/tcpctd/secret
metrics-file = /run/tcpctd/tcpctd.prom
metrics-interval = 1
include = conf.d/*.conf

[service dns]
protect = 127.0.0.2:53
CONF
cp /etc/tcpctd/tcpctd.conf /root/tcpctd.conf.configured
systemctl enable tcpctd 2>/dev/null; echo "enable $?"
echo "defaultconf $(tcpctd -t 2>&1 | tail -1)"
cp /etc/tcpctd/tcpctd.conf /root/tcpctd.conf
sed -i '1i bypass = yes' /etc/tcpctd/tcpctd.conf
echo "defaultwins $(tcpctd --rules print | grep -c queue-bypass) $(tcpctd --bypass=no --rules print | grep -c queue-bypass)"
cp /root/tcpctd.conf /etc/tcpctd/tcpctd.conf
# An interface for the kernel shield (the container's network is its own).
ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
systemctl start tcpctd; echo "start $?"
sleep 1
systemctl show -p ActiveState -p SubState -p Type -p WatchdogUSec -p NRestarts tcpctd
pid=$(systemctl show -p MainPID --value tcpctd)
echo "uid $(awk '/^Uid:/ { print $2 }' /proc/$pid/status)"
echo "user $(ps -o user= -p "$pid")"
echo "caps $(awk '/^CapEff:/ { print $2 }' /proc/$pid/status)"
echo "rules $(iptables -t raw -S TCPCTD | grep -c NFQUEUE)"
tcpctl status >/tmp/status; echo "status $?"; sed 's/^/status: /' /tmp/status
echo "secret $(stat -c '%a.%s' /var/lib/tcpctd/secret)"
echo "statekeys $(tcpctl status | sed -n 's/^keys: //p')"
echo "shield $(tcpctl status | sed -n 's/^shield: //p')"
# The kernel's flows pinned in the unit's own bpf filesystem.
echo "pins $(stat -f -c %T /run/tcpctd/bpf) $(stat -c %U /run/tcpctd/bpf) $(ls /run/tcpctd/bpf | grep -c '^shield_')"
# tcpctl for a member of the daemon's group, and not for others.
setpriv --reuid=nobody --regid=nogroup --groups=tcpctd tcpctl status >/dev/null; echo "groupctl $?"
setpriv --reuid=nobody --regid=nogroup --clear-groups tcpctl status >/dev/null 2>&1; echo "otherctl $?"
sleep 1.5
echo "metrics $(stat -c '%a' /run/tcpctd/tcpctd.prom) $(setpriv --reuid=nobody --regid=nogroup --clear-groups cat /run/tcpctd/tcpctd.prom | grep -c '^tcpctd_')"
# The rules' fragment counter (nfacct), read by the sandboxed daemon.
echo "fragments $(grep -c '^tcpctd_kernel_fragments_dropped_total{family="ipv4"} 0$' /run/tcpctd/tcpctd.prom)"
# A crash: the rules stay while systemd restarts it (RestartSec=1s), and a
# SYN for the protected address meanwhile reaches nothing behind them.
iptables -I INPUT -d 127.0.0.2 -p tcp --dport 53 --syn
shield_id() { tc filter show dev veth0 ingress | sed -n 's/.* id \([0-9]*\) name shield .*/\1/p'; }
shield0=$(shield_id)
kill -9 "$pid"
sleep 0.2
echo "crashrules $(iptables -t raw -S TCPCTD 2>/dev/null | grep -c NFQUEUE)"
shield1=$(shield_id)
timeout 0.5 bash -c '</dev/tcp/127.0.0.2/53' 2>/dev/null
echo "crashsyn $(iptables -L INPUT -v -x -n | awk 'NR == 3 { print $1 }')"
iptables -D INPUT -d 127.0.0.2 -p tcp --dport 53 --syn
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ "$(systemctl is-active tcpctd)" = active ] && [ "$(systemctl show -p MainPID --value tcpctd)" != "$pid" ] && break
	sleep 0.5
done
echo "restarted $(systemctl is-active tcpctd) $(systemctl show -p NRestarts --value tcpctd) $(iptables -t raw -S TCPCTD | grep -c NFQUEUE)"
shield2=$(shield_id)
echo "crashshield ${shield0:-none} ${shield1:-none} $([ -n "$shield2" ] && [ "$shield2" != "$shield0" ] && echo replaced)"
pid=$(systemctl show -p MainPID --value tcpctd)
printf '[service web]\nprotect = 127.0.0.3:80\nkind = generic\n' >/etc/tcpctd/conf.d/web.conf
systemctl reload tcpctd; echo "reload $?"
echo "web $(tcpctl status | grep -c '(generic, service web)') $(iptables -t raw -S TCPCTD | grep -c 'dport 80')"
echo "samepid $([ "$(systemctl show -p MainPID --value tcpctd)" = "$pid" ] && echo yes)"
# A restart keeps the rules: the jump to them counts on from where it was
# (a jump deleted and inserted again would count from 0).
jumps() { iptables -t raw -L PREROUTING -v -x -n | awk '$3 == "TCPCTD" { print $1 }'; }
timeout 0.5 bash -c '</dev/tcp/127.0.0.2/53' 2>/dev/null
jumps0=$(jumps)
systemctl restart tcpctd; echo "restart $?"
echo "restartrules ${jumps0:-none} $(jumps) $(journalctl -b -u tcpctd --no-pager | grep -c 'rules kept for the restart')"
echo "restartpid $([ "$(systemctl show -p MainPID --value tcpctd)" != "$pid" ] && echo new)"
pid=$(systemctl show -p MainPID --value tcpctd)
printf '[service dns]\nidle-timeout = soon\n' >>/etc/tcpctd/tcpctd.conf
systemctl reload tcpctd; echo "badreload $?"
echo "badstatus $(systemctl show -p StatusText --value tcpctd)"
# The journal reads the daemon's stream on its own time.
for _ in $(seq 20); do
	journalctl -b -u tcpctd -p err --no-pager | grep -q 'reload refused: .*idle-timeout' && break
	sleep 0.1
done
echo "badlog $(journalctl -b -u tcpctd -p err --no-pager | grep -c 'reload refused: .*idle-timeout')"
echo "after $(systemctl is-active tcpctd) $(tcpctl status | grep -c 'service web')"
systemctl stop tcpctd; echo "stop $?"
echo "left $(iptables -t raw -S | grep -c TCPCTD)"
echo "shieldleft $(tc filter show dev veth0 ingress | grep -c 'name shield')"
echo "pinsleft $(mountpoint -q /run/tcpctd/bpf && ls /run/tcpctd/bpf | wc -l || echo unmounted)"
# The fragment counter went with the rules: a rule can no longer name it.
iptables -t raw -N acct-probe
iptables -t raw -A acct-probe -m nfacct --nfacct-name tcpctd-fragments-ipv4 2>/dev/null
echo "acctleft $?"
iptables -t raw -F acct-probe; iptables -t raw -X acct-probe
echo "notice $(journalctl -b -u tcpctd -p notice --no-pager | grep -c 'protecting') $(journalctl -b -u tcpctd -p notice --no-pager | grep -c 'packets seen')"
echo "info $(journalctl -b -u tcpctd --no-pager | grep -c 'packets seen')"
echo "downlog $(journalctl -b -u tcpctd -p warning --no-pager | grep -c 'backend 127.0.0.2:53 (service dns): down (')"
# A fleet's secret, kept in /etc by configuration management: root's, the
# daemon's group may read it.  Then rotated, as README says.
head -c 32 /dev/urandom >/root/a; head -c 32 /dev/urandom >/root/b
printf '[tcpctd]\ncontrol-socket = /run/tcpctd/tcpctd.sock\nsecret-file = /etc/tcpctd/secret\n[service dns]\nprotect = 127.0.0.2:53\n' \
	>/etc/tcpctd/tcpctd.conf
# Root's copy, 0600: refused, with what to do about it.
install -o root -g root -m 0600 /root/a /etc/tcpctd/secret
systemctl start tcpctd; echo "rootstart $?"
systemctl stop tcpctd
for _ in $(seq 20); do
	journalctl -b -u tcpctd --no-pager | grep -q 'secret: /etc/tcpctd/secret: Permission denied' && break
	sleep 0.1
done
echo "rootsecret $(journalctl -b -u tcpctd --no-pager | grep -c 'secret: /etc/tcpctd/secret: Permission denied: the daemon.s group may read it as root:tcpctd, mode 0640')"
install -o root -g tcpctd -m 0640 /root/a /etc/tcpctd/secret
systemctl start tcpctd; echo "etcstart $?"
echo "etckeys $(tcpctl status | sed -n 's/^keys: //p')"
cat /root/b /root/a >/root/ba
install -o root -g tcpctd -m 0640 /root/ba /etc/tcpctd/secret
tcpctl keys rotate >/dev/null; echo "rotate $?"
echo "rotkeys $(tcpctl status | sed -n 's/^keys: //p')"
systemctl stop tcpctd

# An upgrade to the second build while it runs: try-restart, so a new
# daemon, the same secret (made in /var/lib/tcpctd), the rules kept in
# place (the jump's counter goes on; no removal in the journal), the
# conffile as the operator left it.
cp /root/tcpctd.conf.configured /etc/tcpctd/tcpctd.conf
# A client and a backend of their own, on either side of the container as
# a router, for what reaches the backend through it: an echo service,
# protected (the shield on both links), a server that greets each
# connection and closes it.
ip netns add tcl && ip netns add tbk &&
	ip link add gw-cl type veth peer name eth0 netns tcl &&
	ip link add gw-bk type veth peer name eth0 netns tbk &&
	ip addr add 198.51.100.1/24 dev gw-cl && ip link set gw-cl up &&
	ip addr add 192.0.2.1/24 dev gw-bk && ip link set gw-bk up &&
	ip -n tcl addr add 198.51.100.2/24 dev eth0 && ip -n tcl link set eth0 up &&
	ip -n tbk addr add 192.0.2.2/24 dev eth0 && ip -n tbk link set eth0 up &&
	ip -n tcl route add default via 198.51.100.1 &&
	ip -n tbk route add default via 192.0.2.1 &&
	sysctl -qw net.ipv4.ip_forward=1; echo "routed $?"
ip netns exec tbk perl -MIO::Socket::INET -e '
	my $l = IO::Socket::INET->new(LocalAddr => "192.0.2.2", LocalPort => 7,
		Listen => 16, ReuseAddr => 1) or die "listen: $!";
	while (my $c = $l->accept) { print $c "hello from the backend\n"; close $c }' &
echopid=$!
# And one that sends 20 MiB at about 1 MiB/s: a download across the
# upgrade.
ip netns exec tbk perl -MIO::Socket::INET -e '
	$SIG{CHLD} = "IGNORE";
	my $l = IO::Socket::INET->new(LocalAddr => "192.0.2.2", LocalPort => 8,
		Listen => 16, ReuseAddr => 1) or die "listen: $!";
	my $chunk = "x" x 65536;
	while (my $c = $l->accept) {
		next if fork;
		for (1 .. 320) {
			print $c $chunk or exit 1;
			select(undef, undef, undef, 0.06);
		}
		exit
	}' &
heldpid=$!
printf '[service echo]\nprotect = 192.0.2.2:7\nkind = generic\n' >/etc/tcpctd/conf.d/echo.conf
printf '[service held]\nprotect = 192.0.2.2:8\nkind = generic\n' >/etc/tcpctd/conf.d/held.conf
# The backend's greeting to a real client (the kernel's TCP), and the
# client's SYNs that reached the backend itself.
ip netns exec tbk iptables -A INPUT -s 198.51.100.2 -p tcp --dport 7 --syn
greeting() {
	ip netns exec tcl timeout 5 bash -c \
		'exec 3<>/dev/tcp/192.0.2.2/7 && read -r -t 3 line <&3 && echo "${line// /_}"' 2>/dev/null
}
backend_syns() { ip netns exec tbk iptables -L INPUT -v -x -n | awk 'NR == 3 { print $1 }'; }
shields() { for i in $(ls /sys/class/net); do tc filter show dev "$i" ingress; done | grep -c 'name shield'; }
systemctl start tcpctd; echo "upstart $?"
echo "protected $(greeting) $(backend_syns)"
pid=$(systemctl show -p MainPID --value tcpctd)
keys0=$(tcpctl status | sed -n 's/^keys: //p')
timeout 0.5 bash -c '</dev/tcp/127.0.0.2/53' 2>/dev/null
jumps0=$(jumps)
removed0=$(journalctl -b -u tcpctd --no-pager | grep -c 'chains removed')
kept0=$(journalctl -b -u tcpctd --no-pager | grep -c 'rules kept for the restart')
# The download, begun before the upgrade and read to its end after it.
rm -f /root/download
ip netns exec tcl timeout 60 bash -c \
	'exec 3<>/dev/tcp/192.0.2.2/8 && wc -c <&3 >/root/download.n && mv /root/download.n /root/download' \
	2>/dev/null &
sleep 1
echo "upcarried $(tcpctl status | sed -n 's/.* \([0-9]*\) carried by the kernel.*/\1/p')"
pkg install /root/debs/upgrade/tcpctd_*.deb; echo "upgrade $?"
echo "upduring $([ -e /root/download ] && echo done || echo running)"
for _ in $(seq 400); do [ -e /root/download ] && break; sleep 0.1; done
echo "updownload $(cat /root/download 2>/dev/null)"
echo "uptaken $(journalctl -b -u tcpctd --no-pager | grep -c 'taken over from the daemon before, with [1-9]')"
echo "upversion $(tcpctd -V)"
echo "uprestart $(systemctl is-active tcpctd) $([ "$(systemctl show -p MainPID --value tcpctd)" != "$pid" ] && echo new) $(systemctl is-enabled tcpctd)"
echo "upkeys $([ -n "$keys0" ] && [ "$(tcpctl status | sed -n 's/^keys: //p')" = "$keys0" ] && echo same) $keys0"
for _ in $(seq 20); do
	[ "$(journalctl -b -u tcpctd --no-pager | grep -c 'rules kept for the restart')" -gt "$kept0" ] && break
	sleep 0.1
done
echo "uprules ${jumps0:-none} $(jumps) $(($(journalctl -b -u tcpctd --no-pager | grep -c 'chains removed') - removed0)) $(($(journalctl -b -u tcpctd --no-pager | grep -c 'rules kept for the restart') - kept0))"
echo "upconf $(cmp -s /etc/tcpctd/tcpctd.conf /root/tcpctd.conf.configured && echo kept) $(find /etc/tcpctd -name '*.dpkg-*' | wc -l)"

# Its rules left by a crash with no restart to follow (a unit that failed
# for good), then the package removed: the rules go, the configuration
# and the state stay.
mkdir -p /run/systemd/system/tcpctd.service.d
printf '[Service]\nRestart=no\n' >/run/systemd/system/tcpctd.service.d/norestart.conf
systemctl daemon-reload
kill -9 "$(systemctl show -p MainPID --value tcpctd)"
for _ in $(seq 20); do [ "$(systemctl is-active tcpctd)" = failed ] && break; sleep 0.1; done
echo "crashleft $(systemctl is-active tcpctd) $(iptables -t raw -S TCPCTD 2>/dev/null | grep -c NFQUEUE)"
shields0=$(shields)
pkg remove tcpctd; echo "remove $?"
rm -rf /run/systemd/system/tcpctd.service.d; systemctl daemon-reload; systemctl reset-failed tcpctd 2>/dev/null
echo "removed $(rules) $(dpkg-query -W -f='${db:Status-Abbrev}' tcpctd | tr -d ' ') $(pgrep -c -x tcpctd)"
# The shield the crash left went with the rules: the client reaches the
# backend as if tcpctd had never been there, its own SYN at the backend.
echo "removedshield $shields0 $(shields)"
syns0=$(backend_syns)
echo "removedclient $(greeting) $(($(backend_syns) - syns0))"
echo "removedpins $(mountpoint -q /run/tcpctd/bpf && echo mounted || echo gone)"
kill "$echopid" "$heldpid"; ip netns del tcl; ip netns del tbk
echo "removedfiles $(ls /usr/sbin/tcpctd /usr/sbin/tcpctl /lib/systemd/system/tcpctd.service 2>/dev/null | wc -l)"
echo "removedkept $(ls /etc/tcpctd/tcpctd.conf /etc/tcpctd/conf.d/web.conf /var/lib/tcpctd/secret 2>/dev/null | wc -l)"

# Purged: nothing of either package left but the user.
pkg purge tcpctd tcpct-tools; echo "purge $?"
left=
while read -r p; do [ -e "$p" ] || [ -L "$p" ] && left="$left $p"; done </root/debs/paths
for p in /var/lib/tcpctd /etc/tcpctd /run/tcpctd /etc/systemd/system/multi-user.target.wants/tcpctd.service \
	/var/lib/systemd/deb-systemd-helper-enabled/tcpctd.service.dsh-also; do
	[ -e "$p" ] || [ -L "$p" ] && left="$left $p"
done
echo "purgeleft${left:- none}"
echo "purgepaths $(wc -l </root/debs/paths)"
echo "purgerules $(rules)"
iptables -t raw -N acct-probe
iptables -t raw -A acct-probe -m nfacct --nfacct-name tcpctd-fragments-ipv4 2>/dev/null
echo "purgeacct $?"
iptables -t raw -F acct-probe; iptables -t raw -X acct-probe
echo "purgedpkg $(dpkg-query -W -f='${db:Status-Abbrev}' tcpctd tcpct-tools 2>/dev/null | wc -w)"
echo "purgeuser $(getent passwd tcpctd | cut -d: -f1)"
echo end
systemctl poweroff
SH
chmod 755 "$ROOT/usr/local/sbin/tcpctd-check"
cat >"$ROOT/etc/systemd/system/tcpctd-check.service" <<'UNIT'
[Unit]
Description=tcpctd.service: start, reload, stop
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/tcpctd-check
[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/tcpctd-check.service \
	"$ROOT/etc/systemd/system/multi-user.target.wants/tcpctd-check.service"
rm -f "$ROOT/tcpctd-check.out" "$ROOT/root/apt.log"

# Not registered with machined, in no scope of its own: the host's PID 1
# need not be systemd.  The timeout ends a container that hangs.
start=$(date +%s)
timeout -k 10 300 systemd-nspawn -D "$ROOT" --boot --private-network --capability=CAP_BPF,CAP_PERFMON --system-call-filter=bpf \
	--register=no --keep-unit --quiet >"$LOG" 2>&1
rc=$?
echo "# the container booted, ran the checks and powered off in $(($(date +%s) - start)) s (nspawn $rc)"
out=$ROOT/tcpctd-check.out
[ -s "$out" ] && grep -q '^end$' "$out" ||
	{ not_ok "the checks ran in the container" "$(tail -5 "$LOG" | tr '\n' ' ')"; summary; exit 1; }
has() { grep -qx -- "$1" "$out"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d" "got: $(grep -E "^(${2%% *}|ActiveState|SubState)" "$out" | tr '\n' ' ')"; fi; }
modes="mode /usr/sbin/tcpctd 755 root:root
mode /usr/sbin/tcpctl 755 root:root
mode /usr/bin/tcpct-query 755 root:root
mode /usr/bin/tcpct-connect 755 root:root
mode /etc/tcpctd 755 root:root
mode /etc/tcpctd/conf.d 755 root:root
mode /etc/tcpctd/tcpctd.conf 644 root:root
mode /lib/systemd/system/tcpctd.service 644 root:root
mode /usr/lib/sysusers.d/tcpctd.conf 644 root:root
mode /usr/share/man/man8/tcpctd.8.gz 644 root:root
mode /usr/share/man/man8/tcpctl.8.gz 644 root:root
mode /usr/share/man/man5/tcpctd.conf.5.gz 644 root:root
mode /usr/share/man/man1/tcpct-query.1.gz 644 root:root
mode /usr/share/man/man1/tcpct-connect.1.gz 644 root:root
mode /usr/share/doc/tcpctd/README.md 644 root:root"
check "a clean slate: no user tcpctd, no rules" has "fresh 0 0"
check "apt-get install of tcpctd_${version} and tcpct-tools_${version}" has "install 0"
check "its system user and group tcpctd, made at install, no login ($(sed -n 's/^sysuser //p' "$out"))" \
	eval 'grep -Eqx "sysuser [1-9][0-9]{0,2}:/:/usr/sbin/nologin tcpctd" "$out"'
check "the programs, the unit, sysusers.d, the pages, the configuration: there, root's, their modes" \
	eval '[ "$(grep "^mode " "$out")" = "$modes" ]'
check "/etc/tcpctd/tcpctd.conf is the conffile" has "conffiles /etc/tcpctd/tcpctd.conf "
check "tcpctd -V: the package's version and the commit built ($(sed -n 's/^version //p' "$out"))" \
	has "version tcpctd $version (commit $commit)"
check "the unit neither enabled nor started by the install, no rules" has "unit disabled inactive 0"
check "installed again (an upgrade's scripts) while stopped: still stopped, still disabled" \
	has "reinstall 0 disabled inactive"
check "systemctl start: active once its queues are bound (Type=notify)" \
	eval 'has "start 0" && has ActiveState=active && has SubState=running && has Type=notify'
check "the watchdog armed (WatchdogSec=10s) and never fired" \
	eval 'has WatchdogUSec=10s && has NRestarts=0'
check "it runs as its own user, tcpctd (uid $(sed -n 's/^uid //p' "$out"))" \
	eval 'has "user tcpctd" && [ "$(sed -n "s/^uid //p" "$out")" -gt 0 ]'
check "CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_PERFMON only ($(sed -n 's/^caps //p' "$out"))" \
	has "caps 000000c000003000"
check "the kernel shield on the container's interface ($(sed -n 's/^shield //p' "$out"))" \
	eval 'grep -Eqx "shield on: (veth0 veth1|veth1 veth0)" "$out"'
check "the rules installed before it started" has "rules 4"
check "tcpctd -t alone checks /etc/tcpctd/tcpctd.conf, as nsd and unbound read theirs" \
	has "defaultconf configuration OK"
check "... read first: an option of the command line wins over it ($(sed -n 's/^defaultwins //p' "$out"))" \
	has "defaultwins 4 0"
check "tcpctl status over /run/tcpctd/tcpctd.sock" \
	eval 'has "status 0" && grep -q "^status: 127.0.0.2:53 (dns, service dns)" "$out"'
check "the secret made in its StateDirectory, mode 0600, 32 bytes" has "secret 600.32"
check "the daemon's group may use tcpctl, others may not" \
	eval 'has "groupctl 0" && ! has "otherctl 0"'
state_id=$(sed -n 's/^statekeys secret \/var\/lib\/tcpctd\/secret, id \([0-9a-f]\{8\}\)$/\1/p' "$out")
etc_id=$(sed -n 's/^etckeys secret \/etc\/tcpctd\/secret, id \([0-9a-f]\{8\}\)$/\1/p' "$out")
check "a secret in /etc/tcpctd that is root's alone: the start fails, the journal says what to do" \
	eval '! has "rootstart 0" && ! has "rootsecret 0"'
check "a secret in /etc/tcpctd, root's and readable by its group (0640): taken ($(sed -n 's/^etckeys //p' "$out"))" \
	eval 'has "etcstart 0" && [ -n "$etc_id" ] && [ -n "$state_id" ] && [ "$etc_id" != "$state_id" ]'
check "... and rotated with tcpctl keys rotate ($(sed -n 's/^rotkeys //p' "$out"))" \
	eval 'has "rotate 0" && grep -Eqx "rotkeys secret /etc/tcpctd/secret, id [0-9a-f]{8}, accepting $etc_id" "$out" && ! has "rotkeys secret /etc/tcpctd/secret, id $etc_id, accepting $etc_id"'
check "the example's metrics file written under the unit, 0644, read by another user ($(sed -n 's/^metrics //p' "$out"))" \
	eval 'grep -qE "^metrics 644 [1-9][0-9]+$" "$out"'
check "kill -9: the rules stay while systemd restarts it (ExecStopPost= removes them on a clean stop only)" \
	has "crashrules 4"
check "kill -9: a SYN during the restart does not reach the protected address" \
	has "crashsyn 0"
check "kill -9: restarted, its rules in place" has "restarted active 1 4"
check "kill -9: the kernel shield stays through the crash, the restart replaces it ($(sed -n 's/^crashshield //p' "$out"))" \
	eval 'grep -Eqx "crashshield ([0-9]+) \1 replaced" "$out"'
check "the kernel's flows pinned in the unit's own bpf filesystem, the daemon's ($(sed -n 's/^pins //p' "$out"))" \
	eval 'grep -Eqx "pins bpf_fs tcpctd [1-9][0-9]*" "$out"'
check "systemctl stop takes the kernel shield away" has "shieldleft 0"
check "... and its pins, their filesystem unmounted ($(sed -n 's/^pinsleft //p' "$out"))" has "pinsleft unmounted"
check "systemctl reload: the new service (a file of conf.d), and its rules" \
	eval 'has "reload 0" && has "web 1 3" && has "samepid yes"'
check "systemctl restart: a new daemon, the rules kept in place meanwhile ($(sed -n 's/^restartrules //p' "$out"))" \
	eval 'has "restart 0" && has "restartpid new" &&
	      grep -Eqx "restartrules ([1-9][0-9]*) ([0-9]+) [1-9][0-9]*" "$out" &&
	      awk "/^restartrules / { exit !(\$3 >= \$2) }" "$out"'
check "a reload of a file that does not parse fails; the daemon runs on, as it was" \
	eval '! has "badreload 0" && has "after active 1"'
check "... logged as an error, and systemctl status says so ($(sed -n 's/^badstatus //p' "$out"))" \
	eval '! has "badlog 0" && has "badstatus protecting 2 services, 2 backends down, the last reload refused"'
check "systemctl stop removes the rules, even with that file" \
	eval 'has "stop 0" && has "left 0"'
check "... and the fragment counter, which the sandboxed daemon had read" \
	eval 'has "fragments 1" && ! has "acctleft 0"'
check "the journal has its levels: notice for 'protecting' (each start: the first, the crash's, the restart's), info for the counters" \
	eval 'grep -qx "notice [1-3] 0" "$out" && ! has "info 0"'
check "a backend down is a warning, named by its address and service" \
	eval '! has "downlog 0"'
check "an upgrade to ${version}+test1 while it runs: installed, restarted (try-restart), still enabled" \
	eval 'has "upstart 0" && has "upgrade 0" && has "upversion tcpctd ${version}+test1 (commit $commit)" &&
	      has "uprestart active new enabled"'
check "... the same secret after it ($(sed -n 's/^upkeys same //p' "$out"))" \
	eval 'grep -q "^upkeys same secret /var/lib/tcpctd/secret, id [0-9a-f]\{8\}$" "$out"'
check "... the rules in place through it: the jump counts on, none removed ($(sed -n 's/^uprules //p' "$out"))" \
	eval 'grep -Eqx "uprules ([1-9][0-9]*) ([0-9]+) 0 1" "$out" &&
	      awk "/^uprules / { exit !(\$3 >= \$2) }" "$out"'
check "... the edited conffile kept, no .dpkg-* beside it" has "upconf kept 0"
check "... a 20 MiB download through it, carried by the kernel, whole ($(sed -n 's/^updownload //p' "$out") bytes; carried $(sed -n 's/^upcarried //p' "$out"); $(sed -n 's/^upduring //p' "$out") when the upgrade was done)" \
	eval 'has "updownload 20971520" && has "upduring running" && grep -Eqx "upcarried [1-9][0-9]*" "$out"'
check "... taken over by the new daemon from the pins ($(sed -n 's/^uptaken //p' "$out"))" \
	eval 'grep -Eqx "uptaken [1-9][0-9]*" "$out"'
check "a crash with no restart to follow leaves its rules ($(sed -n 's/^crashleft //p' "$out"))" \
	eval 'grep -Eqx "crashleft failed [1-9][0-9]*" "$out"'
check "apt-get remove: its rules gone, no daemon, the package's files gone ($(sed -n 's/^removed //p' "$out"))" \
	eval 'has "remove 0" && has "removed 0 rc 0" && has "removedfiles 0"'
check "... the configuration (and conf.d's file) and the state kept" has "removedkept 3"
check "... the kernel's pins the crash left, and their filesystem, gone" has "removedpins gone"
check "a real client through the container, to a protected backend of its own: greeted ($(sed -n 's/^protected //p' "$out"))" \
	eval 'has "routed 0" && grep -Eqx "protected hello_from_the_backend [0-9]+" "$out"'
check "apt-get remove after the crash: the kernel shield it left gone too ($(sed -n 's/^removedshield //p' "$out"))" \
	eval 'grep -Eqx "removedshield [1-9][0-9]* 0" "$out"'
check "... and a real client is greeted by the backend itself, its SYN there, as if tcpctd had never been there ($(sed -n 's/^removedclient //p' "$out"))" \
	eval 'grep -Eqx "removedclient hello_from_the_backend [1-9][0-9]*" "$out"'
check "apt-get purge: none of the packages' $(sed -n 's/^purgepaths //p' "$out") files and directories left, nor /var/lib/tcpctd, /etc/tcpctd, /run/tcpctd, the unit's enablement (left: $(sed -n 's/^purgeleft //p' "$out"))" \
	eval 'has "purge 0" && has "purgeleft none" && has "purgedpkg 0"'
check "... no rules, no fragment counter" eval 'has "purgerules 0" && ! has "purgeacct 0"'
check "... the user tcpctd stays, as Debian packages leave theirs" has "purgeuser tcpctd"
summary
