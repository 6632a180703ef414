/*
 * TCP Fast Open (RFC 7413) on behalf of a backend that knows nothing of it.
 * A cookie proves the client's address (HACKING.md §2), so a SYN with a
 * valid one and data is trusted with state at once: the flow is made, the
 * data held and acknowledged in the SYN-ACK, the backend SYN sent, and the
 * data delivered as the backend's handshake completes (HACKING.md step 4,
 * the held segment).  Everything else about a Fast Open SYN stays
 * stateless: a cookie request, or a cookie that is not ours, gets a fresh
 * cookie in the classic SYN-ACK.
 *
 * Flows made at a SYN are "pending" until the client acknowledges our
 * SYN-ACK; each service has at most --tfo-pending of them per worker
 * (RFC 7413 §5.1), and over it the SYN is answered classically: its data
 * is not taken and the client sends it again after the handshake (§4.2.2).
 */
#include <string.h>

#include "backend.h"
#include "conn.h"
#include "guard.h"
#include "handshake.h"
#include "tfo.h"

enum tfo_syn
tfo_syn(struct worker *w, const struct service *svc, struct pkt *p,
	const struct tcpopt *o, bool csum_partial)
{
	const struct config *cfg = w->cfg;
	unsigned idx = worker_service(w, svc);
	struct conn_start st;
	struct flow_key k;
	struct flow *f;

	if (!o->tfo_len) {
		STAT_INC(w, tfo_request);
		return TFO_COOKIE;
	}
	if (cookie_tfo_check(&w->keys, p->family, &p->src, &p->dst, w->now_s,
			     pkt_tcp(p) + o->tfo_off, o->tfo_len) != COOKIE_OK) {
		STAT_INC(w, tfo_invalid);
		if (p->paylen)
			STAT_INC(w, tfo_data_deferred);
		return TFO_COOKIE;
	}
	STAT_INC(w, tfo_valid);
	if (!p->paylen)
		return TFO_NONE;
	if (svc->pol.delay_bind && svc->kind == SERVICE_DNS &&
	    !dnsframe_begins_whole(p->data + p->payoff, p->paylen)) {
		/* The backend waits for a whole query (bind.c): the client
		 * sends this again after the handshake, to be held there. */
		STAT_INC(w, tfo_data_deferred);
		return TFO_NONE;
	}
	/* A repeat of a SYN taken never gets here (client_segment). */
	k = worker_client_key(p);
	f = flow_lookup(&w->ft, &k);
	/* A live connection on the tuple is not ended by a SYN. */
	if ((f && f->state < FLOW_CLOSING) ||
	    w->tfo_pending[idx] >= cfg->tfo_pending || !w->hold.nfree ||
	    p->len > INJECT_BUF || !worker_csum_ok(w, p, csum_partial)) {
		if (f && f->state < FLOW_CLOSING)
			STAT_INC(w, tfo_busy_tuple);
		else if (w->tfo_pending[idx] >= cfg->tfo_pending)
			STAT_INC(w, tfo_over_limit);
		STAT_INC(w, tfo_data_deferred);
		return TFO_NONE;
	}
	handshake_syn_start(w, svc, p, o, &st);
	f = conn_open(w, svc, f, p, &st);
	if (!f) {
		STAT_INC(w, tfo_data_deferred);
		return TFO_NONE;
	}
	f->taken = (uint16_t)p->paylen;
	f->c_nxt = p->seq + 1 + p->paylen;
	if (guard_data(w, f, p->seq + 1, p->data + p->payoff, p->paylen) ==
	    GUARD_CLOSED)
		return TFO_TAKEN;	/* reset: nothing more to answer */
	/* The SYN's data, held as the segment that completes the
	 * backend's handshake. */
	if (!worker_hold_take(w, f) ||
	    !worker_hold_write(w, f, p->data + p->payoff, p->paylen)) {
		conn_close(w, f, FLOW_SHUTDOWN);
		STAT_INC(w, tfo_data_deferred);
		return TFO_NONE;
	}
	STAT_INC(w, held);
	f->tfo_pending = true;
	w->tfo_pending[idx]++;
	STAT_INC(w, tfo_taken);
	/* Without data taken, the handshake ends as a classic one. */
	SVC_STAT_INC(w, idx, verified[DIALECT_TFO]);
	tfo_synack(w, f, o->tsval);
	backend_open(w, f);
	return TFO_TAKEN;
}

void
tfo_synack(struct worker *w, const struct flow *f, uint32_t tsecr)
{
	const struct service *svc = &w->cfg->services[f->service];
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX];
	struct profile prof;

	worker_profile(w, svc, f->key.family, &prof);
	os.mss = prof.mss;
	os.sack_perm = f->sack;
	os.ts = f->ts;
	os.tsval = f->gw_tsval;
	os.tsecr = tsecr;
	os.wscale = f->ws;
	os.wscale_shift = f->adv_ws;
	worker_spec_to_client(&s, f);
	s.seq = f->g_base;
	s.ack = f->c_base + 1 + f->taken;
	s.flags = TCP_SYN | TCP_ACK;
	/* The one hold slot is taken by the SYN's data: nothing more until
	 * the window update that follows the backend's handshake. */
	s.win = 0;
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	if (worker_emit(w, &s) == 0) {
		STAT_INC(w, synack_sent);
		SVC_STAT_INC(w, f->service, synack[DIALECT_TFO]);
	}
}
