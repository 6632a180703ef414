/*
 * Draining (tcpctl drain) on the test bench (testgw.h): a drained
 * service's new clients are refused as a closed port refuses them (RFC
 * 9293 §3.10.7.1), a handshake begun before it is refused at its ACK,
 * what is no handshake's end is dropped as ever, and a connection spliced
 * before it carries on.
 */
#include <string.h>

#include <CUnit/CUnit.h>

#include "suites.h"
#include "testgw.h"
#include "testutil.h"

#define CISN	0x7000u
#define BISN	0x00001000u

static const char *const dns_opts[] = { "protect", "192.0.2.2:53", NULL };

static void
drain(struct tgw *g, bool on)
{
	atomic_store(&g->gw.drain[0], on);
}

static void
test_drain(void)
{
	struct tgw *g = tgw_new(dns_opts);
	struct tgw_seg syn = {
		.cport = 41000, .seq = CISN, .flags = TCP_SYN, .win = 64240,
		.ts = true, .tsval = 1000, .mss = 1460, .wscale = 7,
	};
	uint8_t q[64];
	uint16_t qn = tgw_query(q, 40, 0x4242, false);
	const struct tgw_out *o, *sa;
	struct tgw_conn c, d;
	struct tgw_seg ack;

	/* Spliced before the drain: it carries on to the backend. */
	tgw_handshake(g, &c, 40000, CISN);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	tgw_backend_accept(g, &c, BISN);
	drain(g, true);
	tgw_client_data(g, &c, q, qn, TCP_PSH);
	CU_ASSERT(g->verdict == NF_ACCEPT || g->mangled);
	CU_ASSERT_PTR_NULL(tgw_find(g, false, TCP_RST, NULL));

	/* A new client's SYN: RST and ACK of its SYN, seq 0; no SYN-ACK,
	 * no flow, counted. */
	tgw_send(g, &syn);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_PTR_NULL(tgw_find(g, false, TCP_SYN, NULL));
	o = tgw_find(g, false, TCP_RST | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, 0);
	CU_ASSERT_EQUAL(o->p.ack, CISN + 1);
	CU_ASSERT_EQUAL(o->p.sport, 53);
	CU_ASSERT_EQUAL(o->p.dport, 41000);
	CU_ASSERT_EQUAL(g->w.svc_st[0].drained, 1);

	/* A handshake begun before the drain: its ACK is refused, with the
	 * RST's seq its ACK number; no flow is made. */
	drain(g, false);
	memset(&d, 0, sizeof(d));
	syn.cport = 41001;
	tgw_send(g, &syn);
	sa = g->mangled ? &g->fwd : tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
	drain(g, true);
	ack = (struct tgw_seg){
		.cport = 41001, .seq = CISN + 1, .ack = sa->p.seq + 1,
		.flags = TCP_ACK, .win = 502, .ts = true, .tsval = 1001,
		.tsecr = sa->o.tsval,
	};
	tgw_send(g, &ack);
	o = tgw_find(g, false, TCP_RST, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->p.seq, ack.ack);
	d.cport = 41001;
	CU_ASSERT_PTR_NULL(tgw_flow(g, &d));
	CU_ASSERT_EQUAL(g->w.svc_st[0].drained, 2);

	/* No ACK, no handshake's end: dropped, nothing sent. */
	ack.flags = TCP_FIN;
	tgw_send(g, &ack);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 0);
	ack.flags = TCP_RST;
	tgw_send(g, &ack);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(g->w.svc_st[0].drained, 2);

	/* Enabled again: a SYN-ACK. */
	drain(g, false);
	syn.cport = 41002;
	tgw_send(g, &syn);
	CU_ASSERT(g->mangled || tgw_find(g, false, TCP_SYN | TCP_ACK, NULL));
	tgw_free(g);
}

void
register_drain_tests(void)
{
	static const struct test_case cases[] = {
		{ "drain: a closed port to new clients, spliced ones go on",
		  test_drain },
	};

	TEST_SUITE("drain", cases);
}
