#include "txn.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64 finaliser: the seed keeps the slots unpredictable to clients. */
static uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
addr_hash(uint64_t seed, uint8_t family, const struct inaddr *a, size_t n)
{
	uint64_t h = seed ^ family, w;
	size_t i;

	for (i = 0; i < n; i += 8) {
		w = 0;
		memcpy(&w, a->b + i, n - i < 8 ? n - i : 8);
		h = mix(h ^ w);
	}
	return h;
}

int
txn_table_init(struct txn_table *t, uint32_t cap, uint64_t seed)
{
	uint32_t n = 1;

	memset(t, 0, sizeof(*t));
	if (!cap)
		return 0;
	while (n < cap)
		n <<= 1;
	t->slots = mem_resident(n, sizeof(*t->slots));
	t->fifo = mem_resident((size_t)n * 2, sizeof(*t->fifo));
	if (!t->slots || !t->fifo) {
		txn_table_free(t);
		return -1;
	}
	t->cap = n;
	t->seed = seed;
	return 0;
}

void
txn_table_free(struct txn_table *t)
{
	free(t->slots);
	free(t->fifo);
	memset(t, 0, sizeof(*t));
}

static uint32_t
key_slot(const struct txn_table *t, uint8_t family, const struct inaddr *caddr,
	 uint16_t uport, uint16_t id)
{
	return (uint32_t)mix(addr_hash(t->seed, family, caddr, 16) ^
			     ((uint64_t)uport << 16 | id));
}

static bool
same_key(const struct txn *x, uint8_t family, const struct inaddr *caddr,
	 uint16_t uport, uint16_t id)
{
	return x->syn.family == family && x->uport == uport && x->id == id &&
	       memcmp(x->syn.caddr.b, caddr->b, 16) == 0;
}

static bool
same(const struct txn *x, uint8_t family, const struct inaddr *caddr,
     uint16_t uport, uint16_t id)
{
	return x->used && same_key(x, family, caddr, uport, id);
}

/* Walks the key's probe sequence: the entry holding it, or NULL with
 * *free_slot (when asked) the first free slot on the way. */
static struct txn *
probe(struct txn_table *t, uint8_t family, const struct inaddr *caddr,
      uint16_t uport, uint16_t id, struct txn **free_slot)
{
	uint32_t h, i;

	if (!t->cap)
		return NULL;
	h = key_slot(t, family, caddr, uport, id);
	for (i = 0; i < TXN_PROBES; i++) {
		struct txn *x = &t->slots[(h + i) & (t->cap - 1)];

		if (same(x, family, caddr, uport, id))
			return x;
		if (free_slot && !x->used && !*free_slot)
			*free_slot = x;
	}
	return NULL;
}

struct txn *
txn_claim(struct txn_table *t, uint8_t family, const struct inaddr *caddr,
	  uint16_t uport, uint16_t id)
{
	struct txn *free_slot = NULL;

	return probe(t, family, caddr, uport, id, &free_slot) ? NULL
							       : free_slot;
}

struct txn *
txn_find(struct txn_table *t, uint8_t family, const struct inaddr *caddr,
	 uint16_t uport, uint16_t id)
{
	return probe(t, family, caddr, uport, id, NULL);
}

struct txn *
txn_find_syn(struct txn_table *t, const struct txn_syn *s, uint16_t uport,
	     uint16_t id)
{
	/* A repeated SYN has the same query and ISN, so the same key. */
	struct txn *x = txn_find(t, s->family, &s->caddr, uport, id);

	return x && x->syn.cport == s->cport && x->syn.cisn == s->cisn ? x
								     : NULL;
}

void
txn_commit(struct txn_table *t, struct txn *x, uint64_t expires)
{
	uint32_t ring = t->cap * 2;

	x->used = true;
	x->expires = expires;
	t->used++;
	if (t->fcount == ring) {	/* only stale entries can fill it */
		t->fhead = (t->fhead + 1) % ring;
		t->fcount--;
	}
	t->fifo[(t->fhead + t->fcount) % ring].slot =
		(uint32_t)(x - t->slots);
	t->fifo[(t->fhead + t->fcount) % ring].expires = expires;
	t->fcount++;
}

void
txn_release(struct txn_table *t, struct txn *x, uint64_t late_until)
{
	if (!x->used)
		return;
	x->used = false;
	x->late_until = late_until;
	t->used--;
}

bool
txn_late(struct txn_table *t, uint8_t family, const struct inaddr *caddr,
	 uint16_t uport, uint16_t id, uint64_t now)
{
	uint32_t h, i;

	if (!t->cap)
		return false;
	h = key_slot(t, family, caddr, uport, id);
	for (i = 0; i < TXN_PROBES; i++) {
		const struct txn *x = &t->slots[(h + i) & (t->cap - 1)];

		if (!x->used && x->late_until > now &&
		    same_key(x, family, caddr, uport, id))
			return true;
	}
	return false;
}

struct txn *
txn_expired(struct txn_table *t, uint64_t now)
{
	uint32_t ring = t->cap * 2;

	while (t->fcount) {
		uint32_t slot = t->fifo[t->fhead].slot;
		uint64_t exp = t->fifo[t->fhead].expires;
		struct txn *x = &t->slots[slot];

		if (exp > now)
			return NULL;
		t->fhead = (t->fhead + 1) % ring;
		t->fcount--;
		/* A slot released and claimed again has a later entry. */
		if (x->used && x->expires == exp)
			return x;
	}
	return NULL;
}
