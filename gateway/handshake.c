/*
 * The handshake: SYN → cookie SYN-ACK with no state; ACK → cookie check,
 * flow, SYN to the backend; backend SYN-ACK → ACK to it, window to the
 * client.  HACKING.md, steps 1 to 4.
 */
#include <string.h>

#include "../nfq/bytes.h"
#include "accept.h"
#include "probe.h"
#include "worker.h"

/* RFC 9293 §3.7.1: the MSS to assume when a SYN carries none. */
#define DEFAULT_MSS_V4	536
#define DEFAULT_MSS_V6	1220


void
handshake_tuple(struct cookie_tuple *t, const struct pkt *p)
{
	t->family = p->family;
	t->caddr = p->src;
	t->saddr = p->dst;
	t->cport = p->sport;
	t->sport = p->dport;
}

struct flow_key
handshake_key(const struct pkt *p)
{
	struct flow_key k = {
		.family = p->family,
		.cport = p->sport,
		.bport = p->dport,
		.caddr = p->src,
		.baddr = p->dst,
	};

	return k;
}

uint16_t
handshake_default_mss(uint8_t family)
{
	return family == AF_INET ? DEFAULT_MSS_V4 : DEFAULT_MSS_V6;
}

void
handshake_profile(struct worker *w, const struct service *svc, uint8_t family,
		  struct profile *prof)
{
	unsigned idx = worker_service(w, svc);

	profile_unpack(atomic_load_explicit(&w->gw->profile[idx],
					    memory_order_relaxed),
		       family, prof);
}

static uint16_t
clamp_win(uint32_t w)
{
	return w > 0xffff ? 0xffff : (uint16_t)w;
}

/*
 * Step 1: answer a SYN with a cookie, remembering nothing (with tfo, a
 * Fast Open cookie too: tfo.c).  With synack_verdict the SYN-ACK is built over the SYN itself and goes back as
 * its verdict (the kernel routes it to the client); otherwise it is injected
 * and the SYN dropped.
 */
static enum verdict
send_synack(struct worker *w, const struct service *svc, struct pkt *p,
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

	handshake_profile(w, svc, p->family, &prof);
	cmss = o->has_mss ? o->mss : handshake_default_mss(p->family);
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
	handshake_tuple(&t, p);

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
	s.seq = f->cisn;
	s.flags = TCP_SYN;
	/* A SYN's window is never scaled (RFC 7323 §2.2). */
	s.win = clamp_win((uint32_t)f->c_win << f->c_ws);
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	if (worker_emit(w, &s) == 0)
		STAT_INC(w, backend_syn);
}

/* Checks the checksum of a data segment that worker_packet left alone. */
bool
handshake_csum_ok(struct worker *w, const struct pkt *p, bool csum_partial)
{
	if (!p->paylen || csum_partial || pkt_tcp_csum_ok(p))
		return true;
	STAT_INC(w, bad_csum);
	return false;
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

/*
 * Step 2 and 3: is this client ACK the end of one of our handshakes?  If so
 * the flow is made (replacing old, the tuple's previous entry, if any) and
 * the backend SYN sent; returns true.  Returns false when it is not.
 */
static bool
verify_ack(struct worker *w, const struct service *svc, struct flow *old,
	   struct pkt *p, const struct tcpopt *o, bool csum_partial)
{
	struct cookie_tuple t;
	struct profile prof;
	enum cookie_result r;
	unsigned mss_index = 0, tsbits = 0;
	const uint32_t cisn = p->seq - 1;
	struct flow *f;

	if (o->has_ts)
		tsbits = (o->tsecr & COOKIE_TS_BITS) | COOKIE_TS_PRESENT;
	handshake_tuple(&t, p);
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
	if (!handshake_csum_ok(w, p, csum_partial))
		return true;
	STAT_INC(w, cookie[COOKIE_OK]);
	STAT_INC(w, ack_verified);
	SVC_STAT_INC(w, worker_service(w, svc), verified[DIALECT_CLASSIC]);
	f = handshake_flow(w, svc, old, p);
	if (!f)
		return true;
	handshake_profile(w, svc, p->family, &prof);
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
		f->state = FLOW_BINDING;
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
	handshake_start(w, f);
	return true;
}

/* A verified client that may not have a flow is told at once.  RFC 9293
 * §3.10.7.1: a RST for an ACK takes its seq from the ACK.  A SYN (Fast
 * Open) is answered classically instead, and refused at its ACK. */
static void
refuse(struct worker *w, const struct pkt *p)
{
	struct pkt_tcp_spec s = {
		.family = p->family, .src = &p->dst, .dst = &p->src,
		.sport = p->dport, .dport = p->sport, .seq = p->ack,
		.flags = TCP_RST,
	};

	if (!(p->flags & TCP_SYN))
		worker_emit(w, &s);
}

/*
 * A service drained (tcpctl drain) is a closed port to new clients, so
 * that they try another server at once: a SYN gets the RST a closed port
 * sends, RFC 9293 §3.10.7.1 (seq 0, its SYN and data acknowledged); the
 * ACK of a handshake begun before gets refuse()'s (seq from the ACK).  A
 * TCPCT client heeds only a guarded RST: tcpct_verify sends it.  Paced as
 * SYN-ACKs are, so that spoofed SYNs reflect no more RSTs than they would
 * SYN-ACKs.
 */
static void
drain_refuse(struct worker *w, unsigned service, const struct pkt *p)
{
	struct pkt_tcp_spec s = {
		.family = p->family, .src = &p->dst, .dst = &p->src,
		.sport = p->dport, .dport = p->sport, .seq = 0,
		.ack = p->seq + 1 + p->paylen, .flags = TCP_RST | TCP_ACK,
	};

	if (!guard_synack(w, p))
		return;
	SVC_STAT_INC(w, service, drained);
	if (p->flags & TCP_SYN)
		worker_emit(w, &s);
	else
		refuse(w, p);
}

struct flow *
handshake_flow(struct worker *w, const struct service *svc, struct flow *old,
	       const struct pkt *p)
{
	unsigned idx = worker_service(w, svc);
	struct flow_key k = handshake_key(p);
	bool evicted;
	struct flow *f;

	if (old) {
		/* A new incarnation replaces what is left of the old one; the
		 * backend's half (or its TIME-WAIT) goes with a RST. */
		if (old->state > FLOW_BINDING)
			worker_rst_backend(w, old, old->c_nxt);
		worker_release(w, old, FLOW_REPLACED);
		STAT_INC(w, replaced);
	}
	switch (guard_admit(w, svc, p)) {
	case GUARD_ADMITTED:
		break;
	case GUARD_DEFERRED:
		return NULL;	/* as if lost: no RST */
	case GUARD_REFUSED:
		refuse(w, p);
		return NULL;
	}
	f = flow_insert(&w->ft, &k, &evicted);
	if (!f) {
		/* The table is full: refused as cleanly as by a limit, and
		 * the flows in it go on. */
		guard_unadmit(w, idx, p->family, &p->src);
		STAT_INC(w, flow_full);
		refuse(w, p);
		return NULL;
	}
	f->service = (uint8_t)idx;
	f->counted = true;
	f->born = w->now_ms;
	f->state = FLOW_SYN_SENT;
	return f;
}

void
handshake_syn_flow(struct worker *w, const struct service *svc,
		   struct flow *f, const struct pkt *p, const struct tcpopt *o)
{
	struct cookie_tuple t;
	struct profile prof;
	uint16_t cmss = o->has_mss ? o->mss : handshake_default_mss(p->family);

	handshake_profile(w, svc, p->family, &prof);
	handshake_tuple(&t, p);
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

void
handshake_start(struct worker *w, struct flow *f)
{
	/* The backend's half starts here: nothing of the client's is
	 * acknowledged yet, none of its answers seen. */
	f->b_ack = f->cisn + 1;
	f->bdns = (struct dnsframe){ .server = true };
	f->bdns_nxt = f->gisn + 1;
	overload_hold(w, f);
	backlog_admit(w, f, false);
	send_backend_syn(w, f);
	f->syn_tries = 1;
	worker_rto_arm(w, f, 0);
}

enum verdict
handshake_client(struct worker *w, const struct service *svc, struct pkt *p,
		 struct tcpopt *o, bool csum_partial)
{
	struct flow_key k = handshake_key(p);
	unsigned service = worker_service(w, svc);
	bool tcpct = svc->pol.tcpct;
	bool drain = worker_draining(w, service);
	enum tcpct_form form;
	unsigned clen;
	struct flow *f;

	form = tcpct_form(o, p->flags, &clen);
	f = flow_lookup(&w->ft, &k);
	if (p->flags & TCP_SYN) {
		STAT_INC(w, syn);
		if (p->flags & (TCP_ACK | TCP_RST | TCP_FIN)) {
			STAT_INC(w, syn_bad_flags);
			return VERDICT_DROP;
		}
		/* Our Fast Open SYN-ACK was lost: the client's SYN again,
		 * with its cookie and data or, once Linux's SYN timer has
		 * fired, with neither (RFC 7413 §4.2.2), gets the flow's
		 * own SYN-ACK; a fresh cookie would be a second ISN for
		 * one connection. */
		if (f && f->tfo_pending && p->seq == f->cisn) {
			STAT_INC(w, tfo_syn_repeated);
			tfo_synack(w, f, o->tsval);
			return VERDICT_DROP;
		}
		/* RFC 5961 §4: a SYN on a live connection's tuple is
		 * challenged, so that a blind one cannot begin a handshake
		 * that replaces it; a client that lost the connection
		 * answers the challenge with the RST that ends it.  A TCPCT
		 * SYN's cookie pair proves a new incarnation by itself. */
		if (f && !accept_reusable(f) &&
		    !(tcpct && form == TCPCT_COOKIE && o->has_ts)) {
			accept_syn(w, f);
			return VERDICT_DROP;
		}
		if (drain && !f) {
			drain_refuse(w, service, p);
			return VERDICT_DROP;
		}
		/* Spoofed SYNs must not turn us into a reflector. */
		if (!guard_synack(w, p))
			return VERDICT_DROP;
		if (tcpct && form == TCPCT_COOKIE) {
			STAT_INC(w, tcpct_syn);
			/* HACKING.md §1: TCPCT needs timestamps; without
			 * them the client gets a classic SYN-ACK, and no
			 * cookie in it tells it to carry on as plain TCP. */
			if (o->has_ts)
				return tcpct_synack(w, svc, p, o, clen);
			STAT_INC(w, tcpct_classic);
		}
		if (svc->pol.tfo && o->has_tfo) {
			enum tfo_syn t = tfo_syn(w, svc, p, o, csum_partial);

			if (t == TFO_TAKEN)
				return VERDICT_DROP;
			return send_synack(w, svc, p, o, t == TFO_COOKIE);
		}
		return send_synack(w, svc, p, o, false);
	}
	/* Without ACK it is no handshake's end: dropped as ever. */
	if (drain && !f && (p->flags & (TCP_ACK | TCP_RST)) == TCP_ACK &&
	    !(tcpct && form == TCPCT_PAIR)) {
		drain_refuse(w, service, p);
		return VERDICT_DROP;
	}
	if (tcpct && form == TCPCT_PAIR &&
	    (!f || !f->tcpct || f->state >= FLOW_CLOSING) &&
	    tcpct_verify(w, svc, f, p, o, clen, csum_partial))
		return VERDICT_DROP;
	if (f && f->tcpct) {
		if (!tcpct_admit(w, f, p, o))
			return VERDICT_DROP;
	} else if (o->has_tsx) {
		/* A header extension no flow of ours expects. */
		STAT_INC(w, tcpct_bad);
		return VERDICT_DROP;
	}
	if (!f) {
		if (p->flags & TCP_RST) {
			STAT_INC(w, rst_client);
			STAT_INC(w, stray_client);
		} else if (!(p->flags & TCP_ACK)) {
			STAT_INC(w, no_ack_flag);
		} else {
			verify_ack(w, svc, NULL, p, o, csum_partial);
		}
		return VERDICT_DROP;
	}
	/* Once both sides have closed, the tuple is free for a new
	 * incarnation: the cookie decides.  On a live flow a cookie ACK
	 * is just an ACK of bytes never sent, refused below, so that a
	 * blind attacker's odds of ending it are RFC 5961's, not a
	 * cookie's. */
	if (accept_reusable(f) && (p->flags & (TCP_ACK | TCP_RST)) == TCP_ACK &&
	    verify_ack(w, svc, f, p, o, csum_partial))
		return VERDICT_DROP;
	if (p->flags & TCP_RST)
		STAT_INC(w, rst_client);
	if (!accept_client(w, f, p))
		return VERDICT_DROP;
	if (f->tfo_pending && SEQ_GT(p->ack, f->gisn))
		tfo_unpend(w, f);
	if (f->state == FLOW_RELEASING)
		return release_client(w, f, p, o, csum_partial);
	if (p->flags & TCP_RST) {
		if (f->state <= FLOW_SYN_SENT) {
			if (f->state == FLOW_SYN_SENT)
				worker_rst_backend(w, f, f->cisn + 1);
			worker_release(w, f, FLOW_RST_CLIENT);
			return VERDICT_DROP;
		}
		splice_c2b(w, f, p, o, csum_partial);
		worker_release(w, f, FLOW_RST_CLIENT);
		return VERDICT_MANGLED;
	}
	if (f->state == FLOW_BINDING) {
		bind_client(w, svc, f, p, o, csum_partial);
		return VERDICT_DROP;
	}
	if (f->state == FLOW_SYN_SENT) {
		if ((p->paylen || (p->flags & TCP_FIN)) &&
		    handshake_csum_ok(w, p, csum_partial))
			handshake_hold(w, f, p, csum_partial);
		return VERDICT_DROP;
	}
	if (guard_too_old(w, f))
		return VERDICT_DROP;
	if (p->paylen && svc->kind == SERVICE_DNS) {
		/* The bytes are framed, so they must be the client's. */
		if (!handshake_csum_ok(w, p, csum_partial) ||
		    guard_data(w, f, p->seq, p->data + p->payoff,
			       p->paylen) != GUARD_PASS)
			return VERDICT_DROP;
	}
	splice_c2b(w, f, p, o, csum_partial);
	return VERDICT_MANGLED;
}

static void
send_backend_ack(struct worker *w, const struct flow *f, uint32_t tsecr)
{
	worker_send(w, f, true, f->cisn + 1, f->bisn + 1, TCP_ACK,
		    worker_backend_win(f), f->c_tsval, tsecr);
}

/* The held segment goes to the backend translated, completing its
 * handshake: its ACK acknowledges the backend's SYN.  Fast Open data was
 * acknowledged to the client already, so its slot stays until the backend
 * acknowledges it (tfo_backend_ack) and it is sent again when lost. */
bool
handshake_send_held(struct worker *w, struct flow *f)
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

static void
send_client_window(struct worker *w, const struct flow *f, uint16_t synwin,
		   uint32_t b_tsval)
{
	/* The SYN-ACK's window is unscaled; the client scales ours. */
	uint16_t win = clamp_win(synwin >> f->adv_ws);

	worker_send(w, f, false, f->gisn + 1, f->cisn + 1 + f->taken, TCP_ACK,
		    !win && synwin ? 1 : win, b_tsval + f->ts_delta,
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
		worker_rst_backend(w, f, f->cisn + 1);
		worker_rst_client(w, f, f->gisn + 1);
		worker_release(w, f, FLOW_OPTIONS);
		return VERDICT_DROP;
	}
	f->bisn = p->seq;
	f->seq_delta = f->bisn - f->gisn;
	f->b_maxwin = p->win;	/* a SYN-ACK's window is never scaled */
	f->ts_out = f->gw_tsval;
	if (f->ts)
		f->ts_delta = f->gw_tsval - o->tsval;
	if (f->ws && o->has_wscale) {
		f->b_ws = o->wscale;
		f->c_ws_b = f->c_ws;
	}
	f->b_win = (uint16_t)(p->win >> f->b_ws);
	if (!handshake_send_held(w, f))
		send_backend_ack(w, f, o->tsval);
	send_client_window(w, f, p->win, o->tsval);
	f->state = FLOW_ESTABLISHED;
	if (worker_awaits_ack(f)) {
		f->syn_tries = 0;
		worker_rto_arm(w, f, f->tfo_pending ? RTO_CLIENT : 0);
	} else {
		guard_touch(w, f, true);
	}
	return VERDICT_DROP;
}

enum verdict
handshake_backend(struct worker *w, struct flow *f, struct pkt *p,
		  const struct tcpopt *o, bool csum_partial)
{
	uint8_t fl = p->flags;

	(void)csum_partial;
	if (f->state != FLOW_SYN_SENT) {
		/* Our ACK was lost and the backend repeats its SYN-ACK. */
		if ((fl & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK) &&
		    p->seq == f->bisn) {
			STAT_INC(w, backend_synack_dup);
			if (!handshake_send_held(w, f))
				send_backend_ack(w, f,
						 o->has_ts ? o->tsval : 0);
		}
		return VERDICT_DROP;
	}
	if (fl & TCP_RST) {
		if ((fl & TCP_ACK) && p->ack == f->cisn + 1) {
			STAT_INC(w, backend_refused);
			worker_rst_client(w, f, f->gisn + 1);
			worker_release(w, f, FLOW_REFUSED);
		}
		return VERDICT_DROP;
	}
	if ((fl & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK) &&
	    p->ack == f->cisn + 1)
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
handshake_syn_timer(struct worker *w, struct flow *f)
{
	if (f->state == FLOW_RELEASING) {
		release_timer(w, f);
		return;
	}
	if (f->state != FLOW_SYN_SENT) {
		tfo_ack_timer(w, f);
		return;
	}
	if (f->syn_tries > w->cfg->syn_retries) {
		worker_rst_client(w, f, f->gisn + 1);
		worker_release(w, f, FLOW_SYN_TIMEOUT);
		return;
	}
	send_backend_syn(w, f);
	STAT_INC(w, backend_syn_retrans);
	worker_rto_arm(w, f, f->syn_tries++);
}
