/*
 * nfq/tcpopt.h: option parsing (values, offsets, every refusal by name) and
 * the builder's output parsed back.  Every area is parsed from a heap copy
 * of exactly its length so that ASan catches a read past it.
 */
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "../../nfq/bytes.h"
#include "../../nfq/pkt.h"
#include "../../nfq/tcpopt.h"
#include "suites.h"
#include "testutil.h"


/* What Linux puts in a SYN: MSS, SACK-perm, TS, NOP, WS (20 bytes). */
static void
test_linux_syn(void)
{
	static const uint8_t syn[] = {
		2, 4, 0x05, 0xb4,			/* MSS 1460 */
		4, 2,					/* SACK-permitted */
		8, 10, 0xde, 0xad, 0xbe, 0xef,		/* TSval */
		0x01, 0x02, 0x03, 0x04,			/* TSecr */
		1,					/* NOP */
		3, 3, 7,				/* WS 7 */
	};
	struct tcpopt o;

	CU_ASSERT_EQUAL_FATAL(test_parse_opts(syn, sizeof(syn), &o), TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_mss);
	CU_ASSERT_EQUAL(o.mss, 1460);
	CU_ASSERT_TRUE(o.sack_perm);
	CU_ASSERT_TRUE(o.has_ts);
	CU_ASSERT_EQUAL(o.tsval, 0xdeadbeef);
	CU_ASSERT_EQUAL(o.tsecr, 0x01020304);
	CU_ASSERT_EQUAL(o.ts_off, TCP_HDR_LEN + 8);
	CU_ASSERT_TRUE(o.has_wscale);
	CU_ASSERT_EQUAL(o.wscale, 7);
	CU_ASSERT_EQUAL(o.nsack, 0);

	/* Offsets follow hdr_off. */
	CU_ASSERT_EQUAL(tcpopt_parse(syn, sizeof(syn), 100, &o), TCPOPT_OK);
	CU_ASSERT_EQUAL(o.ts_off, 108);

	/* The empty area is fine and finds nothing. */
	CU_ASSERT_EQUAL(test_parse_opts(syn, 0, &o), TCPOPT_OK);
	CU_ASSERT_FALSE(o.has_mss || o.has_ts || o.has_wscale || o.sack_perm);
}

static void
test_sack_blocks(void)
{
	unsigned n, i;

	for (n = 1; n <= TCPOPT_SACK_MAX_BLOCKS; n++) {
		uint8_t opts[TCP_OPT_MAX];
		size_t len = 4 + 8 * n;
		struct tcpopt o;

		opts[0] = TCPOPT_NOP;
		opts[1] = TCPOPT_NOP;
		opts[2] = TCPOPT_SACK;
		opts[3] = (uint8_t)(2 + 8 * n);
		for (i = 0; i < 2 * n; i++)
			put32(opts + 4 + 4 * i, 0x11111111u * (i + 1));
		CU_ASSERT_EQUAL_FATAL(test_parse_opts(opts, len, &o), TCPOPT_OK);
		CU_ASSERT_EQUAL(o.nsack, n);
		CU_ASSERT_EQUAL(o.sack_off, TCP_HDR_LEN + 4);
		CU_ASSERT_FALSE(o.has_ts);
	}

	/* With timestamps first, as Linux sends them: 12 + 4 + 24 = 40. */
	{
		uint8_t opts[TCP_OPT_MAX] = {
			1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8, 1, 1, 5, 26,
		};
		struct tcpopt o;

		CU_ASSERT_EQUAL_FATAL(test_parse_opts(opts, sizeof(opts), &o), TCPOPT_OK);
		CU_ASSERT_EQUAL(o.nsack, 3);
		CU_ASSERT_EQUAL(o.sack_off, TCP_HDR_LEN + 16);
		CU_ASSERT_EQUAL(o.ts_off, TCP_HDR_LEN + 4);
		CU_ASSERT_EQUAL(o.tsval, 9);
		CU_ASSERT_EQUAL(o.tsecr, 8);
	}
}

/* An option area padded with NOPs to 40 bytes after the bytes given, so
 * that only the option under test can be wrong. */
static enum tcpopt_verdict
parse_padded(const uint8_t *head, size_t hlen, struct tcpopt *o)
{
	uint8_t opts[TCP_OPT_MAX];

	memset(opts, TCPOPT_NOP, sizeof(opts));
	memcpy(opts, head, hlen);
	return test_parse_opts(opts, sizeof(opts), o);
}

static void
test_malformed(void)
{
	static const struct {
		uint8_t b[8];
		size_t len;
		bool padded;
		enum tcpopt_verdict want;
		const char *what;
	} cases[] = {
		{ { 2, 0 }, 2, true, TCPOPT_BAD_LEN, "length 0" },
		{ { 2, 1 }, 2, true, TCPOPT_BAD_LEN, "length 1" },
		{ { 30, 0 }, 2, true, TCPOPT_BAD_LEN, "unknown, length 0" },
		{ { 30, 1 }, 2, true, TCPOPT_BAD_LEN, "unknown, length 1" },
		{ { 2, 4, 5 }, 3, false, TCPOPT_OVERRUN, "MSS past the end" },
		{ { 1, 30, 9, 0, 0 }, 5, false, TCPOPT_OVERRUN,
		  "unknown past the end" },
		{ { 1, 1, 1, 2 }, 4, false, TCPOPT_OVERRUN,
		  "kind without length byte" },
		{ { 1, 1, 1, 30 }, 4, false, TCPOPT_OVERRUN,
		  "unknown kind without length byte" },
		{ { 2, 3, 5 }, 3, true, TCPOPT_BAD_LEN, "MSS length 3" },
		{ { 2, 5, 5, 0xb4, 0 }, 5, true, TCPOPT_BAD_LEN,
		  "MSS length 5" },
		{ { 3, 2 }, 2, true, TCPOPT_BAD_LEN, "WS length 2" },
		{ { 3, 4, 7, 0 }, 4, true, TCPOPT_BAD_LEN, "WS length 4" },
		{ { 4, 3, 0 }, 3, true, TCPOPT_BAD_LEN, "SACK-perm length 3" },
		{ { 8, 8 }, 2, true, TCPOPT_BAD_LEN, "TS length 8" },
		{ { 8, 12 }, 2, true, TCPOPT_BAD_LEN, "TS length 12" },
		{ { 5, 2 }, 2, true, TCPOPT_BAD_LEN, "SACK length 2" },
		{ { 5, 9 }, 2, true, TCPOPT_BAD_LEN, "SACK length 9" },
		{ { 5, 11 }, 2, true, TCPOPT_BAD_LEN, "SACK length 11" },
		{ { 5, 17 }, 2, true, TCPOPT_BAD_LEN, "SACK length 17" },
		{ { 5, 34 + 8 }, 2, false, TCPOPT_OVERRUN,
		  "SACK of 5 blocks cannot fit" },
		{ { 2, 4, 1, 0, 2, 4, 2, 0 }, 8, true, TCPOPT_DUPLICATE,
		  "MSS twice" },
		{ { 3, 3, 1, 3, 3, 2 }, 6, true, TCPOPT_DUPLICATE, "WS twice" },
	};
	struct tcpopt o;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum tcpopt_verdict v = cases[i].padded
			? parse_padded(cases[i].b, cases[i].len, &o)
			: test_parse_opts(cases[i].b, cases[i].len, &o);
		if (v != cases[i].want)
			fprintf(stderr, "\n    %s: got %s, want %s",
				cases[i].what, tcpopt_verdict_name(v),
				tcpopt_verdict_name(cases[i].want));
		CU_ASSERT_EQUAL(v, cases[i].want);
	}

	/* Timestamps and SACK twice (they need more room). */
	{
		uint8_t ts2[24] = { 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
				    8, 10, 0, 0, 0, 3, 0, 0, 0, 4, 1, 1, 1, 1 };
		uint8_t sack2[20] = { 5, 10, 0, 0, 0, 1, 0, 0, 0, 2,
				      5, 10, 0, 0, 0, 3, 0, 0, 0, 4 };

		CU_ASSERT_EQUAL(test_parse_opts(ts2, sizeof(ts2), &o), TCPOPT_DUPLICATE);
		CU_ASSERT_EQUAL(test_parse_opts(sack2, sizeof(sack2), &o),
				TCPOPT_DUPLICATE);
	}
}

static void
test_eol_and_unknown(void)
{
	/* EOL ends the area: what follows may be anything. */
	static const uint8_t eol[] = { 2, 4, 0x02, 0x18, 0, 2, 0, 8, 1 };
	/* Unknown kinds (TFO 34, experimental 254, 30) are skipped by length,
	 * and the options after them are still found. */
	static const uint8_t unk[] = {
		34, 10, 1, 2, 3, 4, 5, 6, 7, 8,
		254, 2,
		30, 3, 0xff,
		2, 4, 0x01, 0x00,
		3, 3, 2,
		1, 1,
	};
	struct tcpopt o;

	CU_ASSERT_EQUAL_FATAL(test_parse_opts(eol, sizeof(eol), &o), TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_mss);
	CU_ASSERT_EQUAL(o.mss, 536);
	CU_ASSERT_FALSE(o.has_ts);
	CU_ASSERT_EQUAL(test_parse_opts(eol + 4, 1, &o), TCPOPT_OK);

	CU_ASSERT_EQUAL_FATAL(test_parse_opts(unk, sizeof(unk), &o), TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_mss);
	CU_ASSERT_EQUAL(o.mss, 256);
	CU_ASSERT_TRUE(o.has_wscale);
	CU_ASSERT_EQUAL(o.wscale, 2);
}

static void
test_wscale_clamp(void)
{
	static const uint8_t shifts[] = { 14, 15, 16, 255 };
	size_t i;

	for (i = 0; i < sizeof(shifts); i++) {
		uint8_t opts[4] = { 1, 3, 3, shifts[i] };
		struct tcpopt o;

		CU_ASSERT_EQUAL(test_parse_opts(opts, sizeof(opts), &o), TCPOPT_OK);
		CU_ASSERT_EQUAL(o.wscale, TCPOPT_WSCALE_MAX);
	}
}

/* All 16 combinations of (MSS, SACK-perm, TS, WS) built and parsed back. */
static void
test_build_roundtrip(void)
{
	unsigned m;

	for (m = 0; m < 16; m++) {
		struct tcpopt_spec s = {
			.mss = m & 1 ? 1460 : 0,
			.sack_perm = m & 2,
			.ts = m & 4,
			.tsval = 0x80000001u + m,
			.tsecr = 0x7fffffffu - m,
			.wscale = m & 8,
			.wscale_shift = (uint8_t)(m % 15),	/* ≤ 14 */
		};
		uint8_t buf[TCP_OPT_MAX + 8];
		struct tcpopt o;
		size_t len;

		memset(buf, 0xee, sizeof(buf));
		len = tcpopt_build(buf, &s);
		CU_ASSERT(len % 4 == 0 && len <= TCP_OPT_MAX);
		CU_ASSERT_EQUAL(buf[len], 0xee);	/* nothing past len */
		CU_ASSERT_EQUAL_FATAL(test_parse_opts(buf, len, &o), TCPOPT_OK);
		CU_ASSERT_EQUAL(o.has_mss, s.mss != 0);
		if (s.mss)
			CU_ASSERT_EQUAL(o.mss, s.mss);
		CU_ASSERT_EQUAL(o.sack_perm, s.sack_perm);
		CU_ASSERT_EQUAL(o.has_ts, s.ts);
		if (s.ts) {
			CU_ASSERT_EQUAL(o.tsval, s.tsval);
			CU_ASSERT_EQUAL(o.tsecr, s.tsecr);
			/* Aligned for the translator's 32-bit rewrite. */
			CU_ASSERT_EQUAL(o.ts_off % 4, 0);
		}
		CU_ASSERT_EQUAL(o.has_wscale, s.wscale);
		if (s.wscale)
			CU_ASSERT_EQUAL(o.wscale, s.wscale_shift);
		CU_ASSERT_EQUAL(o.nsack, 0);
		if (m == 0)
			CU_ASSERT_EQUAL(len, 0);
		if (m == 15)
			CU_ASSERT_EQUAL(len, 20);
	}
}

static void
test_verdict_names(void)
{
	unsigned i, j;

	for (i = 0; i < TCPOPT_VERDICT_MAX; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(tcpopt_verdict_name(i));
		for (j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(tcpopt_verdict_name(i),
						   tcpopt_verdict_name(j));
	}
	CU_ASSERT_STRING_EQUAL(tcpopt_verdict_name(TCPOPT_VERDICT_MAX),
			       "unknown");
}

/* Random areas never read out of bounds, and a refused one is named. */
static void
test_random_areas(void)
{
	struct rng r;
	unsigned i;

	rng_init(&r, 3);
	for (i = 0; i < 20000; i++) {
		uint8_t opts[TCP_OPT_MAX];
		size_t len = rng_below(&r, TCP_OPT_MAX + 1), k;
		struct tcpopt o;
		enum tcpopt_verdict v;

		/* Mostly known kinds with small lengths, to get past the first
		 * option now and then. */
		for (k = 0; k < len; k++)
			opts[k] = (uint8_t)rng_below(&r, k & 1 ? 12 : 10);
		v = test_parse_opts(opts, len, &o);
		CU_ASSERT(v < TCPOPT_VERDICT_MAX);
		if (v == TCPOPT_OK && o.has_ts)
			CU_ASSERT((size_t)o.ts_off + 8 <= TCP_HDR_LEN + len);
		if (v == TCPOPT_OK && o.nsack)
			CU_ASSERT((size_t)o.sack_off + 8u * o.nsack <=
				  TCP_HDR_LEN + len);
	}
}

void
register_tcpopt_tests(void)
{
	static const struct test_case cases[] = {
		{ "Linux SYN options: values and offsets", test_linux_syn },
		{ "SACK with 1..4 blocks", test_sack_blocks },
		{ "malformed areas get the named verdict", test_malformed },
		{ "EOL stops, unknown kinds skipped", test_eol_and_unknown },
		{ "window scale > 14 clamped to 14", test_wscale_clamp },
		{ "tcpopt_build round trip, 16 combinations",
		  test_build_roundtrip },
		{ "verdict names", test_verdict_names },
		{ "random areas stay in bounds", test_random_areas },
	};

	TEST_SUITE("tcpopt", cases);
}
