/*
 * TCPCT transactions: gateway/dnsmsg.h (what a query and a whole answer
 * are, the EDNS buffer of the backend leg), gateway/txn.h (pending slots,
 * expiry in order), the UDP builder of nfq/pkt.h and the transaction
 * variant of the responder cookie; and on the test bench (testgw.h), the
 * amplification budget per client prefix over many prefixes and over two
 * workers, answers that come too late, and the pacing of the replies that
 * close a transaction.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../gateway/cookie.h"
#include "../../gateway/dnsmsg.h"
#include "../../gateway/txn.h"
#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../nfq/pkt.h"
#include "suites.h"
#include "testgw.h"
#include "testutil.h"

/* example.test A, RD, with an OPT record of payload size 512. */
static const uint8_t query_opt[] = {
	0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 4, 't', 'e', 's', 't', 0,
	0, 1, 0, 1,
	0, 0, 41, 0x02, 0x00, 0, 0, 0, 0, 0, 0,
};

static void
test_dnsmsg(void)
{
	uint8_t *m = malloc(sizeof(query_opt));
	size_t n = sizeof(query_opt);

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	memcpy(m, query_opt, n);
	CU_ASSERT_TRUE(dnsmsg_is_query(m, n));
	CU_ASSERT_FALSE(dnsmsg_is_query(m, DNSMSG_HDR_LEN - 1));
	/* The OPT class (payload size) goes up, never down. */
	CU_ASSERT_EQUAL(dnsmsg_edns_at_least(m, n, 1232), 1);
	CU_ASSERT_EQUAL(get16(m + n - 8), 1232);
	CU_ASSERT_EQUAL(dnsmsg_edns_at_least(m, n, 700), 1);
	CU_ASSERT_EQUAL(get16(m + n - 8), 1232);
	/* No OPT: nothing to raise; cut short: refused, read nothing past. */
	put16(m + 10, 0);
	CU_ASSERT_EQUAL(dnsmsg_edns_at_least(m, n - 11, 1232), 0);
	put16(m + 10, 1);
	CU_ASSERT_EQUAL(dnsmsg_edns_at_least(m, n - 1, 1232), -1);
	CU_ASSERT_EQUAL(dnsmsg_edns_at_least(m, 20, 1232), -1);
	/* A response, another opcode, two questions: not a query. */
	m[2] |= 0x80;
	CU_ASSERT_FALSE(dnsmsg_is_query(m, n));
	CU_ASSERT_TRUE(dnsmsg_is_whole_answer(m, n, 0x1234));
	CU_ASSERT_FALSE(dnsmsg_is_whole_answer(m, n, 0x1235));
	m[2] |= 0x02;	/* TC */
	CU_ASSERT_FALSE(dnsmsg_is_whole_answer(m, n, 0x1234));
	m[2] = 0x08;	/* opcode 1 */
	CU_ASSERT_FALSE(dnsmsg_is_query(m, n));
	m[2] = 0x01;
	put16(m + 4, 2);
	CU_ASSERT_FALSE(dnsmsg_is_query(m, n));
	free(m);
}

static void
test_txn_table(void)
{
	struct txn_table t;
	struct txn *x, *y;
	struct inaddr other = test_client4;
	uint32_t i, claimed = 0;

	CU_ASSERT_EQUAL_FATAL(txn_table_init(&t, 100, 42), 0);
	CU_ASSERT_EQUAL(t.cap, 128);
	x = txn_claim(&t, AF_INET, &test_client4, 61440, 7);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	x->syn.family = AF_INET;
	x->syn.caddr = test_client4;
	x->syn.cport = 40000;
	x->syn.cisn = 99;
	x->uport = 61440;
	x->id = 7;
	txn_commit(&t, x, 1000);
	/* The same key is taken; its answer finds it; another does not. */
	CU_ASSERT_PTR_NULL(txn_claim(&t, AF_INET, &test_client4, 61440, 7));
	CU_ASSERT_PTR_EQUAL(txn_find(&t, AF_INET, &test_client4, 61440, 7), x);
	CU_ASSERT_PTR_NULL(txn_find(&t, AF_INET, &test_client4, 61440, 8));
	other.b[3]++;
	CU_ASSERT_PTR_NULL(txn_find(&t, AF_INET, &other, 61440, 7));
	CU_ASSERT_PTR_EQUAL(txn_find_syn(&t, &x->syn, 61440, 7), x);
	/* Expiry comes in order, and not before its time. */
	CU_ASSERT_PTR_NULL(txn_expired(&t, 999));
	CU_ASSERT_PTR_EQUAL(txn_expired(&t, 1000), x);
	txn_release(&t, x, 0);
	CU_ASSERT_EQUAL(t.used, 0);
	CU_ASSERT_PTR_NULL(txn_find(&t, AF_INET, &test_client4, 61440, 7));
	/* A released and reclaimed slot is not expired by its old entry. */
	x = txn_claim(&t, AF_INET, &test_client4, 61440, 9);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	txn_commit(&t, x, 2000);
	txn_release(&t, x, 0);
	y = txn_claim(&t, AF_INET, &test_client4, 61440, 9);
	CU_ASSERT_PTR_EQUAL_FATAL(y, x);
	txn_commit(&t, y, 3000);
	CU_ASSERT_PTR_NULL(txn_expired(&t, 2500));
	CU_ASSERT_PTR_EQUAL(txn_expired(&t, 3000), y);
	txn_release(&t, y, 0);
	/* Full: every claim after the table fills is refused, none lost. */
	for (i = 0; i < 1000; i++) {
		x = txn_claim(&t, AF_INET, &test_client4, (uint16_t)(61440 + i % 64),
			      (uint16_t)i);
		if (!x)
			continue;
		x->syn.caddr = test_client4;
		x->syn.family = AF_INET;
		x->uport = (uint16_t)(61440 + i % 64);
		x->id = (uint16_t)i;
		txn_commit(&t, x, 5000);
		claimed++;
	}
	CU_ASSERT(claimed <= t.cap && claimed > t.cap / 2);
	CU_ASSERT_EQUAL(t.used, claimed);
	for (i = 0; (x = txn_expired(&t, 5000)); i++)
		txn_release(&t, x, 0);
	CU_ASSERT_EQUAL(i, claimed);
	CU_ASSERT_EQUAL(t.used, 0);
	txn_table_free(&t);
}

static void
test_udp_build(void)
{
	static const uint8_t msg[] = "0123456789abcdef";
	uint8_t buf[256];
	struct pkt p;
	int fam;

	for (fam = 0; fam < 2; fam++) {
		struct pkt_tcp_spec s = {
			.family = fam ? AF_INET6 : AF_INET,
			.src = fam ? &test_client6 : &test_client4,
			.dst = fam ? &test_backend6 : &test_backend4,
			.sport = 61441, .dport = 53, .pay = msg, .paylen = 16,
		};
		size_t n = pkt_build_udp(buf, sizeof(buf), &s, &p);
		uint32_t sum;

		CU_ASSERT_EQUAL_FATAL(n, (fam ? 40u : 20u) + 8 + 16);
		CU_ASSERT_EQUAL(pkt_parse_udp(&p, buf, n), PKT_OK);
		CU_ASSERT_EQUAL(p.sport, 61441);
		CU_ASSERT_EQUAL(p.dport, 53);
		CU_ASSERT_EQUAL(p.paylen, 16);
		CU_ASSERT_EQUAL(memcmp(buf + p.payoff, msg, 16), 0);
		CU_ASSERT_EQUAL(pkt_parse(&p, buf, n), PKT_NOT_TCP);
		/* The UDP checksum sums to 0 with its pseudo-header. */
		sum = fam ? csum_pseudo6(s.src->b, s.dst->b, IPPROTO_UDP, 24)
			  : csum_pseudo4(s.src->b, s.dst->b, IPPROTO_UDP, 24);
		CU_ASSERT_EQUAL(csum_fold(csum_add(sum, buf + (fam ? 40 : 20),
						   24)), 0);
		/* A UDP length past the packet is refused. */
		put16(buf + (fam ? 40 : 20) + 4, 100);
		CU_ASSERT_EQUAL(pkt_parse_udp(&p, buf, n), PKT_TRUNCATED);
	}
}

static void
test_txn_cookie(void)
{
	struct keys_master m;
	struct cookie_keys k;
	struct tcpct_cookie_in in;
	uint8_t ci[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, cr[8];
	uint64_t now = 8646400;
	unsigned i;

	for (i = 0; i < KEYS_MASTER_LEN; i++)
		m.secret[i] = (uint8_t)i;
	CU_ASSERT_EQUAL_FATAL(cookie_keys_init(&k, &m, 600), 0);
	CU_ASSERT_EQUAL_FATAL(cookie_keys_tick(&k, now), 0);
	memset(&in, 0, sizeof(in));
	in.t.family = AF_INET;
	in.t.caddr = test_client4;
	in.t.saddr = test_backend4;
	in.t.cport = 40000;
	in.t.sport = 53;
	in.snd_nxt = 5000;
	in.rcv_nxt = 6000;
	in.tsval = (uint32_t)(now * 1000);
	in.ci = ci;
	in.clen = 8;
	in.txn = true;
	CU_ASSERT_EQUAL_FATAL(cookie_tcpct_make(&k, &in, now, cr), 0);
	CU_ASSERT_EQUAL(cookie_tcpct_check(&k, &in, now * 1000, cr), COOKIE_OK);
	/* A transaction's cookie never opens a connection, nor the reverse. */
	in.txn = false;
	CU_ASSERT_EQUAL(cookie_tcpct_check(&k, &in, now * 1000, cr), COOKIE_BAD);
	cookie_keys_free(&k);
}

/* The bench's transactions: answers of TXN_ALEN message bytes, TXN_ALEN + 2
 * in the SYN-ACK, against a budget of TXN_RATE a second: three fit. */
#define TXN_RATE	1000
#define TXN_ALEN	300
#define TXN_ANSWERS	3

static const uint8_t txn_ci[8] = { 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
				   0xc8 };

/* The query tcpctd sent the backend for the last SYN. */
struct txn_ask {
	uint16_t uport, id;
};

/* A TCPCT SYN with a query from caddr (NULL: the test client); false when
 * no query went to the backend for it. */
static bool
txn_syn(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
	uint32_t cisn, struct txn_ask *ask)
{
	uint8_t q[64];
	uint16_t qn = tgw_query(q, 40, (uint16_t)(cisn ^ 0x5a5a), false);
	unsigned i;

	tgw_tcpct_syn(g, caddr, cport, cisn, 1000, txn_ci, q, qn);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	for (i = 0; i < g->nout; i++) {
		const struct tgw_out *u = &g->out[i];

		if (!u->udp)
			continue;
		CU_ASSERT_EQUAL(u->p.dport, 53);
		ask->uport = u->p.sport;
		ask->id = get16(u->buf + u->p.payoff);
		return true;
	}
	return false;
}

/* The backend's answer of len message bytes to ask. */
static void
txn_answer(struct tgw *g, const struct inaddr *caddr,
	   const struct txn_ask *ask, uint16_t len)
{
	uint8_t a[TCPCT_SYNACK_DATA_MAX + 2];

	tgw_query(a, len, ask->id, true);
	tgw_backend_udp(g, caddr, ask->uport, a + 2, len);
}

/* The answer bytes the SYN-ACK in out carries: 0 for a plain one, -1 when
 * there is none. */
static int
synack_data(const struct tgw *g)
{
	const struct tgw_out *sa = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);

	if (!sa)
		return -1;
	/* An answer comes with FIN; a plain SYN-ACK has neither. */
	CU_ASSERT_EQUAL(!!(sa->p.flags & TCP_FIN), sa->p.paylen != 0);
	return (int)sa->p.paylen;
}

/* A whole transaction: SYN, query, answer of TXN_ALEN bytes.  Returns the
 * answer bytes that went to the client (0: a plain SYN-ACK). */
static int
txn_run(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
	uint32_t cisn)
{
	struct txn_ask ask;

	CU_ASSERT_FATAL(txn_syn(g, caddr, cport, cisn, &ask));
	txn_answer(g, caddr, &ask, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	return synack_data(g);
}

#define TXN_PREFIXES	8192	/* the /28s of 198.18.0.0/15 */
#define TXN_ROUNDS	5

/*
 * 8,192 client prefixes, each asking TXN_ROUNDS times, round after round,
 * within one instant: none gets more than its budget, however their
 * prefixes land in the tables, and nearly all get all of it.
 */
static void
test_txn_budget_prefixes(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "txn-rate", "1000",
		"prefix4", "28", "limit-slots", "65536", NULL,
	};
	struct tgw *g = tgw_new(opts);
	uint32_t *got = calloc(TXN_PREFIXES, sizeof(*got));
	unsigned r, i, over = 0, full = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	for (r = 0; r < TXN_ROUNDS; r++)
		for (i = 0; i < TXN_PREFIXES; i++) {
			/* Another address of the /28 each round. */
			struct inaddr a = { {
				198, (uint8_t)(18 + (i >> 12)),
				(uint8_t)(i >> 4),
				(uint8_t)((i & 15) << 4 | (r + 1)),
			} };
			int n = txn_run(g, &a, (uint16_t)(40000 + r),
					i << 4 | r);

			CU_ASSERT_FATAL(n >= 0);
			got[i] += (uint32_t)n;
		}
	for (i = 0; i < TXN_PREFIXES; i++) {
		over += got[i] > TXN_RATE;
		full += got[i] == TXN_ANSWERS * (TXN_ALEN + 2);
	}
	CU_ASSERT_EQUAL(over, 0);
	CU_ASSERT(full >= TXN_PREFIXES * 9 / 10);
	CU_ASSERT_EQUAL(g->w.st.tcpct_txn_answered + g->w.st.tcpct_txn_over_budget,
			TXN_PREFIXES * TXN_ROUNDS);
	free(got);
	tgw_free(g);
}

/* Two workers of one gateway spend one budget per prefix. */
static void
test_txn_budget_workers(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "txn-rate", "1000", "queues", "2",
		NULL,
	};
	struct tgw *g = tgw_new(opts);
	struct inaddr neighbour = test_client4, far = test_client4;
	unsigned i;

	neighbour.b[3] = 200;	/* the same /24 */
	far.b[2] = 99;		/* another */
	tgw_second_worker(g);
	g->w1.now_ms = g->w.now_ms;
	for (i = 0; i < TXN_ANSWERS; i++)
		CU_ASSERT_EQUAL(txn_run(g, NULL, (uint16_t)(40000 + i), 100 + i),
				TXN_ALEN + 2);
	/* Worker 1 (a port of the client that the rules give it) finds the
	 * prefix's budget spent, for the client and its neighbours. */
	tgw_drive(g, 1);
	CU_ASSERT_EQUAL(txn_run(g, NULL, 40010, 200), 0);
	CU_ASSERT_EQUAL(txn_run(g, &neighbour, 40011, 201), 0);
	CU_ASSERT_EQUAL(g->w1.st.tcpct_txn_over_budget, 2);
	CU_ASSERT_EQUAL(g->w1.st.tcpct_txn_answered, 0);
	/* Its query went from its own ports. */
	CU_ASSERT_EQUAL(txn_run(g, &far, 40012, 202), TXN_ALEN + 2);
	/* A second later both see it back. */
	g->w.now_ms += 1000;
	g->w1.now_ms += 1000;
	CU_ASSERT_EQUAL(txn_run(g, NULL, 40013, 203), TXN_ALEN + 2);
	tgw_drive(g, 0);
	CU_ASSERT_EQUAL(txn_run(g, NULL, 40014, 204), TXN_ALEN + 2);
	tgw_free(g);
}

/*
 * An answer that comes after txn-timeout never goes on to the client's
 * address over UDP: dropped and counted, whether the timer has given the
 * client its handshake already or not yet.
 */
static void
test_txn_late(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "txn-timeout", "500", NULL,
	};
	struct tgw *g = tgw_new(opts);
	const struct worker_stats *st = &g->w.st;
	struct txn_ask ask, stray;

	/* The timer ran: the client has a plain SYN-ACK. */
	CU_ASSERT_FATAL(txn_syn(g, NULL, 40000, 1000, &ask));
	tgw_advance(g, 500);
	CU_ASSERT_EQUAL(synack_data(g), 0);
	CU_ASSERT_EQUAL(st->tcpct_txn_timeout, 1);
	txn_answer(g, NULL, &ask, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(st->tcpct_txn_late, 1);

	/* Past its time, the timer not run yet: what the timer would give,
	 * and the answer dropped. */
	CU_ASSERT_FATAL(txn_syn(g, NULL, 40001, 2000, &ask));
	g->w.now_ms += 500;
	txn_answer(g, NULL, &ask, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 1);
	CU_ASSERT_EQUAL(synack_data(g), 0);
	CU_ASSERT_EQUAL(st->tcpct_txn_late, 2);
	CU_ASSERT_EQUAL(st->tcpct_txn_timeout, 2);
	CU_ASSERT_EQUAL(st->tcpct_txn_answered, 0);
	tgw_advance(g, 1000);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(st->tcpct_txn_timeout, 2);

	/* In time, answered once; the same answer again is dropped. */
	CU_ASSERT_FATAL(txn_syn(g, NULL, 40002, 3000, &ask));
	tgw_advance(g, 499);
	txn_answer(g, NULL, &ask, TXN_ALEN);
	CU_ASSERT_EQUAL(synack_data(g), TXN_ALEN + 2);
	txn_answer(g, NULL, &ask, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(g->nout, 0);
	CU_ASSERT_EQUAL(st->tcpct_txn_late, 3);

	/* Late by up to TXN_LATE_MS: still dropped. */
	tgw_advance(g, TXN_LATE_MS - 1000);
	txn_answer(g, NULL, &ask, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_DROP);
	CU_ASSERT_EQUAL(st->tcpct_txn_late, 4);

	/* One never asked for, to a port of ours, is an ordinary client's
	 * whose ephemeral port is in our range: it goes on, as does one to
	 * a port not ours (no rule queues it). */
	stray = (struct txn_ask){ .uport = TXN_PORT_BASE + 5, .id = 0x7777 };
	txn_answer(g, NULL, &stray, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_ACCEPT);
	stray.uport = 33000;
	txn_answer(g, NULL, &stray, TXN_ALEN);
	CU_ASSERT_EQUAL(g->verdict, NF_ACCEPT);
	CU_ASSERT_EQUAL(st->tcpct_txn_late, 4);
	tgw_free(g);
}

/*
 * The client's ACK and FIN that close a transaction carry a valid pair and
 * get an ACK, with no state: the same segment again and again gets no more
 * replies than synack-rate allows (the SYN took one of them).
 */
static void
test_txn_close_paced(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "synack-rate", "3", NULL,
	};
	struct tgw *g = tgw_new(opts);
	const struct tgw_out *sa;
	struct txn_ask ask;
	uint8_t cr[8];
	uint32_t seq, ack, tsecr;
	unsigned clen, i, acks = 0;

	CU_ASSERT_FATAL(txn_syn(g, NULL, 40000, 1000, &ask));
	txn_answer(g, NULL, &ask, TXN_ALEN);
	sa = tgw_find(g, false, TCP_SYN | TCP_ACK | TCP_FIN, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
	CU_ASSERT_EQUAL_FATAL(tcpct_form(&sa->o, sa->p.flags, &clen),
			      TCPCT_COOKIE);
	CU_ASSERT_EQUAL_FATAL(clen, 8);
	memcpy(cr, pkt_tcp(&sa->p) + sa->o.ck_off, 8);
	/* It acknowledges the answer and the FIN, and closes. */
	seq = sa->p.ack;
	ack = sa->p.seq + 1 + sa->p.paylen + 1;
	tsecr = sa->o.tsval;
	for (i = 0; i < 6; i++) {
		tgw_tcpct_seg(g, NULL, 40000, seq, ack, TCP_ACK | TCP_FIN,
			      1001 + i, tsecr, txn_ci, cr);
		CU_ASSERT_EQUAL(g->verdict, NF_DROP);
		acks += tgw_find(g, false, TCP_ACK, NULL) != NULL;
	}
	CU_ASSERT_EQUAL(g->w.st.tcpct_txn_closed, 6);
	CU_ASSERT_EQUAL(acks, 2);
	CU_ASSERT_EQUAL(g->w.st.synack_capped, 4);
	tgw_free(g);
}

void
register_txn_tests(void)
{
	static const struct test_case cases[] = {
		{ "DNS framing: query, whole answer, EDNS raised, bounds",
		  test_dnsmsg },
		{ "pending slots: claim, find, expire in order, full",
		  test_txn_table },
		{ "UDP build and parse, v4 and v6, checksum", test_udp_build },
		{ "transaction cookies are their own kind", test_txn_cookie },
		{ "8,192 prefixes: none over its budget",
		  test_txn_budget_prefixes },
		{ "two workers spend one budget per prefix",
		  test_txn_budget_workers },
		{ "late answers dropped, never passed on", test_txn_late },
		{ "close replies paced by synack-rate", test_txn_close_paced },
	};

	TEST_SUITE("txn", cases);
}
