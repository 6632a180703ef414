/*
 * The handshake with a client, HACKING.md steps 1 to 3: a SYN gets a cookie
 * SYN-ACK and nothing is kept; an ACK that brings a cookie back makes the
 * flow, and the backend's half opens (backend.c), or waits for a first
 * message (bind.c).  Fast Open (tfo.c) and TCPCT (responder.c) make their
 * flows with the same parts.
 */
#include <string.h>

#include "backend.h"
#include "bind.h"
#include "conn.h"
#include "guard.h"
#include "handshake.h"

enum verdict
handshake_synack(struct worker *w, const struct service *svc, struct pkt *p,
		 const struct tcpopt *o, bool tfo)
{
	const struct inaddr caddr = p->src, saddr = p->dst;
	struct profile prof;
	struct cookie_tuple t;
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX], tfo_cookie[TFO_COOKIE_LEN];
	unsigned mss_index, tsbits = 0;
	unsigned idx = worker_service(w, svc);
	enum dialect d = DIALECT_CLASSIC;
	bool ecn;
	uint16_t cmss;

	worker_profile(w, svc, p->family, &prof);
	cmss = o->has_mss ? o->mss : worker_default_mss(p->family);
	mss_index = cookie_mss_index(p->family, cmss);
	/* RFC 3168 §6.1.1: an ECN-setup SYN has both ECE and CWR. */
	ecn = (p->flags & (TCP_ECE | TCP_CWR)) == (TCP_ECE | TCP_CWR) &&
	      prof.ecn;

	/* Without timestamps only the MSS survives the cookie: offer
	 * nothing else, as Linux does (HACKING.md §3). */
	if (o->has_ts && prof.ts) {
		tsbits = COOKIE_TS_PRESENT;
		tsbits |= o->has_wscale && prof.ws ? o->wscale
						   : COOKIE_TS_WSCALE_NONE;
		if (o->sack_perm && prof.sack)
			tsbits |= COOKIE_TS_SACK;
		if (ecn)
			tsbits |= COOKIE_TS_ECN;
		os.ts = true;
		os.tsval = ((uint32_t)w->now_ms & ~(uint32_t)COOKIE_TS_BITS) |
			   (tsbits & COOKIE_TS_BITS);
		os.tsecr = o->tsval;
		os.sack_perm = tsbits & COOKIE_TS_SACK;
		os.wscale = (tsbits & COOKIE_TS_WSCALE_MASK) !=
			    COOKIE_TS_WSCALE_NONE;
		os.wscale_shift = prof.wscale;
	} else {
		ecn = false;
	}
	os.mss = prof.mss;
	worker_cookie_tuple(&t, p);

	/* Built over the SYN itself with a SYN-ACK verdict: the addresses
	 * are read from copies. */
	pkt_tcp_reply(&s, p);
	s.src = &saddr;
	s.dst = &caddr;
	s.seq = cookie_make(&w->keys, &t, p->seq, w->now_s, mss_index, tsbits);
	s.ack = p->seq + 1;
	s.flags = TCP_SYN | TCP_ACK | (ecn ? TCP_ECE : 0);
	/* One segment's window: a client's first request (a DNS query, an
	 * HTTP GET) comes at once and waits in a hold slot while the backend
	 * connection opens; the rest waits for the window update (HACKING.md
	 * step 3).  A SYN-ACK's window is never scaled. */
	s.win = prof.mss;
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	if (tfo && cookie_tfo_make(&w->keys, p->family, &caddr, &saddr,
				   w->now_s, tfo_cookie) == 0 &&
	    tcpopt_put_tfo(opts, &s.optlen, sizeof(opts), tfo_cookie,
			   TFO_COOKIE_LEN, o->tfo_exp)) {
		STAT_INC(w, tfo_cookie_sent);
		d = DIALECT_TFO;
	}
	if (w->cfg->synack_verdict) {
		/* Everything needed was copied out of the SYN above. */
		if (!pkt_build_tcp(p->data, QUEUE_PKT_ROOM, &s, p))
			return VERDICT_DROP;
		STAT_INC(w, synack_sent);
		SVC_STAT_INC(w, idx, synack[d]);
		return VERDICT_MANGLED;
	}
	if (worker_emit(w, &s) == 0) {
		STAT_INC(w, synack_sent);
		SVC_STAT_INC(w, idx, synack[d]);
	}
	return VERDICT_DROP;
}

/*
 * A bare FIN right behind the held segment joins it as its FIN flag: a
 * client that closes as soon as its request is out (netcat, socat,
 * tcpct-connect) sends it while the backend's handshake is under way, and
 * the backend gets request and FIN together once it is done.  Dropped, the
 * FIN would come again only on the client's retransmission timer.
 */
static bool
hold_fin(struct worker *w, struct flow *f, const struct pkt *p)
{
	struct hold_pool *h = &w->hold;
	struct pkt held;
	uint8_t *th;

	if (p->paylen || (p->flags & (TCP_SYN | TCP_RST | TCP_FIN)) != TCP_FIN ||
	    pkt_parse(&held, h->buf[f->hold], h->len[f->hold]) != PKT_OK ||
	    (held.flags & TCP_FIN) ||
	    p->seq != held.seq + (uint32_t)held.paylen)
		return false;
	/* What is held has its whole checksum (handshake_hold). */
	th = pkt_tcp(&held);
	pkt_set16(&held, TCP_OFF_DOFF,
		  (uint16_t)(th[TCP_OFF_DOFF] << 8 | th[TCP_OFF_FLAGS] | TCP_FIN),
		  false);
	STAT_INC(w, held_fin);
	return true;
}

bool
handshake_hold(struct worker *w, struct flow *f, const struct pkt *p,
	       bool csum_partial)
{
	struct hold_pool *h = &w->hold;

	if (f->hold >= 0 && hold_fin(w, f, p))
		return true;
	if (f->hold >= 0 || p->seq != f->c_base + 1) {
		STAT_INC(w, early_dropped);
		return true;
	}
	if (p->len > INJECT_BUF) {
		STAT_INC(w, hold_full);
		return true;
	}
	if (!worker_hold_take(w, f))
		return true;
	/* What is held will go on: it is framed now (a flow it closes
	 * gives its slot back). */
	if (guard_data(w, f, p->seq, p->data + p->payoff, p->paylen) ==
	    GUARD_CLOSED)
		return false;
	memcpy(h->buf[f->hold], p->data, p->len);
	h->len[f->hold] = (uint16_t)p->len;
	if (csum_partial) {
		/* It leaves through a raw socket: finish its checksum. */
		struct pkt copy;

		if (pkt_parse(&copy, h->buf[f->hold], p->len) == PKT_OK)
			pkt_tcp_csum_set(&copy);
	}
	STAT_INC(w, held);
	return true;
}

bool
handshake_verify(struct worker *w, const struct service *svc,
		 struct flow *old, struct pkt *p, const struct tcpopt *o,
		 bool csum_partial)
{
	struct conn_start st = {
		.state = svc->pol.delay_bind ? FLOW_BINDING : FLOW_SYN_SENT,
		.cisn = p->seq - 1, .gisn = p->ack - 1,
		.gw_tsval = o->tsecr, .c_tsval = o->tsval, .c_win = p->win,
	};
	struct cookie_tuple t;
	struct profile prof;
	enum cookie_result r;
	unsigned mss_index = 0, tsbits = 0;
	struct flow *f;

	if (o->has_ts)
		tsbits = (o->tsecr & COOKIE_TS_BITS) | COOKIE_TS_PRESENT;
	worker_cookie_tuple(&t, p);
	/* One check per ACK, so that a forger's odds are one ISN's.  The
	 * zero-window probe's form (seq = ISN) is not tried: our SYN-ACK
	 * opens a window, so the client's next segment after a lost ACK is
	 * data at ISN + 1, which verifies. */
	if (w->shield_verified) {
		/* The kernel shield checked this very MAC. */
		r = COOKIE_OK;
		mss_index = (p->ack - 1) & COOKIE_ISN_MSS_MASK;
	} else {
		r = cookie_check(&w->keys, &t, st.gisn, st.cisn, w->now_s,
				 tsbits, &mss_index);
	}
	if (r != COOKIE_OK) {
		if (!old)
			STAT_INC(w, cookie[r]);
		return false;
	}
	if (!worker_csum_ok(w, p, csum_partial))
		return true;
	STAT_INC(w, cookie[COOKIE_OK]);
	STAT_INC(w, ack_verified);
	SVC_STAT_INC(w, worker_service(w, svc), verified[DIALECT_CLASSIC]);
	/* What the SYN offered, as the cookie kept it. */
	st.mss = cookie_mss_value(p->family, mss_index);
	st.ts = tsbits & COOKIE_TS_PRESENT;
	st.sack = st.ts && (tsbits & COOKIE_TS_SACK);
	st.ws = st.ts && (tsbits & COOKIE_TS_WSCALE_MASK) !=
				 COOKIE_TS_WSCALE_NONE;
	st.c_ws = (uint8_t)(tsbits & COOKIE_TS_WSCALE_MASK);
	worker_profile(w, svc, p->family, &prof);
	st.adv_ws = prof.wscale;
	f = conn_open(w, svc, old, p, &st);
	if (!f)
		return true;
	if (svc->pol.delay_bind) {
		if (p->paylen || (p->flags & TCP_FIN))
			bind_client(w, svc, f, p, o, csum_partial);
		else
			guard_touch(w, f, true);
		return true;
	}
	/* The first segment may bring data, or a FIN: both wait for the
	 * backend in a hold slot. */
	if ((p->paylen || (p->flags & TCP_FIN)) &&
	    !handshake_hold(w, f, p, csum_partial))
		return true;
	backend_open(w, f);
	return true;
}

void
handshake_syn_start(struct worker *w, const struct service *svc,
		    const struct pkt *p, const struct tcpopt *o,
		    struct conn_start *st)
{
	struct cookie_tuple t;
	struct profile prof;

	worker_profile(w, svc, p->family, &prof);
	worker_cookie_tuple(&t, p);
	st->state = FLOW_SYN_SENT;
	st->cisn = p->seq;
	st->mss = o->has_mss ? o->mss : worker_default_mss(p->family);
	/* A keyed ISN, as for a cookie: nothing about it is guessable. */
	st->gisn = cookie_make(&w->keys, &t, p->seq, w->now_s,
			       cookie_mss_index(p->family, st->mss), 0);
	st->ts = o->has_ts && prof.ts;
	st->sack = o->sack_perm && prof.sack;
	st->ws = o->has_wscale && prof.ws;
	st->adv_ws = prof.wscale;
	st->c_ws = o->wscale;	/* at most 14: tcpopt_parse */
	st->gw_tsval = (uint32_t)w->now_ms;
	st->c_tsval = o->tsval;
	/* A SYN's window is unscaled; c_win is kept in the client's units. */
	st->c_win = (uint16_t)(p->win >> (st->ws ? st->c_ws : 0));
}

