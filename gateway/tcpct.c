/*
 * The TCPCT responder (RFC 6013; PROTOCOLS.md §1) in front of a backend that
 * knows nothing of it.
 *
 * A SYN with a Cookie option gets a SYN-ACK with a responder cookie, and
 * nothing is kept.  The third packet brings back every input of that cookie
 * (ack − 1, seq − 1, the TSecr, the pair) and repeats every SYN option, so
 * the backend SYN carries the client's own MSS, window scale and SACK:
 * nothing is squeezed into an ISN.  From then on the flow is an ordinary
 * splice, except that a TCPCT segment is rewritten into the standard form
 * before the backend sees it, the client's guarded segments (FIN, RST, the
 * last ACK) must carry the flow's Cookie-Pair, and the backend's get it.
 */
#include <string.h>

#include <openssl/crypto.h>

#include "../nfq/bytes.h"
#include "worker.h"

/* Option bits no classic SYN-ACK uses (cookie.h), so that an ACK of a TCPCT
 * SYN-ACK never passes as a classic cookie: only the pair completes it. */
#define TCPCT_ISN_TSBITS	0x80

enum verdict
tcpct_synack(struct worker *w, const struct service *svc, struct pkt *p,
	     const struct tcpopt *o, unsigned clen)
{
	const struct inaddr caddr = p->src, saddr = p->dst;
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	struct tcpct_cookie_in in;
	uint8_t opts[TCP_OPT_MAX], cr[TCPCT_COOKIE_MAX];
	struct profile prof;
	size_t optlen;

	handshake_profile(w, svc, p->family, &prof);
	handshake_tuple(&in.t, p);
	os.mss = prof.mss;
	os.ts = true;
	os.tsval = (uint32_t)w->now_wall_ms;
	os.tsecr = o->tsval;
	os.sack_perm = o->sack_perm && prof.sack;
	os.wscale = o->has_wscale && prof.ws;
	os.wscale_shift = prof.wscale;
	optlen = tcpopt_build(opts, &os);

	s.family = p->family;
	s.src = &saddr;
	s.dst = &caddr;
	s.sport = p->dport;
	s.dport = p->sport;
	s.seq = cookie_make(&w->keys, &in.t, p->seq, w->now_s, 0,
			    TCPCT_ISN_TSBITS);
	s.ack = p->seq + 1;
	s.flags = TCP_SYN | TCP_ACK;
	s.win = prof.mss;	/* as for classic SYN-ACKs (handshake.c) */

	in.snd_nxt = s.seq + 1;
	in.rcv_nxt = p->seq + 1;
	in.tsval = os.tsval;
	in.ci = pkt_tcp(p) + o->ck_off;
	in.clen = clen;
	if (cookie_tcpct_make(&w->keys, &in, w->now_s, cr) < 0) {
		STAT_INC(w, key_errors);
		return VERDICT_DROP;
	}
	/* 20 bytes of base options and 20 of cookie at most: it fits. */
	if (!tcpct_put_cookie(opts, &optlen, sizeof(opts), cr, clen))
		return VERDICT_DROP;
	s.opts = opts;
	s.optlen = optlen;
	if (worker_emit(w, &s) == 0)
		STAT_INC(w, tcpct_synack);
	return VERDICT_DROP;
}

static bool
ext_ok(struct worker *w, const struct tcpopt *o)
{
	/* The responder's cookie covers a 32-bit TSval (§3.5). */
	if (o->has_tsx && o->tsx_size != 1) {
		STAT_INC(w, tcpct_ext_bad);
		return false;
	}
	return true;
}

/*
 * RFC 6013 §7 (PROTOCOLS.md §1 "Resets"): a guarded FIN for which no state
 * is left (our last ACK to an initiator in LAST-ACK was lost, say) gets a
 * RST that copies its Cookie-Pair and echoes its TSval, so the initiator
 * can tell it from a blind reset and close.  One RST per segment, never
 * one for a RST.
 */
static void
advisory_rst(struct worker *w, const struct pkt *p, const struct tcpopt *o,
	     unsigned clen)
{
	uint8_t hdr[TCPOPT_TSX_LEN + TCPCT_EXT_MAX];
	struct tcpct_ext_spec e = {
		.tsval = (uint32_t)w->now_wall_ms, .tsecr = o->tsval,
		.ci = pkt_tcp(p) + o->ck_off,
		.cr = pkt_tcp(p) + o->ck_off + clen, .clen = clen,
	};
	struct pkt_tcp_spec s = { 0 };
	size_t area, n;

	n = tcpct_ext_build(hdr, sizeof(hdr), &e, &area);
	if (!n)
		return;
	s.family = p->family;
	s.src = &p->dst;
	s.dst = &p->src;
	s.sport = p->dport;
	s.dport = p->sport;
	s.seq = p->ack;
	s.ack = p->seq + p->paylen + 1;
	s.flags = TCP_RST | TCP_ACK;
	s.opts = hdr;
	s.optlen = area;
	s.pay = hdr + area;	/* the extension: no sequence space */
	s.paylen = n - area;
	if (worker_emit(w, &s) == 0)
		STAT_INC(w, tcpct_advisory_rst);
}

bool
tcpct_verify(struct worker *w, const struct service *svc, struct flow *old,
	     struct pkt *p, struct tcpopt *o, unsigned clen, bool csum_partial)
{
	const uint8_t *ck = pkt_tcp(p) + o->ck_off;
	struct tcpct_cookie_in in;
	enum cookie_result r;
	struct profile prof;
	struct flow *f;

	if (!o->has_tsx)
		return false;	/* a pair outside a third packet's layout */
	if (!ext_ok(w, o))
		return true;
	handshake_tuple(&in.t, p);
	in.snd_nxt = p->ack;
	in.rcv_nxt = p->seq;
	in.tsval = o->tsecr;
	in.ci = ck;
	in.clen = clen;
	r = cookie_tcpct_check(&w->keys, &in, w->now_wall_ms, ck + clen);
	if (r != COOKIE_OK) {
		if (old)
			return false;	/* maybe the old flow's segment */
		if ((p->flags & (TCP_FIN | TCP_RST)) == TCP_FIN) {
			/* Not a third packet: the close of a connection we
			 * no longer hold. */
			advisory_rst(w, p, o, clen);
			return true;
		}
		if (r == COOKIE_EXPIRED)
			STAT_INC(w, tcpct_expired);
		else if (r == COOKIE_NO_KEY)
			STAT_INC(w, tcpct_no_key);
		else
			STAT_INC(w, tcpct_bad);
		return true;
	}
	if (!handshake_csum_ok(w, p, csum_partial))
		return true;
	STAT_INC(w, tcpct_verified);
	f = handshake_flow(w, svc, old, p);
	if (!f)
		return true;
	handshake_profile(w, svc, p->family, &prof);
	f->tcpct = true;
	f->ck_len = (uint8_t)clen;
	memcpy(f->ck, ck, (size_t)2 * clen);
	f->cisn = p->seq - 1;
	f->gisn = p->ack - 1;
	/* PROTOCOLS.md §1 step 3: the third packet repeats the SYN's
	 * options. */
	f->mss = o->has_mss ? o->mss : handshake_default_mss(p->family);
	f->ts = true;
	f->sack = o->sack_perm && prof.sack;
	f->ws = o->has_wscale && prof.ws;
	f->c_ws = f->ws ? o->wscale : 0;
	f->adv_ws = f->ws ? prof.wscale : 0;
	f->gw_tsval = o->tsecr;
	f->c_tsval = o->tsval;
	f->c_win = p->win;
	f->c_nxt = f->cisn + 1;
	f->b_nxt = f->gisn + 1;
	if (tcpct_strip(p, o) == 0 && (p->paylen || (p->flags & TCP_FIN)))
		handshake_hold(w, f, p, false);
	handshake_start(w, f);
	return true;
}

static bool
pair_matches(const struct flow *f, const struct pkt *p,
	     const struct tcpopt *o)
{
	unsigned clen;

	return tcpct_form(o, p->flags, &clen) == TCPCT_PAIR &&
	       clen == f->ck_len &&
	       CRYPTO_memcmp(pkt_tcp(p) + o->ck_off, f->ck, (size_t)2 * clen) == 0;
}

bool
tcpct_admit(struct worker *w, struct flow *f, struct pkt *p, struct tcpopt *o)
{
	/* PROTOCOLS.md §1 step 4: FIN, RST and the ACK that ends the connection are guarded.
	 * The last ACK acknowledges the backend's FIN after the client's own
	 * FIN went out. */
	bool last_ack = (f->fin & FLOW_FIN_CLIENT) &&
			(f->fin & FLOW_FIN_BACKEND) && (p->flags & TCP_ACK) &&
			SEQ_GT(p->ack, f->b_fin);
	bool guarded = (p->flags & (TCP_FIN | TCP_RST)) || last_ack;

	if (o->ck_len && !pair_matches(f, p, o)) {
		STAT_INC(w, tcpct_bad);
		return false;
	}
	if (guarded && !o->ck_len) {
		STAT_INC(w, tcpct_unguarded);
		return false;
	}
	if (!o->has_tsx)
		return true;
	if (!ext_ok(w, o) || tcpct_strip(p, o) < 0)
		return false;
	return true;
}

void
tcpct_b2c(struct worker *w, struct flow *f, struct pkt *p, struct tcpopt *o)
{
	bool last_ack = (f->fin & FLOW_FIN_BACKEND) &&
			(f->fin & FLOW_FIN_CLIENT) && (p->flags & TCP_ACK) &&
			SEQ_GT(p->ack, f->c_fin);

	if (!(p->flags & (TCP_FIN | TCP_RST)) && !last_ack)
		return;
	/* A GSO packet's extension would be cut up as data. */
	if (w->pkt_gso ||
	    tcpct_guard(p, o, f->ck, f->ck_len, QUEUE_PKT_ROOM) < 0) {
		STAT_INC(w, tcpct_guard_room);
		return;
	}
	STAT_INC(w, tcpct_guarded);
	/* The backend closed first and has just acknowledged the client's
	 * FIN: it sits in TIME-WAIT for the tuple.  The cookies already
	 * guard the tuple against old duplicates, so it goes: only the initiator keeps TIME-WAIT
	 * (PROTOCOLS.md §1 step 4). */
	if (last_ack && (f->fin & FLOW_FIN_BACKEND_FIRST) &&
	    w->gw->cfg->tcpct_timewait_rst) {
		worker_rst_backend(w, f, f->c_nxt);
		STAT_INC(w, tcpct_timewait_rst);
	}
}
