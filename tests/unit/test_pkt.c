/*
 * nfq/pkt.h: pkt_parse accepts what it should, refuses the rest with the
 * named reason, and never reads past the buffer it was given (run under
 * ASan: every truncation test hands it a heap buffer of exactly that size).
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../nfq/pkt.h"
#include "suites.h"
#include "testutil.h"

#define IPV4_OPT_NOP	1	/* RFC 791 §3.1 "No Operation" */


static const uint8_t opts12[12] = {
	1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,	/* NOP NOP TS */
};
static const uint8_t payload[7] = { 0, 5, 'h', 'e', 'l', 'l', 'o' };

/* A valid segment: 12 bytes of options and 7 of payload. */
static size_t
build(uint8_t *buf, size_t cap, uint8_t family, struct pkt *p)
{
	struct pkt_tcp_spec s;

	memset(&s, 0, sizeof(s));
	s.family = family;
	s.src = family == AF_INET ? &test_client4 : &test_client6;
	s.dst = family == AF_INET ? &test_backend4 : &test_backend6;
	s.sport = 40000;
	s.dport = 53;
	s.seq = 0xfedcba98;
	s.ack = 0x01234567;
	s.flags = TCP_ACK | TCP_PSH;
	s.win = 502;
	s.opts = opts12;
	s.optlen = sizeof(opts12);
	s.pay = payload;
	s.paylen = sizeof(payload);
	return pkt_build_tcp(buf, cap, &s, p);
}

static void
check_fields(const struct pkt *p, uint8_t family, size_t l4off)
{
	CU_ASSERT_EQUAL(p->family, family);
	CU_ASSERT_EQUAL(p->l4off, l4off);
	CU_ASSERT_EQUAL(p->doff, TCP_HDR_LEN + sizeof(opts12));
	CU_ASSERT_EQUAL(p->payoff, l4off + TCP_HDR_LEN + sizeof(opts12));
	CU_ASSERT_EQUAL(p->paylen, sizeof(payload));
	CU_ASSERT_EQUAL(p->len, l4off + TCP_HDR_LEN + sizeof(opts12) +
			sizeof(payload));
	CU_ASSERT_EQUAL(p->sport, 40000);
	CU_ASSERT_EQUAL(p->dport, 53);
	CU_ASSERT_EQUAL(p->seq, 0xfedcba98);
	CU_ASSERT_EQUAL(p->ack, 0x01234567);
	CU_ASSERT_EQUAL(p->flags, TCP_ACK | TCP_PSH);
	CU_ASSERT_EQUAL(p->win, 502);
	CU_ASSERT_EQUAL(memcmp(p->data + p->payoff, payload, sizeof(payload)),
			0);
	if (family == AF_INET) {
		struct inaddr s = { { 0 } }, d = { { 0 } };
		memcpy(s.b, test_client4.b, 4);
		memcpy(d.b, test_backend4.b, 4);
		CU_ASSERT_EQUAL(memcmp(&p->src, &s, sizeof(s)), 0);
		CU_ASSERT_EQUAL(memcmp(&p->dst, &d, sizeof(d)), 0);
	} else {
		CU_ASSERT_EQUAL(memcmp(&p->src, &test_client6, sizeof(test_client6)), 0);
		CU_ASSERT_EQUAL(memcmp(&p->dst, &test_backend6, sizeof(test_backend6)), 0);
	}
}

/* Parses a heap copy of exactly len bytes, so that ASan sees any overread. */
static enum pkt_verdict
parse_exact(const uint8_t *pkt, size_t len, struct pkt *out)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum pkt_verdict v;
	struct pkt p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
	memcpy(copy, pkt, len);
	v = pkt_parse(&p, copy, len);
	free(copy);
	if (out)
		*out = p;
	return v;
}

static void
test_valid(void)
{
	uint8_t buf[256];
	struct pkt p, q;
	size_t len;

	len = build(buf, sizeof(buf), AF_INET, &p);
	CU_ASSERT_EQUAL_FATAL(len, 20 + 20 + 12 + 7);
	CU_ASSERT_EQUAL(pkt_parse(&q, buf, len), PKT_OK);
	check_fields(&q, AF_INET, IPV4_HDR_LEN);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&q));
	CU_ASSERT_EQUAL(buf[6] & 0x40, 0x40);	/* DF set, not a fragment */

	len = build(buf, sizeof(buf), AF_INET6, &p);
	CU_ASSERT_EQUAL_FATAL(len, 40 + 20 + 12 + 7);
	CU_ASSERT_EQUAL(pkt_parse(&q, buf, len), PKT_OK);
	check_fields(&q, AF_INET6, IPV6_HDR_LEN);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&q));
}

/* IPv4 with options: IHL 6 and IHL 15 put TCP at 24 and 60. */
static void
test_ipv4_options(void)
{
	static const unsigned ihls[] = { 6, 15 };
	uint8_t seg[128], buf[256];
	struct pkt p;
	size_t len, seglen, i;

	len = build(seg, sizeof(seg), AF_INET, &p);
	seglen = len - IPV4_HDR_LEN;
	for (i = 0; i < sizeof(ihls) / sizeof(ihls[0]); i++) {
		size_t hl = ihls[i] * 4;

		memcpy(buf, seg, IPV4_HDR_LEN);
		memset(buf + IPV4_HDR_LEN, IPV4_OPT_NOP, hl - IPV4_HDR_LEN);
		memcpy(buf + hl, seg + IPV4_HDR_LEN, seglen);
		buf[0] = (uint8_t)(0x40 | ihls[i]);
		put16(buf + 2, (uint16_t)(hl + seglen));
		CU_ASSERT_EQUAL(parse_exact(buf, hl + seglen, &p), PKT_OK);
		check_fields(&p, AF_INET, hl);
	}
}

static void
test_truncated_ip(void)
{
	uint8_t buf[256] = { 0 };
	struct pkt p;
	size_t len;

	CU_ASSERT_EQUAL(parse_exact(buf, 0, NULL), PKT_TRUNCATED);
	len = build(buf, sizeof(buf), AF_INET, &p);
	CU_ASSERT_FATAL(len > IPV4_HDR_LEN);
	CU_ASSERT_EQUAL(parse_exact(buf, IPV4_HDR_LEN - 1, NULL),
			PKT_TRUNCATED);
	CU_ASSERT_EQUAL(parse_exact(buf, 1, NULL), PKT_TRUNCATED);
	len = build(buf, sizeof(buf), AF_INET6, &p);
	CU_ASSERT_FATAL(len > IPV6_HDR_LEN);
	CU_ASSERT_EQUAL(parse_exact(buf, IPV6_HDR_LEN - 1, NULL),
			PKT_TRUNCATED);
}

static void
test_bad_version(void)
{
	static const uint8_t versions[] = { 0, 5, 7, 15 };
	uint8_t buf[256];
	struct pkt p;
	size_t len, i;

	len = build(buf, sizeof(buf), AF_INET, &p);
	for (i = 0; i < sizeof(versions); i++) {
		buf[0] = (uint8_t)(versions[i] << 4 | 5);
		CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_VERSION);
	}
}

static void
test_bad_ihl(void)
{
	uint8_t buf[256];
	struct pkt p;
	size_t len;
	unsigned ihl;

	len = build(buf, sizeof(buf), AF_INET, &p);
	for (ihl = 0; ihl < 5; ihl++) {
		buf[0] = (uint8_t)(0x40 | ihl);
		CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_IHL);
	}
}

static void
test_bad_length(void)
{
	uint8_t buf[256];
	struct pkt p;
	size_t len;

	/* IPv4 total length one past the buffer, and shorter than IHL. */
	len = build(buf, sizeof(buf), AF_INET, &p);
	put16(buf + 2, (uint16_t)(len + 1));
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_LENGTH);
	put16(buf + 2, 0xffff);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_LENGTH);
	put16(buf + 2, IPV4_HDR_LEN - 1);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_LENGTH);

	/* IPv6 payload length one past the buffer. */
	len = build(buf, sizeof(buf), AF_INET6, &p);
	put16(buf + 4, (uint16_t)(len - IPV6_HDR_LEN + 1));
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_LENGTH);
}

static void
test_ipv4_fragments(void)
{
	static const uint16_t frag[] = {
		0x2000,			/* MF, offset 0: first fragment */
		0x0001,			/* last fragment, offset 8 */
		0x1fff,			/* largest offset */
		0x2001,			/* MF and an offset */
		0x6001,			/* DF does not hide the offset */
	};
	uint8_t buf[256];
	struct pkt p;
	size_t len, i;

	len = build(buf, sizeof(buf), AF_INET, &p);
	for (i = 0; i < sizeof(frag) / sizeof(frag[0]); i++) {
		put16(buf + 6, frag[i]);
		CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_FRAGMENT);
	}
	/* DF alone and no flags at all are not fragments. */
	put16(buf + 6, 0x4000);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_OK);
	put16(buf + 6, 0);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_OK);
}

/*
 * Builds an IPv6 packet with extension headers: kinds[i] with hdr-ext-len
 * lens[i] (8 + 8 * lens[i] bytes), then next as the last next-header, then
 * the TCP segment of build().  Returns the packet length; *l4off is where
 * the TCP header starts.
 */
static size_t
build6_ext(uint8_t *buf, size_t cap, const uint8_t *kinds,
	   const uint8_t *lens, size_t n, uint8_t next, size_t *l4off)
{
	uint8_t seg[128];
	struct pkt p;
	size_t len = build(seg, sizeof(seg), AF_INET6, &p), seglen, off, i;

	seglen = len - IPV6_HDR_LEN;
	memcpy(buf, seg, IPV6_HDR_LEN);
	off = IPV6_HDR_LEN;
	buf[6] = n ? kinds[0] : next;
	for (i = 0; i < n; i++) {
		size_t hl = 8 + 8 * (size_t)lens[i];

		if (off + hl + seglen > cap)
			return 0;
		memset(buf + off, 0, hl);
		buf[off] = i + 1 < n ? kinds[i + 1] : next;
		buf[off + 1] = lens[i];
		buf[off + 2] = 1;	/* PadN, so the options are valid */
		buf[off + 3] = (uint8_t)(hl - 4);
		off += hl;
	}
	memcpy(buf + off, seg + IPV6_HDR_LEN, seglen);
	put16(buf + 4, (uint16_t)(off - IPV6_HDR_LEN + seglen));
	*l4off = off;
	return off + seglen;
}

static void
test_ipv6_exthdr_chain(void)
{
	static const uint8_t kinds[] = {
		IPPROTO_HOPOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS,
	};
	static const uint8_t lens[] = { 0, 2, 1 };
	uint8_t buf[512];
	struct pkt p;
	size_t len, l4off;

	len = build6_ext(buf, sizeof(buf), kinds, lens, 3, IPPROTO_TCP, &l4off);
	CU_ASSERT_EQUAL_FATAL(l4off, 40 + 8 + 24 + 16);
	CU_ASSERT_EQUAL(parse_exact(buf, len, &p), PKT_OK);
	check_fields(&p, AF_INET6, l4off);
	/* The checksum does not cover extension headers (RFC 8200 §8.1). */
	CU_ASSERT_EQUAL(pkt_parse(&p, buf, len), PKT_OK);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
}

static void
test_ipv6_exthdr_limit(void)
{
	uint8_t kinds[PKT_EXTHDR_MAX + 1], lens[PKT_EXTHDR_MAX + 1];
	uint8_t buf[512];
	struct pkt p;
	size_t len, l4off;

	memset(kinds, IPPROTO_DSTOPTS, sizeof(kinds));
	memset(lens, 0, sizeof(lens));
	/* PKT_EXTHDR_MAX headers are walked ... */
	len = build6_ext(buf, sizeof(buf), kinds, lens, PKT_EXTHDR_MAX,
			 IPPROTO_TCP, &l4off);
	CU_ASSERT_EQUAL(parse_exact(buf, len, &p), PKT_OK);
	CU_ASSERT_EQUAL(p.l4off, IPV6_HDR_LEN + 8 * PKT_EXTHDR_MAX);
	/* ... one more is refused. */
	len = build6_ext(buf, sizeof(buf), kinds, lens, PKT_EXTHDR_MAX + 1,
			 IPPROTO_TCP, &l4off);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_EXTHDR_LIMIT);
}

static void
test_ipv6_exthdr_overrun(void)
{
	static const uint8_t kinds[] = { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS };
	static const uint8_t lens[] = { 0, 1 };
	uint8_t buf[512];
	size_t len, l4off, ext2 = IPV6_HDR_LEN + 8;

	len = build6_ext(buf, sizeof(buf), kinds, lens, 2, IPPROTO_TCP, &l4off);
	/* The second header claims more 8-octet units than remain. */
	buf[ext2 + 1] = (uint8_t)((len - ext2) / 8);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_TRUNCATED);
	buf[ext2 + 1] = 0xff;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_TRUNCATED);

	/* A header announced with fewer than 8 bytes left in the packet. */
	{
		uint8_t hdr[IPV6_HDR_LEN + 4];

		memcpy(hdr, buf, IPV6_HDR_LEN);
		memset(hdr + IPV6_HDR_LEN, 0, 4);
		put16(hdr + 4, 4);
		CU_ASSERT_EQUAL(parse_exact(hdr, sizeof(hdr), NULL),
				PKT_TRUNCATED);
		/* Nothing, or one byte, after the fixed header: the next
		 * header's length byte is not there to read. */
		put16(hdr + 4, 0);
		CU_ASSERT_EQUAL(parse_exact(hdr, IPV6_HDR_LEN, NULL),
				PKT_TRUNCATED);
		put16(hdr + 4, 1);
		CU_ASSERT_EQUAL(parse_exact(hdr, IPV6_HDR_LEN + 1, NULL),
				PKT_TRUNCATED);
	}
}

static void
test_ipv6_fragment(void)
{
	static const uint8_t frag[] = { IPPROTO_FRAGMENT };
	static const uint8_t hop_frag[] = { IPPROTO_HOPOPTS, IPPROTO_FRAGMENT };
	static const uint8_t lens[] = { 0, 0 };
	uint8_t buf[512];
	size_t len, l4off;

	len = build6_ext(buf, sizeof(buf), frag, lens, 1, IPPROTO_TCP, &l4off);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_FRAGMENT);
	/* An atomic fragment (offset 0, M clear) is refused too. */
	len = build6_ext(buf, sizeof(buf), hop_frag, lens, 2, IPPROTO_TCP,
			 &l4off);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_FRAGMENT);
}

static void
test_not_tcp(void)
{
	static const uint8_t hop[] = { IPPROTO_HOPOPTS };
	static const uint8_t lens[] = { 0 };
	uint8_t buf[512];
	struct pkt p;
	size_t len, l4off;

	len = build(buf, sizeof(buf), AF_INET, &p);
	buf[9] = IPPROTO_UDP;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_NOT_TCP);

	len = build(buf, sizeof(buf), AF_INET6, &p);
	buf[6] = IPPROTO_UDP;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_NOT_TCP);
	buf[6] = IPPROTO_NONE;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_NOT_TCP);
	buf[6] = IPPROTO_ESP;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_NOT_TCP);

	len = build6_ext(buf, sizeof(buf), hop, lens, 1, IPPROTO_ICMPV6,
			 &l4off);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_NOT_TCP);
}

static void
test_tcp_doff(void)
{
	uint8_t buf[256];
	struct pkt p;
	size_t len, l4len;
	unsigned d;

	len = build(buf, sizeof(buf), AF_INET, &p);
	l4len = len - IPV4_HDR_LEN;
	for (d = 0; d < 5; d++) {
		buf[IPV4_HDR_LEN + TCP_OFF_DOFF] = (uint8_t)(d << 4);
		CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_DOFF);
	}
	/* Data offset exactly the segment (no payload) is fine ... */
	put16(buf + 2, (uint16_t)(IPV4_HDR_LEN + 32));
	buf[IPV4_HDR_LEN + TCP_OFF_DOFF] = 8 << 4;
	CU_ASSERT_EQUAL(parse_exact(buf, IPV4_HDR_LEN + 32, &p), PKT_OK);
	CU_ASSERT_EQUAL(p.paylen, 0);
	/* ... one word past it is not. */
	buf[IPV4_HDR_LEN + TCP_OFF_DOFF] = 9 << 4;
	CU_ASSERT_EQUAL(parse_exact(buf, IPV4_HDR_LEN + 32, NULL),
			PKT_BAD_DOFF);
	put16(buf + 2, (uint16_t)len);
	buf[IPV4_HDR_LEN + TCP_OFF_DOFF] = 15 << 4;
	CU_ASSERT(l4len < 60);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_DOFF);

	/* Same in IPv6. */
	len = build(buf, sizeof(buf), AF_INET6, &p);
	buf[IPV6_HDR_LEN + TCP_OFF_DOFF] = 4 << 4;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_DOFF);
	buf[IPV6_HDR_LEN + TCP_OFF_DOFF] = 15 << 4;
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_BAD_DOFF);

	/* Fewer than 20 bytes of TCP by the IP length. */
	len = build(buf, sizeof(buf), AF_INET, &p);
	put16(buf + 2, IPV4_HDR_LEN + TCP_HDR_LEN - 1);
	CU_ASSERT_EQUAL(parse_exact(buf, len, NULL), PKT_TRUNCATED);
}

/* Ethernet pads short frames: bytes past the IP length are not payload. */
static void
test_trailing_padding(void)
{
	static const uint8_t fams[] = { AF_INET, AF_INET6 };
	uint8_t buf[256];
	struct pkt p, q;
	size_t i;

	for (i = 0; i < sizeof(fams); i++) {
		size_t len = build(buf, sizeof(buf), fams[i], &p);

		memset(buf + len, 0xa5, 18);
		CU_ASSERT_EQUAL(parse_exact(buf, len + 18, &q), PKT_OK);
		CU_ASSERT_EQUAL(q.len, len);
		CU_ASSERT_EQUAL(q.paylen, sizeof(payload));
		CU_ASSERT_EQUAL(pkt_parse(&q, buf, len + 18), PKT_OK);
		CU_ASSERT_TRUE(pkt_tcp_csum_ok(&q));
	}
}

/* Every proper prefix of a valid packet is refused, and read in bounds. */
static void
test_prefixes(void)
{
	static const uint8_t kinds[] = {
		IPPROTO_HOPOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS,
	};
	static const uint8_t lens[] = { 0, 1, 0 };
	uint8_t pkts[3][512];
	size_t plen[3], l4off, i, n;
	struct pkt p;

	plen[0] = build(pkts[0], sizeof(pkts[0]), AF_INET, &p);
	plen[1] = build(pkts[1], sizeof(pkts[1]), AF_INET6, &p);
	plen[2] = build6_ext(pkts[2], sizeof(pkts[2]), kinds, lens, 3,
			     IPPROTO_TCP, &l4off);
	for (i = 0; i < 3; i++) {
		unsigned wrong = 0;

		CU_ASSERT_EQUAL(parse_exact(pkts[i], plen[i], NULL), PKT_OK);
		for (n = 0; n < plen[i]; n++) {
			enum pkt_verdict v = parse_exact(pkts[i], n, NULL);
			size_t iphl = pkts[i][0] >> 4 == 4 ? IPV4_HDR_LEN
							   : IPV6_HDR_LEN;
			enum pkt_verdict want = n < iphl ? PKT_TRUNCATED
							 : PKT_BAD_LENGTH;
			if (v != want)
				wrong++;
		}
		CU_ASSERT_EQUAL(wrong, 0);
	}
}

static void
test_verdict_names(void)
{
	unsigned i, j;

	for (i = 0; i < PKT_VERDICT_MAX; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(pkt_verdict_name(i));
		for (j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(pkt_verdict_name(i),
						   pkt_verdict_name(j));
	}
	CU_ASSERT_STRING_EQUAL(pkt_verdict_name(PKT_OK), "ok");
	CU_ASSERT_STRING_EQUAL(pkt_verdict_name(PKT_VERDICT_MAX), "unknown");
}

static void
test_build_refuses(void)
{
	uint8_t buf[256], opts[44];
	struct pkt_tcp_spec s;
	struct pkt p;

	memset(opts, 1, sizeof(opts));	/* TCP NOPs */
	memset(&s, 0, sizeof(s));
	s.family = AF_INET;
	s.src = &test_client4;
	s.dst = &test_backend4;
	s.opts = opts;
	s.optlen = 3;
	CU_ASSERT_EQUAL(pkt_build_tcp(buf, sizeof(buf), &s, &p), 0);
	s.optlen = 44;
	CU_ASSERT_EQUAL(pkt_build_tcp(buf, sizeof(buf), &s, &p), 0);
	s.optlen = 40;
	CU_ASSERT_EQUAL(pkt_build_tcp(buf, 79, &s, &p), 0);
	CU_ASSERT_EQUAL(pkt_build_tcp(buf, 80, &s, &p), 80);
	CU_ASSERT_EQUAL(p.doff, 60);
	s.family = AF_INET6;
	s.src = &test_client6;
	s.dst = &test_backend6;
	CU_ASSERT_EQUAL(pkt_build_tcp(buf, 99, &s, &p), 0);
	CU_ASSERT_EQUAL(pkt_build_tcp(buf, 100, &s, &p), 100);
}

/* With csum_partial the field is left for the kernel to fill. */
static void
test_set_partial(void)
{
	uint8_t buf[256];
	struct pkt p;
	uint16_t before;

	build(buf, sizeof(buf), AF_INET, &p);
	before = get16(pkt_tcp(&p) + TCP_OFF_CSUM);
	pkt_set32(&p, TCP_OFF_SEQ, 1, true);
	pkt_set16(&p, TCP_OFF_WIN, 2, true);
	CU_ASSERT_EQUAL(get16(pkt_tcp(&p) + TCP_OFF_CSUM), before);
	CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + TCP_OFF_SEQ), 1);
	CU_ASSERT_EQUAL(get16(pkt_tcp(&p) + TCP_OFF_WIN), 2);
	pkt_set32(&p, TCP_OFF_ACK, 3, false);
	CU_ASSERT_FALSE(pkt_tcp_csum_ok(&p));	/* the partial ones missed */
	pkt_tcp_csum_set(&p);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
}

/*
 * BUG (see the report): pkt_set32 on a field at an odd offset.  A client
 * may lay out TS with a single NOP before it, putting TSval at TCP offset
 * 23; pkt_set32 updates the checksum with csum_replace4, which csum.h says
 * is only right at even offsets, so the checksum goes wrong.  The splice
 * rewrites TS and SACK values through pkt_set32 (test_splice.c has the
 * end-to-end case).  csum_replace_run, next to it, gets it right.
 */
static void
test_set32_odd_offset(void)
{
	static const uint8_t ts_odd[12] = {
		1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 1,
	};
	struct pkt_tcp_spec s;
	uint8_t buf[256], old[4];
	struct pkt p;
	unsigned off = TCP_HDR_LEN + 3;		/* TSval */

	memset(&s, 0, sizeof(s));
	s.family = AF_INET;
	s.src = &test_client4;
	s.dst = &test_backend4;
	s.flags = TCP_ACK;
	s.opts = ts_odd;
	s.optlen = sizeof(ts_odd);
	CU_ASSERT_FATAL(pkt_build_tcp(buf, sizeof(buf), &s, &p) != 0);
	CU_ASSERT_FATAL(pkt_tcp_csum_ok(&p));

	/* The reference: the same rewrite done with csum_replace_run. */
	memcpy(old, pkt_tcp(&p) + off, 4);
	put32(pkt_tcp(&p) + off, 0x11223344u + 0x200);
	csum_replace_run(pkt_tcp(&p) + TCP_OFF_CSUM, off, old,
			 pkt_tcp(&p) + off, 4);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));

	/* The bug: pkt_set32 at the same odd offset. */
	pkt_set32(&p, off, 0x11223344u, false);
	CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + off), 0x11223344u);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));

	/* pkt_set16 at an odd offset (TSval's low half, at 25) likewise;
	 * start again from a right checksum so that this one stands alone. */
	pkt_tcp_csum_set(&p);
	pkt_set16(&p, off + 2, 0xabcd, false);
	CU_ASSERT_EQUAL(get16(pkt_tcp(&p) + off + 2), 0xabcd);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
}

void
register_pkt_tests(void)
{
	static const struct test_case cases[] = {
		{ "valid IPv4 and IPv6 segments parse", test_valid },
		{ "IPv4 options move the TCP header", test_ipv4_options },
		{ "truncated IP header", test_truncated_ip },
		{ "IP version not 4 or 6", test_bad_version },
		{ "IPv4 IHL < 5", test_bad_ihl },
		{ "IP length beyond the buffer", test_bad_length },
		{ "IPv4 fragments (MF, offset)", test_ipv4_fragments },
		{ "IPv6 hop-by-hop + routing + dstopts + TCP",
		  test_ipv6_exthdr_chain },
		{ "IPv6 chain longer than PKT_EXTHDR_MAX",
		  test_ipv6_exthdr_limit },
		{ "IPv6 extension header past the packet",
		  test_ipv6_exthdr_overrun },
		{ "IPv6 Fragment header", test_ipv6_fragment },
		{ "not TCP", test_not_tcp },
		{ "TCP data offset < 5 or past the segment", test_tcp_doff },
		{ "link padding past the IP length ignored",
		  test_trailing_padding },
		{ "every prefix refused, read in bounds", test_prefixes },
		{ "verdict names", test_verdict_names },
		{ "pkt_build_tcp refuses bad options and small buffers",
		  test_build_refuses },
		{ "pkt_set* with csum_partial leave the checksum",
		  test_set_partial },
		{ "regression: pkt_set32/16 at an odd offset keep the checksum valid",
		  test_set32_odd_offset },
	};

	TEST_SUITE("pkt", cases);
}
