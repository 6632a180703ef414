/*
 * The worker's thread: its queues read a batch at a time, each packet
 * handed to its side (client.c, or the backend's below) and its verdict
 * given, the flows' timers run between batches.
 */
#include "accept.h"
#include "backend.h"
#include "backlog.h"
#include "bind.h"
#include "carry.h"
#include "client.h"
#include "conn.h"
#include "dispatch.h"
#include "guard.h"
#include "release.h"
#include "responder.h"
#include "shieldmap.h"
#include "splice.h"
#include "tfo.h"
#include "upstream.h"

/* After the headers above: <linux/netfilter.h> wants <netinet/in.h>
 * first. */
#include <errno.h>
#include <linux/netfilter.h>
#include <poll.h>

#define POLL_MS		100	/* longest wait, so timers and stop run */
#define TIMER_BUDGET	1024	/* expirations per loop turn */

/*
 * While the client has not acknowledged our SYN-ACK (once a second), or the
 * backend the data we took for it (Fast Open, delayed binding; backing
 * off from RTO_MIN_MS): the SYN-ACK again, or the data again; after
 * --syn-retries of them the connection is given up on both sides.  A flow
 * owed neither goes to the idle timer.
 */
static void
unacked_timer(struct worker *w, struct flow *f)
{
	const struct config *cfg = w->cfg;

	if (!worker_awaits_ack(f)) {
		guard_touch(w, f, true);
		return;
	}
	if (f->syn_tries >= cfg->syn_retries) {
		if (f->tfo_pending)
			STAT_INC(w, tfo_unacked);
		else
			STAT_INC(w, held_unacked);
		worker_rst_backend(w, f, f->c_nxt);
		worker_rst_client(w, f, f->b_nxt);
		conn_close(w, f, f->tfo_pending ? FLOW_TFO_UNACKED
						    : FLOW_HELD_UNACKED);
		return;
	}
	f->syn_tries++;
	if (f->tfo_pending) {
		tfo_synack(w, f, f->c_tsval);
		STAT_INC(w, tfo_synack_retrans);
	}
	if (f->hold >= 0)
		backend_send_held(w, f);
	worker_rto_arm(w, f, f->tfo_pending ? RTO_CLIENT : f->syn_tries);
}

/* A flow's retransmission timer, whichever state it is in. */
static void
rto_expired(struct worker *w, struct flow *f)
{
	if (upstream_timed(f)) {
		upstream_timer(w, f);
		return;
	}
	switch (f->state) {
	case FLOW_SYN_SENT:
		backend_syn_timer(w, f);
		break;
	case FLOW_RELEASING:
		release_timer(w, f);
		break;
	default:
		unacked_timer(w, f);
		break;
	}
}

/* Starts the flows waiting for the backend's backlog that now fit. */
static void
backlog_start(struct worker *w, unsigned service)
{
	struct flow *f;

	while ((f = backlog_next(w, service)))
		bind_start(w, f);
}

/* backlog_start, then resets the flows that waited too long. */
static void
backlog_run(struct worker *w, unsigned service)
{
	struct flow *f;

	backlog_start(w, service);
	while ((f = backlog_expired(w, service))) {
		worker_rst_client(w, f, f->g_base + 1);
		conn_close(w, f, FLOW_BACKLOG_TIMEOUT);
	}
}

void
worker_timers(struct worker *w)
{
	const struct config *cfg = w->cfg;
	uint64_t now = w->now_ms;
	uint64_t linger_ms = (uint64_t)cfg->closed_linger * 1000;
	uint64_t closing_ms = (uint64_t)cfg->closing_timeout * 1000;
	uint64_t closed = flow_timer_cutoff(now, linger_ms);
	uint64_t closing = flow_timer_cutoff(now, closing_ms);
	unsigned budget = TIMER_BUDGET, s;
	struct txn *x;

	for (s = 0; s < cfg->nservices; s++) {
		struct flow *f;
		unsigned l;

		for (l = 0; l < FLOW_RTO_LEVELS; l++) {
			uint64_t rto = flow_timer_cutoff(now, rto_ms(l));

			while (budget &&
			       (f = flow_timer_expired(&w->ft, s,
						       FLOW_TIMER_RTO + l,
						       rto))) {
				budget--;
				rto_expired(w, f);
			}
		}
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_CLOSED,
							 closed))) {
			budget--;
			conn_close(w, f, FLOW_DONE);
		}
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_DONE,
							 now))) {
			budget--;
			conn_close(w, f, FLOW_DONE);
		}
		/* An abandoned connection gets a RST on both sides, so that
		 * neither end keeps a slot for it. */
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_CLOSING,
							 closing))) {
			budget--;
			conn_reset(w, f, FLOW_CLOSING_TIMEOUT);
		}
	}
	while (budget && (x = txn_expired(&w->txn, now))) {
		budget--;
		responder_txn_timer(w, x);
	}
	guard_timers(w, budget);
	for (s = 0; s < cfg->nservices; s++)
		backlog_run(w, s);
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
	/* An upstream flow's far server (upstream.h): its handshake, and
	 * what a TCPCT responder's segments must carry. */
	if (f->up && (f->state == FLOW_SYN_SENT || f->up == UP_DONE ||
		      (p->flags & TCP_SYN)))
		return upstream_far(w, f, p, o, csum_partial);
	if (f->up == UP_CONN && !upstream_far_admit(w, f, p, o))
		return VERDICT_DROP;
	if (f->state == FLOW_SYN_SENT || (p->flags & TCP_SYN))
		return backend_segment(w, f, p, o, csum_partial);
	if (accept_backend_old(f, p)) {
		splice_b2c_old(w, f, p, o, csum_partial);
		return VERDICT_MANGLED;
	}
	if (!accept_backend(w, f, p))
		return VERDICT_DROP;
	f->b_ifindex = w->pkt_indev;
	if (f->opening && (p->paylen || (p->flags & (TCP_FIN | TCP_RST)))) {
		/* It answered, or ends: its place goes to the next. */
		backlog_done(w, f);
		backlog_start(w, f->service);
	}
	if (f->state == FLOW_RELEASING)
		return release_backend(w, f, p, o, csum_partial);
	if (guard_too_old(w, f))
		return VERDICT_DROP;
	if (f->taken)
		if (p->flags & TCP_ACK)
			backend_held_acked(w, f, p->ack);
	splice_b2c(w, f, p, o, csum_partial);
	release_check(w, f);
	if (f->tcpct)
		responder_b2c(w, f, p, o);
	if (p->flags & TCP_RST) {
		STAT_INC(w, rst_backend);
		conn_close(w, f, FLOW_RST_BACKEND);
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
	struct flow *f = NULL;
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
	w->pkt_indev = np->indev;
	pv = pkt_parse(&p, np->data, np->len);
	if (pv == PKT_NOT_TCP && pkt_parse_udp(&p, np->data, np->len) == PKT_OK &&
	    p.sport == RULES_DNS_PORT &&
	    config_find_service(cfg, p.family, &p.src, p.sport)) {
		v = responder_udp(w, &p);
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
	/* Judged and translated by the kernel already (carry.h): the rules
	 * that let it past were not in place yet. */
	if (np->mark == POLICY_CARRIED_MARK(cfg) && w->gw->shield) {
		STAT_INC(w, carried_queued);
		queue_verdict(w->cur, np->id, NF_ACCEPT, NULL, 0);
		return;
	}
	/* Only the shield marks so, and only on the interfaces it is on: it
	 * clears the mark on what it does not verify, and a packet's mark
	 * never comes from the wire. */
	w->shield_verified = w->gw->shield &&
			     np->mark == SHIELDMAP_VERIFIED_MARK(cfg) &&
			     shield_attached(w->gw->shield, (int)np->indev);
	/* A flow the kernel carried is the worker's again while it handles
	 * the segment the program passed on, and the kernel's after. */
	if ((svc = config_find_service(cfg, p.family, &p.dst, p.dport))) {
		f = carry_segment(w, &p, true);
		v = client_segment(w, svc, &p, &o, np->csum_partial);
	} else if (config_find_service(cfg, p.family, &p.src, p.sport)) {
		f = carry_segment(w, &p, false);
		v = from_backend(w, &p, &o, np->csum_partial);
	} else {
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
	/* A flow the segment made (a verified handshake) too. */
	if (!f && svc)
		f = carry_flow(w, &p, true);
	if (f)
		carry_give(w, f);
}

static void
tick(struct worker *w)
{
	const struct keys_master *m =
		atomic_load_explicit(&w->gw->master, memory_order_acquire);

	worker_read_clocks(w);
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

/* A whole pass over the table, as a timer sweep would make. */
void
worker_dump_flows(struct worker *w)
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
	struct pollfd pfd[WORKER_QUEUES + 1];
	int k;

	for (k = 0; k < WORKER_QUEUES; k++) {
		pfd[k].fd = queue_fd(&w->q[k]);
		pfd[k].events = POLLIN;
	}
	/* The kernel's events for the flows it carries (carry.h), if any:
	 * a negative descriptor is not polled. */
	pfd[WORKER_QUEUES].fd = carry_fd(w);
	pfd[WORKER_QUEUES].events = POLLIN;
	while (!atomic_load_explicit(&w->gw->stop, memory_order_relaxed)) {
		bool more;

		if (poll(pfd, WORKER_QUEUES + 1, POLL_MS) < 0 && errno != EINTR)
			break;
		tick(w);
		carry_events(w);
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
		worker_dump_flows(w);
	}
	return NULL;
}
