/*
 * loadgen: the lab's load, through the kernel's own TCP and raw sockets.
 *
 *   loadgen [-m MODE] [-r RATE] [-t SECONDS] [-n COUNT] [-l PREFIX]
 *           [-i QUERIES] [-p PORT] [-w MS] [-c MAX] SERVER
 *
 * Each connection of the DNS modes is one kernel TCP socket, opened
 * non-blocking at a paced RATE per second for SECONDS (or COUNT of them),
 * from the next address of PREFIX when one is given (IP_FREEBIND, so an
 * AnyIP route such as `local 198.18.0.0/15 dev lo` makes a network of
 * clients).  Queries are framed as RFC 7766 §8 says, one per connection,
 * taken in turn from QUERIES ("NAME TYPE" lines).  The modes:
 *
 *   query     connect, ask, read the answer, close (a normal client)
 *   idle      connect, send nothing, close when the server does
 *   silent    connect, then ignore everything: no read, no ACK, no close
 *   partial   send the query less its last byte, then ignore everything
 *   noack     send the query, never ACK the answer nor anything after
 *   noclose   query and answer, then ignore everything and never close
 *   nofinack  query and answer, close, never ACK the server's FIN
 *   syn       SYNs only, from random addresses of PREFIX, by a raw socket
 *
 * "Ignore everything" is a socket filter that drops every segment before
 * TCP sees it (SO_ATTACH_FILTER), so the kernel acknowledges nothing more:
 * the server is left with what a vanished client leaves it.  The abusive
 * modes hold their connections until the run ends; then whatever is still
 * open vanishes (TCP_REPAIR), without FIN or RST.  syn mode sends at RATE
 * (0: as fast as the socket takes them) and does not read: what answers a
 * spoofed source is the lab's to count.
 *
 * At the end it prints one "name: count" line per counter on standard
 * output and exits 0; a failure to start (bad arguments, no socket) goes
 * to standard error with exit status 2, so a test never reads it as zero
 * answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../../client/dns.h"
#include "../../nfq/csum.h"
#include "../../policy/config.h"

#define DNS_TCP_LEN_PREFIX	2	/* RFC 7766 §8: two-octet length field */
#define DNS_FLAG_QR		0x8000	/* RFC 1035 §4.1.1 */
#define DNS_RCODE_MASK		0x000f
#define QUERIES_MAX		64
#define EVENTS_MAX		256
/* Connections opened at most between two looks at the events: behind its
 * rate, the generator catches up without starving the connections it has
 * open of their queries (a connect() whose SYN-ACK comes from a kernel on
 * the same machine runs the whole handshake in the call). */
#define OPEN_BATCH		64
#define SYN_BATCH		64
#define SYN_LEN4		(20 + 40)	/* IPv4 header + TCP with options */
#define SYN_LEN6		(40 + 40)
#define NSEC			1000000000ull

enum mode {
	MODE_QUERY, MODE_IDLE, MODE_SILENT, MODE_PARTIAL, MODE_NOACK,
	MODE_NOCLOSE, MODE_NOFINACK, MODE_SYN,
};

static const char *const mode_names[] = {
	[MODE_QUERY] = "query", [MODE_IDLE] = "idle", [MODE_SILENT] = "silent",
	[MODE_PARTIAL] = "partial", [MODE_NOACK] = "noack",
	[MODE_NOCLOSE] = "noclose", [MODE_NOFINACK] = "nofinack",
	[MODE_SYN] = "syn",
};

enum conn_state { CONN_FREE, CONN_CONNECTING, CONN_ANSWER, CONN_HELD, CONN_IDLE };

struct conn {
	int fd;
	enum conn_state state;
	uint32_t gen;		/* which use of the slot the timeout ring means */
	uint16_t id;		/* the query's DNS id */
	uint16_t msg_len;	/* the answer's length, once its prefix is in */
	uint32_t got;		/* answer bytes read, prefix included */
	uint8_t head[DNS_TCP_LEN_PREFIX + 4];	/* prefix, id and flags */
	uint64_t deadline;
};

struct query {
	uint8_t wire[DNS_TCP_LEN_PREFIX + DNS_QUERY_MAX];
	size_t len;		/* prefix included */
};

static struct {
	enum mode mode;
	unsigned long rate, count, max_open;
	double seconds;
	unsigned timeout_ms;
	uint16_t port;
	int family;
	struct sockaddr_storage server;
	socklen_t server_len;
	bool have_prefix;
	struct prefix src;	/* -l: the sources */
} opt = {
	.mode = MODE_QUERY, .rate = 1000, .seconds = 2, .timeout_ms = 2000,
	.port = 53, .max_open = 60000,
};

static struct {
	unsigned long sent, established, answered, noerror, closed, failed;
	unsigned long refused, reset, timeout, bad_answer, no_source, held;
} stat;
static unsigned long offered;	/* what RATE for SECONDS (or COUNT) asked for */

static struct query queries[QUERIES_MAX];
static size_t nqueries;
static struct conn *conns;
static uint32_t *free_slots, nfree;
/* Slots in the order they opened, with their generation: deadlines come in
 * the same order, so the oldest is always at the head. */
static struct { uint32_t slot, gen; } *ring;
static size_t ring_head, ring_len, ring_cap;
static unsigned long next_source;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: cheap, and a flood needs no better randomness. */
static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void
usage(void)
{
	fprintf(stderr,
"usage: loadgen [-m MODE] [-r RATE] [-t SECONDS] [-n COUNT] [-l PREFIX]\n"
"               [-i QUERIES] [-p PORT] [-w MS] [-c MAX] SERVER\n"
"modes: query idle silent partial noack noclose nofinack syn\n");
	exit(2);
}

static unsigned long
parse_ulong(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end != '\0')
		fail("bad %s '%s'", what, s);
	return v;
}

static void
parse_server(const char *s)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&opt.server;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&opt.server;

	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(opt.port);
		opt.server_len = sizeof(*sin);
		opt.family = AF_INET;
	} else if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(opt.port);
		opt.server_len = sizeof(*sin6);
		opt.family = AF_INET6;
	} else {
		fail("bad server address '%s'", s);
	}
}

static void
parse_prefix(const char *s)
{
	if (prefix_parse(&opt.src, s) < 0)
		fail("bad prefix '%s'", s);
	if (opt.src.family != opt.family)
		fail("prefix '%s' is not of the server's family", s);
	opt.have_prefix = true;
}

/* Writes into a the prefix's address whose host bits are hi:lo (the low 64
 * in lo, any above in hi), cut to the host part's length. */
static void
prefix_address(uint8_t *a, uint64_t hi, uint64_t lo)
{
	unsigned bits = opt.family == AF_INET ? 32 : 128;
	unsigned host = bits - opt.src.len;
	unsigned len = bits / 8;

	memcpy(a, opt.src.addr.b, len);
	for (unsigned i = 0; i < host; i += 8) {
		unsigned byte = len - 1 - i / 8;
		uint8_t keep = host - i >= 8 ? 0 : (uint8_t)(0xff << (host - i));
		uint64_t v = i < 64 ? lo >> i : hi >> (i - 64);

		a[byte] = (uint8_t)((a[byte] & keep) | (v & ~keep & 0xff));
	}
}

static void
load_queries(const char *path)
{
	char line[512], name[DNS_NAME_MAX + 2], type[16];
	FILE *f = fopen(path, "r");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	while (nqueries < QUERIES_MAX && fgets(line, sizeof(line), f)) {
		struct query *q = &queries[nqueries];
		int code;
		size_t n;

		if (sscanf(line, "%256s %15s", name, type) != 2)
			continue;
		code = dns_type_code(type);
		if (code < 0)
			fail("%s: unknown type '%s'", path, type);
		n = dns_build_query(q->wire + DNS_TCP_LEN_PREFIX, DNS_QUERY_MAX,
				    name, (uint16_t)code, 0);
		if (n == 0)
			fail("%s: bad name '%s'", path, name);
		q->wire[0] = (uint8_t)(n >> 8);
		q->wire[1] = (uint8_t)n;
		q->len = n + DNS_TCP_LEN_PREFIX;
		nqueries++;
	}
	fclose(f);
	if (nqueries == 0)
		fail("%s: no queries", path);
}

static void
default_query(void)
{
	struct query *q = &queries[0];
	size_t n = dns_build_query(q->wire + DNS_TCP_LEN_PREFIX, DNS_QUERY_MAX,
				   "example.test.", DNS_TYPE_A, 0);

	q->wire[0] = (uint8_t)(n >> 8);
	q->wire[1] = (uint8_t)n;
	q->len = n + DNS_TCP_LEN_PREFIX;
	nqueries = 1;
}

/* How many connections or SYNs are due elapsed ns into the run: the rate's
 * share, none past COUNT; all of COUNT (or no end) at rate 0. */
static unsigned long
paced_due(uint64_t elapsed)
{
	unsigned long due = ULONG_MAX;

	if (opt.rate)
		due = (unsigned long)((double)elapsed / NSEC * (double)opt.rate) + 1;
	if (opt.count && due > opt.count)
		due = opt.count;
	return due;
}

/* ------------------------------------------------------------------------
 * Connections
 */

/* The modes whose run ends once their answers are in. */
static bool
waits_for_answers(void)
{
	return opt.mode == MODE_QUERY || opt.mode == MODE_NOCLOSE ||
	       opt.mode == MODE_NOFINACK;
}

/* A filter that drops every segment before TCP sees it: from then on the
 * kernel acknowledges nothing on this socket. */
static void
ignore_everything(int fd)
{
	static struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	static const struct sock_fprog prog = { .len = 1, .filter = &drop };

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		fail("SO_ATTACH_FILTER: %s", strerror(errno));
}

/* Closes fd without a word to the server, as a client that vanished (and
 * as kxdpgun's did): in repair mode (needs CAP_NET_ADMIN) close() sends no
 * FIN and no RST, and leaves no orphan retransmitting its FIN into the
 * next run.  Without the capability, an ordinary close. */
static void
vanish(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one));
	close(fd);
}

static void
conn_close(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->state = CONN_FREE;
	c->gen++;
	free_slots[nfree++] = (uint32_t)(c - conns);
}

/* Ends c as failed, counting why. */
static void
conn_fail(int ep, struct conn *c, int err)
{
	if (c->state == CONN_CONNECTING && err == ECONNREFUSED)
		stat.refused++;
	else if (err == ECONNRESET || err == ECONNREFUSED || err == EPIPE)
		stat.reset++;
	else if (err == ETIMEDOUT)
		stat.timeout++;
	stat.failed++;
	conn_close(ep, c);
}

/* Stops watching c and keeps it open, unread, until the run ends. */
static void
conn_hold(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	c->state = CONN_HELD;
	stat.held++;
}

/* The connection of the ring's oldest entry, if it still waits for its
 * handshake or answer (an ended or held one has no deadline). */
static struct conn *
ring_oldest_waiting(void)
{
	struct conn *c = &conns[ring[ring_head].slot];

	if (c->gen != ring[ring_head].gen ||
	    (c->state != CONN_CONNECTING && c->state != CONN_ANSWER))
		return NULL;
	return c;
}

static void
ring_pop(void)
{
	ring_head = (ring_head + 1) % ring_cap;
	ring_len--;
}

static int
conn_open(int ep)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} src = { 0 };
	struct epoll_event ev = { .events = EPOLLOUT };
	int one = 1, fd;
	uint32_t slot;
	struct conn *c;

	if (nfree == 0)
		return -1;
	stat.sent++;
	fd = socket(opt.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		stat.failed++;
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (opt.have_prefix) {
		socklen_t len;

		if (opt.family == AF_INET) {
			src.in.sin_family = AF_INET;
			prefix_address((uint8_t *)&src.in.sin_addr, 0, next_source);
			len = sizeof(src.in);
		} else {
			src.in6.sin6_family = AF_INET6;
			prefix_address(src.in6.sin6_addr.s6_addr, 0, next_source);
			len = sizeof(src.in6);
		}
		next_source++;
		setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
		/* The port comes with connect(), by the whole 4-tuple. */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&src, len) < 0)
			fail("bind: %s", strerror(errno));
	}
	if (connect(fd, (struct sockaddr *)&opt.server, opt.server_len) < 0 &&
	    errno != EINPROGRESS) {
		/* EADDRNOTAVAIL: no source port left for this 4-tuple. */
		if (errno == EADDRNOTAVAIL)
			stat.no_source++;
		stat.failed++;
		close(fd);
		return -1;
	}
	slot = free_slots[--nfree];
	c = &conns[slot];
	c->fd = fd;
	c->state = CONN_CONNECTING;
	c->got = 0;
	c->msg_len = 0;
	c->deadline = now_ns() + (uint64_t)opt.timeout_ms * 1000000u;
	ev.data.u32 = slot;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		fail("epoll_ctl: %s", strerror(errno));
	if (ring_len == ring_cap) {
		/* Cannot happen at the paced rate: the oldest goes first,
		 * as timed out. */
		struct conn *old = ring_oldest_waiting();

		if (old)
			conn_fail(ep, old, ETIMEDOUT);
		ring_pop();
	}
	ring[(ring_head + ring_len) % ring_cap].slot = slot;
	ring[(ring_head + ring_len) % ring_cap].gen = c->gen;
	ring_len++;
	return 0;
}

/* The handshake completed: act as the mode says. */
static void
conn_established(int ep, struct conn *c)
{
	static unsigned long next_query;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
				  .data.u32 = (uint32_t)(c - conns) };
	const struct query *q;
	uint8_t wire[sizeof(queries[0].wire)];
	size_t len;

	stat.established++;
	switch (opt.mode) {
	case MODE_IDLE:
		c->state = CONN_IDLE;
		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
		return;
	case MODE_SILENT:
		ignore_everything(c->fd);
		conn_hold(ep, c);
		return;
	default:
		break;
	}
	q = &queries[next_query++ % nqueries];
	c->id = (uint16_t)rng();
	memcpy(wire, q->wire, q->len);
	wire[DNS_TCP_LEN_PREFIX] = (uint8_t)(c->id >> 8);
	wire[DNS_TCP_LEN_PREFIX + 1] = (uint8_t)c->id;
	len = opt.mode == MODE_PARTIAL ? q->len - 1 : q->len;
	/* A fresh socket's send buffer takes a few hundred bytes. */
	if (send(c->fd, wire, len, MSG_NOSIGNAL) != (ssize_t)len) {
		conn_fail(ep, c, errno);
		return;
	}
	if (opt.mode == MODE_PARTIAL || opt.mode == MODE_NOACK) {
		ignore_everything(c->fd);
		conn_hold(ep, c);
		return;
	}
	c->state = CONN_ANSWER;
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* The whole answer is in: count it and end as the mode says. */
static void
conn_answered(int ep, struct conn *c)
{
	uint16_t id = (uint16_t)(c->head[2] << 8 | c->head[3]);
	uint16_t flags = (uint16_t)(c->head[4] << 8 | c->head[5]);

	if (c->msg_len < DNS_HDR_LEN || id != c->id || !(flags & DNS_FLAG_QR)) {
		stat.bad_answer++;
		stat.failed++;
		conn_close(ep, c);
		return;
	}
	stat.answered++;
	if ((flags & DNS_RCODE_MASK) == 0)
		stat.noerror++;
	switch (opt.mode) {
	case MODE_NOCLOSE:
		ignore_everything(c->fd);
		conn_hold(ep, c);
		break;
	case MODE_NOFINACK:
		ignore_everything(c->fd);
		stat.closed++;
		conn_close(ep, c);
		break;
	default:
		stat.closed++;
		conn_close(ep, c);
		break;
	}
}

/* Reads what c has; the answer is counted once its last byte is in. */
static void
conn_read(int ep, struct conn *c)
{
	static uint8_t buf[65536];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EAGAIN)
				return;
			conn_fail(ep, c, errno);
			return;
		}
		if (n == 0) {
			if (c->state == CONN_IDLE) {
				stat.closed++;
				conn_close(ep, c);
			} else {
				conn_fail(ep, c, ECONNRESET);
			}
			return;
		}
		if (c->state == CONN_IDLE)
			continue;	/* unasked data: not an answer */
		for (size_t i = 0; i < (size_t)n && c->got + i < sizeof(c->head); i++)
			c->head[c->got + i] = buf[i];
		c->got += (uint32_t)n;
		if (c->got < DNS_TCP_LEN_PREFIX)
			continue;
		c->msg_len = (uint16_t)(c->head[0] << 8 | c->head[1]);
		if (c->got >= (uint32_t)c->msg_len + DNS_TCP_LEN_PREFIX &&
		    (c->got >= sizeof(c->head) || c->msg_len < DNS_HDR_LEN)) {
			conn_answered(ep, c);
			return;
		}
	}
}

static void
conn_event(int ep, struct conn *c, uint32_t events)
{
	if (c->state == CONN_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			conn_fail(ep, c, err);
			return;
		}
		if (!(events & EPOLLOUT))
			return;
		conn_established(ep, c);
		return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		conn_read(ep, c);
}

/* Fails every connection past its deadline that has not ended. */
static void
expire(int ep, uint64_t now)
{
	while (ring_len > 0) {
		struct conn *c = ring_oldest_waiting();

		if (c && c->deadline > now)
			return;
		if (c)
			conn_fail(ep, c, ETIMEDOUT);
		ring_pop();
	}
}

/* Raises the open file limit toward want connections; returns how many
 * connections the limit it got leaves room for. */
static unsigned long
raise_fd_limit(unsigned long want)
{
	const unsigned long spare = 16;	/* stdio, epoll, raw sockets */
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		fail("getrlimit: %s", strerror(errno));
	if (rl.rlim_cur >= want + spare)
		return want;
	rl.rlim_cur = want + spare;
	if (rl.rlim_max < rl.rlim_cur)
		rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		return want;
	/* Without CAP_SYS_RESOURCE: up to the hard limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max <= spare)
		fail("no room for connections under the open file limit");
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		fail("setrlimit: %s", strerror(errno));
	return rl.rlim_max - spare < want ? rl.rlim_max - spare : want;
}

static void
run_connections(void)
{
	struct epoll_event events[EVENTS_MAX];
	uint64_t start, end, linger;
	int ep;

	opt.max_open = raise_fd_limit(opt.max_open);
	conns = calloc(opt.max_open, sizeof(*conns));
	free_slots = calloc(opt.max_open, sizeof(*free_slots));
	/* The ring holds what opened within one timeout of its oldest. */
	ring_cap = opt.max_open + opt.rate * (opt.timeout_ms / 1000 + 2);
	ring = calloc(ring_cap, sizeof(*ring));
	if (!conns || !free_slots || !ring)
		fail("out of memory");
	for (uint32_t i = 0; i < opt.max_open; i++)
		free_slots[nfree++] = (uint32_t)(opt.max_open - 1 - i);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		fail("epoll_create1: %s", strerror(errno));

	start = now_ns();
	end = start + (uint64_t)(opt.seconds * (double)NSEC);
	linger = end + (uint64_t)opt.timeout_ms * 1000000u;
	while (!stop) {
		uint64_t now = now_ns();
		bool behind = false;
		int n;

		if (now < end && (!opt.count || stat.sent < opt.count)) {
			unsigned long due = paced_due(now - start);
			int i;

			for (i = 0; i < OPEN_BATCH && stat.sent < due; i++)
				if (conn_open(ep) < 0)
					break;
			/* Only the batch's end keeps it from waiting: a
			 * connection that could not open waits a turn. */
			behind = i == OPEN_BATCH && stat.sent < due;
		} else if (!waits_for_answers() || now >= linger ||
			   opt.max_open - nfree == stat.held) {
			/* The abusers hold to the end, then go; the others wait
			 * for their answers, one timeout at most. */
			break;
		}
		n = epoll_wait(ep, events, EVENTS_MAX, behind ? 0 : 1);
		for (int i = 0; i < n; i++)
			conn_event(ep, &conns[events[i].data.u32], events[i].events);
		expire(ep, now_ns());
	}
	/* Still open: held by the mode, or unanswered when stopped early. */
	for (uint32_t i = 0; i < opt.max_open; i++) {
		if (conns[i].state == CONN_CONNECTING || conns[i].state == CONN_ANSWER)
			stat.failed++;
		if (conns[i].state != CONN_FREE)
			vanish(conns[i].fd);
	}
	close(ep);
}

/* ------------------------------------------------------------------------
 * SYN flood
 */

/* The options of a Linux SYN: MSS, SACK permitted, timestamps, window
 * scale (RFC 9293 §3.7.1, RFC 2018, RFC 7323 §3 and §2). */
static const uint8_t syn_options[20] = {
	2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 7,
};

/* Fills pkt with a SYN from a random address of the prefix and a random
 * port, checksums computed; returns its length. */
static size_t
syn_build(uint8_t *pkt)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&opt.server;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&opt.server;
	uint64_t r = rng();
	size_t ip_len = opt.family == AF_INET ? 20 : 40;
	uint8_t *tcp = pkt + ip_len;
	uint16_t sport = (uint16_t)(1024 + (r >> 48) % (65536 - 1024));
	uint32_t seq = (uint32_t)r, tsval = (uint32_t)(r >> 16);
	uint32_t sum;

	memset(pkt, 0, ip_len + 40);
	if (opt.family == AF_INET) {
		pkt[0] = 0x45;
		pkt[2] = 0;
		pkt[3] = SYN_LEN4;
		pkt[6] = 0x40;		/* DF */
		pkt[8] = 64;
		pkt[9] = IPPROTO_TCP;
		prefix_address(pkt + 12, 0, rng());
		memcpy(pkt + 16, &sin->sin_addr, 4);
		sum = csum_add(0, pkt, 20);
		pkt[10] = (uint8_t)(csum_fold(sum) >> 8);
		pkt[11] = (uint8_t)csum_fold(sum);
	} else {
		pkt[0] = 0x60;
		pkt[5] = 40;		/* payload length */
		pkt[6] = IPPROTO_TCP;
		pkt[7] = 64;
		prefix_address(pkt + 8, rng(), rng());
		memcpy(pkt + 24, &sin6->sin6_addr, 16);
	}
	tcp[0] = (uint8_t)(sport >> 8);
	tcp[1] = (uint8_t)sport;
	tcp[2] = (uint8_t)(opt.port >> 8);
	tcp[3] = (uint8_t)opt.port;
	memcpy(tcp + 4, &seq, 4);
	tcp[12] = 10 << 4;		/* 40-byte header */
	tcp[13] = 0x02;			/* SYN */
	tcp[14] = 0xfa;			/* window 64240, as Linux offers */
	tcp[15] = 0xf0;
	memcpy(tcp + 20, syn_options, sizeof(syn_options));
	memcpy(tcp + 28, &tsval, 4);
	if (opt.family == AF_INET)
		sum = csum_pseudo4(pkt + 12, pkt + 16, IPPROTO_TCP, 40);
	else
		sum = csum_pseudo6(pkt + 8, pkt + 24, IPPROTO_TCP, 40);
	sum = csum_add(sum, tcp, 40);
	tcp[16] = (uint8_t)(csum_fold(sum) >> 8);
	tcp[17] = (uint8_t)csum_fold(sum);
	return ip_len + 40;
}

static void
run_syn(void)
{
	static uint8_t pkts[SYN_BATCH][SYN_LEN6];
	struct mmsghdr msgs[SYN_BATCH];
	struct iovec iov[SYN_BATCH];
	uint64_t start, end;
	int fd;

	if (!opt.have_prefix)
		fail("syn mode needs -l PREFIX, the spoofed sources");
	/* IPPROTO_RAW: the header is ours (IP_HDRINCL; implied for IPv6). */
	fd = socket(opt.family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		fail("raw socket: %s", strerror(errno));
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < SYN_BATCH; i++) {
		iov[i].iov_base = pkts[i];
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &opt.server;
		msgs[i].msg_hdr.msg_namelen = opt.server_len;
	}
	start = now_ns();
	end = start + (uint64_t)(opt.seconds * (double)NSEC);
	while (!stop) {
		uint64_t now = now_ns();
		unsigned long due = paced_due(now - start), batch;
		int n;

		if (now >= end || (opt.count && stat.sent >= opt.count))
			break;
		if (stat.sent >= due) {
			struct timespec pause = { 0, 200000 };

			nanosleep(&pause, NULL);
			continue;
		}
		batch = due - stat.sent;
		if (batch > SYN_BATCH)
			batch = SYN_BATCH;
		for (unsigned long i = 0; i < batch; i++)
			iov[i].iov_len = syn_build(pkts[i]);
		n = sendmmsg(fd, msgs, (unsigned)batch, 0);
		if (n < 0) {
			if (errno == ENOBUFS || errno == EAGAIN) {
				stat.failed++;
				continue;
			}
			fail("sendmmsg: %s", strerror(errno));
		}
		stat.sent += (unsigned long)n;
	}
	close(fd);
}

int
main(int argc, char **argv)
{
	const char *queries_path = NULL, *prefix = NULL;
	uint64_t started;
	double took;
	int ch;

	while ((ch = getopt(argc, argv, "m:r:t:n:l:i:p:w:c:h")) != -1) {
		switch (ch) {
		case 'm': {
			size_t m;

			for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
				if (strcmp(optarg, mode_names[m]) == 0)
					break;
			if (m == sizeof(mode_names) / sizeof(mode_names[0]))
				fail("unknown mode '%s'", optarg);
			opt.mode = (enum mode)m;
			break;
		}
		case 'r': opt.rate = parse_ulong(optarg, "rate"); break;
		case 't': {
			char *end;

			opt.seconds = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || opt.seconds <= 0 || opt.seconds > 3600)
				fail("bad duration '%s'", optarg);
			break;
		}
		case 'n': opt.count = parse_ulong(optarg, "count"); break;
		case 'l': prefix = optarg; break;
		case 'i': queries_path = optarg; break;
		case 'p': opt.port = (uint16_t)parse_ulong(optarg, "port"); break;
		case 'w': opt.timeout_ms = (unsigned)parse_ulong(optarg, "timeout"); break;
		case 'c': opt.max_open = parse_ulong(optarg, "connection limit"); break;
		default: usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	parse_server(argv[optind]);
	if (prefix)
		parse_prefix(prefix);
	if (opt.mode != MODE_SYN && opt.rate == 0)
		fail("the DNS modes need a rate above 0");
	if (opt.max_open == 0 || opt.max_open > 1000000)
		fail("connection limit out of range");
	if (queries_path)
		load_queries(queries_path);
	else
		default_query();
	rng_state ^= now_ns() ^ (uint64_t)getpid() << 32;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	started = now_ns();
	if (opt.mode == MODE_SYN)
		run_syn();
	else
		run_connections();
	took = (double)(now_ns() - started) / NSEC;
	if (opt.rate)
		offered = (unsigned long)((double)opt.rate * opt.seconds);
	if (opt.count && (offered == 0 || opt.count < offered))
		offered = opt.count;

	printf("mode: %s\n", mode_names[opt.mode]);
	printf("duration: %.2f\n", took);
	printf("sent: %lu\n", stat.sent);
	/* Not sent: the socket or the open connections could not keep up. */
	printf("behind: %lu\n", stop || offered < stat.sent ? 0 : offered - stat.sent);
	if (opt.mode != MODE_SYN) {
		printf("established: %lu\n", stat.established);
		printf("answered: %lu\n", stat.answered);
		printf("noerror: %lu\n", stat.noerror);
		printf("closed: %lu\n", stat.closed);
		printf("held: %lu\n", stat.held);
		printf("refused: %lu\n", stat.refused);
		printf("reset: %lu\n", stat.reset);
		printf("timeout: %lu\n", stat.timeout);
		printf("bad_answer: %lu\n", stat.bad_answer);
		printf("no_source: %lu\n", stat.no_source);
	}
	printf("failed: %lu\n", stat.failed);
	return 0;
}
