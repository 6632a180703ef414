#include "limit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "../shield/ratelimit.h"

int
limits_init(struct limits *l, uint32_t slots, uint64_t seed)
{
	memset(l, 0, sizeof(*l));
	if (!slots || (slots & (slots - 1))) {
		errno = EINVAL;
		return -1;
	}
	l->count = mem_resident(2 * (size_t)slots, sizeof(*l->count));
	l->rate = mem_resident(2 * (size_t)slots, sizeof(*l->rate));
	l->level = mem_resident(2 * (size_t)slots, sizeof(*l->level));
	if (!l->count || !l->rate || !l->level) {
		limits_free(l);
		errno = ENOMEM;
		return -1;
	}
	l->mask = slots - 1;
	l->seed = seed;
	return 0;
}

/* What a block holds before its counts: whose they are. */
struct limits_head {
	uint64_t magic;
	uint64_t seed;
	uint32_t slots;
	uint32_t pad;
};

#define LIMITS_MAGIC	0x7463746c696d3031ull	/* "tctlim01" */

size_t
limits_bytes(uint32_t slots)
{
	return sizeof(struct limits_head) +
	       2 * (size_t)slots * (sizeof(uint32_t) + sizeof(uint64_t));
}

int
limits_place(struct limits *l, uint32_t slots, uint64_t seed, void *block,
	     bool keep)
{
	struct limits_head *h = block;
	uint8_t *b = (uint8_t *)(h + 1);

	memset(l, 0, sizeof(*l));
	if (!slots || (slots & (slots - 1))) {
		errno = EINVAL;
		return -1;
	}
	l->rate = mem_resident(2 * (size_t)slots, sizeof(*l->rate));
	if (!l->rate) {
		errno = ENOMEM;
		return -1;
	}
	/* The levels (8 bytes) first, for their alignment. */
	l->level = (_Atomic uint64_t *)b;
	l->count = (_Atomic uint32_t *)(b + 2 * (size_t)slots *
					sizeof(uint64_t));
	l->mask = slots - 1;
	l->block = block;
	if (keep && h->magic == LIMITS_MAGIC && h->slots == slots) {
		l->seed = h->seed;
		l->adopted = true;
		return 0;
	}
	memset(block, 0, limits_bytes(slots));
	h->magic = LIMITS_MAGIC;
	h->seed = l->seed = seed;
	h->slots = slots;
	return 0;
}

void
limits_share_rate(struct limits *l, _Atomic uint64_t *rate)
{
	if (!l->rate_shared)
		free((void *)l->rate);
	l->rate = rate;
	l->rate_shared = true;
}

void
limits_free(struct limits *l)
{
	if (!l->block) {
		free((void *)l->count);
		free((void *)l->level);
	}
	if (!l->rate_shared)
		free((void *)l->rate);
	memset(l, 0, sizeof(*l));
}

struct limit_key
limit_key(enum limit_kind kind, unsigned service, uint8_t family,
	  const struct inaddr *addr, unsigned prefix)
{
	struct limit_key k;
	unsigned bits = family == AF_INET ? 32 : 128;

	memset(&k, 0, sizeof(k));
	k.kind = (uint8_t)kind;
	k.family = family;
	k.service = (uint8_t)service;
	if (kind == LIMIT_ADDR || kind == LIMIT_PENDING_ADDR || prefix > bits)
		prefix = bits;
	limit_prefix(addr->b, prefix, k.addr.b);
	return k;
}

/* The key's slot in each half: [0, slots) and [slots, 2 × slots). */
static void
slots_of(const struct limits *l, const struct limit_key *k, uint32_t s[2])
{
	limit_slots(l->seed, l->mask, k->addr.b, k->kind, k->family,
		    k->service, s);
}

uint32_t
limit_count(const struct limits *l, const struct limit_key *k)
{
	uint32_t s[2], a, b;

	slots_of(l, k, s);
	a = atomic_load_explicit(&l->count[s[0]], memory_order_relaxed);
	b = atomic_load_explicit(&l->count[s[1]], memory_order_relaxed);
	return a < b ? a : b;
}

bool
limit_enter(struct limits *l, const struct limit_key *k, unsigned max)
{
	uint32_t s[2];

	if (max && limit_count(l, k) >= max)
		return false;
	slots_of(l, k, s);
	atomic_fetch_add_explicit(&l->count[s[0]], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->count[s[1]], 1, memory_order_relaxed);
	return true;
}

void
limit_leave(struct limits *l, const struct limit_key *k)
{
	uint32_t s[2];

	slots_of(l, k, s);
	atomic_fetch_sub_explicit(&l->count[s[0]], 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&l->count[s[1]], 1, memory_order_relaxed);
}

/* Counts one event in slot i for second now; returns the second's count. */
static uint32_t
rate_bump(struct limits *l, uint32_t i, uint32_t now)
{
	uint64_t old = atomic_load_explicit(&l->rate[i], memory_order_relaxed);
	uint64_t new;
	uint32_t n;

	do {
		new = limit_rate_next(old, now, &n);
		if (new == old)
			return n;
	} while (!atomic_compare_exchange_weak_explicit(&l->rate[i], &old, new,
							memory_order_relaxed,
							memory_order_relaxed));
	return n;
}

bool
limit_rate(struct limits *l, const struct limit_key *k, uint64_t now_s,
	   unsigned max)
{
	uint32_t s[2], a, b;

	if (!max)
		return true;
	slots_of(l, k, s);
	a = rate_bump(l, s[0], (uint32_t)now_s);
	b = rate_bump(l, s[1], (uint32_t)now_s);
	return (a < b ? a : b) <= max;
}

/* Workers read the clock once a batch: a slot stamped by one a little
 * ahead of the reader's now has drained nothing for it yet. */
#define LEVEL_SKEW_MS	60000

/*
 * The level of slot word v at now: what was spent, less what drained at
 * rate since its stamp.  *stamp is the stamp to keep: now once something
 * drained (its fraction of a unit is lost, so a slot drains a little
 * slower, never faster), else the old one, so that slow drains add up.
 */
static uint32_t
level_at(uint64_t v, uint32_t now, uint32_t rate, uint32_t *stamp)
{
	uint32_t then = (uint32_t)(v >> 32), level = (uint32_t)v;
	uint32_t dt = now - then;
	uint64_t drained;

	*stamp = then;
	if (!level || dt == 0 || dt > UINT32_MAX - LEVEL_SKEW_MS) {
		if (!level)
			*stamp = now;
		return level;
	}
	drained = (uint64_t)dt * rate / 1000;
	if (!drained)
		return level;
	*stamp = now;
	return drained >= level ? 0 : level - (uint32_t)drained;
}

/* Drains slot i to now and adds n to it (saturating). */
static void
level_add(struct limits *l, uint32_t i, uint32_t now, uint32_t rate,
	  uint32_t n)
{
	uint64_t old = atomic_load_explicit(&l->level[i],
					    memory_order_relaxed);
	uint64_t new;

	do {
		uint32_t stamp, level = level_at(old, now, rate, &stamp);

		level = level > UINT32_MAX - n ? UINT32_MAX : level + n;
		new = (uint64_t)stamp << 32 | level;
	} while (!atomic_compare_exchange_weak_explicit(&l->level[i], &old,
							new,
							memory_order_relaxed,
							memory_order_relaxed));
}

bool
limit_spend(struct limits *l, const struct limit_key *k, uint64_t now_ms,
	    uint32_t n, uint32_t rate)
{
	uint32_t s[2], now = (uint32_t)now_ms, stamp, a, b;

	slots_of(l, k, s);
	a = level_at(atomic_load_explicit(&l->level[s[0]],
					  memory_order_relaxed),
		     now, rate, &stamp);
	b = level_at(atomic_load_explicit(&l->level[s[1]],
					  memory_order_relaxed),
		     now, rate, &stamp);
	/* Up to one second's worth spent and not yet drained. */
	if ((uint64_t)(a < b ? a : b) + n > rate)
		return false;
	level_add(l, s[0], now, rate, n);
	level_add(l, s[1], now, rate, n);
	return true;
}
