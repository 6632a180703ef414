/*
 * The TCPCT responder (RFC 6013; HACKING.md §1) in front of a backend that
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
#include "admit.h"
#include "backend.h"
#include "conn.h"
#include "dnsmsg.h"
#include "guard.h"
#include "handshake.h"
#include "responder.h"

/* Option bits no classic SYN-ACK uses (cookie.h), so that an ACK of a TCPCT
 * SYN-ACK never passes as a classic cookie: only the pair completes it. */
#define TCPCT_ISN_TSBITS	0x80

/*
 * The SYN-ACK for syn: with data (a transaction's answer, dlen bytes with
 * their length prefix) it acknowledges the SYN's query too and carries FIN,
 * and its cookie covers the sequence numbers the client's ACK of all that
 * will carry.  Nothing is kept either way.
 */
static void
send_synack(struct worker *w, const struct txn_syn *syn, const uint8_t *data,
	    size_t dlen)
{
	const struct service *svc = &w->cfg->services[syn->service];
	struct tcpopt_spec os = { 0 };
	struct pkt_tcp_spec s = { 0 };
	struct tcpct_cookie_in in;
	uint8_t opts[TCP_OPT_MAX], cr[TCPCT_COOKIE_MAX];
	struct profile prof;
	size_t optlen;

	worker_profile(w, svc, syn->family, &prof);
	memset(&in, 0, sizeof(in));
	in.t.family = syn->family;
	in.t.caddr = syn->caddr;
	in.t.saddr = syn->saddr;
	in.t.cport = syn->cport;
	in.t.sport = syn->sport;
	os.mss = prof.mss;
	os.ts = true;
	os.tsval = (uint32_t)w->now_wall_ms;
	os.tsecr = syn->tsval;
	os.sack_perm = syn->sack && prof.sack;
	os.wscale = syn->has_ws && prof.ws;
	os.wscale_shift = prof.wscale;
	optlen = tcpopt_build(opts, &os);

	s.family = syn->family;
	s.src = &syn->saddr;
	s.dst = &syn->caddr;
	s.sport = syn->sport;
	s.dport = syn->cport;
	s.seq = cookie_make(&w->keys, &in.t, syn->cisn, w->now_s, 0,
			    TCPCT_ISN_TSBITS);
	s.ack = syn->cisn + 1 + (data ? syn->qlen : 0);
	s.flags = TCP_SYN | TCP_ACK | (data ? TCP_FIN | TCP_PSH : 0);
	s.win = prof.mss;	/* as for classic SYN-ACKs (handshake.c) */
	s.pay = data;
	s.paylen = dlen;

	/* The client's ACK will carry ack − 1 = our last sequence number
	 * and seq − 1 = its own. */
	in.snd_nxt = s.seq + 1 + (data ? (uint32_t)dlen + 1 : 0);
	in.rcv_nxt = s.ack;
	in.tsval = os.tsval;
	in.ci = syn->ci;
	in.clen = syn->clen;
	in.txn = data != NULL;
	if (cookie_tcpct_make(&w->keys, &in, w->now_s, cr) < 0) {
		STAT_INC(w, key_errors);
		return;
	}
	/* 20 bytes of base options and 20 of cookie at most: it fits. */
	if (!tcpct_put_cookie(opts, &optlen, sizeof(opts), cr, syn->clen))
		return;
	s.opts = opts;
	s.optlen = optlen;
	if (worker_emit(w, &s) == 0) {
		STAT_INC(w, tcpct_synack);
		SVC_STAT_INC(w, syn->service, synack[DIALECT_TCPCT]);
		if (data)
			STAT_INC(w, tcpct_txn_answered);
	}
}

/* Port 61440 + 64 · worker + a hash of the client's port and ISN. */
static uint16_t
txn_port(const struct worker *w, const struct txn_syn *syn)
{
	uint32_t h = (syn->cisn ^ (uint32_t)syn->cport * 0x9e3779b1u) >> 7;

	return (uint16_t)(TXN_PORT_BASE + w->id * TXN_PORTS + h % TXN_PORTS);
}

/*
 * A SYN with a whole DNS query: ask the backend over UDP, from the client's
 * address, and answer when it does.  Returns false when this SYN is not a
 * transaction tcpctd can take (it gets a plain SYN-ACK then).
 */
static bool
txn_start(struct worker *w, const struct txn_syn *syn, const uint8_t *q,
	  size_t qlen)
{
	uint8_t msg[TCPCT_SYN_DATA_MAX];
	struct pkt_tcp_spec s = { 0 };
	size_t mlen;
	struct txn *x;
	uint16_t uport;

	/* RFC 7766 §8: one whole message after its 2-byte length. */
	if (qlen < 2 + DNSMSG_HDR_LEN || get16(q) != qlen - 2 ||
	    qlen > sizeof(msg) + 2 || !dnsmsg_is_query(q + 2, qlen - 2)) {
		STAT_INC(w, tcpct_txn_refused);
		return false;
	}
	uport = txn_port(w, syn);
	if (txn_find_syn(&w->txn, syn, uport, get16(q + 2))) {
		STAT_INC(w, tcpct_txn_repeated);
		return true;	/* the answer is on its way */
	}
	mlen = qlen - 2;
	memcpy(msg, q + 2, mlen);
	x = txn_claim(&w->txn, syn->family, &syn->caddr, uport, get16(msg));
	if (!x) {
		STAT_INC(w, tcpct_txn_full);
		return false;
	}
	/* The backend leg may answer up to a SYN-ACK's worth over UDP. */
	if (dnsmsg_edns_at_least(msg, mlen, DNSMSG_EDNS_MIN) < 0) {
		STAT_INC(w, tcpct_txn_refused);
		return false;
	}
	s.family = syn->family;
	s.src = &syn->caddr;
	s.dst = &syn->saddr;
	s.sport = uport;
	s.dport = syn->sport;
	s.pay = msg;
	s.paylen = mlen;
	if (worker_emit_udp(w, &s) < 0)
		return false;
	x->syn = *syn;
	x->uport = uport;
	x->id = get16(msg);
	txn_commit(&w->txn, x, w->now_ms + w->cfg->txn_timeout);
	STAT_INC(w, tcpct_txn_asked);
	return true;
}

enum verdict
responder_synack(struct worker *w, const struct service *svc, struct pkt *p,
	     const struct tcpopt *o, unsigned clen)
{
	const struct config *cfg = w->cfg;
	struct txn_syn syn;

	memset(&syn, 0, sizeof(syn));
	syn.family = p->family;
	syn.caddr = p->src;
	syn.saddr = p->dst;
	syn.cport = p->sport;
	syn.sport = p->dport;
	syn.cisn = p->seq;
	syn.tsval = o->tsval;
	syn.mss = o->has_mss ? o->mss : worker_default_mss(p->family);
	syn.has_ws = o->has_wscale;
	syn.wscale = o->wscale;
	syn.sack = o->sack_perm;
	syn.clen = (uint8_t)clen;
	memcpy(syn.ci, pkt_tcp(p) + o->ck_off, clen);
	syn.service = (uint8_t)worker_service(w, svc);
	syn.qlen = (uint16_t)(p->paylen > 0xffff ? 0xffff : p->paylen);
	if (p->paylen && rules_takes_txn(cfg, svc) &&
	    p->paylen <= TCPCT_SYN_DATA_MAX &&
	    txn_start(w, &syn, p->data + p->payoff, p->paylen))
		return VERDICT_DROP;
	send_synack(w, &syn, NULL, 0);
	return VERDICT_DROP;
}

/* A port tcpctd asks backends from (txn_port), of any worker. */
static bool
txn_port_ours(const struct worker *w, uint16_t port)
{
	return port >= TXN_PORT_BASE &&
	       (unsigned)(port - TXN_PORT_BASE) < TXN_PORTS * w->cfg->queues;
}

enum verdict
responder_udp(struct worker *w, struct pkt *p)
{
	const uint8_t *msg = p->data + p->payoff;
	uint8_t data[TCPCT_SYNACK_DATA_MAX];
	struct txn *x = NULL;

	if (!txn_port_ours(w, p->dport) || p->paylen < DNSMSG_HDR_LEN)
		return VERDICT_ACCEPT;	/* not an answer to us */
	x = txn_find(&w->txn, p->family, &p->dst, p->dport, get16(msg));
	if (!x) {
		/* After txn-timeout, or again: the client's address may
		 * never have sent the SYN, and passed on over UDP this would
		 * reach it outside any budget.  To no transaction of ours,
		 * it is an ordinary client's, whose ephemeral port is in our
		 * range (Windows' and the BSDs' ranges hold it). */
		if (!txn_late(&w->txn, p->family, &p->dst, p->dport,
			      get16(msg), w->now_ms))
			return VERDICT_ACCEPT;
		STAT_INC(w, tcpct_txn_late);
		return VERDICT_DROP;
	}
	if (x->expires <= w->now_ms) {
		/* Its timer has not run yet: what the timer gives. */
		STAT_INC(w, tcpct_txn_late);
		responder_txn_timer(w, x);
		return VERDICT_DROP;
	}
	/* The whole answer must fit a SYN-ACK, be complete, and be within
	 * the client prefix's budget; else the client gets a handshake and
	 * asks the backend itself over TCP.  The SYN-ACK was counted
	 * against synack-rate when its SYN came (client_segment). */
	if (!dnsmsg_is_whole_answer(msg, p->paylen, x->id) ||
	    p->paylen + 2 > sizeof(data)) {
		STAT_INC(w, tcpct_txn_too_big);
		send_synack(w, &x->syn, NULL, 0);
	} else if (!admit_txn_budget(w, x->syn.family, &x->syn.caddr,
				     p->paylen + 2)) {
		STAT_INC(w, tcpct_txn_over_budget);
		send_synack(w, &x->syn, NULL, 0);
	} else {
		put16(data, (uint16_t)p->paylen);
		memcpy(data + 2, msg, p->paylen);
		send_synack(w, &x->syn, data, p->paylen + 2);
	}
	txn_release(&w->txn, x, w->now_ms + TXN_LATE_MS);
	return VERDICT_DROP;
}

void
responder_txn_timer(struct worker *w, struct txn *x)
{
	STAT_INC(w, tcpct_txn_timeout);
	send_synack(w, &x->syn, NULL, 0);
	txn_release(&w->txn, x, w->now_ms + TXN_LATE_MS);
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
 * Answers a client's FIN with a stateless segment of flags that carries its
 * Cookie-Pair and echoes its TSval (TSX and the extension, no sequence
 * space): seq is what it acknowledged, ack covers its data and FIN.
 * Returns 0, or -1 when nothing went out.
 */
static int
reply_guarded(struct worker *w, const struct pkt *p, const struct tcpopt *o,
	      unsigned clen, uint8_t flags)
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
		return -1;
	pkt_tcp_reply(&s, p);
	s.seq = p->ack;
	s.ack = p->seq + p->paylen + 1;
	s.flags = flags;
	/* Nothing more is coming: any window will do; none on a RST. */
	s.win = flags & TCP_RST ? 0 : p->win;
	s.opts = hdr;
	s.optlen = area;
	s.pay = hdr + area;
	s.paylen = n - area;
	return worker_emit(w, &s);
}

/*
 * RFC 6013 §7 (HACKING.md §1 "Resets"): a guarded FIN for which no state
 * is left (our last ACK to an initiator in LAST-ACK was lost, say) gets a
 * RST that copies its Cookie-Pair and echoes its TSval, so the initiator
 * can tell it from a blind reset and close.  One RST per segment, never
 * one for a RST.  Anyone can send such a FIN from any address: paced as
 * SYN-ACKs are, so that forged ones reflect no more than SYNs would.
 */
static void
advisory_rst(struct worker *w, const struct pkt *p, const struct tcpopt *o,
	     unsigned clen)
{
	if (admit_synack(w, p) &&
	    reply_guarded(w, p, o, clen, TCP_RST | TCP_ACK) == 0)
		STAT_INC(w, tcpct_advisory_rst);
}

/*
 * The client's ACK of a transaction's answer and FIN, verified by its pair:
 * the exchange is over.  Its own FIN (it closes at once, HACKING.md §1
 * step 5) is acknowledged with no state, guarded like any last ACK; since
 * nothing stops the same segment from coming again and again, paced as
 * SYN-ACKs are.
 */
static void
txn_close(struct worker *w, const struct pkt *p, const struct tcpopt *o,
	  unsigned clen)
{
	STAT_INC(w, tcpct_txn_closed);
	if ((p->flags & TCP_FIN) && admit_synack(w, p))
		reply_guarded(w, p, o, clen, TCP_ACK);
}

bool
responder_verify(struct worker *w, const struct service *svc, struct flow *old,
	     struct pkt *p, struct tcpopt *o, unsigned clen, bool csum_partial)
{
	const uint8_t *ck = pkt_tcp(p) + o->ck_off;
	unsigned service = worker_service(w, svc);
	/* HACKING.md §1 step 3: the third packet repeats the SYN's
	 * options; TCPCT needs timestamps. */
	struct conn_start st = {
		.state = FLOW_SYN_SENT,
		.cisn = p->seq - 1, .gisn = p->ack - 1,
		.gw_tsval = o->tsecr, .c_tsval = o->tsval, .c_win = p->win,
		.mss = o->has_mss ? o->mss : worker_default_mss(p->family),
		.ts = true, .c_ws = o->wscale,
	};
	struct tcpct_cookie_in in;
	enum cookie_result r;
	struct profile prof;
	struct flow *f;

	if (!o->has_tsx)
		return false;	/* a pair outside a third packet's layout */
	if (!ext_ok(w, o))
		return true;
	memset(&in, 0, sizeof(in));
	worker_cookie_tuple(&in.t, p);
	in.snd_nxt = p->ack;
	in.rcv_nxt = p->seq;
	in.tsval = o->tsecr;
	in.ci = ck;
	in.clen = clen;
	r = cookie_tcpct_check(&w->keys, &in, w->now_wall_ms, ck + clen);
	if (r != COOKIE_OK) {
		if (old)
			return false;	/* maybe the old flow's segment */
		in.txn = true;
		if (cookie_tcpct_check(&w->keys, &in, w->now_wall_ms,
				       ck + clen) == COOKIE_OK) {
			txn_close(w, p, o, clen);
			return true;
		}
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
	if (!worker_csum_ok(w, p, csum_partial))
		return true;
	if (!old && worker_draining(w, service)) {
		/* A drained service's closed port, said so that it heeds. */
		SVC_STAT_INC(w, service, drained);
		advisory_rst(w, p, o, clen);
		return true;
	}
	STAT_INC(w, tcpct_verified);
	SVC_STAT_INC(w, service, verified[DIALECT_TCPCT]);
	worker_profile(w, svc, p->family, &prof);
	st.sack = o->sack_perm && prof.sack;
	st.ws = o->has_wscale && prof.ws;
	st.adv_ws = prof.wscale;
	f = conn_open(w, svc, old, p, &st);
	if (!f)
		return true;
	f->tcpct = true;
	f->ck_len = (uint8_t)clen;
	memcpy(f->ck, ck, (size_t)2 * clen);
	if (tcpct_strip(p, o) == 0 && (p->paylen || (p->flags & TCP_FIN)))
		if (!handshake_hold(w, f, p, false))
			return true;
	backend_open(w, f);
	return true;
}

static bool
pair_matches(const struct flow *f, const struct pkt *p,
	     const struct tcpopt *o)
{
	unsigned clen;

	return tcpct_form(o, p->flags, &clen) == TCPCT_PAIR &&
	       clen == f->ck_len &&
	       CRYPTO_memcmp(pkt_tcp(p) + o->ck_off, f->ck,
			     (size_t)2 * clen) == 0;
}

bool
responder_admit(struct worker *w, struct flow *f, struct pkt *p,
		struct tcpopt *o)
{
	/* HACKING.md §1 step 4: FIN, RST and the ACK that ends the
	 * connection are guarded.  The last ACK acknowledges the backend's
	 * FIN after the client's own FIN went out. */
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
responder_b2c(struct worker *w, struct flow *f, struct pkt *p, struct tcpopt *o)
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
	 * guard the tuple against old duplicates, so it goes: only the
	 * initiator keeps TIME-WAIT (HACKING.md §1 step 4). */
	if (last_ack && (f->fin & FLOW_FIN_BACKEND_FIRST) &&
	    w->cfg->tcpct_timewait_rst) {
		worker_rst_backend(w, f, f->c_nxt);
		STAT_INC(w, tcpct_timewait_rst);
	}
}
