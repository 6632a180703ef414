#include "utcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "../nfq/bytes.h"
#include "../nfq/tcpopt.h"

extern char **environ;

#define MSS_V4		1460
#define MSS_V6		1440
#define RTO_SYN_MS	1000
#define RTO_MIN_MS	200
#define RTO_MAX_MS	4000
#define TS_OPT_SPACE	12	/* NOP NOP Timestamps */
#define SACK_BLOCKS_TS	3	/* SACK blocks that fit beside Timestamps */
#define PAIR_ROOM	100	/* TSX, the extension and the Cookie-Pair */

#define SEQ_LT(a, b)	((int32_t)((a) - (b)) < 0)
#define SEQ_LEQ(a, b)	((int32_t)((a) - (b)) <= 0)
#define SEQ_GT(a, b)	((int32_t)((a) - (b)) > 0)
#define SEQ_GEQ(a, b)	((int32_t)((a) - (b)) >= 0)

static const char *const state_names[] = {
	[UTCP_CLOSED] = "CLOSED",
	[UTCP_SYN_SENT] = "SYN-SENT",
	[UTCP_ESTABLISHED] = "ESTABLISHED",
	[UTCP_FIN_WAIT1] = "FIN-WAIT-1",
	[UTCP_FIN_WAIT2] = "FIN-WAIT-2",
	[UTCP_CLOSE_WAIT] = "CLOSE-WAIT",
	[UTCP_LAST_ACK] = "LAST-ACK",
	[UTCP_CLOSING] = "CLOSING",
	[UTCP_TIME_WAIT] = "TIME-WAIT",
	[UTCP_RESET] = "RESET",
};

const char *
utcp_state_name(enum utcp_state s)
{
	return (unsigned)s <= UTCP_RESET ? state_names[s] : "?";
}

uint64_t
utcp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t
now_ms(void)
{
	return utcp_now_us() / 1000;
}

static uint32_t
tsval(const struct utcp *u)
{
	return u->ts_base + (uint32_t)(now_ms() - u->t0_ms);
}

/* Runs argv with its output discarded; returns its exit status or -1. */
static int
run(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	int status;
	pid_t pid;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The kernel has no socket for our segments' replies and would RST them:
 * those from our port are dropped, or with broad every RST from our address
 * to the server's port (one rule for many connections in a row).
 */
static int
rst_rule(const struct utcp *u, const char *op, bool broad)
{
	char addr[INET6_ADDRSTRLEN], raddr[INET6_ADDRSTRLEN], port[8];
	const char *cmd = u->family == AF_INET ? u->o.iptables : u->o.ip6tables;
	char *argv[20];
	int n = 0;

	inet_ntop(u->family, u->laddr.b, addr, sizeof(addr));
	inet_ntop(u->family, u->raddr.b, raddr, sizeof(raddr));
	snprintf(port, sizeof(port), "%u", (unsigned)(broad ? u->rport : u->lport));
	argv[n++] = (char *)cmd;
	argv[n++] = "-w";
	argv[n++] = (char *)op;
	argv[n++] = "OUTPUT";
	argv[n++] = "-p";
	argv[n++] = "tcp";
	argv[n++] = "-s";
	argv[n++] = addr;
	if (broad) {
		argv[n++] = "-d";
		argv[n++] = raddr;
	}
	argv[n++] = broad ? "--dport" : "--sport";
	argv[n++] = port;
	argv[n++] = "--tcp-flags";
	argv[n++] = "RST";
	argv[n++] = "RST";
	argv[n++] = "-j";
	argv[n++] = "DROP";
	argv[n] = NULL;
	return run(argv);
}

static int attach_filter(int fd, uint16_t port, bool from);

/* A packet socket for every connection to server_port (segments of other
 * connections are ignored by each).  Returns it or -1. */
static int
shared_rx(uint16_t server_port)
{
	int one = 1, fd;

	fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    htons(ETH_P_ALL));
	if (fd < 0)
		return -1;
	if (attach_filter(fd, server_port, true) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one,
		       sizeof(one)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Classic BPF for the packet socket (network header at 0): TCP, not a
 * fragment, to our port (or with from, from the server's port).
 */
static int
attach_filter(int fd, uint16_t port, bool from)
{
	const uint32_t off = from ? 0 : 2;
	struct sock_filter code[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		/* 1 */ BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 4),
		/* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, 7),
		/* 3 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 11),
		/* 5 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff, 9, 0),
		/* 7 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
		/* 8 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, off),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, 5, 6),
		/* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 0, 5),
		/* 11 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
		/* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 3),
		/* 13 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, IPV6_HDR_LEN + off),
		/* 14 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, 0, 1),
		/* 15 */ BPF_STMT(BPF_RET | BPF_K, 0x40000),
		/* 16 */ BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog));
}

static void
sa_to_inaddr(const struct sockaddr *sa, struct inaddr *a, uint16_t *port)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		memcpy(a->b, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memcpy(a->b, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
	}
}

/* ss = numeric address text of the given family, port 0. */
static int
local_addr(uint8_t family, const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = family;
	if (family == AF_INET)
		return inet_pton(AF_INET, text,
				 &((struct sockaddr_in *)ss)->sin_addr) == 1 ? 0 : -1;
	return inet_pton(AF_INET6, text,
			 &((struct sockaddr_in6 *)ss)->sin6_addr) == 1 ? 0 : -1;
}

static int
alloc_rings(struct utcp *u)
{
	if (!u->sbuf)
		u->sbuf = malloc(UTCP_SBUF);
	if (!u->rbuf)
		u->rbuf = malloc(UTCP_RBUF);
	return u->sbuf && u->rbuf ? 0 : -1;
}

int
utcp_init(struct utcp *u, uint8_t family, const struct inaddr *laddr,
	  uint16_t lport, const struct inaddr *raddr, uint16_t rport,
	  const struct utcp_opts *o)
{
	uint8_t *sbuf = u->sbuf, *rbuf = u->rbuf;

	memset(u, 0, sizeof(*u));
	u->sbuf = sbuf;
	u->rbuf = rbuf;
	u->tx = u->rx = u->portsock = -1;
	u->o = *o;
	u->family = family;
	u->laddr = *laddr;
	u->raddr = *raddr;
	u->lport = lport;
	u->rport = rport;
	u->clen = o->clen;
	u->t0_ms = now_ms();
	if (alloc_rings(u) < 0) {
		utcp_close(u);
		return -1;
	}
	return 0;
}

int
utcp_open(struct utcp *u, const char *host, const char *port, int family,
	  const struct utcp_opts *o, char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_storage ss = { 0 };
	socklen_t sl = sizeof(ss);
	int one = 1, fd, rc;
	uint32_t r[2];

	memset(u, 0, sizeof(*u));
	u->tx = u->rx = u->portsock = -1;
	u->o = *o;
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	u->family = (uint8_t)res->ai_family;
	sa_to_inaddr(res->ai_addr, &u->raddr, &u->rport);

	if (o->laddr) {
		if (local_addr(u->family, o->laddr, &ss) < 0) {
			snprintf(err, errlen, "%s: not an IPv%c address",
				 o->laddr, u->family == AF_INET ? '4' : '6');
			freeaddrinfo(res);
			return -1;
		}
	} else {
		/* Our address: the one the kernel would use to reach it. */
		fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0 ||
		    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
			snprintf(err, errlen, "no route to %s: %s", host,
				 strerror(errno));
			if (fd >= 0)
				close(fd);
			freeaddrinfo(res);
			return -1;
		}
		close(fd);
	}
	freeaddrinfo(res);

	/* A bound TCP socket keeps the port from anyone else. */
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(o->lport);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(o->lport);
	u->portsock = socket(u->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
				     : sizeof(struct sockaddr_in6);
	if (u->portsock < 0 ||
	    bind(u->portsock, (struct sockaddr *)&ss, sl) < 0 ||
	    getsockname(u->portsock, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(err, errlen, "port: %s", strerror(errno));
		goto fail;
	}
	sa_to_inaddr((struct sockaddr *)&ss, &u->laddr, &u->lport);

	u->tx = socket(u->family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	/* Closing a packet socket waits for an RCU grace period (about
	 * 10 ms): a caller making many connections shares one. */
	u->rx = o->rx_fd > 0 ? o->rx_fd
		: socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			 htons(ETH_P_ALL));
	if (u->tx < 0 || u->rx < 0) {
		snprintf(err, errlen, "raw sockets: %s (root needed)",
			 strerror(errno));
		goto fail;
	}
	if (o->rx_fd <= 0 &&
	    (attach_filter(u->rx, u->lport, false) < 0 ||
	     setsockopt(u->rx, SOL_PACKET, PACKET_AUXDATA, &one,
			sizeof(one)) < 0)) {
		snprintf(err, errlen, "packet socket: %s", strerror(errno));
		goto fail;
	}
	if (alloc_rings(u) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!o->no_rule && rst_rule(u, "-I", false) != 0) {
		snprintf(err, errlen, "could not install the RST rule with %s",
			 u->family == AF_INET ? o->iptables : o->ip6tables);
		goto fail;
	}
	u->rule = !o->no_rule;
	if (RAND_bytes((uint8_t *)r, sizeof(r)) != 1 ||
	    RAND_bytes(u->ci, sizeof(u->ci)) != 1) {
		snprintf(err, errlen, "no randomness");
		goto fail;
	}
	u->iss = r[0];
	u->ts_base = r[1];
	u->t0_ms = now_ms();
	u->clen = o->clen;
	return 0;
fail:
	rc = errno;	/* for utcp_batch_open: a port in use is skipped */
	utcp_close(u);
	errno = rc;
	return -1;
}

void
utcp_close(struct utcp *u)
{
	if (u->rule) {
		rst_rule(u, "-D", false);
		u->rule = false;
	}
	if (u->tx >= 0)
		close(u->tx);
	if (u->rx >= 0 && u->rx != u->o.rx_fd)
		close(u->rx);
	if (u->portsock >= 0)
		close(u->portsock);
	u->tx = u->rx = u->portsock = -1;
	free(u->sbuf);
	free(u->rbuf);
	u->sbuf = u->rbuf = NULL;
}

volatile sig_atomic_t utcp_stop;

static void
on_signal(int sig)
{
	(void)sig;
	utcp_stop = 1;
}

void
utcp_catch_signals(void)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
}

int
utcp_fd(const struct utcp *u)
{
	return u->rx;
}

static size_t
rfree(const struct utcp *u)
{
	return UTCP_RBUF - u->rlen;
}

static uint16_t
adv_window(const struct utcp *u, bool syn)
{
	size_t w = rfree(u);

	if (!syn)
		w >>= u->rcv_ws;
	return w > 0xffff ? 0xffff : (uint16_t)w;
}

/* Our options for a SYN: MSS, SACK-permitted, Timestamps, WS, Cookie. */
static size_t
syn_options(struct utcp *u, uint8_t *opts)
{
	struct tcpopt_spec s = { 0 };
	size_t n;

	s.mss = u->family == AF_INET ? MSS_V4 : MSS_V6;
	s.sack_perm = u->o.sack;
	s.ts = u->o.ts || u->o.tcpct;
	s.tsval = tsval(u);
	s.wscale = u->o.ws;
	s.wscale_shift = UTCP_WSCALE;
	n = tcpopt_build(opts, &s);
	if (u->o.tcpct)
		tcpct_put_cookie(opts, &n, TCP_OPT_MAX, u->ci, u->clen);
	return n;
}

/* SACK blocks for our out-of-order ranges, most recent first would be
 * better; these go in order, which is enough for a lab peer. */
static size_t
sack_option(const struct utcp *u, uint8_t *buf, unsigned max)
{
	unsigned i, n = u->nranges < max ? u->nranges : max;

	if (!u->sack || !n)
		return 0;
	buf[0] = TCPOPT_NOP;
	buf[1] = TCPOPT_NOP;
	buf[2] = TCPOPT_SACK;
	buf[3] = (uint8_t)(2 + 8 * n);
	for (i = 0; i < n; i++) {
		put32(buf + 4 + (size_t)8 * i, u->ranges[i].start);
		put32(buf + 8 + (size_t)8 * i, u->ranges[i].end);
	}
	return 4 + 8 * n;
}

/*
 * RFC 6013: until the responder shows it holds state (any segment after
 * its SYN-ACK), every segment is a third packet: TSX, the pair and the SYN's
 * options.  Later FIN, RST and the last ACK carry TSX and the pair.
 */
static bool
guarded(const struct utcp *u, uint8_t flags)
{
	return (flags & (TCP_FIN | TCP_RST)) || (u->peer_fin && u->fin_sent);
}

static void
emit(struct utcp *u, uint8_t flags, uint32_t seq, const uint8_t *data,
     size_t len)
{
	uint8_t opts[TCP_OPT_MAX], buf[65536], body[TCPOPT_TSX_LEN +
						   TCPCT_EXT_MAX + 1500];
	struct pkt_tcp_spec s = { 0 };
	struct pkt p;
	struct sockaddr_storage to = { 0 };
	size_t optlen = 0, n;

	s.family = u->family;
	s.src = &u->laddr;
	s.dst = &u->raddr;
	s.sport = u->lport;
	s.dport = u->rport;
	s.seq = seq;
	s.flags = flags;
	if (flags & TCP_ACK)
		s.ack = u->rcv_nxt;
	s.win = adv_window(u, flags & TCP_SYN);
	s.pay = data;
	s.paylen = len;
	if (flags & TCP_SYN) {
		optlen = syn_options(u, opts);
	} else if (u->tcpct && (u->state == UTCP_SYN_SENT || !u->verified ||
				guarded(u, flags))) {
		uint8_t extra[64];
		struct tcpct_ext_spec e = {
			.tsval = tsval(u), .tsecr = u->ts_recent,
			.ci = u->ci, .cr = u->cr, .clen = u->clen,
			.extra = extra,
		};
		size_t area;

		if (!u->verified) {
			/* HACKING.md §1 step 3: the SYN's
			 * options again. */
			uint8_t *x = extra;
			x[0] = TCPOPT_MSS;
			x[1] = TCPOPT_MSS_LEN;
			put16(x + 2, u->family == AF_INET ? MSS_V4 : MSS_V6);
			x += 4;
			if (u->o.sack) {
				x[0] = TCPOPT_NOP;
				x[1] = TCPOPT_NOP;
				x[2] = TCPOPT_SACK_PERM;
				x[3] = TCPOPT_SACK_PERM_LEN;
				x += 4;
			}
			if (u->o.ws) {
				x[0] = TCPOPT_NOP;
				x[1] = TCPOPT_WSCALE;
				x[2] = TCPOPT_WSCALE_LEN;
				x[3] = UTCP_WSCALE;
				x += 4;
			}
			e.extra_len = (size_t)(x - extra);
		} else {
			e.extra_len = sack_option(u, extra, 4);
		}
		n = tcpct_ext_build(body, sizeof(body), &e, &area);
		if (!n || n + len > sizeof(body))
			return;
		memcpy(opts, body, area);
		optlen = area;
		memmove(body, body + area, n - area);
		if (len)
			memcpy(body + n - area, data, len);
		s.pay = body;
		s.paylen = n - area + len;
	} else {
		struct tcpopt_spec t = { 0 };

		t.ts = u->ts;
		t.tsval = tsval(u);
		t.tsecr = u->ts_recent;
		optlen = tcpopt_build(opts, &t);
		optlen += sack_option(u, opts + optlen,
				      u->ts ? SACK_BLOCKS_TS : 4);
	}
	s.opts = opts;
	s.optlen = optlen;
	n = pkt_build_tcp(buf, sizeof(buf), &s, &p);
	if (!n)
		return;
	if (u->o.tap)
		u->o.tap(u->o.tap_arg, buf, n);
	if (u->tx < 0)
		return;
	if (u->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&to;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, u->raddr.b, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&to;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, u->raddr.b, 16);
	}
	if (sendto(u->tx, buf, n, 0, (struct sockaddr *)&to,
		   u->family == AF_INET ? sizeof(struct sockaddr_in)
					: sizeof(struct sockaddr_in6)) > 0)
		u->st.segs_out++;
}

static void
send_ack(struct utcp *u)
{
	emit(u, TCP_ACK, u->snd_nxt, NULL, 0);
}

size_t
utcp_write(struct utcp *u, const void *buf, size_t len)
{
	size_t room = UTCP_SBUF - u->slen;

	if (u->fin_queued)
		return 0;
	if (len > room)
		len = room;
	memcpy(u->sbuf + u->slen, buf, len);
	u->slen += len;
	return len;
}


static void
arm(struct utcp *u)
{
	u->rto_at = now_ms() + u->rto_ms;
}

/* Our FIN, at fin_seq, has just gone out. */
static void
fin_went(struct utcp *u)
{
	u->fin_sent = true;
	u->snd_nxt = u->fin_seq + 1;
	if (SEQ_GT(u->snd_nxt, u->snd_max))
		u->snd_max = u->snd_nxt;
	if (u->state == UTCP_ESTABLISHED)
		u->state = UTCP_FIN_WAIT1;
	else if (u->state == UTCP_CLOSE_WAIT)
		u->state = UTCP_LAST_ACK;
	if (!u->rto_at)
		arm(u);
}

/*
 * Sends what the window allows, then our FIN when it is due: on the last
 * data segment when it is queued by then, as Linux sends a FIN after data
 * not sent yet (tcpctd holds a third packet for its backend, request and
 * FIN alike, where a FIN right behind it would be dropped and come again a
 * timeout later), else alone.
 */
static void
output(struct utcp *u)
{
	size_t seg = u->mss > TS_OPT_SPACE + 64 ? u->mss : 536, fin_room = 0;
	uint32_t data_end = u->snd_una + (uint32_t)u->slen;

	if (u->state == UTCP_SYN_SENT || u->state == UTCP_CLOSED ||
	    u->state == UTCP_RESET)
		return;
	if (u->ts)
		seg -= TS_OPT_SPACE;
	if (u->tcpct && !u->verified)
		seg = seg > PAIR_ROOM ? seg - PAIR_ROOM : seg;
	else if (u->tcpct)
		fin_room = PAIR_ROOM;	/* a FIN carries the pair */
	while (SEQ_LT(u->snd_nxt, data_end)) {
		uint32_t inflight = u->snd_nxt - u->snd_una;
		size_t avail = data_end - u->snd_nxt, n = seg;
		bool fin;

		if (inflight >= u->snd_wnd)
			break;
		if (n > avail)
			n = avail;
		if (n > u->snd_wnd - inflight)
			n = u->snd_wnd - inflight;
		fin = n == avail && u->fin_queued && !u->fin_sent &&
		      n + fin_room <= seg;
		emit(u, TCP_ACK | (n == avail ? TCP_PSH : 0) |
			(fin ? TCP_FIN : 0),
		     u->snd_nxt, u->sbuf + (u->snd_nxt - u->snd_una), n);
		u->snd_nxt += (uint32_t)n;
		if (SEQ_GT(u->snd_nxt, u->snd_max))
			u->snd_max = u->snd_nxt;
		if (fin) {
			u->fin_seq = data_end;
			fin_went(u);
		}
		if (!u->rto_at)
			arm(u);
	}
	if (u->fin_queued && !u->fin_sent && u->snd_nxt == data_end) {
		u->fin_seq = data_end;
		emit(u, TCP_FIN | TCP_ACK, u->fin_seq, NULL, 0);
		fin_went(u);
	}
}

void
utcp_shutdown(struct utcp *u)
{
	u->fin_queued = true;
	output(u);
}

static void
send_syn(struct utcp *u)
{
	size_t n = 0;

	if (u->o.syn_data) {
		n = u->slen < TCPCT_SYN_DATA_MAX ? u->slen : TCPCT_SYN_DATA_MAX;
		u->syn_len = (uint32_t)n;
	}
	emit(u, TCP_SYN, u->iss, u->sbuf, n);
	u->st.syn_sent++;
}

/* Ring position of sequence number seq (at or after rcv_nxt). */
static size_t
rpos(const struct utcp *u, uint32_t seq)
{
	return (u->rhead + u->rlen + (seq - u->rcv_nxt)) % UTCP_RBUF;
}

static void
ring_put(struct utcp *u, uint32_t seq, const uint8_t *data, size_t len)
{
	size_t pos = rpos(u, seq), first = UTCP_RBUF - pos;

	if (first > len)
		first = len;
	memcpy(u->rbuf + pos, data, first);
	memcpy(u->rbuf, data + first, len - first);
}

static void
add_range(struct utcp *u, uint32_t start, uint32_t end)
{
	unsigned i, j;

	for (i = 0; i < u->nranges; i++) {
		struct utcp_range *r = &u->ranges[i];

		if (SEQ_LEQ(start, r->end) && SEQ_LEQ(r->start, end)) {
			if (SEQ_LT(start, r->start))
				r->start = start;
			if (SEQ_GT(end, r->end))
				r->end = end;
			/* It may now touch its neighbours. */
			for (j = 0; j < u->nranges; j++) {
				struct utcp_range *q = &u->ranges[j];

				if (j == i || SEQ_GT(q->start, r->end) ||
				    SEQ_LT(q->end, r->start))
					continue;
				if (SEQ_LT(q->start, r->start))
					r->start = q->start;
				if (SEQ_GT(q->end, r->end))
					r->end = q->end;
				*q = u->ranges[--u->nranges];
				if (i == u->nranges)
					i = j;
				r = &u->ranges[i];
				j = (unsigned)-1;
			}
			return;
		}
	}
	if (u->nranges < UTCP_RANGES)
		u->ranges[u->nranges++] = (struct utcp_range){ start, end };
}

/* Moves rcv_nxt over bytes now contiguous with it. */
static void
advance(struct utcp *u, uint32_t to)
{
	bool moved = true;

	u->rlen += to - u->rcv_nxt;
	u->rcv_nxt = to;
	while (moved) {
		unsigned i;

		moved = false;
		for (i = 0; i < u->nranges; i++) {
			struct utcp_range *r = &u->ranges[i];

			if (SEQ_GT(r->start, u->rcv_nxt))
				continue;
			if (SEQ_GT(r->end, u->rcv_nxt)) {
				u->rlen += r->end - u->rcv_nxt;
				u->rcv_nxt = r->end;
			}
			*r = u->ranges[--u->nranges];
			moved = true;
			break;
		}
	}
}

/* The peer's FIN at fin: the first, or one before it, ends the stream, and
 * what we hold out of order past it is dropped.  One behind rcv_nxt is
 * stale (its bytes came in without it). */
static void
end_stream(struct utcp *u, uint32_t fin)
{
	unsigned i = 0;

	if (SEQ_LT(fin, u->rcv_nxt) ||
	    (u->peer_fin_pending && SEQ_GEQ(fin, u->peer_fin_seq)))
		return;
	u->peer_fin_seq = fin;
	u->peer_fin_pending = true;
	while (i < u->nranges) {
		struct utcp_range *r = &u->ranges[i];

		if (SEQ_GEQ(r->start, fin)) {
			*r = u->ranges[--u->nranges];
			continue;
		}
		if (SEQ_GT(r->end, fin))
			r->end = fin;
		i++;
	}
}

static bool
pair_ok(const struct utcp *u, const struct pkt *p, const struct tcpopt *o)
{
	unsigned clen;

	return tcpct_form(o, p->flags, &clen) == TCPCT_PAIR &&
	       clen == u->clen &&
	       memcmp(pkt_tcp(p) + o->ck_off, u->ci, clen) == 0 &&
	       memcmp(pkt_tcp(p) + o->ck_off + clen, u->cr, clen) == 0;
}

static void
take_data(struct utcp *u, const struct pkt *p)
{
	uint32_t seq = p->seq + !!(p->flags & TCP_SYN);
	uint32_t fin_at = seq + (uint32_t)p->paylen;
	const uint8_t *data = p->data + p->payoff;
	size_t len = p->paylen, win = rfree(u), room;
	bool fin = p->flags & TCP_FIN;

	/* Trim what we already have and what is past our window. */
	if (SEQ_LT(seq, u->rcv_nxt)) {
		uint32_t skip = u->rcv_nxt - seq;

		if (skip >= len)
			len = 0;
		else {
			data += skip;
			len -= skip;
		}
		seq = u->rcv_nxt;
	}
	room = SEQ_GT(seq, u->rcv_nxt + (uint32_t)win) ? 0
	       : win - (seq - u->rcv_nxt);
	if (len > room) {
		/* RFC 9293 §3.10.7.4: a FIN behind the cut is not taken
		 * either; it comes again with the bytes. */
		len = room;
		fin = false;
	}
	if (fin)
		end_stream(u, fin_at);
	/* Nothing past the peer's FIN is data (RFC 9293 §3.10.7.4). */
	if (u->peer_fin_pending && len &&
	    SEQ_GT(seq + (uint32_t)len, u->peer_fin_seq))
		len = SEQ_GT(u->peer_fin_seq, seq) ? u->peer_fin_seq - seq : 0;
	if (len) {
		uint32_t end = seq + (uint32_t)len;

		ring_put(u, seq, data, len);
		if (seq == u->rcv_nxt) {
			advance(u, end);
		} else {
			add_range(u, seq, end);
			u->st.ooo++;
		}
	}
	if (u->peer_fin_pending && !u->peer_fin && u->rcv_nxt == u->peer_fin_seq) {
		u->peer_fin = true;
		u->rcv_nxt++;
	}
}

/* Their ACK of our bytes (and of our FIN), and their window. */
static void
take_ack(struct utcp *u, const struct pkt *p)
{
	if (SEQ_GT(p->ack, u->snd_una) && SEQ_LEQ(p->ack, u->snd_max)) {
		uint32_t acked = p->ack - u->snd_una;

		if (acked > u->slen) {
			/* The FIN went too. */
			u->slen = 0;
			u->fin_acked = true;
		} else {
			memmove(u->sbuf, u->sbuf + acked, u->slen - acked);
			u->slen -= acked;
		}
		u->snd_una = p->ack;
		if (SEQ_LT(u->snd_nxt, u->snd_una))
			u->snd_nxt = u->snd_una;
		u->dupacks = 0;
		u->rto_ms = RTO_MIN_MS;
		u->rto_at = u->snd_una == u->snd_max ? 0 : now_ms() + u->rto_ms;
	} else if (p->ack == u->snd_una && u->snd_max != u->snd_una &&
		   !p->paylen && !(p->flags & TCP_FIN)) {
		u->st.dup_acks++;
		if (++u->dupacks == 3) {
			/* Fast retransmit (RFC 5681 §3.2), one segment. */
			u->st.retrans++;
			u->snd_nxt = u->snd_una;
			u->fin_sent = u->fin_sent && !SEQ_LEQ(u->snd_una,
							       u->fin_seq);
		}
	}
	/* RFC 9293 §3.10.7.4: the window of the newest segment only
	 * (SND.WL1, SND.WL2), not of an old one sent again or late. */
	if (SEQ_GEQ(p->ack, u->snd_una) &&
	    (SEQ_LT(u->snd_wl1, p->seq) ||
	     (u->snd_wl1 == p->seq && SEQ_LEQ(u->snd_wl2, p->ack)))) {
		u->snd_wnd = (uint32_t)p->win << u->snd_ws;
		u->snd_wl1 = p->seq;
		u->snd_wl2 = p->ack;
		if (u->snd_wnd > u->max_snd_wnd)
			u->max_snd_wnd = u->snd_wnd;
	}
}

/* Our window as we announce it: RCV.WND. */
static uint32_t
rcv_wnd(const struct utcp *u)
{
	return (uint32_t)adv_window(u, false) << u->rcv_ws;
}

/*
 * RFC 9293 §3.10.7.4, first: some of the segment (its SYN and FIN count)
 * falls in our window; an empty one must sit at rcv_nxt when the window is
 * shut.  Also after either FIN: the peer's FIN again (our ACK lost), its
 * bytes again, anything past its FIN or far off, are not.
 */
static bool
seq_acceptable(const struct utcp *u, const struct pkt *p)
{
	uint32_t wnd = rcv_wnd(u), len = (uint32_t)p->paylen +
		!!(p->flags & TCP_SYN) + !!(p->flags & TCP_FIN);

	if (!len)
		return wnd ? p->seq - u->rcv_nxt < wnd : p->seq == u->rcv_nxt;
	return wnd && (p->seq - u->rcv_nxt < wnd ||
		       p->seq + len - 1 - u->rcv_nxt < wnd);
}

/* Once the peer's FIN is in and ours is out, a RST ends nothing that was
 * still coming: its answer is whole (RFC 9293 §3.10.7.4: CLOSED). */
static bool
both_fins(const struct utcp *u)
{
	return u->state == UTCP_CLOSING || u->state == UTCP_LAST_ACK ||
	       u->state == UTCP_TIME_WAIT;
}

/* Every state after SYN-SENT: ESTABLISHED, both FIN-WAITs, CLOSE-WAIT,
 * CLOSING, LAST-ACK and TIME-WAIT, in RFC 9293 §3.10.7.4's order. */
static void
established(struct utcp *u, struct pkt *p, const struct tcpopt *o)
{
	bool was_fin = u->peer_fin;

	/* With our window shut, one at rcv_nxt still brings its ACK, RST or
	 * FIN; its bytes are cut (RFC 9293 §3.10.7.4). */
	if (!seq_acceptable(u, p) &&
	    !(p->seq == u->rcv_nxt && !rcv_wnd(u))) {
		/* Our ACK says where we are; a RST gets none (RFC 5961
		 * §3.2). */
		if (!(p->flags & TCP_RST))
			send_ack(u);
		return;
	}
	if (p->flags & TCP_RST) {
		if (u->tcpct && !pair_ok(u, p, o)) {
			u->st.unguarded++;	/* §7: changes nothing */
			return;
		}
		/* RFC 5961 §3.2: a RST in the window but not at rcv_nxt
		 * gets a challenge ACK. */
		if (p->seq != u->rcv_nxt) {
			send_ack(u);
			return;
		}
		u->state = both_fins(u) ? UTCP_CLOSED : UTCP_RESET;
		u->rto_at = 0;
		return;
	}
	if (u->tcpct && (p->flags & TCP_FIN) && !pair_ok(u, p, o)) {
		u->st.unguarded++;
		return;
	}
	if (p->flags & TCP_SYN) {
		/* Our third packet was lost (the SYN-ACK again), or a SYN
		 * in the window: a challenge ACK (RFC 5961 §4.2). */
		send_ack(u);
		return;
	}
	if (!(p->flags & TCP_ACK))
		return;
	/* RFC 5961 §5.2: it must acknowledge nothing we did not send, and
	 * nothing older than a window behind. */
	if (SEQ_GT(p->ack, u->snd_max) ||
	    SEQ_LT(p->ack, u->snd_una - u->max_snd_wnd)) {
		send_ack(u);
		return;
	}
	u->verified = true;
	/* RFC 7323 §4.3: the TSval to echo, never an older one. */
	if (o->has_ts && SEQ_LEQ(p->seq, u->rcv_nxt) &&
	    SEQ_GEQ(o->tsval, u->ts_recent))
		u->ts_recent = o->tsval;
	take_ack(u, p);
	take_data(u, p);
	if (u->peer_fin && !was_fin) {
		if (u->state == UTCP_ESTABLISHED)
			u->state = UTCP_CLOSE_WAIT;
		else if (u->state == UTCP_FIN_WAIT1)
			u->state = u->fin_acked ? UTCP_TIME_WAIT : UTCP_CLOSING;
		else if (u->state == UTCP_FIN_WAIT2)
			u->state = UTCP_TIME_WAIT;
	}
	if (u->fin_acked) {
		if (u->state == UTCP_FIN_WAIT1)
			u->state = UTCP_FIN_WAIT2;
		else if (u->state == UTCP_CLOSING)
			u->state = UTCP_TIME_WAIT;
		else if (u->state == UTCP_LAST_ACK)
			u->state = UTCP_CLOSED;
	}
	if (p->paylen || (p->flags & TCP_FIN))
		send_ack(u);
}

static void
syn_sent(struct utcp *u, struct pkt *p, const struct tcpopt *o)
{
	unsigned clen;
	enum tcpct_form form = tcpct_form(o, p->flags, &clen);

	if ((p->flags & (TCP_RST | TCP_ACK)) == (TCP_RST | TCP_ACK) &&
	    (p->ack == u->iss + 1 || p->ack == u->iss + 1 + u->syn_len)) {
		u->state = UTCP_RESET;
		return;
	}
	if ((p->flags & (TCP_SYN | TCP_ACK)) != (TCP_SYN | TCP_ACK) ||
	    (p->ack != u->iss + 1 && p->ack != u->iss + 1 + u->syn_len))
		return;
	if (u->o.tcpct && form == TCPCT_COOKIE) {
		/* §3.5: an echoed cookie, or one of another size, is
		 * refused; so is TCPCT without timestamps. */
		if (clen != u->clen || !o->has_ts ||
		    memcmp(pkt_tcp(p) + o->ck_off, u->ci, clen) == 0)
			return;
		memcpy(u->cr, pkt_tcp(p) + o->ck_off, clen);
		u->tcpct = true;
	}
	u->irs = p->seq;
	u->rcv_nxt = p->seq + 1;
	u->mss = o->has_mss ? o->mss : 536;
	u->ts = o->has_ts && (u->o.ts || u->tcpct);
	u->sack = o->sack_perm && u->o.sack;
	if (o->has_wscale && u->o.ws) {
		u->snd_ws = o->wscale;
		u->rcv_ws = UTCP_WSCALE;
	}
	if (o->has_ts)
		u->ts_recent = o->tsval;
	u->snd_wnd = p->win;	/* a SYN-ACK's window is not scaled */
	u->max_snd_wnd = u->snd_wnd;
	u->snd_wl1 = p->seq;
	u->snd_wl2 = p->ack;
	u->snd_una = u->iss + 1;
	u->snd_nxt = u->snd_max = u->snd_una;
	u->rto_ms = RTO_MIN_MS;
	u->rto_at = 0;
	if (p->ack == u->iss + 1 + u->syn_len && u->syn_len) {
		memmove(u->sbuf, u->sbuf + u->syn_len, u->slen - u->syn_len);
		u->slen -= u->syn_len;
		u->snd_una = u->snd_nxt = u->snd_max = p->ack;
		u->st.syn_data_acked = true;
	}
	u->st.synack_data = p->paylen;
	u->st.synack_fin = p->flags & TCP_FIN;
	u->state = UTCP_ESTABLISHED;
	take_data(u, p);
	if (u->peer_fin) {
		u->state = UTCP_CLOSE_WAIT;
		/* HACKING.md §1 step 5: the whole answer came with the
		 * SYN-ACK for the whole request in the SYN; the third packet
		 * closes our half too. */
		if (u->st.syn_data_acked && !u->slen)
			u->fin_queued = true;
	}
	/* The third packet: data if we have some and the window takes it,
	 * else a bare ACK (SYNPROXY's SYN-ACK offers a window of 0). */
	{
		uint32_t nxt = u->snd_nxt;

		if (u->slen || u->fin_queued)
			output(u);
		if (u->snd_nxt == nxt)
			send_ack(u);
	}
}

void
utcp_input(struct utcp *u, uint8_t *buf, size_t len, bool csum_known)
{
	struct tcpopt o;
	struct pkt p;

	if (pkt_parse(&p, buf, len) != PKT_OK || p.family != u->family ||
	    p.sport != u->rport || p.dport != u->lport ||
	    memcmp(p.src.b, u->raddr.b, 16) != 0 ||
	    memcmp(p.dst.b, u->laddr.b, 16) != 0)
		return;
	if (!csum_known && !pkt_tcp_csum_ok(&p)) {
		u->st.bad_csum++;
		return;
	}
	if (tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN, p.doff - TCP_HDR_LEN,
			 TCP_HDR_LEN, &o) != TCPOPT_OK ||
	    (o.has_tsx && tcpct_ext_parse(&p, &o) != TCPOPT_OK))
		return;
	u->st.segs_in++;
	u->last_rx_ms = now_ms();
	if (u->state == UTCP_SYN_SENT)
		syn_sent(u, &p, &o);
	else if (u->state != UTCP_RESET && u->state != UTCP_CLOSED)
		established(u, &p, &o);
}

/* Reads every waiting packet. */
static void
drain(struct utcp *u)
{
	static uint8_t buf[65536 + 256];
	char cbuf[CMSG_SPACE(sizeof(struct tpacket_auxdata))];

	for (;;) {
		struct sockaddr_ll sll;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = {
			.msg_name = &sll, .msg_namelen = sizeof(sll),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
		};
		struct cmsghdr *c;
		bool known = false;
		ssize_t n = recvmsg(u->rx, &mh, MSG_DONTWAIT);

		if (n <= 0)
			return;
		if (sll.sll_pkttype == PACKET_OUTGOING)
			continue;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			struct tpacket_auxdata aux;

			if (c->cmsg_level != SOL_PACKET ||
			    c->cmsg_type != PACKET_AUXDATA)
				continue;
			memcpy(&aux, CMSG_DATA(c), sizeof(aux));
			/* Offloaded or already checked by the driver. */
			known = aux.tp_status & (TP_STATUS_CSUMNOTREADY |
						 TP_STATUS_CSUM_VALID);
		}
		utcp_input(u, buf, (size_t)n, known);
	}
}

static void
timers(struct utcp *u)
{
	uint64_t now = now_ms();

	if (!u->rto_at || now < u->rto_at)
		return;
	u->st.retrans++;
	u->rto_ms = u->rto_ms * 2 > RTO_MAX_MS ? RTO_MAX_MS : u->rto_ms * 2;
	u->rto_at = now + u->rto_ms;
	if (u->state == UTCP_SYN_SENT) {
		send_syn(u);
		return;
	}
	/* Go back to the first unacknowledged byte. */
	u->snd_nxt = u->snd_una;
	if (u->fin_sent && !u->fin_acked)
		u->fin_sent = false;
}

int
utcp_run(struct utcp *u, int wait_ms)
{
	struct pollfd pfd = { .fd = u->rx, .events = POLLIN };
	uint64_t now = now_ms();

	if (u->rto_at) {
		int64_t left = (int64_t)(u->rto_at - now);

		if (left < wait_ms)
			wait_ms = left < 0 ? 0 : (int)left;
	}
	if (poll(&pfd, 1, wait_ms) > 0)
		drain(u);
	timers(u);
	output(u);
	if (u->state == UTCP_RESET || utcp_stop)
		return -1;
	if (u->o.timeout_ms && now_ms() - u->last_rx_ms > u->o.timeout_ms &&
	    !utcp_done(u))
		return -1;
	return 0;
}

void
utcp_start(struct utcp *u)
{
	u->state = UTCP_SYN_SENT;
	u->last_rx_ms = now_ms();
	u->rto_ms = RTO_SYN_MS;
	send_syn(u);
	arm(u);
}

int
utcp_connect(struct utcp *u, char *err, size_t errlen)
{
	utcp_start(u);
	while (u->state == UTCP_SYN_SENT) {
		if (u->st.syn_sent > u->o.syn_tries) {
			snprintf(err, errlen, "no answer to %lu SYNs",
				 u->st.syn_sent - 1);
			return -1;
		}
		if (utcp_run(u, 100) < 0)
			break;
	}
	if (u->state == UTCP_RESET) {
		snprintf(err, errlen, "connection refused");
		return -1;
	}
	if (u->state == UTCP_SYN_SENT) {
		snprintf(err, errlen, "timed out");
		return -1;
	}
	return 0;
}

size_t
utcp_read(struct utcp *u, void *buf, size_t len)
{
	uint16_t before = adv_window(u, false);
	size_t n = len < u->rlen ? len : u->rlen, first;

	first = UTCP_RBUF - u->rhead;
	if (first > n)
		first = n;
	memcpy(buf, u->rbuf + u->rhead, first);
	memcpy((uint8_t *)buf + first, u->rbuf, n - first);
	u->rhead = (u->rhead + n) % UTCP_RBUF;
	u->rlen -= n;
	/* A window that was nearly shut and is open again is announced. */
	if (n && (size_t)before << u->rcv_ws < UTCP_RBUF / 4 &&
	    rfree(u) >= UTCP_RBUF / 2 && u->state != UTCP_SYN_SENT)
		send_ack(u);
	return n;
}

bool
utcp_eof(const struct utcp *u)
{
	return u->peer_fin && u->rlen == 0;
}

bool
utcp_done(const struct utcp *u)
{
	return u->state == UTCP_RESET ||
	       ((u->state == UTCP_TIME_WAIT || u->state == UTCP_CLOSED) &&
		!u->rlen);
}

void
utcp_port_range(uint16_t *lo, uint16_t *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	unsigned a = 32768, b = 60999;

	if (f) {
		if (fscanf(f, "%u %u", &a, &b) != 2 || !a || a > b || b > 65535)
			a = 32768, b = 60999;
		fclose(f);
	}
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
}

void
utcp_batch_end(struct utcp_batch *b)
{
	unsigned i;

	for (i = 0; i < b->naddrs; i++)
		if (b->rule[i].rule) {
			rst_rule(&b->rule[i], "-D", true);
			b->rule[i].rule = false;
		}
	if (b->o.rx_fd > 0)
		close(b->o.rx_fd);
	b->o.rx_fd = -1;
}

int
utcp_batch_begin(struct utcp_batch *b, const char *host, const char *port,
		 int family, const struct utcp_opts *o,
		 const char *const *laddrs, unsigned naddrs,
		 uint16_t port_lo, uint16_t port_hi, char *err, size_t errlen)
{
	unsigned i;

	memset(b, 0, sizeof(*b));
	b->host = host;
	b->port = port;
	b->family = family;
	b->o = *o;
	b->o.no_rule = true;
	b->o.lport = port_lo;
	b->port_lo = port_lo;
	b->port_hi = port_hi;
	b->naddrs = naddrs ? naddrs : 1;
	if (b->naddrs > UTCP_BATCH_ADDRS) {
		snprintf(err, errlen, "at most %u local addresses",
			 UTCP_BATCH_ADDRS);
		return -1;
	}
	for (i = 0; i < naddrs; i++)
		b->laddrs[i] = laddrs[i];
	b->o.rx_fd = shared_rx((uint16_t)atoi(port));
	if (b->o.rx_fd < 0) {
		snprintf(err, errlen, "packet socket: %s", strerror(errno));
		return -1;
	}
	/* An open per address, only for the addresses of its rule. */
	for (i = 0; i < b->naddrs; i++) {
		struct utcp *r = &b->rule[i];

		b->o.laddr = b->laddrs[i];
		b->o.lport = 0;
		if (utcp_open(r, host, port, family, &b->o, err, errlen) < 0)
			goto fail;
		utcp_close(r);
		if (rst_rule(r, "-I", true) != 0) {
			snprintf(err, errlen, "could not install the RST rule");
			goto fail;
		}
		r->rule = true;
	}
	b->o.laddr = b->laddrs[0];
	b->o.lport = port_lo;
	return 0;
fail:
	utcp_batch_end(b);
	return -1;
}

/* The tuple after b's current one. */
static void
batch_step(struct utcp_batch *b)
{
	if (b->o.lport < b->port_hi) {
		b->o.lport++;
		return;
	}
	b->o.lport = b->port_lo;
	if (++b->addr == b->naddrs) {
		b->addr = 0;
		b->wrapped++;
	}
	b->o.laddr = b->laddrs[b->addr];
}

int
utcp_batch_open(struct utcp_batch *b, struct utcp *u, char *err,
		size_t errlen)
{
	unsigned tries;
	int rc = -1;

	for (tries = 0; tries < 64; tries++) {
		rc = utcp_open(u, b->host, b->port, b->family, &b->o, err,
			       errlen);
		batch_step(b);
		if (rc == 0 || errno != EADDRINUSE)
			break;
	}
	return rc;
}
