/*
 * nfq/csum.h: the full Internet checksum against packets whose checksums
 * were verified by another implementation, and the incremental updates
 * (RFC 1624) against a full recomputation on random segments.
 */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../nfq/pkt.h"
#include "suites.h"
#include "testutil.h"

/*
 * Known packets, built by hand and checked with Wireshark's own checksum
 * code: written to a raw-IP pcap (linktype 101) and read back with
 * `tshark -o tcp.check_checksum:TRUE -o ip.check_checksum:TRUE`, which
 * reported tcp.checksum.status and ip.checksum.status "Good" (1) for all
 * three, with the values in the *_CSUM constants.
 *
 * syn4: a Linux-style SYN 192.0.2.1:40000 → 192.0.2.2:53, seq 0x12345678,
 * window 64240, options MSS 1460, SACK-permitted, TS 0x0a1b2c3d/0, NOP,
 * WS 7.  IP id 0xbeef, DF, TTL 64.
 */
static const uint8_t syn4[] = {
	0x45, 0x00, 0x00, 0x3c, 0xbe, 0xef, 0x40, 0x00, 0x40, 0x06, 0xf7, 0xc8,
	0xc0, 0x00, 0x02, 0x01, 0xc0, 0x00, 0x02, 0x02, 0x9c, 0x40, 0x00, 0x35,
	0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0,
	0x8d, 0x91, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a,
	0x0a, 0x1b, 0x2c, 0x3d, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
};
#define SYN4_TCP_CSUM	0x8d91
#define SYN4_IP_CSUM	0xf7c8

/* syn6: the same options, [2001:db8:c::2]:40001 → [2001:db8:b::2]:53. */
static const uint8_t syn6[] = {
	0x60, 0x00, 0x00, 0x00, 0x00, 0x28, 0x06, 0x40, 0x20, 0x01, 0x0d, 0xb8,
	0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x02, 0x9c, 0x41, 0x00, 0x35, 0x9a, 0xbc, 0xde, 0xf0,
	0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfd, 0x20, 0xa2, 0xd6, 0x00, 0x00,
	0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x0a, 0x1b, 0x2c, 0x3d,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
};
#define SYN6_TCP_CSUM	0xa2d6

/* data4: PSH|ACK with a 5-byte payload (an odd tail) 198.51.100.2:40002 →
 * 192.0.2.2:53. */
static const uint8_t data4[] = {
	0x45, 0x00, 0x00, 0x2d, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x3c, 0x5f,
	0xc6, 0x33, 0x64, 0x02, 0xc0, 0x00, 0x02, 0x02, 0x9c, 0x42, 0x00, 0x35,
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x50, 0x18, 0x01, 0xf6,
	0x50, 0xa8, 0x00, 0x00, 0x00, 0x03, 0x61, 0x62, 0x63,
};
#define DATA4_TCP_CSUM	0x50a8

/* RFC 1071 the slow way: one 16-bit word at a time, folded at the end. */
static uint32_t
ref_sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

/* The TCP checksum of a packet, computed with csum_* only, field zeroed. */
static uint16_t
tcp_csum_of(const uint8_t *pkt, size_t len)
{
	uint8_t buf[128];
	size_t l4off = pkt[0] >> 4 == 4 ? IPV4_HDR_LEN : IPV6_HDR_LEN;
	uint32_t l4len = (uint32_t)(len - l4off), sum;

	memcpy(buf, pkt, len);
	put16(buf + l4off + TCP_OFF_CSUM, 0);
	if (l4off == IPV4_HDR_LEN)
		sum = csum_pseudo4(buf + 12, buf + 16, IPPROTO_TCP, l4len);
	else
		sum = csum_pseudo6(buf + 8, buf + 24, IPPROTO_TCP, l4len);
	return csum_fold(csum_add(sum, buf + l4off, l4len));
}

static void
test_known_packets(void)
{
	uint8_t ip[IPV4_HDR_LEN];
	struct pkt p;
	uint8_t buf[128];

	CU_ASSERT_EQUAL(tcp_csum_of(syn4, sizeof(syn4)), SYN4_TCP_CSUM);
	CU_ASSERT_EQUAL(tcp_csum_of(syn6, sizeof(syn6)), SYN6_TCP_CSUM);
	CU_ASSERT_EQUAL(tcp_csum_of(data4, sizeof(data4)), DATA4_TCP_CSUM);

	/* IPv4 header checksum: zero over a valid header, the value with the
	 * field cleared. */
	CU_ASSERT_EQUAL(csum_fold(csum_add(0, syn4, IPV4_HDR_LEN)), 0);
	memcpy(ip, syn4, sizeof(ip));
	put16(ip + 10, 0);
	CU_ASSERT_EQUAL(csum_fold(csum_add(0, ip, sizeof(ip))), SYN4_IP_CSUM);

	/* pkt_tcp_csum_ok agrees, and pkt_tcp_csum_set writes the same. */
	memcpy(buf, syn4, sizeof(syn4));
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, buf, sizeof(syn4)), PKT_OK);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
	put16(buf + IPV4_HDR_LEN + TCP_OFF_CSUM, 0x1234);
	CU_ASSERT_FALSE(pkt_tcp_csum_ok(&p));
	pkt_tcp_csum_set(&p);
	CU_ASSERT_EQUAL(get16(buf + IPV4_HDR_LEN + TCP_OFF_CSUM),
			SYN4_TCP_CSUM);
	CU_ASSERT_EQUAL(memcmp(buf, syn4, sizeof(syn4)), 0);

	memcpy(buf, syn6, sizeof(syn6));
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, buf, sizeof(syn6)), PKT_OK);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
	buf[sizeof(syn6) - 1] ^= 0x40;
	CU_ASSERT_FALSE(pkt_tcp_csum_ok(&p));

	memcpy(buf, data4, sizeof(data4));
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, buf, sizeof(data4)), PKT_OK);
	CU_ASSERT_EQUAL(p.paylen, 5);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
	/* The odd tail byte is the high half of its word. */
	buf[sizeof(data4) - 1] ^= 0x01;
	CU_ASSERT_FALSE(pkt_tcp_csum_ok(&p));
}

/* csum_add over any split, length and content equals the word-at-a-time
 * sum, including long runs of 0xff that carry on every word. */
static void
test_add_matches_reference(void)
{
	static uint8_t big[70000];
	struct rng r;
	unsigned i;

	rng_init(&r, 1);
	memset(big, 0xff, sizeof(big));
	CU_ASSERT_EQUAL(csum_fold(csum_add(0, big, sizeof(big))),
			(uint16_t)~ref_sum(big, sizeof(big)));
	for (i = 0; i < 2000; i++) {
		size_t len = rng_below(&r, 300), split = rng_below(&r, 151) * 2;
		uint8_t buf[300];
		uint32_t s;

		rng_bytes(&r, buf, len);
		if (split > len)
			split = len & ~(size_t)1;
		/* An even split keeps the word pairing. */
		s = csum_add(csum_add(0, buf, split), buf + split, len - split);
		CU_ASSERT_EQUAL(csum_fold(s), (uint16_t)~ref_sum(buf, len));
		if (csum_fold(s) != (uint16_t)~ref_sum(buf, len))
			break;
	}
	/* The returned sum stays small enough to keep adding (≤ 17 bits). */
	CU_ASSERT(csum_add(0xffffffffu, big, sizeof(big)) <= 0x1ffff);
}

/* A random IPv4 or IPv6 segment with random options and payload. */
static size_t
random_segment(struct rng *r, uint8_t *buf, size_t cap, struct pkt *p)
{
	uint8_t opts[TCP_OPT_MAX], pay[300];
	struct inaddr src, dst;
	struct pkt_tcp_spec s;

	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	memset(&s, 0, sizeof(s));
	s.family = rng_below(r, 2) ? AF_INET6 : AF_INET;
	rng_bytes(r, src.b, pkt_addrlen(s.family));
	rng_bytes(r, dst.b, pkt_addrlen(s.family));
	s.src = &src;
	s.dst = &dst;
	s.sport = (uint16_t)rng32(r);
	s.dport = (uint16_t)rng32(r);
	s.seq = rng32(r);
	s.ack = rng32(r);
	s.flags = (uint8_t)rng32(r);
	s.win = (uint16_t)rng32(r);
	s.ttl = (uint8_t)rng32(r);
	s.tos = (uint8_t)rng32(r);
	s.optlen = 4 * rng_below(r, TCP_OPT_MAX / 4 + 1);
	rng_bytes(r, opts, s.optlen);
	s.opts = opts;
	s.paylen = rng_below(r, sizeof(pay) + 1);
	rng_bytes(r, pay, s.paylen);
	s.pay = pay;
	return pkt_build_tcp(buf, cap, &s, p);
}

/* What a full recomputation puts in the checksum field of p. */
static uint16_t
full_csum(const struct pkt *p)
{
	uint8_t copy[512];
	struct pkt q;

	memcpy(copy, p->data, p->len);
	if (pkt_parse(&q, copy, p->len) != PKT_OK)
		return 0;
	pkt_tcp_csum_set(&q);
	return get16(pkt_tcp(&q) + TCP_OFF_CSUM);
}

/*
 * One random rewrite of p, the checksum updated incrementally: kind 0 and 1
 * a 16- or 32-bit field at an even offset in the options/payload area
 * (csum_replace2/4), 2 a run of 1..16 bytes at any offset there
 * (csum_replace_run; *odd counts the odd ones), 3 and 4 a header field
 * through pkt_set32/16.  Kinds that do not fit the area do nothing.
 */
static void
rewrite(struct rng *r, struct pkt *p, unsigned kind, unsigned *odd)
{
	static const unsigned f32[] = { TCP_OFF_SEQ, TCP_OFF_ACK };
	static const unsigned f16[] = {
		TCP_OFF_SPORT, TCP_OFF_DPORT, TCP_OFF_WIN, TCP_OFF_URG,
	};
	uint8_t *th = pkt_tcp(p), *cs = th + TCP_OFF_CSUM, old[16];
	size_t l4len = p->len - p->l4off, area = l4len - TCP_HDR_LEN, off, n;
	uint32_t v = rng32(r);

	switch (kind) {
	case 0:
		if (area < 2)
			return;
		off = TCP_HDR_LEN + 2 * rng_below(r, (uint32_t)area / 2);
		n = get16(th + off);
		put16(th + off, (uint16_t)v);
		csum_replace2(cs, (uint16_t)n, (uint16_t)v);
		return;
	case 1:
		if (area < 4)
			return;
		off = TCP_HDR_LEN + 2 * rng_below(r, (uint32_t)(area - 2) / 2);
		memcpy(old, th + off, 4);
		put32(th + off, v);
		csum_replace4(cs, get32(old), v);
		return;
	case 2:
		if (area < 1)
			return;
		off = TCP_HDR_LEN + rng_below(r, (uint32_t)area);
		n = 1 + (v & 15);
		if (n > l4len - off)
			n = l4len - off;
		memcpy(old, th + off, n);
		rng_bytes(r, th + off, n);
		csum_replace_run(cs, off, old, th + off, n);
		*odd += off & 1;
		return;
	case 3:
		pkt_set32(p, f32[rng_below(r, 2)], v, false);
		return;
	default:
		pkt_set16(p, f16[rng_below(r, 4)], (uint16_t)v, false);
		return;
	}
}

/*
 * 10,000 random segments (IPv4 and IPv6, random options and payload from
 * pkt_build_tcp), each rewritten six times at random; after every rewrite
 * the checksum is valid and equals a full recomputation.
 */
static void
test_incremental_random(void)
{
	unsigned iter, bad = 0, odd = 0;
	struct rng r;

	rng_init(&r, 2);
	for (iter = 0; iter < 10000 && !bad; iter++) {
		uint8_t buf[512];
		struct pkt p;
		unsigned k;

		CU_ASSERT_FATAL(random_segment(&r, buf, sizeof(buf), &p) != 0);
		CU_ASSERT_FATAL(pkt_tcp_csum_ok(&p));
		for (k = 0; k < 6 && !bad; k++) {
			rewrite(&r, &p, rng_below(&r, 5), &odd);
			if (!pkt_tcp_csum_ok(&p) ||
			    get16(pkt_tcp(&p) + TCP_OFF_CSUM) != full_csum(&p))
				bad++;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(iter, 10000);
	/* Runs at odd offsets were exercised (about half of 12,000). */
	CU_ASSERT(odd > 3000);
}

/* Boundary values of RFC 1624: the update that gives a sum of 0xffff
 * (HC' would be +0 / −0), and old == new. */
static void
test_incremental_edges(void)
{
	uint8_t buf[128];
	struct pkt p;
	uint8_t *cs;
	uint16_t old;

	memcpy(buf, syn4, sizeof(syn4));
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, buf, sizeof(syn4)), PKT_OK);
	cs = pkt_tcp(&p) + TCP_OFF_CSUM;

	/* Same value: nothing changes. */
	csum_replace2(cs, 0x05b4, 0x05b4);
	CU_ASSERT_EQUAL(get16(cs), SYN4_TCP_CSUM);

	/* Every value of the window field, each checked in full. */
	old = get16(pkt_tcp(&p) + TCP_OFF_WIN);
	for (unsigned v = 0; v <= 0xffff; v++) {
		put16(pkt_tcp(&p) + TCP_OFF_WIN, (uint16_t)v);
		csum_replace2(cs, old, (uint16_t)v);
		old = (uint16_t)v;
		if (!pkt_tcp_csum_ok(&p)) {
			CU_FAIL("window rewrite broke the checksum");
			break;
		}
	}
	CU_ASSERT_EQUAL(get16(cs), full_csum(&p));
}

void
register_csum_tests(void)
{
	static const struct test_case cases[] = {
		{ "full checksum of known IPv4/IPv6 packets",
		  test_known_packets },
		{ "csum_add equals a word-at-a-time sum",
		  test_add_matches_reference },
		{ "incremental updates equal recomputation (10,000 segments)",
		  test_incremental_random },
		{ "incremental update over every 16-bit value",
		  test_incremental_edges },
	};

	TEST_SUITE("csum", cases);
}
