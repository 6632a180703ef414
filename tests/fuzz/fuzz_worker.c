/*
 * A whole worker, fed packets as its queue would hand them over: the
 * handshakes of every dialect, the splice, DNS framing, the limits, the
 * timers.  The input is a configuration byte, then a sequence of records:
 *
 *	ctl (1 byte)  len (2 bytes, big-endian)  an IP packet of len bytes
 *
 * The configuration byte's bits change the options below (each service):
 *
 *	0x01	release-always = yes
 *	0x02	backend-max = 2, backend-backlog = 1: the overload mode at 2
 *		open backend connections, and first messages that wait
 *	0x04	tcpct = no (TCPCT SYNs get classic cookies)
 *	0x08	keep-client = no
 *	0x10	delay-bind = no
 *	0x20	tcpct-transactions = no, tcpct-timewait-rst = no
 *	0x40	tfo = no
 *	0x80	max-queries = 2, max-per-addr = 1, conn-rate = 2
 *
 * A cookie cannot be guessed, so ctl's bits help the fuzzer through the
 * handshakes as a real peer would go through them:
 *
 *	0x01 ANSWER	make the packet the peer's answer to what tcpctd sent
 *			last that way: a client's to the last SYN-ACK (tuple,
 *			seq, ack, TSecr; in a TCPCT third packet the TSecr of
 *			its extension and the Cookie-Pair, from the last
 *			client SYN's cookie and the SYN-ACK's), a backend's
 *			to the last backend SYN
 *	0x02 RAWSUM	leave the TCP checksum as it is (else it is made right)
 *	0x04 GSO	the kernel's GSO flag
 *	0x08 PARTIAL	the kernel's checksum-not-ready flag
 *	0x10 KEEPSEQ	with ANSWER, a later segment of the peer: its own
 *			seq, and the ack and TSecr of what tcpctd last sent
 *			that way (and a TCPCT one's Cookie-Pair)
 *	0xe0 WAIT	afterwards the clocks move on by 10 · 4^(ctl >> 5) ms
 *			(10 ms .. 164 s) and the timers run
 *
 * Whatever tcpctd sends or hands on must parse, and carry a right checksum
 * unless it was handed on with the kernel's partial one.  A service's
 * count of open backend connections is its flows that hold one, and its
 * overload mode follows that count; with delay-bind it never passes
 * backend-max.  At the end every flow is released as a stop would, and
 * every count (backend connections, backlog, Fast Open, per-client limits,
 * hold slots) must be back at zero.
 */
#include <string.h>

#include "../../gateway/conn.h"
#include "../../gateway/dispatch.h"
#include "../../gateway/worker.h"
#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../nfq/tcpct.h"
#include "fuzz.h"

/* After netinet/in.h, which worker.h brings. */
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>

#define CTL_ANSWER	0x01
#define CTL_RAWSUM	0x02
#define CTL_GSO		0x04
#define CTL_PARTIAL	0x08
#define CTL_KEEPSEQ	0x10

static const char *const options[] = {
	"protect", "192.0.2.2:53",
	"protect", "[2001:db8:b::2]:53",
	"protect", "192.0.2.2:80",
	"flows", "64",
	"hold-slots", "32",
	"limit-slots", "1024",
	"txn-pending", "16",
	"max-per-addr", "8",
	"backend-max", "16",
	"backend-backlog", "4",
	NULL,
};

#define CFG_RELEASE_ALWAYS	0x01
#define CFG_OVERLOAD		0x02
#define CFG_NO_TCPCT		0x04
#define CFG_NO_KEEP_CLIENT	0x08
#define CFG_NO_DELAY_BIND	0x10
#define CFG_NO_TCPCT_EXTRAS	0x20
#define CFG_NO_TFO		0x40
#define CFG_TIGHT		0x80
#define CFG_VARIANTS		256

/* Options per configuration bit, set after the common ones. */
static const struct {
	unsigned bit;
	const char *const opts[8];
} variants[] = {
	{ CFG_RELEASE_ALWAYS, { "release-always", "yes" } },
	{ CFG_OVERLOAD, { "backend-max", "2", "backend-backlog", "1" } },
	{ CFG_NO_TCPCT, { "tcpct", "no" } },
	{ CFG_NO_KEEP_CLIENT, { "keep-client", "no" } },
	{ CFG_NO_DELAY_BIND, { "delay-bind", "no" } },
	{ CFG_NO_TCPCT_EXTRAS, { "tcpct-transactions", "no",
				 "tcpct-timewait-rst", "no" } },
	{ CFG_NO_TFO, { "tfo", "no" } },
	{ CFG_TIGHT, { "max-queries", "2", "max-per-addr", "1",
		       "conn-rate", "2" } },
};

/* Each configuration, made when an input first asks for it. */
static struct config *configs[CFG_VARIANTS];
static const struct config *cfg;	/* the input's */
static struct keys_master master;
static struct gateway gw;
static struct worker w;
static struct queue q;
static uint8_t tx[1 << 17];

/* What tcpctd sent last: a SYN-ACK to a client, a SYN to a backend. */
static struct last {
	bool set;
	struct pkt p;
	uint8_t buf[INJECT_BUF];
	uint32_t tsval;
	uint8_t ck[TCPCT_COOKIE_MAX];	/* a SYN-ACK's responder cookie */
	unsigned cklen;
} synack, bsyn;

/* The initiator cookie of the last client SYN that had one. */
static uint8_t ci[TCPCT_COOKIE_MAX];
static unsigned cilen;

static void
set(struct config *c, const char *name, const char *value)
{
	if (config_set(c, name, value, "fuzz", NULL, NULL) < 0)
		abort();
}

/* The configuration of the given bits; the shared state, as new. */
static void
setup(unsigned bits)
{
	struct profile prof = {
		.known = true, .mss = 1460, .ws = true, .wscale = 7,
		.sack = true, .ts = true, .ecn = true,
	};
	struct config *c = configs[bits];
	unsigned i;

	if (!c) {
		unsigned j;

		c = calloc(1, sizeof(*c));
		if (!c)
			abort();
		config_defaults(c);
		for (i = 0; options[i]; i += 2)
			set(c, options[i], options[i + 1]);
		for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
			for (j = 0; (bits & variants[i].bit) &&
				    variants[i].opts[j]; j += 2)
				set(c, variants[i].opts[j],
				    variants[i].opts[j + 1]);
		if (config_check(c, NULL, NULL) < 0)
			abort();
		configs[bits] = c;
	}
	cfg = c;
	memset(master.secret, 0x5a, sizeof(master.secret));
	gw.cfg = c;
	gw.master = &master;
	for (i = 0; i < POLICY_MAX_SERVICES; i++) {
		atomic_store(&gw.profile[i], i < c->nservices
					     ? profile_pack(&prof) : 0);
		atomic_store(&gw.backend_open[i], 0);
		atomic_store(&gw.overload[i], false);
		atomic_store(&gw.drain[i], false);
	}
}

/* A service's open backend connections are its flows that hold one; its
 * overload mode is on at 4/5 of backend-max and off at 1/2 (overload.c);
 * with delay-bind it never holds more than backend-max. */
static void
check_backends(void)
{
	uint32_t held[POLICY_MAX_SERVICES] = { 0 };
	uint32_t i;

	for (i = 0; i < w.ft.cap; i++) {
		const struct flow *f = &w.ft.flows[i];

		if (f->state != FLOW_FREE && f->backend_held)
			held[f->service]++;
	}
	for (i = 0; i < cfg->nservices; i++) {
		const struct policy *pol = &cfg->services[i].pol;
		uint32_t open = atomic_load(&gw.backend_open[i]);
		bool over = atomic_load(&gw.overload[i]);

		FUZZ_ASSERT(open == held[i]);
		FUZZ_ASSERT(!over || open > pol->backend_max / 2);
		if (!pol->backend_max)
			continue;
		FUZZ_ASSERT(over ||
			    open < pol->backend_max - pol->backend_max / 5);
		if (pol->delay_bind)
			FUZZ_ASSERT(open <= pol->backend_max);
	}
}

/* Releases every flow, as a stop would, and checks that nothing any of
 * them held is still counted. */
static void
check_released(void)
{
	uint32_t i;

	for (i = 0; i < w.ft.cap; i++)
		if (w.ft.flows[i].state != FLOW_FREE)
			conn_close(&w, &w.ft.flows[i], FLOW_SHUTDOWN);
	FUZZ_ASSERT(w.ft.c->used == 0);
	FUZZ_ASSERT(w.hold.nfree == w.hold.cap);
	for (i = 0; i < POLICY_MAX_SERVICES; i++) {
		FUZZ_ASSERT(atomic_load(&gw.backend_open[i]) == 0);
		FUZZ_ASSERT(!atomic_load(&gw.overload[i]));
		FUZZ_ASSERT(w.opening[i] == 0 && w.tfo_pending[i] == 0);
	}
	for (i = 0; i < 2 * (gw.limits.mask + 1); i++)
		FUZZ_ASSERT(atomic_load(&gw.limits.count[i]) == 0);
}

/* Where the last segment tcpctd sent or handed on towards a client's or
 * a backend's side ends in sequence space, and its TSval: what a peer's
 * next segment acknowledges and echoes (KEEPSEQ). */
static struct sent {
	bool set, has_ts;
	uint32_t end, tsval;
} to_client, to_backend;

static void
track(struct pkt *p)
{
	struct sent *t;
	struct tcpopt o;

	if (config_find_service(cfg, p->family, &p->src, p->sport))
		t = &to_client;
	else if (config_find_service(cfg, p->family, &p->dst, p->dport))
		t = &to_backend;
	else
		return;
	if ((p->flags & TCP_RST) ||
	    tcpopt_parse(pkt_tcp(p) + TCP_HDR_LEN, p->doff - TCP_HDR_LEN,
			 TCP_HDR_LEN, &o) != TCPOPT_OK ||
	    (o.has_tsx && tcpct_ext_parse(p, &o) != TCPOPT_OK))
		return;
	t->set = true;
	t->end = p->seq + p->paylen + !!(p->flags & TCP_SYN) +
		 !!(p->flags & TCP_FIN);
	t->has_ts = o.has_ts;
	t->tsval = o.tsval;
}

/* Checks a packet tcpctd built or handed on. */
static void
check_out(const uint8_t *b, size_t len, bool sum_final)
{
	uint8_t copy[QUEUE_PKT_ROOM];
	struct pkt p;

	FUZZ_ASSERT(len <= sizeof(copy));
	memcpy(copy, b, len);
	FUZZ_ASSERT(pkt_parse(&p, copy, len) == PKT_OK);
	FUZZ_ASSERT(p.len == len);
	if (sum_final)
		FUZZ_ASSERT(pkt_tcp_csum_ok(&p));
	track(&p);
}

/* Remembers the SYN-ACKs and backend SYNs of the injection batch, checks
 * every packet in it, and empties it. */
static void
take_injected(void)
{
	struct inject *ij = &w.ij;
	unsigned i;

	for (i = 0; i < ij->n; i++) {
		const uint8_t *b = ij->buf[i];
		size_t len = ij->iov[i].iov_len;
		struct last *l;
		struct tcpopt o;

		check_out(b, len, true);
		/* The flags byte of a parsed packet: check_out passed it. */
		switch (b[(b[0] >> 4 == 4 ? (b[0] & 0x0f) * 4u : 40u) +
			  TCP_OFF_FLAGS] & (TCP_SYN | TCP_ACK)) {
		case TCP_SYN | TCP_ACK:
			l = &synack;
			break;
		case TCP_SYN:
			l = &bsyn;
			break;
		default:
			continue;
		}
		memcpy(l->buf, b, len);
		if (pkt_parse(&l->p, l->buf, len) != PKT_OK)
			continue;
		l->tsval = 0;
		l->cklen = 0;
		if (tcpopt_parse(pkt_tcp(&l->p) + TCP_HDR_LEN,
				 l->p.doff - TCP_HDR_LEN, TCP_HDR_LEN,
				 &o) == TCPOPT_OK) {
			unsigned clen;

			if (o.has_ts)
				l->tsval = o.tsval;
			if (tcpct_form(&o, l->p.flags, &clen) == TCPCT_COOKIE) {
				memcpy(l->ck, pkt_tcp(&l->p) + o.ck_off, clen);
				l->cklen = clen;
			}
		}
		l->set = true;
	}
	ij->n = 0;
}

static int
verdict_attr(const struct nlattr *a, void *data)
{
	const bool *sum_final = data;

	if (mnl_attr_get_type(a) == NFQA_PAYLOAD)
		check_out(mnl_attr_get_payload(a), mnl_attr_get_payload_len(a),
			  *sum_final);
	return MNL_CB_OK;
}

/* Checks the verdicts the worker gave, and empties the batch. */
static void
take_verdicts(bool sum_final)
{
	size_t off = 0;

	while (off < q.tx_len) {
		const struct nlmsghdr *nlh = (const void *)(tx + off);

		FUZZ_ASSERT(nlh->nlmsg_len >= sizeof(*nlh) &&
			    off + nlh->nlmsg_len <= q.tx_len);
		mnl_attr_parse(nlh, sizeof(struct nfgenmsg), verdict_attr,
			       &sum_final);
		off += MNL_ALIGN(nlh->nlmsg_len);
	}
	q.tx_len = 0;
}

/* Sets the packet's tuple to the reverse of l's, and its ack to answer
 * it; the ports, addresses and numbers that matter, the rest as given.
 * With keep_seq, a later segment: its own seq, and the ack and TSecr of
 * what was last sent its way (t). */
static void
answer(struct pkt *p, const struct last *l, const struct tcpopt *o,
       const struct sent *t)
{
	uint8_t *th = pkt_tcp(p);
	size_t alen = pkt_addrlen(p->family);
	unsigned src = p->family == AF_INET ? 12 : 8;
	uint32_t tsecr = l->tsval;

	if (!l->set || l->p.family != p->family)
		return;
	memcpy(p->data + src, l->p.data + src + alen, alen);
	memcpy(p->data + src + alen, l->p.data + src, alen);
	put16(th + TCP_OFF_SPORT, l->p.dport);
	put16(th + TCP_OFF_DPORT, l->p.sport);
	if (t && t->set) {
		put32(th + TCP_OFF_ACK, t->end);
		if (t->has_ts)
			tsecr = t->tsval;
	} else {
		put32(th + TCP_OFF_ACK, l->p.seq + 1 + l->p.paylen +
					(l->p.flags & TCP_FIN ? 1 : 0));
	}
	if (!(p->flags & TCP_SYN) && !t)
		put32(th + TCP_OFF_SEQ, l->p.ack);
	if (o->has_ts)
		put32(th + o->ts_off + 4, tsecr);
	if (o->has_tsx) {
		/* RFC 6013's third packet: the pair and TSecr are in the
		 * header extension. */
		struct tcpopt x = *o;
		unsigned clen;

		if (tcpct_ext_parse(p, &x) == TCPOPT_OK) {
			if (x.has_ts)
				put32(th + x.ts_off + 4, tsecr);
			if (tcpct_form(&x, p->flags, &clen) == TCPCT_PAIR &&
			    clen == l->cklen && clen == cilen) {
				memcpy(th + x.ck_off, ci, clen);
				memcpy(th + x.ck_off + clen, l->ck, clen);
			}
		}
	}
	if (p->family == AF_INET) {
		/* The IPv4 header's checksum, over its new addresses. */
		put16(p->data + 10, 0);
		put16(p->data + 10, csum_fold(csum_add(0, p->data,
					(size_t)(p->data[0] & 0x0f) * 4)));
	}
}

static void
one_packet(uint8_t ctl, uint8_t *buf, size_t len)
{
	struct queue_packet np = {
		.id = 1, .data = buf, .len = len,
		.gso = ctl & CTL_GSO, .csum_partial = ctl & CTL_PARTIAL,
	};
	struct tcpopt o;
	struct pkt p;

	if (pkt_parse(&p, buf, len) == PKT_OK &&
	    tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN, p.doff - TCP_HDR_LEN,
			 TCP_HDR_LEN, &o) == TCPOPT_OK) {
		bool to_service = config_find_service(cfg, p.family, &p.dst,
						      p.dport);
		unsigned clen;

		if (to_service && (p.flags & TCP_SYN) &&
		    tcpct_form(&o, p.flags, &clen) == TCPCT_COOKIE) {
			memcpy(ci, pkt_tcp(&p) + o.ck_off, clen);
			cilen = clen;
		}
		if (ctl & CTL_ANSWER) {
			bool client = to_service || !bsyn.set;

			answer(&p, client ? &synack : &bsyn, &o,
			       !(ctl & CTL_KEEPSEQ) ? NULL
			       : client ? &to_client : &to_backend);
		}
		if (!(ctl & CTL_RAWSUM) && pkt_parse(&p, buf, len) == PKT_OK)
			pkt_tcp_csum_set(&p);
	}
	worker_packet(&np, &w);
	/* A handed-on packet's checksum is final when tcpctd made it whole
	 * (a partial one, not to be segmented), or updated a right one. */
	take_verdicts(np.csum_partial ? !np.gso : !(ctl & CTL_RAWSUM));
	take_injected();
	FUZZ_ASSERT(w.ft.st.active <= cfg->flows);
	check_backends();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];

	if (size < 1)
		return 0;
	setup(data[0]);
	data++;
	size--;
	if (limits_init(&gw.limits, cfg->limit_slots, 7) < 0)
		abort();
	if (worker_init_state(&w, &gw, 0, err, sizeof(err)) < 0) {
		fprintf(stderr, "worker: %s\n", err);
		abort();
	}
	q.tx = tx;
	q.tx_cap = sizeof(tx);
	w.cur = &q;
	synack.set = bsyn.set = false;
	to_client.set = to_backend.set = false;
	cilen = 0;

	while (size >= 3) {
		uint8_t buf[QUEUE_PKT_ROOM], ctl = data[0];
		size_t len = get16(data + 1);

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len > sizeof(buf))
			len = sizeof(buf);
		memcpy(buf, data, len);
		data += len;
		size -= len;
		one_packet(ctl, buf, len);
		if (ctl & 0xe0) {
			uint64_t ms = 10;
			unsigned i;

			for (i = 0; i < (unsigned)(ctl >> 5); i++)
				ms *= 4;
			w.now_ms += ms;
			w.now_wall_ms += ms;
			w.now_s = w.now_wall_ms / 1000;
			worker_timers(&w);
			take_verdicts(true);
			take_injected();
			check_backends();
		}
	}
	if (getenv("FUZZ_WORKER_STATS")) {	/* what an input reached */
#define X(name, desc)							\
		if (w.st.name)						\
			fprintf(stderr, "%s %lu ", #name,		\
				(unsigned long)w.st.name);
		WORKER_COUNTERS(X)
#undef X
		fprintf(stderr, "\n");
	}
	/* Everything still held goes the way a stop would take it. */
	check_released();
	take_verdicts(true);
	take_injected();
	worker_fini(&w);
	limits_free(&gw.limits);
	return 0;
}
