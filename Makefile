# tcpctd — see README.md.  `make demo` and `make check` are the two commands
# a new user types; both install what is missing first (`make deps`).

SHELL   := /bin/bash
CC      ?= cc
BUILD   := build
VERSION := 0.1

PKGS     := libnetfilter_queue libmnl libcrypto inih
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lnetfilter_queue -lmnl -lcrypto -linih)

WARN     := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes
HARDEN   := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -D_GNU_SOURCE $(WARN) $(HARDEN) -DTCPCTD_VERSION='"$(VERSION)"' $(PKG_CFLAGS)
LDFLAGS  += -pie -Wl,-z,relro,-z,now
LDLIBS   += $(PKG_LIBS) -lpthread

SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

NFQ_SRC     := nfq/csum.c nfq/pkt.c nfq/tcpopt.c nfq/tcpct.c nfq/queue.c nfq/inject.c
POLICY_SRC  := policy/config.c policy/conffile.c policy/keys.c policy/rules.c
GATEWAY_SRC := gateway/cookie.c gateway/flow.c gateway/probe.c gateway/handshake.c \
               gateway/splice.c gateway/tcpct.c gateway/tfo.c gateway/txn.c gateway/dnsmsg.c \
               gateway/worker.c gateway/mem.c gateway/limit.c gateway/guard.c gateway/bind.c \
               gateway/overload.c gateway/release.c
LIB_SRC     := $(NFQ_SRC) $(POLICY_SRC) $(GATEWAY_SRC)
MAIN_SRC    := gateway/tcpctd.c
CLIENT_SRC  := client/utcp.c client/dns.c
CLIENT_OBJ  := $(CLIENT_SRC:%.c=$(BUILD)/obj/%.o)
TOOLS       := $(BUILD)/tcpct-query $(BUILD)/tcpct-connect
UNIT_SRC    := $(wildcard tests/unit/*.c)

LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_SAN_OBJ := $(LIB_SRC:%.c=$(BUILD)/san/%.o)

# Debian packages: build, unit tests, and the lab's real peers.
DEPS := build-essential pkg-config libnetfilter-queue-dev libmnl-dev libssl-dev libinih-dev \
        libcunit1-dev iptables iproute2 nsd knot-dnsutils dnsperf hping3 \
        python3 python3-scapy tshark tcpdump curl socat iperf3 ethtool \
        cppcheck clang-tidy valgrind

.PHONY: all asan check unit unit-asan netns demo deps bench lint clean install

all: $(BUILD)/tcpctd $(TOOLS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -MMD -MP -c $< -o $@

$(BUILD)/tcpctd: $(LIB_OBJ) $(BUILD)/obj/$(MAIN_SRC:.c=.o)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The TCPCT initiator tools (client/ uses nfq/ only).
$(BUILD)/tcpct-%: $(BUILD)/obj/client/tcpct-%.o $(CLIENT_OBJ) $(NFQ_SRC:%.c=$(BUILD)/obj/%.o)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tcpctd-asan: $(LIB_SAN_OBJ) $(BUILD)/san/$(MAIN_SRC:.c=.o)
	$(CC) $(LDFLAGS) $(SAN) $^ $(LDLIBS) -o $@

$(BUILD)/unit-tests: $(LIB_SAN_OBJ) $(UNIT_SRC:%.c=$(BUILD)/san/%.o)
	$(CC) $(LDFLAGS) $(SAN) $^ $(LDLIBS) -lcunit -o $@

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
	$(MAKE) all asan $(BUILD)/unit-tests
	$(MAKE) lint
	$(BUILD)/unit-tests
	$(BUILD)/tcpctd -c systemd/tcpctd.conf -t
	tests/lab/run.sh

demo: deps
	$(MAKE) all
	tests/lab/demo.sh

bench: deps all
	tests/bench/run.sh

lint:
	cppcheck --std=c11 --enable=warning,style,performance,portability --error-exitcode=1 \
		--suppress=missingIncludeSystem --inline-suppr --quiet nfq policy gateway client tests/unit
	clang-tidy --quiet $(LIB_SRC) $(MAIN_SRC) $(CLIENT_SRC) $(TOOLS:$(BUILD)/%=client/%.c) -- -std=gnu11 -D_GNU_SOURCE $(PKG_CFLAGS) 2>&1 | \
		grep -v 'warnings generated' ; exit $${PIPESTATUS[0]}

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
