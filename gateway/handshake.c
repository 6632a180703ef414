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

	s.family = p->family;
	s.src = &saddr;
	s.dst = &caddr;
	s.sport = p->dport;
	s.dport = p->sport;
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
	int32_t slot;

	if (f->hold >= 0 && hold_fin(w, f, p))
		return true;
	if (f->hold >= 0 || p->seq != f->cisn + 1) {
		STAT_INC(w, early_dropped);
		return true;
	}
	if (!h->nfree || p->len > INJECT_BUF) {
		STAT_INC(w, hold_full);
		return true;
	}
	/* What is held will go on: it is framed now. */
	if (guard_data(w, f, p->seq, p->data + p->payoff, p->paylen) ==
	    GUARD_CLOSED)
		return false;
	slot = h->free[--h->nfree];
	memcpy(h->buf[slot], p->data, p->len);
	h->len[slot] = (uint16_t)p->len;
	if (csum_partial) {
		/* It leaves through a raw socket: finish its checksum. */
		struct pkt copy;

		if (pkt_parse(&copy, h->buf[slot], p->len) == PKT_OK)
			pkt_tcp_csum_set(&copy);
	}
	f->hold = slot;
	STAT_INC(w, held);
	return true;
}

bool
handshake_verify(struct worker *w, const struct service *svc,
		 struct flow *old, struct pkt *p, const struct tcpopt *o,
		 bool csum_partial)
{
	struct cookie_tuple t;
	struct profile prof;
	enum cookie_result r;
	unsigned mss_index = 0, tsbits = 0;
	const uint32_t cisn = p->seq - 1;
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
		r = cookie_check(&w->keys, &t, p->ack - 1, cisn, w->now_s,
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
	f = conn_open(w, svc, old, p,
		      svc->pol.delay_bind ? FLOW_BINDING : FLOW_SYN_SENT);
	if (!f)
		return true;
	worker_profile(w, svc, p->family, &prof);
	f->cisn = cisn;
	f->gisn = p->ack - 1;
	f->mss = cookie_mss_value(p->family, mss_index);
	f->ts = tsbits & COOKIE_TS_PRESENT;
	f->sack = f->ts && (tsbits & COOKIE_TS_SACK);
	f->ws = f->ts && (tsbits & COOKIE_TS_WSCALE_MASK) !=
				 COOKIE_TS_WSCALE_NONE;
	f->c_ws = f->ws ? (uint8_t)(tsbits & COOKIE_TS_WSCALE_MASK) : 0;
	f->adv_ws = f->ws ? prof.wscale : 0;
	f->gw_tsval = o->tsecr;
	f->ts_out = f->gw_tsval;
	f->c_tsval = o->tsval;
	f->c_win = p->win;
	f->c_nxt = cisn + 1;
	f->b_nxt = f->gisn + 1;
	f->c_ack = f->b_nxt;
	f->dns_nxt = f->c_nxt;
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
handshake_syn_flow(struct worker *w, const struct service *svc,
		   struct flow *f, const struct pkt *p, const struct tcpopt *o)
{
	struct cookie_tuple t;
	struct profile prof;
	uint16_t cmss = o->has_mss ? o->mss : worker_default_mss(p->family);

	worker_profile(w, svc, p->family, &prof);
	worker_cookie_tuple(&t, p);
	f->cisn = p->seq;
	/* A keyed ISN, as for a cookie: nothing about it is guessable. */
	f->gisn = cookie_make(&w->keys, &t, p->seq, w->now_s,
			      cookie_mss_index(p->family, cmss), 0);
	f->mss = cmss;
	f->ts = o->has_ts && prof.ts;
	f->sack = o->sack_perm && prof.sack;
	f->ws = o->has_wscale && prof.ws;
	f->c_ws = f->ws ? (o->wscale > TCPOPT_WSCALE_MAX ? TCPOPT_WSCALE_MAX
							 : o->wscale)
			: 0;
	f->adv_ws = f->ws ? prof.wscale : 0;
	f->gw_tsval = (uint32_t)w->now_ms;
	f->ts_out = f->gw_tsval;
	f->c_tsval = o->tsval;
	/* A SYN's window is unscaled; c_win is kept in the client's units. */
	f->c_win = (uint16_t)(p->win >> f->c_ws);
	f->c_nxt = p->seq + 1;
	f->b_nxt = f->gisn + 1;
	f->c_ack = f->b_nxt;
	f->dns_nxt = f->c_nxt;
}

int
handshake_hold_syn_data(struct worker *w, struct flow *f, const struct pkt *p,
			const struct tcpopt *o)
{
	struct hold_pool *h = &w->hold;
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX];
	struct pkt out;
	int32_t slot;

	if (!h->nfree || f->hold >= 0)
		return -1;
	slot = h->free[h->nfree - 1];
	os.ts = f->ts;
	os.tsval = o->tsval;
	os.tsecr = f->gw_tsval;
	worker_spec_to_backend(&s, f);
	s.seq = f->cisn + 1;
	s.ack = f->gisn + 1;
	s.flags = TCP_ACK | TCP_PSH;
	s.win = f->c_win;
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	s.pay = p->data + p->payoff;
	s.paylen = p->paylen;
	if (!pkt_build_tcp(h->buf[slot], INJECT_BUF, &s, &out))
		return -1;
	h->nfree--;
	h->len[slot] = (uint16_t)out.len;
	f->hold = slot;
	STAT_INC(w, held);
	return 0;
}
