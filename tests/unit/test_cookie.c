/*
 * gateway/cookie.h: classic SYN cookies.  Round trips over every MSS index
 * and option combination, the ISN layout, expiry by the mod-16 counter, key
 * rotation, binding to every input, and a forgery count.
 */
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <CUnit/CUnit.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "../../gateway/cookie.h"
#include "../../policy/keys.h"
#include "suites.h"
#include "testutil.h"

#define LIFETIME	600	/* s: the configuration's default */

/* A time well inside an epoch and on a counter tick: 8646400 is epoch
 * 14410 (+ 400 s) and counter 135100 (≡ 12 mod 16). */
#define T_TICK		8646400u

static struct keys_master master, other_master;

static void
fill_masters(void)
{
	unsigned i;

	for (i = 0; i < KEYS_MASTER_LEN; i++) {
		master.secret[i] = (uint8_t)(0xa0 + i);
		other_master.secret[i] = (uint8_t)(0xa0 + i);
	}
	other_master.secret[KEYS_MASTER_LEN - 1] ^= 1;
}

static void
tuple(struct cookie_tuple *t, uint8_t family)
{
	static const uint8_t c6[16] = {
		0x20, 0x01, 0x0d, 0xb8, 0, 0x0c, [15] = 2,
	};
	static const uint8_t s6[16] = {
		0x20, 0x01, 0x0d, 0xb8, 0, 0x0b, [15] = 2,
	};

	memset(t, 0, sizeof(*t));
	t->family = family;
	if (family == AF_INET) {
		memcpy(t->caddr.b, (uint8_t[]){ 198, 51, 100, 2 }, 4);
		memcpy(t->saddr.b, (uint8_t[]){ 192, 0, 2, 2 }, 4);
	} else {
		memcpy(t->caddr.b, c6, 16);
		memcpy(t->saddr.b, s6, 16);
	}
	t->cport = 40000;
	t->sport = 53;
}

/* Keys for master at now (both the current and previous epoch). */
static void
keys_at(struct cookie_keys *k, const struct keys_master *m, unsigned lifetime,
	uint64_t now)
{
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(k, m, lifetime), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(k, now), 0);
}

static enum cookie_result
check(struct cookie_keys *k, const struct cookie_tuple *t, uint32_t isn,
      uint32_t cisn, uint64_t now, unsigned tsbits)
{
	unsigned idx = 99;

	return cookie_check(k, t, isn, cisn, now, tsbits, &idx);
}

static void
test_mss_index(void)
{
	static const struct {
		uint8_t family;
		uint16_t mss;
		unsigned idx;
	} cases[] = {
		{ AF_INET, 0, 0 }, { AF_INET, 535, 0 },
		{ AF_INET, 536, 0 }, { AF_INET, 1299, 0 },
		{ AF_INET, 1300, 1 }, { AF_INET, 1439, 1 },
		{ AF_INET, 1440, 2 }, { AF_INET, 1459, 2 },
		{ AF_INET, 1460, 3 }, { AF_INET, 65535, 3 },
		{ AF_INET6, 0, 0 }, { AF_INET6, 1219, 0 },
		{ AF_INET6, 1220, 0 }, { AF_INET6, 1419, 0 },
		{ AF_INET6, 1420, 1 }, { AF_INET6, 1440, 2 },
		{ AF_INET6, 8939, 2 }, { AF_INET6, 8940, 3 },
		{ AF_INET6, 65535, 3 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned idx = cookie_mss_index(cases[i].family, cases[i].mss);

		CU_ASSERT_EQUAL(idx, cases[i].idx);
		/* The value used never exceeds what the client offered, but
		 * for the table's floor. */
		if (cases[i].mss >= cookie_mss_value(cases[i].family, 0))
			CU_ASSERT(cookie_mss_value(cases[i].family, idx) <=
				  cases[i].mss);
	}
	CU_ASSERT_EQUAL(cookie_mss_value(AF_INET, 0), 536);
	CU_ASSERT_EQUAL(cookie_mss_value(AF_INET, 3), 1460);
	CU_ASSERT_EQUAL(cookie_mss_value(AF_INET6, 0), 1220);
	CU_ASSERT_EQUAL(cookie_mss_value(AF_INET6, 3), 8940);
}

/* Every MSS index × wscale 0..14 or none × SACK × ECN × TS, both families:
 * 2 × 4 × 16 × 8 combinations, walked as one counter. */
static void
test_roundtrip(void)
{
	struct cookie_keys k;
	unsigned n, bad = 0;

	keys_at(&k, &master, LIFETIME, T_TICK);
	for (n = 0; n < 2 * 4 * 16 * 8; n++) {
		unsigned bits = n & 7, ws = (n >> 3) & 15, idx = (n >> 7) & 3;
		unsigned tsbits = ws, got = 99;
		uint32_t cisn = 0x9e3779b9u * (n + 1), isn;
		struct cookie_tuple t;
		enum cookie_result r;

		tuple(&t, n >> 9 ? AF_INET6 : AF_INET);
		if (bits & 1)
			tsbits |= COOKIE_TS_SACK;
		if (bits & 2)
			tsbits |= COOKIE_TS_ECN;
		if (bits & 4)
			tsbits |= COOKIE_TS_PRESENT;
		isn = cookie_make(&k, &t, cisn, T_TICK + 5, idx, tsbits);
		r = cookie_check(&k, &t, isn, cisn, T_TICK + 70, tsbits, &got);
		if (r != COOKIE_OK || got != idx || (isn & 3) != idx)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	cookie_keys_free(&k);
}

/* Bit 31 is the epoch parity, 30..27 the counter mod 16, 1..0 the index;
 * the same inputs give the same ISN. */
static void
test_layout(void)
{
	struct cookie_keys k;
	struct cookie_tuple t;
	uint64_t now = T_TICK + LIFETIME;	/* epoch 14411: odd */
	uint32_t a, b;

	keys_at(&k, &master, LIFETIME, now);
	tuple(&t, AF_INET);
	a = cookie_make(&k, &t, 1, now, 2, 0);
	b = cookie_make(&k, &t, 1, now, 2, 0);
	CU_ASSERT_EQUAL(a, b);
	CU_ASSERT_EQUAL(a >> 31, (now / LIFETIME) & 1);
	CU_ASSERT_EQUAL((a >> 27) & 0xf, cookie_counter(now) & 0xf);
	CU_ASSERT_EQUAL(a & 3, 2);
	CU_ASSERT_EQUAL(cookie_counter(now), now / COOKIE_TICK);
	/* Out-of-range indexes are masked, not spilled into the MAC. */
	CU_ASSERT_EQUAL(cookie_make(&k, &t, 1, now, 6, 0), a);
	cookie_keys_free(&k);
}

#define CISN		0x12345678u
#define MAX_AGE		COOKIE_MAX_AGE
#define TICKS(n)	((uint64_t)COOKIE_TICK * (n))

static void
test_expiry(void)
{
	struct cookie_keys k;
	struct cookie_tuple t;
	uint32_t isn, late;
	uint64_t t0 = T_TICK;

	keys_at(&k, &master, 86400, t0);
	tuple(&t, AF_INET6);
	CU_ASSERT_EQUAL_FATAL(t0 % COOKIE_TICK, 0);
	isn = cookie_make(&k, &t, CISN, t0, 1, 0);

	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0, 0), COOKIE_OK);
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(MAX_AGE), 0),
			COOKIE_OK);
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(MAX_AGE + 1) - 1,
			      0), COOKIE_OK);
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(MAX_AGE + 1), 0),
			COOKIE_EXPIRED);
	/* A cookie from the next tick is from the future: age 15. */
	late = cookie_make(&k, &t, CISN, t0 + COOKIE_TICK, 1, 0);
	CU_ASSERT_EQUAL(check(&k, &t, late, CISN, t0, 0), COOKIE_EXPIRED);
	/* 16 ticks later the 4-bit counter reads the same again (age 0, 1,
	 * 2), but the MAC covers the full counter. */
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(16), 0),
			COOKIE_BAD);
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(17), 0),
			COOKIE_BAD);
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(18), 0),
			COOKIE_BAD);
	CU_ASSERT_EQUAL(check(&k, &t, isn, CISN, t0 + TICKS(19), 0),
			COOKIE_EXPIRED);
	cookie_keys_free(&k);
}

static void
test_rotation(void)
{
	struct cookie_keys k, peer, stranger;
	struct cookie_tuple t;
	uint64_t boundary = (uint64_t)LIFETIME * 14411;
	uint32_t isn;

	tuple(&t, AF_INET);
	keys_at(&k, &master, LIFETIME, boundary - 1);
	isn = cookie_make(&k, &t, 7, boundary - 1, 3, COOKIE_TS_PRESENT | 7);
	CU_ASSERT_EQUAL(isn >> 31, ((boundary - 1) / LIFETIME) & 1);

	/* Past the boundary the previous epoch's key still verifies it. */
	CU_ASSERT_EQUAL(cookie_keys_tick(&k, boundary + 1), 0);
	CU_ASSERT_EQUAL(k.epoch[(boundary / LIFETIME) & 1],
			boundary / LIFETIME);
	CU_ASSERT_EQUAL(check(&k, &t, isn, 7, boundary + 1,
			      COOKIE_TS_PRESENT | 7), COOKIE_OK);

	/* A gateway sharing the master secret verifies it too, with keys
	 * derived on its own ... */
	keys_at(&peer, &master, LIFETIME, boundary + 1);
	CU_ASSERT_EQUAL(check(&peer, &t, isn, 7, boundary + 1,
			      COOKIE_TS_PRESENT | 7), COOKIE_OK);
	/* ... one with a different secret does not. */
	keys_at(&stranger, &other_master, LIFETIME, boundary + 1);
	CU_ASSERT_EQUAL(check(&stranger, &t, isn, 7, boundary + 1,
			      COOKIE_TS_PRESENT | 7), COOKIE_BAD);
	cookie_keys_free(&peer);
	cookie_keys_free(&stranger);
	cookie_keys_free(&k);

	/* With a one-tick lifetime, two epochs later the cookie is still
	 * young (age 2), but its key is gone: the slot holds a newer epoch. */
	keys_at(&k, &master, COOKIE_TICK, T_TICK + COOKIE_TICK - 1);
	isn = cookie_make(&k, &t, 7, T_TICK + COOKIE_TICK - 1, 0, 0);
	CU_ASSERT_EQUAL(cookie_keys_tick(&k, T_TICK + COOKIE_TICK), 0);
	CU_ASSERT_EQUAL(check(&k, &t, isn, 7, T_TICK + COOKIE_TICK, 0),
			COOKIE_OK);
	CU_ASSERT_EQUAL(cookie_keys_tick(&k, T_TICK + 2 * COOKIE_TICK), 0);
	CU_ASSERT_EQUAL(check(&k, &t, isn, 7, T_TICK + 2 * COOKIE_TICK, 0),
			COOKIE_BAD);
	cookie_keys_free(&k);
}

/*
 * Across a key epoch's boundary nothing changes: keys ticked 10 s before
 * it hold the next epoch's key already, so that classic, Fast Open and
 * TCPCT cookies made just past it, before any tick, verify at a gateway
 * that ticked there, and those made just before it still do; until
 * COOKIE_KEY_LEAD s before it, the previous epoch's key stands.  A gateway
 * whose clock runs behind takes a cookie of the next epoch.
 */
static void
test_boundary(void)
{
	static const uint8_t ci[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint64_t b = (uint64_t)LIFETIME * 14411, e = b / LIFETIME;
	struct tcpct_cookie_in in = {
		.snd_nxt = 11, .rcv_nxt = 22, .tsval = (uint32_t)(b * 1000),
		.ci = ci, .clen = sizeof(ci),
	};
	uint8_t tfo[TFO_COOKIE_LEN], cr[sizeof(ci)];
	struct cookie_keys k, peer;
	uint32_t before, after;

	tuple(&in.t, AF_INET);
	keys_at(&k, &master, LIFETIME, b - COOKIE_KEY_LEAD - 1);
	CU_ASSERT_EQUAL(k.epoch[(e + 1) & 1], e - 1);
	CU_ASSERT_EQUAL(cookie_keys_tick(&k, b - 10), 0);
	CU_ASSERT(k.valid[e & 1] && k.epoch[e & 1] == e);
	before = cookie_make(&k, &in.t, 7, b - 1, 1, 0);
	after = cookie_make(&k, &in.t, 9, b, 2, 0);
	CU_ASSERT_EQUAL(after >> COOKIE_ISN_KEYID_SHIFT, e & 1);
	CU_ASSERT_EQUAL(cookie_tfo_make(&k, AF_INET, &in.t.caddr, &in.t.saddr,
					b, tfo), 0);
	CU_ASSERT_EQUAL(cookie_tcpct_make(&k, &in, b, cr), 0);
	keys_at(&peer, &master, LIFETIME, b + 1);
	CU_ASSERT_EQUAL(check(&peer, &in.t, after, 9, b + 1, 0), COOKIE_OK);
	CU_ASSERT_EQUAL(check(&peer, &in.t, before, 7, b + 1, 0), COOKIE_OK);
	CU_ASSERT_EQUAL(check(&k, &in.t, after, 9, b, 0), COOKIE_OK);
	CU_ASSERT_EQUAL(check(&k, &in.t, before, 7, b, 0), COOKIE_OK);
	CU_ASSERT_EQUAL(cookie_tfo_check(&peer, AF_INET, &in.t.caddr,
					 &in.t.saddr, b + 1, tfo, sizeof(tfo)),
			COOKIE_OK);
	CU_ASSERT_EQUAL(cookie_tcpct_check(&peer, &in, b * 1000 + 500, cr),
			COOKIE_OK);
	/* The peer's clock ahead of ours: its cookie of the next epoch. */
	after = cookie_make(&peer, &in.t, 13, b + 1, 0, 0);
	CU_ASSERT_EQUAL(check(&k, &in.t, after, 13, b - 1, 0), COOKIE_OK);
	cookie_keys_free(&peer);
	cookie_keys_free(&k);
}

/* A gateway's keys for m, with those of m's second secret beside them. */
static void
gateway_keys(struct cookie_keys *k, struct cookie_keys *alt,
	     const struct keys_master *m, uint64_t now)
{
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(k, m, LIFETIME), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(alt, m, LIFETIME), 0);
	k->alt = alt;
	alt->accepted = true;
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(k, now), 0);
}

/* Whether a classic and a TFO cookie made by `from` verify at `at`. */
static bool
both_verify(struct cookie_keys *from, struct cookie_keys *at,
	    const struct cookie_tuple *t, uint64_t now)
{
	uint8_t c[TFO_COOKIE_LEN];
	uint32_t isn = cookie_make(from, t, 7, now, 2, 0);

	CU_ASSERT_EQUAL_FATAL(cookie_tfo_make(from, t->family, &t->caddr,
					      &t->saddr, now, c), 0);
	return check(at, t, isn, 7, now, 0) == COOKIE_OK &&
	       cookie_tfo_check(at, t->family, &t->caddr, &t->saddr, now, c,
				sizeof(c)) == COOKIE_OK;
}

static void
test_secret_rotation(void)
{
	struct keys_master a = master, ab = master, ba = other_master;
	struct keys_master b = other_master;
	struct cookie_keys g1, g1alt, g2, g2alt;
	struct cookie_tuple t;
	uint64_t now = (uint64_t)LIFETIME * 14411 + 5;

	/* A rotation from secret A to B, one gateway at a time: files A;
	 * then A,B; then B,A; then B.  At every step each gateway verifies
	 * what the other makes. */
	memcpy(ab.accept, other_master.secret, KEYS_MASTER_LEN);
	ab.has_accept = true;
	memcpy(ba.accept, master.secret, KEYS_MASTER_LEN);
	ba.has_accept = true;
	tuple(&t, AF_INET);
	gateway_keys(&g1, &g1alt, &a, now);
	gateway_keys(&g2, &g2alt, &a, now);
	CU_ASSERT(both_verify(&g1, &g2, &t, now) && both_verify(&g2, &g1, &t, now));

	cookie_keys_rekey(&g2, &ab);		/* g2: A, B */
	CU_ASSERT_EQUAL(cookie_keys_tick(&g2, now), 0);
	CU_ASSERT(both_verify(&g1, &g2, &t, now) && both_verify(&g2, &g1, &t, now));

	cookie_keys_rekey(&g1, &ab);		/* g1: A, B */
	cookie_keys_rekey(&g2, &ba);		/* g2: B, A */
	CU_ASSERT_EQUAL(cookie_keys_tick(&g1, now), 0);
	CU_ASSERT_EQUAL(cookie_keys_tick(&g2, now), 0);
	CU_ASSERT(both_verify(&g1, &g2, &t, now) && both_verify(&g2, &g1, &t, now));

	cookie_keys_rekey(&g1, &b);		/* g1: B alone */
	CU_ASSERT_EQUAL(cookie_keys_tick(&g1, now), 0);
	CU_ASSERT(both_verify(&g1, &g2, &t, now) && both_verify(&g2, &g1, &t, now));

	/* B alone no longer takes what A made; B, A still does. */
	cookie_keys_rekey(&g2, &a);
	CU_ASSERT_EQUAL(cookie_keys_tick(&g2, now), 0);
	CU_ASSERT_FALSE(both_verify(&g2, &g1, &t, now));
	cookie_keys_rekey(&g1, &ba);
	CU_ASSERT_EQUAL(cookie_keys_tick(&g1, now), 0);
	CU_ASSERT(both_verify(&g2, &g1, &t, now));
	cookie_keys_free(&g1);
	cookie_keys_free(&g1alt);
	cookie_keys_free(&g2);
	cookie_keys_free(&g2alt);
}

/* The cookie is bound to every input: any change is refused. */
static void
test_binding(void)
{
	struct cookie_keys k;
	struct cookie_tuple t, u;
	uint64_t now = T_TICK + 30;
	unsigned tsb = COOKIE_TS_PRESENT | COOKIE_TS_SACK | 7, bit, v;
	uint32_t isn, cisn = 0xfffffffe;
	unsigned flips_ok = 0, ts_ok = 0;

	keys_at(&k, &master, LIFETIME, now);
	tuple(&t, AF_INET);
	isn = cookie_make(&k, &t, cisn, now, 2, tsb);
	CU_ASSERT_EQUAL_FATAL(check(&k, &t, isn, cisn, now, tsb), COOKIE_OK);

	for (bit = 0; bit < 32; bit++)
		if (check(&k, &t, isn ^ (1u << bit), cisn, now, tsb) ==
		    COOKIE_OK)
			flips_ok++;
	CU_ASSERT_EQUAL(flips_ok, 0);

	CU_ASSERT_EQUAL(check(&k, &t, isn, cisn + 1, now, tsb), COOKIE_BAD);
	CU_ASSERT_EQUAL(check(&k, &t, isn, cisn ^ 0x80000000u, now, tsb),
			COOKIE_BAD);
	u = t;
	u.cport++;
	CU_ASSERT_EQUAL(check(&k, &u, isn, cisn, now, tsb), COOKIE_BAD);
	u = t;
	u.sport = 54;
	CU_ASSERT_EQUAL(check(&k, &u, isn, cisn, now, tsb), COOKIE_BAD);
	u = t;
	u.caddr.b[3] ^= 1;
	CU_ASSERT_EQUAL(check(&k, &u, isn, cisn, now, tsb), COOKIE_BAD);
	u = t;
	u.saddr.b[0] ^= 0x80;
	CU_ASSERT_EQUAL(check(&k, &u, isn, cisn, now, tsb), COOKIE_BAD);
	u = t;
	u.family = AF_INET6;	/* same 16 bytes, other family */
	CU_ASSERT_EQUAL(check(&k, &u, isn, cisn, now, tsb), COOKIE_BAD);
	u = t;			/* client and server swapped */
	u.caddr = t.saddr;
	u.saddr = t.caddr;
	u.cport = t.sport;
	u.sport = t.cport;
	CU_ASSERT_EQUAL(check(&k, &u, isn, cisn, now, tsb), COOKIE_BAD);

	for (v = 0; v <= (COOKIE_TS_BITS | COOKIE_TS_PRESENT); v++)
		if (v != tsb && check(&k, &t, isn, cisn, now, v) == COOKIE_OK)
			ts_ok++;
	CU_ASSERT_EQUAL(ts_ok, 0);
	cookie_keys_free(&k);
}

/* A wrong key-id bit is BAD (the other epoch's key) or NO_KEY (none
 * loaded), never OK. */
static void
test_key_id(void)
{
	struct cookie_keys k;
	struct cookie_tuple t;
	uint64_t now = T_TICK + 30;
	uint32_t isn, stale;
	enum cookie_result r;

	tuple(&t, AF_INET6);
	keys_at(&k, &master, LIFETIME, now);
	isn = cookie_make(&k, &t, 1, now, 0, 0);
	r = check(&k, &t, isn ^ 0x80000000u, 1, now, 0);
	CU_ASSERT(r == COOKIE_BAD || r == COOKIE_NO_KEY);
	CU_ASSERT_EQUAL(r, COOKIE_BAD);
	cookie_keys_free(&k);

	/* In epoch 0 there is no previous epoch, so no key in the slot. */
	keys_at(&k, &master, LIFETIME, 100);
	isn = cookie_make(&k, &t, 1, 100, 0, 0);
	CU_ASSERT_EQUAL(check(&k, &t, isn, 1, 100, 0), COOKIE_OK);
	CU_ASSERT_EQUAL(check(&k, &t, isn ^ 0x80000000u, 1, 100, 0),
			COOKIE_NO_KEY);
	cookie_keys_free(&k);

	/* Keys not ticked for two epochs: the slot's key is stale and is not
	 * used, even though 16 ticks later the 4-bit counter looks fresh. */
	keys_at(&k, &master, 512, T_TICK);
	stale = cookie_make(&k, &t, 1, T_TICK, 0, 0);
	CU_ASSERT_EQUAL(check(&k, &t, stale, 1, T_TICK + 1024, 0),
			COOKIE_NO_KEY);
	cookie_keys_free(&k);

	/* Keys never ticked: nothing verifies. */
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&k, &master, LIFETIME), 0);
	CU_ASSERT_EQUAL(check(&k, &t, isn, 1, 100, 0), COOKIE_NO_KEY);
	CU_ASSERT_EQUAL(check(&k, &t, isn ^ 0x80000000u, 1, 100, 0),
			COOKIE_NO_KEY);
	cookie_keys_free(&k);
}

static double
elapsed(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) +
	       (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/*
 * 1,000,000 random ISNs for one tuple and client ISN.  A guess must get
 * the key-id bit right (both keys are loaded, so either passes), the
 * counter within MAX_AGE (3 of 16) and the 25-bit MAC: about
 * 1e6 × 3/16 × 2^-25 ≈ 0.006 accepted.  Then 1,000,000 guesses with the
 * key id and counter right, so that each one is a MAC trial: ≈ 0.03.
 * Either way more than 5 would mean a MAC much weaker than 25 bits.
 */
#define FORGERY_TRIES	1000000u
static void
test_forgery(void)
{
	unsigned res[COOKIE_RESULT_MAX] = { 0 }, hits = 0, i;
	struct cookie_keys k;
	struct cookie_tuple t;
	struct timespec t0;
	uint64_t now = T_TICK + LIFETIME + 10;
	uint32_t prefix;
	struct rng r;

	rng_init(&r, 4);
	tuple(&t, AF_INET);
	keys_at(&k, &master, LIFETIME, now);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < FORGERY_TRIES; i++)
		res[check(&k, &t, rng32(&r), 0x01020304, now, 0)]++;
	prefix = cookie_make(&k, &t, 0x01020304, now, 0, 0) & 0xf8000000u;
	for (i = 0; i < FORGERY_TRIES; i++)
		if (check(&k, &t, prefix | (rng32(&r) & 0x07ffffffu),
			  0x01020304, now, 0) == COOKIE_OK)
			hits++;
	printf("\n    forgery: %u random ISNs: %u ok, %u bad, %u expired, "
	       "%u no key; %u MAC trials: %u ok; %.2f s ",
	       FORGERY_TRIES, res[COOKIE_OK], res[COOKIE_BAD],
	       res[COOKIE_EXPIRED], res[COOKIE_NO_KEY], FORGERY_TRIES, hits,
	       elapsed(&t0));
	CU_ASSERT(res[COOKIE_OK] <= 5);
	CU_ASSERT(hits <= 5);
	/* The counter check let through about 3/16 of the random ones. */
	CU_ASSERT(res[COOKIE_BAD] > FORGERY_TRIES / 8 &&
		  res[COOKIE_BAD] < FORGERY_TRIES / 4);
	cookie_keys_free(&k);
}

/* OpenSSL's SipHash-2-4-64 of msg under key: the oracle for syncookie.h's,
 * which the kernel shield compiles too. */
static uint64_t
openssl_siphash(const uint8_t key[COOKIE_KEY_LEN], const uint8_t *msg,
		size_t len, uint8_t out[8])
{
	size_t outlen = 8, got = 0;
	OSSL_PARAM params[] = {
		OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &outlen),
		OSSL_PARAM_END,
	};
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	uint64_t v = 0;
	int i;

	CU_ASSERT_FATAL(ctx != NULL);
	CU_ASSERT_FATAL(EVP_MAC_init(ctx, key, COOKIE_KEY_LEN, params) == 1);
	CU_ASSERT_FATAL(EVP_MAC_update(ctx, msg, len) == 1);
	CU_ASSERT_FATAL(EVP_MAC_final(ctx, out, &got, 8) == 1 && got == 8);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	for (i = 7; i >= 0; i--)
		v = v << 8 | out[i];
	return v;
}

/*
 * syncookie.h's SipHash and MAC, against OpenSSL's over random keys and
 * inputs: key 00..0f with message 00..2f, then 2,000 random ones, each MAC the
 * first four bytes of OpenSSL's hash read big-endian, as tcpctd's cookies
 * always were (gateways of either build verify each other's).
 */
static void
test_siphash(void)
{
	uint8_t key[COOKIE_KEY_LEN], msg[COOKIE_MSG_LEN], out[8];
	struct siphash_key k;
	struct cookie_input in;
	struct rng r;
	unsigned i, n;

	for (i = 0; i < COOKIE_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < COOKIE_MSG_LEN; i++)
		msg[i] = (uint8_t)i;
	k.k0 = siphash_le64(key);
	k.k1 = siphash_le64(key + 8);
	CU_ASSERT_EQUAL(siphash24_msg(&k, msg),
			openssl_siphash(key, msg, sizeof(msg), out));
	rng_init(&r, 0x5195);
	for (n = 0; n < 2000; n++) {
		uint32_t counter = rng32(&r);
		unsigned mss = n & 3, ts = (n >> 2) & 0x7f;

		for (i = 0; i < COOKIE_KEY_LEN; i++)
			key[i] = (uint8_t)rng32(&r);
		k.k0 = siphash_le64(key);
		k.k1 = siphash_le64(key + 8);
		memset(&in, 0, sizeof(in));
		for (i = 0; i < 16; i++) {
			in.caddr[i] = (uint8_t)rng32(&r);
			in.saddr[i] = (uint8_t)rng32(&r);
		}
		in.cport = (uint16_t)rng32(&r);
		in.sport = (uint16_t)rng32(&r);
		in.cisn = rng32(&r);
		in.family = n & 1 ? COOKIE_FAMILY_INET : COOKIE_FAMILY_INET6;
		memcpy(msg, in.caddr, 16);
		memcpy(msg + 16, in.saddr, 16);
		msg[32] = (uint8_t)(in.cport >> 8);
		msg[33] = (uint8_t)in.cport;
		msg[34] = (uint8_t)(in.sport >> 8);
		msg[35] = (uint8_t)in.sport;
		for (i = 0; i < 4; i++) {
			msg[36 + i] = (uint8_t)(in.cisn >> (24 - 8 * i));
			msg[40 + i] = (uint8_t)(counter >> (24 - 8 * i));
		}
		msg[44] = in.family;
		msg[45] = (uint8_t)mss;
		msg[46] = (uint8_t)ts;
		msg[47] = 0;
		CU_ASSERT_EQUAL_FATAL(siphash24_msg(&k, msg),
				      openssl_siphash(key, msg, sizeof(msg),
						      out));
		CU_ASSERT_EQUAL_FATAL(cookie_mac25(&k, &in, counter, mss, ts),
				      ((uint32_t)out[0] << 24 |
				       (uint32_t)out[1] << 16 |
				       (uint32_t)out[2] << 8 | out[3]) &
					      COOKIE_ISN_MAC_MASK);
	}
}

static void
test_result_names(void)
{
	unsigned i, j;

	for (i = 0; i < COOKIE_RESULT_MAX; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(cookie_result_name(i));
		for (j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(cookie_result_name(i),
						   cookie_result_name(j));
	}
	CU_ASSERT_STRING_EQUAL(cookie_result_name(COOKIE_RESULT_MAX),
			       "unknown");
}

void
register_cookie_tests(void)
{
	static const struct test_case cases[] = {
		{ "MSS index: largest entry <= MSS", test_mss_index },
		{ "round trip: index x wscale x SACK x ECN x TS, v4 and v6",
		  test_roundtrip },
		{ "ISN layout and determinism", test_layout },
		{ "expiry after COOKIE_MAX_AGE ticks, mod-16 counter",
		  test_expiry },
		{ "a key epoch's boundary: the next key there before it",
		  test_boundary },
		{ "key rotation: previous epoch accepted, other secret not",
		  test_rotation },
		{ "a secret rotated one gateway at a time: each verifies the "
		  "other's cookies at every step", test_secret_rotation },
		{ "bound to ISN bits, client ISN, ports, addresses, tsbits",
		  test_binding },
		{ "wrong key-id bit: BAD or NO_KEY, never OK", test_key_id },
		{ "forgery: 2 x 1,000,000 guesses", test_forgery },
		{ "SipHash-2-4 and the MAC against OpenSSL's", test_siphash },
		{ "result names", test_result_names },
	};

	fill_masters();
	TEST_SUITE("cookie", cases);
}
