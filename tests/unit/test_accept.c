/*
 * gateway/accept.c on the test bench (testgw.h): a client segment of a
 * live flow is taken only under RFC 9293 §3.10.7.4 and RFC 5961 — a RST
 * at exactly RCV.NXT, a SYN challenged, an ACK within what was sent, seq
 * within the window — in every state, and a verified cookie ACK replaces
 * only a flow both sides have closed.
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "../../gateway/accept.h"
#include "../../gateway/conn.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"

#define CISN	0x10000000u
#define BISN	0x20000000u

static const char *const generic[] = { "protect", "192.0.2.2:80", NULL };

/* An established generic connection with a request the backend has not
 * acknowledged yet: b_ack = cisn + 1, c_nxt 100 past it. */
static struct tgw *
established(struct tgw_conn *c, uint16_t cport)
{
	static const uint8_t req[100] = { 'G', 'E', 'T' };
	struct tgw *g = tgw_new(generic);

	tgw_handshake(g, c, cport, CISN);
	tgw_backend_accept(g, c, BISN);
	CU_ASSERT_EQUAL_FATAL(tgw_flow(g, c)->state, FLOW_ESTABLISHED);
	tgw_client_data(g, c, req, sizeof(req), TCP_PSH);
	CU_ASSERT_FATAL(g->mangled);
	return g;
}

/* The challenge ACK in out: from the backend's address, at what it sent,
 * acknowledging ack. */
static void
assert_challenge(const struct tgw *g, uint32_t seq, uint32_t ack)
{
	const struct tgw_out *o = tgw_find(g, false, TCP_ACK, NULL);

	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.flags, TCP_ACK);
	CU_ASSERT_EQUAL(o->p.seq, seq);
	CU_ASSERT_EQUAL(o->p.ack, ack);
	CU_ASSERT(o->o.has_ts);
}

static void
test_accept_rst(void)
{
	struct tgw_conn c;
	struct tgw *g = established(&c, 41000);
	struct flow *f = tgw_flow(g, &c);

	/* In the window, not exact: challenged, the flow stays (it was
	 * taken anywhere from the backend's ACK to the client's next). */
	tgw_blind(g, &c, CISN + 1 + 50, 0, TCP_RST, c.c_tsval);
	assert_challenge(g, c.b_nxt, CISN + 1);
	CU_ASSERT_PTR_EQUAL(tgw_flow(g, &c), f);
	CU_ASSERT_EQUAL(g->w.st.rst_challenged, 1);
	/* Out of the window: dropped without a word. */
	tgw_blind(g, &c, CISN + 0x40000000u, 0, TCP_RST, c.c_tsval);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(g->w.st.rst_out_of_window, 1);
	/* The challenge's ACK brings the one a client that lost the
	 * connection sends: exactly RCV.NXT, which ends it, the backend's
	 * half too. */
	tgw_blind(g, &c, CISN + 1, 0, TCP_RST, c.c_tsval);
	CU_ASSERT(g->mangled);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	tgw_free(g);

	/* The client's own RST, at its SND.NXT, is exact too. */
	g = established(&c, 41001);
	tgw_client_data(g, &c, NULL, 0, TCP_RST);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	tgw_free(g);

	/* Before the backend is up: exact or challenged, no longer any seq
	 * within 64 KiB past the ISN. */
	g = tgw_new(generic);
	tgw_handshake(g, &c, 41002, CISN);
	f = tgw_flow(g, &c);
	CU_ASSERT_EQUAL_FATAL(f->state, FLOW_SYN_SENT);
	tgw_blind(g, &c, CISN + 1000, 0, TCP_RST, c.c_tsval);
	assert_challenge(g, c.gisn + 1, CISN + 1);
	CU_ASSERT_PTR_EQUAL(tgw_flow(g, &c), f);
	tgw_blind(g, &c, CISN + 1, 0, TCP_RST, c.c_tsval);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, true, TCP_RST, NULL));
	tgw_free(g);
}

static void
test_accept_ack(void)
{
	struct tgw_conn c;
	struct tgw *g = established(&c, 41010);
	struct flow *f = tgw_flow(g, &c);
	uint32_t tsval = f->c_tsval;

	/* seq right, ack a long way behind what the client acknowledged
	 * (RFC 5961 §5.2): its far-future TSval is not learned, nothing
	 * reaches the backend. */
	tgw_blind(g, &c, c.c_nxt, c.b_nxt - 0x01000000u, TCP_ACK,
		  tsval + 0x40000000u);
	assert_challenge(g, c.b_nxt, CISN + 1);
	CU_ASSERT_EQUAL(f->c_tsval, tsval);
	CU_ASSERT_EQUAL(g->w.st.ack_too_old, 1);
	/* ack of what was never sent. */
	g->w.now_ms += ACCEPT_CHALLENGE_INTERVAL_MS;
	tgw_blind(g, &c, c.c_nxt, c.b_nxt + 1, TCP_ACK, tsval + 0x40000000u);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->w.st.ack_unsent, 1);
	/* seq past the window. */
	g->w.now_ms += ACCEPT_CHALLENGE_INTERVAL_MS;
	tgw_blind(g, &c, c.c_nxt + 0x00100000u, c.b_nxt, TCP_FIN | TCP_ACK,
		  tsval + 0x40000000u);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->w.st.out_of_window, 1);
	CU_ASSERT_EQUAL(f->c_tsval, tsval);
	CU_ASSERT_EQUAL(f->fin, 0);
	CU_ASSERT_EQUAL(g->w.st.challenge_ack, 3);
	/* The client's own ACK goes on. */
	tgw_client_data(g, &c, NULL, 0, 0);
	CU_ASSERT(g->mangled);
	tgw_free(g);
}

static void
test_accept_syn(void)
{
	struct tgw_seg syn = {
		.seq = 0x55555555u, .flags = TCP_SYN, .win = 64240,
		.ts = true, .tsval = 5000, .mss = 1460, .wscale = 7,
	};
	struct tgw_conn c;
	struct tgw *g = established(&c, 41020);

	/* RFC 5961 §4: a SYN on a live tuple gets a challenge ACK, no
	 * cookie SYN-ACK to complete. */
	syn.cport = c.cport;
	tgw_send(g, &syn);
	assert_challenge(g, c.b_nxt, CISN + 1);
	CU_ASSERT_PTR_NULL(tgw_find(g, false, TCP_SYN, NULL));
	CU_ASSERT_EQUAL(g->w.st.syn_challenged, 1);
	CU_ASSERT_EQUAL(g->w.st.synack_sent, 1);	/* the handshake's */
	/* Within 500 ms, the flow gets no second challenge. */
	syn.tsval++;
	tgw_send(g, &syn);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(g->w.st.challenge_ack_limited, 1);
	/* A client that lost the connection answers with its RST at the
	 * challenge's ACK; then its SYN is answered. */
	tgw_blind(g, &c, CISN + 1, 0, TCP_RST, 5001);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	tgw_send(g, &syn);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, false, TCP_SYN | TCP_ACK, NULL));
	tgw_free(g);
}

static void
test_accept_tfo_syn_again(void)
{
	static const char *const tfo[] = {
		"protect", "192.0.2.2:80", "tfo", "yes", NULL,
	};
	static const uint8_t req[50] = { 'G', 'E', 'T' };
	struct tgw_seg syn = {
		.cport = 41030, .seq = CISN, .flags = TCP_SYN, .win = 64240,
		.ts = true, .tsval = 1002, .mss = 1460, .wscale = 7,
		.sack_perm = true,
	};
	struct tgw *g = tgw_new(tfo);
	const struct tgw_out *sa;
	uint8_t cookie[TFO_COOKIE_LEN];
	struct tgw_conn c = { .cport = 41030, .cisn = CISN };
	uint32_t gisn;
	int i;

	/* The cookie, asked for on another connection. */
	tgw_tfo_syn(g, 41029, CISN, 1000, NULL, 0, NULL, 0);
	sa = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
	CU_ASSERT_EQUAL_FATAL(sa->o.tfo_len, sizeof(cookie));
	memcpy(cookie, pkt_tcp(&sa->p) + sa->o.tfo_off, sizeof(cookie));
	/* The request rides in the SYN, acknowledged in the SYN-ACK. */
	tgw_tfo_syn(g, c.cport, CISN, 1001, cookie, sizeof(cookie), req,
		    sizeof(req));
	sa = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
	CU_ASSERT_EQUAL_FATAL(sa->p.ack, CISN + 1 + sizeof(req));
	CU_ASSERT_EQUAL_FATAL(g->w.st.tfo_taken, 1);
	gisn = sa->p.seq;
	/* That SYN-ACK lost: the SYN again, bare as Linux sends it once
	 * its SYN timer fires, then with cookie and data, gets the very
	 * same SYN-ACK, never a classic cookie's second ISN. */
	for (i = 0; i < 2; i++) {
		if (i == 0)
			tgw_send(g, &syn);
		else
			tgw_tfo_syn(g, c.cport, CISN, 1003, cookie,
				    sizeof(cookie), req, sizeof(req));
		sa = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
		CU_ASSERT_EQUAL(sa->p.seq, gisn);
		CU_ASSERT_EQUAL(sa->p.ack, CISN + 1 + sizeof(req));
		CU_ASSERT_EQUAL(g->w.st.tfo_syn_repeated, (unsigned)i + 1);
		CU_ASSERT_EQUAL(g->w.st.syn_challenged, 0);
	}
	/* Once the client has acknowledged it, a SYN is challenged. */
	c.gisn = gisn;
	c.c_nxt = CISN + 1 + sizeof(req);
	c.b_nxt = gisn + 1;
	c.g_tsval = sa->o.tsval;
	c.c_tsval = 1004;
	tgw_client_data(g, &c, NULL, 0, 0);
	CU_ASSERT_FALSE(tgw_flow(g, &c)->tfo_pending);
	syn.tsval = 1005;
	tgw_send(g, &syn);
	CU_ASSERT_PTR_NULL(tgw_find(g, false, TCP_SYN | TCP_ACK, NULL));
	CU_ASSERT_EQUAL(g->w.st.syn_challenged, 1);
	tgw_free(g);
}

/* A segment with the backend's address and port, as anyone can send it
 * (the gateway cannot tell where it came from): backend-space seq. */
static void
as_backend(struct tgw *g, const struct tgw_conn *c, uint32_t seq,
	   uint32_t ack, uint8_t flags)
{
	struct tgw_seg s = {
		.from_backend = true, .cport = c->cport, .seq = seq,
		.ack = ack, .flags = flags, .win = 509, .ts = true,
		.tsval = c->b_tsval + 0x40000000u, .tsecr = c->c_tsval - 1,
		.wscale = -1,
	};

	tgw_send(g, &s);
}

static void
test_accept_backend(void)
{
	static const uint8_t answer[3000] = { 'H', 'T', 'T', 'P' };
	struct tgw_conn c;
	struct tgw *g = established(&c, 41040);
	struct flow *f = tgw_flow(g, &c);
	uint32_t b_nxt;

	/* The backend acknowledges the request and sends much: a RST
	 * anywhere in what is in flight used to end the flow. */
	c.b_ack = c.c_nxt;
	tgw_backend_data(g, &c, answer, 1400, 0);
	tgw_backend_data(g, &c, answer + 1400, 1400, 0);
	b_nxt = c.bisn + 1 + (c.b_nxt - c.b_base);
	as_backend(g, &c, b_nxt - 700, 0, TCP_RST);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_PTR_EQUAL(tgw_flow(g, &c), f);
	CU_ASSERT_EQUAL(g->w.st.rst_out_of_window, 1);
	/* FIN, data and ACKs with the tuple and made-up numbers. */
	as_backend(g, &c, b_nxt + 0x01000000u, c.c_nxt, TCP_FIN | TCP_ACK);
	as_backend(g, &c, b_nxt, c.c_nxt + 0x01000000u, TCP_FIN | TCP_ACK);
	as_backend(g, &c, b_nxt, c.c_nxt - 0x01000000u, TCP_ACK);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 3);
	CU_ASSERT_EQUAL(f->fin, 0);
	CU_ASSERT_EQUAL(f->state, FLOW_ESTABLISHED);
	/* The backend's own segments go on; its RST at what it sent ends
	 * the flow. */
	tgw_backend_data(g, &c, answer, 200, TCP_PSH);
	CU_ASSERT(g->mangled);
	as_backend(g, &c, b_nxt + 200, 0, TCP_RST);
	CU_ASSERT(g->mangled);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	tgw_free(g);
}

/* A segment of n data bytes with the backend's address at seq (backend
 * space), acknowledging all the client sent. */
static void
as_backend_data(struct tgw *g, const struct tgw_conn *c, uint32_t seq,
		uint16_t n)
{
	static const uint8_t bytes[1400] = { 'B' };
	struct tgw_seg s = {
		.from_backend = true, .cport = c->cport, .seq = seq,
		.ack = c->c_nxt, .flags = TCP_ACK, .win = 509, .ts = true,
		.tsval = c->b_tsval, .tsecr = c->c_tsval - 1, .wscale = -1,
		.pay = bytes, .paylen = n,
	};

	tgw_send(g, &s);
}

/* Issue 31: the client chooses its window (here 65535 << 14), so seq from
 * the backend's address is held to the backend's own numbers too: at most
 * ACCEPT_BACKEND_SLACK past what it sent, ending at most that before what
 * the client acknowledged; an old duplicate further behind goes on to
 * the client unlearnt, for it to acknowledge. */
static void
test_accept_backend_seq(void)
{
	static const uint8_t answer[1400] = { 'H', 'T', 'T', 'P' };
	struct tgw *g = tgw_new(generic);
	struct tgw_conn c;
	uint32_t b_nxt, c_ack, ts_out, maxwin;
	struct flow *f;
	unsigned i;

	g->client_ws = 14;
	tgw_handshake(g, &c, 41050, CISN);
	tgw_backend_accept(g, &c, BISN);
	tgw_send(g, &(struct tgw_seg){
		.cport = c.cport, .seq = c.c_nxt, .ack = c.b_nxt,
		.flags = TCP_ACK, .win = 65535, .ts = true,
		.tsval = c.c_tsval++, .tsecr = c.g_tsval, .wscale = -1,
	});
	f = tgw_flow(g, &c);
	CU_ASSERT_EQUAL_FATAL(f->c_maxwin, 65535u << 14);
	/* The backend sends 70,000 bytes (more than the slack, for old
	 * duplicates behind it), the client acknowledges all but 1400. */
	for (i = 0; i < 50; i++)
		tgw_backend_data(g, &c, answer, sizeof(answer), 0);
	c_ack = c.b_nxt - 1400;
	tgw_send(g, &(struct tgw_seg){
		.cport = c.cport, .seq = c.c_nxt, .ack = c_ack,
		.flags = TCP_ACK, .win = 65535, .ts = true,
		.tsval = c.c_tsval++, .tsecr = c.g_tsval, .wscale = -1,
	});
	CU_ASSERT_EQUAL_FATAL(f->c_ack, c_ack);
	/* In the backend's space from here on. */
	b_nxt = c.bisn + 1 + (c.b_nxt - c.b_base);
	c_ack = b_nxt - 1400;

	/* Past what it sent by more than the slack: dropped, unanswered,
	 * though well within the client's window. */
	as_backend_data(g, &c, b_nxt + ACCEPT_BACKEND_SLACK + 1, 0);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 0);
	as_backend_data(g, &c, b_nxt + 0x20000000u, 100);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 2);
	/* Ending more than the slack before the client's ACK, within its
	 * window (a spurious retransmission): on to the client in its view,
	 * for it to acknowledge with D-SACK, and nothing learnt, though it
	 * acknowledges all the client sent and opens the window. */
	ts_out = f->ts_out;
	maxwin = f->b_maxwin;
	as_backend_data(g, &c, c_ack - ACCEPT_BACKEND_SLACK - 101, 100);
	CU_ASSERT_FATAL(g->mangled);
	CU_ASSERT_EQUAL(g->fwd.p.seq,
			c.b_nxt - 1400 - ACCEPT_BACKEND_SLACK - 101);
	CU_ASSERT_EQUAL(g->fwd.p.ack, c.c_nxt);
	CU_ASSERT_EQUAL(g->fwd.o.tsval, c.b_tsval + f->ts_delta);
	CU_ASSERT_EQUAL(f->ts_out, ts_out);
	CU_ASSERT_EQUAL(f->b_maxwin, maxwin);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(g->w.st.backend_old_dup, 1);
	CU_ASSERT_EQUAL(g->w.st.challenge_ack, 0);
	/* Before anything the backend sent: dropped without a word. */
	as_backend_data(g, &c, c.bisn - 100, 100);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 0);
	/* Behind the client's window too. */
	as_backend_data(g, &c, c_ack - 0x50000000u, 100);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 4);
	CU_ASSERT_EQUAL(f->b_nxt, c.b_nxt);
	CU_ASSERT_EQUAL(f->b_ack, CISN + 1);

	/* At the edges: taken.  An old duplicate ending the slack before
	 * the client's ACK, and, after segments lost before the gateway,
	 * one starting the slack past what the backend sent. */
	as_backend_data(g, &c, c_ack - ACCEPT_BACKEND_SLACK - 100, 100);
	CU_ASSERT(g->mangled);
	as_backend_data(g, &c, b_nxt + ACCEPT_BACKEND_SLACK, 100);
	CU_ASSERT(g->mangled);
	CU_ASSERT_EQUAL(f->b_nxt, c.b_nxt + ACCEPT_BACKEND_SLACK + 100);
	CU_ASSERT_EQUAL(f->b_ack, c.c_nxt);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 4);
	tgw_free(g);

	/* With bytes in flight, a client's window no wider than the slack
	 * bounds seq first: no further than its end (RFC 9293 §3.10.7.4). */
	g = tgw_new(generic);
	tgw_handshake(g, &c, 41051, CISN);
	tgw_backend_accept(g, &c, BISN);
	tgw_backend_data(g, &c, answer, 1400, 0);
	f = tgw_flow(g, &c);
	CU_ASSERT_EQUAL_FATAL(f->c_ack + 1400, c.b_nxt);
	CU_ASSERT_FATAL(f->c_maxwin <= FLOW_WINDOW_MIN);
	c_ack = c.bisn + 1;
	as_backend_data(g, &c, c_ack + FLOW_WINDOW_MIN + 1, 0);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	as_backend_data(g, &c, c_ack + FLOW_WINDOW_MIN, 0);
	CU_ASSERT(g->mangled);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 1);
	tgw_free(g);
}

/* A cookie ACK for a SYN the attacker sent with the tuple (its SYN-ACK went
 * to the real client, so the ISN is guessed: here it is computed, the
 * attacker's luck at its best). */
static void
cookie_ack(struct tgw *g, const struct tgw_conn *c, uint32_t isn)
{
	const struct service *svc = &g->cfg.services[0];
	struct cookie_tuple t = {
		.family = AF_INET, .caddr = test_client4, .saddr = svc->addr,
		.cport = c->cport, .sport = svc->port,
	};
	uint32_t ck = cookie_make(&g->w.keys, &t, isn, g->w.now_s,
				  cookie_mss_index(AF_INET, 1460), 0);
	struct tgw_seg s = {
		.cport = c->cport, .seq = isn + 1, .ack = ck + 1,
		.flags = TCP_ACK, .win = 502, .wscale = -1,
	};

	tgw_send(g, &s);
}

static void
test_accept_replace(void)
{
	struct tgw_conn c;
	struct tgw *g = established(&c, 41030);
	struct flow *f = tgw_flow(g, &c);
	unsigned i;

	/* On a live flow a valid cookie ACK is an ACK of bytes never sent:
	 * refused, the flow goes on (it replaced the flow, at 2^-25 odds). */
	for (i = 0; i < 8; i++) {
		cookie_ack(g, &c, 0x01000000u * i + 77);
		CU_ASSERT_EQUAL(g->verdict, NF_DROP);
		CU_ASSERT_PTR_EQUAL(tgw_flow(g, &c), f);
	}
	CU_ASSERT_EQUAL(g->w.st.replaced, 0);
	CU_ASSERT_EQUAL(g->w.st.ack_verified, 1);

	/* Once both sides have closed, a new incarnation replaces it at
	 * once: fast port reuse. */
	c.b_ack = c.c_nxt;
	tgw_backend_data(g, &c, NULL, 0, TCP_FIN);
	tgw_client_data(g, &c, NULL, 0, TCP_FIN);
	CU_ASSERT(accept_reusable(f));
	cookie_ack(g, &c, 0x33333333u);
	CU_ASSERT_EQUAL(g->w.st.replaced, 1);
	CU_ASSERT_EQUAL(g->w.st.ack_verified, 2);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->c_base, 0x33333333u);
	tgw_free(g);
}

/* MAC bits the odds test checks a cookie on: few enough that a run of
 * ODDS_N forged ACKs sees a hundred accepted where 25 bits would see none. */
#define ODDS_BITS	8
#define ODDS_N		200000u

/* Forged ACKs from random ports of the client's address with random seq,
 * ack and TSecr; how many verified. */
static uint64_t
forge_random(struct tgw *g, struct rng *r)
{
	uint64_t before = g->w.st.ack_verified;
	unsigned i;

	for (i = 0; i < ODDS_N; i++) {
		struct tgw_seg s = {
			.cport = (uint16_t)(1024 + rng_below(r, 64000)),
			.seq = rng32(r), .ack = rng32(r), .flags = TCP_ACK,
			.win = 502, .ts = true, .tsval = rng32(r),
			.tsecr = rng32(r), .wscale = -1,
		};

		tgw_send(g, &s);
	}
	return g->w.st.ack_verified - before;
}

/* n within four standard deviations of ODDS_N tries at probability p. */
static bool
near(uint64_t n, double p)
{
	double mean = ODDS_N * p, sd = __builtin_sqrt(mean * (1 - p));

	printf("(%llu verified, %.0f expected) ", (unsigned long long)n, mean);
	return n > mean - 4 * sd && n < mean + 4 * sd;
}

/*
 * The odds RELIABILITY.md states, measured on the worker's own path with
 * the MAC cut to ODDS_BITS: a random ACK passes the age check with 3/16
 * (ages 0..COOKIE_MAX_AGE of 16) and the MAC with 2^-bits — both key ids
 * name a loaded epoch; one whose tuple, seq and TSecr are a real SYN's
 * (its SYN-ACK gave the counter, key id and MSS bits away) with 2^-bits.
 * Each ACK is checked once: while a second secret is accepted, twice.
 */
static void
test_accept_odds(void)
{
	const double mac = 1.0 / (1u << ODDS_BITS);
	const double age = (COOKIE_MAX_AGE + 1) / 16.0;
	struct tgw *g = tgw_new(generic);
	struct tgw_conn c;
	struct rng r;
	uint64_t n;
	uint32_t base;
	unsigned i;

	rng_init(&r, 0x6f646473);
	g->w.keys.mac_mask = g->w.keys_alt.mac_mask = (1u << ODDS_BITS) - 1;
	CU_ASSERT(near(forge_random(g, &r), age * mac));

	/* The tuple of a real SYN: only the MAC bits (ISN bits 2..) are
	 * guessed; each one accepted is ended for the next guess. */
	memset(&c, 0, sizeof(c));
	{
		struct tgw_seg syn = {
			.cport = 42000, .seq = CISN, .flags = TCP_SYN,
			.win = 64240, .ts = true, .tsval = 1000, .mss = 1460,
			.wscale = 7, .sack_perm = true,
		};
		const struct tgw_out *sa;

		tgw_send(g, &syn);
		sa = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
		base = sa->p.seq & ~((uint32_t)((1u << ODDS_BITS) - 1) << 2);
		c.cport = 42000;
		c.g_tsval = sa->o.tsval;
	}
	n = 0;
	for (i = 0; i < ODDS_N; i++) {
		uint32_t guess = base | rng_below(&r, 1u << ODDS_BITS) << 2;
		struct flow *f;

		tgw_blind(g, &c, CISN + 1, guess + 1, TCP_ACK, 1001);
		if ((f = tgw_flow(g, &c))) {
			n++;
			conn_close(&g->w, f, FLOW_SHUTDOWN);
		}
	}
	CU_ASSERT(near(n, mac));

	/* A fleet rotating its secret: two verify, and the odds double. */
	rng_bytes(&r, g->master.accept, sizeof(g->master.accept));
	g->master.has_accept = true;
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&g->w.keys, g->w.now_s), 0);
	CU_ASSERT(near(forge_random(g, &r), 2 * age * mac));
	tgw_free(g);
}

void
register_accept_tests(void)
{
	static const struct test_case cases[] = {
		{ "RST: exact at RCV.NXT, challenged in the window, in "
		  "every state", test_accept_rst },
		{ "ACK within what was sent and seq within the window, or "
		  "nothing learned", test_accept_ack },
		{ "SYN on a live tuple: challenged, rate-limited, then "
		  "answered once the old one is reset", test_accept_syn },
		{ "a Fast Open SYN again, bare or not, gets the flow's own "
		  "SYN-ACK until it is acknowledged",
		  test_accept_tfo_syn_again },
		{ "backend segments judged as the client's: exact RST, ACK "
		  "and seq within windows", test_accept_backend },
		{ "issue 31: backend seq within the backend's own numbers, "
		  "whatever window the client chose", test_accept_backend_seq },
		{ "a cookie ACK replaces only a flow both sides closed",
		  test_accept_replace },
		{ "a forged ACK's odds, measured with an 8-bit MAC",
		  test_accept_odds },
	};

	TEST_SUITE("accept", cases);
}
