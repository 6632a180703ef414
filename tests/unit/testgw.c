/*
 * The test bench gateway (testgw.h).
 */
#include "testgw.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <string.h>

#include <libmnl/libmnl.h>

#include "../../gateway/carry.h"
#include "../../gateway/shieldmap.h"
#include "../../nfq/bytes.h"
#include "../../nfq/tcpct.h"
#include "testutil.h"

static struct tgw *
make(const char *const *opts, struct shield *sh)
{
	struct profile prof = {
		.known = true, .mss = TGW_BACKEND_MSS, .ws = true,
		.wscale = TGW_BACKEND_WS, .sack = true, .ts = true,
	};
	struct tgw *g = calloc(1, sizeof(*g));
	struct rng r;
	char err[256];
	unsigned i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	config_defaults(&g->cfg);
	g->cfg.flows = 256;
	g->cfg.hold_slots = 64;
	g->cfg.limit_slots = 1024;
	for (i = 0; opts[i]; i += 2)
		CU_ASSERT_EQUAL_FATAL(config_set(&g->cfg, opts[i], opts[i + 1],
						 "test", NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_check(&g->cfg, NULL, NULL), 0);
	rng_init(&r, 0x747477);
	rng_bytes(&r, g->master.secret, sizeof(g->master.secret));
	g->gw.cfg = &g->cfg;
	g->gw.master = &g->master;
	CU_ASSERT_EQUAL_FATAL(limits_init(&g->gw.limits, g->cfg.limit_slots,
					  7), 0);
	for (i = 0; i < g->cfg.nservices; i++)
		atomic_store(&g->gw.profile[i], profile_pack(&prof));
	if (sh) {
		/* As the daemon sets its workers up with the shield. */
		CU_ASSERT_FATAL(sh->nrecs >= g->cfg.flows);
		g->gw.shield = sh;
		g->gw.flow_watch = shieldmap_watch;
	}
	CU_ASSERT_EQUAL_FATAL(worker_init_state(&g->w, &g->gw, 0, err,
						sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(carry_init(&g->w, err, sizeof(err)), 0);
	g->q.tx = g->tx;
	g->q.tx_cap = sizeof(g->tx);
	g->w.cur = &g->q;
	g->drive = &g->w;
	g->client_ws = 7;
	return g;
}

struct tgw *
tgw_new(const char *const *opts)
{
	return make(opts, NULL);
}

struct tgw *
tgw_new_shielded(const char *const *opts, struct shield *sh)
{
	return make(opts, sh);
}

void
tgw_second_worker(struct tgw *g)
{
	char err[256];

	CU_ASSERT_FATAL(!g->has_w1);
	CU_ASSERT_EQUAL_FATAL(worker_init_state(&g->w1, &g->gw, 1, err,
						sizeof(err)), 0);
	g->w1.cur = &g->q;
	g->has_w1 = true;
}

void
tgw_drive(struct tgw *g, unsigned worker)
{
	CU_ASSERT_FATAL(worker == 0 || g->has_w1);
	g->drive = worker ? &g->w1 : &g->w;
}

void
tgw_free(struct tgw *g)
{
	if (g->has_w1)
		worker_fini(&g->w1);
	carry_fini(&g->w);
	worker_fini(&g->w);
	limits_free(&g->gw.limits);
	free(g);
}

static void
parse_out(struct tgw_out *o, size_t len)
{
	enum pkt_verdict v = pkt_parse(&o->p, o->buf, len);

	/* A transaction's query to the backend (txn.h). */
	o->udp = v == PKT_NOT_TCP;
	if (o->udp) {
		CU_ASSERT_EQUAL_FATAL(pkt_parse_udp(&o->p, o->buf, len),
				      PKT_OK);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(v, PKT_OK);
	CU_ASSERT_EQUAL_FATAL(tcpopt_parse(pkt_tcp(&o->p) + TCP_HDR_LEN,
					   o->p.doff - TCP_HDR_LEN,
					   TCP_HDR_LEN, &o->o), TCPOPT_OK);
	/* Whatever tcpctd sends on has a right checksum. */
	CU_ASSERT(pkt_tcp_csum_ok(&o->p));
}

/* Moves the injection batch to out. */
static void
collect(struct tgw *g)
{
	struct inject *ij = &g->drive->ij;
	unsigned i;

	g->nout = 0;
	for (i = 0; i < ij->n && g->nout < TGW_OUT_MAX; i++) {
		struct tgw_out *o = &g->out[g->nout++];

		memcpy(o->buf, ij->buf[i], ij->iov[i].iov_len);
		parse_out(o, ij->iov[i].iov_len);
	}
	ij->n = 0;
}

static int
verdict_attr(const struct nlattr *a, void *data)
{
	struct tgw *g = data;

	if (mnl_attr_get_type(a) == NFQA_VERDICT_HDR) {
		const struct nfqnl_msg_verdict_hdr *vh =
			mnl_attr_get_payload(a);

		g->verdict = (int)ntohl(vh->verdict);
	} else if (mnl_attr_get_type(a) == NFQA_PAYLOAD) {
		uint16_t len = mnl_attr_get_payload_len(a);

		CU_ASSERT_FATAL(len <= sizeof(g->fwd.buf));
		memcpy(g->fwd.buf, mnl_attr_get_payload(a), len);
		parse_out(&g->fwd, len);
		g->mangled = true;
	}
	return MNL_CB_OK;
}

size_t
tgw_build(const struct tgw *g, const struct tgw_seg *s, uint8_t *buf,
	  size_t cap)
{
	const struct service *svc = &g->cfg.services[s->service];
	const struct inaddr *caddr = svc->family == AF_INET ? &test_client4
							    : &test_client6;
	uint8_t opts[TCP_OPT_MAX];
	struct tcpopt_spec os = {
		.mss = s->mss, .sack_perm = s->sack_perm, .ts = s->ts,
		.tsval = s->tsval, .tsecr = s->tsecr,
		.wscale = s->wscale >= 0 && (s->flags & TCP_SYN),
		.wscale_shift = s->wscale > 0 ? (uint8_t)s->wscale : 0,
	};
	struct pkt_tcp_spec ps = {
		.family = svc->family,
		.src = s->from_backend ? &svc->addr : caddr,
		.dst = s->from_backend ? caddr : &svc->addr,
		.sport = s->from_backend ? svc->port : s->cport,
		.dport = s->from_backend ? s->cport : svc->port,
		.seq = s->seq, .ack = s->ack, .flags = s->flags,
		.win = s->win, .opts = opts, .pay = s->pay,
		.paylen = s->paylen,
	};
	struct pkt p;
	size_t len;

	ps.optlen = tcpopt_build(opts, &os);
	len = pkt_build_tcp(buf, cap, &ps, &p);
	CU_ASSERT_FATAL(len != 0);
	return len;
}

void
tgw_send(struct tgw *g, const struct tgw_seg *s)
{
	uint8_t buf[QUEUE_PKT_ROOM];
	size_t len = tgw_build(g, s, buf, sizeof(buf));

	tgw_send_raw(g, buf, len);
}

void
tgw_send_raw(struct tgw *g, const uint8_t *buf, size_t len)
{
	uint8_t copy[QUEUE_PKT_ROOM];
	struct queue_packet np = { .id = 1 };
	struct nlmsghdr *nlh = (struct nlmsghdr *)g->tx;

	/* The worker may rewrite the packet in place, as in a queue's. */
	CU_ASSERT_FATAL(len <= sizeof(copy));
	memcpy(copy, buf, len);
	np.data = copy;
	np.len = len;
	np.mark = g->mark;
	np.indev = g->indev;
	g->q.tx_len = 0;
	g->mangled = false;
	g->verdict = -1;
	worker_packet(&np, g->drive);
	CU_ASSERT_FATAL(g->q.tx_len > 0);
	mnl_attr_parse(nlh, sizeof(struct nfgenmsg), verdict_attr, g);
	collect(g);
}

void
tgw_advance(struct tgw *g, unsigned ms)
{
	g->drive->now_ms += ms;
	worker_timers(g->drive);
	collect(g);
}

const struct tgw_out *
tgw_find(const struct tgw *g, bool to_backend, uint8_t flags, unsigned *from)
{
	unsigned i = from ? *from : 0;

	for (; i < g->nout; i++) {
		const struct tgw_out *o = &g->out[i];
		bool backend = config_find_service(&g->cfg, o->p.family,
						   &o->p.dst, o->p.dport);

		if (o->udp)
			continue;
		if (backend == to_backend && (o->p.flags & flags) == flags) {
			if (from)
				*from = i + 1;
			return o;
		}
	}
	return NULL;
}

static bool
try_handshake(struct tgw *g, struct tgw_conn *c, uint16_t service,
	      uint16_t cport, uint32_t cisn)
{
	struct tgw_seg s = {
		.cport = cport, .service = service, .seq = cisn,
		.flags = TCP_SYN, .win = 64240, .ts = true, .tsval = 1000,
		.mss = 1460, .wscale = (int8_t)g->client_ws, .sack_perm = true,
	};
	const struct tgw_out *sa;

	memset(c, 0, sizeof(*c));
	c->service = service;
	c->cport = cport;
	c->cisn = cisn;
	tgw_send(g, &s);
	sa = g->mangled ? &g->fwd : tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sa);
	CU_ASSERT_EQUAL_FATAL(sa->p.ack, cisn + 1);
	c->gisn = sa->p.seq;
	c->g_tsval = sa->o.tsval;
	c->c_tsval = 1001;
	c->c_nxt = cisn + 1;
	c->b_nxt = c->gisn + 1;
	tgw_client_data(g, c, NULL, 0, TCP_ACK);
	return tgw_flow(g, c) != NULL;
}

bool
tgw_try_handshake(struct tgw *g, struct tgw_conn *c, uint16_t cport,
		  uint32_t cisn)
{
	return try_handshake(g, c, 0, cport, cisn);
}

void
tgw_handshake(struct tgw *g, struct tgw_conn *c, uint16_t cport,
	      uint32_t cisn)
{
	CU_ASSERT_FATAL(try_handshake(g, c, 0, cport, cisn));
}

void
tgw_handshake_to(struct tgw *g, struct tgw_conn *c, uint16_t service,
		 uint16_t cport, uint32_t cisn)
{
	CU_ASSERT_FATAL(try_handshake(g, c, service, cport, cisn));
}

void
tgw_backend_accept(struct tgw *g, struct tgw_conn *c, uint32_t bisn)
{
	const struct tgw_out *syn = tgw_find(g, true, TCP_SYN, NULL);
	struct tgw_seg s = {
		.from_backend = true, .cport = c->cport,
		.service = c->service, .seq = bisn, .ack = c->cisn + 1,
		.flags = TCP_SYN | TCP_ACK, .win = 65160, .ts = true,
		.tsval = 77000, .tsecr = 0, .mss = TGW_BACKEND_MSS,
		.wscale = TGW_BACKEND_WS, .sack_perm = true,
	};

	CU_ASSERT_PTR_NOT_NULL_FATAL(syn);
	CU_ASSERT_EQUAL_FATAL(syn->p.seq, c->cisn);
	s.tsecr = syn->o.tsval;
	c->bisn = bisn;
	c->b_base = c->b_nxt;
	c->b_tsval = 77001;
	c->b_ack = c->cisn + 1;
	tgw_send(g, &s);
}

void
tgw_client_data(struct tgw *g, struct tgw_conn *c, const uint8_t *b,
		uint16_t n, uint8_t flags)
{
	struct tgw_seg s = {
		.cport = c->cport, .service = c->service, .seq = c->c_nxt,
		.ack = c->b_nxt, .flags = flags | TCP_ACK, .win = 502,
		.ts = true, .tsval = c->c_tsval++, .tsecr = c->g_tsval,
		.wscale = -1, .pay = b, .paylen = n,
	};

	c->c_nxt += n + !!(flags & TCP_FIN);
	tgw_send(g, &s);
}

void
tgw_backend_data(struct tgw *g, struct tgw_conn *c, const uint8_t *b,
		 uint16_t n, uint8_t flags)
{
	struct tgw_seg s = {
		.from_backend = true, .cport = c->cport,
		.service = c->service,
		.seq = c->bisn + 1 + (c->b_nxt - c->b_base),
		.ack = c->b_ack, .flags = flags | TCP_ACK, .win = 509,
		.ts = true, .tsval = c->b_tsval++, .tsecr = c->c_tsval - 1,
		.wscale = -1, .pay = b, .paylen = n,
	};

	c->b_nxt += n + !!(flags & TCP_FIN);
	tgw_send(g, &s);
}

void
tgw_blind(struct tgw *g, const struct tgw_conn *c, uint32_t seq, uint32_t ack,
	  uint8_t flags, uint32_t tsval)
{
	struct tgw_seg s = {
		.cport = c->cport, .service = c->service, .seq = seq,
		.ack = ack, .flags = flags, .win = 502, .ts = true,
		.tsval = tsval, .tsecr = c->g_tsval, .wscale = -1,
	};

	tgw_send(g, &s);
}

struct flow *
tgw_flow(struct tgw *g, const struct tgw_conn *c)
{
	const struct service *svc = &g->cfg.services[c->service];
	struct flow_key k = {
		.family = svc->family, .cport = c->cport, .bport = svc->port,
		.caddr = svc->family == AF_INET ? test_client4 : test_client6,
		.baddr = svc->addr,
	};

	return flow_lookup(&g->w.ft, &k);
}

uint16_t
tgw_query(uint8_t *b, uint16_t len, uint16_t id, bool response)
{
	memset(b, 0, (size_t)len + 2);
	put16(b, len);
	put16(b + 2, id);
	b[4] = response ? 0x80 : 0;
	put16(b + 6, 1);		/* QDCOUNT */
	return (uint16_t)(len + 2);
}

static const struct inaddr *
client_of(const struct tgw *g, const struct inaddr *caddr)
{
	if (caddr)
		return caddr;
	return g->cfg.services[0].family == AF_INET ? &test_client4
						    : &test_client6;
}

/* The options of the test client's SYNs: MSS 1460, SACK, TSval tsval and
 * window scale 7, into opts; their length. */
static size_t
syn_opts(uint8_t *opts, uint32_t tsval)
{
	struct tcpopt_spec os = {
		.mss = 1460, .sack_perm = true, .ts = true, .tsval = tsval,
		.wscale = true, .wscale_shift = 7,
	};

	return tcpopt_build(opts, &os);
}

/* A SYN from caddr (NULL: the test client) to service 0 with optlen bytes
 * of options and pay as its data. */
static void
send_syn(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
	 uint32_t cisn, const uint8_t *opts, size_t optlen,
	 const uint8_t *pay, uint16_t paylen)
{
	const struct service *svc = &g->cfg.services[0];
	uint8_t buf[QUEUE_PKT_ROOM];
	struct pkt_tcp_spec ps = {
		.family = svc->family, .src = client_of(g, caddr),
		.dst = &svc->addr, .sport = cport, .dport = svc->port,
		.seq = cisn, .flags = TCP_SYN, .win = 64240, .opts = opts,
		.optlen = optlen, .pay = pay, .paylen = paylen,
	};
	struct pkt p;
	size_t len = pkt_build_tcp(buf, sizeof(buf), &ps, &p);

	CU_ASSERT_FATAL(len != 0);
	tgw_send_raw(g, buf, len);
}

void
tgw_tcpct_syn(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
	      uint32_t cisn, uint32_t tsval, const uint8_t *ci,
	      const uint8_t *pay, uint16_t paylen)
{
	uint8_t opts[TCP_OPT_MAX];
	size_t optlen = syn_opts(opts, tsval);

	CU_ASSERT_FATAL(tcpct_put_cookie(opts, &optlen, sizeof(opts), ci, 8));
	send_syn(g, caddr, cport, cisn, opts, optlen, pay, paylen);
}

void
tgw_tfo_syn(struct tgw *g, uint16_t cport, uint32_t cisn, uint32_t tsval,
	    const uint8_t *cookie, unsigned clen, const uint8_t *pay,
	    uint16_t paylen)
{
	uint8_t opts[TCP_OPT_MAX];
	size_t optlen = syn_opts(opts, tsval);

	CU_ASSERT_FATAL(tcpopt_put_tfo(opts, &optlen, sizeof(opts),
				       clen ? cookie : opts, clen, false));
	send_syn(g, NULL, cport, cisn, opts, optlen, pay, paylen);
}

void
tgw_tcpct_seg(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
	      uint32_t seq, uint32_t ack, uint8_t flags, uint32_t tsval,
	      uint32_t tsecr, const uint8_t *ci, const uint8_t *cr)
{
	const struct service *svc = &g->cfg.services[0];
	struct tcpct_ext_spec e = {
		.tsval = tsval, .tsecr = tsecr, .ci = ci, .cr = cr, .clen = 8,
	};
	uint8_t ext[TCPOPT_TSX_LEN + TCPCT_EXT_MAX], buf[QUEUE_PKT_ROOM];
	struct pkt_tcp_spec ps = {
		.family = svc->family, .src = client_of(g, caddr),
		.dst = &svc->addr, .sport = cport, .dport = svc->port,
		.seq = seq, .ack = ack, .flags = flags, .win = 502,
	};
	size_t n, area, len;
	struct pkt p;

	/* The option area holds TSX; the rest goes before the data. */
	n = tcpct_ext_build(ext, sizeof(ext), &e, &area);
	CU_ASSERT_FATAL(n != 0);
	ps.opts = ext;
	ps.optlen = area;
	ps.pay = ext + area;
	ps.paylen = n - area;
	len = pkt_build_tcp(buf, sizeof(buf), &ps, &p);
	CU_ASSERT_FATAL(len != 0);
	tgw_send_raw(g, buf, len);
}

void
tgw_backend_udp(struct tgw *g, const struct inaddr *caddr, uint16_t dport,
		const uint8_t *pay, uint16_t paylen)
{
	const struct service *svc = &g->cfg.services[0];
	uint8_t buf[QUEUE_PKT_ROOM];
	struct pkt_tcp_spec ps = {
		.family = svc->family, .src = &svc->addr,
		.dst = client_of(g, caddr), .sport = svc->port, .dport = dport,
		.pay = pay, .paylen = paylen,
	};
	struct pkt p;
	size_t len = pkt_build_udp(buf, sizeof(buf), &ps, &p);

	CU_ASSERT_FATAL(len != 0);
	tgw_send_raw(g, buf, len);
}
