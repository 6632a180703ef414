/*
 * Helpers shared by the unit tests: a seeded PRNG so that a failing random
 * test can be replayed (TCPCTD_TEST_SEED=n), and suite registration that
 * gives up loudly instead of running half a registry.
 */
#ifndef TESTS_UNIT_TESTUTIL_H
#define TESTS_UNIT_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../nfq/pkt.h"
#include "../../nfq/tcpopt.h"

/* splitmix64 (Steele, Lea, Flood 2014): tiny, full period, good enough. */
struct rng {
	uint64_t s;
};

/* The seed every random test starts from; run.c prints it. */
/* The lab's addresses (HACKING.md, the lab): a client and a backend of
 * each family. */
#define TEST_ADDR6(last_group)	{ { 0x20, 0x01, 0x0d, 0xb8, 0, last_group, \
				    0, 0, 0, 0, 0, 0, 0, 0, 0, 2 } }
static const struct inaddr test_client4 __attribute__((unused)) = { { 198, 51, 100, 2 } };
static const struct inaddr test_backend4 __attribute__((unused)) = { { 192, 0, 2, 2 } };
static const struct inaddr test_client6 __attribute__((unused)) = TEST_ADDR6(0x0c);
static const struct inaddr test_backend6 __attribute__((unused)) = TEST_ADDR6(0x0b);

static inline uint64_t
test_seed(void)
{
	const char *e = getenv("TCPCTD_TEST_SEED");

	return e && *e ? strtoull(e, NULL, 0) : 0x7463746364ull;
}

static inline void
rng_init(struct rng *r, uint64_t salt)
{
	r->s = test_seed() ^ (salt * 0x9e3779b97f4a7c15ull);
}

static inline uint64_t
rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint32_t
rng32(struct rng *r)
{
	return (uint32_t)(rng_next(r) >> 32);
}

/* Uniform in 0..n-1 (n > 0); the bias for n ≪ 2^32 does not matter here. */
static inline uint32_t
rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((uint64_t)rng32(r) * n) >> 32);
}

static inline void
rng_bytes(struct rng *r, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)rng_next(r);
}

struct test_case {
	const char *name;
	CU_TestFunc fn;
};

/* Adds suite name with its tests; exits when CUnit cannot. */
static inline void
test_add_suite(const char *name, const struct test_case *tc, size_t n)
{
	CU_pSuite s = CU_add_suite(name, NULL, NULL);
	size_t i;

	if (!s) {
		fprintf(stderr, "CU_add_suite %s: %s\n", name,
			CU_get_error_msg());
		exit(2);
	}
	for (i = 0; i < n; i++)
		if (!CU_add_test(s, tc[i].name, tc[i].fn)) {
			fprintf(stderr, "CU_add_test %s: %s\n", tc[i].name,
				CU_get_error_msg());
			exit(2);
		}
}

/* Parses an option area from a heap copy of exactly len bytes, so that
 * ASan sees a read past it; options start at TCP_HDR_LEN. */
static inline enum tcpopt_verdict
test_parse_opts(const uint8_t *opts, size_t len, struct tcpopt *o)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum tcpopt_verdict v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
	memcpy(copy, opts, len);
	v = tcpopt_parse(copy, len, TCP_HDR_LEN, o);
	free(copy);
	return v;
}

/* A new file under /tmp holding text; its path into path (cap bytes).
 * The test removes it. */
static inline void
test_tmp_file(char *path, size_t cap, const char *text)
{
	int fd;

	snprintf(path, cap, "/tmp/tcpctd-unit.XXXXXX");
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, text, strlen(text)) ==
			(ssize_t)strlen(text));
	close(fd);
}

#define TEST_SUITE(name, cases) \
	test_add_suite(name, cases, sizeof(cases) / sizeof(cases[0]))

#endif
