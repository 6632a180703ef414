#include "flow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reason_names[FLOW_REASON_MAX] = {
	[FLOW_RST_CLIENT] = "rst_client",
	[FLOW_RST_BACKEND] = "rst_backend",
	[FLOW_DONE] = "done",
	[FLOW_IDLE] = "idle",
	[FLOW_CLOSING_TIMEOUT] = "closing_timeout",
	[FLOW_SYN_TIMEOUT] = "backend_syn_timeout",
	[FLOW_REFUSED] = "backend_refused",
	[FLOW_REPLACED] = "replaced",
	[FLOW_EVICTED] = "evicted",
	[FLOW_OPTIONS] = "backend_options_changed",
	[FLOW_TFO_UNACKED] = "tfo_unacknowledged",
	[FLOW_MSG_TIMEOUT] = "msg_timeout",
	[FLOW_FRAMING] = "dns_framing",
	[FLOW_MAX_QUERIES] = "max_queries",
	[FLOW_LIFETIME] = "max_lifetime",
	[FLOW_FIN_UNBOUND] = "fin_unbound",
	[FLOW_HELD_UNACKED] = "held_unacked",
	[FLOW_RELEASE_STUCK] = "release_stuck",
	[FLOW_BACKLOG_TIMEOUT] = "backlog_timeout",
	[FLOW_HOLD_FULL] = "hold_full",
	[FLOW_SHUTDOWN] = "shutdown",
};

static const char *const state_names[FLOW_STATE_MAX] = {
	[FLOW_FREE] = "free",
	[FLOW_BINDING] = "binding",
	[FLOW_SYN_SENT] = "syn_sent",
	[FLOW_ESTABLISHED] = "established",
	[FLOW_RELEASING] = "releasing",
	[FLOW_CLOSING] = "closing",
	[FLOW_CLOSED] = "closed",
};

const char *
flow_reason_name(enum flow_reason r)
{
	return (unsigned)r < FLOW_REASON_MAX ? reason_names[r] : "unknown";
}

const char *
flow_state_name(enum flow_state s)
{
	return (unsigned)s < FLOW_STATE_MAX ? state_names[s] : "unknown";
}

#define MOVE(s)	(1u << (s))

static const uint8_t legal_moves[FLOW_STATE_MAX] = {
	[FLOW_FREE] = MOVE(FLOW_BINDING) | MOVE(FLOW_SYN_SENT),
	[FLOW_BINDING] = MOVE(FLOW_SYN_SENT),
	[FLOW_SYN_SENT] = MOVE(FLOW_ESTABLISHED),
	[FLOW_ESTABLISHED] = MOVE(FLOW_RELEASING) | MOVE(FLOW_CLOSING),
	[FLOW_RELEASING] = MOVE(FLOW_BINDING) | MOVE(FLOW_CLOSING),
	[FLOW_CLOSING] = MOVE(FLOW_CLOSED),
	[FLOW_CLOSED] = 0,
};

bool
flow_state_legal(enum flow_state from, enum flow_state to)
{
	return (unsigned)from < FLOW_STATE_MAX &&
	       (unsigned)to < FLOW_STATE_MAX && (legal_moves[from] & MOVE(to));
}

void
flow_state_set(struct flow *f, enum flow_state to)
{
#ifdef TCPCTD_CHECKED
	if (!flow_state_legal(f->state, to)) {
		fprintf(stderr, "flow: %s -> %s: no move of the state "
			"machine\n",
			flow_state_name(f->state), flow_state_name(to));
		abort();
	}
#endif
	f->state = (uint8_t)to;
}

/* The block's parts: the core, the entries, the buckets, each on a cache
 * line of its own. */
#define BLOCK_ALIGN	64

static size_t
align_up(size_t n)
{
	return (n + BLOCK_ALIGN - 1) & ~(size_t)(BLOCK_ALIGN - 1);
}

static uint32_t
buckets_for(uint32_t cap)
{
	uint32_t nb = 1;

	while (nb < cap && nb < (1u << 31))
		nb <<= 1;
	return nb;
}

size_t
flow_table_bytes(uint32_t cap)
{
	return align_up(sizeof(struct flow_core)) +
	       align_up((size_t)cap * sizeof(struct flow)) +
	       align_up((size_t)buckets_for(cap) * sizeof(uint32_t));
}

int
flow_table_place(struct flow_table *t, uint32_t cap, uint64_t seed,
		 void *block, bool keep)
{
	uint8_t *b = block;
	uint32_t nb = buckets_for(cap), i;
	struct flow_core *c = block;

	memset(t, 0, sizeof(*t));
	t->recs = calloc(cap, sizeof(*t->recs));
	if (!t->recs) {
		errno = ENOMEM;
		return -1;
	}
	t->block = block;
	t->c = c;
	t->flows = (struct flow *)(b + align_up(sizeof(*c)));
	t->buckets = (uint32_t *)((uint8_t *)t->flows +
				  align_up((size_t)cap * sizeof(struct flow)));
	t->cap = cap;
	if (keep && c->layout == FLOW_LAYOUT && c->cap == cap &&
	    c->mask == nb - 1) {
		t->adopted = true;
		t->st.active = c->used;
		return 0;
	}
	memset(c, 0, sizeof(*c));
	c->layout = FLOW_LAYOUT;
	c->cap = cap;
	c->mask = nb - 1;
	c->seed = seed | 1;
	memset(t->flows, 0, (size_t)cap * sizeof(struct flow));
	for (i = 0; i < nb; i++)
		t->buckets[i] = FLOW_NIL;
	for (i = 0; i < cap; i++)
		t->flows[i].hnext = i + 1 < cap ? i + 1 : FLOW_NIL;
	c->free_head = 0;
	for (i = 0; i < FLOW_SERVICES; i++)
		for (unsigned j = 0; j < FLOW_TIMER_MAX; j++)
			c->head[i][j] = c->tail[i][j] = FLOW_NIL;
	return 0;
}

int
flow_table_init(struct flow_table *t, uint32_t cap, uint64_t seed)
{
	void *block = calloc(1, flow_table_bytes(cap));

	if (!block || flow_table_place(t, cap, seed, block, false) < 0) {
		free(block);
		errno = ENOMEM;
		return -1;
	}
	t->block_owned = true;
	return 0;
}

void
flow_table_free(struct flow_table *t)
{
	if (t->block_owned)
		free(t->block);
	if (!t->recs_shared)
		free(t->recs);
	memset(t, 0, sizeof(*t));
}

void
flow_table_share_recs(struct flow_table *t, struct shield_flow *recs)
{
	if (!t->recs_shared)
		free(t->recs);
	t->recs = recs;
	t->recs_shared = true;
}

void
flow_tuple(struct shield_tuple *t, const struct flow_key *k)
{
	memset(t, 0, sizeof(*t));
	t->family = k->family;
	t->cport = htons(k->cport);
	t->sport = htons(k->bport);
	memcpy(t->caddr, k->caddr.b, sizeof(t->caddr));
	memcpy(t->saddr, k->baddr.b, sizeof(t->saddr));
}

_Static_assert(SHIELD_STATE_BINDING == FLOW_BINDING &&
		       SHIELD_STATE_SYN_SENT == FLOW_SYN_SENT &&
		       SHIELD_STATE_ESTABLISHED == FLOW_ESTABLISHED &&
		       SHIELD_STATE_CLOSING == FLOW_CLOSING,
	       "the record's states are the entry's");
_Static_assert(SHIELD_FIN_CLIENT == FLOW_FIN_CLIENT &&
		       SHIELD_FIN_CLIENT_ACKED == FLOW_FIN_CLIENT_ACKED &&
		       SHIELD_FIN_BACKEND == FLOW_FIN_BACKEND &&
		       SHIELD_FIN_BACKEND_ACKED == FLOW_FIN_BACKEND_ACKED &&
		       SHIELD_FIN_BACKEND_FIRST == FLOW_FIN_BACKEND_FIRST,
	       "the record's FIN bits are the entry's");
_Static_assert(SHIELD_WINDOW_MIN == FLOW_WINDOW_MIN, "one smallest window");

/* The fields the kernel moves (X(in the entry, in the record)): given as
 * the entry has them, taken back as the record has them. */
#define FLOW_KERNEL_FIELDS(X)						\
	X(fin, fin) X(c_win, c_win) X(b_win, b_win) X(c_nxt, c_nxt)	\
	X(b_nxt, b_nxt) X(c_ack, c_ack) X(b_ack, b_ack)			\
	X(c_fin, c_fin) X(b_fin, b_fin) X(c_tsval, c_tsval)		\
	X(ts_out, ts_out) X(c_maxwin, c_maxwin) X(b_maxwin, b_maxwin)	\
	X(bdns_nxt, answers.nxt) X(bdns.pos, answers.pos)		\
	X(bdns.started, answers.started) X(bdns.len, answers.len)	\
	X(bisn, bisn) X(seq_delta, seq_delta) X(ts_delta, ts_delta)	\
	X(b_ws, b_ws) X(c_ws_b, c_ws_b) X(b_ifindex, b_ifindex)
#define GIVE(e, rec)	r->rec = f->e;
#define TAKE(e, rec)	f->e = r->rec;

void
flow_give(struct flow_table *t, struct flow *f, const struct flow_handover *h)
{
	struct shield_flow *r = flow_rec(t, f);

	r->worker = h->worker;
	r->service = f->service;
	r->c_ifindex = f->c_ifindex;
	r->state = f->state;
	FLOW_KERNEL_FIELDS(GIVE)
	r->flags = (uint8_t)((f->ts ? SHIELD_REC_TS : 0) |
			     (h->dns ? SHIELD_REC_DNS : 0) |
			     (f->challenged ? SHIELD_REC_CHALLENGED : 0) |
			     (f->hold >= 0 && f->taken &&
					      f->state != FLOW_SYN_SENT
				      ? SHIELD_REC_HELD : 0) |
			     (f->opening ? SHIELD_REC_OPENING : 0) |
			     (f->sack ? SHIELD_REC_SACK : 0) |
			     (f->ws ? SHIELD_REC_WS : 0));
	r->c_ws = f->c_ws;
	r->adv_ws = f->adv_ws;
	r->mss = f->mss;
	r->g_base = f->g_base;
	r->gw_tsval = f->gw_tsval;
	/* A binding's query is the backend's once its SYN-ACK is in: until
	 * then the client's data starts at its ISN + 1. */
	r->rcv_base = f->c_base + 1 +
		      (f->state == FLOW_SYN_SENT ? 0 : f->taken);
	r->qlen = h->qlen;
	if (h->qlen)
		memcpy(r->query, h->query, h->qlen);
	r->queries = f->dns.started - f->dns_bound;
	r->challenge_ms = f->challenge_ms;
	r->last_ns = h->now_ns;
	r->deadline_ns = h->deadline_ns;
	r->c2b = r->b2c = 0;
	f->given_ns = h->now_ns;
	t->st.carried++;
	/* The record, then the owner that lets the program read it. */
	__atomic_store_n(&r->owner, SHIELD_OWNER_KERNEL, __ATOMIC_RELEASE);
}

bool
flow_take(struct flow_table *t, struct flow *f)
{
	struct shield_flow *r = flow_rec(t, f);
	unsigned spins = 0;

	if (__atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) !=
	    SHIELD_OWNER_KERNEL)
		return false;
	/* The owner, then the wait for any program already inside (it
	 * raised busy before it read the owner): both in one order. */
	__atomic_store_n(&r->owner, SHIELD_OWNER_DAEMON, __ATOMIC_SEQ_CST);
	t->st.carried--;
	while (__atomic_load_n(&r->busy, __ATOMIC_SEQ_CST))
		if (++spins % 1024 == 0)
			sched_yield();
	/* A binding's moves are the catch-up's (gateway/carry.c), which
	 * does what the worker would have done for them. */
	if (f->state != r->state && f->state >= FLOW_ESTABLISHED)
		flow_state_set(f, (enum flow_state)r->state);
	FLOW_KERNEL_FIELDS(TAKE)
	return true;
}

static inline uint64_t
mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/*
 * Keyed with a random seed so that bucket placement is not predictable;
 * entries exist only for clients that passed a cookie, which bounds what an
 * attacker can place anyway.
 */
static uint32_t
bucket(const struct flow_table *t, const struct flow_key *k)
{
	uint64_t h = t->c->seed, w[4];

	memcpy(w, k->caddr.b, 16);
	memcpy(w + 2, k->baddr.b, 16);
	h = mix(h, w[0]);
	h = mix(h, w[1]);
	h = mix(h, w[2] ^ ((uint64_t)k->cport << 32 | k->bport));
	h = mix(h, w[3] ^ k->family);
	return (uint32_t)(h ^ (h >> 32)) & t->c->mask;
}

static bool
key_eq(const struct flow_key *a, const struct flow_key *b)
{
	return a->cport == b->cport && a->bport == b->bport &&
	       a->family == b->family &&
	       memcmp(a->caddr.b, b->caddr.b, 16) == 0 &&
	       memcmp(a->baddr.b, b->baddr.b, 16) == 0;
}

struct flow *
flow_lookup(struct flow_table *t, const struct flow_key *k)
{
	uint32_t i;

	for (i = t->buckets[bucket(t, k)]; i != FLOW_NIL; i = t->flows[i].hnext)
		if (key_eq(&t->flows[i].key, k))
			return &t->flows[i];
	return NULL;
}

static void
timer_unlink(struct flow_table *t, struct flow *f)
{
	uint32_t idx = flow_index(t, f);

	uint32_t *head, *tail;

	if (f->timer == FLOW_TIMER_NONE)
		return;
	head = &t->c->head[f->service][f->timer];
	tail = &t->c->tail[f->service][f->timer];
	if (f->tprev != FLOW_NIL)
		t->flows[f->tprev].tnext = f->tnext;
	else if (*head == idx)
		*head = f->tnext;
	if (f->tnext != FLOW_NIL)
		t->flows[f->tnext].tprev = f->tprev;
	else if (*tail == idx)
		*tail = f->tprev;
	f->timer = FLOW_TIMER_NONE;
	f->tprev = f->tnext = FLOW_NIL;
}

void
flow_timer_set(struct flow_table *t, struct flow *f, enum flow_timer which,
	       uint64_t now)
{
	uint32_t idx = flow_index(t, f), *tail;

	timer_unlink(t, f);
	f->stamp = now;
	if (which == FLOW_TIMER_NONE)
		return;
	tail = &t->c->tail[f->service][which];
	f->timer = (uint8_t)which;
	f->tnext = FLOW_NIL;
	f->tprev = *tail;
	if (f->tprev != FLOW_NIL)
		t->flows[f->tprev].tnext = idx;
	else
		t->c->head[f->service][which] = idx;
	*tail = idx;
}

struct flow *
flow_timer_expired(struct flow_table *t, unsigned service,
		   enum flow_timer which, uint64_t cutoff)
{
	uint32_t i;

	/* An entry the kernel carried on meanwhile goes back on a list,
	 * given again: each only once for each segment carried since. */
	while ((i = t->c->head[service][which]) != FLOW_NIL &&
	       t->flows[i].stamp <= cutoff) {
		struct flow *f = &t->flows[i];

		if (!t->due || !flow_carried(t, f) ||
		    t->due(t->due_arg, f, cutoff))
			return f;
	}
	return NULL;
}

/* The lingering entry closed longest ago, of any service; FLOW_NIL. */
static uint32_t
oldest_closed(const struct flow_table *t)
{
	uint32_t best = FLOW_NIL;

	for (unsigned s = 0; s < FLOW_SERVICES; s++) {
		uint32_t i = t->c->head[s][FLOW_TIMER_CLOSED];

		if (i != FLOW_NIL && (best == FLOW_NIL ||
				      t->flows[i].stamp < t->flows[best].stamp))
			best = i;
	}
	return best;
}

void
flow_release(struct flow_table *t, struct flow *f, enum flow_reason r)
{
	uint32_t idx = flow_index(t, f), *pp;

	/* Out of the kernel's hands first, wherever it ends. */
	flow_take(t, f);
	timer_unlink(t, f);
	for (pp = &t->buckets[bucket(t, &f->key)]; *pp != FLOW_NIL;
	     pp = &t->flows[*pp].hnext)
		if (*pp == idx) {
			*pp = f->hnext;
			break;
		}
	if (t->watch)
		t->watch(t->watch_arg, &f->key, idx, false);
	memset(&flow_rec(t, f)->key, 0, sizeof(flow_rec(t, f)->key));
	f->state = FLOW_FREE;
	f->hnext = t->c->free_head;
	t->c->free_head = idx;
	t->c->used--;
	t->st.active = t->c->used;
	t->st.released[(unsigned)r < FLOW_REASON_MAX ? r : FLOW_SHUTDOWN]++;
}

bool
flow_table_full(const struct flow_table *t)
{
	return t->c->free_head == FLOW_NIL;
}

struct flow *
flow_evictable(struct flow_table *t)
{
	uint32_t old = oldest_closed(t);

	return old == FLOW_NIL ? NULL : &t->flows[old];
}

struct flow *
flow_insert(struct flow_table *t, const struct flow_key *k)
{
	uint32_t idx, b;
	struct flow *f;

	if (flow_table_full(t)) {
		t->st.table_full++;
		return NULL;
	}
	idx = t->c->free_head;
	f = &t->flows[idx];
	t->c->free_head = f->hnext;
	memset(f, 0, sizeof(*f));
	f->key = *k;
	f->hold = -1;
	f->tprev = f->tnext = FLOW_NIL;
	b = bucket(t, k);
	f->hnext = t->buckets[b];
	t->buckets[b] = idx;
	t->c->used++;
	t->st.created++;
	t->st.active = t->c->used;
	flow_tuple(&flow_rec(t, f)->key, k);
	if (t->watch)
		t->watch(t->watch_arg, k, idx, true);
	return f;
}
