/*
 * gateway/bind.c on the test bench (testgw.h): a verified DNS client gets
 * no backend connection until its first message is whole; until then the
 * gateway acknowledges and holds its bytes, and the clocks reset it
 * without the backend ever hearing of it.
 */
#include <string.h>

#include <CUnit/CUnit.h>

#include "../../nfq/bytes.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"

#define CISN	0xfffffff0u	/* the client's stream wraps */
#define BISN	0x00001000u

static const char *const dns_opts[] = { "protect", "192.0.2.2:53", NULL };

static const struct tgw_out *
only_to_client(struct tgw *g, uint8_t flags)
{
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));
	return tgw_find(g, false, flags, NULL);
}

static void
test_bind_first_message(void)
{
	struct tgw *g = tgw_new(dns_opts);
	uint8_t q[64], a[128];
	uint16_t qn = tgw_query(q, 40, 0x4242, false);
	uint16_t an = tgw_query(a, 90, 0x4242, true);
	const struct tgw_out *o;
	struct tgw_conn c;
	struct flow *f;
	unsigned from = 0;

	tgw_handshake(g, &c, 40000, CISN);
	f = tgw_flow(g, &c);
	CU_ASSERT_EQUAL(f->state, FLOW_BINDING);
	CU_ASSERT_EQUAL(g->nout, 0);		/* nothing to the backend */

	/* Half a query: ours to acknowledge, with the window left. */
	tgw_client_data(g, &c, q, 10, TCP_PSH);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	o = only_to_client(g, TCP_ACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, c.gisn + 1);
	CU_ASSERT_EQUAL(o->p.ack, CISN + 1 + 10);
	CU_ASSERT_EQUAL(o->p.win, (TGW_BACKEND_MSS - 10) >> TGW_BACKEND_WS);
	CU_ASSERT_EQUAL(o->o.tsval, c.g_tsval);	/* never goes back */
	CU_ASSERT_EQUAL(f->timer, FLOW_TIMER_MSG);
	CU_ASSERT_EQUAL(g->w.hold.nfree, g->cfg.hold_slots - 1);

	/* The rest: the backend is called, with the client's own ISN and
	 * options. */
	tgw_client_data(g, &c, q + 10, (uint16_t)(qn - 10), TCP_PSH);
	o = tgw_find(g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, CISN);
	CU_ASSERT_EQUAL(o->o.mss, 1460);
	CU_ASSERT(o->o.has_ts && o->o.has_wscale && o->o.sack_perm);
	CU_ASSERT_EQUAL(o->o.wscale, 7);
	/* Not acknowledged yet: the window update does it, a backend
	 * round trip later, one packet fewer. */
	CU_ASSERT_PTR_NULL(tgw_find(g, false, 0, NULL));
	CU_ASSERT_EQUAL(f->state, FLOW_SYN_SENT);
	CU_ASSERT_EQUAL(g->w.st.bind_opened, 1);

	/* Its SYN-ACK: the whole query completes its handshake, and the
	 * client's window opens. */
	tgw_backend_accept(g, &c, BISN);
	o = tgw_find(g, true, TCP_ACK, &from);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, CISN + 1);
	CU_ASSERT_EQUAL(o->p.ack, BISN + 1);
	CU_ASSERT_EQUAL_FATAL(o->p.paylen, qn);
	CU_ASSERT_EQUAL(memcmp(o->p.data + o->p.payoff, q, qn), 0);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, &from));
	o = tgw_find(g, false, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, c.gisn + 1);
	CU_ASSERT_EQUAL(o->p.ack, CISN + 1 + qn);
	CU_ASSERT_EQUAL(o->p.win, 65160 >> TGW_BACKEND_WS);
	CU_ASSERT_EQUAL(f->state, FLOW_ESTABLISHED);

	/* The held copy stays until the backend acknowledges it. */
	CU_ASSERT_EQUAL(g->w.hold.nfree, g->cfg.hold_slots - 1);
	c.b_ack = c.c_nxt;
	tgw_backend_data(g, &c, a, an, TCP_PSH);
	CU_ASSERT_EQUAL(g->w.hold.nfree, g->cfg.hold_slots);
	CU_ASSERT(g->mangled);
	CU_ASSERT_EQUAL(g->fwd.p.seq, c.gisn + 1);
	CU_ASSERT_EQUAL(g->fwd.p.ack, CISN + 1 + qn);
	CU_ASSERT_EQUAL(g->fwd.p.paylen, an);
	tgw_free(g);
}

static void
test_bind_clocks(void)
{
	struct tgw *g = tgw_new(dns_opts);
	uint8_t q[64];
	struct tgw_conn c, d;
	const struct tgw_out *o;

	tgw_query(q, 40, 1, false);
	tgw_handshake(g, &c, 40000, CISN);
	tgw_handshake(g, &d, 40001, CISN);
	tgw_client_data(g, &d, q, 41, TCP_PSH);	/* one byte short */

	/* The half query's clock: the client is reset, the backend never
	 * heard of it. */
	tgw_advance(g, 1999);
	CU_ASSERT_EQUAL(g->nout, 0);
	tgw_advance(g, 1);
	o = only_to_client(g, TCP_RST);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.dport, 40001);
	CU_ASSERT_EQUAL(g->w.st.dns_msg_timeout, 1);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &d));
	CU_ASSERT_EQUAL(g->w.hold.nfree, g->cfg.hold_slots);

	/* The silent one's: idle-timeout. */
	tgw_advance(g, 10000 - 2000 - 1);
	CU_ASSERT_EQUAL(g->nout, 0);
	tgw_advance(g, 1);
	o = only_to_client(g, TCP_RST);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.dport, 40000);
	CU_ASSERT_EQUAL(g->w.ft.st.released[FLOW_IDLE], 1);
	CU_ASSERT_EQUAL(g->w.ft.st.released[FLOW_MSG_TIMEOUT], 1);
	CU_ASSERT_EQUAL(g->w.ft.c->used, 0);
	CU_ASSERT_EQUAL(g->w.st.backend_syn, 0);
	tgw_free(g);
}

/* Advances the clock by ms; asserts that nothing went out 1 ms before,
 * and returns what went to the backend with flags at the end. */
static const struct tgw_out *
after(struct tgw *g, unsigned ms, uint8_t flags)
{
	tgw_advance(g, ms - 1);
	CU_ASSERT_EQUAL(g->nout, 0);
	tgw_advance(g, 1);
	return tgw_find(g, true, flags, NULL);
}

static void
test_bind_backend_silent(void)
{
	struct tgw *g = tgw_new(dns_opts);
	uint8_t q[64];
	uint16_t qn = tgw_query(q, 40, 7, false);
	const struct tgw_out *o;
	struct tgw_conn c;
	unsigned i;

	/* The backend drops our SYNs (its accept queue full): they go
	 * again after 250 ms, then each wait twice the last, to 2 s. */
	tgw_handshake(g, &c, 40000, CISN);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, true, TCP_SYN, NULL));
	for (i = 0; i < g->cfg.syn_retries; i++) {
		o = after(g, (unsigned)rto_ms(i), TCP_SYN);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_EQUAL(o->p.seq, CISN);
	}
	CU_ASSERT_EQUAL(rto_ms(FLOW_RTO_LEVELS - 1), 2000);
	CU_ASSERT_EQUAL(g->w.st.backend_syn_retrans, g->cfg.syn_retries);
	/* Then the client is reset. */
	CU_ASSERT_PTR_NULL(after(g, 2000, 0));
	o = tgw_find(g, false, TCP_RST, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, c.gisn + 1);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	CU_ASSERT_EQUAL(g->w.ft.st.released[FLOW_SYN_TIMEOUT], 1);
	tgw_free(g);

	/* The backend answers, the held query is lost on the way to it:
	 * it goes again after 250 ms, then 500. */
	g = tgw_new(dns_opts);
	tgw_handshake(g, &c, 40000, CISN);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	tgw_backend_accept(g, &c, BISN);
	for (i = 0; i < 2; i++) {
		o = after(g, (unsigned)rto_ms(i), TCP_ACK);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_EQUAL(o->p.seq, CISN + 1);
		CU_ASSERT_EQUAL(o->p.paylen, qn);
	}
	tgw_free(g);
}

static void
test_bind_backlog(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53,backend-backlog=2", NULL,
	};
	struct tgw *g = tgw_new(opts);
	uint8_t q[64], a[128];
	uint16_t qn = tgw_query(q, 40, 9, false);
	uint16_t an = tgw_query(a, 90, 9, true);
	const struct tgw_out *o;
	struct tgw_conn c[4];
	uint32_t syn_tsval;
	unsigned i;

	/* Two first messages go to the backend; the third waits, all of it
	 * acknowledged, with a zero window. */
	for (i = 0; i < 3; i++) {
		tgw_handshake(g, &c[i], (uint16_t)(40000 + i), CISN);
		tgw_client_data(g, &c[i], q, qn, TCP_PSH);
		if (i < 2) {
			/* The backend's handshake alone frees no place. */
			tgw_backend_accept(g, &c[i], BISN);
			continue;
		}
		CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));
		o = tgw_find(g, false, TCP_ACK, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_EQUAL(o->p.ack, CISN + 1 + qn);
		CU_ASSERT_EQUAL(o->p.win, 0);
	}
	CU_ASSERT_EQUAL(g->w.st.backlog_queued, 1);
	CU_ASSERT_EQUAL(tgw_flow(g, &c[2])->timer, FLOW_TIMER_QUEUED);
	/* Its window probe: the same answer. */
	tgw_client_data(g, &c[2], NULL, 0, 0);
	o = tgw_find(g, false, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.win, 0);

	/* The backend's first answer frees a place, and the one waiting
	 * goes, with its whole message. */
	c[0].b_ack = c[0].c_nxt;
	tgw_backend_data(g, &c[0], a, an, TCP_PSH);
	o = tgw_find(g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.sport, 40002);
	syn_tsval = o->o.tsval;
	tgw_backend_accept(g, &c[2], BISN);
	o = tgw_find(g, true, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.paylen, qn);
	/* The SYN carried the probe's TSval, newer than the held query's:
	 * the query goes with one no older, or the backend's PAWS check
	 * (RFC 7323 §5) drops it and waits for it forever. */
	CU_ASSERT(o->o.has_ts);
	CU_ASSERT((int32_t)(o->o.tsval - syn_tsval) >= 0);
	o = tgw_find(g, false, TCP_ACK, NULL);	/* the window opens */
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT(o->p.win > 0);

	/* A fourth waits as long as a message may take, then is reset; the
	 * backend never hears of it. */
	tgw_handshake(g, &c[3], 40003, CISN);
	tgw_client_data(g, &c[3], q, qn, TCP_PSH);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));
	tgw_advance(g, 1999);
	CU_ASSERT_PTR_NOT_NULL(tgw_flow(g, &c[3]));
	tgw_advance(g, 1);
	o = tgw_find(g, false, TCP_RST, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.dport, 40003);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c[3]));
	CU_ASSERT_EQUAL(g->w.st.backlog_timeout, 1);
	CU_ASSERT_EQUAL(g->w.ft.st.released[FLOW_BACKLOG_TIMEOUT], 1);

	/* A flow that ends unanswered (its client's RST) frees its place
	 * too: the next waiting one goes at the next turn. */
	CU_ASSERT_EQUAL(g->w.opening[0], 2);
	tgw_handshake(g, &c[3], 40004, CISN);
	tgw_client_data(g, &c[3], q, qn, TCP_PSH);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, TCP_SYN, NULL));
	c[1].c_nxt = c[1].cisn + 1 + qn;
	tgw_client_data(g, &c[1], NULL, 0, TCP_RST);
	CU_ASSERT_EQUAL(g->w.opening[0], 1);
	tgw_advance(g, 0);
	o = tgw_find(g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.sport, 40004);
	CU_ASSERT_EQUAL(g->w.opening[0], 2);
	tgw_free(g);
}

static void
test_bind_backend_max(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53,backend-max=2,backend-backlog=0", NULL,
	};
	struct tgw *g = tgw_new(opts);
	uint8_t q[64], a[128];
	uint16_t qn = tgw_query(q, 40, 9, false);
	uint16_t an = tgw_query(a, 90, 9, true);
	const struct tgw_out *o;
	struct tgw_conn c[3];
	unsigned i;

	/* Two connections answered and kept: the backend holds its
	 * backend-max of ours, and a third first message waits. */
	for (i = 0; i < 3; i++) {
		tgw_handshake(g, &c[i], (uint16_t)(40000 + i), CISN);
		tgw_client_data(g, &c[i], q, qn, TCP_PSH);
		if (i == 2)
			break;
		tgw_backend_accept(g, &c[i], BISN);
		c[i].b_ack = c[i].c_nxt;
		tgw_backend_data(g, &c[i], a, an, TCP_PSH);
	}
	CU_ASSERT_PTR_NULL(tgw_find(g, true, TCP_SYN, NULL));
	CU_ASSERT_EQUAL(tgw_flow(g, &c[2])->timer, FLOW_TIMER_QUEUED);
	CU_ASSERT_EQUAL(atomic_load(&g->gw.backend_open[0]), 2);
	tgw_advance(g, 100);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, TCP_SYN, NULL));

	/* One of them ends: the one waiting goes at the next turn. */
	tgw_client_data(g, &c[0], NULL, 0, TCP_RST);
	tgw_advance(g, 0);
	o = tgw_find(g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.sport, 40002);
	CU_ASSERT_EQUAL(atomic_load(&g->gw.backend_open[0]), 2);
	tgw_free(g);
}

static void
test_bind_edges(void)
{
	struct tgw *g = tgw_new(dns_opts);
	static const char *const generic[] = {
		"protect", "192.0.2.2:80,delay-bind=1", NULL,
	};
	uint8_t q[1600];
	struct tgw_conn c;
	struct flow *f;

	tgw_query(q, 40, 1, false);
	tgw_handshake(g, &c, 40000, CISN);
	f = tgw_flow(g, &c);

	/* Past a hole: dropped unacknowledged, nothing framed. */
	c.c_nxt += 5;
	tgw_client_data(g, &c, q + 5, 10, TCP_PSH);
	c.c_nxt -= 15;
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(g->w.st.bind_out_of_order, 1);
	CU_ASSERT_EQUAL(f->dns.started, 0);

	/* Framing broken before any backend: only the client is reset. */
	tgw_query(q, 5, 1, false);
	tgw_client_data(g, &c, q, 7, TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(only_to_client(g, TCP_RST));
	CU_ASSERT_EQUAL(g->w.st.dns_short, 1);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));

	/* More than one segment's worth before the message ends: the
	 * backend is called at once and takes the rest itself. */
	tgw_handshake(g, &c, 40001, CISN);
	tgw_query(q, 1500, 2, false);
	tgw_client_data(g, &c, q, 1000, TCP_PSH);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, TCP_SYN, NULL));
	tgw_client_data(g, &c, q + 1000, 502, TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, true, TCP_SYN, NULL));
	CU_ASSERT_EQUAL(g->w.st.bind_too_big, 1);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->taken, 1000);
	tgw_free(g);

	/* A window that would round to nothing at the client's scale: the
	 * backend is called rather than leave the client stuck. */
	g = tgw_new(dns_opts);
	tgw_handshake(g, &c, 40002, CISN);
	tgw_client_data(g, &c, q, 1400, TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, true, TCP_SYN, NULL));
	CU_ASSERT_EQUAL(g->w.st.bind_too_big, 0);
	tgw_free(g);

	/* A client that closed (its last ACK lost) and comes back on the
	 * same port: the new handshake replaces the closing entry. */
	g = tgw_new(dns_opts);
	tgw_handshake(g, &c, 40003, CISN);
	tgw_client_data(g, &c, NULL, 0, TCP_FIN);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->fin & FLOW_FIN_BACKEND,
			FLOW_FIN_BACKEND);
	tgw_handshake(g, &c, 40003, CISN + 100000);
	f = tgw_flow(g, &c);
	CU_ASSERT_EQUAL(f->c_base, CISN + 100000);
	CU_ASSERT_EQUAL(f->fin, 0);
	CU_ASSERT_EQUAL(g->w.st.replaced, 1);
	CU_ASSERT_EQUAL(g->w.st.backend_syn, 0);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));	/* no backend RST */
	tgw_free(g);

	/* A generic service: the first byte is enough. */
	g = tgw_new(generic);
	tgw_handshake(g, &c, 40000, CISN);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->state, FLOW_BINDING);
	tgw_client_data(g, &c, (const uint8_t *)"G", 1, TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, true, TCP_SYN, NULL));
	tgw_free(g);
}

void
register_bind_tests(void)
{
	static const struct test_case cases[] = {
		{ "first message held, then the backend; its handshake "
		  "takes the message", test_bind_first_message },
		{ "silent and half-query clients reset, backend untouched",
		  test_bind_clocks },
		{ "a silent backend: SYNs and the held query again, "
		  "backing off from 250 ms", test_bind_backend_silent },
		{ "the backend's backlog: first messages wait in order, "
		  "go as answers come, or are reset", test_bind_backlog },
		{ "backend-max: no more connections to the backend than it "
		  "takes; the next first message waits", test_bind_backend_max },
		{ "holes, broken framing, a first message past a segment, "
		  "generic services", test_bind_edges },
	};

	TEST_SUITE("bind", cases);
}
