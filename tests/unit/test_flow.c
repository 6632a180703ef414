/*
 * gateway/flow.h: the bounded flow table.  Lookups, distinct keys, the full
 * table (refuse, or reclaim a lingering entry but never a live one), timer
 * order, and 100,000 random operations against a reference model.
 */
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../gateway/flow.h"
#include "suites.h"
#include "testutil.h"

/* Key number i: both families, addresses and ports all derived from i. */

/* An insert as the gateway makes one (conn_open): a full table gives up
 * its evictable entry first, which *ev tells. */
static struct flow *
insert_evicting(struct flow_table *t, const struct flow_key *k, bool *ev)
{
	struct flow *old;

	*ev = false;
	if (flow_table_full(t) && (old = flow_evictable(t))) {
		flow_release(t, old, FLOW_EVICTED);
		*ev = true;
	}
	return flow_insert(t, k);
}
static struct flow_key
key(unsigned i)
{
	struct flow_key k;

	memset(&k, 0, sizeof(k));
	k.family = i & 1 ? AF_INET6 : AF_INET;
	k.caddr.b[0] = k.family == AF_INET ? 198 : 0x20;
	k.caddr.b[1] = (uint8_t)(i >> 8);
	k.caddr.b[3] = (uint8_t)i;
	k.baddr.b[0] = 192;
	k.baddr.b[3] = 2;
	k.cport = (uint16_t)(1024 + i);
	k.bport = 53;
	return k;
}

static unsigned
timer_len(const struct flow_table *t, enum flow_timer which)
{
	unsigned n = 0;
	uint32_t i, prev = FLOW_NIL;

	for (i = t->c->head[0][which]; i != FLOW_NIL; i = t->flows[i].tnext) {
		if (t->flows[i].tprev != prev || t->flows[i].timer != which)
			return UINT32_MAX;	/* a broken link */
		prev = i;
		if (++n > t->cap)
			return UINT32_MAX;	/* a loop */
	}
	return prev == t->c->tail[0][which] ? n : UINT32_MAX;
}

static void
test_basic(void)
{
	struct flow_table t;
	struct flow_key k = key(1), k2 = key(2);
	struct flow *f;
	bool ev = true;

	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, 16, 42), 0);
	CU_ASSERT_PTR_NULL(flow_lookup(&t, &k));
	f = insert_evicting(&t, &k, &ev);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_FALSE(ev);
	CU_ASSERT_EQUAL(memcmp(&f->key, &k, sizeof(k)), 0);
	CU_ASSERT_EQUAL(f->hold, -1);
	CU_ASSERT_EQUAL(f->state, FLOW_FREE);
	CU_ASSERT_EQUAL(f->timer, FLOW_TIMER_NONE);
	CU_ASSERT_EQUAL(f->tprev, FLOW_NIL);
	CU_ASSERT_EQUAL(f->tnext, FLOW_NIL);
	CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &k), f);
	CU_ASSERT_PTR_NULL(flow_lookup(&t, &k2));
	CU_ASSERT_EQUAL(t.c->used, 1);
	CU_ASSERT_EQUAL(t.st.created, 1);
	CU_ASSERT_EQUAL(t.st.active, 1);

	f->state = FLOW_ESTABLISHED;
	flow_timer_set(&t, f, FLOW_TIMER_IDLE, 1000);
	flow_release(&t, f, FLOW_RST_CLIENT);
	CU_ASSERT_PTR_NULL(flow_lookup(&t, &k));
	CU_ASSERT_EQUAL(t.c->used, 0);
	CU_ASSERT_EQUAL(t.st.active, 0);
	CU_ASSERT_EQUAL(t.st.released[FLOW_RST_CLIENT], 1);
	CU_ASSERT_EQUAL(t.c->head[0][FLOW_TIMER_IDLE], FLOW_NIL);
	CU_ASSERT_EQUAL(t.c->tail[0][FLOW_TIMER_IDLE], FLOW_NIL);
	CU_ASSERT_PTR_NULL(flow_timer_expired(&t, 0, FLOW_TIMER_IDLE, 5000));
	flow_table_free(&t);
}

/* Keys that differ in one field (family, a port, any address byte) are
 * different flows. */
static void
test_distinct_keys(void)
{
	struct flow_key base = key(7), v[2 + 2 + 32];
	struct flow_table t;
	struct flow *fb, *fv[sizeof(v) / sizeof(v[0])];
	size_t n = 0, i, j;
	bool ev;

	v[n] = base;
	v[n++].family = base.family == AF_INET ? AF_INET6 : AF_INET;
	v[n] = base;
	v[n++].cport ^= 1;
	v[n] = base;
	v[n++].bport ^= 0x100;
	v[n] = base;
	v[n].cport = base.bport;	/* ports swapped */
	v[n++].bport = base.cport;
	for (i = 0; i < 16; i++) {
		v[n] = base;
		v[n++].caddr.b[i] ^= 0x01;
		v[n] = base;
		v[n++].baddr.b[i] ^= 0x80;
	}
	CU_ASSERT_EQUAL_FATAL(n, sizeof(v) / sizeof(v[0]));
	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, 64, 1), 0);
	fb = insert_evicting(&t, &base, &ev);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fb);
	for (i = 0; i < n; i++)
		CU_ASSERT_PTR_NULL(flow_lookup(&t, &v[i]));
	for (i = 0; i < n; i++) {
		fv[i] = insert_evicting(&t, &v[i], &ev);
		CU_ASSERT_PTR_NOT_NULL_FATAL(fv[i]);
	}
	CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &base), fb);
	for (i = 0; i < n; i++) {
		CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &v[i]), fv[i]);
		for (j = 0; j < i; j++)
			CU_ASSERT_PTR_NOT_EQUAL(fv[i], fv[j]);
	}
	flow_release(&t, fb, FLOW_DONE);
	CU_ASSERT_PTR_NULL(flow_lookup(&t, &base));
	for (i = 0; i < n; i++)
		CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &v[i]), fv[i]);
	CU_ASSERT_EQUAL(t.c->used, n);
	flow_table_free(&t);

	/* A one-entry table has one bucket, so every key collides there and
	 * only the comparison tells them apart. */
	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, 1, 1), 0);
	CU_ASSERT_EQUAL(t.c->mask, 0);
	fb = insert_evicting(&t, &base, &ev);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fb);
	for (i = 0; i < n; i++)
		CU_ASSERT_PTR_NULL(flow_lookup(&t, &v[i]));
	for (i = 0; i < n; i++) {
		flow_release(&t, flow_lookup(&t, i ? &v[i - 1] : &base),
			     FLOW_DONE);
		fv[i] = insert_evicting(&t, &v[i], &ev);
		CU_ASSERT_PTR_NOT_NULL_FATAL(fv[i]);
		CU_ASSERT_PTR_NULL(flow_lookup(&t, &base));
		CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &v[i]), fv[i]);
	}
	flow_table_free(&t);
}

static void
test_full(void)
{
	enum { CAP = 16 };
	static const uint8_t live[] = {
		FLOW_TIMER_NONE, FLOW_TIMER_RTO, FLOW_TIMER_IDLE,
		FLOW_TIMER_CLOSING,
	};
	struct flow_table t;
	struct flow *f[CAP], *g;
	struct flow_key extra = key(1000), extra2 = key(1001);
	unsigned i;
	bool ev;

	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, CAP, 3), 0);
	for (i = 0; i < CAP; i++) {
		struct flow_key k = key(i);

		f[i] = insert_evicting(&t, &k, &ev);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f[i]);
		CU_ASSERT_FALSE(ev);
		f[i]->state = FLOW_ESTABLISHED;
		flow_timer_set(&t, f[i], live[i % 4], 1000 + i);
	}
	CU_ASSERT_EQUAL(t.c->used, CAP);

	/* Full of live flows: refused and counted, nobody evicted. */
	ev = true;
	CU_ASSERT_PTR_NULL(insert_evicting(&t, &extra, &ev));
	CU_ASSERT_FALSE(ev);
	CU_ASSERT_EQUAL(t.st.table_full, 1);
	CU_ASSERT_EQUAL(t.st.released[FLOW_EVICTED], 0);
	for (i = 0; i < CAP; i++) {
		struct flow_key k = key(i);
		CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &k), f[i]);
	}

	/* Two lingering entries: the older one goes first. */
	f[9]->state = FLOW_CLOSED;
	flow_timer_set(&t, f[9], FLOW_TIMER_CLOSED, 5000);
	f[4]->state = FLOW_CLOSED;
	flow_timer_set(&t, f[4], FLOW_TIMER_CLOSED, 5001);
	g = insert_evicting(&t, &extra, &ev);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_TRUE(ev);
	CU_ASSERT_PTR_EQUAL(g, f[9]);	/* the slot is reused */
	CU_ASSERT_EQUAL(t.st.released[FLOW_EVICTED], 1);
	CU_ASSERT_EQUAL(t.c->used, CAP);
	{
		struct flow_key k9 = key(9), k4 = key(4);
		CU_ASSERT_PTR_NULL(flow_lookup(&t, &k9));
		CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &k4), f[4]);
	}
	CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &extra), g);
	CU_ASSERT_EQUAL(g->timer, FLOW_TIMER_NONE);
	CU_ASSERT_EQUAL(g->state, FLOW_FREE);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_CLOSED), 1);

	g = insert_evicting(&t, &extra2, &ev);
	CU_ASSERT_PTR_EQUAL(g, f[4]);
	CU_ASSERT_TRUE(ev);
	CU_ASSERT_EQUAL(t.st.released[FLOW_EVICTED], 2);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_CLOSED), 0);

	/* Nothing lingers any more: refused again. */
	{
		struct flow_key k = key(2000);
		CU_ASSERT_PTR_NULL(insert_evicting(&t, &k, &ev));
		CU_ASSERT_FALSE(ev);
		CU_ASSERT_EQUAL(t.st.table_full, 2);
	}
	for (i = 0; i < CAP; i++) {
		struct flow_key k = key(i);
		if (i != 9 && i != 4)
			CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &k), f[i]);
	}
	CU_ASSERT_EQUAL(t.c->used, CAP);
	flow_table_free(&t);
}

/* A released tuple can come back at once, as a fresh entry. */
static void
test_reuse(void)
{
	struct flow_table t;
	struct flow_key k = key(5);
	struct flow *f;
	bool ev;

	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, 16, 9), 0);
	f = insert_evicting(&t, &k, &ev);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	f->state = FLOW_CLOSING;
	f->fin = FLOW_FIN_CLIENT;
	f->seq_delta = 12345;
	f->hold = 3;
	flow_timer_set(&t, f, FLOW_TIMER_CLOSING, 10);
	flow_release(&t, f, FLOW_REPLACED);
	f = insert_evicting(&t, &k, &ev);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_PTR_EQUAL(flow_lookup(&t, &k), f);
	CU_ASSERT_EQUAL(f->state, FLOW_FREE);
	CU_ASSERT_EQUAL(f->fin, 0);
	CU_ASSERT_EQUAL(f->seq_delta, 0);
	CU_ASSERT_EQUAL(f->hold, -1);
	CU_ASSERT_EQUAL(f->timer, FLOW_TIMER_NONE);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_CLOSING), 0);
	CU_ASSERT_EQUAL(t.c->used, 1);
	CU_ASSERT_EQUAL(t.st.created, 2);
	CU_ASSERT_EQUAL(t.st.released[FLOW_REPLACED], 1);
	flow_table_free(&t);
}

static void
test_timers(void)
{
	struct flow_table t;
	struct flow *f[6];
	unsigned i;
	bool ev;

	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, 16, 11), 0);
	for (i = 0; i < 6; i++) {
		struct flow_key k = key(i);
		f[i] = insert_evicting(&t, &k, &ev);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f[i]);
	}
	for (i = 0; i < 5; i++)
		flow_timer_set(&t, f[i], FLOW_TIMER_IDLE, 100 * (i + 1));
	flow_timer_set(&t, f[5], FLOW_TIMER_RTO, 50);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_IDLE), 5);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_RTO), 1);

	CU_ASSERT_PTR_NULL(flow_timer_expired(&t, 0, FLOW_TIMER_IDLE, 99));
	CU_ASSERT_PTR_NULL(flow_timer_expired(&t, 0, FLOW_TIMER_CLOSED, 1000000));
	CU_ASSERT_PTR_EQUAL(flow_timer_expired(&t, 0, FLOW_TIMER_RTO, 50), f[5]);

	/* A touch moves the entry to the tail with its new expiry. */
	flow_timer_set(&t, f[0], FLOW_TIMER_IDLE, 600);
	CU_ASSERT_PTR_NULL(flow_timer_expired(&t, 0, FLOW_TIMER_IDLE, 150));
	CU_ASSERT_PTR_EQUAL(flow_timer_expired(&t, 0, FLOW_TIMER_IDLE, 200), f[1]);
	/* Moving to another list takes it off this one. */
	flow_timer_set(&t, f[2], FLOW_TIMER_CLOSING, 10);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_IDLE), 4);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_CLOSING), 1);
	/* Releasing one in the middle keeps the list linked. */
	flow_release(&t, f[3], FLOW_RST_BACKEND);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_IDLE), 3);
	/* NONE takes it off every list. */
	flow_timer_set(&t, f[5], FLOW_TIMER_NONE, 0);
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_RTO), 0);
	CU_ASSERT_PTR_NULL(flow_timer_expired(&t, 0, FLOW_TIMER_RTO, 1000000));

	/* What is left expires in order: f1 (200), f4 (500), f0 (600). */
	{
		static const unsigned order[] = { 1, 4, 0 };
		static const uint64_t at[] = { 200, 500, 600 };

		for (i = 0; i < 3; i++) {
			struct flow *e;

			e = flow_timer_expired(&t, 0, FLOW_TIMER_IDLE, at[i] - 1);
			CU_ASSERT_PTR_NULL(e);
			e = flow_timer_expired(&t, 0, FLOW_TIMER_IDLE, at[i]);
			CU_ASSERT_PTR_EQUAL(e, f[order[i]]);
			if (!e)
				break;
			flow_release(&t, e, FLOW_IDLE);
		}
	}
	CU_ASSERT_EQUAL(timer_len(&t, FLOW_TIMER_IDLE), 0);
	CU_ASSERT_EQUAL(t.st.released[FLOW_IDLE], 3);
	CU_ASSERT_EQUAL(t.c->used, 2);
	flow_table_free(&t);
}

static void
test_names(void)
{
	unsigned i, j;

	for (i = 0; i < FLOW_REASON_MAX; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(flow_reason_name(i));
		for (j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(flow_reason_name(i),
						   flow_reason_name(j));
	}
	for (i = 0; i < FLOW_STATE_MAX; i++)
		CU_ASSERT_PTR_NOT_NULL(flow_state_name(i));
	CU_ASSERT_STRING_EQUAL(flow_reason_name(FLOW_REASON_MAX), "unknown");
	CU_ASSERT_STRING_EQUAL(flow_state_name(FLOW_STATE_MAX), "unknown");
}

/*
 * The reference model: for each of NKEYS keys, whether it is in the table,
 * its timer list, and (on CLOSED) when it was put there, so that the entry
 * an eviction must pick is the one with the smallest stamp.
 */
#define MODEL_CAP	64
#define NKEYS		200
#define MODEL_OPS	100000

struct model {
	bool in[NKEYS];
	uint8_t timer[NKEYS];
	uint64_t stamp[NKEYS];
	unsigned used, ntimer[FLOW_TIMER_MAX];
	uint64_t table_full, evicted, released, created;
};

static int
model_oldest_closed(const struct model *m)
{
	int best = -1;
	unsigned i;

	for (i = 0; i < NKEYS; i++)
		if (m->in[i] && m->timer[i] == FLOW_TIMER_CLOSED &&
		    (best < 0 || m->stamp[i] < m->stamp[best]))
			best = (int)i;
	return best;
}

static void
model_remove(struct model *m, unsigned i)
{
	m->in[i] = false;
	m->ntimer[m->timer[i]]--;
	m->timer[i] = FLOW_TIMER_NONE;
	m->used--;
}

/* Compares table and model; returns the number of disagreements. */
static unsigned
model_compare(struct flow_table *t, const struct model *m)
{
	unsigned bad = 0, i;

	if (t->c->used != m->used || t->st.active != m->used)
		bad++;
	if (t->st.table_full != m->table_full ||
	    t->st.released[FLOW_EVICTED] != m->evicted ||
	    t->st.released[FLOW_DONE] != m->released ||
	    t->st.created != m->created)
		bad++;
	for (i = 0; i < FLOW_TIMER_MAX; i++)
		if (i != FLOW_TIMER_NONE && timer_len(t, i) != m->ntimer[i])
			bad++;
	for (i = 0; i < NKEYS; i++) {
		struct flow_key k = key(i);
		struct flow *f = flow_lookup(t, &k);

		if (!!f != m->in[i])
			bad++;
		else if (f && (memcmp(&f->key, &k, sizeof(k)) ||
			       f->timer != m->timer[i]))
			bad++;
	}
	return bad;
}

static void
test_random_model(void)
{
	static struct model m;
	struct flow_table t;
	struct rng r;
	uint64_t clock = 0;
	unsigned op, bad = 0, inserts_full = 0, evictions = 0;

	memset(&m, 0, sizeof(m));
	m.ntimer[FLOW_TIMER_NONE] = 0;
	rng_init(&r, 5);
	CU_ASSERT_EQUAL_FATAL(flow_table_init(&t, MODEL_CAP, rng_next(&r)), 0);
	for (op = 0; op < MODEL_OPS && !bad; op++) {
		unsigned i = rng_below(&r, NKEYS), what = rng_below(&r, 10);
		struct flow_key k = key(i);
		struct flow *f = flow_lookup(&t, &k);
		bool ev;

		if (!!f != m.in[i]) {
			bad++;
			break;
		}
		if (what < 4 && !m.in[i]) {
			int victim = m.used == MODEL_CAP ?
				model_oldest_closed(&m) : -1;

			f = insert_evicting(&t, &k, &ev);
			if (m.used == MODEL_CAP && victim < 0) {
				m.table_full++;
				inserts_full++;
				if (f || ev)
					bad++;
				continue;
			}
			if (!f || ev != (victim >= 0)) {
				bad++;
				continue;
			}
			if (victim >= 0) {
				struct flow_key vk = key((unsigned)victim);

				model_remove(&m, (unsigned)victim);
				m.evicted++;
				evictions++;
				if (flow_lookup(&t, &vk))
					bad++;
			}
			m.in[i] = true;
			m.timer[i] = FLOW_TIMER_NONE;
			m.ntimer[FLOW_TIMER_NONE]++;
			m.used++;
			m.created++;
		} else if (what < 7 && m.in[i]) {
			flow_release(&t, f, FLOW_DONE);
			model_remove(&m, i);
			m.released++;
		} else if (m.in[i]) {
			/* CLOSED often enough that evictions happen, rarely
			 * enough that the table also fills with live ones. */
			static const uint8_t timers[] = {
				FLOW_TIMER_NONE, FLOW_TIMER_RTO,
				FLOW_TIMER_RTO_LAST, FLOW_TIMER_IDLE,
				FLOW_TIMER_MSG, FLOW_TIMER_CLOSING,
				FLOW_TIMER_CLOSED, FLOW_TIMER_DONE,
			};
			unsigned which = timers[rng_below(&r, 8)];

			flow_timer_set(&t, f, which, ++clock);
			m.ntimer[m.timer[i]]--;
			m.timer[i] = (uint8_t)which;
			m.ntimer[which]++;
			m.stamp[i] = clock;
		}
		if (op % 1000 == 999)
			bad += model_compare(&t, &m);
	}
	bad += model_compare(&t, &m);
	printf("\n    %u ops, %u refused full, %u evictions ", op,
	       inserts_full, evictions);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(op, MODEL_OPS);
	CU_ASSERT(inserts_full > 0 && evictions > 0);
	flow_table_free(&t);
}

/* The state machine's moves: exactly the table's, and a checked build
 * (this one: the sanitizers') stops at any other. */
static void
test_state_moves(void)
{
	static const struct { enum flow_state from, to; } legal[] = {
		{ FLOW_FREE, FLOW_BINDING }, { FLOW_FREE, FLOW_SYN_SENT },
		{ FLOW_BINDING, FLOW_SYN_SENT },
		{ FLOW_SYN_SENT, FLOW_ESTABLISHED },
		{ FLOW_ESTABLISHED, FLOW_RELEASING },
		{ FLOW_ESTABLISHED, FLOW_CLOSING },
		{ FLOW_RELEASING, FLOW_BINDING },
		{ FLOW_RELEASING, FLOW_CLOSING },
		{ FLOW_CLOSING, FLOW_CLOSED },
	};
	unsigned from, to, i, n = 0;
	struct flow f = { .state = FLOW_SYN_SENT };
	int status = 0;
	pid_t pid;

	for (from = 0; from < FLOW_STATE_MAX; from++)
		for (to = 0; to < FLOW_STATE_MAX; to++) {
			bool want = false;

			for (i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
				want |= legal[i].from == from &&
					legal[i].to == to;
			CU_ASSERT_EQUAL(flow_state_legal(from, to), want);
			n += want;
		}
	CU_ASSERT_EQUAL(n, sizeof(legal) / sizeof(legal[0]));
	CU_ASSERT_FALSE(flow_state_legal(FLOW_STATE_MAX, FLOW_FREE));
	flow_state_set(&f, FLOW_ESTABLISHED);
	CU_ASSERT_EQUAL(f.state, FLOW_ESTABLISHED);

	/* A move the table lacks: the child stops. */
	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		f.state = FLOW_CLOSED;
		flow_state_set(&f, FLOW_ESTABLISHED);
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

void
register_flow_tests(void)
{
	static const struct test_case cases[] = {
		{ "insert, lookup, release", test_basic },
		{ "keys differing in any field are distinct",
		  test_distinct_keys },
		{ "full table: refuse, evict only lingering entries",
		  test_full },
		{ "release then reuse of a tuple", test_reuse },
		{ "timer lists: order, move, expiry", test_timers },
		{ "reason and state names", test_names },
		{ "state moves: the table's only", test_state_moves },
		{ "100,000 random operations against a model",
		  test_random_model },
	};

	TEST_SUITE("flow", cases);
}
