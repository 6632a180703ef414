/*
 * The far servers' table (farcache.h).
 */
#include "farcache.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

int
farcache_init(struct farcache *c, uint32_t cap, uint64_t seed)
{
	uint32_t sets = 1;

	memset(c, 0, sizeof(*c));
	while ((uint64_t)sets * FARCACHE_WAYS < cap)
		sets <<= 1;
	c->e = mem_resident((size_t)sets * FARCACHE_WAYS, sizeof(*c->e));
	if (!c->e)
		return -1;
	c->mask = sets - 1;
	c->seed = seed;
	return 0;
}

void
farcache_free(struct farcache *c)
{
	free(c->e);
	c->e = NULL;
}

/* The set of a server: a keyed mix of its address and port, so that the
 * servers a resolver's clients make it ask cannot be chosen to share one. */
static struct far_entry *
set_of(const struct farcache *c, uint8_t family, const struct inaddr *a,
       uint16_t port)
{
	uint64_t h = c->seed ^ ((uint64_t)family << 16 | port);

	for (unsigned i = 0; i < 16; i += 4) {
		uint32_t v;

		memcpy(&v, a->b + i, 4);
		h ^= v;
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return &c->e[(h & c->mask) * FARCACHE_WAYS];
}

static bool
same(const struct far_entry *e, uint8_t family, const struct inaddr *a,
     uint16_t port)
{
	return e->family == family && e->port == port &&
	       !memcmp(e->addr.b, a->b, pkt_addrlen(family));
}

static bool
live(const struct far_entry *e, uint64_t now_s)
{
	return e->family && now_s - e->seen_s < FARCACHE_TTL_S;
}

enum far_kind
farcache_get(const struct farcache *c, uint8_t family,
	     const struct inaddr *addr, uint16_t port, uint64_t now_s)
{
	const struct far_entry *s;

	if (!c->e)
		return FAR_UNKNOWN;
	s = set_of(c, family, addr, port);
	for (unsigned i = 0; i < FARCACHE_WAYS; i++)
		if (same(&s[i], family, addr, port) && live(&s[i], now_s))
			return (enum far_kind)s[i].kind;
	return FAR_UNKNOWN;
}

bool
farcache_put(struct farcache *c, uint8_t family, const struct inaddr *addr,
	     uint16_t port, enum far_kind kind, uint64_t now_s)
{
	struct far_entry *s, *e = NULL;
	bool replaced = false;
	unsigned i;

	if (!c->e)
		return false;
	s = set_of(c, family, addr, port);
	for (i = 0; i < FARCACHE_WAYS && !e; i++)
		if (same(&s[i], family, addr, port))
			e = &s[i];
	for (i = 0; i < FARCACHE_WAYS && !e; i++)
		if (!live(&s[i], now_s))
			e = &s[i];
	if (!e) {
		/* A full set: its oldest goes. */
		e = &s[0];
		for (i = 1; i < FARCACHE_WAYS; i++)
			if (s[i].seen_s < e->seen_s)
				e = &s[i];
		replaced = true;
	}
	if (!e->family)
		c->used++;
	memset(e, 0, sizeof(*e));
	e->family = family;
	memcpy(e->addr.b, addr->b, pkt_addrlen(family));
	e->port = port;
	e->kind = (uint8_t)kind;
	e->seen_s = (uint32_t)now_s;
	return replaced;
}
