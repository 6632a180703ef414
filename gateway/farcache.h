/*
 * What each far server of an upstream service is (issue 35,
 * gateway/upstream.h): a TCPCT responder, or a legacy TCP that ignored
 * the Cookie option, dropped the SYN that carried it, or answered oddly.
 * A legacy server is then asked over plain TCP at once, not with a TCPCT
 * SYN it ignores again.  Per worker (no lock), sized at start: a table of
 * FARCACHE_WAYS-way sets, the oldest entry of a full set given up for a
 * new server (counted by the caller); an entry is forgotten after
 * FARCACHE_TTL_S, so that a server that gained TCPCT is tried again.
 */
#ifndef GATEWAY_FARCACHE_H
#define GATEWAY_FARCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "../nfq/pkt.h"

#define FARCACHE_WAYS	4
#define FARCACHE_TTL_S	3600

enum far_kind { FAR_UNKNOWN = 0, FAR_TCPCT, FAR_LEGACY };

struct far_entry {
	struct inaddr addr;
	uint32_t seen_s;	/* wall clock, when learnt */
	uint16_t port;
	uint8_t family;		/* 0: free */
	uint8_t kind;		/* enum far_kind */
};

struct farcache {
	struct far_entry *e;
	uint32_t mask;		/* sets − 1 */
	uint32_t used;		/* entries held */
	uint64_t seed;
};

/* cap entries at least (rounded up to a power of two).  0 or -1. */
int farcache_init(struct farcache *c, uint32_t cap, uint64_t seed);
void farcache_free(struct farcache *c);

/* What the server at addr:port is known to be at now_s. */
enum far_kind farcache_get(const struct farcache *c, uint8_t family,
			   const struct inaddr *addr, uint16_t port,
			   uint64_t now_s);

/* Notes what it is; true when another server's live entry made room. */
bool farcache_put(struct farcache *c, uint8_t family,
		  const struct inaddr *addr, uint16_t port, enum far_kind kind,
		  uint64_t now_s);

#endif
