/*
 * gateway/limit.c: keys masked to their prefix, concurrent counts that
 * refuse at the limit and come back on leave, one client's count unmoved by
 * others (however many share a slot in one half), per-second rates, and
 * byte budgets.
 */
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../gateway/limit.h"
#include "suites.h"
#include "testutil.h"

static void
test_limit_key(void)
{
	struct inaddr a = { { 198, 51, 100, 77 } }, b = { { 198, 51, 100, 9 } };
	struct inaddr c = { { 198, 51, 101, 77 } };
	struct inaddr v6a = TEST_ADDR6(0x0c), v6b = TEST_ADDR6(0x0c);
	struct limit_key ka, kb;

	ka = limit_key(LIMIT_PREFIX, 3, AF_INET, &a, 24);
	kb = limit_key(LIMIT_PREFIX, 3, AF_INET, &b, 24);
	CU_ASSERT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	CU_ASSERT_EQUAL(ka.addr.b[3], 0);
	CU_ASSERT_EQUAL(ka.service, 3);
	kb = limit_key(LIMIT_PREFIX, 3, AF_INET, &c, 24);
	CU_ASSERT_NOT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	/* /23 takes 100 and 101 together; /20 keeps 4 bits of the third. */
	ka = limit_key(LIMIT_PREFIX, 3, AF_INET, &a, 23);
	kb = limit_key(LIMIT_PREFIX, 3, AF_INET, &c, 23);
	CU_ASSERT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	ka = limit_key(LIMIT_PREFIX, 0, AF_INET, &a, 20);
	CU_ASSERT_EQUAL(ka.addr.b[2], 96);
	/* An address key keeps every bit, whatever prefix is passed. */
	ka = limit_key(LIMIT_ADDR, 0, AF_INET, &a, 24);
	kb = limit_key(LIMIT_ADDR, 0, AF_INET, &b, 24);
	CU_ASSERT_NOT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	CU_ASSERT_EQUAL(ka.addr.b[3], 77);
	/* IPv6 /56: the eighth byte and on are cleared. */
	v6a.b[7] = 0x42;
	v6a.b[6] = 0x11;
	v6b.b[6] = 0x11;
	ka = limit_key(LIMIT_PREFIX, 0, AF_INET6, &v6a, 56);
	kb = limit_key(LIMIT_PREFIX, 0, AF_INET6, &v6b, 56);
	CU_ASSERT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	CU_ASSERT_EQUAL(ka.addr.b[6], 0x11);
	CU_ASSERT_EQUAL(ka.addr.b[15], 0);
	/* Kinds and families are apart. */
	ka = limit_key(LIMIT_ADDR, 0, AF_INET, &a, 24);
	kb = limit_key(LIMIT_PREFIX, 0, AF_INET, &a, 32);
	CU_ASSERT_NOT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
}

static void
test_limit_enter_leave(void)
{
	struct inaddr a = { { 198, 51, 100, 2 } };
	struct limit_key k = limit_key(LIMIT_ADDR, 0, AF_INET, &a, 32);
	struct limits l;
	unsigned i;

	CU_ASSERT_EQUAL(limits_init(&l, 1000, 1), -1);	/* not a power */
	CU_ASSERT_EQUAL_FATAL(limits_init(&l, 1024, 1), 0);
	for (i = 0; i < 25; i++)
		CU_ASSERT_TRUE(limit_enter(&l, &k, 25));
	CU_ASSERT_EQUAL(limit_count(&l, &k), 25);
	CU_ASSERT_FALSE(limit_enter(&l, &k, 25));
	CU_ASSERT_EQUAL(limit_count(&l, &k), 25);	/* refused: not counted */
	limit_leave(&l, &k);
	CU_ASSERT_TRUE(limit_enter(&l, &k, 25));
	CU_ASSERT_FALSE(limit_enter(&l, &k, 25));
	/* No limit: always in. */
	CU_ASSERT_TRUE(limit_enter(&l, &k, 0));
	for (i = 0; i < 26; i++)
		limit_leave(&l, &k);
	CU_ASSERT_EQUAL(limit_count(&l, &k), 0);
	limits_free(&l);
}

/* Other clients never lower a client's count, and with 300 of them in
 * 1024 slots a half, nearly every one still sees only itself. */
static void
test_limit_crowd(void)
{
	struct inaddr a = { { 198, 51, 100, 2 } };
	struct limit_key me = limit_key(LIMIT_ADDR, 0, AF_INET, &a, 32);
	struct limits l;
	unsigned i, exact = 0;

	CU_ASSERT_EQUAL_FATAL(limits_init(&l, 1024, 99), 0);
	for (i = 0; i < 3; i++)
		CU_ASSERT_TRUE(limit_enter(&l, &me, 0));
	for (i = 0; i < 300; i++) {
		struct inaddr o = { { 198, 18, (uint8_t)(i >> 8), (uint8_t)i } };
		struct limit_key k = limit_key(LIMIT_ADDR, 0, AF_INET, &o, 32);

		CU_ASSERT_TRUE(limit_enter(&l, &k, 0));
		exact += limit_count(&l, &k) == 1;
	}
	CU_ASSERT(limit_count(&l, &me) >= 3);
	CU_ASSERT(exact >= 270);
	limits_free(&l);
}

static void
test_limit_rate(void)
{
	struct inaddr a = { { 198, 51, 100, 2 } };
	struct limit_key k = limit_key(LIMIT_CONN_RATE, 0, AF_INET, &a, 24);
	struct limits l;
	unsigned i;

	CU_ASSERT_EQUAL_FATAL(limits_init(&l, 1024, 5), 0);
	for (i = 0; i < 100; i++)
		CU_ASSERT_TRUE(limit_rate(&l, &k, 7000, 100));
	CU_ASSERT_FALSE(limit_rate(&l, &k, 7000, 100));
	CU_ASSERT_FALSE(limit_rate(&l, &k, 7000, 100));
	/* The next second starts again. */
	CU_ASSERT_TRUE(limit_rate(&l, &k, 7001, 100));
	for (i = 1; i < 100; i++)
		CU_ASSERT_TRUE(limit_rate(&l, &k, 7001, 100));
	/* A worker whose batch began in the second before counts in this
	 * one: it starts neither second anew. */
	CU_ASSERT_FALSE(limit_rate(&l, &k, 7000, 100));
	CU_ASSERT_FALSE(limit_rate(&l, &k, 7001, 100));
	/* A clock set back further starts afresh. */
	CU_ASSERT_TRUE(limit_rate(&l, &k, 6000, 100));
	/* 0 is no limit. */
	for (i = 0; i < 1000; i++)
		CU_ASSERT_TRUE(limit_rate(&l, &k, 7001, 0));
	limits_free(&l);
}

/* Budgets: one second's worth at once, drained back with time only, never
 * by someone else's spending, however much of it lands in the key's
 * slots. */
static void
test_limit_spend(void)
{
	struct inaddr a = { { 198, 51, 100, 2 } };
	struct limit_key k = limit_key(LIMIT_TXN_RATE, 0, AF_INET, &a, 24);
	struct limits l;
	unsigned i;

	CU_ASSERT_EQUAL_FATAL(limits_init(&l, 1024, 11), 0);
	CU_ASSERT_TRUE(limit_spend(&l, &k, 5000, 600, 1000));
	CU_ASSERT_FALSE(limit_spend(&l, &k, 5000, 600, 1000));
	/* Refused: nothing was spent. */
	CU_ASSERT_TRUE(limit_spend(&l, &k, 5000, 400, 1000));
	CU_ASSERT_FALSE(limit_spend(&l, &k, 5000, 1, 1000));
	/* A worker whose clock reads a little behind sees no drain. */
	CU_ASSERT_FALSE(limit_spend(&l, &k, 4990, 1, 1000));
	/* 1000 a second: 300 back in 300 ms, a ms at a time as well. */
	CU_ASSERT_FALSE(limit_spend(&l, &k, 5299, 300, 1000));
	CU_ASSERT_TRUE(limit_spend(&l, &k, 5300, 300, 1000));
	for (i = 1; i <= 10; i++)
		CU_ASSERT_TRUE(limit_spend(&l, &k, 5300 + i, 1, 1000));
	CU_ASSERT_FALSE(limit_spend(&l, &k, 5310, 1, 1000));
	/* Never more than one second's worth, however long it rested. */
	CU_ASSERT_FALSE(limit_spend(&l, &k, 60000, 1001, 1000));
	CU_ASSERT_TRUE(limit_spend(&l, &k, 60000, 1000, 1000));
	/* 20,000 other prefixes spend all theirs in 2 × 1024 slots: every
	 * slot of k's is shared many times over, and k gets nothing back. */
	for (i = 0; i < 20000; i++) {
		struct inaddr o = { { 198, (uint8_t)(18 + (i >> 16)),
				      (uint8_t)(i >> 8), (uint8_t)i } };
		struct limit_key ko = limit_key(LIMIT_TXN_RATE, 0, AF_INET, &o,
						32);

		limit_spend(&l, &ko, 60000, 1000, 1000);
	}
	CU_ASSERT_FALSE(limit_spend(&l, &k, 60000, 1, 1000));
	/* Time drains the crowd too. */
	CU_ASSERT_TRUE(limit_spend(&l, &k, 60000 + 20000 * 1000, 1000, 1000));
	/* A budget of 0 is nothing. */
	CU_ASSERT_FALSE(limit_spend(&l, &k, 60000 + 40000 * 1000, 1, 0));
	limits_free(&l);
}

void
register_limit_tests(void)
{
	static const struct test_case cases[] = {
		{ "keys: prefixes of v4 and v6, kinds apart", test_limit_key },
		{ "concurrent: refuse at the limit, back on leave",
		  test_limit_enter_leave },
		{ "a crowd does not take a client's count", test_limit_crowd },
		{ "events per second, next second anew", test_limit_rate },
		{ "budgets: a second's worth, drained by time, not others",
		  test_limit_spend },
	};

	TEST_SUITE("limit", cases);
}
