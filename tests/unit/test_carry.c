/*
 * The kernel's flows (gateway/carry.c, and shield/shield.bpf.c's
 * flow_segment, run by the kernel itself through BPF_PROG_TEST_RUN): an
 * established flow a worker gave the kernel shield is carried as the
 * daemon's own splice carries it.  For the same flow and the same segment
 * the program's packet is the daemon's mangled verdict byte for byte and
 * its record the daemon's flow field for field; what the program leaves to
 * the daemon reaches it; the worker catches up with the program's events
 * as if it had spliced the segments itself.
 *
 * Two test-bench gateways run side by side on one clock and one secret:
 * d, the daemon alone, and k, with the shield and kernel-flows.  Loading
 * needs CAP_BPF (make check runs as root).
 */
#include <string.h>

#include <bpf/bpf.h>
#include <CUnit/CUnit.h>
#include <linux/pkt_cls.h>

#include "../../gateway/carry.h"
#include "../../gateway/shieldmap.h"
#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../shield/shield.h"
#include "../ethframe.h"
#include "suites.h"
#include "testgw.h"
#include "testshield.h"
#include "testutil.h"

#define FRAME_MAX	(ETH_LEN + QUEUE_PKT_ROOM)
#define CISN		0x11223344u
#define BISN		0x99887766u

/* The shield's maps as k's daemon writes them, at k's clock. */
static void
sync_k(struct tgw *k)
{
	tshield_sync(k, k->w.now_s, k->w.now_s * 1000000000u + 500000000u,
		     SHIELDMAP_VERIFIED_MARK(&k->cfg));
}

/* The daemon alone (d) and with the kernel (k), one connection each. */
struct pair {
	struct tgw *d, *k;
	struct tgw_conn cd, ck;
};

/* k's clocks are d's. */
static void
same_clock(struct pair *p)
{
	p->k->w.now_ms = p->d->w.now_ms;
	p->k->w.now_s = p->d->w.now_s;
	p->k->w.now_wall_ms = p->d->w.now_wall_ms;
}

/* The daemon alone (d) and with the shield (k) for opts, on one clock, k's
 * maps written: NULL, the test failed, where the shield does not load. */
static struct pair *
pair_alloc(const char *const *opts)
{
	struct pair *p;

	if (!tshield_ready()) {
		CU_FAIL("the shield does not load");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	p->d = tgw_new(opts);
	p->k = tgw_new_shielded(opts, &tshield);
	same_clock(p);
	sync_k(p->k);
	return p;
}

/* Both with a connection of service svc established, the backend's SYN
 * acknowledged (k's worker keeps it: the backend has not answered yet,
 * backlog.c): NULL, the test failed, where the shield does not load. */
static struct pair *
pair_new(const char *const *opts, uint16_t svc, uint16_t cport)
{
	struct pair *p = pair_alloc(opts);

	if (!p)
		return NULL;
	tgw_handshake_to(p->d, &p->cd, svc, cport, CISN);
	tgw_handshake_to(p->k, &p->ck, svc, cport, CISN);
	CU_ASSERT_EQUAL_FATAL(p->cd.gisn, p->ck.gisn);
	tgw_backend_accept(p->d, &p->cd, BISN);
	tgw_backend_accept(p->k, &p->ck, BISN);
	shieldmap_flush(&p->k->w);
	return p;
}

static void
pair_free(struct pair *p)
{
	tgw_free(p->d);
	tgw_free(p->k);
	free(p);
}

/* The shield's verdict on the IP packet buf of len bytes, in a frame that
 * came in by interface indev; out gets the packet as it left (without its
 * Ethernet header). */
static int
run_from(uint32_t indev, const uint8_t *buf, size_t len, uint8_t *out,
	 size_t *outlen, uint32_t *mark)
{
	static const uint8_t macs[12] = { 2, 0, 0, 0, 0, 0xb,
					  2, 0, 0, 0, 0, 0xc };
	uint8_t in[FRAME_MAX], fo[FRAME_MAX];
	struct __sk_buff ctx = { .ingress_ifindex = indev };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = in,
		    .data_size_in = (uint32_t)(ETH_LEN + len), .data_out = fo,
		    .data_size_out = sizeof(fo), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx), .repeat = 1);

	CU_ASSERT_FATAL(ETH_LEN + len <= sizeof(in));
	memcpy(in, macs, sizeof(macs));
	put16(in + 12, (buf[0] >> 4) == 4 ? ETH_TYPE_IPV4 : ETH_TYPE_IPV6);
	memcpy(in + ETH_LEN, buf, len);
	CU_ASSERT_EQUAL_FATAL(bpf_prog_test_run_opts(tshield.prog_fd, &t), 0);
	CU_ASSERT_FATAL(t.data_size_out >= ETH_LEN);
	*outlen = t.data_size_out - ETH_LEN;
	memcpy(out, fo + ETH_LEN, *outlen);
	*mark = ctx.mark;
	return (int)t.retval;
}

/* The same by the interface of the test bench's segments (0). */
static int
run(const uint8_t *buf, size_t len, uint8_t *out, size_t *outlen,
    uint32_t *mark)
{
	return run_from(0, buf, len, out, outlen, mark);
}

static uint64_t
counter(enum shield_counter c)
{
	return tshield_counter(c);
}

/* k's record is d's flow where the program keeps it (the close is the
 * worker's, from the program's event). */
static void
assert_rec_is_flow(const struct shield_flow *r, const struct flow *f)
{
	CU_ASSERT(r->state == f->state ||
		  (r->state == FLOW_CLOSING && f->state == FLOW_CLOSED));
	CU_ASSERT_EQUAL(r->fin, f->fin);
	CU_ASSERT_EQUAL(r->c_nxt, f->c_nxt);
	CU_ASSERT_EQUAL(r->b_nxt, f->b_nxt);
	CU_ASSERT_EQUAL(r->c_ack, f->c_ack);
	CU_ASSERT_EQUAL(r->b_ack, f->b_ack);
	CU_ASSERT_EQUAL(r->c_fin, f->c_fin);
	CU_ASSERT_EQUAL(r->b_fin, f->b_fin);
	CU_ASSERT_EQUAL(r->c_tsval, f->c_tsval);
	CU_ASSERT_EQUAL(r->ts_out, f->ts_out);
	CU_ASSERT_EQUAL(r->c_win, f->c_win);
	CU_ASSERT_EQUAL(r->b_win, f->b_win);
	CU_ASSERT_EQUAL(r->c_maxwin, f->c_maxwin);
	CU_ASSERT_EQUAL(r->b_maxwin, f->b_maxwin);
	CU_ASSERT_EQUAL(r->answers.nxt, f->bdns_nxt);
	CU_ASSERT_EQUAL(r->answers.started, f->bdns.started);
	CU_ASSERT_EQUAL(r->answers.pos, f->bdns.pos);
	CU_ASSERT_EQUAL(r->answers.len, f->bdns.len);
}

/*
 * The IP packet buf of len bytes to both: d's worker splices it; k's
 * shield carries it (when kernel, else it passes it on untouched and
 * unmarked to k's worker, which splices it).  The same packet comes out of
 * both, and k's record is d's flow where the program carried it.  Then
 * k's worker writes its live tuples and reads its events.
 */
static void
both_raw(struct pair *p, const uint8_t *buf, size_t len, bool kernel)
{
	uint8_t out[QUEUE_PKT_ROOM];
	size_t outlen;
	uint32_t mark;
	int v;

	tgw_send_raw(p->d, buf, len);
	CU_ASSERT_FATAL(p->d->mangled);
	v = run(buf, len, out, &outlen, &mark);
	CU_ASSERT_EQUAL(v, TC_ACT_OK);
	if (kernel) {
		CU_ASSERT_EQUAL(mark, POLICY_CARRIED_MARK(&p->k->cfg));
		CU_ASSERT_EQUAL_FATAL(outlen, p->d->fwd.p.len);
		CU_ASSERT(!memcmp(out, p->d->fwd.buf, outlen));
		assert_rec_is_flow(flow_rec(&p->k->w.ft,
					    tgw_flow(p->k, &p->ck)),
				   tgw_flow(p->d, &p->cd));
	} else {
		CU_ASSERT_EQUAL(mark, 0);
		CU_ASSERT(outlen == len && !memcmp(out, buf, len));
		tgw_send_raw(p->k, buf, len);
		CU_ASSERT_FATAL(p->k->mangled);
		CU_ASSERT_EQUAL_FATAL(p->k->fwd.p.len, p->d->fwd.p.len);
		CU_ASSERT(!memcmp(p->k->fwd.buf, p->d->fwd.buf,
				  p->d->fwd.p.len));
	}
	shieldmap_flush(&p->k->w);
	carry_events(&p->k->w);
}

static void
both(struct pair *p, const struct tgw_seg *s, bool kernel)
{
	uint8_t buf[QUEUE_PKT_ROOM];

	both_raw(p, buf, tgw_build(p->k, s, buf, sizeof(buf)), kernel);
}

static void
carried(struct pair *p, const struct tgw_seg *s)
{
	both(p, s, true);
}

/* A segment of one side with the connection's numbers, as testgw's
 * tgw_client_data and tgw_backend_data make it (both conns advance). */
static struct tgw_seg
side_seg(struct pair *p, bool backend, uint16_t n, uint8_t flags,
	 const uint8_t *pay)
{
	struct tgw_conn *c = &p->ck;
	struct tgw_seg s = {
		.from_backend = backend, .cport = c->cport,
		.service = c->service, .flags = flags | TCP_ACK,
		.win = backend ? 509 : 502, .ts = true, .wscale = -1,
		.pay = pay, .paylen = n,
	};

	if (backend) {
		s.seq = c->bisn + 1 + (c->b_nxt - c->b_base);
		s.ack = c->b_ack;
		s.tsval = c->b_tsval++;
		s.tsecr = c->c_tsval - 1;
		c->b_nxt += n + !!(flags & TCP_FIN);
	} else {
		s.seq = c->c_nxt;
		s.ack = c->b_nxt;
		s.tsval = c->c_tsval++;
		s.tsecr = c->g_tsval;
		c->c_nxt += n + !!(flags & TCP_FIN);
	}
	p->cd = p->ck;
	return s;
}

static const char *const generic[] = {
	"protect", "192.0.2.2:80", "protect", "[2001:db8:b::2]:80",
	"kernel-flows", "yes", NULL,
};

/*
 * A whole generic connection after its handshake, IPv4 and IPv6: a
 * request, the backend's ACK and answer, the client's ACKs (one with SACK
 * blocks), a window of another scale, the client's FIN, the backend's FIN
 * and the last ACK, each carried by the program exactly as the daemon
 * splices it; the worker learns of the FINs and the close from the ring.
 */
static void
test_carry_as_daemon(void)
{
	static const uint8_t req[300] = { 'G', 'E', 'T' };
	static uint8_t answer[1200];
	unsigned fam;

	memset(answer, 'a', sizeof(answer));
	for (fam = 0; fam < 2; fam++) {
		struct pair *p = pair_new(generic, (uint16_t)fam,
					  (uint16_t)(40000 + fam));
		struct tgw_seg s;
		struct flow *fk, *fd;
		uint64_t c2b, b2c;


		if (!p)
			return;
		c2b = counter(SHIELD_C2B);
		b2c = counter(SHIELD_B2C);
		/* In the backend's backlog until it answers (backlog.c):
		 * the worker learns of its answer from the kernel. */
		fk = tgw_flow(p->k, &p->ck);
		fd = tgw_flow(p->d, &p->cd);
		CU_ASSERT(flow_carried(&p->k->w.ft, fk));
		CU_ASSERT(fk->opening && fd->opening);
		s = side_seg(p, false, sizeof(req), TCP_PSH, req);
		carried(p, &s);
		p->ck.b_ack = p->ck.c_nxt;
		s = side_seg(p, true, 0, 0, NULL);
		carried(p, &s);
		CU_ASSERT(fk->opening);
		s = side_seg(p, true, sizeof(answer), TCP_PSH, answer);
		carried(p, &s);
		CU_ASSERT(!fk->opening && !fd->opening);
		CU_ASSERT(flow_carried(&p->k->w.ft, fk));
		s = side_seg(p, true, sizeof(answer), 0, answer);
		s.win = 40;		/* a small window, scaled */
		carried(p, &s);
		/* An ACK of the first with the second SACKed. */
		s = side_seg(p, false, 0, 0, NULL);
		s.ack = p->ck.b_nxt - sizeof(answer);
		{
			/* tcpopt_spec has no SACK: a NOP NOP SACK(1) after
			 * the timestamps, built by hand. */
			uint8_t buf[QUEUE_PKT_ROOM];
			size_t len = tgw_build(p->k, &s, buf, sizeof(buf));
			struct pkt pk;

			len += 12;
			CU_ASSERT_EQUAL_FATAL(pkt_parse(&pk, buf, len - 12),
					      PKT_OK);
			{
				uint8_t *th = pkt_tcp(&pk);
				unsigned doff = pk.doff;

				CU_ASSERT_FATAL(doff + 12 <= TCP_HDR_LEN + 40);
				th[doff] = TCPOPT_NOP;
				th[doff + 1] = TCPOPT_NOP;
				th[doff + 2] = TCPOPT_SACK;
				th[doff + 3] = 10;
				put32(th + doff + 4, p->ck.b_nxt - 500);
				put32(th + doff + 8, p->ck.b_nxt);
				th[TCP_OFF_DOFF] = (uint8_t)((doff + 12) / 4 << 4);
				if (pk.family == AF_INET)
					put16(buf + 2, (uint16_t)len);
				else
					put16(buf + 4, (uint16_t)(len - 40));
				if (pk.family == AF_INET) {
					put16(buf + 10, 0);
					put16(buf + 10, csum_fold(csum_add(0, buf,
									   20)));
				}
				CU_ASSERT_EQUAL_FATAL(pkt_parse(&pk, buf, len),
						      PKT_OK);
				pkt_tcp_csum_set(&pk);
			}
			both_raw(p, buf, len, true);
			CU_ASSERT_EQUAL(p->d->fwd.o.nsack, 1);
		}
		s = side_seg(p, false, 0, 0, NULL);
		carried(p, &s);
		/* The client closes; the backend acknowledges and closes. */
		s = side_seg(p, false, 0, TCP_FIN, NULL);
		carried(p, &s);
		CU_ASSERT_EQUAL(fk->state, FLOW_CLOSING);
		CU_ASSERT_EQUAL(fk->timer, fd->timer);
		CU_ASSERT(flow_carried(&p->k->w.ft, fk));
		p->ck.b_ack = p->ck.c_nxt;
		s = side_seg(p, true, 0, TCP_FIN, NULL);
		carried(p, &s);
		s = side_seg(p, false, 0, 0, NULL);
		carried(p, &s);
		/* Both FINs acknowledged: the worker lingers over it, as
		 * the daemon does; no longer the kernel's. */
		CU_ASSERT_EQUAL(fk->state, FLOW_CLOSED);
		CU_ASSERT_EQUAL(fk->state, fd->state);
		CU_ASSERT_EQUAL(fk->timer, fd->timer);
		CU_ASSERT_FALSE(flow_carried(&p->k->w.ft, fk));
		CU_ASSERT_EQUAL(counter(SHIELD_C2B), c2b + 5);
		CU_ASSERT_EQUAL(counter(SHIELD_B2C), b2c + 4);
		CU_ASSERT_EQUAL(p->k->w.st.c2b, 0);
		CU_ASSERT_EQUAL(p->k->w.st.b2c, 0);
		/* The service's counts have them all. */
		CU_ASSERT_EQUAL(p->k->w.svc_st[fam].c2b, p->d->w.svc_st[fam].c2b);
		CU_ASSERT_EQUAL(p->k->w.svc_st[fam].b2c, p->d->w.svc_st[fam].b2c);
		CU_ASSERT(p->k->w.st.carry_events >= 2);
		pair_free(p);
	}
}

/*
 * What the program does not carry: a backend segment past the backend's
 * own numbers is dropped by both, counted; a client's ACK of what was never
 * sent goes to the daemon, which sends the challenge ACK, and the next one
 * within the challenge's interval is dropped by the program as the daemon
 * drops it; a RST and a SYN on the flow go to the daemon, untouched.
 */
static void
test_carry_judged(void)
{
	static const uint8_t answer[200] = { 'a' };
	struct pair *p = pair_new(generic, 0, 40100);
	uint8_t buf[QUEUE_PKT_ROOM], out[QUEUE_PKT_ROOM];
	struct tgw_seg s;
	size_t len, outlen;
	uint64_t bad, limited;
	uint32_t mark;

	if (!p)
		return;
	s = side_seg(p, false, 10, TCP_PSH, answer);
	carried(p, &s);
	p->ck.b_ack = p->ck.c_nxt;
	s = side_seg(p, true, sizeof(answer), TCP_PSH, answer);
	carried(p, &s);
	CU_ASSERT_FATAL(flow_carried(&p->k->w.ft, tgw_flow(p->k, &p->ck)));
	/* The client's window as wide as it goes (65535 << 7): a backend
	 * segment 100,000 bytes past what it sent is in it, but past the
	 * backend's own numbers (gateway/accept.h). */
	s = side_seg(p, false, 0, 0, NULL);
	s.win = 65535;
	carried(p, &s);
	/* A backend segment with the backend's numbers, by another
	 * interface than the backend's (a forger on the clients' side): not
	 * the kernel's to carry; the rules' rpfilter drops it. */
	s = side_seg(p, true, 0, 0, NULL);
	len = tgw_build(p->k, &s, buf, sizeof(buf));
	CU_ASSERT_EQUAL(run_from(7, buf, len, out, &outlen, &mark), TC_ACT_OK);
	CU_ASSERT(mark == 0 && outlen == len && !memcmp(out, buf, len));
	p->cd = p->ck;
	s = side_seg(p, true, 0, 0, NULL);
	s.seq += 100000;
	len = tgw_build(p->k, &s, buf, sizeof(buf));
	bad = counter(SHIELD_BACKEND_UNACCEPTABLE);
	tgw_send_raw(p->d, buf, len);
	CU_ASSERT_EQUAL(p->d->verdict, NF_DROP);
	CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_SHOT);
	CU_ASSERT_EQUAL(counter(SHIELD_BACKEND_UNACCEPTABLE), bad + 1);
	CU_ASSERT_EQUAL(p->d->w.st.backend_unacceptable, 1);
	/* A client's ACK of bytes never sent: the daemon's challenge. */
	s = side_seg(p, false, 0, 0, NULL);
	s.ack += 5000;
	len = tgw_build(p->k, &s, buf, sizeof(buf));
	tgw_send_raw(p->d, buf, len);
	CU_ASSERT_EQUAL(p->d->verdict, NF_DROP);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(p->d, false, TCP_ACK, NULL));
	CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_OK);
	CU_ASSERT_EQUAL(mark, 0);
	CU_ASSERT(outlen == len && !memcmp(out, buf, len));
	tgw_send_raw(p->k, buf, len);
	CU_ASSERT_EQUAL(p->k->verdict, NF_DROP);
	CU_ASSERT_PTR_NOT_NULL(tgw_find(p->k, false, TCP_ACK, NULL));
	CU_ASSERT(flow_carried(&p->k->w.ft, tgw_flow(p->k, &p->ck)));
	/* Again, within the interval: not even the daemon's to see. */
	limited = counter(SHIELD_CHALLENGE_LIMITED);
	tgw_send_raw(p->d, buf, len);
	CU_ASSERT_EQUAL(p->d->w.st.challenge_ack_limited, 1);
	CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_SHOT);
	CU_ASSERT_EQUAL(counter(SHIELD_CHALLENGE_LIMITED), limited + 1);
	/* A RST and a SYN with the flow's tuple: the daemon's. */
	s = side_seg(p, false, 0, TCP_RST, NULL);
	s.flags = TCP_RST;
	len = tgw_build(p->k, &s, buf, sizeof(buf));
	CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_OK);
	CU_ASSERT(mark == 0 && outlen == len && !memcmp(out, buf, len));
	s.flags = TCP_SYN;
	len = tgw_build(p->k, &s, buf, sizeof(buf));
	CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_OK);
	CU_ASSERT(mark == 0 && outlen == len && !memcmp(out, buf, len));
	pair_free(p);
}

/*
 * A backend's spurious retransmission, more than the slack behind what the
 * client acknowledged (gateway/accept.h's accept_backend_old): the program
 * passes it on in the client's view as the daemon does, byte for byte,
 * and learns of it what the daemon does: nothing.
 */
static void
test_carry_old_dup(void)
{
	static const uint8_t answer[1400] = { 'a' };
	struct pair *p = pair_new(generic, 0, 40200);
	struct tgw_seg s;
	uint64_t old;
	unsigned i;

	if (!p)
		return;
	s = side_seg(p, false, 10, TCP_PSH, answer);
	s.win = 65535;
	carried(p, &s);
	p->ck.b_ack = p->ck.c_nxt;
	for (i = 0; i < 50; i++) {
		s = side_seg(p, true, sizeof(answer), 0, answer);
		carried(p, &s);
	}
	s = side_seg(p, false, 0, 0, NULL);
	s.win = 65535;
	carried(p, &s);
	CU_ASSERT_FATAL(flow_carried(&p->k->w.ft, tgw_flow(p->k, &p->ck)));
	/* 1000 bytes of the second segment again: carried, the records
	 * unmoved. */
	old = counter(SHIELD_BACKEND_OLD);
	s = side_seg(p, true, 1000, 0, answer);
	p->ck.b_nxt -= 1000;
	p->cd = p->ck;
	s.seq = p->ck.bisn + 1 + sizeof(answer);
	carried(p, &s);
	CU_ASSERT_EQUAL(counter(SHIELD_BACKEND_OLD), old + 1);
	CU_ASSERT_EQUAL(p->d->w.st.backend_old_dup, 1);
	CU_ASSERT_EQUAL(p->d->w.st.backend_unacceptable, 0);
	/* One before the backend's first byte: dropped by both. */
	s.seq = p->ck.bisn - 2000;
	{
		uint8_t buf[QUEUE_PKT_ROOM], out[QUEUE_PKT_ROOM];
		size_t len = tgw_build(p->k, &s, buf, sizeof(buf)), outlen;
		uint32_t mark;

		tgw_send_raw(p->d, buf, len);
		CU_ASSERT_EQUAL(p->d->verdict, NF_DROP);
		CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark),
				TC_ACT_SHOT);
	}
	pair_free(p);
}

static const char *const dns[] = {
	"protect", "192.0.2.2:53", "protect", "[2001:db8:b::2]:53",
	"kernel-flows", "yes", NULL,
};

/* A DNS connection handshaken on both, after a first one on each that
 * taught k's worker where its backend answers from (the daemon's own
 * binding): NULL, the test failed, where the shield does not load. */
static struct pair *
dns_pair(uint16_t svc, uint16_t cport)
{
	uint8_t q[64];
	uint16_t n = tgw_query(q, 30, 1, false);
	struct tgw_conn first;
	struct pair *p = pair_alloc(dns);

	if (!p)
		return NULL;
	for (unsigned i = 0; i < 2; i++) {
		struct tgw *g = i ? p->k : p->d;

		tgw_handshake_to(g, &first, svc, (uint16_t)(cport - 1),
				 CISN - 1000);
		tgw_client_data(g, &first, q, n, TCP_PSH);
		tgw_backend_accept(g, &first, BISN - 1000);
	}
	shieldmap_flush(&p->k->w);
	tgw_handshake_to(p->d, &p->cd, svc, cport, CISN);
	tgw_handshake_to(p->k, &p->ck, svc, cport, CISN);
	CU_ASSERT_EQUAL_FATAL(p->cd.gisn, p->ck.gisn);
	shieldmap_flush(&p->k->w);
	return p;
}

/* The backend's SYN-ACK to the SYN d's worker sent, for c. */
static struct tgw_seg
backend_synack(struct pair *p)
{
	const struct tgw_out *syn = tgw_find(p->d, true, TCP_SYN, NULL);
	struct tgw_conn *c = &p->ck;
	struct tgw_seg s = {
		.from_backend = true, .cport = c->cport,
		.service = c->service, .seq = BISN, .ack = c->cisn + 1,
		.flags = TCP_SYN | TCP_ACK, .win = 65160, .ts = true,
		.tsval = 77000, .mss = TGW_BACKEND_MSS,
		.wscale = TGW_BACKEND_WS, .sack_perm = true,
	};

	CU_ASSERT_PTR_NOT_NULL_FATAL(syn);
	s.tsecr = syn->o.tsval;
	c->bisn = BISN;
	c->b_base = c->b_nxt;
	c->b_tsval = 77001;
	c->b_ack = c->cisn + 1;
	p->cd = p->ck;
	return s;
}

/* What k's worker made of what the kernel did is what d's did itself. */
static void
assert_caught_up(const struct flow *fk, const struct flow *fd)
{
	CU_ASSERT_EQUAL(fk->state, fd->state);
	CU_ASSERT_EQUAL(fk->timer, fd->timer);
	CU_ASSERT_EQUAL(fk->taken, fd->taken);
	CU_ASSERT_EQUAL(fk->hold >= 0, fd->hold >= 0);
	CU_ASSERT_EQUAL(fk->syn_tries, fd->syn_tries);
	CU_ASSERT_EQUAL(fk->opening, fd->opening);
	CU_ASSERT_EQUAL(fk->backend_held, fd->backend_held);
	CU_ASSERT_EQUAL(fk->dns.started, fd->dns.started);
	CU_ASSERT_EQUAL(fk->c_nxt, fd->c_nxt);
	CU_ASSERT_EQUAL(fk->b_ack, fd->b_ack);
	CU_ASSERT_EQUAL(fk->c_tsval, fd->c_tsval);
	CU_ASSERT_EQUAL(fk->bisn, fd->bisn);
	CU_ASSERT_EQUAL(fk->seq_delta, fd->seq_delta);
	CU_ASSERT_EQUAL(fk->ts_delta, fd->ts_delta);
	CU_ASSERT_EQUAL(fk->ts_out, fd->ts_out);
	CU_ASSERT_EQUAL(fk->b_ws, fd->b_ws);
	CU_ASSERT_EQUAL(fk->c_ws_b, fd->c_ws_b);
	CU_ASSERT_EQUAL(fk->b_win, fd->b_win);
	CU_ASSERT_EQUAL(fk->b_maxwin, fd->b_maxwin);
	CU_ASSERT_EQUAL(fk->bdns.server, fd->bdns.server);
}

/*
 * A DNS connection's binding in the kernel, IPv4 and IPv6: its first
 * query, whole in one segment, becomes the backend's SYN, and the
 * backend's SYN-ACK the ACK that carries the query to it, each byte for
 * byte what the daemon sends for the same segment (the daemon's window
 * update to the client is not sent: the backend's ACK, carried, tells the
 * client).  The worker learns of each from the ring and catches up as if
 * it had bound the flow itself; the answer, the ACKs and the close are
 * carried on, and the service's counts are the daemon's.
 */
static void
test_carry_binding(void)
{
	static uint8_t q[128], a[200];
	uint16_t qn = tgw_query(q, 60, 7, false);
	uint16_t an = tgw_query(a, 120, 7, true);

	/* IPv4, IPv6, and IPv4 with the worker late: it reads its ring only
	 * after the SYN-ACK, and catches up with both at once. */
	for (unsigned round = 0; round < 3; round++) {
		unsigned fam = round & 1;
		bool late = round == 2;
		struct pair *p = dns_pair((uint16_t)fam,
					  (uint16_t)(41001 + round * 10));
		uint8_t buf[QUEUE_PKT_ROOM], out[QUEUE_PKT_ROOM];
		const struct tgw_out *dsyn, *dheld;
		uint64_t bound = counter(SHIELD_BOUND_SYN);
		uint64_t answered = counter(SHIELD_BOUND_SYNACK);
		struct flow *fk, *fd;
		struct tgw_seg s;
		size_t len, outlen;
		uint32_t mark;

		if (!p)
			return;
		fk = tgw_flow(p->k, &p->ck);
		fd = tgw_flow(p->d, &p->cd);
		CU_ASSERT_FATAL(fk && fd);
		CU_ASSERT_EQUAL(fk->state, FLOW_BINDING);
		CU_ASSERT(flow_carried(&p->k->w.ft, fk));
		CU_ASSERT(p->k->w.tickets[fam] > 0);

		/* The query: the backend's SYN. */
		s = side_seg(p, false, qn, TCP_PSH, q);
		len = tgw_build(p->k, &s, buf, sizeof(buf));
		tgw_send_raw(p->d, buf, len);
		CU_ASSERT_EQUAL(p->d->verdict, NF_DROP);
		dsyn = tgw_find(p->d, true, TCP_SYN, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(dsyn);
		CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_OK);
		CU_ASSERT_EQUAL(mark, POLICY_CARRIED_MARK(&p->k->cfg));
		CU_ASSERT_EQUAL_FATAL(outlen, dsyn->p.len);
		CU_ASSERT(!memcmp(out, dsyn->buf, outlen));
		CU_ASSERT_EQUAL(counter(SHIELD_BOUND_SYN), bound + 1);
		/* The worker notes it and leaves the kernel the flow, whose
		 * SYN-ACK is due; taken back, it is d's. */
		if (!late) {
			carry_events(&p->k->w);
			CU_ASSERT_EQUAL(p->k->w.st.carry_bound, 1);
			CU_ASSERT(flow_carried(&p->k->w.ft, fk));
			CU_ASSERT(flow_take(&p->k->w.ft, fk));
			assert_caught_up(fk, fd);
			carry_give(&p->k->w, fk);
			CU_ASSERT(flow_carried(&p->k->w.ft, fk));
		}

		/* The backend's SYN-ACK: the query, to it. */
		s = backend_synack(p);
		len = tgw_build(p->k, &s, buf, sizeof(buf));
		tgw_send_raw(p->d, buf, len);
		dheld = tgw_find(p->d, true, TCP_ACK | TCP_PSH, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(dheld);
		CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark),
				TC_ACT_REDIRECT);
		CU_ASSERT_EQUAL_FATAL(outlen, dheld->p.len);
		CU_ASSERT(!memcmp(out, dheld->buf, outlen));
		CU_ASSERT_EQUAL(counter(SHIELD_BOUND_SYNACK), answered + 1);
		assert_rec_is_flow(flow_rec(&p->k->w.ft, fk), fd);
		carry_events(&p->k->w);
		CU_ASSERT_EQUAL(p->k->w.st.carry_bound, 1);
		assert_caught_up(fk, fd);
		CU_ASSERT(flow_carried(&p->k->w.ft, fk));

		/* The backend's ACK and answer, the client's ACK, carried;
		 * the worker learns the query was taken and answered. */
		p->ck.b_ack = p->ck.c_nxt;
		s = side_seg(p, true, an, TCP_PSH, a);
		carried(p, &s);
		CU_ASSERT(fk->hold < 0 && fd->hold < 0);
		CU_ASSERT(!fk->opening && !fd->opening);
		assert_caught_up(fk, fd);
		s = side_seg(p, false, 0, 0, NULL);
		carried(p, &s);
		/* The close. */
		s = side_seg(p, false, 0, TCP_FIN, NULL);
		carried(p, &s);
		p->ck.b_ack = p->ck.c_nxt;
		s = side_seg(p, true, 0, TCP_FIN, NULL);
		carried(p, &s);
		s = side_seg(p, false, 0, 0, NULL);
		carried(p, &s);
		CU_ASSERT_EQUAL(fk->state, FLOW_CLOSED);
		CU_ASSERT_EQUAL(fk->timer, fd->timer);
		CU_ASSERT_EQUAL(p->k->w.svc_st[fam].c2b, p->d->w.svc_st[fam].c2b);
		CU_ASSERT_EQUAL(p->k->w.svc_st[fam].b2c, p->d->w.svc_st[fam].b2c);
		CU_ASSERT_EQUAL(p->k->w.st.bind_opened, p->d->w.st.bind_opened);
		CU_ASSERT_EQUAL(p->k->w.st.backend_syn, p->d->w.st.backend_syn);
		CU_ASSERT_EQUAL(p->k->w.st.backend_synack,
				p->d->w.st.backend_synack);
		CU_ASSERT_EQUAL(p->k->w.opening[fam], p->d->w.opening[fam]);
		pair_free(p);
	}
}

/* The program leaves segment s of p's flow to the daemon, untouched. */
static void
assert_daemons(struct pair *p, const struct tgw_seg *s)
{
	uint8_t buf[QUEUE_PKT_ROOM], out[QUEUE_PKT_ROOM];
	size_t len = tgw_build(p->k, s, buf, sizeof(buf)), outlen;
	uint32_t mark;

	CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_OK);
	CU_ASSERT(mark == 0 && outlen == len && !memcmp(out, buf, len));
}

/*
 * What the kernel does not bind, left to the daemon untouched: a first
 * query in two segments, one of 256 bytes or more, a zone transfer's, one
 * with a bad checksum, a response, and any while the worker lent no
 * place in the backend's backlog; a binding the daemon made, whose backend
 * it has not seen answer, is not given until it has.
 */
static void
test_carry_not_bound(void)
{
	static uint8_t q[400];
	struct pair *p = dns_pair(0, 41101);
	struct tgw_conn at;
	struct tgw_seg s;
	uint16_t n;

	if (!p)
		return;
	/* Each a first query, at the connection's numbers as they stand. */
	at = p->ck;
	/* Half a query. */
	n = tgw_query(q, 60, 9, false);
	s = side_seg(p, false, (uint16_t)(n - 10), TCP_PSH, q);
	assert_daemons(p, &s);
	/* Too long for the record. */
	p->ck = at;
	n = tgw_query(q, 300, 9, false);
	s = side_seg(p, false, n, TCP_PSH, q);
	assert_daemons(p, &s);
	/* AXFR: the root's, type 252. */
	p->ck = at;
	n = tgw_query(q, 60, 9, false);
	q[2 + 12 + 1] = 0;
	q[2 + 12 + 2] = 252;
	s = side_seg(p, false, n, TCP_PSH, q);
	assert_daemons(p, &s);
	/* A response. */
	p->ck = at;
	n = tgw_query(q, 60, 9, true);
	s = side_seg(p, false, n, TCP_PSH, q);
	assert_daemons(p, &s);
	/* No place lent. */
	p->ck = at;
	n = tgw_query(q, 60, 9, false);
	__atomic_store_n(&p->k->w.tickets[0], 0, __ATOMIC_RELAXED);
	s = side_seg(p, false, n, TCP_PSH, q);
	assert_daemons(p, &s);
	/* A bad checksum. */
	__atomic_store_n(&p->k->w.tickets[0], 1, __ATOMIC_RELAXED);
	{
		uint8_t buf[QUEUE_PKT_ROOM], out[QUEUE_PKT_ROOM];
		size_t len = tgw_build(p->k, &s, buf, sizeof(buf)), outlen;
		uint32_t mark;

		buf[len - 1] ^= 0x55;
		CU_ASSERT_EQUAL(run(buf, len, out, &outlen, &mark), TC_ACT_OK);
		CU_ASSERT(mark == 0 && outlen == len && !memcmp(out, buf, len));
	}
	CU_ASSERT_EQUAL(p->k->w.tickets[0], 1);
	CU_ASSERT_EQUAL(tgw_flow(p->k, &p->ck)->state, FLOW_BINDING);
	pair_free(p);

	/* A worker that has not seen the service's backend answer yet. */
	{
		const char *const *opts = dns;
		struct tgw *k;
		struct tgw_conn c = { .service = 0 };

		if (!tshield_ready())
			return;
		k = tgw_new_shielded(opts, &tshield);
		sync_k(k);
		tgw_handshake(k, &c, 41201, CISN);
		CU_ASSERT_FALSE(flow_carried(&k->w.ft, tgw_flow(k, &c)));
		tgw_free(k);
	}
}

void
register_carry_tests(void)
{
	CU_pSuite s = CU_add_suite("carry", NULL, tshield_clean);
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "a generic connection carried by the kernel as the daemon "
		  "splices it: v4, v6, data, SACK, windows, FINs, the close",
		  test_carry_as_daemon },
		{ "what it does not carry: past the backend's numbers, an "
		  "ACK of the unsent, a RST, a SYN", test_carry_judged },
		{ "a backend's spurious retransmission passed on unlearnt, as "
		  "the daemon does", test_carry_old_dup },
		{ "a DNS binding in the kernel as the daemon binds: the "
		  "backend's SYN, the query at its SYN-ACK, caught up",
		  test_carry_binding },
		{ "what it does not bind: half a query, a long one, AXFR, "
		  "a response, no place lent, a bad checksum",
		  test_carry_not_bound },
	};
	unsigned i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		CU_add_test(s, tests[i].name, tests[i].fn);
}
