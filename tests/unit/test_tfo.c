/*
 * TCP Fast Open (RFC 7413): the option in both forms at every length, the
 * builder read back by the parser, and the cookie MAC (bound to both
 * addresses and the family, valid across one key rotation, not two).
 */
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../gateway/cookie.h"
#include "../../nfq/tcpopt.h"
#include "suites.h"
#include "testutil.h"

static void
test_tfo_forms(void)
{
	uint8_t buf[40];
	struct tcpopt o;
	unsigned len;
	int exp;

	/* Every length of both forms: a request (cookie 0) or a cookie of
	 * 4..16 bytes, even; any other is ignored (RFC 7413 §4.1.1). */
	for (exp = 0; exp < 2; exp++) {
		unsigned hdr = exp ? 4 : 2;

		for (len = hdr; len <= 38; len++) {
			unsigned clen = len - hdr;
			bool valid = clen % 2 == 0 &&
				     (clen == 0 || (clen >= 4 && clen <= 16));

			memset(buf, 0xab, sizeof(buf));
			buf[0] = exp ? TCPOPT_EXP : TCPOPT_TFO;
			buf[1] = (uint8_t)len;
			if (exp) {
				buf[2] = 0xf9;
				buf[3] = 0x89;
			}
			CU_ASSERT_EQUAL_FATAL(test_parse_opts(buf, len, &o),
					      TCPOPT_OK);
			CU_ASSERT_EQUAL(o.has_tfo, valid);
			CU_ASSERT_FALSE(o.has_tsx);
			if (!valid)
				continue;
			CU_ASSERT_EQUAL(o.tfo_exp, exp);
			CU_ASSERT_EQUAL(o.tfo_len, clen);
			CU_ASSERT_EQUAL(o.tfo_off, TCP_HDR_LEN + hdr);
		}
	}
}

static void
test_tfo_refusals(void)
{
	/* Two Fast Open options, in either form, refuse the area. */
	static const uint8_t twice[] = { 34, 2, 254, 4, 0xf9, 0x89, 1, 1 };
	static const uint8_t twice34[] = { 34, 2, 34, 2 };
	/* An ignored one does not count: a 3-byte cookie, then a request. */
	static const uint8_t odd[] = { 34, 5, 1, 2, 3, 34, 2, 1 };
	/* TSX is a 4-byte kind 254 without TFO's ExID. */
	static const uint8_t tsx[] = { 254, 4, 9, 1 };
	struct tcpopt o;

	CU_ASSERT_EQUAL(test_parse_opts(twice, sizeof(twice), &o),
			TCPOPT_DUPLICATE);
	CU_ASSERT_EQUAL(test_parse_opts(twice34, sizeof(twice34), &o),
			TCPOPT_DUPLICATE);
	CU_ASSERT_EQUAL_FATAL(test_parse_opts(odd, sizeof(odd), &o),
			      TCPOPT_OK);
	CU_ASSERT_TRUE(o.has_tfo);
	CU_ASSERT_EQUAL(o.tfo_len, 0);
	CU_ASSERT_EQUAL_FATAL(test_parse_opts(tsx, sizeof(tsx), &o),
			      TCPOPT_OK);
	CU_ASSERT_FALSE(o.has_tfo);
	CU_ASSERT_TRUE(o.has_tsx);
}

static void
test_tfo_build(void)
{
	static const uint8_t cookie[16] = {
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	};
	struct tcpopt_spec s = {
		.mss = 1460, .sack_perm = true, .ts = true, .tsval = 1,
		.wscale = true, .wscale_shift = 7,
	};
	uint8_t opts[TCP_OPT_MAX];
	struct tcpopt o;
	unsigned clen;
	int exp;

	for (exp = 0; exp < 2; exp++)
		for (clen = 0; clen <= 16; clen += 2) {
			size_t n = tcpopt_build(opts, &s);
			bool fits = n + (exp ? 4 : 2) + clen <= TCP_OPT_MAX;

			if (clen == 2)
				continue;
			CU_ASSERT_EQUAL(tcpopt_put_tfo(opts, &n, sizeof(opts),
						       cookie, clen, exp),
					fits);
			if (!fits)
				continue;
			CU_ASSERT_EQUAL(n % 4, 0);
			CU_ASSERT_EQUAL_FATAL(test_parse_opts(opts, n, &o),
					      TCPOPT_OK);
			CU_ASSERT_TRUE(o.has_tfo && o.has_ts && o.has_mss &&
				       o.has_wscale && o.sack_perm);
			CU_ASSERT_EQUAL(o.tfo_exp, exp);
			CU_ASSERT_EQUAL(o.tfo_len, clen);
			CU_ASSERT_EQUAL(memcmp(opts + o.tfo_off - TCP_HDR_LEN,
					       cookie, clen), 0);
		}
	/* Lengths RFC 7413 does not allow are not written. */
	{
		size_t n = 0;

		CU_ASSERT_FALSE(tcpopt_put_tfo(opts, &n, sizeof(opts), cookie,
					       2, false));
		CU_ASSERT_FALSE(tcpopt_put_tfo(opts, &n, sizeof(opts), cookie,
					       5, true));
		CU_ASSERT_EQUAL(n, 0);
	}
}

static struct keys_master tfo_master;

#define TFO_LIFETIME	600
#define TFO_NOW		8646400u	/* s; epoch 14410, + 400 s */

static void
test_tfo_cookie(void)
{
	struct cookie_keys k, other;
	struct keys_master m2;
	uint8_t c[TFO_COOKIE_LEN], c2[TFO_COOKIE_LEN], bad[TFO_COOKIE_LEN];
	struct inaddr a;
	unsigned i, fam;

	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&k, &tfo_master, TFO_LIFETIME),
			      0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, TFO_NOW), 0);
	for (fam = 0; fam < 2; fam++) {
		uint8_t f = fam ? AF_INET6 : AF_INET;
		const struct inaddr *ca = fam ? &test_client6 : &test_client4;
		const struct inaddr *sa = fam ? &test_backend6 : &test_backend4;

		CU_ASSERT_EQUAL_FATAL(cookie_tfo_make(&k, f, ca, sa, TFO_NOW,
						      c), 0);
		CU_ASSERT_EQUAL(c[0] >> 7, (TFO_NOW / TFO_LIFETIME) & 1);
		CU_ASSERT_EQUAL(cookie_tfo_check(&k, f, ca, sa, TFO_NOW, c,
						 TFO_COOKIE_LEN), COOKIE_OK);
		/* The same inputs, the same cookie: the client's cache
		 * keeps working while the key does. */
		CU_ASSERT_EQUAL(cookie_tfo_make(&k, f, ca, sa, TFO_NOW + 100,
						c2), 0);
		CU_ASSERT_EQUAL(memcmp(c, c2, sizeof(c)), 0);
		/* Bound to every bit of both addresses and the family. */
		for (i = 0; i < 128; i++) {
			a = *ca;
			a.b[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
			CU_ASSERT_EQUAL(cookie_tfo_check(&k, f, &a, sa, TFO_NOW,
							 c, TFO_COOKIE_LEN),
					COOKIE_BAD);
			a = *sa;
			a.b[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
			CU_ASSERT_EQUAL(cookie_tfo_check(&k, f, ca, &a, TFO_NOW,
							 c, TFO_COOKIE_LEN),
					COOKIE_BAD);
		}
		CU_ASSERT_EQUAL(cookie_tfo_check(&k, fam ? AF_INET : AF_INET6,
						 ca, sa, TFO_NOW, c,
						 TFO_COOKIE_LEN), COOKIE_BAD);
		/* And to every bit of itself but the key id, which names
		 * an epoch: flipped, it is the wrong key. */
		for (i = 0; i < 8 * TFO_COOKIE_LEN; i++) {
			memcpy(bad, c, sizeof(bad));
			bad[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
			CU_ASSERT_NOT_EQUAL(cookie_tfo_check(&k, f, ca, sa,
							     TFO_NOW, bad,
							     TFO_COOKIE_LEN),
					    COOKIE_OK);
		}
		/* Any other length is not ours. */
		CU_ASSERT_EQUAL(cookie_tfo_check(&k, f, ca, sa, TFO_NOW, c, 4),
				COOKIE_BAD);

		/* One rotation later it still verifies, two later not. */
		CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, TFO_NOW +
						       TFO_LIFETIME), 0);
		CU_ASSERT_EQUAL(cookie_tfo_check(&k, f, ca, sa,
						 TFO_NOW + TFO_LIFETIME, c,
						 TFO_COOKIE_LEN), COOKIE_OK);
		CU_ASSERT_EQUAL(cookie_tfo_make(&k, f, ca, sa,
						TFO_NOW + TFO_LIFETIME, c2), 0);
		CU_ASSERT_NOT_EQUAL(memcmp(c, c2, sizeof(c)), 0);
		CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, TFO_NOW +
						       2 * TFO_LIFETIME), 0);
		CU_ASSERT_NOT_EQUAL(cookie_tfo_check(&k, f, ca, sa,
						     TFO_NOW + 2 * TFO_LIFETIME,
						     c, TFO_COOKIE_LEN),
				    COOKIE_OK);
		CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, TFO_NOW), 0);
	}

	/* A gateway with the same master secret verifies it; another
	 * secret does not. */
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&other, &tfo_master,
					       TFO_LIFETIME), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&other, TFO_NOW), 0);
	CU_ASSERT_EQUAL(cookie_tfo_make(&k, AF_INET, &test_client4,
					&test_backend4, TFO_NOW, c), 0);
	CU_ASSERT_EQUAL(cookie_tfo_check(&other, AF_INET, &test_client4,
					 &test_backend4, TFO_NOW, c,
					 TFO_COOKIE_LEN), COOKIE_OK);
	cookie_keys_free(&other);
	m2 = tfo_master;
	m2.secret[0] ^= 1;
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&other, &m2, TFO_LIFETIME), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&other, TFO_NOW), 0);
	CU_ASSERT_EQUAL(cookie_tfo_check(&other, AF_INET, &test_client4,
					 &test_backend4, TFO_NOW, c,
					 TFO_COOKIE_LEN), COOKIE_BAD);
	cookie_keys_free(&other);
	cookie_keys_free(&k);
}

void
register_tfo_tests(void)
{
	static const struct test_case cases[] = {
		{ "Fast Open option: both forms, every length", test_tfo_forms },
		{ "Fast Open option: duplicates refused, TSX told apart",
		  test_tfo_refusals },
		{ "Fast Open option built and read back", test_tfo_build },
		{ "Fast Open cookie: bound, rotated, shared by a fleet",
		  test_tfo_cookie },
	};
	unsigned i;

	for (i = 0; i < KEYS_MASTER_LEN; i++)
		tfo_master.secret[i] = (uint8_t)(0xa5 ^ (3 * i));
	TEST_SUITE("tfo", cases);
}
