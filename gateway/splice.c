/*
 * The splice: every segment of an established flow is translated in flight
 * (HACKING.md step 5) and its FINs followed (step 6).
 *
 * The client's sequence space is kept end to end, so only the backend's
 * side moves: backend seq − seq_delta is what the client sees, and client
 * ack + seq_delta what the backend sees.  SACK blocks follow the space they
 * describe; TSval/TSecr move by ts_delta the same way.  Checksums are
 * updated per field (RFC 1624).
 */
#include "../nfq/bytes.h"
#include "admit.h"
#include "guard.h"
#include "overload.h"
#include "splice.h"

/* Counts the backend's DNS answers in its bytes at seq (client space), so
 * that release.c knows when every query has its answer. */
static void
frame_answers(struct flow *f, uint32_t seq, const uint8_t *b, uint32_t len)
{
	uint32_t skip = f->bdns_nxt - seq;

	/* In order only: past a hole nothing more is framed, and a flow
	 * whose answers cannot be counted is never released; nor is one
	 * whose backend sent what is not DNS (a length under a header
	 * leaves it mid-message for good). */
	if (SEQ_GT(seq, f->bdns_nxt) || skip >= len)
		return;
	dnsframe_feed(&f->bdns, b + skip, len - skip);
	f->bdns_nxt = seq + len;
}

static uint32_t
seg_end(const struct pkt *p)
{
	return p->seq + p->paylen + !!(p->flags & TCP_SYN) +
	       !!(p->flags & TCP_FIN);
}

void
splice_touch(struct worker *w, struct flow *f, bool progress)
{
	switch (f->state) {
	case FLOW_ESTABLISHED:
		guard_touch(w, f, progress);
		break;
	case FLOW_CLOSING:
		/* Both sides have closed: the backend's application is done
		 * with its slot, whatever its kernel still waits for. */
		if ((f->fin & (FLOW_FIN_CLIENT | FLOW_FIN_BACKEND)) ==
		    (FLOW_FIN_CLIENT | FLOW_FIN_BACKEND))
			overload_unhold(w, f);
		if ((f->fin & (FLOW_FIN_CLIENT_ACKED | FLOW_FIN_BACKEND_ACKED)) ==
		    (FLOW_FIN_CLIENT_ACKED | FLOW_FIN_BACKEND_ACKED)) {
			/* HACKING.md §1 step 4: a TCPCT responder keeps
			 * nothing after the last ACK; the entry goes with
			 * this batch's timers. */
			flow_state_set(f, FLOW_CLOSED);
			flow_timer_set(&w->ft, f, f->tcpct ? FLOW_TIMER_DONE
							   : FLOW_TIMER_CLOSED,
				       w->now_ms);
		} else if (progress || f->timer != FLOW_TIMER_CLOSING) {
			flow_timer_set(&w->ft, f, FLOW_TIMER_CLOSING,
				       w->now_ms);
		}
		break;
	default:
		break;
	}
}

void
splice_c2b(struct worker *w, struct flow *f, struct pkt *p,
	   const struct tcpopt *o, bool csum_partial)
{
	uint8_t *th = pkt_tcp(p);
	bool progress = false;
	unsigned i;

	if (p->flags & TCP_ACK) {
		/* Not past what the backend sent: such an ACK is refused
		 * there, and ours must never acknowledge unsent data. */
		if (SEQ_GT(p->ack, f->c_ack) && !SEQ_GT(p->ack, f->b_nxt)) {
			progress = true;
			f->c_ack = p->ack;
		}
		if ((f->fin & FLOW_FIN_BACKEND) && SEQ_GT(p->ack, f->b_fin))
			f->fin |= FLOW_FIN_BACKEND_ACKED;
		pkt_set32(p, TCP_OFF_ACK, p->ack + f->seq_delta, csum_partial);
	}
	for (i = 0; i < o->nsack; i++) {
		unsigned off = o->sack_off + 8 * i;
		pkt_set32(p, off, get32(th + off) + f->seq_delta, csum_partial);
		pkt_set32(p, off + 4, get32(th + off + 4) + f->seq_delta,
			  csum_partial);
	}
	if (f->ts && o->has_ts) {
		/* The latest, for our own segments to the backend: one that
		 * went back would fail its PAWS check (RFC 7323 §5). */
		if (SEQ_GT(o->tsval, f->c_tsval))
			f->c_tsval = o->tsval;
		pkt_set32(p, o->ts_off + 4, o->tsecr - f->ts_delta,
			  csum_partial);
	}
	if (f->c_ws != f->c_ws_b)
		pkt_set16(p, TCP_OFF_WIN,
			  win_rescale(p->win, f->c_ws, f->c_ws_b),
			  csum_partial);
	f->c_win = p->win;
	if (SEQ_GT(seg_end(p), f->c_nxt)) {
		f->c_nxt = seg_end(p);
		progress = true;
	}
	if ((p->flags & TCP_FIN) && !(f->fin & FLOW_FIN_CLIENT)) {
		f->fin |= FLOW_FIN_CLIENT;
		f->c_fin = p->seq + p->paylen;
		/* Done, as far as the per-client limits go. */
		admit_leave(w, f);
	}
	if (f->fin && f->state == FLOW_ESTABLISHED)
		flow_state_set(f, FLOW_CLOSING);
	STAT_INC(w, c2b);
	SVC_STAT_INC(w, f->service, c2b);
	splice_touch(w, f, progress);
}

void
splice_b2c(struct worker *w, struct flow *f, struct pkt *p,
	   const struct tcpopt *o, bool csum_partial)
{
	uint32_t seq = p->seq - f->seq_delta;
	uint32_t win = (uint32_t)p->win << f->b_ws;
	bool progress = false;

	if (win > f->b_maxwin)
		f->b_maxwin = win;
	f->b_win = p->win;
	pkt_set32(p, TCP_OFF_SEQ, seq, csum_partial);
	if (p->flags & TCP_ACK) {
		if (SEQ_GT(p->ack, f->b_ack))
			f->b_ack = p->ack;
		if ((f->fin & FLOW_FIN_CLIENT) && SEQ_GT(p->ack, f->c_fin))
			f->fin |= FLOW_FIN_CLIENT_ACKED;
	}
	if (f->ts && o->has_ts) {
		f->ts_out = o->tsval + f->ts_delta;
		pkt_set32(p, o->ts_off, f->ts_out, csum_partial);
	}
	if (p->paylen &&
	    w->cfg->services[f->service].kind == SERVICE_DNS)
		frame_answers(f, seq, p->data + p->payoff, p->paylen);
	if (f->b_ws != f->adv_ws)
		pkt_set16(p, TCP_OFF_WIN,
			  win_rescale(p->win, f->b_ws, f->adv_ws),
			  csum_partial);
	p->seq = seq;
	if (SEQ_GT(seg_end(p), f->b_nxt)) {
		f->b_nxt = seg_end(p);
		progress = true;
	}
	if ((p->flags & TCP_FIN) && !(f->fin & FLOW_FIN_BACKEND)) {
		if (!(f->fin & FLOW_FIN_CLIENT))
			f->fin |= FLOW_FIN_BACKEND_FIRST;
		f->fin |= FLOW_FIN_BACKEND;
		f->b_fin = seq + p->paylen;
	}
	if (f->fin && f->state == FLOW_ESTABLISHED)
		flow_state_set(f, FLOW_CLOSING);
	STAT_INC(w, b2c);
	SVC_STAT_INC(w, f->service, b2c);
	splice_touch(w, f, progress);
}

void
splice_b2c_old(struct worker *w, const struct flow *f, struct pkt *p,
	       const struct tcpopt *o, bool csum_partial)
{
	p->seq -= f->seq_delta;
	pkt_set32(p, TCP_OFF_SEQ, p->seq, csum_partial);
	if (f->ts && o->has_ts)
		pkt_set32(p, o->ts_off, o->tsval + f->ts_delta, csum_partial);
	if (f->b_ws != f->adv_ws)
		pkt_set16(p, TCP_OFF_WIN,
			  win_rescale(p->win, f->b_ws, f->adv_ws),
			  csum_partial);
	STAT_INC(w, backend_old_dup);
}
