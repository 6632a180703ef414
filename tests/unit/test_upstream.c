/*
 * gateway/upstream.h on the test bench (testgw.h): a resolver's connection
 * to a far server of an upstream service, answered locally with a classic
 * cookie, its first query asked in a TCPCT SYN; the far server's SYN-ACK
 * with the answer (a transaction), with a responder cookie alone (a TCPCT
 * connection), without TCPCT (plain TCP), or none (a plain SYN within one
 * retransmission); the far servers' cache; the local leg's segments
 * judged as accept.c judges a client's.  The far server here is the test
 * itself, speaking RFC 6013 as a responder does, byte by byte.
 */
#include <string.h>

#include <CUnit/CUnit.h>

#include "../../gateway/farcache.h"
#include "../../gateway/upstream.h"
#include "../../nfq/bytes.h"
#include "../../nfq/tcpct.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"

#define FAR_ISN		0x5a5a0000u
#define FAR_TSVAL	424242u
#define QLEN		40		/* the query, without its length */
#define ALEN		120		/* the answer */

static const char *const far_opts[] = {
	"upstream", "203.0.113.53:53", NULL,
};
/* A prefix: its first address is the far server the bench speaks for. */
static const char *const far_opts6[] = {
	"upstream", "[2001:db8:d::/48]:53", NULL,
};

/* A far server's cookie: anything but the initiator's. */
static const uint8_t far_cr[UPSTREAM_COOKIE_LEN] = {
	0x81, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
};

struct up {
	struct tgw *g;
	struct tgw_conn c;
	uint8_t q[QLEN + 2];
	struct tgw_out syn;		/* what the far server was sent */
};

/* The resolver's handshake and query; the SYN that went out for it. */
static void
start(struct up *u, const char *const *opts, uint16_t cport)
{
	const struct tgw_out *syn;

	if (!u->g)
		u->g = tgw_new(opts);
	tgw_handshake(u->g, &u->c, cport, 1000u * cport);
	CU_ASSERT_EQUAL_FATAL(tgw_flow(u->g, &u->c)->state, FLOW_BINDING);
	tgw_query(u->q, QLEN, 0x3500 + cport, false);
	tgw_client_data(u->g, &u->c, u->q, sizeof(u->q), TCP_PSH);
	syn = tgw_find(u->g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(syn);
	CU_ASSERT_EQUAL(syn->p.seq, u->c.cisn);
	u->syn = *syn;
	u->syn.p.data = u->syn.buf;
}

/* Whether the SYN sent to the far server is TCPCT's with the query. */
static bool
syn_asks(const struct up *u)
{
	unsigned clen;

	return tcpct_form(&u->syn.o, TCP_SYN, &clen) == TCPCT_COOKIE &&
	       clen == UPSTREAM_COOKIE_LEN && u->syn.o.has_ts &&
	       u->syn.p.paylen == sizeof(u->q) &&
	       !memcmp(u->syn.p.data + u->syn.p.payoff, u->q, sizeof(u->q));
}

/* The far server's SYN-ACK: with cookie (NULL: none), data and flags. */
static void
far_synack(struct up *u, const uint8_t *cookie, uint32_t ack,
	   const uint8_t *data, uint16_t dlen, uint8_t flags)
{
	const struct service *svc = &u->g->cfg.services[0];
	struct tcpopt_spec os = {
		.mss = 1460, .sack_perm = true, .ts = true, .tsval = FAR_TSVAL,
		.tsecr = u->syn.o.tsval, .wscale = true, .wscale_shift = 7,
	};
	uint8_t opts[TCP_OPT_MAX], buf[QUEUE_PKT_ROOM];
	struct pkt_tcp_spec s = {
		.family = svc->family, .src = &svc->addr,
		.dst = svc->family == AF_INET ? &test_client4 : &test_client6,
		.sport = 53, .dport = u->c.cport, .seq = FAR_ISN, .ack = ack,
		.flags = TCP_SYN | TCP_ACK | flags, .win = 65160, .opts = opts,
		.pay = data, .paylen = dlen,
	};
	struct pkt p;
	size_t len;

	s.optlen = tcpopt_build(opts, &os);
	if (cookie)
		CU_ASSERT_FATAL(tcpct_put_cookie(opts, &s.optlen, sizeof(opts),
						 cookie, UPSTREAM_COOKIE_LEN));
	len = pkt_build_tcp(buf, sizeof(buf), &s, &p);
	CU_ASSERT_FATAL(len > 0);
	tgw_send_raw(u->g, buf, len);
}

/* A far server's segment after its SYN-ACK, standard (pair NULL) or with
 * the Cookie-Pair in a header extension. */
static void
far_seg(struct up *u, uint32_t seq, uint32_t ack, uint8_t flags,
	const uint8_t *data, uint16_t dlen, const uint8_t *pair)
{
	const struct service *svc = &u->g->cfg.services[0];
	uint8_t opts[TCPOPT_TSX_LEN + TCPCT_EXT_MAX + 512], buf[QUEUE_PKT_ROOM];
	struct pkt_tcp_spec s = {
		.family = svc->family, .src = &svc->addr,
		.dst = svc->family == AF_INET ? &test_client4 : &test_client6,
		.sport = 53, .dport = u->c.cport, .seq = seq, .ack = ack,
		.flags = flags, .win = 500, .opts = opts,
		.pay = data, .paylen = dlen,
	};
	struct pkt p;
	size_t len;

	if (pair) {
		struct tcpct_ext_spec e = {
			.tsval = FAR_TSVAL + 5, .tsecr = u->c.c_tsval - 1,
			.ci = pair, .cr = pair + UPSTREAM_COOKIE_LEN,
			.clen = UPSTREAM_COOKIE_LEN,
		};
		size_t area, n = tcpct_ext_build(opts, sizeof(opts), &e, &area);

		CU_ASSERT_FATAL(n > 0 && dlen == 0);
		s.optlen = area;
		s.pay = opts + area;
		s.paylen = n - area;
	} else {
		struct tcpopt_spec os = { .ts = true, .tsval = FAR_TSVAL + 5,
					  .tsecr = u->c.c_tsval - 1 };

		s.optlen = tcpopt_build(opts, &os);
	}
	len = pkt_build_tcp(buf, sizeof(buf), &s, &p);
	CU_ASSERT_FATAL(len > 0);
	tgw_send_raw(u->g, buf, len);
}

/* An out segment in the third packet's form, its extension read. */
static void
third(struct tgw_out *o, const struct tgw_out *from)
{
	*o = *from;
	o->p.data = o->buf;
	CU_ASSERT_FATAL(o->o.has_tsx);
	CU_ASSERT_EQUAL_FATAL(tcpct_ext_parse(&o->p, &o->o), TCPOPT_OK);
}

static uint64_t
far_kind(struct up *u)
{
	return farcache_get(&u->g->w.far, u->g->cfg.services[0].family,
			    &u->g->cfg.services[0].addr, 53, u->g->w.now_s);
}

/* The transaction: the answer in the SYN-ACK goes to the resolver with a
 * FIN from the far server's address, the far server gets our ACK and FIN
 * with the pair; the answer is sent again until acknowledged; the
 * resolver's FIN is acknowledged and the flow lingers, then goes. */
static void
answered(const char *const *opts)
{
	struct up u = { 0 };
	uint8_t a[ALEN + 2], pair[2 * UPSTREAM_COOKIE_LEN];
	const struct tgw_out *o;
	struct tgw_out t;
	struct flow *f;
	unsigned clen;

	start(&u, opts, 40001);
	CU_ASSERT_FATAL(syn_asks(&u));
	CU_ASSERT_EQUAL(u.g->w.st.upstream_asked, 1);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_cache_miss, 1);
	f = tgw_flow(u.g, &u.c);
	CU_ASSERT_EQUAL(f->up, UP_ASKED);
	memcpy(pair, u.syn.p.data + u.syn.p.l4off + u.syn.o.ck_off,
	       UPSTREAM_COOKIE_LEN);
	memcpy(pair + UPSTREAM_COOKIE_LEN, far_cr, UPSTREAM_COOKIE_LEN);

	tgw_query(a, ALEN, get16(u.q + 2), true);
	far_synack(&u, far_cr, u.c.cisn + 1 + sizeof(u.q), a, sizeof(a),
		   TCP_FIN | TCP_PSH);
	CU_ASSERT_EQUAL(u.g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_answered, 1);
	o = tgw_find(u.g, false, TCP_FIN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, u.c.gisn + 1);
	CU_ASSERT_EQUAL(o->p.ack, u.c.cisn + 1 + sizeof(u.q));
	CU_ASSERT_EQUAL(o->p.sport, 53);
	CU_ASSERT_FALSE(o->p.flags & TCP_SYN);
	CU_ASSERT_EQUAL_FATAL(o->p.paylen, sizeof(a));
	CU_ASSERT_EQUAL(memcmp(o->p.data + o->p.payoff, a, sizeof(a)), 0);
	CU_ASSERT(o->o.has_ts && o->o.tsecr == u.c.c_tsval - 1);
	/* RFC 6013 step 5: the far server is done, nothing kept there. */
	o = tgw_find(u.g, true, TCP_FIN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	third(&t, o);
	CU_ASSERT_EQUAL(t.p.seq, u.c.cisn + 1 + sizeof(u.q));
	CU_ASSERT_EQUAL(t.p.ack, FAR_ISN + 1 + sizeof(a) + 1);
	CU_ASSERT_EQUAL(t.o.tsecr, FAR_TSVAL);
	CU_ASSERT_EQUAL(tcpct_form(&t.o, t.p.flags, &clen), TCPCT_PAIR);
	CU_ASSERT_EQUAL(clen, UPSTREAM_COOKIE_LEN);
	CU_ASSERT_EQUAL(memcmp(t.p.data + t.p.l4off + t.o.ck_off, pair,
			       sizeof(pair)), 0);
	CU_ASSERT(t.o.has_mss && t.o.sack_perm && t.o.has_wscale);
	CU_ASSERT_EQUAL(t.p.paylen, 0);
	CU_ASSERT_EQUAL(far_kind(&u), FAR_TCPCT);
	CU_ASSERT_EQUAL(f->up, UP_DONE);

	/* Not acknowledged: sent again after the client's RTO. */
	tgw_advance(u.g, (unsigned)rto_ms(RTO_CLIENT));
	o = tgw_find(u.g, false, TCP_FIN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.paylen, sizeof(a));
	CU_ASSERT_EQUAL(u.g->w.st.upstream_answer_resent, 1);
	/* The far server's guarded ACK of our FIN: nothing to take. */
	far_seg(&u, FAR_ISN + 1 + sizeof(a) + 1,
		u.c.cisn + 1 + sizeof(u.q) + 1, TCP_ACK, NULL, 0, pair);
	CU_ASSERT_EQUAL(u.g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(u.g->nout, 0);

	/* The resolver takes all and closes: acknowledged, lingering. */
	u.c.b_nxt = u.c.gisn + 1 + sizeof(a) + 1;
	tgw_client_data(u.g, &u.c, NULL, 0, TCP_FIN);
	o = tgw_find(u.g, false, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, u.c.gisn + 1 + sizeof(a) + 1);
	CU_ASSERT_EQUAL(o->p.ack, u.c.c_nxt);
	CU_ASSERT_PTR_NULL(tgw_find(u.g, true, 0, NULL));
	f = tgw_flow(u.g, &u.c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(f->state, FLOW_CLOSED);
	CU_ASSERT_EQUAL(f->hold, -1);
	tgw_advance(u.g, u.g->cfg.closed_linger * 1000 + 1);
	CU_ASSERT_PTR_NULL(tgw_flow(u.g, &u.c));
	CU_ASSERT_EQUAL(u.g->w.ft.st.active, 0);
	tgw_free(u.g);
}

static void
test_answered(void)
{
	answered(far_opts);
	answered(far_opts6);
}

/* A responder cookie without an answer: the query goes in the third
 * packet; the far server's answer is spliced; its FIN without the pair is
 * dropped, with it stripped and taken; the resolver's FIN gets the pair. */
static void
test_tcpct_connection(void)
{
	struct up u = { 0 };
	uint8_t a[ALEN + 2], pair[2 * UPSTREAM_COOKIE_LEN];
	const struct tgw_out *o;
	struct tgw_out t;
	struct flow *f;
	unsigned clen;

	start(&u, far_opts, 40002);
	CU_ASSERT_FATAL(syn_asks(&u));
	memcpy(pair, u.syn.p.data + u.syn.p.l4off + u.syn.o.ck_off,
	       UPSTREAM_COOKIE_LEN);
	memcpy(pair + UPSTREAM_COOKIE_LEN, far_cr, UPSTREAM_COOKIE_LEN);
	far_synack(&u, far_cr, u.c.cisn + 1, NULL, 0, 0);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_tcpct_conn, 1);
	f = tgw_flow(u.g, &u.c);
	CU_ASSERT_EQUAL(f->up, UP_CONN);
	CU_ASSERT_EQUAL(f->state, FLOW_ESTABLISHED);
	o = tgw_find(u.g, true, TCP_ACK | TCP_PSH, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	third(&t, o);
	CU_ASSERT_EQUAL(t.p.seq, u.c.cisn + 1);
	CU_ASSERT_EQUAL(t.p.ack, FAR_ISN + 1);
	CU_ASSERT_EQUAL(t.o.tsecr, FAR_TSVAL);
	CU_ASSERT_EQUAL(tcpct_form(&t.o, t.p.flags, &clen), TCPCT_PAIR);
	CU_ASSERT_EQUAL(memcmp(t.p.data + t.p.l4off + t.o.ck_off, pair,
			       sizeof(pair)), 0);
	CU_ASSERT_EQUAL_FATAL(t.p.paylen, sizeof(u.q));
	CU_ASSERT_EQUAL(memcmp(t.p.data + t.p.payoff, u.q, sizeof(u.q)), 0);
	/* The resolver is given the window, its query acknowledged. */
	o = tgw_find(u.g, false, TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.ack, u.c.cisn + 1 + sizeof(u.q));
	/* Not acknowledged: the third packet again. */
	tgw_advance(u.g, (unsigned)rto_ms(0));
	o = tgw_find(u.g, true, TCP_ACK | TCP_PSH, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT(o->o.has_tsx);

	/* The answer, standard: spliced to the resolver. */
	tgw_query(a, ALEN, get16(u.q + 2), true);
	far_seg(&u, FAR_ISN + 1, u.c.cisn + 1 + sizeof(u.q),
		TCP_ACK | TCP_PSH, a, sizeof(a), NULL);
	CU_ASSERT(u.g->mangled);
	CU_ASSERT_EQUAL(u.g->fwd.p.seq, u.c.gisn + 1);
	CU_ASSERT_EQUAL(u.g->fwd.p.paylen, sizeof(a));
	CU_ASSERT_EQUAL(f->hold, -1);
	/* Its FIN without the pair: dropped (RFC 6013 §7); with a pair not
	 * ours: dropped; with ours: stripped, the resolver gets it plain. */
	far_seg(&u, FAR_ISN + 1 + sizeof(a), u.c.cisn + 1 + sizeof(u.q),
		TCP_ACK | TCP_FIN, NULL, 0, NULL);
	CU_ASSERT_EQUAL(u.g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_unguarded, 1);
	pair[5] ^= 1;
	far_seg(&u, FAR_ISN + 1 + sizeof(a), u.c.cisn + 1 + sizeof(u.q),
		TCP_ACK | TCP_FIN, NULL, 0, pair);
	CU_ASSERT_EQUAL(u.g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_bad_pair, 1);
	pair[5] ^= 1;
	far_seg(&u, FAR_ISN + 1 + sizeof(a), u.c.cisn + 1 + sizeof(u.q),
		TCP_ACK | TCP_FIN, NULL, 0, pair);
	CU_ASSERT_FATAL(u.g->mangled);
	CU_ASSERT(u.g->fwd.p.flags & TCP_FIN);
	CU_ASSERT_FALSE(u.g->fwd.o.has_tsx);
	CU_ASSERT_EQUAL(u.g->fwd.o.ck_len, 0);
	CU_ASSERT(u.g->fwd.o.has_ts);
	/* The resolver's FIN goes on with the pair. */
	u.c.c_nxt = u.c.cisn + 1 + sizeof(u.q);
	u.c.b_nxt = u.c.gisn + 1 + sizeof(a) + 1;
	tgw_client_data(u.g, &u.c, NULL, 0, TCP_FIN);
	CU_ASSERT_FATAL(u.g->mangled);
	CU_ASSERT(u.g->fwd.o.has_tsx);
	third(&t, &u.g->fwd);
	CU_ASSERT_EQUAL(memcmp(t.p.data + t.p.l4off + t.o.ck_off, pair,
			       sizeof(pair)), 0);
	CU_ASSERT_EQUAL(t.p.ack, FAR_ISN + 1 + sizeof(a) + 1);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_guarded, 1);
	tgw_free(u.g);
}

/* No TCPCT option in the SYN-ACK: plain TCP, the query sent after the
 * handshake; the server known legacy, so that the next connection to it
 * gets a plain SYN at once. */
static void
test_plain(void)
{
	struct up u = { 0 };
	const struct tgw_out *o;
	struct flow *f;

	start(&u, far_opts, 40003);
	CU_ASSERT_FATAL(syn_asks(&u));
	far_synack(&u, NULL, u.c.cisn + 1, NULL, 0, 0);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_plain, 1);
	f = tgw_flow(u.g, &u.c);
	CU_ASSERT_EQUAL(f->up, UP_PLAIN);
	CU_ASSERT_EQUAL(f->state, FLOW_ESTABLISHED);
	o = tgw_find(u.g, true, TCP_ACK | TCP_PSH, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_FALSE(o->o.has_tsx);
	CU_ASSERT_EQUAL(o->o.ck_len, 0);
	CU_ASSERT_EQUAL(o->p.seq, u.c.cisn + 1);
	CU_ASSERT_EQUAL(o->p.ack, FAR_ISN + 1);
	CU_ASSERT_EQUAL_FATAL(o->p.paylen, sizeof(u.q));
	CU_ASSERT_EQUAL(memcmp(o->p.data + o->p.payoff, u.q, sizeof(u.q)), 0);
	CU_ASSERT_EQUAL(far_kind(&u), FAR_LEGACY);

	/* The next: a plain SYN, nothing but the resolver's own. */
	start(&u, far_opts, 40004);
	CU_ASSERT_FALSE(syn_asks(&u));
	CU_ASSERT_EQUAL(u.syn.o.ck_len, 0);
	CU_ASSERT_EQUAL(u.syn.p.paylen, 0);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_plain_cached, 1);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_cache_legacy, 1);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_asked, 1);
	CU_ASSERT_EQUAL(tgw_flow(u.g, &u.c)->up, UP_PLAIN);
	tgw_free(u.g);
}

/* A far server (or a firewall before it) that drops TCPCT SYNs: the first
 * retransmission is a plain SYN, counted and cached; its SYN-ACK makes a
 * plain splice. */
static void
test_silent(void)
{
	struct up u = { 0 };
	const struct tgw_out *o;

	start(&u, far_opts, 40005);
	CU_ASSERT_FATAL(syn_asks(&u));
	/* Not before the far server's RTO (RFC 6298 §2.1). */
	tgw_advance(u.g, (unsigned)rto_ms(RTO_CLIENT) - 10);
	CU_ASSERT_PTR_NULL(tgw_find(u.g, true, TCP_SYN, NULL));
	tgw_advance(u.g, 10);
	o = tgw_find(u.g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, u.c.cisn);
	CU_ASSERT_EQUAL(o->o.ck_len, 0);
	CU_ASSERT_EQUAL(o->p.paylen, 0);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_silent, 1);
	CU_ASSERT_EQUAL(far_kind(&u), FAR_LEGACY);
	u.syn = *o;
	u.syn.p.data = u.syn.buf;
	far_synack(&u, NULL, u.c.cisn + 1, NULL, 0, 0);
	o = tgw_find(u.g, true, TCP_ACK | TCP_PSH, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.paylen, sizeof(u.q));
	CU_ASSERT_EQUAL(tgw_flow(u.g, &u.c)->state, FLOW_ESTABLISHED);
	tgw_free(u.g);
}

/* Odd SYN-ACKs: our own cookie echoed, data that is no whole answer: the
 * far half reset and asked again plainly; a RST to the TCPCT SYN refuses
 * the resolver. */
static void
test_odd(void)
{
	struct up u = { 0 };
	uint8_t echo[UPSTREAM_COOKIE_LEN], a[ALEN + 2];
	const struct tgw_out *o;

	start(&u, far_opts, 40006);
	memcpy(echo, u.syn.p.data + u.syn.p.l4off + u.syn.o.ck_off,
	       sizeof(echo));
	far_synack(&u, echo, u.c.cisn + 1, NULL, 0, 0);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_odd, 1);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(u.g, true, TCP_RST, NULL));
	o = tgw_find(u.g, true, TCP_SYN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->o.ck_len, 0);

	/* An answer with another ID. */
	farcache_put(&u.g->w.far, AF_INET, &u.g->cfg.services[0].addr, 53,
		     FAR_UNKNOWN, u.g->w.now_s);
	start(&u, far_opts, 40007);
	CU_ASSERT_FATAL(syn_asks(&u));
	tgw_query(a, ALEN, get16(u.q + 2) + 1, true);
	far_synack(&u, far_cr, u.c.cisn + 1 + sizeof(u.q), a, sizeof(a),
		   TCP_FIN);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_odd, 2);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_answered, 0);
	CU_ASSERT_PTR_NULL(tgw_find(u.g, false, TCP_PSH, NULL));

	/* Refused. */
	farcache_put(&u.g->w.far, AF_INET, &u.g->cfg.services[0].addr, 53,
		     FAR_UNKNOWN, u.g->w.now_s);
	start(&u, far_opts, 40008);
	CU_ASSERT_FATAL(syn_asks(&u));
	far_seg(&u, 0, u.c.cisn + 1 + sizeof(u.q), TCP_RST | TCP_ACK, NULL, 0,
		NULL);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_refused, 1);
	o = tgw_find(u.g, false, TCP_RST, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, u.c.gisn + 1);
	CU_ASSERT_PTR_NULL(tgw_flow(u.g, &u.c));
	tgw_free(u.g);
}

/* After a transaction the local leg is tcpctd's alone, and its segments
 * are judged as any client's (RFC 9293 §3.10.7.4, RFC 5961): a RST in
 * the window but not exact is challenged, one outside dropped, an ACK of
 * what was never sent challenged, data past the window dropped; none of
 * them moves the flow.  The exact RST ends it. */
static void
test_local_leg(void)
{
	struct up u = { 0 };
	uint8_t a[ALEN + 2];
	struct flow *f;
	uint32_t rcv;

	start(&u, far_opts, 40009);
	tgw_query(a, ALEN, get16(u.q + 2), true);
	far_synack(&u, far_cr, u.c.cisn + 1 + sizeof(u.q), a, sizeof(a),
		   TCP_FIN);
	f = tgw_flow(u.g, &u.c);
	CU_ASSERT_EQUAL_FATAL(f->up, UP_DONE);
	rcv = u.c.cisn + 1 + sizeof(u.q);
	tgw_blind(u.g, &u.c, rcv + 100, 0, TCP_RST, u.c.c_tsval);
	CU_ASSERT_EQUAL(u.g->w.st.rst_challenged, 1);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(u.g, false, TCP_ACK, NULL));
	tgw_blind(u.g, &u.c, rcv + 0x40000000u, 0, TCP_RST, u.c.c_tsval);
	CU_ASSERT_EQUAL(u.g->w.st.rst_out_of_window, 1);
	tgw_blind(u.g, &u.c, rcv, u.c.gisn + 5000, TCP_ACK, u.c.c_tsval);
	CU_ASSERT_EQUAL(u.g->w.st.ack_unsent, 1);
	tgw_blind(u.g, &u.c, rcv + 0x20000000u, u.c.gisn + 1, TCP_ACK | TCP_FIN,
		  u.c.c_tsval);
	CU_ASSERT_EQUAL(u.g->w.st.out_of_window, 1);
	CU_ASSERT_PTR_EQUAL(tgw_flow(u.g, &u.c), f);
	CU_ASSERT_FALSE(f->fin & FLOW_FIN_CLIENT);
	CU_ASSERT(f->hold >= 0);
	/* A query after the answer's FIN: reset, so that it asks again. */
	u.c.c_nxt = rcv;
	u.c.b_nxt = u.c.gisn + 1 + sizeof(a) + 1;
	tgw_client_data(u.g, &u.c, u.q, sizeof(u.q), TCP_PSH);
	CU_ASSERT_EQUAL(u.g->w.st.upstream_local_late, 1);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(u.g, false, TCP_RST, NULL));
	CU_ASSERT_PTR_NULL(tgw_flow(u.g, &u.c));

	/* The exact RST ends one. */
	farcache_put(&u.g->w.far, AF_INET, &u.g->cfg.services[0].addr, 53,
		     FAR_UNKNOWN, u.g->w.now_s);
	start(&u, far_opts, 40010);
	tgw_query(a, ALEN, get16(u.q + 2), true);
	far_synack(&u, far_cr, u.c.cisn + 1 + sizeof(u.q), a, sizeof(a),
		   TCP_FIN);
	CU_ASSERT_EQUAL_FATAL(tgw_flow(u.g, &u.c)->up, UP_DONE);
	tgw_blind(u.g, &u.c, u.c.cisn + 1 + sizeof(u.q), 0, TCP_RST,
		  u.c.c_tsval);
	CU_ASSERT_PTR_NULL(tgw_flow(u.g, &u.c));
	tgw_free(u.g);
}

/* The far servers' table: bounded, each set's oldest given up, entries
 * forgotten after their time. */
static void
test_farcache(void)
{
	struct farcache c;
	struct inaddr a = { { 203, 0, 113, 0 } };
	unsigned i, replaced = 0;

	CU_ASSERT_EQUAL_FATAL(farcache_init(&c, 16, 7), 0);
	CU_ASSERT_EQUAL(c.mask + 1, 16 / FARCACHE_WAYS);
	for (i = 0; i < 200; i++) {
		a.b[3] = (uint8_t)i;
		a.b[2] = (uint8_t)(i >> 8);
		replaced += farcache_put(&c, AF_INET, &a, 53, FAR_TCPCT, 1000 + i);
	}
	CU_ASSERT_EQUAL(c.used, 16);
	CU_ASSERT_EQUAL(replaced, 200 - 16);
	/* The latest is there, the first long gone. */
	CU_ASSERT_EQUAL(farcache_get(&c, AF_INET, &a, 53, 1200), FAR_TCPCT);
	CU_ASSERT_EQUAL(farcache_get(&c, AF_INET, &a, 54, 1200), FAR_UNKNOWN);
	CU_ASSERT_EQUAL(farcache_get(&c, AF_INET, &a, 53,
				     1199 + FARCACHE_TTL_S), FAR_UNKNOWN);
	farcache_put(&c, AF_INET, &a, 53, FAR_LEGACY, 1300);
	CU_ASSERT_EQUAL(farcache_get(&c, AF_INET, &a, 53, 1300), FAR_LEGACY);
	a.b[3] = 0;
	a.b[2] = 0;
	CU_ASSERT_EQUAL(farcache_get(&c, AF_INET, &a, 53, 1300), FAR_UNKNOWN);
	farcache_free(&c);
}

void
register_upstream_tests(void)
{
	static const struct test_case cases[] = {
		{ "issue 35: a transaction answered in the far SYN-ACK",
		  test_answered },
		{ "issue 35: a responder cookie alone: a TCPCT connection",
		  test_tcpct_connection },
		{ "issue 35: no TCPCT: plain TCP, cached", test_plain },
		{ "issue 35: a silent far server: plain within one "
		  "retransmission, cached", test_silent },
		{ "issue 35: odd SYN-ACKs and refusals", test_odd },
		{ "issue 35: the local leg judged as a client's",
		  test_local_leg },
		{ "issue 35: the far servers' cache", test_farcache },
	};

	TEST_SUITE("upstream", cases);
}
