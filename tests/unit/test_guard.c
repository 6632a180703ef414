/*
 * gateway/guard.c and the DNS framing it applies (gateway/dnsmsg.c): the
 * client's byte stream framed in any cut, what no client sends refused,
 * bytes taken in order only, bytes sent again only as framed, max-queries,
 * the message and idle clocks, the per-client caps (on all connections,
 * and on the pending ones) and rate, and a closed flow reset on both sides.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../gateway/admit.h"
#include "../../gateway/guard.h"
#include "../../gateway/overload.h"
#include "../../gateway/worker.h"
#include "../../nfq/bytes.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"

#define NOW_MS	5000000u
#define CISN	0xfffffff0u	/* the stream wraps */

/* A DNS message of len bytes after its 2-byte length: a query for
 * opcode op with qd questions, QR as given. */
static size_t
mkmsg(uint8_t *b, unsigned len, bool qr, unsigned op, unsigned qd)
{
	memset(b, 0, (size_t)len + 2);
	put16(b, (uint16_t)len);
	put16(b + 2, 0x1234);
	b[4] = (uint8_t)((qr ? 0x80 : 0) | op << 3);
	put16(b + 6, (uint16_t)qd);
	return (size_t)len + 2;
}

static void
test_dnsframe(void)
{
	uint8_t m[2 * 40];
	struct dnsframe d;
	size_t n, i;

	/* Byte by byte: mid-message until the last byte. */
	memset(&d, 0, sizeof(d));
	n = mkmsg(m, 29, false, 0, 1);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(dnsframe_feed(&d, m + i, 1), DNSFRAME_OK);
		CU_ASSERT_EQUAL(dnsframe_mid(&d), i + 1 < n);
	}
	CU_ASSERT_EQUAL(d.started, 1);

	/* Two pipelined in one piece, then the first byte of a third. */
	n = mkmsg(m, 29, false, 0, 1);
	mkmsg(m + n, 12, false, 0, 1);
	CU_ASSERT_EQUAL(dnsframe_feed(&d, m, n + 14), DNSFRAME_OK);
	CU_ASSERT_EQUAL(d.started, 3);
	CU_ASSERT_FALSE(dnsframe_mid(&d));
	CU_ASSERT_EQUAL(dnsframe_feed(&d, m, 1), DNSFRAME_OK);
	CU_ASSERT_TRUE(dnsframe_mid(&d));
	CU_ASSERT_EQUAL(d.started, 4);

	/* A length under a header. */
	memset(&d, 0, sizeof(d));
	mkmsg(m, 11, false, 0, 1);
	CU_ASSERT_EQUAL(dnsframe_feed(&d, m, 13), DNSFRAME_SHORT);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_EQUAL(dnsframe_feed(&d, (const uint8_t[]){ 0, 0 }, 2),
			DNSFRAME_SHORT);

	/* Headers no client sends, seen as soon as their bytes are. */
	{
		static const struct {
			bool qr;
			unsigned op, qd;
			enum dnsframe_verdict v;
		} h[] = {
			{ true, 0, 1, DNSFRAME_NOT_REQUEST },	/* an answer */
			{ false, 0, 0, DNSFRAME_NOT_REQUEST },
			{ false, 0, 2, DNSFRAME_NOT_REQUEST },
			{ false, 1, 1, DNSFRAME_NOT_REQUEST },	/* IQUERY */
			{ false, 2, 1, DNSFRAME_NOT_REQUEST },	/* STATUS */
			{ false, 15, 1, DNSFRAME_NOT_REQUEST },
			{ false, 4, 1, DNSFRAME_OK },		/* NOTIFY */
			{ false, 5, 1, DNSFRAME_OK },		/* UPDATE */
			{ false, 6, 0, DNSFRAME_OK },		/* DSO */
			{ false, 6, 1, DNSFRAME_NOT_REQUEST },
		};

		for (i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
			memset(&d, 0, sizeof(d));
			mkmsg(m, 20, h[i].qr, h[i].op, h[i].qd);
			CU_ASSERT_EQUAL(dnsframe_feed(&d, m, 8), h[i].v);
		}
	}

	/* Zone transfers are told by their question's QTYPE, in any cut;
	 * other types, opcodes and a server's half are not. */
	{
		static const uint8_t axfr[] = {
			0, 30, 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
			7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 4, 't', 'e', 's',
			't', 0, 0, 252, 0, 1,
		};
		uint8_t msg[sizeof(axfr)];
		static const struct {
			uint8_t type, op;
			bool server, xfr;
		} t[] = {
			{ 252, 0, false, true }, { 251, 0, false, true },
			{ 1, 0, false, false }, { 252, 4 << 3, false, false },
			{ 252, 0, true, false },
		};
		size_t k, cut;

		for (k = 0; k < sizeof(t) / sizeof(t[0]); k++)
			for (cut = 1; cut < sizeof(msg); cut++) {
				memcpy(msg, axfr, sizeof(msg));
				msg[29] = t[k].type;
				msg[4] = t[k].op;
				memset(&d, 0, sizeof(d));
				d.server = t[k].server;
				CU_ASSERT_EQUAL(dnsframe_feed(&d, msg, cut),
						DNSFRAME_OK);
				CU_ASSERT_EQUAL(dnsframe_feed(&d, msg + cut,
							      sizeof(msg) - cut),
						DNSFRAME_OK);
				CU_ASSERT_EQUAL(d.xfr, t[k].xfr);
				CU_ASSERT_FALSE(dnsframe_mid(&d));
			}
	}

	/* The longest message, in 1000-byte pieces. */
	{
		uint8_t *big = calloc(1, 65537);
		size_t off;

		CU_ASSERT_PTR_NOT_NULL_FATAL(big);
		mkmsg(big, 12, false, 0, 1);
		put16(big, 65535);
		memset(&d, 0, sizeof(d));
		for (off = 0; off < 65537; off += 1000)
			CU_ASSERT_EQUAL(dnsframe_feed(&d, big + off,
						      65537 - off < 1000 ?
						      65537 - off : 1000),
					DNSFRAME_OK);
		CU_ASSERT_FALSE(dnsframe_mid(&d));
		CU_ASSERT_EQUAL(d.started, 1);
		free(big);
	}
}

struct fixture {
	struct config cfg;
	struct gateway gw;
	struct worker w;
};

static struct fixture *
setup(const char *protect)
{
	struct fixture *x = calloc(1, sizeof(*x));

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	config_defaults(&x->cfg);
	CU_ASSERT_EQUAL_FATAL(config_set(&x->cfg, "protect", protect, "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_check(&x->cfg, NULL, NULL), 0);
	x->gw.cfg = &x->cfg;
	CU_ASSERT_EQUAL_FATAL(limits_init(&x->gw.limits, 1024, 3), 0);
	x->w.gw = &x->gw;
	x->w.cfg = &x->cfg;
	x->w.ij.fd4 = x->w.ij.fd6 = -1;
	x->w.now_ms = NOW_MS;
	x->w.now_s = 86400;
	CU_ASSERT_EQUAL_FATAL(flow_table_init(&x->w.ft, 64, 1), 0);
	return x;
}

static void
teardown(struct fixture *x)
{
	flow_table_free(&x->w.ft);
	limits_free(&x->gw.limits);
	free(x);
}

static struct flow *
mkflow(struct fixture *x, uint16_t cport)
{
	struct flow_key k = {
		.family = AF_INET, .cport = cport, .bport = 53,
		.caddr = test_client4, .baddr = test_backend4,
	};
	struct flow *f = flow_insert(&x->w.ft, &k);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	f->state = FLOW_ESTABLISHED;
	f->born = x->w.now_ms;
	f->c_base = CISN;
	f->c_nxt = f->dns_nxt = f->b_ack = CISN + 1;
	guard_touch(&x->w, f, true);
	return f;
}

/* The RSTs queued for injection: to the backend, then the client. */
static void
assert_reset_both(struct fixture *x, unsigned from)
{
	struct pkt p;

	CU_ASSERT_EQUAL_FATAL(x->w.ij.n, from + 2);
	CU_ASSERT_EQUAL(pkt_parse(&p, x->w.ij.buf[from], INJECT_BUF), PKT_OK);
	CU_ASSERT_EQUAL(p.flags, TCP_RST);
	CU_ASSERT_EQUAL(memcmp(p.dst.b, test_backend4.b, 4), 0);
	CU_ASSERT_EQUAL(pkt_parse(&p, x->w.ij.buf[from + 1], INJECT_BUF),
			PKT_OK);
	CU_ASSERT_EQUAL(p.flags, TCP_RST);
	CU_ASSERT_EQUAL(memcmp(p.dst.b, test_client4.b, 4), 0);
}

static void
test_guard_data(void)
{
	struct fixture *x = setup("192.0.2.2:53,max-queries=2");
	uint8_t m[128];
	size_t n = mkmsg(m, 29, false, 0, 1);
	struct flow *f = mkflow(x, 40000);
	uint32_t seq = CISN + 1;

	/* Past a hole: dropped, nothing framed. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + 5, m, 10), GUARD_DROP);
	CU_ASSERT_EQUAL(x->w.st.dns_out_of_order, 1);
	CU_ASSERT_EQUAL(f->dns.started, 0);
	/* In order, in two pieces across the wrap of the sequence space. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, 20), GUARD_PASS);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + 20, m + 20,
				   (uint32_t)n - 20), GUARD_PASS);
	CU_ASSERT_FALSE(dnsframe_mid(&f->dns));
	/* Sent again, whole or overlapping: the old bytes are not framed
	 * twice (they would be a second query). */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, (uint32_t)n), GUARD_PASS);
	CU_ASSERT_EQUAL(f->dns.started, 1);
	seq += (uint32_t)n;
	mkmsg(m + n, 29, false, 0, 1);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq - 10, m + n - 10,
				   (uint32_t)n + 10), GUARD_PASS);
	CU_ASSERT_EQUAL(f->dns.started, 2);
	CU_ASSERT_EQUAL(f->dns_nxt, seq + n);
	CU_ASSERT_EQUAL(x->w.ij.n, 0);
	/* A third message is one too many: both sides reset. */
	seq += (uint32_t)n;
	f->c_nxt = seq;
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, 1), GUARD_CLOSED);
	CU_ASSERT_EQUAL(x->w.st.dns_max_queries, 1);
	CU_ASSERT_EQUAL(x->w.ft.st.released[FLOW_MAX_QUERIES], 1);
	assert_reset_both(x, 0);

	/* Framing broken: a short length, and an answer from a client. */
	f = mkflow(x, 40001);
	mkmsg(m, 5, false, 0, 1);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 1, m, 7), GUARD_CLOSED);
	CU_ASSERT_EQUAL(x->w.st.dns_short, 1);
	f = mkflow(x, 40002);
	n = mkmsg(m, 29, true, 0, 1);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 1, m, (uint32_t)n),
			GUARD_CLOSED);
	CU_ASSERT_EQUAL(x->w.st.dns_not_request, 1);
	CU_ASSERT_EQUAL(x->w.ft.st.released[FLOW_FRAMING], 2);
	assert_reset_both(x, 4);
	CU_ASSERT_EQUAL(x->w.ft.c->used, 0);
	teardown(x);

	/* A generic service's bytes are not looked at. */
	x = setup("192.0.2.2:80");
	f = mkflow(x, 40000);
	mkmsg(m, 5, true, 0, 1);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 1, m, 7), GUARD_PASS);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 100, m, 7), GUARD_PASS);
	teardown(x);
}

/* The judged bytes of a message the backend has not acknowledged, sent
 * again in any cut: the same pass, others are dropped and counted. */
static void
test_guard_resent(void)
{
	struct fixture *x = setup("192.0.2.2:53");
	uint8_t m[400], c[400];
	size_t n = mkmsg(m, 300, false, 0, 1);	/* a length byte over 0 */
	struct flow *f = mkflow(x, 40000);
	uint32_t seq = CISN + 1;
	unsigned i;

	/* Its first byte alone, then again, then changed. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, 1), GUARD_PASS);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, 1), GUARD_PASS);
	memcpy(c, m, n);
	c[0] = 0;
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, c, 1), GUARD_DROP);
	CU_ASSERT_EQUAL(x->w.st.dns_resent_changed, 1);
	/* The header, with the first byte again; then the header changed
	 * byte by byte, the ID excepted. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, 20), GUARD_PASS);
	for (i = 0; i < DNSFRAME_JUDGED; i++) {
		memcpy(c, m, n);
		c[i] ^= 0x80;
		CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, c, 20),
				i == 2 || i == 3 ? GUARD_PASS : GUARD_DROP);
		/* And in a piece that starts on it. */
		CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + i, c + i, 3),
				i == 2 || i == 3 ? GUARD_PASS : GUARD_DROP);
	}
	CU_ASSERT_EQUAL(x->w.st.dns_resent_changed, 1 + 2 * 6);
	/* Its other bytes are not judged. */
	memcpy(c, m, n);
	c[8] = c[19] = 0xff;
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, c, 20), GUARD_PASS);
	CU_ASSERT_EQUAL(f->dns.started, 1);
	CU_ASSERT_EQUAL(f->dns_nxt, seq + 20);
	/* Once the backend acknowledged them, what it has is not at stake
	 * (it keeps its copy). */
	f->b_ack = seq + DNSFRAME_JUDGED;
	c[4] = 0x80;
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, c, 20), GUARD_PASS);
	CU_ASSERT_EQUAL(x->w.st.dns_resent_changed, 1 + 2 * 6);
	CU_ASSERT_EQUAL(x->w.ij.n, 0);
	CU_ASSERT_EQUAL(x->w.st.dns_resent_unknown, 0);
	teardown(x);
}

/* The judged bytes of more unacknowledged messages than the record holds:
 * new ones always pass, the newest can be sent again, the oldest not until
 * the backend's ACK passes them. */
static void
test_guard_resent_many(void)
{
	struct fixture *x = setup("192.0.2.2:53");
	enum { MSGS = 3 * FLOW_DNS_SENT, LEN = 30 };
	uint8_t m[MSGS * (LEN + 2)];
	struct flow *f = mkflow(x, 40000);
	uint32_t seq = CISN + 1, i, last;

	for (i = 0; i < MSGS; i++)
		mkmsg(m + i * (LEN + 2), LEN, false, 0, 1);
	/* One segment with the first half, then one a message. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, MSGS / 2 * (LEN + 2)),
			GUARD_PASS);
	for (i = MSGS / 2; i < MSGS; i++)
		CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + i * (LEN + 2),
					   m + i * (LEN + 2), LEN + 2),
				GUARD_PASS);
	CU_ASSERT_EQUAL(f->dns.started, MSGS);
	CU_ASSERT_EQUAL(f->sent.n, FLOW_DNS_SENT);
	/* The newest ones again, whole or in other cuts. */
	last = (MSGS - FLOW_DNS_SENT) * (LEN + 2);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + last, m + last,
				   sizeof(m) - last), GUARD_PASS);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + last + 5, m + last + 5,
				   LEN * 2), GUARD_PASS);
	/* The end of an older one is no judged byte; its start is not
	 * known any more: dropped. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + last - 3, m + last - 3,
				   10), GUARD_PASS);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq + last - LEN - 2,
				   m + last - LEN - 2, 10), GUARD_DROP);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, 10), GUARD_DROP);
	CU_ASSERT_EQUAL(x->w.st.dns_resent_unknown, 2);
	/* The backend acknowledges all but the newest: they may come
	 * again, and are judged. */
	f->b_ack = seq + last;
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, last + 10), GUARD_PASS);
	m[last + 4] = 0x80;
	CU_ASSERT_EQUAL(guard_data(&x->w, f, seq, m, last + 10), GUARD_DROP);
	CU_ASSERT_EQUAL(x->w.st.dns_resent_changed, 1);
	CU_ASSERT_EQUAL(x->w.st.dns_resent_unknown, 2);
	CU_ASSERT_EQUAL(f->dns.started, MSGS);
	teardown(x);
}

/* A DNS connection spliced to its backend (no delayed binding). */
static struct tgw *
resent_gw(const char *protect, struct tgw_conn *c)
{
	const char *const opts[] = { "protect", protect, NULL };
	struct tgw *g = tgw_new(opts);

	tgw_handshake(g, c, 40000, CISN);
	tgw_backend_accept(g, c, 0x1000);
	CU_ASSERT_EQUAL_FATAL(tgw_flow(g, c)->state, FLOW_ESTABLISHED);
	return g;
}

/* The client sends n bytes at seq: true when they went to the backend as
 * they were. */
static bool
client_at(struct tgw *g, struct tgw_conn *c, uint32_t seq, const uint8_t *b,
	  uint16_t n)
{
	struct tgw_seg s = {
		.cport = c->cport, .service = c->service, .seq = seq,
		.ack = c->b_nxt, .flags = TCP_ACK | TCP_PSH, .win = 502,
		.ts = true, .tsval = c->c_tsval++, .tsecr = c->g_tsval,
		.wscale = -1, .pay = b, .paylen = n,
	};

	tgw_send(g, &s);
	if (!g->mangled)
		return false;
	CU_ASSERT_EQUAL(g->fwd.p.seq, seq);
	CU_ASSERT_EQUAL_FATAL(g->fwd.p.paylen, n);
	CU_ASSERT_EQUAL(memcmp(g->fwd.p.data + g->fwd.p.payoff, b, n), 0);
	return true;
}

/* Issue 21: a query the backend never acknowledged (it dropped it), sent
 * again with other bytes, never reaches it; sent again as it was, in any
 * cut, it does. */
static void
test_resent_spliced(void)
{
	struct tgw_conn c;
	struct tgw *g = resent_gw("192.0.2.2:53,delay-bind=0", &c);
	uint8_t q[64], a[64], two[64];
	uint16_t qn = tgw_query(q, 40, 7, false);
	uint32_t seq = c.c_nxt;

	tgw_client_data(g, &c, q, qn, TCP_PSH);
	CU_ASSERT_TRUE(g->mangled);
	/* The backend acknowledges nothing.  The same range as an answer,
	 * as two messages (its length and a header in its question), as an
	 * IQUERY: dropped, counted, the flow on. */
	tgw_query(a, 40, 7, true);
	CU_ASSERT_FALSE(client_at(g, &c, seq, a, qn));
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	mkmsg(two, 12, false, 0, 1);
	mkmsg(two + 14, 26, true, 0, 1);
	CU_ASSERT_FALSE(client_at(g, &c, seq, two, qn));
	memcpy(a, q, qn);
	a[4] = 1 << 3;
	CU_ASSERT_FALSE(client_at(g, &c, seq, a, 8));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 3);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));
	/* As it was: whole, and cut elsewhere than the first time. */
	CU_ASSERT_TRUE(client_at(g, &c, seq, q, qn));
	CU_ASSERT_TRUE(client_at(g, &c, seq, q, 5));
	CU_ASSERT_TRUE(client_at(g, &c, seq + 5, q + 5, 20));
	CU_ASSERT_TRUE(client_at(g, &c, seq + 25, q + 25, (uint16_t)(qn - 25)));
	/* With a new query after it: both go. */
	memcpy(two, q, qn);
	tgw_query(two + qn, 12, 8, false);
	CU_ASSERT_TRUE(client_at(g, &c, seq, two, qn + 14));
	c.c_nxt = seq + qn + 14;
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 3);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->dns.started, 2);
	/* Once the backend acknowledged them, a copy is not its business. */
	c.b_ack = c.c_nxt;
	tgw_backend_data(g, &c, NULL, 0, 0);
	CU_ASSERT_TRUE(client_at(g, &c, seq, two, qn));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 3);
	tgw_free(g);
}

/* A pipelining client: more messages in flight than the record holds
 * still go, each as it comes and all in one segment; the newest of them
 * can be sent again, the older ones once the backend's ACK passes them. */
static void
test_resent_pipelined(void)
{
	struct tgw_conn c;
	struct tgw *g = resent_gw("192.0.2.2:53,delay-bind=0", &c);
	enum { MSGS = 4 * FLOW_DNS_SENT, LEN = 30 };
	uint8_t q[MSGS * (LEN + 2)];
	uint32_t seq = c.c_nxt, i;

	for (i = 0; i < MSGS; i++)
		tgw_query(q + i * (LEN + 2), LEN, (uint16_t)i, false);
	for (i = 0; i < MSGS / 2; i++) {
		CU_ASSERT_TRUE(client_at(g, &c, c.c_nxt, q + i * (LEN + 2),
					 LEN + 2));
		c.c_nxt += LEN + 2;
	}
	CU_ASSERT_TRUE(client_at(g, &c, c.c_nxt, q + MSGS / 2 * (LEN + 2),
				 MSGS / 2 * (LEN + 2)));
	c.c_nxt += MSGS / 2 * (LEN + 2);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->dns.started, MSGS);
	/* Half acknowledged: the newest again, in one, go; the others'
	 * judged bytes are no longer kept. */
	c.b_ack = seq + MSGS / 2 * (LEN + 2);
	tgw_backend_data(g, &c, NULL, 0, 0);
	i = (MSGS - FLOW_DNS_SENT) * (LEN + 2);
	CU_ASSERT_TRUE(client_at(g, &c, seq + i, q + i, FLOW_DNS_SENT *
				 (LEN + 2)));
	CU_ASSERT_FALSE(client_at(g, &c, c.b_ack, q + MSGS / 2 * (LEN + 2),
				  MSGS / 2 * (LEN + 2)));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_unknown, 1);
	/* All acknowledged; more pipelined, again more than the record. */
	c.b_ack = c.c_nxt;
	tgw_backend_data(g, &c, NULL, 0, 0);
	CU_ASSERT_TRUE(client_at(g, &c, c.c_nxt, q, sizeof(q)));
	c.c_nxt += sizeof(q);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->dns.started, 2 * MSGS);
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 0);
	CU_ASSERT_EQUAL(g->w.st.dns_resent_unknown, 1);
	tgw_free(g);
}

/* max-queries counts messages: the same ones again are not counted, and a
 * range sent again as more messages than it was is dropped. */
static void
test_resent_max_queries(void)
{
	struct tgw_conn c;
	struct tgw *g = resent_gw("192.0.2.2:53,delay-bind=0,max-queries=2",
				  &c);
	uint8_t q[64], two[64];
	uint16_t qn = tgw_query(q, 40, 7, false);
	uint32_t seq = c.c_nxt;
	unsigned i;

	tgw_client_data(g, &c, q, qn, TCP_PSH);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	for (i = 0; i < 3; i++)
		CU_ASSERT_TRUE(client_at(g, &c, seq, q, qn));
	/* The first query's bytes as two queries: with the second, three
	 * the backend would answer. */
	mkmsg(two, 12, false, 0, 1);
	mkmsg(two + 14, 26, false, 0, 1);
	CU_ASSERT_FALSE(client_at(g, &c, seq, two, qn));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 1);
	CU_ASSERT_EQUAL(g->w.st.dns_max_queries, 0);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->dns.started, 2);
	/* A third message is one too many. */
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	CU_ASSERT_EQUAL(g->w.st.dns_max_queries, 1);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	tgw_free(g);
}

/* Issue 31: a client that can send with the backend's address (from its
 * side of the gateway) forges the backend's ACK of all it sent, so that
 * the judged bytes of its queries are forgotten, and sends the first
 * query's range again as two queries.  A backend that dropped the first
 * copy (a bad checksum the client made, say) takes them: with the second
 * query, three, under max-queries=2.  The client's window scaled by 14
 * made any seq within 2^30 of its ACK acceptable, so half the random ones
 * passed; a segment from the backend's address must now lie where the
 * backend's own numbers put it. */
static void
test_resent_forged_ack(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53,delay-bind=0,max-queries=2", NULL
	};
	struct tgw *g = tgw_new(opts);
	struct tgw_conn c;
	struct tgw_seg forged = {
		.from_backend = true, .cport = 40000, .flags = TCP_ACK,
		.win = 509, .ts = true, .wscale = -1,
	};
	uint8_t q[64], two[64];
	uint16_t qn = tgw_query(q, 40, 7, false);
	uint32_t seq, b_ack;
	unsigned i, taken = 0;
	struct rng r;

	g->client_ws = 14;
	tgw_handshake(g, &c, 40000, CISN);
	tgw_backend_accept(g, &c, 0x1000);
	CU_ASSERT_EQUAL_FATAL(tgw_flow(g, &c)->state, FLOW_ESTABLISHED);
	/* Its window as wide as it goes: 65535 << 14. */
	tgw_send(g, &(struct tgw_seg){
		.cport = c.cport, .seq = c.c_nxt, .ack = c.b_nxt,
		.flags = TCP_ACK, .win = 65535, .ts = true,
		.tsval = c.c_tsval++, .tsecr = c.g_tsval, .wscale = -1,
	});
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->c_maxwin, 65535u << 14);
	seq = c.c_nxt;
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->dns.started, 2);
	b_ack = tgw_flow(g, &c)->b_ack;
	/* The backend acknowledged neither.  Forged ACKs of both, at
	 * random seqs: none is taken, each is counted. */
	rng_init(&r, 31);
	for (i = 0; i < 64; i++) {
		forged.seq = rng32(&r);
		forged.ack = c.c_nxt;
		forged.tsval = c.b_tsval;
		forged.tsecr = c.c_tsval - 1;
		tgw_send(g, &forged);
		taken += g->verdict != NF_DROP;
	}
	CU_ASSERT_EQUAL(taken, 0);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 64);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->b_ack, b_ack);
	/* So the first query's bytes are still judged: as two queries they
	 * never reach the backend. */
	mkmsg(two, 12, false, 0, 1);
	mkmsg(two + 14, 26, false, 0, 1);
	CU_ASSERT_FALSE(client_at(g, &c, seq, two, qn));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 1);
	CU_ASSERT_TRUE(client_at(g, &c, seq, q, qn));
	/* The backend's own ACK is taken. */
	c.b_ack = c.c_nxt;
	tgw_backend_data(g, &c, NULL, 0, 0);
	CU_ASSERT(g->mangled);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->b_ack, c.c_nxt);
	CU_ASSERT_EQUAL(g->w.st.backend_unacceptable, 64);
	tgw_free(g);
}

/* Delayed binding: the first query, held and sent by tcpctd, is judged the
 * same when a copy comes from the client, bound or not yet. */
static void
test_resent_bound(void)
{
	static const char *const opts[] = { "protect", "192.0.2.2:53", NULL };
	struct tgw *g = tgw_new(opts);
	struct tgw_conn c;
	uint8_t q[64], a[64];
	uint16_t qn = tgw_query(q, 40, 7, false);
	uint32_t seq;

	tgw_handshake(g, &c, 40000, CISN);
	seq = c.c_nxt;
	tgw_query(a, 40, 7, true);
	tgw_client_data(g, &c, q, 10, TCP_PSH);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->state, FLOW_BINDING);
	CU_ASSERT_FALSE(client_at(g, &c, seq, a, qn));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 1);
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->taken, 10);
	CU_ASSERT_FALSE(client_at(g, &c, seq, q, qn));	/* held */
	CU_ASSERT_EQUAL(tgw_flow(g, &c)->taken, qn);
	tgw_backend_accept(g, &c, 0x1000);
	CU_ASSERT_EQUAL_FATAL(tgw_flow(g, &c)->state, FLOW_ESTABLISHED);
	CU_ASSERT_FALSE(client_at(g, &c, seq, a, qn));
	CU_ASSERT_EQUAL(g->w.st.dns_resent_changed, 2);
	CU_ASSERT_TRUE(client_at(g, &c, seq, q, qn));
	tgw_free(g);
}

static void
test_guard_clocks(void)
{
	struct fixture *x = setup("192.0.2.2:53,idle-timeout=10,"
				  "msg-timeout=2000,max-lifetime=60");
	uint8_t m[64];
	size_t n = mkmsg(m, 29, false, 0, 1);
	struct flow *f = mkflow(x, 40000), *g = mkflow(x, 40001);

	/* Half a query starts the message clock; what comes after does not
	 * restart it. */
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 1, m, 10), GUARD_PASS);
	guard_touch(&x->w, f, true);
	CU_ASSERT_EQUAL(f->timer, FLOW_TIMER_MSG);
	x->w.now_ms += 1500;
	guard_touch(&x->w, f, true);
	CU_ASSERT_EQUAL(f->stamp, NOW_MS);
	guard_touch(&x->w, g, true);		/* g's idle clock restarts */
	x->w.now_ms = NOW_MS + 1999;
	guard_timers(&x->w, 100);
	CU_ASSERT_EQUAL(x->w.ft.c->used, 2);
	x->w.now_ms = NOW_MS + 2000;
	guard_timers(&x->w, 100);
	CU_ASSERT_EQUAL(x->w.ft.c->used, 1);
	CU_ASSERT_EQUAL(x->w.ft.st.released[FLOW_MSG_TIMEOUT], 1);
	CU_ASSERT_EQUAL(x->w.st.dns_msg_timeout, 1);
	assert_reset_both(x, 0);

	/* Idle: only progress restarts a DNS flow's clock. */
	x->w.now_ms = NOW_MS + 5000;
	guard_touch(&x->w, g, false);
	CU_ASSERT_EQUAL(g->stamp, NOW_MS + 1500);
	x->w.now_ms = NOW_MS + 1500 + 9999;
	guard_timers(&x->w, 100);
	CU_ASSERT_EQUAL(x->w.ft.c->used, 1);
	x->w.now_ms = NOW_MS + 1500 + 10000;
	guard_timers(&x->w, 0);			/* no budget, nothing done */
	CU_ASSERT_EQUAL(x->w.ft.c->used, 1);
	guard_timers(&x->w, 100);
	CU_ASSERT_EQUAL(x->w.ft.c->used, 0);
	CU_ASSERT_EQUAL(x->w.ft.st.released[FLOW_IDLE], 1);

	/* A whole query moves a flow from the message clock to idle. */
	f = mkflow(x, 40002);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 1, m, 10), GUARD_PASS);
	guard_touch(&x->w, f, true);
	CU_ASSERT_EQUAL(f->timer, FLOW_TIMER_MSG);
	CU_ASSERT_EQUAL(guard_data(&x->w, f, CISN + 11, m + 10,
				   (uint32_t)n - 10), GUARD_PASS);
	guard_touch(&x->w, f, true);
	CU_ASSERT_EQUAL(f->timer, FLOW_TIMER_IDLE);

	/* Lifetime. */
	CU_ASSERT_FALSE(guard_too_old(&x->w, f));
	x->w.now_ms = f->born + 60000;
	CU_ASSERT_TRUE(guard_too_old(&x->w, f));
	CU_ASSERT_EQUAL(x->w.ft.st.released[FLOW_LIFETIME], 1);
	teardown(x);
}

static void
test_guard_admit(void)
{
	struct fixture *x = setup("192.0.2.2:53,max-per-addr=3,"
				  "max-per-prefix=5,conn-rate=8");
	const struct service *svc = &x->cfg.services[0];
	uint8_t q[64];
	struct pkt p;
	unsigned i;

	memset(&p, 0, sizeof(p));
	p.family = AF_INET;
	p.src = test_client4;
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_REFUSED);
	CU_ASSERT_EQUAL(x->w.st.refused_addr, 1);
	/* Two more from the same /24, then the prefix is full. */
	p.src.b[3] = 77;
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_REFUSED);
	CU_ASSERT_EQUAL(x->w.st.refused_prefix, 1);
	/* One leaves: its place is free again. */
	admit_undo(&x->w, 0, AF_INET, &test_client4);
	p.src = test_client4;
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	/* That was the prefix's eighth try this second (refused ones
	 * count too): the ninth is over the rate, before any cap. */
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_REFUSED);
	CU_ASSERT_EQUAL(x->w.st.refused_rate, 1);
	CU_ASSERT_EQUAL(x->w.st.refused_addr, 1);
	x->w.now_s++;
	/* At its cap, even with its whole query: max-per-addr counts every
	 * connection. */
	p.data = q;
	p.paylen = (uint16_t)mkmsg(q, 29, false, 0, 1);
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_REFUSED);
	CU_ASSERT_EQUAL(x->w.st.refused_addr, 2);
	p.paylen = 0;
	/* Another /24 is apart, but for the rate of its own. */
	p.src.b[2] = 101;
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	teardown(x);

	/* The defaults for DNS: 25 pending connections per address and 256
	 * per prefix, and no cap on all of them.  Over a pending cap, what
	 * has no whole query is deferred (dropped, never refused); a
	 * segment with one is taken. */
	x = setup("192.0.2.2:53");
	svc = &x->cfg.services[0];
	CU_ASSERT_EQUAL(svc->pol.max_per_addr, 0);
	CU_ASSERT_EQUAL(svc->pol.max_pending_per_addr, 25);
	CU_ASSERT_EQUAL(svc->pol.max_pending_per_prefix, 256);
	p.src = test_client4;
	for (i = 0; i < 25; i++)
		CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_DEFERRED);
	p.paylen = 10;			/* half a query */
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_DEFERRED);
	CU_ASSERT_EQUAL(x->w.st.deferred_pending_addr, 2);
	p.paylen = (uint16_t)mkmsg(q, 29, false, 0, 1);
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	admit_undo(&x->w, 0, AF_INET, &p.src);	/* framed, gone */
	p.paylen = 0;
	for (i = 25; i < 256; i++) {
		p.src.b[3] = (uint8_t)(100 + i / 25);
		CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	}
	p.src.b[3] = 200;
	CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_DEFERRED);
	CU_ASSERT_EQUAL(x->w.st.deferred_pending_prefix, 1);
	CU_ASSERT_EQUAL(x->w.st.refused_addr + x->w.st.refused_prefix, 0);
	teardown(x);

	/* A generic service's bytes are not read: the pending caps are not
	 * its, whatever they say. */
	x = setup("192.0.2.2:80,max-pending-per-addr=2");
	svc = &x->cfg.services[0];
	p.src = test_client4;
	for (i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(admit_client(&x->w, svc, &p), ADMIT_OK);
	teardown(x);
}

/* A client's count of kind (its address's, or its /24's). */
static uint32_t
client_count(struct tgw *g, enum limit_kind kind)
{
	struct limit_key k = limit_key(kind, 0, AF_INET, &test_client4,
				       g->cfg.prefix4);

	return limit_count(&g->gw.limits, &k);
}

static uint64_t
refused(const struct tgw *g)
{
	return g->w.st.refused_rate + g->w.st.refused_addr +
	       g->w.st.refused_prefix;
}

/*
 * A busy resolver, or a farm of them behind one address (RFC 7766 §6.2.2:
 * a server's per-client limits "much looser" than a client's own), with
 * the defaults: 60 handshakes from one address complete at once, as after
 * a stall of the gateway, and only then come their queries.  None is
 * refused: 25 are pending, the ACKs of the other 35 are dropped (no RST)
 * and their queries take them in; all are answered and kept open.
 * Connections that do not ask, silent or with half a query, are held 25
 * at most (a FIN over the cap gets a RST); one that completes its query
 * frees its place; the clocks take them all out of the counts.  An operator's max-per-addr counts every
 * connection, always, and refuses.
 */
static void
test_guard_pending(void)
{
	/* The per-client caps as by default; a backend that takes every
	 * connection (the overload mode is not what this is about). */
	static const char *const dns[] = {
		"protect", "192.0.2.2:53", "backend-max", "1000", NULL,
	};
	static const char *const capped[] = {
		"protect", "192.0.2.2:53", "max-per-addr", "5", NULL,
	};
	struct tgw *g = tgw_new(dns);
	const unsigned cap = g->cfg.services[0].pol.max_pending_per_addr;
	struct tgw_conn busy[60], silent[26], c;
	uint8_t q[64], a[96];
	uint16_t qn = tgw_query(q, 29, 0x4242, false);
	uint16_t an = tgw_query(a, 60, 0x4242, true);
	uint16_t port = 20000;
	unsigned i, admitted = 0;

	CU_ASSERT_EQUAL_FATAL(cap, 25);
	for (i = 0; i < 60; i++) {
		admitted += tgw_try_handshake(g, &busy[i], port++, 1000 * i);
		CU_ASSERT_PTR_NULL(tgw_find(g, false, TCP_RST, NULL));
	}
	CU_ASSERT_EQUAL(admitted, cap);
	CU_ASSERT_EQUAL(g->w.st.deferred_pending_addr, 60 - cap);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_ADDR), cap);
	for (i = 0; i < 60; i++) {
		tgw_client_data(g, &busy[i], q, qn, TCP_PSH);
		CU_ASSERT_PTR_NOT_NULL_FATAL(tgw_flow(g, &busy[i]));
		tgw_backend_accept(g, &busy[i], 70000 * i);
		tgw_backend_data(g, &busy[i], a, an, TCP_PSH);
		CU_ASSERT_TRUE(g->mangled);	/* the answer, on its way */
	}
	CU_ASSERT_EQUAL(refused(g), 0);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_ADDR), 60);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_ADDR), 0);

	/* Silent ones, the last with half a query: the address's pending
	 * connections, at the cap.  The next is not taken, nor reset, with
	 * half a query either; with its whole query it is. */
	for (i = 0; i < cap; i++)
		CU_ASSERT_TRUE(tgw_try_handshake(g, &silent[i], port++,
						 1000000 + 1000 * i));
	tgw_client_data(g, &silent[cap - 1], q, 10, TCP_PSH);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_ADDR), cap);
	CU_ASSERT_FALSE(tgw_try_handshake(g, &silent[cap], port++, 9000000));
	c = silent[cap];
	tgw_client_data(g, &c, q, 10, TCP_PSH);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	CU_ASSERT_EQUAL(g->nout, 0);		/* no RST, no backend */
	CU_ASSERT_EQUAL(g->w.st.deferred_pending_addr, 60 - cap + 2);
	tgw_client_data(g, &silent[cap], q, qn, TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(tgw_flow(g, &silent[cap]));
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_ADDR), cap);
	/* One that leaves without asking gets the RST, not to send its FIN
	 * again and again. */
	CU_ASSERT_FALSE(tgw_try_handshake(g, &c, port++, 9050000));
	tgw_client_data(g, &c, NULL, 0, TCP_FIN);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, false, TCP_RST, NULL));
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	CU_ASSERT_EQUAL(g->w.st.deferred_pending_addr, 60 - cap + 4);

	/* The rest of the half query: no longer pending, its place free. */
	tgw_client_data(g, &silent[cap - 1], q + 10, (uint16_t)(qn - 10),
			TCP_PSH);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, true, TCP_SYN, NULL));
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_ADDR), cap - 1);
	CU_ASSERT_TRUE(tgw_try_handshake(g, &c, port++, 9100000));
	CU_ASSERT_EQUAL(client_count(g, LIMIT_ADDR), 60 + cap + 2);
	CU_ASSERT_EQUAL(refused(g), 0);

	/* The idle clock, and the SYN retries of the backends that never
	 * answered, end them all; each leaves its counts once. */
	for (i = 0; i < 12; i++)
		tgw_advance(g, 1000);
	CU_ASSERT_EQUAL(g->w.ft.c->used, 0);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_ADDR), 0);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PREFIX), 0);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_ADDR), 0);
	CU_ASSERT_EQUAL(client_count(g, LIMIT_PENDING_PREFIX), 0);
	tgw_free(g);

	/* max-per-addr set: connections that asked count too, with or
	 * without the overload mode, and the next is refused (a RST). */
	g = tgw_new(capped);
	for (i = 0; i < 5; i++) {
		CU_ASSERT_TRUE_FATAL(tgw_try_handshake(g, &busy[i], port++,
						       1000 * i));
		tgw_client_data(g, &busy[i], q, qn, TCP_PSH);
	}
	CU_ASSERT_FALSE(overload_on(&g->w, 0));
	CU_ASSERT_FALSE(tgw_try_handshake(g, &c, port++, 9000000));
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, false, TCP_RST, NULL));
	CU_ASSERT_EQUAL(g->w.st.refused_addr, 1);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	CU_ASSERT_PTR_NULL(tgw_flow(g, &c));
	CU_ASSERT_EQUAL(g->w.st.refused_addr, 2);
	tgw_free(g);
}

/* SYNs from one prefix: those over synack-rate in a second go
 * unanswered; another prefix and the next second are apart. */
static void
test_guard_synack_rate(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "synack-rate", "5", NULL,
	};
	struct tgw *g = tgw_new(opts);
	struct tgw_seg s = {
		.flags = TCP_SYN, .win = 64240, .mss = 1460, .wscale = -1,
	};
	unsigned i, answered = 0;

	for (i = 0; i < 8; i++) {
		s.cport = (uint16_t)(40000 + i);
		tgw_send(g, &s);
		answered += tgw_find(g, false, TCP_SYN | TCP_ACK, NULL) != NULL;
	}
	CU_ASSERT_EQUAL(answered, 5);
	CU_ASSERT_EQUAL(g->w.st.synack_capped, 3);
	CU_ASSERT_EQUAL(g->w.st.synack_sent, 5);
	/* The limit is per prefix: 198.51.100.0/24 is spent, another /24
	 * is not (the same key with other address bits). */
	{
		struct limit_key k = limit_key(LIMIT_SYNACK_RATE, 0, AF_INET,
					       &test_client4, 24);
		struct inaddr other = test_client4;

		other.b[2] ^= 1;
		CU_ASSERT_FALSE(limit_rate(&g->gw.limits, &k, g->w.now_s, 5));
		k = limit_key(LIMIT_SYNACK_RATE, 0, AF_INET, &other, 24);
		CU_ASSERT_TRUE(limit_rate(&g->gw.limits, &k, g->w.now_s, 5));
	}
	g->w.now_s++;
	tgw_send(g, &s);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(g, false, TCP_SYN | TCP_ACK, NULL));
	tgw_free(g);
}

/* A full flow table: the next verified client gets a RST at once, and the
 * flows in the table go on. */
static void
test_table_full(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:80", "flows", "16", NULL,
	};
	struct tgw *g = tgw_new(opts);
	struct tgw_conn c[16];
	struct tgw_seg s = {
		.cport = 41000, .seq = 5000, .flags = TCP_SYN, .win = 64240,
		.mss = 1460, .wscale = -1,
	};
	const struct tgw_out *sa, *rst;
	unsigned i;

	for (i = 0; i < 16; i++) {
		tgw_handshake(g, &c[i], (uint16_t)(40000 + i), 1000 * i);
		tgw_backend_accept(g, &c[i], 70000 * i);
	}
	tgw_send(g, &s);
	sa = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
	s.flags = TCP_ACK;
	s.seq = 5001;
	s.ack = sa->p.seq + 1;
	tgw_send(g, &s);
	CU_ASSERT_EQUAL(g->w.st.flow_full, 1);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	rst = tgw_find(g, false, TCP_RST, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rst);
	CU_ASSERT_EQUAL(rst->p.seq, s.ack);
	CU_ASSERT_EQUAL(rst->p.dport, 41000);
	CU_ASSERT_PTR_NULL(tgw_find(g, true, 0, NULL));
	/* The sixteen go on. */
	for (i = 0; i < 16; i++) {
		tgw_client_data(g, &c[i], (const uint8_t *)"GET", 3, TCP_PSH);
		CU_ASSERT_TRUE(g->mangled);
	}
	tgw_free(g);
}

void
register_guard_tests(void)
{
	static const struct test_case cases[] = {
		{ "DNS framing in any cut; what no client sends",
		  test_dnsframe },
		{ "bytes in order, max-queries, framing closes both sides",
		  test_guard_data },
		{ "bytes sent again: the judged ones as framed, in any cut",
		  test_guard_resent },
		{ "bytes sent again over more messages than are kept",
		  test_guard_resent_many },
		{ "issue 21: a query sent again as an answer never reaches "
		  "the backend; as it was, in any cut, it does",
		  test_resent_spliced },
		{ "pipelined queries past the record all go",
		  test_resent_pipelined },
		{ "max-queries counts messages, not copies",
		  test_resent_max_queries },
		{ "issue 31: a forged backend ACK does not unjudge the bytes "
		  "a query is sent again over", test_resent_forged_ack },
		{ "the held first query judged when the client's copy comes",
		  test_resent_bound },
		{ "message, idle and lifetime clocks", test_guard_clocks },
		{ "per-address and per-prefix caps, connection rate",
		  test_guard_admit },
		{ "a burst of handshakes from one address, none refused; "
		  "those that do not ask held to the pending cap",
		  test_guard_pending },
		{ "SYN-ACKs per second per client prefix",
		  test_guard_synack_rate },
		{ "a full flow table: the next client reset, the others on",
		  test_table_full },
	};

	TEST_SUITE("guard", cases);
}
