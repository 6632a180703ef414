#!/bin/bash
# `make install` into a staging root, and what it put there: the daemon
# and tcpctl, the man pages (groff and man find nothing to warn of), the
# client tools of `make install-tools`, the example
# configuration (it checks), and the unit (systemd-analyze verify finds
# nothing wrong; its exposure from `systemd-analyze security` is printed
# and must stay low).  Run by `make check`; needs no root.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
STAGE=$(mktemp -d /tmp/tcpctd-install.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok - %s\n' "$1"; }
not_ok() { failed=$((failed + 1)); printf 'not ok - %s\n' "$1"; [ -z "${2:-}" ] || printf '#   %s\n' "$2"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d" "failed: $*"; fi; }

out=$(make -C "$TOP" -s install DESTDIR="$STAGE" PREFIX=/usr 2>&1) ||
	not_ok "make install" "$out"
out=$(make -C "$TOP" -s install-tools DESTDIR="$STAGE" PREFIX=/usr 2>&1) ||
	not_ok "make install-tools" "$out"
for f in usr/sbin/tcpctd usr/sbin/tcpctl usr/share/man/man8/tcpctd.8 \
	usr/share/man/man8/tcpctl.8 usr/share/man/man5/tcpctd.conf.5 \
	usr/share/doc/tcpctd/README.md lib/systemd/system/tcpctd.service \
	usr/lib/sysusers.d/tcpctd.conf etc/tcpctd/tcpctd.conf \
	usr/bin/tcpct-query usr/bin/tcpct-connect usr/share/man/man1/tcpct-query.1 \
	usr/share/man/man1/tcpct-connect.1; do
	check "installed: /$f" [ -s "$STAGE/$f" ]
done
check "an empty conf.d for the example's include" [ -d "$STAGE/etc/tcpctd/conf.d" ]
check "the programs are executable, the rest is not" \
	[ "$(stat -c %a "$STAGE/usr/sbin/tcpctd" "$STAGE/usr/sbin/tcpctl" "$STAGE/etc/tcpctd/tcpctd.conf" | tr '\n' ' ')" = "755 755 644 " ]
# A staged install leaves the user to the package (systemd-sysusers in its
# postinst); what that makes of the file: a system user with no login.
check "no user made in a staging root" [ ! -e "$STAGE/etc/passwd" ]
if [ "$(id -u)" -eq 0 ] && command -v systemd-sysusers >/dev/null; then
	systemd-sysusers --root="$STAGE" tcpctd.conf >/dev/null 2>&1
	check "its sysusers.d file makes tcpctd, a system user and group with no login" \
		eval 'grep -Eq "^tcpctd:x:[0-9]{1,3}:[0-9]{1,3}:[^:]*:/:/usr/sbin/nologin$" "$STAGE/etc/passwd" &&
		      grep -q "^tcpctd:" "$STAGE/etc/group"'
fi
grep -q /usr/local "$STAGE/lib/systemd/system/tcpctd.service"
check "the unit names PREFIX's paths, not /usr/local's" [ $? -ne 0 ]
# A switch of the command line turned off again, after a file or an
# earlier one turned it on: the later one wins.
T=$STAGE/usr/sbin/tcpctd
check "--bypass=no undoes --bypass (the rules without --queue-bypass)" \
	eval '[ "$("$T" --protect 192.0.2.2:53 --bypass --rules print | grep -c queue-bypass)" -gt 0 ] &&
	      [ "$("$T" --protect 192.0.2.2:53 --bypass --bypass=no --rules print | grep -c queue-bypass)" -eq 0 ]'
check "--fail-open=maybe: refused" eval '! "$T" --protect 192.0.2.2:53 --fail-open=maybe -t 2>/dev/null'
check "the installed configuration checks" \
	"$STAGE/usr/sbin/tcpctd" -c "$STAGE/etc/tcpctd/tcpctd.conf" -t
echo "# local edits" >>"$STAGE/etc/tcpctd/tcpctd.conf"
make -C "$TOP" -s install DESTDIR="$STAGE" PREFIX=/usr >/dev/null 2>&1
check "installing again keeps an existing configuration" \
	grep -q '^# local edits' "$STAGE/etc/tcpctd/tcpctd.conf"

# lintian reads them with man --warnings as well.
for m in "$STAGE"/usr/share/man/man*/*; do
	w=$(groff -man -ww -z "$m" 2>&1)
	check "$(basename "$m"): groff -ww finds nothing${w:+ ($w)}" [ -z "$w" ]
	if command -v man >/dev/null; then
		w=$(LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l -Tutf8 -Z "$m" 2>&1 >/dev/null)
		check "$(basename "$m"): man --warnings finds nothing${w:+ ($w)}" [ -z "$w" ]
	fi
done

# Every long option the installed tcpctd --help prints is in the installed
# tcpctd.8, as groff source spells it (--idle-timeout as \-\-idle\-timeout)
# and as a whole name: \-\-tcpct\-transactions does not stand for \-\-tcpct.
page="$STAGE/usr/share/man/man8/tcpctd.8"
opts=$("$STAGE/usr/sbin/tcpctd" --help 2>/dev/null |
	grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u)
missing=
for o in $opts; do
	re=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
	grep -qE -- "$re"'(\\[^-]|[^a-z0-9\\]|$)' "$page" 2>/dev/null ||
		missing="$missing $o"
done
[ -n "$opts" ] || missing=" all: tcpctd --help printed none"
check "tcpctd.8 documents the $(echo $opts | wc -w) long options of tcpctd --help${missing:+ (missing:$missing)}" \
	[ -z "$missing" ]

# systemd-analyze verify wants the programs where the unit says: the
# staged unit with its paths made the staging root's.
sed "s|/usr/sbin|$STAGE/usr/sbin|g" "$STAGE/lib/systemd/system/tcpctd.service" \
	>"$STAGE/tcpctd.service"
w=$(systemd-analyze verify --man=no "$STAGE/tcpctd.service" 2>&1)
check "systemd-analyze verify: clean${w:+ ($w)}" [ -z "$w" ]
exposure=$(systemd-analyze security --offline=true \
	"$STAGE/lib/systemd/system/tcpctd.service" 2>/dev/null |
	sed -n 's/.*Overall exposure level.*: \([0-9.]*\) .*/\1/p')
check "systemd-analyze security: exposure $exposure (at most 2.0: CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_PERFMON and the host's network are its job)" \
	awk -v e="${exposure:-10}" 'BEGIN { exit !(e <= 2.0) }'
printf 'install: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
