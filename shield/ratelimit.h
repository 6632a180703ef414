/*
 * The events-per-second counts of gateway/limit.c (a count-min sketch: a
 * key has a slot in each half of a table, its count the smaller of the
 * two), the part that the kernel shield shares: which slots a key has, and
 * how a slot's word counts one more event.  With the shield on, the
 * daemon's table of these words is the shield's map, mapped into the
 * daemon, so that a prefix's SYN-ACKs per second (--synack-rate) are
 * counted once, whichever path answered.  Freestanding, as syncookie.h.
 */
#ifndef SHIELD_RATELIMIT_H
#define SHIELD_RATELIMIT_H

#include "syncookie.h"

/* Workers read the clock once a batch, so one may still be in the second
 * that another has left: its events count in the later second, rather
 * than start the earlier one anew and the later one again after it (and
 * so on, each undoing the other's count).  A clock set back further
 * starts afresh. */
#define LIMIT_RATE_SKEW_S	2

static inline uint64_t
limit_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* in's first bits bits (of 128) into out, the rest zero: a prefix's key. */
static inline void
limit_prefix(const uint8_t in[16], unsigned bits, uint8_t out[16])
{
	unsigned i;

	for (i = 0; i < 16; i++) {
		if (i * 8 + 8 <= bits)
			out[i] = in[i];
		else if (i * 8 < bits)
			out[i] = in[i] & (uint8_t)(0xff00u >> (bits % 8));
		else
			out[i] = 0;
	}
}

/* The slots of a key (its kind, family, service and masked address) in a
 * table of 2 × (mask + 1) words: [0, mask] and [mask + 1, 2 × mask + 1]. */
static inline void
limit_slots(uint64_t seed, uint32_t mask, const uint8_t addr[16],
	    uint8_t kind, uint8_t family, uint8_t service, uint32_t s[2])
{
	uint64_t h = seed;

	h = limit_mix(h, siphash_le64(addr));
	h = limit_mix(h, siphash_le64(addr + 8));
	h = limit_mix(h, (uint64_t)kind << 16 | (uint64_t)family << 8 |
			 service);
	s[0] = (uint32_t)h & mask;
	s[1] = ((uint32_t)(h >> 32) & mask) + mask + 1;
}

/* A rate slot's word (second << 32 | events) with one more event at
 * second now; *count is the second's count then, which saturates. */
static inline uint64_t
limit_rate_next(uint64_t old, uint32_t now, uint32_t *count)
{
	uint32_t then = (uint32_t)(old >> 32);
	uint32_t sec = then > now && then - now <= LIMIT_RATE_SKEW_S ? then
								      : now;
	uint32_t n = then == sec ? (uint32_t)old : 0;

	if (n == 0xffffffffu) {
		*count = n;
		return old;
	}
	*count = n + 1;
	return (uint64_t)sec << 32 | (n + 1);
}

#endif
