/*
 * Per-client limits, shared by all workers: concurrent verified connections
 * per client address and per prefix (all of them, and those still pending:
 * no whole DNS message yet), events per second per prefix (new
 * connections, SYN-ACKs), and a budget of bytes per second per prefix
 * (TCPCT transaction answers).
 *
 * Counters are atomic words in three fixed tables; a key has a slot in each
 * half of a table, chosen by keyed hashes, and its count is the smaller of
 * its two (a count-min sketch).  A slot only ever goes down with time or
 * with its own keys' leaving, never because another key came, so a
 * collision can only make a client look busier than it is, never let one
 * over its limit through; the tables never grow, whatever the number of
 * clients.  Workers that pass a limit at the same instant may overshoot it
 * by one each.
 */
#ifndef GATEWAY_LIMIT_H
#define GATEWAY_LIMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../nfq/pkt.h"

enum limit_kind {
	LIMIT_ADDR,		/* concurrent connections of one address */
	LIMIT_PREFIX,		/* concurrent connections of one prefix */
	LIMIT_CONN_RATE,	/* new connections per second of a prefix */
	LIMIT_SYNACK_RATE,	/* SYN-ACKs per second towards a prefix */
	LIMIT_TXN_RATE,		/* transaction answer bytes towards a prefix */
	LIMIT_PENDING_ADDR,	/* concurrent pending connections of one
				 * address */
	LIMIT_PENDING_PREFIX,	/* ... of one prefix */
	LIMIT_KIND_MAX
};

struct limit_key {
	uint8_t kind;		/* enum limit_kind */
	uint8_t family;
	uint8_t service;
	struct inaddr addr;	/* masked to the prefix */
};

struct limits {
	_Atomic uint32_t *count;	/* concurrent: 2 × slots */
	_Atomic uint64_t *rate;		/* second << 32 | events: 2 × slots */
	_Atomic uint64_t *level;	/* ms << 32 | units spent: 2 × slots */
	uint32_t mask;			/* slots − 1 */
	uint64_t seed;
	bool rate_shared;		/* rate is the kernel shield's map */
	void *block;			/* count and level, limits_place's */
	bool adopted;			/* a predecessor's, as it left them */
};

/* slots is a power of two.  0, or -1 (ENOMEM). */
int limits_init(struct limits *l, uint32_t slots, uint64_t seed);
void limits_free(struct limits *l);

/* The bytes of the block the counts and levels of slots live in. */
size_t limits_bytes(uint32_t slots);
/* limits_init with the counts and levels in block (limits_bytes(slots),
 * the caller's): those left there with their seed, when keep and they
 * were of as many slots (l->adopted), else new ones of seed.  0, or -1. */
int limits_place(struct limits *l, uint32_t slots, uint64_t seed, void *block,
		 bool keep);
/* The rate table from now on is rate (2 × slots words, zeroed), the kernel
 * shield's map (shield/ratelimit.h): its counts are the shield's too.  Its
 * owner unmaps it, after limits_free. */
void limits_share_rate(struct limits *l, _Atomic uint64_t *rate);

/* The key of addr's first prefix bits (all of them for LIMIT_ADDR and
 * LIMIT_PENDING_ADDR). */
struct limit_key limit_key(enum limit_kind kind, unsigned service,
			   uint8_t family, const struct inaddr *addr,
			   unsigned prefix);

/* One more connection for k, unless it has max already (0: no limit);
 * false when refused, and then nothing was counted. */
bool limit_enter(struct limits *l, const struct limit_key *k, unsigned max);
/* The connection that limit_enter() admitted is gone. */
void limit_leave(struct limits *l, const struct limit_key *k);
/* The current count of k. */
uint32_t limit_count(const struct limits *l, const struct limit_key *k);

/* One more event for k in second now_s; false when that makes more than
 * max this second (0: no limit). */
bool limit_rate(struct limits *l, const struct limit_key *k, uint64_t now_s,
		unsigned max);

/*
 * Spends n units of k's budget: rate a second, of which up to one second's
 * worth may go at once (a leaky bucket whose level drains at rate, with
 * time only).  False when k has less than n left, and then nothing was
 * spent; rate 0 is a budget of nothing.  Every key spent from the table
 * must be given the same rate, since a slot drains at the rate it is
 * given.  now_ms is a monotonic clock in ms.
 */
bool limit_spend(struct limits *l, const struct limit_key *k, uint64_t now_ms,
		 uint32_t n, uint32_t rate);

#endif
