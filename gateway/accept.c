/*
 * Acceptability of a client segment of a live flow (accept.h).
 */
#include "accept.h"
#include "bind.h"

_Static_assert(SHIELD_BACKEND_SLACK == ACCEPT_BACKEND_SLACK,
	       "the kernel shield judges a backend's segment as this file");

/* What the client may acknowledge at most: all the backend sent, and our
 * FIN to a binding client. */
static uint32_t
snd_nxt(const struct flow *f)
{
	return f->b_nxt +
	       (f->state == FLOW_BINDING && (f->fin & FLOW_FIN_BACKEND));
}

uint32_t
accept_rcv_nxt(const struct flow *f)
{
	/* What we acknowledged ourselves (a binding's held bytes, Fast Open
	 * data), or what the backend did, whichever is further. */
	uint32_t nxt = f->c_base + 1 + f->taken;

	if (f->state == FLOW_BINDING && (f->fin & FLOW_FIN_CLIENT))
		return f->c_fin + 1;
	if (f->state >= FLOW_ESTABLISHED && SEQ_GT(f->b_ack, nxt))
		return f->b_ack;
	return nxt;
}

/* The window the client was last given, in its units. */
static uint16_t
client_win(struct worker *w, const struct flow *f)
{
	switch (f->state) {
	case FLOW_BINDING:
		return bind_window(w, f);
	case FLOW_SYN_SENT:
		return 0;	/* the window update follows the backend's */
	default:
		return win_rescale(f->b_win, f->b_ws, f->adv_ws);
	}
}

/* Whether f may send a challenge ACK now, within RFC 5961 §7's limits;
 * counted when not. */
static bool
challenge_due(struct worker *w, struct flow *f)
{
	uint32_t now = (uint32_t)w->now_ms;

	if (f->challenged &&
	    now - f->challenge_ms < ACCEPT_CHALLENGE_INTERVAL_MS) {
		STAT_INC(w, challenge_ack_limited);
		return false;
	}
	if (w->challenge_s != w->now_s) {
		w->challenge_s = w->now_s;
		w->challenge_n = 0;
	}
	if (w->challenge_n >= ACCEPT_CHALLENGE_PER_S) {
		STAT_INC(w, challenge_ack_limited);
		return false;
	}
	w->challenge_n++;
	f->challenged = true;
	f->challenge_ms = now;
	STAT_INC(w, challenge_ack);
	return true;
}

/* RFC 5961 §3.2, §4.2, §5.2: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>.  A client
 * that still has the connection takes it as a duplicate; one that lost it
 * answers with a RST at exactly RCV.NXT, which ends the flow. */
static void
challenge(struct worker *w, struct flow *f)
{
	if (challenge_due(w, f))
		worker_send(w, f, false, snd_nxt(f), accept_rcv_nxt(f), TCP_ACK,
			    client_win(w, f), f->ts_out, f->c_tsval);
}

/* The same to the backend, in the client's name: its next seq (past our
 * FIN while releasing) and its latest ACK, echoing the backend's latest
 * TSval that was taken. */
static void
challenge_backend(struct worker *w, struct flow *f)
{
	if (challenge_due(w, f))
		worker_send(w, f, true,
			    f->c_nxt + (f->state == FLOW_RELEASING),
			    f->c_ack + f->seq_delta, TCP_ACK,
			    worker_backend_win(f), f->c_tsval,
			    f->ts_out - f->ts_delta);
}

bool
accept_client(struct worker *w, struct flow *f, const struct pkt *p)
{
	uint32_t rcv_nxt = accept_rcv_nxt(f);
	uint32_t wnd = f->b_maxwin > FLOW_WINDOW_MIN ? f->b_maxwin
						     : FLOW_WINDOW_MIN;
	uint32_t max_snd_wnd = f->c_maxwin > FLOW_WINDOW_MIN ? f->c_maxwin
							     : FLOW_WINDOW_MIN;
	uint32_t end = p->seq + p->paylen + !!(p->flags & TCP_FIN);
	uint32_t win;

	if (p->flags & TCP_RST) {
		/* RFC 5961 §3.2: exactly RCV.NXT resets; the client's own
		 * SND.NXT is the same once all it sent is in. */
		if (p->seq == rcv_nxt || p->seq == f->c_nxt)
			return true;
		if (SEQ_GEQ(p->seq, rcv_nxt) && SEQ_LT(p->seq, rcv_nxt + wnd)) {
			STAT_INC(w, rst_challenged);
			challenge(w, f);
		} else {
			STAT_INC(w, rst_out_of_window);
		}
		return false;
	}
	if (!(p->flags & TCP_ACK)) {
		/* RFC 9293 §3.10.7.4, fifth check: no ACK, no segment. */
		STAT_INC(w, no_ack_flag);
		return false;
	}
	/* RFC 5961 §5.2: SND.UNA − MAX.SND.WND ≤ SEG.ACK ≤ SND.NXT. */
	if (SEQ_GT(p->ack, snd_nxt(f))) {
		STAT_INC(w, ack_unsent);
		challenge(w, f);
		return false;
	}
	if (SEQ_LT(p->ack, f->c_ack - max_snd_wnd)) {
		STAT_INC(w, ack_too_old);
		challenge(w, f);
		return false;
	}
	/* RFC 9293 §3.10.7.4: not past the window, nor older than a window
	 * (an old duplicate within it goes on, so that its receiver
	 * acknowledges it again). */
	if (SEQ_GT(p->seq, rcv_nxt + wnd) || SEQ_LT(end, rcv_nxt - wnd)) {
		STAT_INC(w, out_of_window);
		challenge(w, f);
		return false;
	}
	win = (uint32_t)p->win << f->c_ws;
	if (win > f->c_maxwin)
		f->c_maxwin = win;
	return true;
}

/* The client's receive window as a backend's segment is judged by it: its
 * latest, its largest, at least FLOW_WINDOW_MIN. */
static uint32_t
client_rcv_wnd(const struct flow *f)
{
	uint32_t cwin = (uint32_t)f->c_win << f->c_ws;
	uint32_t wnd = FLOW_WINDOW_MIN;

	if (f->c_maxwin > wnd)
		wnd = f->c_maxwin;
	return cwin > wnd ? cwin : wnd;
}

bool
accept_backend_old(const struct flow *f, const struct pkt *p)
{
	uint32_t seq = p->seq - f->seq_delta;	/* client space */
	uint32_t end = seq + p->paylen + !!(p->flags & TCP_FIN);

	/* TCPCT's flows, either side's, have the daemon add or take the
	 * cookie pair: theirs are dropped and answered by accept_backend. */
	return (f->state == FLOW_ESTABLISHED || f->state == FLOW_CLOSING) &&
	       !f->tcpct && !f->up &&
	       (p->flags & (TCP_SYN | TCP_RST | TCP_ACK)) == TCP_ACK &&
	       SEQ_LT(end, f->c_ack - ACCEPT_BACKEND_SLACK) &&
	       !SEQ_LT(end, f->c_ack - client_rcv_wnd(f)) &&
	       !SEQ_LT(seq, f->g_base + 1);
}

bool
accept_backend(struct worker *w, struct flow *f, const struct pkt *p)
{
	uint32_t seq = p->seq - f->seq_delta;	/* client space */
	uint32_t end = seq + p->paylen + !!(p->flags & TCP_FIN);
	uint32_t wnd = client_rcv_wnd(f), max_snd_wnd = FLOW_WINDOW_MIN;
	uint32_t last = f->b_nxt + ACCEPT_BACKEND_SLACK;

	if (f->b_maxwin > max_snd_wnd)
		max_snd_wnd = f->b_maxwin;
	if (p->flags & TCP_RST) {
		if (seq == f->b_nxt || seq == f->c_ack)
			return true;
		STAT_INC(w, rst_out_of_window);
		return false;
	}
	/* seq: within the client's window and the backend's own numbers
	 * (accept.h). */
	if (SEQ_LT(f->c_ack + wnd, last))
		last = f->c_ack + wnd;
	if (SEQ_GT(seq, last)) {
		STAT_INC(w, backend_unacceptable);
		return false;
	}
	if (SEQ_LT(end, f->c_ack - ACCEPT_BACKEND_SLACK)) {
		STAT_INC(w, backend_unacceptable);
		/* An old duplicate the client would have acknowledged again
		 * (RFC 9293 §3.10.7.4), with no client behind to do it (a
		 * spliced flow's went on, accept_backend_old): a backend
		 * that never got the ACKs of what it sends again must get
		 * one, or it sends that again until it gives up. */
		if ((f->state == FLOW_RELEASING || f->tcpct || f->up) &&
		    !SEQ_LT(end, f->c_ack - wnd))
			challenge_backend(w, f);
		return false;
	}
	/* RFC 5961 §5.2 from the client's side: not past the client's
	 * SND.NXT (and our FIN in its name while releasing), not older
	 * than the backend's largest window behind its latest ACK. */
	if ((p->flags & TCP_ACK) &&
	    (SEQ_GT(p->ack, f->c_nxt + (f->state == FLOW_RELEASING)) ||
	     SEQ_LT(p->ack, f->b_ack - max_snd_wnd))) {
		STAT_INC(w, backend_unacceptable);
		return false;
	}
	return true;
}

bool
accept_reusable(const struct flow *f)
{
	return f->state == FLOW_CLOSED ||
	       (f->state != FLOW_RELEASING &&
		(f->fin & (FLOW_FIN_CLIENT | FLOW_FIN_BACKEND)) ==
		(FLOW_FIN_CLIENT | FLOW_FIN_BACKEND));
}

void
accept_syn(struct worker *w, struct flow *f)
{
	STAT_INC(w, syn_challenged);
	challenge(w, f);
}
