/*
 * Releasing a DNS connection's backend half while its client stays.
 *
 * tcpctd frames both directions of a DNS connection, so it knows when
 * every query the backend was given has its whole answer and the backend
 * has acknowledged everything the client sent.  Then, while the service is
 * overloaded (overload.c) or always with release-always, the backend's
 * half goes:
 *
 *   1. tcpctd sends the backend a FIN in the client's name, at the
 *      client's next sequence number: the backend reads EOF and closes,
 *      and its slot is free at once (it is the passive closer: no
 *      TIME-WAIT on its side).  Its ACKs of that FIN never reach the
 *      client, which sent none.
 *   2. What the client has not acknowledged yet (the answer) goes on
 *      through as before; the backend's FIN does not.
 *   3. Once the client has acknowledged everything and the backend's FIN
 *      is in, tcpctd acknowledges that FIN itself and the flow is bound
 *      again (bind.c), re-based so that the client's sequence space still
 *      runs end to end: its next query opens a new backend connection
 *      whose SYN carries the client's next sequence number minus one.
 *      With keep-client 0 the client is closed instead, with a FIN from
 *      the backend's address.
 *
 * A client that closes meanwhile closes as usual (its FIN is at the seq of
 * ours), one that sends a query waits for the new binding (the segment is
 * dropped and comes again), and one that never acknowledges the answer is
 * reset after --syn-retries of our FINs (about 6 s with the default 4):
 * the answer it does not take no longer pins the backend, whose socket the
 * RST ends.
 */
#include "../nfq/bytes.h"
#include "admit.h"
#include "bind.h"
#include "conn.h"
#include "overload.h"
#include "release.h"
#include "splice.h"

static bool
release_due(const struct worker *w, const struct service *svc,
	    const struct flow *f)
{
	uint32_t queries = f->dns.started - f->dns_bound;

	return svc->kind == SERVICE_DNS && f->state == FLOW_ESTABLISHED &&
	       !f->tcpct && !f->up && !f->dns.xfr && f->hold < 0 &&
	       !worker_awaits_ack(f) &&
	       (svc->pol.release_always || overload_on(w, f->service)) &&
	       queries > 0 && !dnsframe_mid(&f->dns) &&
	       !dnsframe_mid(&f->bdns) && f->bdns.started >= queries &&
	       SEQ_GEQ(f->b_ack, f->c_nxt);
}

/* A segment to the backend in the client's name (ack in client space),
 * echoing the backend's latest TSval. */
static void
to_backend(struct worker *w, const struct flow *f, uint32_t seq,
	   uint32_t ack, uint8_t flags)
{
	worker_send(w, f, true, seq, ack + f->seq_delta, flags,
		    worker_backend_win(f), f->c_tsval, f->ts_out - f->ts_delta);
}

void
release_check(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];

	if (!release_due(w, svc, f))
		return;
	/* Our FIN stands where the client's would: one bookkeeping for
	 * both, should the client close too (splice.c). */
	f->r_fin = f->c_nxt;
	f->c_fin = f->r_fin;
	f->fin |= FLOW_FIN_CLIENT;
	flow_state_set(f, FLOW_RELEASING);
	/* The binding that follows starts at both sides' next sequence
	 * numbers; what the client sends from now on is its (bind.c). */
	f->c_base = f->r_fin - 1;
	f->g_base = f->b_nxt - 1;
	f->taken = 0;
	f->dns_bound = f->dns.started;
	to_backend(w, f, f->r_fin, f->c_ack, TCP_FIN | TCP_ACK);
	f->syn_tries = 1;
	worker_rto_arm(w, f, 0);
	STAT_INC(w, released);
}

/* The backend is gone: the flow is bound again, re-based at both sides'
 * next sequence numbers, or its client closed (keep-client 0, or the
 * service drained: a new backend connection is what a drain refuses). */
static void
rebind(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];

	overload_unhold(w, f);
	flow_state_set(f, FLOW_BINDING);
	/* The next backend's TSvals start at the client's latest. */
	f->gw_tsval = f->ts_out;
	f->fin = 0;
	f->syn_tries = 0;
	if (!svc->pol.keep_client || worker_draining(w, f->service)) {
		STAT_INC(w, release_closed);
		worker_hold_free(w, f);
		f->taken = 0;
		bind_close(w, f);
		return;
	}
	STAT_INC(w, release_kept);
	bind_resume(w, f);
}

/* Once our FIN is acknowledged, the backend's is in and the client has
 * everything before it, we acknowledge the backend's FIN ourselves. */
static bool
finish(struct worker *w, struct flow *f)
{
	if ((f->fin & (FLOW_FIN_CLIENT_ACKED | FLOW_FIN_BACKEND)) !=
	    (FLOW_FIN_CLIENT_ACKED | FLOW_FIN_BACKEND) ||
	    SEQ_LT(f->c_ack, f->b_fin))
		return false;
	to_backend(w, f, f->r_fin + 1, f->b_fin + 1, TCP_ACK);
	rebind(w, f);
	return true;
}

enum verdict
release_backend(struct worker *w, struct flow *f, struct pkt *p,
		const struct tcpopt *o, bool csum_partial)
{
	if (p->flags & TCP_RST) {
		splice_b2c(w, f, p, o, csum_partial);
		STAT_INC(w, rst_backend);
		conn_close(w, f, FLOW_RST_BACKEND);
		return VERDICT_MANGLED;
	}
	if ((p->flags & TCP_ACK) && SEQ_GT(p->ack, f->r_fin)) {
		/* It acknowledges our FIN, which the client never sent:
		 * what the client sees acknowledges what it did send. */
		f->fin |= FLOW_FIN_CLIENT_ACKED;
		pkt_set32(p, TCP_OFF_ACK, f->r_fin, csum_partial);
		p->ack = f->r_fin;
	}
	if (p->flags & TCP_FIN) {
		/* Its FIN is ours to acknowledge: the client stays. */
		uint8_t *th = pkt_tcp(p);

		pkt_set16(p, TCP_OFF_DOFF,
			  (uint16_t)(th[TCP_OFF_DOFF] << 8 |
				     (th[TCP_OFF_FLAGS] & ~TCP_FIN)),
			  csum_partial);
		p->flags &= (uint8_t)~TCP_FIN;
		f->fin |= FLOW_FIN_BACKEND;
		f->b_fin = p->seq - f->seq_delta + p->paylen;
		/* The backend has closed: its slot is free, whatever the
		 * client still owes (a client that never acknowledges the
		 * answer must not hold it, nor backend-max's count). */
		overload_unhold(w, f);
	}
	if (!p->paylen) {
		/* Nothing for the client: an ACK of our FIN, or the FIN. */
		finish(w, f);
		return VERDICT_DROP;
	}
	splice_b2c(w, f, p, o, csum_partial);
	/* More than the answers we counted (a backend that had more to
	 * say): the next binding starts after all of it. */
	f->g_base = f->b_nxt - 1;
	finish(w, f);
	return VERDICT_MANGLED;
}

enum verdict
release_client(struct worker *w, struct flow *f, struct pkt *p,
	       const struct tcpopt *o, bool csum_partial)
{
	/* Acceptable (accept.c): a RST is exact. */
	if (p->flags & TCP_RST) {
		conn_reset(w, f, FLOW_RST_CLIENT);
		return VERDICT_DROP;
	}
	worker_client_seen(f, p, o);
	if ((p->flags & TCP_FIN) && !p->paylen && !f->taken &&
	    p->seq == f->r_fin) {
		/* The client closes too: the connection closes as usual; its
		 * FIN is a repeat of ours to the backend. */
		flow_state_set(f, FLOW_CLOSING);
		admit_leave(w, f);
		splice_c2b(w, f, p, o, csum_partial);
		return VERDICT_MANGLED;
	}
	if ((p->flags & TCP_ACK) && SEQ_GT(p->ack, f->c_ack) &&
	    !SEQ_GT(p->ack, f->b_nxt)) {
		f->c_ack = p->ack;
		f->syn_tries = 1;	/* taking it: the clock starts anew */
	}
	if (p->paylen || (p->flags & TCP_FIN)) {
		/* Its next query, held for the next backend (a FIN after
		 * it comes again then); it may end the release.  With
		 * keep-client 0 there is no next backend: not taken. */
		uint32_t n = 0;

		if (w->cfg->services[f->service].pol.keep_client) {
			enum bind_take t = bind_take(w, f, p, csum_partial, &n);

			if (t == BIND_GONE)
				return VERDICT_DROP;
			if (t == BIND_OK && p->paylen)
				bind_acknowledge(w, f);
		}
		if (n)
			STAT_INC(w, release_query_held);
		finish(w, f);
		return VERDICT_DROP;
	}
	/* Its ACK goes on as ours, past our FIN, which took a sequence
	 * number the client never used; and injected, not passed on, so it
	 * cannot reach the backend after what a later packet of this batch
	 * makes us inject (a new connection's SYN). */
	if (!finish(w, f))
		to_backend(w, f, f->r_fin + 1, f->c_ack, TCP_ACK);
	return VERDICT_DROP;
}

void
release_timer(struct worker *w, struct flow *f)
{
	if (f->syn_tries > w->cfg->syn_retries) {
		if (SEQ_GEQ(f->c_ack, f->b_nxt)) {
			/* The client has all it was sent; the backend's
			 * FIN, lost or never sent, does not matter. */
			worker_rst_backend(w, f, f->r_fin + 1);
			if (!(f->fin & FLOW_FIN_CLIENT_ACKED))
				worker_rst_backend(w, f, f->r_fin);
			rebind(w, f);
			return;
		}
		STAT_INC(w, release_stuck);
		conn_reset(w, f, FLOW_RELEASE_STUCK);
		return;
	}
	if (!(f->fin & FLOW_FIN_CLIENT_ACKED))
		to_backend(w, f, f->r_fin, f->c_ack, TCP_FIN | TCP_ACK);
	worker_rto_arm(w, f, f->syn_tries++);
}
