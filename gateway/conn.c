/*
 * A connection's life in the flow table: made in one place (conn_open),
 * ended in one (conn_close), which gives back everything a flow holds: its
 * place in the per-client counts, its backend slot and backlog place, its
 * Fast Open pending count, its hold slot and the entry itself.  A full
 * table's eviction goes the same way.
 */
#include "admit.h"
#include "backlog.h"
#include "conn.h"
#include "overload.h"

void
conn_refuse(struct worker *w, const struct pkt *p)
{
	struct pkt_tcp_spec s = { .seq = p->ack, .flags = TCP_RST };

	pkt_tcp_reply(&s, p);
	if (!(p->flags & TCP_SYN))
		worker_emit(w, &s);
}

/* Both sides' numbers start at the handshake's; the backend's are
 * learnt from its SYN-ACK. */
static void
start(struct flow *f, const struct conn_start *st)
{
	f->c_base = st->cisn;
	f->g_base = st->gisn;
	f->mss = st->mss;
	f->ts = st->ts;
	f->sack = st->sack;
	f->ws = st->ws;
	f->c_ws = st->ws ? st->c_ws : 0;
	f->adv_ws = st->ws ? st->adv_ws : 0;
	f->gw_tsval = st->gw_tsval;
	f->ts_out = f->gw_tsval;
	f->c_tsval = st->c_tsval;
	f->c_win = st->c_win;
	f->c_nxt = f->c_base + 1;
	f->b_nxt = f->g_base + 1;
	f->c_ack = f->b_nxt;
	f->dns_nxt = f->c_nxt;
}

struct flow *
conn_open(struct worker *w, const struct service *svc, struct flow *old,
	  const struct pkt *p, const struct conn_start *st)
{
	unsigned idx = worker_service(w, svc);
	struct flow_key k = worker_client_key(p);
	struct flow *f;

	if (old) {
		/* A new incarnation replaces what is left of the old one; the
		 * backend's half (or its TIME-WAIT) goes with a RST. */
		if (old->state > FLOW_BINDING)
			worker_rst_backend(w, old, old->c_nxt);
		conn_close(w, old, FLOW_REPLACED);
		STAT_INC(w, replaced);
	}
	switch (admit_client(w, svc, p)) {
	case ADMIT_OK:
		break;
	case ADMIT_DEFERRED:
		return NULL;	/* as if lost: no RST */
	case ADMIT_REFUSED:
		conn_refuse(w, p);
		return NULL;
	}
	if (flow_table_full(&w->ft)) {
		struct flow *e = flow_evictable(&w->ft);

		if (e)
			conn_close(w, e, FLOW_EVICTED);
	}
	f = flow_insert(&w->ft, &k);
	if (!f) {
		/* The table is full: refused as cleanly as by a limit, and
		 * the flows in it go on. */
		admit_undo(w, idx, p->family, &p->src);
		STAT_INC(w, flow_full);
		conn_refuse(w, p);
		return NULL;
	}
	f->service = (uint8_t)idx;
	f->counted = true;
	f->born = w->now_ms;
	f->c_ifindex = w->pkt_indev;
	flow_state_set(f, st->state);
	start(f, st);
	return f;
}

void
conn_unpend(struct worker *w, struct flow *f)
{
	if (!f->tfo_pending)
		return;
	f->tfo_pending = false;
	w->tfo_pending[f->service]--;
}

void
conn_close(struct worker *w, struct flow *f, enum flow_reason r)
{
	conn_unpend(w, f);
	admit_leave(w, f);
	overload_unhold(w, f);
	backlog_done(w, f);
	worker_hold_free(w, f);
	flow_release(&w->ft, f, r);
}

/* The RSTs of a flow whose backend half is being released (release.c).
 * RFC 5961 §3.2: only a RST at RCV.NXT resets.  The backend's is past our
 * FIN once it acknowledged it; else it may or may not have it, and one of
 * two RSTs is exact.  The client's is somewhere from what it acknowledged
 * to all the backend sent. */
static void
reset_releasing(struct worker *w, const struct flow *f)
{
	worker_rst_backend(w, f, f->r_fin + 1);
	if (!(f->fin & FLOW_FIN_CLIENT_ACKED))
		worker_rst_backend(w, f, f->r_fin);
	worker_rst_client(w, f, f->b_nxt);
	if (f->c_ack != f->b_nxt)
		worker_rst_client(w, f, f->c_ack);
}

void
conn_reset(struct worker *w, struct flow *f, enum flow_reason r)
{
	switch (f->state) {
	case FLOW_BINDING:
		/* No backend connection yet.  Our FIN, if sent, took a seq:
		 * the client is past it once it acknowledged it, else one
		 * of the two is exact (RFC 5961 §3.2). */
		if (f->fin & FLOW_FIN_BACKEND)
			worker_rst_client(w, f, f->g_base + 2);
		if (!(f->fin & FLOW_FIN_BACKEND_ACKED))
			worker_rst_client(w, f, f->g_base + 1);
		break;
	case FLOW_SYN_SENT:
		/* The backend has our SYN at most. */
		worker_rst_backend(w, f, f->c_base + 1);
		worker_rst_client(w, f, f->g_base + 1);
		break;
	case FLOW_RELEASING:
		reset_releasing(w, f);
		break;
	default:
		worker_rst_backend(w, f, f->c_nxt);
		worker_rst_client(w, f, f->b_nxt);
		break;
	}
	conn_close(w, f, r);
}
