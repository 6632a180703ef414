/*
 * gateway/release.c and overload.c on the test bench (testgw.h): a DNS
 * connection's backend half released once its queries are answered, the
 * client kept and bound again on a new backend connection with both
 * sequence spaces running on, or closed; a client that never takes the
 * answer reset; a client that closes meanwhile closed as usual; the
 * overload mode entered and left with hysteresis.
 */
#include <string.h>

#include <CUnit/CUnit.h>

#include "../../gateway/accept.h"
#include "../../gateway/overload.h"
#include "../../nfq/bytes.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"

#define CISN	0xfffffff0u
#define BISN	0x00001000u
#define BISN2	0x7f000000u

struct bench {
	struct tgw *g;
	struct tgw_conn c;
	uint8_t q[64], a[128];
	uint16_t qn, an;
};

/* A connection through to its first answer, sent by the backend with its
 * ACK of the query. */
static void
answered(struct bench *b, const char *const *opts, uint16_t cport)
{
	b->g = tgw_new(opts);
	b->qn = tgw_query(b->q, 40, 7, false);
	b->an = tgw_query(b->a, 100, 7, true);
	tgw_handshake(b->g, &b->c, cport, CISN);
	tgw_client_data(b->g, &b->c, b->q, b->qn, TCP_PSH);
	tgw_backend_accept(b->g, &b->c, BISN);
	b->c.b_ack = b->c.c_nxt;
	tgw_backend_data(b->g, &b->c, b->a, b->an, TCP_PSH);
	CU_ASSERT(b->g->mangled);		/* the answer goes on */
}

/* The one segment out, towards the client. */
static const struct tgw_out *
only_client(struct tgw *g)
{
	CU_ASSERT_EQUAL(g->nout, 1);
	return tgw_find(g, false, 0, NULL);
}

static const char *const always[] = {
	"protect", "192.0.2.2:53,release-always=1", NULL,
};

/* The backend's FIN, which the client does not get: the model's next
 * client-space seq stays where the answer ended. */
static void
backend_fin(struct bench *b)
{
	tgw_backend_data(b->g, &b->c, NULL, 0, TCP_FIN);
	b->c.b_nxt--;
	b->c.b_base--;
	CU_ASSERT_EQUAL(b->g->verdict, NF_DROP);
}

static void
test_release_kept(void)
{
	struct bench b;
	const struct tgw_out *o;
	struct flow *f;
	uint32_t r_fin, a_end, ts_before;

	answered(&b, always, 40000);
	f = tgw_flow(b.g, &b.c);
	r_fin = b.c.c_nxt;
	a_end = b.c.b_nxt;
	ts_before = b.g->fwd.o.tsval;

	/* Every query answered and acknowledged: our FIN, in the client's
	 * name, acknowledging only what the client did. */
	CU_ASSERT_EQUAL(f->state, FLOW_RELEASING);
	o = tgw_find(b.g, true, TCP_FIN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, r_fin);
	CU_ASSERT_EQUAL(o->p.ack, BISN + 1);
	CU_ASSERT_EQUAL(b.g->w.st.released, 1);
	CU_ASSERT_EQUAL(atomic_load(&b.g->gw.backend_open[0]), 1);

	/* The backend acknowledges it: nothing for the client. */
	b.c.b_ack = r_fin + 1;
	tgw_backend_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_EQUAL(b.g->verdict, NF_DROP);
	/* The answer again (lost?): on to the client, acknowledging what
	 * the client sent, not our FIN. */
	b.c.b_nxt -= b.an;
	tgw_backend_data(b.g, &b.c, b.a, b.an, TCP_PSH);
	CU_ASSERT(b.g->mangled);
	CU_ASSERT_EQUAL(b.g->fwd.p.ack, r_fin);
	CU_ASSERT(pkt_tcp_csum_ok(&b.g->fwd.p));
	backend_fin(&b);
	CU_ASSERT_EQUAL(f->state, FLOW_RELEASING);

	/* The client's ACK of the answer: we acknowledge the backend's FIN
	 * for it, and bind the flow again. */
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_EQUAL(b.g->verdict, NF_DROP);
	o = tgw_find(b.g, true, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, r_fin + 1);
	CU_ASSERT_EQUAL(o->p.ack, BISN + 1 + b.an + 1);
	CU_ASSERT_EQUAL(f->state, FLOW_BINDING);
	CU_ASSERT_EQUAL(b.g->w.st.release_kept, 1);
	CU_ASSERT_EQUAL(atomic_load(&b.g->gw.backend_open[0]), 0);

	/* Its next query opens a new backend connection whose ISN is the
	 * client's next seq − 1; the client sees the same stream go on. */
	tgw_client_data(b.g, &b.c, b.q, b.qn, TCP_PSH);
	b.c.cisn = r_fin - 1;
	tgw_backend_accept(b.g, &b.c, BISN2);
	o = tgw_find(b.g, false, TCP_ACK, NULL);	/* the window update */
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, a_end);
	CU_ASSERT_EQUAL(o->p.ack, r_fin + b.qn);
	CU_ASSERT(o->o.tsval - ts_before < 0x80000000u);
	o = tgw_find(b.g, true, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, r_fin);
	CU_ASSERT_EQUAL(o->p.ack, BISN2 + 1);
	CU_ASSERT_EQUAL(o->p.paylen, b.qn);
	b.c.b_ack = b.c.c_nxt;
	tgw_backend_data(b.g, &b.c, b.a, b.an, TCP_PSH);
	CU_ASSERT(b.g->mangled);
	CU_ASSERT_EQUAL(b.g->fwd.p.seq, a_end);
	CU_ASSERT_EQUAL(b.g->fwd.p.ack, r_fin + b.qn);
	CU_ASSERT(b.g->fwd.o.tsval - ts_before < 0x80000000u);
	CU_ASSERT_EQUAL(b.g->w.st.released, 2);
	tgw_free(b.g);
}

static void
test_release_closed(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53,release-always=1,keep-client=0", NULL,
	};
	struct bench b;
	const struct tgw_out *o;
	uint32_t a_end;

	answered(&b, opts, 40000);
	a_end = b.c.b_nxt;
	b.c.b_ack = b.c.c_nxt + 1;
	backend_fin(&b);
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	/* The backend is done with; the client gets a FIN from its
	 * address. */
	o = tgw_find(b.g, false, TCP_FIN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, a_end);
	CU_ASSERT_EQUAL(o->p.ack, b.c.c_nxt);
	CU_ASSERT_EQUAL(b.g->w.st.release_closed, 1);
	/* Its ACK and FIN: acknowledged, and the entry goes. */
	b.c.b_nxt = a_end + 1;
	tgw_client_data(b.g, &b.c, NULL, 0, TCP_FIN);
	o = tgw_find(b.g, false, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, a_end + 1);
	CU_ASSERT_EQUAL(o->p.ack, b.c.c_nxt);
	CU_ASSERT_FALSE(o->p.flags & TCP_FIN);
	CU_ASSERT_PTR_NULL(tgw_flow(b.g, &b.c));
	CU_ASSERT_EQUAL(b.g->w.ft.st.released[FLOW_DONE], 1);
	tgw_free(b.g);
}

static void
test_release_stuck(void)
{
	struct bench b;
	unsigned i;

	/* The client never acknowledges the answer (kxdpgun -T7): the
	 * backend has its FIN at once, and both sides are reset after
	 * --syn-retries of our FINs. */
	answered(&b, always, 40000);
	b.c.b_ack = b.c.c_nxt + 1;
	backend_fin(&b);
	/* The backend has closed: it no longer counts against backend-max,
	 * though the client still holds the flow. */
	CU_ASSERT_EQUAL(atomic_load(&b.g->gw.backend_open[0]), 0);
	CU_ASSERT_PTR_NOT_NULL(tgw_flow(b.g, &b.c));
	for (i = 0; i < b.g->cfg.syn_retries; i++) {
		tgw_advance(b.g, (unsigned)rto_ms(i < FLOW_RTO_LEVELS ? i
						      : FLOW_RTO_LEVELS - 1));
		CU_ASSERT_PTR_NOT_NULL(tgw_flow(b.g, &b.c));
	}
	tgw_advance(b.g, (unsigned)rto_ms(FLOW_RTO_LEVELS - 1));
	CU_ASSERT_PTR_NULL(tgw_flow(b.g, &b.c));
	CU_ASSERT_PTR_NOT_NULL(tgw_find(b.g, true, TCP_RST, NULL));
	CU_ASSERT_PTR_NOT_NULL(tgw_find(b.g, false, TCP_RST, NULL));
	CU_ASSERT_EQUAL(b.g->w.st.release_stuck, 1);
	CU_ASSERT_EQUAL(atomic_load(&b.g->gw.backend_open[0]), 0);
	tgw_free(b.g);

	/* Our FIN lost: sent again on the timer. */
	answered(&b, always, 40001);
	tgw_advance(b.g, RTO_MIN_MS);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(b.g, true, TCP_FIN, NULL));
	tgw_free(b.g);
}

static void
test_release_client_closes(void)
{
	struct bench b;
	struct flow *f;
	uint32_t r_fin;

	/* The client closes while the backend's half is being released: a
	 * close as usual, its FIN at the seq of ours. */
	answered(&b, always, 40000);
	f = tgw_flow(b.g, &b.c);
	r_fin = b.c.c_nxt;
	tgw_client_data(b.g, &b.c, NULL, 0, TCP_FIN);
	CU_ASSERT(b.g->mangled);
	CU_ASSERT_EQUAL(b.g->fwd.p.seq, r_fin);
	CU_ASSERT(b.g->fwd.p.flags & TCP_FIN);
	CU_ASSERT_EQUAL(f->state, FLOW_CLOSING);
	/* The backend's FIN, which acknowledges the client's, goes on. */
	b.c.b_ack = r_fin + 1;
	tgw_backend_data(b.g, &b.c, NULL, 0, TCP_FIN);
	CU_ASSERT(b.g->mangled);
	CU_ASSERT_EQUAL(b.g->fwd.p.ack, r_fin + 1);
	/* Both have closed: the backend's slot is counted free already. */
	CU_ASSERT_EQUAL(atomic_load(&b.g->gw.backend_open[0]), 0);
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_EQUAL(f->state, FLOW_CLOSED);
	CU_ASSERT_EQUAL(atomic_load(&b.g->gw.backend_open[0]), 0);
	tgw_free(b.g);

	/* A query sent meanwhile is held for the next backend, which is
	 * called as soon as the release is over. */
	answered(&b, always, 40001);
	f = tgw_flow(b.g, &b.c);
	r_fin = b.c.c_nxt;
	tgw_client_data(b.g, &b.c, b.q, b.qn, TCP_PSH);
	CU_ASSERT_EQUAL(b.g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(b.g->w.st.release_query_held, 1);
	{
		const struct tgw_out *o = only_client(b.g);

		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_EQUAL(o->p.seq, b.c.b_nxt);
		CU_ASSERT_EQUAL(o->p.ack, r_fin + b.qn);
	}
	b.c.b_ack = r_fin + 1;
	backend_fin(&b);
	CU_ASSERT_EQUAL(f->state, FLOW_SYN_SENT);	/* its ACK did it */
	{
		const struct tgw_out *o = tgw_find(b.g, true, TCP_SYN, NULL);

		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_EQUAL(o->p.seq, r_fin - 1);
	}
	b.c.cisn = r_fin - 1;
	tgw_backend_accept(b.g, &b.c, BISN2);
	{
		const struct tgw_out *o = tgw_find(b.g, true, TCP_ACK, NULL);

		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_EQUAL(o->p.seq, r_fin);
		CU_ASSERT_EQUAL(o->p.ack, BISN2 + 1);
		CU_ASSERT_EQUAL(o->p.paylen, b.qn);
	}
	tgw_free(b.g);

	/* A client that closes while bound to nothing gets a server's
	 * close: FIN and ACK, and the entry goes with its last ACK. */
	b.g = tgw_new(always);
	tgw_handshake(b.g, &b.c, 40002, CISN);
	tgw_client_data(b.g, &b.c, NULL, 0, TCP_FIN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tgw_find(b.g, false, TCP_FIN | TCP_ACK,
					      NULL));
	CU_ASSERT_EQUAL(b.g->out[0].p.ack, b.c.c_nxt);
	CU_ASSERT_EQUAL(b.g->w.st.bind_fin, 1);
	b.c.b_nxt++;
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_PTR_NULL(tgw_flow(b.g, &b.c));
	CU_ASSERT_EQUAL(b.g->w.ft.st.released[FLOW_FIN_UNBOUND], 1);
	CU_ASSERT_EQUAL(b.g->w.st.backend_syn, 0);
	tgw_free(b.g);
}

static void
test_overload(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53,backend-max=5,overload-idle=2", NULL,
	};
	struct tgw *g = tgw_new(opts);
	struct tgw_conn c[5];
	uint8_t q[64], a[128];
	uint16_t qn = tgw_query(q, 40, 1, false), an = tgw_query(a, 90, 1, true);
	unsigned i;

	/* Four backend connections of five: the mode is on (at 4/5). */
	for (i = 0; i < 4; i++) {
		tgw_handshake(g, &c[i], (uint16_t)(40000 + i), CISN);
		tgw_client_data(g, &c[i], q, qn, TCP_PSH);
		CU_ASSERT_EQUAL(overload_on(&g->w, 0), i == 3);
		tgw_backend_accept(g, &c[i], BISN);
	}
	CU_ASSERT_EQUAL(g->w.st.overload_entered, 1);
	CU_ASSERT_EQUAL(overload_idle_ms(&g->w, 0), 2000);
	for (i = 1; i < 4; i++) {	/* the queries acknowledged, no answer */
		c[i].b_ack = c[i].c_nxt;
		tgw_backend_data(g, &c[i], NULL, 0, 0);
	}
	/* Overloaded, an answered connection's backend half goes. */
	c[0].b_ack = c[0].c_nxt;
	tgw_backend_data(g, &c[0], a, an, TCP_PSH);
	CU_ASSERT_EQUAL(tgw_flow(g, &c[0])->state, FLOW_RELEASING);
	/* The idle ones are reset after overload-idle, not idle-timeout,
	 * and at 2 of 5 the mode is off again. */
	tgw_advance(g, 1999);
	CU_ASSERT(overload_on(&g->w, 0));
	tgw_advance(g, 1);
	CU_ASSERT_EQUAL(g->w.ft.st.released[FLOW_IDLE], 3);
	CU_ASSERT_FALSE(overload_on(&g->w, 0));
	CU_ASSERT_EQUAL(g->w.st.overload_left, 1);
	CU_ASSERT_EQUAL(overload_idle_ms(&g->w, 0), 10000);
	/* Not overloaded: an answered connection keeps its backend. */
	tgw_handshake(g, &c[4], 40004, CISN);
	tgw_client_data(g, &c[4], q, qn, TCP_PSH);
	tgw_backend_accept(g, &c[4], BISN);
	c[4].b_ack = c[4].c_nxt;
	tgw_backend_data(g, &c[4], a, an, TCP_PSH);
	CU_ASSERT_EQUAL(tgw_flow(g, &c[4])->state, FLOW_ESTABLISHED);
	CU_ASSERT_EQUAL(g->w.st.released, 1);
	tgw_free(g);
}

/* What review found: a backend that says more after the release began,
 * zone transfers, RSTs that no peer would take, ACKs of what was never
 * sent. */
static void
test_release_edges(void)
{
	static const char *const close0[] = {
		"protect", "192.0.2.2:53,release-always=1,keep-client=0", NULL,
	};
	struct bench b;
	const struct tgw_out *o;
	struct flow *f;
	uint32_t r_fin, end;
	unsigned from = 0;

	/* More answer bytes after our FIN: on to the client, and the next
	 * binding starts after them. */
	answered(&b, always, 40000);
	r_fin = b.c.c_nxt;
	b.c.b_ack = r_fin + 1;
	tgw_backend_data(b.g, &b.c, b.a, b.an, TCP_PSH);
	CU_ASSERT(b.g->mangled);
	end = b.c.b_nxt;
	backend_fin(&b);
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	f = tgw_flow(b.g, &b.c);
	CU_ASSERT_EQUAL(f->state, FLOW_BINDING);
	CU_ASSERT_EQUAL(f->g_base, end - 1);
	tgw_client_data(b.g, &b.c, b.q, 5, TCP_PSH);
	CU_ASSERT_EQUAL(b.g->out[0].p.seq, end);
	tgw_free(b.g);

	/* A zone transfer is many answers to one query: never released. */
	{
		static const uint8_t axfr[] = {
			0, 30, 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
			7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 4, 't', 'e', 's',
			't', 0, 0, 252, 0, 1,
		};

		b.g = tgw_new(always);
		b.an = tgw_query(b.a, 100, 0x1234, true);
		tgw_handshake(b.g, &b.c, 40001, CISN);
		tgw_client_data(b.g, &b.c, axfr, sizeof(axfr), TCP_PSH);
		tgw_backend_accept(b.g, &b.c, BISN);
		b.c.b_ack = b.c.c_nxt;
		tgw_backend_data(b.g, &b.c, b.a, b.an, TCP_PSH);
		CU_ASSERT_EQUAL(tgw_flow(b.g, &b.c)->state, FLOW_ESTABLISHED);
		CU_ASSERT_EQUAL(b.g->w.st.released, 0);
		tgw_free(b.g);
	}

	/* An ACK of what the backend never sent counts for nothing: the
	 * release waits for the client's real one. */
	answered(&b, always, 40002);
	b.c.b_ack = b.c.c_nxt + 1;
	backend_fin(&b);
	b.c.b_nxt += 1000;
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	b.c.b_nxt -= 1000;
	f = tgw_flow(b.g, &b.c);
	CU_ASSERT_EQUAL(f->state, FLOW_RELEASING);
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_EQUAL(f->state, FLOW_BINDING);
	tgw_free(b.g);

	/* RSTs: a blind one is dropped; the client's own ends both sides,
	 * the backend's at each seq it may be at (our FIN unacknowledged),
	 * the client's from what it acknowledged to all it was sent. */
	answered(&b, always, 40003);
	r_fin = b.c.c_nxt;
	b.c.c_nxt += 0x40000000;
	tgw_client_data(b.g, &b.c, NULL, 0, TCP_RST);
	CU_ASSERT_EQUAL(b.g->w.st.rst_out_of_window, 1);
	CU_ASSERT_PTR_NOT_NULL(tgw_flow(b.g, &b.c));
	b.c.c_nxt = r_fin;
	tgw_client_data(b.g, &b.c, NULL, 0, TCP_RST);
	CU_ASSERT_PTR_NULL(tgw_flow(b.g, &b.c));
	o = tgw_find(b.g, true, TCP_RST, &from);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, r_fin + 1);
	o = tgw_find(b.g, true, TCP_RST, &from);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, r_fin);
	tgw_free(b.g);

	/* The client's ACK while the backend's FIN is still to come goes on
	 * as our own segment, past our FIN; once bound again, a RST of the
	 * old connection (below what the client acknowledged) is refused. */
	answered(&b, always, 40005);
	r_fin = b.c.c_nxt;
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_EQUAL(b.g->verdict, NF_DROP);
	o = tgw_find(b.g, true, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, r_fin + 1);
	CU_ASSERT_EQUAL(o->p.ack, BISN + 1 + b.an);
	b.c.b_ack = r_fin + 1;
	backend_fin(&b);
	tgw_client_data(b.g, &b.c, b.q, b.qn, TCP_PSH);
	b.c.cisn = r_fin - 1;
	end = b.c.b_nxt;
	tgw_backend_accept(b.g, &b.c, BISN2);
	{
		struct tgw_seg rst = {
			.from_backend = true, .cport = 40005,
			.seq = BISN + 1 + b.an, .flags = TCP_RST, .wscale = -1,
		};

		tgw_send(b.g, &rst);
	}
	CU_ASSERT_EQUAL(b.g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(b.g->w.st.rst_out_of_window, 1);
	CU_ASSERT_PTR_NOT_NULL(tgw_flow(b.g, &b.c));
	CU_ASSERT_EQUAL(tgw_flow(b.g, &b.c)->g_base, end - 1);
	tgw_free(b.g);

	/* keep-client 0: a query sent during the release is not taken, nor
	 * acknowledged: there will be no backend for it. */
	answered(&b, close0, 40004);
	tgw_client_data(b.g, &b.c, b.q, b.qn, TCP_PSH);
	CU_ASSERT_EQUAL(b.g->nout, 0);
	CU_ASSERT_EQUAL(tgw_flow(b.g, &b.c)->taken, 0);
	tgw_free(b.g);
}

/* Off-path segments with the tuple of a kept connection, as issue 21 found
 * them: one spoofed FIN|ACK with random numbers closed it, a spoofed pure
 * ACK with a TSval 2^30 ahead made the next backend drop every segment of
 * the client (RFC 7323 §5).  Now none is taken, in RELEASING or once bound
 * again, and the client's next query is answered as if nothing happened. */
static void
blind_battery(struct bench *b, struct rng *r, struct flow *f)
{
	uint32_t tsval = f->c_tsval, cisn = f->c_base;
	uint8_t state = f->state, fin = f->fin;
	unsigned i;

	for (i = 0; i < 300; i++) {
		static const uint8_t kinds[] = {
			TCP_FIN | TCP_ACK, TCP_RST, TCP_RST | TCP_ACK, TCP_ACK,
			TCP_ACK | TCP_PSH,
		};
		uint32_t seq = rng32(r), ack = rng32(r);

		/* Nothing exact: the attacker's odds are not what we test. */
		if (seq == accept_rcv_nxt(f) || seq == f->c_nxt)
			continue;
		tgw_blind(b->g, &b->c, seq, ack, kinds[i % sizeof(kinds)],
			  tsval + 0x40000000u);
		CU_ASSERT_EQUAL_FATAL(b->g->verdict, NF_DROP);
		CU_ASSERT_PTR_EQUAL_FATAL(tgw_flow(b->g, &b->c), f);
	}
	CU_ASSERT_EQUAL(f->state, state);
	CU_ASSERT_EQUAL(f->fin, fin);
	CU_ASSERT_EQUAL(f->c_base, cisn);
	CU_ASSERT_EQUAL(f->c_tsval, tsval);
	/* Only challenge ACKs went out, a couple at most. */
	CU_ASSERT(b->g->w.st.challenge_ack <= 2);
}

static void
test_release_blind(void)
{
	struct bench b;
	const struct tgw_out *o;
	struct rng r;
	struct flow *f;
	uint32_t r_fin;

	rng_init(&r, 0x626c696e64);
	answered(&b, always, 40000);
	f = tgw_flow(b.g, &b.c);
	r_fin = b.c.c_nxt;
	CU_ASSERT_EQUAL_FATAL(f->state, FLOW_RELEASING);
	blind_battery(&b, &r, f);

	b.c.b_ack = r_fin + 1;
	tgw_backend_data(b.g, &b.c, NULL, 0, 0);
	backend_fin(&b);
	tgw_client_data(b.g, &b.c, NULL, 0, 0);
	CU_ASSERT_EQUAL_FATAL(f->state, FLOW_BINDING);
	b.g->w.now_ms += ACCEPT_CHALLENGE_INTERVAL_MS;
	b.g->w.st.challenge_ack = 0;
	blind_battery(&b, &r, f);

	/* The next query opens a backend connection whose SYN carries the
	 * client's own clock, and the query goes through. */
	tgw_client_data(b.g, &b.c, b.q, b.qn, TCP_PSH);
	o = tgw_find(b.g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->o.tsval, b.c.c_tsval - 1);
	b.c.cisn = r_fin - 1;
	tgw_backend_accept(b.g, &b.c, BISN2);
	o = tgw_find(b.g, true, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.paylen, b.qn);
	CU_ASSERT_EQUAL(o->o.tsval, b.c.c_tsval - 1);
	tgw_free(b.g);
}

void
register_release_tests(void)
{
	static const struct test_case cases[] = {
		{ "released once answered; the client kept, bound again, "
		  "its streams running on", test_release_kept },
		{ "off-path FIN, RST and ACKs with its tuple: a kept "
		  "connection goes on (issue 21)", test_release_blind },
		{ "keep-client 0: the client closed after the release",
		  test_release_closed },
		{ "an answer never acknowledged: both reset; a lost FIN "
		  "sent again", test_release_stuck },
		{ "clients that close, or ask again, meanwhile",
		  test_release_client_closes },
		{ "overload mode: in at 4/5, out at 1/2, its idle timeout",
		  test_overload },
		{ "more answer after the FIN, zone transfers, RSTs, ACKs of "
		  "nothing, keep-client 0's queries", test_release_edges },
	};

	TEST_SUITE("release", cases);
}
