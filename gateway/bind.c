/*
 * Delayed binding: a verified client of a service with delay-bind gets no
 * backend connection until it has sent a whole first DNS message (any data,
 * for a generic service).  Until then tcpctd is its peer: it acknowledges
 * the bytes and holds them, as one segment the size of our SYN-ACK's
 * window, which completes the backend's handshake once it is open (the
 * held segment of HACKING.md step 4).  A client that handshakes and goes
 * silent, or stops halfway through a query, costs the backend nothing: the
 * idle and message clocks (guard.c) reset it.  A flow whose backend half
 * was released (release.c) is bound again the same way, and a client that
 * closes while bound to nothing is closed as a server would (FINs).
 */
#include <string.h>

#include "backend.h"
#include "backlog.h"
#include "bind.h"
#include "conn.h"
#include "guard.h"
#include "upstream.h"

/* Headers of a held segment at most: IPv6 and TCP with options. */
#define BIND_HDR_ROOM	(40 + 60)

/* What we hold at most: the window our SYN-ACK gave (the backend's MSS),
 * and what a hold slot takes. */
static uint32_t
bind_cap(struct worker *w, const struct flow *f)
{
	struct profile prof;

	worker_profile(w, &w->cfg->services[f->service], f->key.family,
			  &prof);
	return prof.mss < INJECT_BUF - BIND_HDR_ROOM ? prof.mss
						     : INJECT_BUF - BIND_HDR_ROOM;
}

/* Our ACK of what we hold, with what is left of the window.  Its TSval,
 * as that of every segment we send the client, is the latest it had from
 * the backend's address: the backend's, translated, start there
 * (backend.c), so the client never sees one go back. */
static void
bind_ack(struct worker *w, const struct flow *f, uint32_t room)
{
	worker_send(w, f, false, f->g_base + 1, f->c_base + 1 + f->taken,
		    TCP_ACK, (uint16_t)(room >> f->adv_ws), f->ts_out,
		    f->c_tsval);
}

/* Adds n bytes (maybe none) to the held segment, rebuilt whole in its
 * slot (taken from the pool by the caller) with the flow's numbers now. */
static void
bind_append(struct worker *w, struct flow *f, const uint8_t *b, uint32_t n)
{
	struct hold_pool *h = &w->hold;
	uint8_t pay[INJECT_BUF];
	struct pkt old;
	uint32_t have = 0;

	if (h->len[f->hold] &&
	    pkt_parse(&old, h->buf[f->hold], h->len[f->hold]) == PKT_OK) {
		have = old.paylen;
		memcpy(pay, old.data + old.payoff, have);
	}
	if (n)
		memcpy(pay + have, b, n);
	worker_hold_write(w, f, pay, have + n);
	f->taken = (uint16_t)(have + n);
}

/* The client has sent what the backend needs first: a whole message
 * since the flow was (last) bound. */
static bool
bind_ready(const struct service *svc, const struct flow *f)
{
	uint32_t n = f->dns.started - f->dns_bound;

	if (svc->kind != SERVICE_DNS)
		return f->taken > 0;
	return n > 1 || (n == 1 && !dnsframe_mid(&f->dns));
}

/* Our FIN to the client, from the backend's address, acknowledging its
 * own FIN if it sent one; once ours is acknowledged, only the ACK. */
static void
bind_send_fin(struct worker *w, const struct flow *f)
{
	bool acked = f->fin & FLOW_FIN_BACKEND_ACKED;

	worker_send(w, f, false, f->g_base + 1 + acked,
		    f->fin & FLOW_FIN_CLIENT ? f->c_fin + 1
					     : f->c_base + 1 + f->taken,
		    TCP_ACK | (acked ? 0 : TCP_FIN), 0, f->ts_out, f->c_tsval);
}

void
bind_close(struct worker *w, struct flow *f)
{
	f->fin |= FLOW_FIN_BACKEND;
	bind_send_fin(w, f);
	flow_timer_set(&w->ft, f, FLOW_TIMER_CLOSING, w->now_ms);
}

/* A client segment once either side has closed: FINs acknowledged, and the
 * entry gone when both are. */
static void
bind_closing(struct worker *w, struct flow *f, const struct pkt *p)
{
	if ((p->flags & TCP_ACK) && SEQ_GT(p->ack, f->g_base + 1))
		f->fin |= FLOW_FIN_BACKEND_ACKED;
	if (p->flags & TCP_FIN) {
		if (!(f->fin & FLOW_FIN_CLIENT)) {
			f->fin |= FLOW_FIN_CLIENT;
			f->c_fin = p->seq + p->paylen;
		}
		bind_send_fin(w, f);
	} else if (p->paylen &&
		   SEQ_GT(p->seq + p->paylen, f->c_base + 1 + f->taken)) {
		/* Data after we closed: nobody is there to take it. */
		worker_rst_client(w, f, f->g_base + 2);
		conn_close(w, f, FLOW_FIN_UNBOUND);
		return;
	}
	if ((f->fin & (FLOW_FIN_CLIENT | FLOW_FIN_BACKEND_ACKED)) ==
	    (FLOW_FIN_CLIENT | FLOW_FIN_BACKEND_ACKED))
		conn_close(w, f, f->dns_bound ? FLOW_DONE
						  : FLOW_FIN_UNBOUND);
}

bool
bind_kernel(struct worker *w, struct flow *f, const uint8_t *query,
	    uint16_t qlen, bool answered)
{
	enum flow_reason why = FLOW_HOLD_FULL;
	bool held;

	STAT_INC(w, carry_bound);
	STAT_INC(w, bind_opened);
	flow_state_set(f, FLOW_SYN_SENT);
	backend_kernel_open(w, f);
	/* bind_take's, for the query the kernel took as bind_c2b does; a
	 * slot is free for each place lent (backlog_lend). */
	held = worker_hold_take(w, f);
	if (held) {
		switch (guard_data(w, f, f->c_base + 1, query, qlen)) {
		case GUARD_PASS:
			break;
		case GUARD_DROP:
			held = false;
			why = FLOW_FRAMING;
			break;
		case GUARD_CLOSED:
			return false;
		}
	}
	if (held) {
		worker_hold_write(w, f, query, qlen);
		f->taken = qlen;
		STAT_INC(w, held);
	}
	if (answered)
		backend_kernel_synack(w, f);
	if (!held) {
		conn_reset(w, f, why);
		return false;
	}
	return true;
}

void
bind_start(struct worker *w, struct flow *f)
{
	STAT_INC(w, bind_opened);
	flow_state_set(f, FLOW_SYN_SENT);
	if (w->cfg->services[f->service].upstream)
		upstream_open(w, f);
	else
		backend_open(w, f);
}

/* Opens the backend connection, what is held to complete its handshake;
 * or, with the backend's backlog full, acknowledges what is held with a
 * zero window until a place is free (backlog.c). */
static void
bind_now(struct worker *w, struct flow *f)
{
	if (backlog_admit(w, f, true))
		bind_start(w, f);
	else
		bind_ack(w, f, 0);
}

enum bind_take
bind_take(struct worker *w, struct flow *f, const struct pkt *p,
	  bool csum_partial, uint32_t *taken)
{
	uint32_t cap = bind_cap(w, f), nxt = f->c_base + 1 + f->taken, n = 0;
	uint32_t skip = nxt - p->seq;

	*taken = 0;
	if (!p->paylen)
		return BIND_OK;
	if (!worker_csum_ok(w, p, csum_partial))
		return BIND_DROP;
	if (SEQ_GT(p->seq, nxt)) {
		STAT_INC(w, bind_out_of_order);
		return BIND_DROP;
	}
	if (skip < p->paylen)
		n = p->paylen - skip;
	if (f->taken + n > cap)
		return BIND_FULL;
	if (n && f->hold < 0 && !worker_hold_take(w, f))
		return BIND_DROP;	/* not acknowledged: sent again */
	if (n) {
		switch (guard_data(w, f, p->seq, p->data + p->payoff,
				   p->paylen)) {
		case GUARD_PASS:
			break;
		case GUARD_DROP:
			return BIND_DROP;
		case GUARD_CLOSED:
			return BIND_GONE;
		}
		bind_append(w, f, p->data + p->payoff + skip, n);
		STAT_INC(w, held);
	}
	*taken = n;
	return BIND_OK;
}

void
bind_acknowledge(struct worker *w, const struct flow *f)
{
	bind_ack(w, f, bind_cap(w, f) - f->taken);
}

uint16_t
bind_window(struct worker *w, const struct flow *f)
{
	/* Waiting for the backend's backlog: closed (bind_client). */
	if (f->timer == FLOW_TIMER_QUEUED)
		return 0;
	return (uint16_t)((bind_cap(w, f) - f->taken) >> f->adv_ws);
}

/* Whether what is held is what the backend needs, or all there is room
 * for (a window that would round to nothing at the client's scale). */
static bool
bind_due(struct worker *w, const struct service *svc, const struct flow *f,
	 uint32_t taken)
{
	return bind_ready(svc, f) ||
	       (taken && (bind_cap(w, f) - f->taken) >> f->adv_ws == 0);
}

void
bind_resume(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];

	if (f->taken) {
		/* Rebuilt with the sequence numbers and timestamp of the
		 * binding it now belongs to. */
		bind_append(w, f, NULL, 0);
		if (bind_due(w, svc, f, f->taken)) {
			bind_now(w, f);
			return;
		}
	}
	guard_touch(w, f, true);
}

void
bind_client(struct worker *w, const struct service *svc, struct flow *f,
	    const struct pkt *p, const struct tcpopt *o, bool csum_partial)
{
	uint32_t n;

	worker_client_seen(f, p, o);
	if (f->fin) {
		bind_closing(w, f, p);
		return;
	}
	if (f->timer == FLOW_TIMER_QUEUED) {
		/* Waiting for the backend: it has all we take (a FIN comes
		 * again once the backend is there). */
		bind_ack(w, f, 0);
		return;
	}
	switch (bind_take(w, f, p, csum_partial, &n)) {
	case BIND_DROP:
	case BIND_GONE:
		return;
	case BIND_FULL:
		/* More than we hold: the backend takes it from here, after
		 * the window update. */
		STAT_INC(w, bind_too_big);
		bind_now(w, f);
		return;
	case BIND_OK:
		break;
	}
	if (bind_due(w, svc, f, n)) {
		/* The window update that follows the backend's handshake
		 * acknowledges what we hold.  A FIN, if any, is not taken:
		 * it comes again once the backend is there. */
		bind_now(w, f);
		return;
	}
	/* New bytes, or ours were lost: the client hears of them. */
	if (p->paylen)
		bind_acknowledge(w, f);
	if (p->flags & TCP_FIN) {
		/* Nothing (more) for a backend: a close, as any server's. */
		if (!f->dns_bound)
			STAT_INC(w, bind_fin);
		f->fin |= FLOW_FIN_CLIENT;
		f->c_fin = p->seq + p->paylen;
		bind_close(w, f);
		return;
	}
	guard_touch(w, f, n > 0);
}
