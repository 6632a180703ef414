# tcpctd — see README.md.  `make demo` and `make check` are the two commands
# a new user types; both install what is missing first (`make deps`).

SHELL   := /bin/bash
CC      ?= cc
BUILD   := build
# The version is the package's, debian/changelog's first line; the commit
# is the one built: git's in a checkout (with -dirty for changes not
# committed), else the one written in .commit (by `make deb`, or by `git
# archive` through .gitattributes), else unknown.
VERSION := $(shell awk 'NR == 1 { gsub(/[()]/, "", $$2); print $$2 }' debian/changelog 2>/dev/null)
VERSION := $(or $(VERSION),unknown)
COMMIT  := $(shell if [ -e .git ] && c=$$(git rev-parse --short=12 HEAD 2>/dev/null); then \
		git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; \
	else grep -Eo '^[0-9a-f]{12}' .commit 2>/dev/null | sed "s/$$/$$(grep -o -- -dirty .commit)/"; fi)
COMMIT  := $(or $(COMMIT),unknown)

PKGS     := libnetfilter_queue libmnl libcrypto inih libsystemd libbpf
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lnetfilter_queue -lmnl -lcrypto -linih -lsystemd -lbpf)

WARN     := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes
HARDEN   := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -D_GNU_SOURCE $(WARN) $(HARDEN) -DTCPCTD_VERSION='"$(VERSION)"' \
            -DTCPCTD_COMMIT='"$(COMMIT)"' $(PKG_CFLAGS) \
            -DTCPCTD_CONFIG='"$(SYSCONFDIR)/tcpctd/tcpctd.conf"'
LDFLAGS  += -pie -Wl,-z,relro,-z,now
LDLIBS   += $(PKG_LIBS) -lpthread

# make install [PREFIX=/usr/local] [DESTDIR=...]: the daemon and tcpctl,
# the man pages, the unit (its paths made PREFIX's), its user (made at
# once, unless DESTDIR stages the files for a package) and, unless one is
# there already, the example configuration.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/tcpctd
SYSCONFDIR ?= /etc
UNITDIR    ?= /lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d

# The checked build: the sanitizers, and the gateway's own assertions
# (TCPCTD_CHECKED: a flow's state moves only as its table says).
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
            -DTCPCTD_CHECKED

NFQ_SRC     := nfq/csum.c nfq/pkt.c nfq/tcpopt.c nfq/tcpct.c nfq/queue.c nfq/inject.c
POLICY_SRC  := policy/config.c policy/conffile.c policy/keys.c policy/rules.c
GATEWAY_SRC := gateway/flow.c gateway/cookie.c gateway/txn.c gateway/limit.c gateway/mem.c \
               gateway/dnsmsg.c gateway/farcache.c gateway/probe.c gateway/worker.c gateway/shieldmap.c \
               gateway/overload.c gateway/backlog.c gateway/admit.c gateway/conn.c gateway/guard.c \
               gateway/splice.c gateway/backend.c gateway/bind.c gateway/accept.c gateway/release.c \
               gateway/handshake.c gateway/tfo.c gateway/responder.c gateway/upstream.c gateway/client.c gateway/carry.c \
               gateway/dispatch.c
SHIELD_SRC  := shield/shield.c
# The daemon above the gateway: its main loop (MAIN_SRC), and what the
# unit tests link of it.
DAEMON_SRC  := daemon/stats.c daemon/control.c daemon/options.c daemon/reconfig.c daemon/log.c \
               daemon/status.c daemon/probes.c daemon/reload.c
LIB_SRC     := $(NFQ_SRC) $(POLICY_SRC) $(SHIELD_SRC) $(GATEWAY_SRC) $(DAEMON_SRC)
MAIN_SRC    := daemon/tcpctd.c
CLIENT_SRC  := client/utcp.c client/dns.c
CLIENT_OBJ  := $(CLIENT_SRC:%.c=$(BUILD)/obj/%.o)
TOOLS       := $(BUILD)/tcpct-query $(BUILD)/tcpct-connect $(BUILD)/tcpct-forge $(BUILD)/tcpctl
LAB_TOOLS   := $(BUILD)/loadgen $(BUILD)/shieldrun
UNIT_SRC    := $(wildcard tests/unit/*.c)

# The shield's BPF program, compiled by clang's BPF target and embedded in
# every binary that links the gateway (shield/object.S).
BPF_CC      := clang
BPF_CFLAGS  := -O2 -g -target bpf -mcpu=v3 -std=gnu11 -Wall -Wextra -Werror \
               -I/usr/include/$(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
BPF_OBJ     := $(BUILD)/shield/shield.bpf.o
EMBED_OBJ   := $(BUILD)/obj/shield/object.o

LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(EMBED_OBJ)
LIB_SAN_OBJ := $(LIB_SRC:%.c=$(BUILD)/san/%.o) $(EMBED_OBJ)

# Fuzz targets (tests/fuzz/README): libFuzzer with clang, ASan and UBSan.
# `make check` runs each for FUZZ_TIME seconds, `make fuzz` for longer.
FUZZ_CC      := clang
FUZZ_CFLAGS  := -O1 -g -std=gnu11 -D_GNU_SOURCE $(WARN) $(PKG_CFLAGS) -DTCPCTD_VERSION='"$(VERSION)"' \
                -DTCPCTD_COMMIT='"$(COMMIT)"' -DTCPCTD_CHECKED \
                -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_TARGETS := parse worker cookie dns config control keys utcp
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
LIB_FUZZ_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz/obj/%.o) $(EMBED_OBJ)
FUZZ_TIME    ?= 600

# make deb: the Debian packages tcpctd and tcpct-tools (debian/), built by
# dpkg-buildpackage -b in a copy of this tree, $(DEB_SRC) (its .commit
# names the commit), so that its clean and what it writes in ../ leave
# this tree alone: the .debs, the .changes and the .buildinfo land in
# $(DEB_DIR), the log in $(DEB_DIR)/build.log.  What debian/control's
# Build-Depends lack is installed first.  Nothing is done when nothing
# changed since the last.
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DIR     := $(BUILD)/deb
DEB_SRC     := $(DEB_DIR)/tcpctd-$(VERSION)
DEB_CHANGES := $(DEB_DIR)/tcpctd_$(VERSION)_$(DEB_ARCH).changes
DEB_INPUTS  := $(shell find . -path ./build -prune -o -path ./.git -prune -o -type f -print)
LINTIAN     := lintian --fail-on error,warning

# Debian packages: build, unit tests, the package and lintian, and the
# lab's real peers.
DEPS := build-essential pkg-config libnetfilter-queue-dev libmnl-dev libssl-dev libinih-dev libsystemd-dev \
        libcunit1-dev iptables iproute2 nsd knot-dnsutils dnsperf hping3 \
        python3 python3-scapy python3-prometheus-client tshark tcpdump curl socat iperf3 netsniff-ng ethtool \
        cppcheck clang-tidy valgrind groff-base systemd systemd-container debootstrap \
        clang libclang-rt-14-dev clang-tools libbpf-dev debhelper lintian

.PHONY: all asan check unit unit-asan netns demo deps bench lint clean install uninstall \
        install-tools deb fuzz fuzz-build soak

all: $(BUILD)/tcpctd $(TOOLS) $(LAB_TOOLS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -c $< -o $@

# The objects that print the version or the commit are made again when
# either changes: $(BUILD)/version is written only then.
VERSION_SRC := daemon/tcpctd.c daemon/status.c daemon/stats.c ctl/tcpctl.c
$(foreach d,obj san fuzz/obj,$(VERSION_SRC:%.c=$(BUILD)/$(d)/%.o)): $(BUILD)/version
$(BUILD)/version: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION) $(COMMIT)' | cmp -s - $@ || echo '$(VERSION) $(COMMIT)' >$@
FORCE:

$(BPF_OBJ): shield/shield.bpf.c shield/maps.h shield/syncookie.h shield/ratelimit.h
	@mkdir -p $(dir $@)
	$(BPF_CC) $(BPF_CFLAGS) -c $< -o $@

$(EMBED_OBJ): shield/object.S $(BPF_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -DSHIELD_BPF_OBJ='"$(BPF_OBJ)"' -c $< -o $@

$(BUILD)/tcpctd: $(LIB_OBJ) $(BUILD)/obj/$(MAIN_SRC:.c=.o)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# tcpctl(8) needs libc, and policy's reader of tcpctd.conf for -c.
$(BUILD)/tcpctl: $(BUILD)/obj/ctl/tcpctl.o $(BUILD)/obj/policy/config.o \
		 $(BUILD)/obj/policy/conffile.o
	$(CC) $(LDFLAGS) $^ $(shell pkg-config --libs inih 2>/dev/null || echo -linih) -o $@

# The TCPCT initiator tools (client/ uses nfq/ only).
$(BUILD)/tcpct-%: $(BUILD)/obj/client/tcpct-%.o $(CLIENT_OBJ) $(NFQ_SRC:%.c=$(BUILD)/obj/%.o)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The lab's load generator (tests/load): DNS clients and SYN floods through
# the kernel's own sockets.
$(BUILD)/loadgen: $(BUILD)/obj/tests/load/loadgen.o $(BUILD)/obj/client/dns.o $(BUILD)/obj/nfq/csum.o \
		  $(BUILD)/obj/policy/config.o
	$(CC) $(LDFLAGS) $^ -o $@

# The shield's own time per packet (tests/bench/shieldrun.c).
$(BUILD)/shieldrun: $(BUILD)/obj/tests/bench/shieldrun.o $(LIB_OBJ)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tcpctd-asan: $(LIB_SAN_OBJ) $(BUILD)/san/$(MAIN_SRC:.c=.o)
	$(CC) $(LDFLAGS) $(SAN) $^ $(LDLIBS) -o $@

# test_utcp drives the initiator tools' user-space TCP (client/).
$(BUILD)/unit-tests: $(LIB_SAN_OBJ) $(BUILD)/san/client/utcp.o $(UNIT_SRC:%.c=$(BUILD)/san/%.o)
	$(CC) $(LDFLAGS) $(SAN) $^ $(LDLIBS) -lcunit -o $@

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/obj/tests/fuzz/fuzz_%.o $(LIB_FUZZ_OBJ)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $^ $(LDLIBS) -o $@

# fuzz_utcp drives the TCPCT initiator's user-space TCP (client/).
$(BUILD)/fuzz/fuzz_utcp: $(BUILD)/fuzz/obj/client/utcp.o

fuzz-build: $(FUZZ_BINS)

# make fuzz [FUZZ_TIME=S] [FUZZ_TARGETS="parse worker"]: each target for S
# seconds, new inputs kept in build/fuzz/corpus.
fuzz: deps fuzz-build
	tests/fuzz/run.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

asan: $(BUILD)/tcpctd-asan

deps:
	@missing=""; for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

unit: deps $(BUILD)/unit-tests
	$(BUILD)/unit-tests

netns: deps all asan
	tests/lab/run.sh

check: deps
	$(MAKE) all asan $(BUILD)/unit-tests fuzz-build
	$(MAKE) lint
	$(BUILD)/unit-tests
	tests/fuzz/run.sh 20
	$(BUILD)/tcpctd -c systemd/tcpctd.conf -t
	$(MAKE) deb
	$(LINTIAN) $(DEB_CHANGES)
	tests/install.sh
	tests/systemd.sh
	tests/lab/run.sh

demo: deps
	$(MAKE) all
	tests/lab/demo.sh

# make soak [SOAK_SECONDS=600]: the soak scenario under the ASan/UBSan build.
SOAK_SECONDS ?= 600
soak: deps all asan
	SOAK_SECONDS=$(SOAK_SECONDS) TCPCTD_BIN=$(CURDIR)/$(BUILD)/tcpctd-asan tests/lab/t_soak.sh

bench: deps all
	tests/bench/run.sh

lint:
	tests/lint/layers.sh
	cppcheck --std=c11 --enable=warning,style,performance,portability --error-exitcode=1 \
		--suppress=missingIncludeSystem --inline-suppr --library=tests/lint/libbpf.cfg --quiet nfq policy gateway shield daemon client ctl tests/unit tests/fuzz tests/load tests/bench
	clang-tidy --quiet $(LIB_SRC) $(MAIN_SRC) $(CLIENT_SRC) client/tcpct-query.c client/tcpct-connect.c client/tcpct-forge.c ctl/tcpctl.c tests/load/loadgen.c tests/bench/shieldrun.c -- -std=gnu11 -D_GNU_SOURCE -DTCPCTD_VERSION='"$(VERSION)"' -DTCPCTD_COMMIT='"$(COMMIT)"' $(PKG_CFLAGS) 2>&1 | \
		grep -v 'warnings generated' ; exit $${PIPESTATUS[0]}
	@# The clang static analyzer over a build of its own; a report fails.
	rm -rf $(BUILD)/scan
	scan-build --status-bugs --use-cc=clang -o $(BUILD)/scan/report \
		$(MAKE) -s BUILD=$(BUILD)/scan all

install: $(BUILD)/tcpctd $(BUILD)/tcpctl
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(SYSCONFDIR)/tcpctd/conf.d
	install -m 755 $(BUILD)/tcpctd $(BUILD)/tcpctl $(DESTDIR)$(SBINDIR)/
	install -m 644 man/tcpctd.8 man/tcpctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 man/tcpctd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/
	sed -e 's|/usr/local/sbin|$(SBINDIR)|g' -e 's|/usr/local/share/doc/tcpctd|$(DOCDIR)|g' \
		-e 's|/etc/tcpctd|$(SYSCONFDIR)/tcpctd|g' systemd/tcpctd.service \
		> $(DESTDIR)$(UNITDIR)/tcpctd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/tcpctd.service
	install -m 644 systemd/tcpctd.sysusers $(DESTDIR)$(SYSUSERSDIR)/tcpctd.conf
	if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(SYSUSERSDIR)/tcpctd.conf; fi
	[ -e $(DESTDIR)$(SYSCONFDIR)/tcpctd/tcpctd.conf ] || \
		install -m 644 systemd/tcpctd.conf $(DESTDIR)$(SYSCONFDIR)/tcpctd/tcpctd.conf

deb: $(DEB_CHANGES)

$(DEB_CHANGES): $(DEB_INPUTS) $(BUILD)/version
	@dpkg-checkbuilddeps >/dev/null 2>&1 || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q --no-install-recommends ./; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	tar -cf - --exclude-vcs --exclude-vcs-ignores --exclude=./build . | tar -xf - -C $(DEB_SRC)
	echo '$(COMMIT)' >$(DEB_SRC)/.commit
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b -tc -J >../build.log 2>&1 || \
		{ tail -40 ../build.log; exit 1; }
	@cd $(DEB_DIR) && ls *.deb *.changes

# make install-tools: the TCPCT client tools (client/), for a client's
# machine rather than the gateway; tcpct-forge, an attacker's, stays in
# build/ for the lab and the benchmarks.
install-tools: $(BUILD)/tcpct-query $(BUILD)/tcpct-connect
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BUILD)/tcpct-query $(BUILD)/tcpct-connect $(DESTDIR)$(BINDIR)/
	install -m 644 man/tcpct-query.1 man/tcpct-connect.1 $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/tcpctd $(DESTDIR)$(SBINDIR)/tcpctl \
		$(DESTDIR)$(MANDIR)/man8/tcpctd.8 $(DESTDIR)$(MANDIR)/man8/tcpctl.8 \
		$(DESTDIR)$(MANDIR)/man5/tcpctd.conf.5 $(DESTDIR)$(DOCDIR)/README.md \
		$(DESTDIR)$(UNITDIR)/tcpctd.service $(DESTDIR)$(SYSUSERSDIR)/tcpctd.conf \
		$(DESTDIR)$(BINDIR)/tcpct-query $(DESTDIR)$(BINDIR)/tcpct-connect \
		$(DESTDIR)$(MANDIR)/man1/tcpct-query.1 $(DESTDIR)$(MANDIR)/man1/tcpct-connect.1

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/san $(BUILD)/fuzz/obj -name '*.d' -type f 2>/dev/null)
