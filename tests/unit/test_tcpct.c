/*
 * nfq/tcpct.h and the TCPCT half of gateway/cookie.h: the kind-253 forms by
 * length, every refusal of RFC 6013 §3 (mutually exclusive options, lengths
 * out of range, an extension past the segment), the header extension read
 * and rewritten both ways, and responder cookies (binding to every input,
 * key rotation, age, the echoed-cookie rule).  Packets are parsed from heap
 * copies of exactly their length, so that ASan sees any read past them.
 * On the test bench (testgw.h): advisory RSTs paced by synack-rate.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../gateway/cookie.h"
#include "../../nfq/bytes.h"
#include "../../nfq/pkt.h"
#include "../../nfq/tcpct.h"
#include "../../nfq/tcpopt.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"


static void
test_forms(void)
{
	static const uint8_t ci16[] = {
		1, 1, 253, 18, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
		15, 16,
	};
	uint8_t buf[40];
	struct tcpopt o;
	unsigned clen, len;

	/* 18 bytes: a 16-byte Cookie in a SYN, an 8+8 pair elsewhere. */
	CU_ASSERT_EQUAL_FATAL(test_parse_opts(ci16, sizeof(ci16), &o), TCPOPT_OK);
	CU_ASSERT_EQUAL(o.ck_len, 18);
	CU_ASSERT_EQUAL(o.ck_off, TCP_HDR_LEN + 4);
	CU_ASSERT_EQUAL(tcpct_form(&o, TCP_SYN, &clen), TCPCT_COOKIE);
	CU_ASSERT_EQUAL(clen, 16);
	CU_ASSERT_EQUAL(tcpct_form(&o, TCP_SYN | TCP_ACK, &clen), TCPCT_COOKIE);
	CU_ASSERT_EQUAL(tcpct_form(&o, TCP_ACK, &clen), TCPCT_PAIR);
	CU_ASSERT_EQUAL(clen, 8);

	/* Every even length: 2 is Cookie-less; 10..18 a Cookie in a SYN;
	 * 18..34 with halves of whole cookies a pair; the rest ignored. */
	for (len = 2; len <= 38; len++) {
		enum tcpct_form syn, ack;

		memset(buf, 0xab, sizeof(buf));
		buf[0] = 253;
		buf[1] = (uint8_t)len;
		CU_ASSERT_EQUAL_FATAL(test_parse_opts(buf, len, &o), TCPOPT_OK);
		syn = tcpct_form(&o, TCP_SYN, &clen);
		ack = tcpct_form(&o, TCP_ACK, &clen);
		if (len % 2 || (len > 2 && len < 10) || len > 34) {
			CU_ASSERT_EQUAL(o.ck_len, 0);
			CU_ASSERT_EQUAL(syn, TCPCT_NONE);
			CU_ASSERT_EQUAL(ack, TCPCT_NONE);
		} else if (len == 2) {
			CU_ASSERT_EQUAL(syn, TCPCT_COOKIELESS);
			CU_ASSERT_EQUAL(ack, TCPCT_COOKIELESS);
		} else {
			CU_ASSERT_EQUAL(syn, len <= 18 ? TCPCT_COOKIE : TCPCT_NONE);
			CU_ASSERT_EQUAL(ack, len >= 18 && (len - 2) % 4 == 0
					     ? TCPCT_PAIR : TCPCT_NONE);
		}
	}
}

static void
test_exclusive(void)
{
	static const uint8_t two_cookies[] = {
		253, 10, 1, 2, 3, 4, 5, 6, 7, 8, 253, 2,
	};
	static const uint8_t ts_and_tsx[] = {
		1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 254, 4, 9, 1,
	};
	static const uint8_t tsx_and_ts[] = {
		254, 4, 9, 1, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
	};
	static const uint8_t two_tsx[] = { 254, 4, 9, 1, 254, 4, 9, 1 };
	/* Ignored forms do not count: a 4-byte 253 and a bad TSX Size. */
	static const uint8_t ignored[] = {
		253, 4, 0, 0, 253, 10, 1, 2, 3, 4, 5, 6, 7, 8, 254, 4, 9, 3,
		254, 4, 9, 1,
	};
	/* Kind 254 with TFO's ExID is not TSX (RFC 6994). */
	static const uint8_t tfo[] = { 254, 4, 0xf9, 0x89, 254, 4, 9, 1 };
	struct tcpopt o;

	CU_ASSERT_EQUAL(test_parse_opts(two_cookies, sizeof(two_cookies), &o),
			TCPOPT_EXCLUSIVE);
	CU_ASSERT_EQUAL(test_parse_opts(ts_and_tsx, sizeof(ts_and_tsx), &o),
			TCPOPT_EXCLUSIVE);
	CU_ASSERT_EQUAL(test_parse_opts(tsx_and_ts, sizeof(tsx_and_ts), &o),
			TCPOPT_EXCLUSIVE);
	CU_ASSERT_EQUAL(test_parse_opts(two_tsx, sizeof(two_tsx), &o),
			TCPOPT_DUPLICATE);
	CU_ASSERT_EQUAL_FATAL(test_parse_opts(ignored, sizeof(ignored), &o),
			      TCPOPT_OK);
	CU_ASSERT_EQUAL(o.ck_len, 10);
	CU_ASSERT_TRUE(o.has_tsx);
	CU_ASSERT_EQUAL(o.tsx_extend, 9);
	CU_ASSERT_EQUAL(o.tsx_size, 1);
	CU_ASSERT_EQUAL_FATAL(test_parse_opts(tfo, sizeof(tfo), &o), TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_tsx);
	CU_ASSERT_STRING_EQUAL(tcpopt_verdict_name(TCPOPT_EXCLUSIVE),
			       "option_exclusive");
}

/* A segment from the client with the given standard option area, header
 * extension (ext, a multiple of 4) and data. */
static size_t
segment(uint8_t *buf, size_t cap, uint8_t family, uint8_t flags,
	const uint8_t *area, size_t alen, const uint8_t *ext, size_t elen,
	const uint8_t *data, size_t dlen)
{
	uint8_t pay[2048];
	struct pkt_tcp_spec s = {
		.family = family,
		.src = family == AF_INET ? &test_client4 : &test_client6,
		.dst = family == AF_INET ? &test_backend4 : &test_backend6,
		.sport = 40000, .dport = 53, .seq = 1001, .ack = 5001,
		.flags = flags, .win = 512, .opts = area, .optlen = alen,
		.pay = pay, .paylen = elen + dlen,
	};
	struct pkt p;

	memcpy(pay, ext, elen);
	memcpy(pay + elen, data, dlen);
	return pkt_build_tcp(buf, cap, &s, &p);
}

/* Parses buf (a heap copy of len bytes, kept in *copy) into p and o with
 * the extension; returns the verdict. */
static enum tcpopt_verdict
parse_seg(const uint8_t *buf, size_t len, size_t room, uint8_t **copy,
	  struct pkt *p, struct tcpopt *o)
{
	enum tcpopt_verdict v;

	*copy = malloc(room > len ? room : len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*copy);
	memcpy(*copy, buf, len);
	CU_ASSERT_EQUAL_FATAL(pkt_parse(p, *copy, len), PKT_OK);
	v = tcpopt_parse(pkt_tcp(p) + TCP_HDR_LEN, p->doff - TCP_HDR_LEN,
			 TCP_HDR_LEN, o);
	if (v == TCPOPT_OK)
		v = tcpct_ext_parse(p, o);
	return v;
}

static const uint8_t pair16[16] = {
	0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
	0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
};

static void
test_ext_parse(void)
{
	static const uint8_t data[] = "query";
	uint8_t area[4] = { 254, 4, 0, 1 }, ext[64], buf[256], *copy;
	struct tcpct_ext_spec e = {
		.tsval = 0x01020304, .tsecr = 0x0a0b0c0d,
		.ci = pair16, .cr = pair16 + 8, .clen = 8,
	};
	uint8_t full[TCPOPT_TSX_LEN + TCPCT_EXT_MAX];
	size_t alen, n, len, words;
	struct tcpopt o;
	struct pkt p;

	n = tcpct_ext_build(full, sizeof(full), &e, &alen);
	CU_ASSERT_EQUAL_FATAL(alen, 4);
	CU_ASSERT_EQUAL_FATAL(n, 4 + 8 + 20);
	CU_ASSERT_EQUAL(full[2], 7);	/* Extend: 28 bytes = 7 words */
	memcpy(ext, full + 4, n - 4);

	len = segment(buf, sizeof(buf), AF_INET, TCP_ACK | TCP_PSH, full, 4,
		      ext, n - 4, data, 5);
	CU_ASSERT_FATAL(len > 0);
	CU_ASSERT_EQUAL_FATAL(parse_seg(buf, len, len, &copy, &p, &o),
			      TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_ts);
	CU_ASSERT_EQUAL(o.tsval, 0x01020304);
	CU_ASSERT_EQUAL(o.tsecr, 0x0a0b0c0d);
	CU_ASSERT_EQUAL(o.ts_off, TCP_HDR_LEN + 4);
	CU_ASSERT_EQUAL(o.ext_len, 28);
	CU_ASSERT_EQUAL(o.ck_off, TCP_HDR_LEN + 4 + 8 + 4);
	CU_ASSERT_EQUAL(memcmp(p.data + p.payoff, data, 5), 0);
	CU_ASSERT_EQUAL(p.paylen, 5);
	free(copy);

	/* Extend past the segment, and Extend too short for the pair: for
	 * each, every value from 0 to 255 is tried against 28 + 5 bytes. */
	for (words = 0; words <= 255; words++) {
		enum tcpopt_verdict v;

		area[2] = (uint8_t)words;
		area[3] = 2;	/* 64-bit: a pair of 4 words */
		len = segment(buf, sizeof(buf), AF_INET6, TCP_ACK, area, 4,
			      ext, n - 4, data, 5);
		v = parse_seg(buf, len, len, &copy, &p, &o);
		if (words < 4 || 4 * words > 28 + 5) {
			CU_ASSERT_EQUAL(v, TCPOPT_OVERRUN);
		} else if (v == TCPOPT_OK) {
			CU_ASSERT_EQUAL(p.paylen, 33 - 4 * words);
		}
		free(copy);
	}
}

/*
 * RFC 6013 Appendix A's third packets, laid out option by option as
 * HACKING.md §1 counts them (the RFC's values for sequence numbers,
 * cookies and timestamps are not reproduced; the layout is what decides
 * the reading of Extend).  A.2: 32-bit timestamps, a 30-byte Cookie-Pair,
 * MSS, User Timeout, one SACK block, Window Scale: Extend 16.  A.3: 64-bit
 * timestamps, SACK-permitted beside the pair, MSS, User Timeout, Window
 * Scale: Extend 15.  Data follows the extension at once.
 */
#define CI14	0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, \
		0xcb, 0xcc, 0xcd, 0xce
#define CR14	0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, \
		0xdb, 0xdc, 0xdd, 0xde
#define A_MSS_UTO	2, 4, 0x05, 0xb4, 28, 4, 0x80, 0x0a	/* 1460; 10 min */
#define A_WS_EOL	3, 3, 7, 0

static const uint8_t a2_area[] = { 254, 4, 16, 1 };
static const uint8_t a2_ext[] = {
	0x00, 0x00, 0x10, 0x01,			/* TSval */
	0x00, 0x00, 0x20, 0x02,			/* TSecr */
	1, 1, 253, 30, CI14, CR14,		/* NOP NOP Cookie-Pair */
	A_MSS_UTO,
	1, 1, 5, 10, 0, 0, 0x03, 0xe9, 0, 0, 0x07, 0xd1,	/* SACK */
	A_WS_EOL,
};
static const uint8_t a3_area[] = { 254, 4, 15, 2 };
static const uint8_t a3_ext[] = {
	0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x10, 0x01,	/* TSval, 64 bits */
	0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x20, 0x02,	/* TSecr */
	4, 2, 253, 30, CI14, CR14,		/* SACK-permitted, pair */
	A_MSS_UTO,
	A_WS_EOL,
};

static void
check_appendix(const uint8_t *area, const uint8_t *ext, size_t elen,
	       unsigned extend, unsigned size)
{
	static const uint8_t ci[] = { CI14 }, cr[] = { CR14 };
	static const uint8_t data[] = "\x00\x1d query";
	uint8_t buf[512], *copy;
	unsigned clen;
	struct tcpopt o;
	struct pkt p;
	size_t len;

	CU_ASSERT_EQUAL_FATAL(elen, 4 * extend);
	len = segment(buf, sizeof(buf), AF_INET, TCP_ACK | TCP_PSH, area, 4,
		      ext, elen, data, sizeof(data) - 1);
	CU_ASSERT_FATAL(len > 0);
	CU_ASSERT_EQUAL_FATAL(parse_seg(buf, len, len, &copy, &p, &o),
			      TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_tsx);
	CU_ASSERT_EQUAL(o.tsx_extend, extend);
	CU_ASSERT_EQUAL(o.tsx_size, size);
	CU_ASSERT_EQUAL(o.ext_len, 4 * extend);
	/* The low 32 bits of each timestamp. */
	CU_ASSERT_EQUAL(o.tsval, 0x1001);
	CU_ASSERT_EQUAL(o.tsecr, 0x2002);
	CU_ASSERT_EQUAL(tcpct_form(&o, TCP_ACK, &clen), TCPCT_PAIR);
	CU_ASSERT_EQUAL(clen, 14);
	CU_ASSERT_EQUAL(memcmp(pkt_tcp(&p) + o.ck_off, ci, 14), 0);
	CU_ASSERT_EQUAL(memcmp(pkt_tcp(&p) + o.ck_off + 14, cr, 14), 0);
	CU_ASSERT_TRUE(o.has_mss);
	CU_ASSERT_EQUAL(o.mss, 1460);
	CU_ASSERT_TRUE(o.has_wscale);
	CU_ASSERT_EQUAL(o.wscale, 7);
	/* No sequence space: the data is right after the extension. */
	CU_ASSERT_EQUAL(p.paylen, sizeof(data) - 1);
	CU_ASSERT_EQUAL(p.payoff, p.l4off + p.doff + 4 * extend);
	CU_ASSERT_EQUAL(memcmp(p.data + p.payoff, data, p.paylen), 0);
	if (size == 1) {
		CU_ASSERT_EQUAL(o.nsack, 1);
		CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + o.sack_off), 1001);
		CU_ASSERT_FALSE(o.sack_perm);
	} else {
		CU_ASSERT_EQUAL(o.nsack, 0);
		CU_ASSERT_TRUE(o.sack_perm);
		/* Only 32-bit pairs have a standard form. */
		CU_ASSERT_EQUAL(tcpct_strip(&p, &o), -1);
	}
	free(copy);
}

static void
test_appendix_a(void)
{
	/* Our builder writes A.2 byte for byte from its parts. */
	static const uint8_t extra[] = {
		A_MSS_UTO,
		1, 1, 5, 10, 0, 0, 0x03, 0xe9, 0, 0, 0x07, 0xd1,
		A_WS_EOL,
	};
	static const uint8_t ci[] = { CI14 }, cr[] = { CR14 };
	struct tcpct_ext_spec e = {
		.tsval = 0x1001, .tsecr = 0x2002, .ci = ci, .cr = cr,
		.clen = 14, .extra = extra, .extra_len = sizeof(extra),
	};
	uint8_t full[TCPOPT_TSX_LEN + TCPCT_EXT_MAX];
	size_t alen, n;

	check_appendix(a2_area, a2_ext, sizeof(a2_ext), 16, 1);
	check_appendix(a3_area, a3_ext, sizeof(a3_ext), 15, 2);
	n = tcpct_ext_build(full, sizeof(full), &e, &alen);
	CU_ASSERT_EQUAL_FATAL(alen, sizeof(a2_area));
	CU_ASSERT_EQUAL_FATAL(n, sizeof(a2_area) + sizeof(a2_ext));
	CU_ASSERT_EQUAL(memcmp(full, a2_area, alen), 0);
	CU_ASSERT_EQUAL(memcmp(full + alen, a2_ext, sizeof(a2_ext)), 0);
}

static void
test_strip_guard(void)
{
	static const uint8_t data[] = "0123456789";
	uint8_t sack[12] = { 1, 1, 5, 10, 0, 0, 0x13, 0x88, 0, 0, 0x17, 0x70 };
	uint8_t full[TCPOPT_TSX_LEN + TCPCT_EXT_MAX], buf[256], *copy;
	struct tcpct_ext_spec e = {
		.tsval = 777, .tsecr = 888, .ci = pair16, .cr = pair16 + 8,
		.clen = 8, .extra = sack, .extra_len = sizeof(sack),
	};
	size_t alen;
	struct tcpopt o;
	struct pkt p;
	int fam;

	for (fam = 0; fam < 2; fam++) {
		uint8_t family = fam ? AF_INET6 : AF_INET;
		size_t n, len;

		n = tcpct_ext_build(full, sizeof(full), &e, &alen);
		CU_ASSERT_FATAL(n > 0);
		len = segment(buf, sizeof(buf), family, TCP_ACK | TCP_FIN,
			      full, alen, full + alen, n - alen, data, 10);
		CU_ASSERT_EQUAL_FATAL(parse_seg(buf, len, 2048, &copy, &p, &o),
				      TCPOPT_OK);
		CU_ASSERT_EQUAL(o.nsack, 1);
		/* To the standard form: NOP NOP TS, NOP NOP SACK. */
		CU_ASSERT_EQUAL_FATAL(tcpct_strip(&p, &o), 0);
		CU_ASSERT_EQUAL(p.doff, TCP_HDR_LEN + 12 + 12);
		CU_ASSERT_FALSE(o.has_tsx);
		CU_ASSERT_EQUAL(o.ck_len, 0);
		CU_ASSERT_TRUE(o.has_ts);
		CU_ASSERT_EQUAL(o.tsval, 777);
		CU_ASSERT_EQUAL(o.tsecr, 888);
		CU_ASSERT_EQUAL(o.nsack, 1);
		CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + o.sack_off), 5000);
		CU_ASSERT_EQUAL(p.paylen, 10);
		CU_ASSERT_EQUAL(memcmp(p.data + p.payoff, data, 10), 0);
		CU_ASSERT_EQUAL(p.flags, TCP_ACK | TCP_FIN);
		CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
		CU_ASSERT_EQUAL(pkt_parse(&p, p.data, p.len), PKT_OK);

		/* And back, with another pair: the same segment as built. */
		CU_ASSERT_EQUAL_FATAL(tcpct_guard(&p, &o, pair16, 8, 2048), 0);
		CU_ASSERT_EQUAL(p.len, len);
		CU_ASSERT_EQUAL(memcmp(p.data, buf, len), 0);
		CU_ASSERT_TRUE(o.has_tsx);
		CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
		/* No room: refused, nothing changed. */
		CU_ASSERT_EQUAL(tcpct_strip(&p, &o), 0);
		n = p.len;
		CU_ASSERT_EQUAL(tcpct_guard(&p, &o, pair16, 8, n + 10), -1);
		CU_ASSERT_EQUAL(p.len, n);
		CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
		free(copy);
	}
}

/*
 * The header extension has room for a SACK option of 31 blocks, which no
 * consumer takes (the splice translates at most 4 in place, the standard
 * form holds 3): the first 4 are kept, the most recent (RFC 2018 §4).
 */
static void
test_ext_sack(void)
{
	enum { BLOCKS = 31 };
	uint8_t sack[4 + 8 * BLOCKS], full[TCPOPT_TSX_LEN + TCPCT_EXT_MAX];
	uint8_t buf[512], *copy;
	struct tcpct_ext_spec e = {
		.tsval = 1, .tsecr = 2, .ci = pair16, .cr = pair16 + 8,
		.clen = 8, .extra = sack, .extra_len = sizeof(sack),
	};
	size_t alen, n, len;
	struct tcpopt o;
	struct pkt p;
	unsigned i;

	sack[0] = TCPOPT_NOP;
	sack[1] = TCPOPT_NOP;
	sack[2] = TCPOPT_SACK;
	sack[3] = 2 + 8 * BLOCKS;
	for (i = 0; i < 2 * BLOCKS; i++)
		put32(sack + 4 + 4 * i, 10000 + 100 * i);
	n = tcpct_ext_build(full, sizeof(full), &e, &alen);
	CU_ASSERT_FATAL(n > 0);
	len = segment(buf, sizeof(buf), AF_INET, TCP_ACK, full, alen,
		      full + alen, n - alen, (const uint8_t *)"x", 1);
	CU_ASSERT_FATAL(len > 0);
	CU_ASSERT_EQUAL_FATAL(parse_seg(buf, len, len, &copy, &p, &o),
			      TCPOPT_OK);
	CU_ASSERT_EQUAL(o.nsack, TCPOPT_SACK_MAX_BLOCKS);
	CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + o.sack_off), 10000);
	CU_ASSERT(o.sack_off + 8u * o.nsack <= p.len - p.l4off);
	/* The standard form: the first 3, beside Timestamps. */
	CU_ASSERT_EQUAL_FATAL(tcpct_strip(&p, &o), 0);
	CU_ASSERT_EQUAL(o.nsack, 3);
	for (i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + o.sack_off + 4 * i),
				10000 + 100 * i);
	CU_ASSERT_TRUE(pkt_tcp_csum_ok(&p));
	free(copy);
}

static void
test_put_cookie(void)
{
	uint8_t opts[TCP_OPT_MAX];
	struct tcpopt_spec s = {
		.mss = 1460, .sack_perm = true, .ts = true, .wscale = true,
		.wscale_shift = 7,
	};
	size_t n = tcpopt_build(opts, &s);
	struct tcpopt o;
	unsigned clen;

	CU_ASSERT_EQUAL_FATAL(n, 20);
	/* A 16-byte cookie fills a SYN exactly (HACKING.md §1). */
	CU_ASSERT_TRUE(tcpct_put_cookie(opts, &n, sizeof(opts), pair16, 16));
	CU_ASSERT_EQUAL(n, TCP_OPT_MAX);
	CU_ASSERT_EQUAL_FATAL(test_parse_opts(opts, n, &o), TCPOPT_OK);
	CU_ASSERT_EQUAL(tcpct_form(&o, TCP_SYN, &clen), TCPCT_COOKIE);
	CU_ASSERT_EQUAL(clen, 16);
	CU_ASSERT_TRUE(o.has_mss && o.has_ts && o.has_wscale && o.sack_perm);
	CU_ASSERT_FALSE(tcpct_put_cookie(opts, &n, sizeof(opts), pair16, 8));
}

/* Responder cookies. */

static struct keys_master ct_master;

static void
ct_in(struct tcpct_cookie_in *in, uint8_t family, const uint8_t *ci,
      unsigned clen)
{
	memset(in, 0, sizeof(*in));
	in->t.family = family;
	in->t.caddr = family == AF_INET ? test_client4 : test_client6;
	in->t.saddr = family == AF_INET ? test_backend4 : test_backend6;
	in->t.cport = 40000;
	in->t.sport = 53;
	in->snd_nxt = 0x80000001;
	in->rcv_nxt = 1001;
	in->tsval = 0;
	in->ci = ci;
	in->clen = clen;
}

#define T_NOW	8646400u	/* s; epoch 14410 of 600 s, + 400 s */

static void
test_cookie_roundtrip(void)
{
	struct cookie_keys k;
	struct tcpct_cookie_in in;
	uint8_t cr[TCPCT_COOKIE_MAX], ci[TCPCT_COOKIE_MAX];
	uint64_t ms = (uint64_t)T_NOW * 1000;
	unsigned clen, fam;
	struct rng r;

	rng_init(&r, 61);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&k, &ct_master, 600), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, T_NOW), 0);
	for (fam = 0; fam < 2; fam++)
		for (clen = TCPCT_COOKIE_MIN; clen <= TCPCT_COOKIE_MAX;
		     clen += 2) {
			rng_bytes(&r, ci, sizeof(ci));
			ct_in(&in, fam ? AF_INET6 : AF_INET, ci, clen);
			in.tsval = (uint32_t)ms;
			CU_ASSERT_EQUAL_FATAL(
				cookie_tcpct_make(&k, &in, T_NOW, cr), 0);
			/* The key id is the epoch's parity. */
			CU_ASSERT_EQUAL(cr[0] >> 7, (T_NOW / 600) & 1);
			CU_ASSERT_EQUAL(cookie_tcpct_check(&k, &in, ms + 999,
							   cr), COOKIE_OK);
		}
	cookie_keys_free(&k);
}

static void
test_cookie_binding(void)
{
	struct cookie_keys k;
	struct tcpct_cookie_in in, bad;
	uint8_t cr[16], ci[16], ci2[16], flip[16];
	uint64_t ms = (uint64_t)T_NOW * 1000;
	unsigned i, b;

	memcpy(ci, pair16, 16);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&k, &ct_master, 600), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, T_NOW), 0);
	ct_in(&in, AF_INET, ci, 16);
	in.tsval = (uint32_t)ms;
	CU_ASSERT_EQUAL_FATAL(cookie_tcpct_make(&k, &in, T_NOW, cr), 0);

	/* Every bit of the responder cookie matters. */
	for (i = 0; i < 16; i++)
		for (b = 0; b < 8; b++) {
			memcpy(flip, cr, 16);
			flip[i] ^= (uint8_t)(1u << b);
			CU_ASSERT_NOT_EQUAL(cookie_tcpct_check(&k, &in, ms, flip),
					    COOKIE_OK);
		}
	/* And every input: sequence numbers, TSval, addresses, ports, the
	 * initiator cookie. */
#define REFUSED(field, value)						\
	do {								\
		bad = in;						\
		bad.field = value;					\
		CU_ASSERT_NOT_EQUAL(cookie_tcpct_check(&k, &bad, ms, cr),\
				    COOKIE_OK);				\
	} while (0)
	REFUSED(snd_nxt, in.snd_nxt + 1);
	REFUSED(rcv_nxt, in.rcv_nxt + 1);
	REFUSED(tsval, in.tsval - 1);
	REFUSED(t.cport, 40001);
	REFUSED(t.sport, 54);
	REFUSED(t.caddr.b[3], 3);
	REFUSED(t.saddr.b[3], 3);
	REFUSED(t.family, AF_INET6);
	memcpy(ci2, ci, 16);
	ci2[15] ^= 1;
	REFUSED(ci, ci2);
	REFUSED(clen, 14);
#undef REFUSED
	cookie_keys_free(&k);
}

static void
test_cookie_time(void)
{
	struct cookie_keys k, later, stranger;
	struct tcpct_cookie_in in;
	uint8_t cr[16], ci[16];
	uint64_t ms = (uint64_t)T_NOW * 1000;
	struct keys_master other = ct_master;

	memcpy(ci, pair16, 16);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&k, &ct_master, 600), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, T_NOW), 0);
	ct_in(&in, AF_INET6, ci, 16);
	in.tsval = (uint32_t)ms;
	CU_ASSERT_EQUAL_FATAL(cookie_tcpct_make(&k, &in, T_NOW, cr), 0);

	/* Age: the TSval it covers must be recent, not from the future. */
	CU_ASSERT_EQUAL(cookie_tcpct_check(&k, &in, ms + TCPCT_COOKIE_MAX_AGE_MS,
					   cr), COOKIE_OK);
	CU_ASSERT_EQUAL(cookie_tcpct_check(&k, &in,
					   ms + TCPCT_COOKIE_MAX_AGE_MS + 1, cr),
			COOKIE_EXPIRED);
	CU_ASSERT_EQUAL(cookie_tcpct_check(&k, &in, ms - 1, cr),
			COOKIE_EXPIRED);

	/* Rotation: a gateway one epoch on still holds this key, one two
	 * epochs on does not; another secret never verifies it. */
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&later, &ct_master, 600), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&later, T_NOW + 200), 0);
	CU_ASSERT_EQUAL(cookie_tcpct_check(&later, &in, ms + 100000, cr),
			COOKIE_OK);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&later, T_NOW + 800), 0);
	in.tsval = (uint32_t)(ms + 700000);	/* age is not what fails */
	CU_ASSERT_NOT_EQUAL(cookie_tcpct_check(&later, &in, ms + 800000, cr),
			    COOKIE_OK);
	in.tsval = (uint32_t)ms;
	other.secret[0] ^= 1;
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&stranger, &other, 600), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&stranger, T_NOW), 0);
	CU_ASSERT_EQUAL(cookie_tcpct_check(&stranger, &in, ms, cr), COOKIE_BAD);
	cookie_keys_free(&k);
	cookie_keys_free(&later);
	cookie_keys_free(&stranger);
}

/* §3.5: the responder cookie never equals the initiator's.  The MAC covers
 * the initiator cookie, so a colliding one cannot be searched for; the rule
 * that make and check both apply is tested on its own. */
static void
test_cookie_echo(void)
{
	uint8_t ci[16], cr[16];
	unsigned clen, i;

	for (clen = TCPCT_COOKIE_MIN; clen <= TCPCT_COOKIE_MAX; clen += 2) {
		for (i = 0; i < 2; i++) {
			memcpy(ci, pair16, 16);
			ci[0] = (uint8_t)(i ? 0x80 : 0x00);
			memcpy(cr, ci, 16);
			cookie_tcpct_unecho(cr, ci, clen);
			/* Changed everywhere but the key id. */
			CU_ASSERT_EQUAL(cr[0] & 0x80, ci[0] & 0x80);
			CU_ASSERT_EQUAL(cr[0] & 0x7f, (uint8_t)~ci[0] & 0x7f);
			CU_ASSERT_EQUAL(cr[clen - 1], (uint8_t)~ci[clen - 1]);
			CU_ASSERT_NOT_EQUAL(memcmp(cr, ci, clen), 0);
		}
		/* A different cookie is left alone. */
		memcpy(ci, pair16, 16);
		memcpy(cr, pair16, 16);
		cr[clen - 1] ^= 1;
		cookie_tcpct_unecho(cr, ci, clen);
		CU_ASSERT_EQUAL(cr[clen - 1], pair16[clen - 1] ^ 1);
		CU_ASSERT_EQUAL(memcmp(cr, pair16, clen - 1), 0);
	}
}

/*
 * RFC 6013 §7: a guarded FIN with no state left gets a RST with its pair.
 * Anyone can send one from any address (the pair is not checked, there is
 * nothing to check it against): the RSTs towards one prefix are paced by
 * synack-rate, as SYN-ACKs are.
 */
static void
test_advisory_rst_paced(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "synack-rate", "3", NULL,
	};
	struct tgw *g = tgw_new(opts);
	struct inaddr neighbour = test_client4, far = test_client4;
	unsigned i, rsts = 0;

	neighbour.b[3] = 77;
	far.b[2] = 99;
	for (i = 0; i < 10; i++) {
		tgw_tcpct_seg(g, i % 2 ? &neighbour : NULL,
			      (uint16_t)(40000 + i), 1001, 5001,
			      TCP_ACK | TCP_FIN, 1000 + i, 77, pair16,
			      pair16 + 8);
		CU_ASSERT_EQUAL(g->verdict, NF_DROP);
		rsts += tgw_find(g, false, TCP_RST | TCP_ACK, NULL) != NULL;
	}
	CU_ASSERT_EQUAL(rsts, 3);
	CU_ASSERT_EQUAL(g->w.st.tcpct_advisory_rst, 3);
	CU_ASSERT_EQUAL(g->w.st.synack_capped, 7);
	/* Another prefix has its own count. */
	tgw_tcpct_seg(g, &far, 40100, 1001, 5001, TCP_ACK | TCP_FIN, 2000, 77,
		      pair16, pair16 + 8);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, false, TCP_RST | TCP_ACK, NULL));
	tgw_free(g);
}

void
register_tcpct_tests(void)
{
	static const struct test_case cases[] = {
		{ "kind 253 forms by length and segment", test_forms },
		{ "mutually exclusive options, ignored forms", test_exclusive },
		{ "header extension: pair, options, data, bounds",
		  test_ext_parse },
		{ "RFC 6013 Appendix A layouts: Extend 16 and 15",
		  test_appendix_a },
		{ "strip to standard form and guard back, v4 and v6",
		  test_strip_guard },
		{ "header extension SACK: 31 blocks, the first 4 kept",
		  test_ext_sack },
		{ "a 16-byte cookie fills a SYN", test_put_cookie },
		{ "responder cookie round trip, every size, v4 and v6",
		  test_cookie_roundtrip },
		{ "responder cookie bound to every bit and input",
		  test_cookie_binding },
		{ "responder cookie age and key rotation", test_cookie_time },
		{ "responder cookie never echoes the initiator's",
		  test_cookie_echo },
		{ "advisory RSTs paced by synack-rate", test_advisory_rst_paced },
	};
	unsigned i;

	for (i = 0; i < KEYS_MASTER_LEN; i++)
		ct_master.secret[i] = (uint8_t)(0x5a ^ i);
	TEST_SUITE("tcpct", cases);
}
