/*
 * tcpct-forge: forged handshake completions, as fast as asked, for the
 * forgery measurement (tests/bench/forgery.sh, tests/lab/t_forgery.sh).
 * Each mode stands for an attacker who cannot see the SYN-ACK and must
 * guess the cookie:
 *
 *   ack    the ACK of a classic cookie: seq, ack (the guessed ISN + 1)
 *          and the TSecr (whose low bits carry the options) at random
 *   tcpct  an RFC 6013 third packet: Timestamps Extended and a Cookie-Pair
 *          whose responder half is guessed.  The responder cookie is as
 *          long as the initiator's, which the attacker picks: -c CLEN
 *          bytes, 8 (the shortest, its best) unless given.  Its TSecr is
 *          the wall clock in ms a second ago (-t: fixed), as tcpctd's
 *          TSvals run, so that the cookie's age passes and every guess
 *          meets the MAC
 *   tfo    a Fast Open SYN with a guessed 8-byte cookie and a DNS query
 *
 *   tcpct-forge MODE DST PORT COUNT [-r RATE] [-s PREFIX] [-p SPORT]
 *               [-q SEQ] [-t TSECR] [-i MASK VALUE] [-c CLEN] [-x SEED]
 *
 * Sources are random addresses of PREFIX (198.18.0.0/15: the lab routes
 * the answers back to the attacker) and random ports, or -p one port and
 * -q one sequence number: the adversarial case of a known tuple.  -i keeps
 * the ISN bits of MASK at VALUE (a counter and key id read off a real
 * SYN-ACK) and -t the TSecr (its option bits), so that only the MAC is
 * guessed.  IPv4, through a raw socket,
 * RATE packets a second (0: as fast as it can).  Prints one line: "sent N
 * in S s".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../nfq/bytes.h"
#include "../nfq/pkt.h"
#include "../nfq/tcpct.h"
#include "../nfq/tcpopt.h"

#define BATCH		256
#define PKT_MAX		256
#define TFO_COOKIE	8

enum mode { MODE_ACK, MODE_TCPCT, MODE_TFO };

struct forge {
	enum mode mode;
	struct inaddr dst;
	uint16_t dport;
	uint32_t src_net, src_mask;	/* host order */
	uint16_t sport;			/* 0: random */
	bool fixed_seq, fixed_tsecr;
	uint32_t seq, tsecr;
	uint32_t isn_mask, isn_value;
	unsigned clen;			/* TCPCT: one cookie's bytes */
	uint64_t rng;
};

static uint64_t
next(struct forge *f)
{
	/* xorshift64*: fast, and good enough to spread guesses. */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 0x2545f4914f6cdd1dull;
}

/* A DNS query for example.test A, after its 2-byte length. */
static size_t
dns_query(uint8_t *b, uint16_t id)
{
	static const uint8_t q[] = {
		0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 4, 't', 'e', 's', 't', 0,
		0, 1, 0, 1,
	};

	put16(b, (uint16_t)(2 + sizeof(q)));
	put16(b + 2, id);
	memcpy(b + 4, q, sizeof(q));
	return 4 + sizeof(q);
}

/* The wall clock in ms, as tcpctd's TSvals to TCPCT clients run. */
static uint32_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 +
			  (uint64_t)ts.tv_nsec / 1000000);
}

/* Builds the next forged packet into buf; returns its length. */
static size_t
build(struct forge *f, uint8_t *buf)
{
	struct inaddr src = { 0 };
	uint8_t opts[TCP_OPT_MAX], pay[PKT_MAX];
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	uint64_t r = next(f), r2 = next(f);
	uint32_t host = f->src_net | ((uint32_t)r & ~f->src_mask);
	struct pkt p;

	put32(src.b, host);
	s.family = AF_INET;
	s.src = &src;
	s.dst = &f->dst;
	s.sport = f->sport ? f->sport : (uint16_t)(1024 + (r >> 32) % 64512);
	s.dport = f->dport;
	s.seq = f->fixed_seq ? f->seq : (uint32_t)r2;
	s.win = 502;
	s.opts = opts;
	switch (f->mode) {
	case MODE_ACK:
		s.flags = TCP_ACK;
		s.ack = (((uint32_t)(r2 >> 32) & ~f->isn_mask) |
			 (f->isn_value & f->isn_mask)) + 1;
		os.ts = true;
		os.tsval = (uint32_t)next(f);
		os.tsecr = f->fixed_tsecr ? f->tsecr : (uint32_t)next(f);
		s.optlen = tcpopt_build(opts, &os);
		break;
	case MODE_TCPCT: {
		uint8_t ci[TCPCT_COOKIE_MAX], cr[TCPCT_COOKIE_MAX];
		struct tcpct_ext_spec e = {
			.tsval = (uint32_t)next(f),
			/* A second ago: tcpctd reads its clock once a
			 * batch, and refuses a TSecr ahead of it. */
			.tsecr = f->fixed_tsecr ? f->tsecr : wall_ms() - 1000,
			.ci = ci, .cr = cr, .clen = f->clen,
		};
		size_t area, n;
		unsigned i;

		for (i = 0; i < TCPCT_COOKIE_MAX; i += 8) {
			put32(ci + i, (uint32_t)next(f));
			put32(ci + i + 4, (uint32_t)next(f));
			put32(cr + i, (uint32_t)next(f));
			put32(cr + i + 4, (uint32_t)next(f));
		}
		s.flags = TCP_ACK;
		s.ack = (uint32_t)(r2 >> 32);
		/* The standard area is the TSX option; the extension (pair
		 * and all) follows the header, before any data. */
		n = tcpct_ext_build(pay, sizeof(pay), &e, &area);
		if (!n)
			return 0;
		memcpy(opts, pay, area);
		s.optlen = area;
		s.pay = pay + area;
		s.paylen = n - area;
		break;
	}
	case MODE_TFO: {
		uint8_t cookie[TFO_COOKIE];

		put32(cookie, (uint32_t)next(f));
		put32(cookie + 4, (uint32_t)next(f));
		s.flags = TCP_SYN;
		os.mss = 1460;
		os.sack_perm = true;
		os.ts = true;
		os.tsval = (uint32_t)next(f);
		os.wscale = true;
		os.wscale_shift = 7;
		s.optlen = tcpopt_build(opts, &os);
		if (!tcpopt_put_tfo(opts, &s.optlen, sizeof(opts), cookie,
				    sizeof(cookie), false))
			return 0;
		s.pay = pay;
		s.paylen = dns_query(pay, (uint16_t)r);
		break;
	}
	}
	return pkt_build_tcp(buf, PKT_MAX, &s, &p);
}

static int
parse_prefix(const char *text, uint32_t *net, uint32_t *mask)
{
	char buf[64], *slash;
	struct in_addr a;
	unsigned len = 32;

	if (strlen(text) >= sizeof(buf))
		return -1;
	memcpy(buf, text, strlen(text) + 1);
	if ((slash = strchr(buf, '/'))) {
		*slash = '\0';
		len = (unsigned)atoi(slash + 1);
	}
	if (inet_pton(AF_INET, buf, &a) != 1 || len > 32)
		return -1;
	*mask = len ? ~0u << (32 - len) : 0;
	*net = ntohl(a.s_addr) & *mask;
	return 0;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: tcpct-forge ack|tcpct|tfo DST PORT COUNT [-r RATE] "
		     "[-s PREFIX] [-p SPORT] [-q SEQ] [-t TSECR] [-i MASK VALUE] "
		     "[-c CLEN] [-x SEED]\n");
}

int
main(int argc, char **argv)
{
	static uint8_t bufs[BATCH][PKT_MAX];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct forge f = { .rng = 0x9e3779b97f4a7c15ull,
			   .clen = TCPCT_COOKIE_MIN };
	unsigned long long count, sent = 0, rate = 0;
	double start, elapsed;
	int i, fd;

	if (argc < 5) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "ack"))
		f.mode = MODE_ACK;
	else if (!strcmp(argv[1], "tcpct"))
		f.mode = MODE_TCPCT;
	else if (!strcmp(argv[1], "tfo"))
		f.mode = MODE_TFO;
	else {
		usage(stderr);
		return 2;
	}
	if (inet_pton(AF_INET, argv[2], &to.sin_addr) != 1) {
		fprintf(stderr, "tcpct-forge: %s: not an IPv4 address\n", argv[2]);
		return 2;
	}
	memcpy(f.dst.b, &to.sin_addr, 4);
	f.dport = (uint16_t)atoi(argv[3]);
	count = strtoull(argv[4], NULL, 0);
	parse_prefix("198.18.0.0/15", &f.src_net, &f.src_mask);
	for (i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc)
			rate = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			if (parse_prefix(argv[++i], &f.src_net, &f.src_mask) < 0) {
				fprintf(stderr, "tcpct-forge: %s: not a prefix\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			f.sport = (uint16_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "-q") && i + 1 < argc) {
			f.fixed_seq = true;
			f.seq = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			f.fixed_tsecr = true;
			f.tsecr = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "-i") && i + 2 < argc) {
			f.isn_mask = (uint32_t)strtoul(argv[++i], NULL, 0);
			f.isn_value = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			f.clen = (unsigned)atoi(argv[++i]);
			if (f.clen < TCPCT_COOKIE_MIN ||
			    f.clen > TCPCT_COOKIE_MAX || f.clen % 2) {
				fprintf(stderr, "tcpct-forge: -c: 8 to 16, "
					"even\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "-x") && i + 1 < argc)
			f.rng ^= strtoull(argv[++i], NULL, 0);
		else {
			usage(stderr);
			return 2;
		}
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		fprintf(stderr, "tcpct-forge: raw socket: %s\n", strerror(errno));
		return 1;
	}
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &to;
		msgs[i].msg_hdr.msg_namelen = sizeof(to);
	}
	start = now_s();
	while (sent < count) {
		unsigned n = count - sent < BATCH ? (unsigned)(count - sent)
						  : BATCH;
		int done;

		for (i = 0; i < (int)n; i++)
			iov[i].iov_len = build(&f, bufs[i]);
		done = sendmmsg(fd, msgs, n, 0);
		if (done < 0) {
			if (errno == ENOBUFS || errno == EINTR)
				continue;
			fprintf(stderr, "tcpct-forge: send: %s\n", strerror(errno));
			return 1;
		}
		sent += (unsigned)done;
		/* Paced: never ahead of RATE a second. */
		while (rate && (double)sent / (double)rate > now_s() - start)
			usleep(200);
	}
	elapsed = now_s() - start;
	printf("sent %llu in %.1f s\n", sent, elapsed);
	close(fd);
	return 0;
}
