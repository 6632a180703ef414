#include "worker.h"
#include "accept.h"
#include "mem.h"
#include "shieldmap.h"

#include <errno.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "../nfq/bytes.h"

_Static_assert(FLOW_SERVICES == POLICY_MAX_SERVICES, "a timer list per service");

#define POLL_MS		100	/* longest wait, so timers and stop run */
#define TIMER_BUDGET	1024	/* expirations per loop turn */

uint64_t
worker_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The monotonic clock for timers; wall-clock time for the key epochs and
 * TCPCT's TSvals, which every gateway of a fleet must read alike (a
 * cookie's age). */
static void
read_clocks(struct worker *w)
{
	struct timespec ts;

	w->now_ms = worker_mono_ms();
	clock_gettime(CLOCK_REALTIME, &ts);
	w->now_s = (uint64_t)ts.tv_sec;
	w->now_wall_ms = (uint64_t)ts.tv_sec * 1000 +
			 (uint64_t)ts.tv_nsec / 1000000;
}

int
worker_init_state(struct worker *w, struct gateway *gw, unsigned id,
		  char *err, size_t errlen)
{
	const struct config *cfg = gw->cfg;
	uint64_t seed;
	uint32_t i;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->gw = gw;
	w->cfg = cfg;
	w->ij.fd4 = w->ij.fd6 = -1;
	if (RAND_bytes((uint8_t *)&seed, sizeof(seed)) != 1)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)id << 32);
	if (flow_table_init(&w->ft, cfg->flows, seed) < 0) {
		snprintf(err, errlen, "flow table of %u entries: %s",
			 cfg->flows, strerror(errno));
		goto fail;
	}
	if (gw->shield) {
		w->ft.watch = shieldmap_watch;
		w->ft.watch_arg = w;
	}
	if (txn_table_init(&w->txn, cfg->tcpct_txn ? cfg->txn_pending : 0,
			   seed ^ 1) < 0) {
		snprintf(err, errlen, "transaction table: out of memory");
		goto fail;
	}
	w->hold.cap = cfg->hold_slots;
	w->hold.buf = mem_resident(cfg->hold_slots, sizeof(*w->hold.buf));
	w->hold.len = mem_resident(cfg->hold_slots, sizeof(*w->hold.len));
	w->hold.free = mem_resident(cfg->hold_slots, sizeof(*w->hold.free));
	if (!w->hold.buf || !w->hold.len || !w->hold.free) {
		snprintf(err, errlen, "hold buffers: out of memory");
		goto fail;
	}
	for (i = 0; i < cfg->hold_slots; i++)
		w->hold.free[i] = (int32_t)i;
	w->hold.nfree = cfg->hold_slots;
	if (cookie_keys_init(&w->keys, gw->master, cfg->key_lifetime) < 0 ||
	    cookie_keys_init(&w->keys_alt, gw->master, cfg->key_lifetime) < 0) {
		snprintf(err, errlen, "SipHash from OpenSSL is not available");
		goto fail;
	}
	w->keys.alt = &w->keys_alt;
	w->keys_alt.accepted = true;
	w->dump.view = mem_resident(FLOW_DUMP_MAX, sizeof(*w->dump.view));
	if (!w->dump.view) {
		snprintf(err, errlen, "flow dump: out of memory");
		goto fail;
	}
	read_clocks(w);
	if (cookie_keys_tick(&w->keys, w->now_s) < 0) {
		snprintf(err, errlen, "key derivation failed");
		goto fail;
	}
	w->keys_checked = w->now_s;
	return 0;
fail:
	worker_fini(w);
	return -1;
}

int
worker_init(struct worker *w, struct gateway *gw, unsigned id, char *err,
	    size_t errlen)
{
	const struct config *cfg = gw->cfg;
	struct queue_opts qo = {
		.maxlen = cfg->queue_maxlen,
		.batch = cfg->batch,
		.fail_open = cfg->fail_open,
		.gso = cfg->gso,
		.rcvbuf = 16 << 20,
	};
	int k;

	if (worker_init_state(w, gw, id, err, errlen) < 0)
		return -1;
	if (inject_open(&w->ij, cfg->mark) < 0) {
		snprintf(err, errlen, "raw sockets: %s", strerror(errno));
		goto fail;
	}
	for (k = 0; k < WORKER_QUEUES; k++) {
		qo.num = (uint16_t)(cfg->queue_base + id +
				    (k == WORKER_Q_SYN ? cfg->queues : 0));
		if (queue_open(&w->q[k], &qo) < 0) {
			snprintf(err, errlen, "queue %u: %s%s", qo.num,
				 strerror(errno),
				 errno == EBUSY || errno == EEXIST
				 ? " (another process has bound it)" : "");
			goto fail;
		}
	}
	w->cur = &w->q[WORKER_Q_FLOW];
	w->ready = true;
	return 0;
fail:
	worker_fini(w);
	return -1;
}

void
worker_fini(struct worker *w)
{
	for (int k = 0; k < WORKER_QUEUES; k++)
		if (w->q[k].nl)
			queue_close(&w->q[k]);
	inject_close(&w->ij);
	if (w->keys.mac128[0] || w->keys.mac128[1])
		cookie_keys_free(&w->keys);
	if (w->keys_alt.mac128[0] || w->keys_alt.mac128[1])
		cookie_keys_free(&w->keys_alt);
	flow_table_free(&w->ft);
	txn_table_free(&w->txn);
	free(w->dump.view);
	w->dump.view = NULL;
	free(w->hold.buf);
	free(w->hold.len);
	free(w->hold.free);
	w->hold.buf = NULL;
	w->hold.len = NULL;
	w->hold.free = NULL;
	w->ready = false;
}

int
worker_emit(struct worker *w, const struct pkt_tcp_spec *s)
{
	uint8_t *buf = inject_slot(&w->ij);
	struct pkt p;
	size_t len;

	len = pkt_build_tcp(buf, INJECT_BUF, s, &p);
	if (!len)
		return -1;
	inject_commit(&w->ij, s->family, len);
	return 0;
}

int
worker_emit_udp(struct worker *w, const struct pkt_tcp_spec *s)
{
	uint8_t *buf = inject_slot(&w->ij);
	struct pkt p;
	size_t len;

	len = pkt_build_udp(buf, INJECT_BUF, s, &p);
	if (!len)
		return -1;
	inject_commit(&w->ij, s->family, len);
	return 0;
}

void
worker_spec_to_backend(struct pkt_tcp_spec *s, const struct flow *f)
{
	s->family = f->key.family;
	s->src = &f->key.caddr;
	s->dst = &f->key.baddr;
	s->sport = f->key.cport;
	s->dport = f->key.bport;
}

void
worker_spec_to_client(struct pkt_tcp_spec *s, const struct flow *f)
{
	s->family = f->key.family;
	s->src = &f->key.baddr;
	s->dst = &f->key.caddr;
	s->sport = f->key.bport;
	s->dport = f->key.cport;
}

void
worker_send(struct worker *w, const struct flow *f, bool to_backend,
	    uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win,
	    uint32_t tsval, uint32_t tsecr)
{
	struct tcpopt_spec os = { .ts = f->ts, .tsval = tsval, .tsecr = tsecr };
	struct pkt_tcp_spec s = {
		.seq = seq, .ack = ack, .flags = flags, .win = win,
	};
	uint8_t opts[TCP_OPT_MAX];

	if (to_backend)
		worker_spec_to_backend(&s, f);
	else
		worker_spec_to_client(&s, f);
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	worker_emit(w, &s);
}

uint16_t
worker_backend_win(const struct flow *f)
{
	return win_clamp(((uint32_t)f->c_win << f->c_ws) >> f->c_ws_b);
}

void
worker_rst_backend(struct worker *w, const struct flow *f, uint32_t seq)
{
	struct pkt_tcp_spec s = { .seq = seq, .flags = TCP_RST };

	worker_spec_to_backend(&s, f);
	worker_emit(w, &s);
}

void
worker_rst_client(struct worker *w, const struct flow *f, uint32_t seq)
{
	struct pkt_tcp_spec s = { .seq = seq, .flags = TCP_RST };

	worker_spec_to_client(&s, f);
	worker_emit(w, &s);
}

/* RFC 9293 §3.7.1: the MSS to assume when a SYN carries none. */
#define DEFAULT_MSS_V4	536
#define DEFAULT_MSS_V6	1220

uint16_t
worker_default_mss(uint8_t family)
{
	return family == AF_INET ? DEFAULT_MSS_V4 : DEFAULT_MSS_V6;
}

void
worker_profile(struct worker *w, const struct service *svc, uint8_t family,
	       struct profile *prof)
{
	unsigned idx = worker_service(w, svc);

	profile_unpack(atomic_load_explicit(&w->gw->profile[idx],
					    memory_order_relaxed),
		       family, prof);
}

void
worker_cookie_tuple(struct cookie_tuple *t, const struct pkt *p)
{
	t->family = p->family;
	t->caddr = p->src;
	t->saddr = p->dst;
	t->cport = p->sport;
	t->sport = p->dport;
}

struct flow_key
worker_client_key(const struct pkt *p)
{
	struct flow_key k = {
		.family = p->family,
		.cport = p->sport,
		.bport = p->dport,
		.caddr = p->src,
		.baddr = p->dst,
	};

	return k;
}

bool
worker_csum_ok(struct worker *w, const struct pkt *p, bool csum_partial)
{
	if (!p->paylen || csum_partial || pkt_tcp_csum_ok(p))
		return true;
	STAT_INC(w, bad_csum);
	return false;
}

void
worker_hold_free(struct worker *w, struct flow *f)
{
	if (f->hold >= 0) {
		w->hold.free[w->hold.nfree++] = f->hold;
		f->hold = -1;
	}
}

void
worker_release(struct worker *w, struct flow *f, enum flow_reason r)
{
	tfo_unpend(w, f);
	guard_leave(w, f);
	overload_unhold(w, f);
	backlog_done(w, f, false);
	worker_hold_free(w, f);
	flow_release(&w->ft, f, r);
}

static uint64_t
cutoff(uint64_t now, uint64_t timeout_ms)
{
	return now > timeout_ms ? now - timeout_ms : 0;
}

void
worker_rto_arm(struct worker *w, struct flow *f, unsigned level)
{
	if (level >= FLOW_RTO_LEVELS)
		level = FLOW_RTO_LEVELS - 1;
	flow_timer_set(&w->ft, f, FLOW_TIMER_RTO + level, w->now_ms);
}

void
worker_timers(struct worker *w)
{
	const struct config *cfg = w->cfg;
	uint64_t now = w->now_ms;
	uint64_t closed = cutoff(now, (uint64_t)cfg->closed_linger * 1000);
	uint64_t closing = cutoff(now, (uint64_t)cfg->closing_timeout * 1000);
	unsigned budget = TIMER_BUDGET, s;
	struct txn *x;

	for (s = 0; s < cfg->nservices; s++) {
		struct flow *f;
		unsigned l;

		for (l = 0; l < FLOW_RTO_LEVELS; l++)
			while (budget &&
			       (f = flow_timer_expired(&w->ft, s,
						       FLOW_TIMER_RTO + l,
						       cutoff(now, rto_ms(l))))) {
				budget--;
				handshake_syn_timer(w, f);
			}
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_CLOSED,
							 closed))) {
			budget--;
			worker_release(w, f, FLOW_DONE);
		}
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_DONE,
							 now))) {
			budget--;
			worker_release(w, f, FLOW_DONE);
		}
		/* An abandoned connection gets a RST on both sides, so that
		 * neither end keeps a slot for it. */
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_CLOSING,
							 closing))) {
			budget--;
			guard_close(w, f, FLOW_CLOSING_TIMEOUT);
		}
	}
	while (budget && (x = txn_expired(&w->txn, now))) {
		budget--;
		tcpct_txn_timer(w, x);
	}
	guard_timers(w, budget);
	backlog_run(w);
}

static enum verdict
from_backend(struct worker *w, struct pkt *p, struct tcpopt *o,
	     bool csum_partial)
{
	struct flow_key k = {
		.family = p->family,
		.cport = p->dport,
		.bport = p->sport,
		.caddr = p->dst,
		.baddr = p->src,
	};
	struct flow *f = flow_lookup(&w->ft, &k);

	if (!f || f->state == FLOW_BINDING) {
		/* A binding flow has no backend connection yet. */
		STAT_INC(w, stray_backend);
		return VERDICT_DROP;
	}
	if (f->state == FLOW_SYN_SENT || (p->flags & TCP_SYN))
		return handshake_backend(w, f, p, o, csum_partial);
	if (!accept_backend(w, f, p))
		return VERDICT_DROP;
	if (f->opening && (p->paylen || (p->flags & (TCP_FIN | TCP_RST))))
		backlog_done(w, f, true);	/* it answered, or ends */
	if (f->state == FLOW_RELEASING)
		return release_backend(w, f, p, o, csum_partial);
	if (guard_too_old(w, f))
		return VERDICT_DROP;
	if (f->taken)
		tfo_backend_ack(w, f, p);
	splice_b2c(w, f, p, o, csum_partial);
	if (f->tcpct)
		tcpct_b2c(w, f, p, o);
	if (p->flags & TCP_RST) {
		STAT_INC(w, rst_backend);
		worker_release(w, f, FLOW_RST_BACKEND);
	}
	return VERDICT_MANGLED;
}

void
worker_packet(struct queue_packet *np, void *arg)
{
	struct worker *w = arg;
	const struct config *cfg = w->cfg;
	const struct service *svc;
	enum pkt_verdict pv;
	enum tcpopt_verdict ov;
	enum verdict v;
	struct tcpopt o;
	struct pkt p;

	STAT_INC(w, packets);
	if (!np->data || np->truncated) {
		STAT_INC(w, truncated);
		queue_verdict(w->cur, np->id, NF_DROP, NULL, 0);
		return;
	}
	w->pkt_gso = np->gso;
	pv = pkt_parse(&p, np->data, np->len);
	if (pv == PKT_NOT_TCP && pkt_parse_udp(&p, np->data, np->len) == PKT_OK &&
	    p.sport == RULES_DNS_PORT &&
	    config_find_service(cfg, p.family, &p.src, p.sport)) {
		v = tcpct_udp(w, &p);
		queue_verdict(w->cur, np->id,
			      v == VERDICT_ACCEPT ? NF_ACCEPT : NF_DROP, NULL, 0);
		return;
	}
	if (pv != PKT_OK) {
		STAT_INC(w, parse[pv]);
		queue_verdict(w->cur, np->id, NF_DROP, NULL, 0);
		return;
	}
	ov = tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN, p.doff - TCP_HDR_LEN,
			  TCP_HDR_LEN, &o);
	if (ov == TCPOPT_OK && o.has_tsx)
		ov = tcpct_ext_parse(&p, &o);
	if (ov != TCPOPT_OK) {
		STAT_INC(w, tcpopt[ov]);
		queue_verdict(w->cur, np->id, NF_DROP, NULL, 0);
		return;
	}
	/* Segments that tcpctd answers or acts on are checked here; data of a
	 * spliced flow is not, since an RFC 1624 update keeps a bad checksum
	 * bad and the receiver drops it.  Data that tcpctd holds or verifies
	 * as a cookie is checked where that happens (handshake.c). */
	if ((p.paylen == 0 || (p.flags & (TCP_SYN | TCP_RST | TCP_FIN))) &&
	    !np->csum_partial && !pkt_tcp_csum_ok(&p)) {
		STAT_INC(w, bad_csum);
		queue_verdict(w->cur, np->id, NF_DROP, NULL, 0);
		return;
	}
	/* Only the shield marks so: nothing else on the gateway does, and a
	 * packet's mark never comes from the wire. */
	w->shield_verified = w->gw->shield &&
			     np->mark == SHIELDMAP_VERIFIED_MARK(cfg);
	if ((svc = config_find_service(cfg, p.family, &p.dst, p.dport)))
		v = handshake_client(w, svc, &p, &o, np->csum_partial);
	else if (config_find_service(cfg, p.family, &p.src, p.sport))
		v = from_backend(w, &p, &o, np->csum_partial);
	else {
		STAT_INC(w, unprotected);
		v = VERDICT_ACCEPT;
	}
	switch (v) {
	case VERDICT_DROP:
		queue_verdict(w->cur, np->id, NF_DROP, NULL, 0);
		break;
	case VERDICT_ACCEPT:
		queue_verdict(w->cur, np->id, NF_ACCEPT, NULL, 0);
		break;
	case VERDICT_MANGLED:
		/*
		 * A mangled packet's checksum is taken as final (the kernel
		 * sets CHECKSUM_NONE), so one that was left partial is summed
		 * here.  A GSO packet is not: segmentation sets up its
		 * checksums again for every segment.
		 */
		if (np->csum_partial && !np->gso)
			pkt_tcp_csum_set(&p);
		queue_verdict(w->cur, np->id, NF_ACCEPT, p.data, p.len);
		break;
	}
}

static void
tick(struct worker *w)
{
	const struct keys_master *m =
		atomic_load_explicit(&w->gw->master, memory_order_acquire);

	read_clocks(w);
	w->cfg = atomic_load_explicit(&w->gw->cfg, memory_order_acquire);
	if (m != w->keys.master) {
		/* tcpctl keys rotate: the file read again. */
		cookie_keys_rekey(&w->keys, m);
		w->keys_checked = 0;
	}
	if (w->now_s != w->keys_checked) {
		w->keys_checked = w->now_s;
		if (cookie_keys_tick(&w->keys, w->now_s) < 0)
			STAT_INC(w, key_errors);
	}
}

/* Answers a dump request (tcpctl flows), between two batches: a whole
 * pass over the table, as a timer sweep would make. */
static void
dump_flows(struct worker *w)
{
	struct flow_dump *d = &w->dump;
	unsigned req = atomic_load_explicit(&d->req, memory_order_acquire);
	uint32_t i;

	if (req == atomic_load_explicit(&d->done, memory_order_relaxed))
		return;
	d->n = 0;
	d->total = 0;
	for (i = 0; i < w->ft.cap; i++) {
		const struct flow *f = &w->ft.flows[i];
		struct flow_view *v;

		if (f->state == FLOW_FREE)
			continue;
		d->total++;
		if (d->n == FLOW_DUMP_MAX)
			continue;
		v = &d->view[d->n++];
		v->key = f->key;
		v->state = f->state;
		v->service = f->service;
		v->c_ws = f->c_ws;
		v->b_ws = f->b_ws;
		v->adv_ws = f->adv_ws;
		v->tcpct = f->tcpct;
		v->ts = f->ts;
		v->sack = f->sack;
		v->mss = f->mss;
		v->seq_delta = f->seq_delta;
		v->ts_delta = f->ts_delta;
		v->queries = f->dns.started;
		v->age_ms = w->now_ms - f->born;
	}
	atomic_store_explicit(&d->done, req, memory_order_release);
}

void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct pollfd pfd[WORKER_QUEUES];
	int k;

	for (k = 0; k < WORKER_QUEUES; k++) {
		pfd[k].fd = queue_fd(&w->q[k]);
		pfd[k].events = POLLIN;
	}
	while (!atomic_load_explicit(&w->gw->stop, memory_order_relaxed)) {
		bool more;

		if (poll(pfd, WORKER_QUEUES, POLL_MS) < 0 && errno != EINTR)
			break;
		tick(w);
		STAT_ADD(w->beat, 1);
		/* Drain the readable queues one batch at a time, in turn,
		 * answering each batch before reading the next; a queue that
		 * gave less than a full batch is empty for now. */
		do {
			more = false;
			for (k = 0; k < WORKER_QUEUES; k++) {
				int n;

				if (!(pfd[k].revents & POLLIN))
					continue;
				w->cur = &w->q[k];
				n = queue_recv_batch(w->cur, worker_packet, w);
				shieldmap_flush(w);
				inject_flush(&w->ij);
				queue_flush(w->cur);
				if (n < (int)w->cur->batch)
					pfd[k].revents = 0;
				else
					more = true;
			}
		} while (more);
		worker_timers(w);
		shieldmap_flush(w);
		inject_flush(&w->ij);
		dump_flows(w);
	}
	return NULL;
}
