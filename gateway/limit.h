/*
 * Per-client limits, shared by all workers: concurrent verified connections
 * per client address and per prefix (all of them, and those still pending:
 * no whole DNS message yet), and events per second per prefix (new
 * connections, SYN-ACKs).
 *
 * Counters are atomic words in two fixed tables; a key has a slot in each
 * half of a table, chosen by keyed hashes, and its count is the smaller of
 * its two (a count-min sketch).  A collision can only make a client look
 * busier than it is, never let one over its limit through; the tables never
 * grow, whatever the number of clients.  Workers that pass a limit at the
 * same instant may overshoot it by one each.
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
	uint32_t mask;			/* slots − 1 */
	uint64_t seed;
};

/* slots is a power of two.  0, or -1 (ENOMEM). */
int limits_init(struct limits *l, uint32_t slots, uint64_t seed);
void limits_free(struct limits *l);

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

#endif
