/*
 * The backend's half, HACKING.md step 4: tcpctd opens it in the client's
 * name with the options the cookie kept, sends it again while it is not
 * answered, and, once the backend's SYN-ACK is in, completes its handshake
 * with the held segment (or an ACK) and gives the client the window that
 * the backend's SYN-ACK offers.
 */
#include <string.h>

#include "backend.h"
#include "backlog.h"
#include "conn.h"
#include "guard.h"
#include "overload.h"
#include "splice.h"

static void
send_backend_syn(struct worker *w, const struct flow *f)
{
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX];

	os.mss = f->mss;
	os.sack_perm = f->sack;
	os.ts = f->ts;
	os.tsval = f->c_tsval;
	os.wscale = f->ws;
	os.wscale_shift = f->c_ws;
	worker_spec_to_backend(&s, f);
	s.seq = f->c_base;
	s.flags = TCP_SYN;
	/* A SYN's window is never scaled (RFC 7323 §2.2). */
	s.win = win_clamp((uint32_t)f->c_win << f->c_ws);
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	if (worker_emit(w, &s) == 0)
		STAT_INC(w, backend_syn);
}

void
backend_open(struct worker *w, struct flow *f)
{
	/* The backend's half starts here: nothing of the client's is
	 * acknowledged yet, none of its answers seen. */
	f->b_ack = f->c_base + 1;
	f->bdns = (struct dnsframe){ .server = true };
	f->bdns_nxt = f->g_base + 1;
	overload_hold(w, f);
	backlog_admit(w, f, false);
	send_backend_syn(w, f);
	f->syn_tries = 1;
	worker_rto_arm(w, f, 0);
}

void
backend_kernel_open(struct worker *w, struct flow *f)
{
	STAT_INC(w, backend_syn);
	/* backend_open's start of the backend's half: the kernel's, but for
	 * the framer's side. */
	f->bdns.server = true;
	overload_hold(w, f);
	backlog_taken(w, f);
	f->syn_tries = 1;
	worker_rto_arm(w, f, 0);
}

void
backend_kernel_synack(struct worker *w, struct flow *f)
{
	STAT_INC(w, backend_synack);
	flow_state_set(f, FLOW_ESTABLISHED);
	if (worker_awaits_ack(f)) {
		f->syn_tries = 0;
		worker_rto_arm(w, f, 0);
	} else {
		guard_touch(w, f, true);
	}
}

static void
send_backend_ack(struct worker *w, const struct flow *f, uint32_t tsecr)
{
	worker_send(w, f, true, f->c_base + 1, f->bisn + 1, TCP_ACK,
		    worker_backend_win(f), f->c_tsval, tsecr);
}

/* The held segment goes to the backend translated, completing its
 * handshake: its ACK acknowledges the backend's SYN.  Fast Open data was
 * acknowledged to the client already, so its slot stays until the backend
 * acknowledges it (backend_held_acked) and it is sent again when lost. */
bool
backend_send_held(struct worker *w, struct flow *f)
{
	struct hold_pool *h = &w->hold;
	struct tcpopt o;
	struct pkt p;
	uint8_t *buf;

	if (f->hold < 0)
		return false;
	buf = inject_slot(&w->ij);
	memcpy(buf, h->buf[f->hold], h->len[f->hold]);
	if (pkt_parse(&p, buf, h->len[f->hold]) != PKT_OK ||
	    tcpopt_parse(buf + p.l4off + TCP_HDR_LEN, p.doff - TCP_HDR_LEN,
			 TCP_HDR_LEN, &o) != TCPOPT_OK)
		return false;
	if (f->ts && o.has_ts && SEQ_LT(o.tsval, f->c_tsval)) {
		/* Held since before our SYN, which carried the client's
		 * latest TSval (a window probe's, say, while it waited for
		 * the backlog): with its own older one, the backend's PAWS
		 * check (RFC 7323 §5) drops it and waits for it forever. */
		pkt_set32(&p, o.ts_off, f->c_tsval, false);
		o.tsval = f->c_tsval;
	}
	splice_c2b(w, f, &p, &o, false);
	inject_commit(&w->ij, p.family, p.len);
	if (!f->taken)
		worker_hold_free(w, f);
	return true;
}

void
backend_held_acked(struct worker *w, struct flow *f, uint32_t ack)
{
	if (f->hold >= 0 && SEQ_GEQ(ack, f->c_base + 1 + f->taken))
		worker_hold_free(w, f);
}

static void
send_client_window(struct worker *w, const struct flow *f, uint16_t synwin,
		   uint32_t b_tsval)
{
	/* The SYN-ACK's window is unscaled; the client scales ours. */
	uint16_t win = win_clamp(synwin >> f->adv_ws);

	worker_send(w, f, false, f->g_base + 1, f->c_base + 1 + f->taken,
		    TCP_ACK, !win && synwin ? 1 : win, b_tsval + f->ts_delta,
		    f->c_tsval);
}

/* Step 4: the backend answered our SYN. */
static enum verdict
backend_synack(struct worker *w, struct flow *f, const struct pkt *p,
	       const struct tcpopt *o)
{
	STAT_INC(w, backend_synack);
	if (f->ts && !o->has_ts) {
		/* The profile promised timestamps; splicing now would hand
		 * the client segments without them.  Start over cleanly. */
		STAT_INC(w, options_mismatch);
		worker_rst_backend(w, f, f->c_base + 1);
		worker_rst_client(w, f, f->g_base + 1);
		conn_close(w, f, FLOW_OPTIONS);
		return VERDICT_DROP;
	}
	f->bisn = p->seq;
	f->b_ifindex = w->pkt_indev;
	w->backend_dev[f->service] = w->pkt_indev + 1;
	f->seq_delta = f->bisn - f->g_base;
	f->b_maxwin = p->win;	/* a SYN-ACK's window is never scaled */
	f->ts_out = f->gw_tsval;
	if (f->ts)
		f->ts_delta = f->gw_tsval - o->tsval;
	if (f->ws && o->has_wscale) {
		f->b_ws = o->wscale;
		f->c_ws_b = f->c_ws;
	}
	f->b_win = (uint16_t)(p->win >> f->b_ws);
	if (!backend_send_held(w, f))
		send_backend_ack(w, f, o->tsval);
	send_client_window(w, f, p->win, o->tsval);
	flow_state_set(f, FLOW_ESTABLISHED);
	if (worker_awaits_ack(f)) {
		f->syn_tries = 0;
		worker_rto_arm(w, f, f->tfo_pending ? RTO_CLIENT : 0);
	} else {
		guard_touch(w, f, true);
	}
	return VERDICT_DROP;
}

enum verdict
backend_segment(struct worker *w, struct flow *f, struct pkt *p,
		  const struct tcpopt *o, bool csum_partial)
{
	uint8_t fl = p->flags;

	(void)csum_partial;
	if (f->state != FLOW_SYN_SENT) {
		/* Our ACK was lost and the backend repeats its SYN-ACK. */
		if ((fl & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK) &&
		    p->seq == f->bisn) {
			STAT_INC(w, backend_synack_dup);
			if (!backend_send_held(w, f))
				send_backend_ack(w, f,
						 o->has_ts ? o->tsval : 0);
		}
		return VERDICT_DROP;
	}
	if (fl & TCP_RST) {
		if ((fl & TCP_ACK) && p->ack == f->c_base + 1) {
			STAT_INC(w, backend_refused);
			worker_rst_client(w, f, f->g_base + 1);
			conn_close(w, f, FLOW_REFUSED);
		}
		return VERDICT_DROP;
	}
	if ((fl & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK) &&
	    p->ack == f->c_base + 1)
		return backend_synack(w, f, p, o);
	if ((fl & (TCP_SYN | TCP_ACK)) == TCP_ACK) {
		/* RFC 9293 §3.10.7.3: an unacceptable ACK in SYN-SENT gets a
		 * RST.  It clears an old connection (or TIME-WAIT) left on
		 * the tuple; then the SYN goes again at once. */
		STAT_INC(w, backend_challenge);
		worker_rst_backend(w, f, p->ack);
		send_backend_syn(w, f);
		STAT_INC(w, backend_syn_retrans);
	}
	return VERDICT_DROP;
}

void
backend_syn_timer(struct worker *w, struct flow *f)
{
	if (f->syn_tries > w->cfg->syn_retries) {
		worker_rst_client(w, f, f->g_base + 1);
		conn_close(w, f, FLOW_SYN_TIMEOUT);
		return;
	}
	send_backend_syn(w, f);
	STAT_INC(w, backend_syn_retrans);
	worker_rto_arm(w, f, f->syn_tries++);
}
