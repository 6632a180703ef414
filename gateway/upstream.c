/*
 * The TCPCT initiator for a resolver's far servers (upstream.h).
 */
#include <string.h>

#include <openssl/crypto.h>

#include "../nfq/bytes.h"
#include "admit.h"
#include "backend.h"
#include "backlog.h"
#include "conn.h"
#include "dnsmsg.h"
#include "overload.h"
#include "upstream.h"

/* The held query's segment, parsed. */
static bool
held(struct worker *w, const struct flow *f, struct pkt *hp)
{
	return f->hold >= 0 && w->hold.len[f->hold] &&
	       pkt_parse(hp, w->hold.buf[f->hold], w->hold.len[f->hold]) ==
	       PKT_OK;
}

/* What the TCPCT SYN carries: the held bytes when they are one whole
 * query (RFC 7766 §8 framing) that a SYN may carry (HACKING.md §1). */
static bool
syn_query(struct worker *w, const struct flow *f, const uint8_t **q,
	  uint16_t *qlen)
{
	const uint8_t *b;
	struct pkt hp;

	*q = NULL;
	*qlen = 0;
	if (!held(w, f, &hp) || hp.paylen > TCPCT_SYN_DATA_MAX ||
	    hp.paylen < DNSMSG_LEN_PREFIX + DNSMSG_HDR_LEN)
		return false;
	b = hp.data + hp.payoff;
	if (get16(b) != hp.paylen - DNSMSG_LEN_PREFIX ||
	    !dnsmsg_is_query(b + DNSMSG_LEN_PREFIX,
			     hp.paylen - DNSMSG_LEN_PREFIX))
		return false;
	*q = b;
	*qlen = (uint16_t)hp.paylen;
	return true;
}

static void
learn(struct worker *w, const struct flow *f, enum far_kind k)
{
	if (farcache_put(&w->far, f->key.family, &f->key.baddr, f->key.bport,
			 k, w->now_s))
		STAT_INC(w, upstream_cache_replaced);
}

/* HACKING.md §1 step 1: Timestamps and the initiator's Cookie, with the
 * query when it fits; in the resolver's name, its ISN and options, as
 * backend.c's SYN. */
static void
send_tcpct_syn(struct worker *w, const struct flow *f)
{
	struct tcpopt_spec os = {
		.mss = f->mss, .sack_perm = f->sack, .ts = true,
		.tsval = f->c_tsval, .wscale = f->ws, .wscale_shift = f->c_ws,
	};
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX];
	size_t n = tcpopt_build(opts, &os);
	const uint8_t *q;
	uint16_t qlen;

	if (!tcpct_put_cookie(opts, &n, sizeof(opts), f->ck, f->ck_len))
		return;
	worker_spec_to_backend(&s, f);
	s.seq = f->c_base;
	s.flags = TCP_SYN;
	/* A SYN's window is never scaled (RFC 7323 §2.2). */
	s.win = win_clamp((uint32_t)f->c_win << f->c_ws);
	s.opts = opts;
	s.optlen = n;
	if (syn_query(w, f, &q, &qlen)) {
		s.pay = q;
		s.paylen = qlen;
	}
	if (worker_emit(w, &s) == 0) {
		STAT_INC(w, backend_syn);
		STAT_INC(w, upstream_asked);
	}
}

void
upstream_open(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];
	enum far_kind k = farcache_get(&w->far, f->key.family, &f->key.baddr,
				       f->key.bport, w->now_s);
	uint8_t none[UPSTREAM_COOKIE_LEN] = { 0 };
	struct tcpct_cookie_in in;

	if (k == FAR_TCPCT)
		STAT_INC(w, upstream_cache_tcpct);
	else if (k == FAR_LEGACY)
		STAT_INC(w, upstream_cache_legacy);
	else
		STAT_INC(w, upstream_cache_miss);
	/* The initiator's cookie: keyed over the tuple and the ISN, so that
	 * no one off the path can make a responder's segment that
	 * carries it (RFC 6013 §3.5). */
	memset(&in, 0, sizeof(in));
	in.t.family = f->key.family;
	in.t.caddr = f->key.caddr;
	in.t.saddr = f->key.baddr;
	in.t.cport = f->key.cport;
	in.t.sport = f->key.bport;
	in.snd_nxt = f->c_base;
	in.tsval = f->c_tsval;
	in.ci = none;
	in.clen = UPSTREAM_COOKIE_LEN;
	if (k == FAR_LEGACY || !f->ts || !svc->pol.tcpct ||
	    cookie_tcpct_make(&w->keys, &in, w->now_s, f->ck) < 0) {
		if (k == FAR_LEGACY)
			STAT_INC(w, upstream_plain_cached);
		f->up = UP_PLAIN;
		backend_open(w, f);
		return;
	}
	f->ck_len = UPSTREAM_COOKIE_LEN;
	f->up = UP_ASKED;
	/* backend_open's start of the far half, but for its SYN. */
	f->b_ack = f->c_base + 1;
	f->bdns = (struct dnsframe){ .server = true };
	f->bdns_nxt = f->g_base + 1;
	overload_hold(w, f);
	backlog_admit(w, f, false);
	send_tcpct_syn(w, f);
	f->syn_tries = 1;
	worker_rto_arm(w, f, RTO_CLIENT);
}

/*
 * A segment to the far server in the third packet's form (HACKING.md §1
 * step 3): TSX in the option area; the timestamps, the Cookie-Pair and the
 * SYN's options again in the header extension; then len bytes of data.
 * seq and ack in the far server's space; tsecr its SYN-ACK's TSval, which
 * its cookie covers.
 */
static void
send_third(struct worker *w, const struct flow *f, uint32_t seq, uint32_t ack,
	   uint8_t flags, uint32_t tsecr, const uint8_t *data, size_t len)
{
	uint8_t extra[12], *x = extra;
	uint8_t body[TCPOPT_TSX_LEN + TCPCT_EXT_MAX + INJECT_BUF];
	struct tcpct_ext_spec e = {
		.tsval = f->c_tsval, .tsecr = tsecr, .ci = f->ck,
		.cr = f->ck + f->ck_len, .clen = f->ck_len, .extra = extra,
	};
	struct pkt_tcp_spec s = { 0 };
	size_t n, area;

	x[0] = TCPOPT_MSS;
	x[1] = TCPOPT_MSS_LEN;
	put16(x + 2, f->mss);
	x += 4;
	if (f->sack) {
		x[0] = TCPOPT_NOP;
		x[1] = TCPOPT_NOP;
		x[2] = TCPOPT_SACK_PERM;
		x[3] = TCPOPT_SACK_PERM_LEN;
		x += 4;
	}
	if (f->ws) {
		x[0] = TCPOPT_NOP;
		x[1] = TCPOPT_WSCALE;
		x[2] = TCPOPT_WSCALE_LEN;
		x[3] = f->c_ws;
		x += 4;
	}
	e.extra_len = (size_t)(x - extra);
	n = tcpct_ext_build(body, sizeof(body), &e, &area);
	if (!n || n + len > sizeof(body))
		return;
	if (len)
		memcpy(body + n, data, len);
	worker_spec_to_backend(&s, f);
	s.seq = seq;
	s.ack = ack;
	s.flags = flags;
	s.win = worker_backend_win(f);
	s.opts = body;
	s.optlen = area;
	s.pay = body + area;
	s.paylen = n - area + len;
	worker_emit(w, &s);
}

/* The held query in a TCPCT connection's third packet. */
static void
send_query(struct worker *w, const struct flow *f)
{
	struct pkt hp;

	if (held(w, f, &hp))
		send_third(w, f, f->c_base + 1, f->bisn + 1, TCP_ACK | TCP_PSH,
			   f->ts_out - f->ts_delta, hp.data + hp.payoff,
			   hp.paylen);
}

/* The far server answered oddly (its cookie ours, or of another size, data
 * that is no whole answer, the query taken but not answered): it is reset
 * and asked again over plain TCP, and known for legacy. */
static void
odd(struct worker *w, struct flow *f, const struct pkt *p)
{
	STAT_INC(w, upstream_odd);
	learn(w, f, FAR_LEGACY);
	worker_rst_backend(w, f, p->ack);
	f->up = UP_PLAIN;
	backend_syn_timer(w, f);
}

/* Step 5's answer: one whole DNS answer to the query, with its length. */
static bool
answer_ok(const struct pkt *p, const uint8_t *q)
{
	const uint8_t *a = p->data + p->payoff;

	return p->paylen >= DNSMSG_LEN_PREFIX + DNSMSG_HDR_LEN &&
	       p->paylen <= TCPCT_SYNACK_DATA_MAX &&
	       get16(a) == p->paylen - DNSMSG_LEN_PREFIX &&
	       dnsmsg_is_whole_answer(a + DNSMSG_LEN_PREFIX,
				      p->paylen - DNSMSG_LEN_PREFIX,
				      get16(q + DNSMSG_LEN_PREFIX));
}

static void
resend_answer(struct worker *w, const struct flow *f)
{
	uint8_t *buf = inject_slot(&w->ij);

	memcpy(buf, w->hold.buf[f->hold], w->hold.len[f->hold]);
	inject_commit(&w->ij, f->key.family, w->hold.len[f->hold]);
}

/* A transaction answered: the far server gets our ACK and FIN, which end
 * it there; the resolver the answer and a FIN from the far server's
 * address, held (in the query's slot) until it acknowledges them. */
static enum verdict
far_answered(struct worker *w, struct flow *f, const struct pkt *p,
	     const struct tcpopt *o, uint16_t qlen)
{
	struct tcpopt_spec os = { .ts = true, .tsval = f->ts_out,
				  .tsecr = f->c_tsval };
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX];
	uint32_t dlen = p->paylen;
	struct pkt out;
	size_t len;

	STAT_INC(w, backend_synack);
	f->bisn = p->seq;
	f->b_ifindex = w->pkt_indev;
	send_third(w, f, f->c_base + 1 + qlen, p->seq + 1 + dlen + 1,
		   TCP_ACK | TCP_FIN, o->tsval, NULL, 0);
	overload_unhold(w, f);
	backlog_done(w, f);
	worker_spec_to_client(&s, f);
	s.seq = f->g_base + 1;
	s.ack = f->c_base + 1 + qlen;
	s.flags = TCP_ACK | TCP_PSH | TCP_FIN;
	s.win = (uint16_t)(FLOW_WINDOW_MIN >> f->adv_ws);
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	s.pay = p->data + p->payoff;
	s.paylen = dlen;
	len = pkt_build_tcp(w->hold.buf[f->hold], INJECT_BUF, &s, &out);
	if (!len) {
		conn_reset(w, f, FLOW_FRAMING);
		return VERDICT_DROP;
	}
	w->hold.len[f->hold] = (uint16_t)len;
	STAT_INC(w, upstream_answered);
	f->up = UP_DONE;
	/* The resolver's view, for accept.c: all it sent taken, all we
	 * sent the answer and our FIN, a window no smaller than any. */
	f->taken = qlen;
	f->c_nxt = s.ack;
	f->b_ack = s.ack;
	f->b_fin = f->g_base + 1 + dlen;
	f->b_nxt = f->b_fin + 1;
	f->b_ws = 0;
	f->b_win = 0xffff;
	f->b_maxwin = FLOW_WINDOW_MIN;
	f->fin |= FLOW_FIN_BACKEND;
	flow_state_set(f, FLOW_ESTABLISHED);
	flow_state_set(f, FLOW_CLOSING);
	resend_answer(w, f);
	f->syn_tries = 0;
	worker_rto_arm(w, f, RTO_CLIENT);
	return VERDICT_DROP;
}

/* A responder cookie without an answer: a TCPCT connection, the query in
 * the third packet; the far half's numbers as backend.c takes a
 * backend's SYN-ACK, the resolver given the window. */
static enum verdict
far_connect(struct worker *w, struct flow *f, const struct pkt *p,
	    const struct tcpopt *o)
{
	uint16_t win;

	STAT_INC(w, backend_synack);
	STAT_INC(w, upstream_tcpct_conn);
	f->up = UP_CONN;
	f->bisn = p->seq;
	f->b_ifindex = w->pkt_indev;
	f->seq_delta = f->bisn - f->g_base;
	f->b_maxwin = p->win;	/* a SYN-ACK's window is never scaled */
	f->ts_out = f->gw_tsval;
	f->ts_delta = f->gw_tsval - o->tsval;
	if (f->ws && o->has_wscale) {
		f->b_ws = o->wscale;
		f->c_ws_b = f->c_ws;
	}
	f->b_win = (uint16_t)(p->win >> f->b_ws);
	/* What splice_c2b would note of the held query it sends. */
	if (SEQ_GT(f->c_base + 1 + f->taken, f->c_nxt))
		f->c_nxt = f->c_base + 1 + f->taken;
	send_query(w, f);
	win = win_clamp((uint32_t)p->win >> f->adv_ws);
	worker_send(w, f, false, f->g_base + 1, f->c_base + 1 + f->taken,
		    TCP_ACK, !win && p->win ? 1 : win, o->tsval + f->ts_delta,
		    f->c_tsval);
	flow_state_set(f, FLOW_ESTABLISHED);
	f->syn_tries = 0;
	worker_rto_arm(w, f, 0);
	return VERDICT_DROP;
}

enum verdict
upstream_far(struct worker *w, struct flow *f, struct pkt *p,
	     struct tcpopt *o, bool csum_partial)
{
	uint8_t fl = p->flags;
	const uint8_t *q, *ck;
	uint16_t qlen;
	bool with_q;
	unsigned clen;

	if (f->up == UP_DONE) {
		/* Our close was lost and the far server's SYN-ACK comes
		 * again: the close again.  Anything else (its guarded ACK
		 * of our FIN) ends what it never kept. */
		if ((fl & (TCP_SYN | TCP_ACK | TCP_FIN)) ==
		    (TCP_SYN | TCP_ACK | TCP_FIN) && p->seq == f->bisn &&
		    o->has_ts)
			send_third(w, f, f->c_base + 1 + f->taken,
				   p->seq + 1 + p->paylen + 1,
				   TCP_ACK | TCP_FIN, o->tsval, NULL, 0);
		return VERDICT_DROP;
	}
	if (f->up == UP_CONN) {
		/* Its SYN-ACK again: the third packet again. */
		if ((fl & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK) &&
		    p->seq == f->bisn) {
			STAT_INC(w, backend_synack_dup);
			send_query(w, f);
		}
		return VERDICT_DROP;
	}
	if (f->up != UP_ASKED)
		return backend_segment(w, f, p, o, csum_partial);
	with_q = syn_query(w, f, &q, &qlen);
	if (fl & TCP_RST) {
		if ((fl & TCP_ACK) && (p->ack == f->c_base + 1 ||
				       p->ack == f->c_base + 1 + qlen)) {
			STAT_INC(w, upstream_refused);
			STAT_INC(w, backend_refused);
			worker_rst_client(w, f, f->g_base + 1);
			conn_close(w, f, FLOW_REFUSED);
		}
		return VERDICT_DROP;
	}
	if ((fl & (TCP_SYN | TCP_ACK)) == TCP_ACK) {
		/* RFC 9293 §3.10.7.3: an old connection on the tuple, which
		 * backend.c resets before its (plain) SYN again. */
		f->up = UP_PLAIN;
		return backend_segment(w, f, p, o, csum_partial);
	}
	if ((fl & (TCP_SYN | TCP_ACK)) != (TCP_SYN | TCP_ACK) ||
	    (p->ack != f->c_base + 1 && p->ack != f->c_base + 1 + qlen) ||
	    !worker_csum_ok(w, p, csum_partial))
		return VERDICT_DROP;
	if (tcpct_form(o, fl, &clen) != TCPCT_COOKIE) {
		/* No TCPCT here: plain TCP, as if tcpctd were not there. */
		STAT_INC(w, upstream_plain);
		learn(w, f, FAR_LEGACY);
		if (p->ack != f->c_base + 1 || p->paylen || (fl & TCP_FIN)) {
			odd(w, f, p);
			return VERDICT_DROP;
		}
		f->up = UP_PLAIN;
		return backend_segment(w, f, p, o, csum_partial);
	}
	ck = pkt_tcp(p) + o->ck_off;
	/* RFC 6013 §3.5: our own cookie echoed, or one of another size, is
	 * no responder's; TCPCT needs timestamps. */
	if (clen != f->ck_len || !o->has_ts ||
	    CRYPTO_memcmp(ck, f->ck, clen) == 0) {
		odd(w, f, p);
		return VERDICT_DROP;
	}
	memcpy(f->ck + clen, ck, clen);
	learn(w, f, FAR_TCPCT);
	if (p->paylen || (fl & TCP_FIN)) {
		if (with_q && p->ack == f->c_base + 1 + qlen &&
		    (fl & TCP_FIN) && answer_ok(p, q))
			return far_answered(w, f, p, o, qlen);
		odd(w, f, p);
		return VERDICT_DROP;
	}
	if (p->ack != f->c_base + 1) {
		odd(w, f, p);
		return VERDICT_DROP;
	}
	return far_connect(w, f, p, o);
}

bool
upstream_far_admit(struct worker *w, struct flow *f, struct pkt *p,
		   struct tcpopt *o)
{
	/* HACKING.md §1 step 4, the responder's side of responder_admit:
	 * its FIN, RST and the ACK that ends the connection carry the
	 * pair, and any pair is ours. */
	bool last_ack = (f->fin & FLOW_FIN_BACKEND) &&
			(f->fin & FLOW_FIN_CLIENT) && (p->flags & TCP_ACK) &&
			SEQ_GT(p->ack, f->c_fin);
	bool guarded = (p->flags & (TCP_FIN | TCP_RST)) || last_ack;
	unsigned clen;

	if (o->ck_len &&
	    (tcpct_form(o, p->flags, &clen) != TCPCT_PAIR ||
	     clen != f->ck_len ||
	     CRYPTO_memcmp(pkt_tcp(p) + o->ck_off, f->ck,
			   (size_t)2 * clen) != 0)) {
		STAT_INC(w, upstream_bad_pair);
		return false;
	}
	if (guarded && !o->ck_len) {
		STAT_INC(w, upstream_unguarded);
		return false;
	}
	if (!o->has_tsx)
		return true;
	if (o->tsx_size != 1 || tcpct_strip(p, o) < 0) {
		STAT_INC(w, tcpct_ext_bad);
		return false;
	}
	return true;
}

bool
upstream_guarded(const struct flow *f, const struct pkt *p)
{
	return (p->flags & (TCP_FIN | TCP_RST)) ||
	       ((f->fin & FLOW_FIN_CLIENT) && (f->fin & FLOW_FIN_BACKEND) &&
		(p->flags & TCP_ACK) && SEQ_GT(p->ack, f->b_fin));
}

void
upstream_guard(struct worker *w, struct flow *f, struct pkt *p,
	       struct tcpopt *o)
{
	/* A GSO packet's extension would be cut up as data. */
	if (w->pkt_gso ||
	    tcpct_guard(p, o, f->ck, f->ck_len, QUEUE_PKT_ROOM) < 0) {
		STAT_INC(w, tcpct_guard_room);
		return;
	}
	STAT_INC(w, upstream_guarded);
}

enum verdict
upstream_local(struct worker *w, struct flow *f, const struct pkt *p,
	       const struct tcpopt *o)
{
	uint8_t done = FLOW_FIN_CLIENT | FLOW_FIN_BACKEND_ACKED;

	worker_client_seen(f, p, o);
	if (p->flags & TCP_RST) {
		conn_close(w, f, FLOW_RST_CLIENT);
		return VERDICT_DROP;
	}
	if (SEQ_GT(p->ack, f->c_ack))
		f->c_ack = p->ack;
	if (SEQ_GT(p->ack, f->b_fin) && !(f->fin & FLOW_FIN_BACKEND_ACKED)) {
		f->fin |= FLOW_FIN_BACKEND_ACKED;
		worker_hold_free(w, f);
	}
	if (p->paylen && SEQ_GT(p->seq + p->paylen, f->c_base + 1 + f->taken)) {
		/* A query after the answer's FIN gets no answer here: the
		 * RST tells the resolver at once, which asks again on a new
		 * connection (RFC 7766 §6.2.4), instead of waiting for it. */
		STAT_INC(w, upstream_local_late);
		worker_rst_client(w, f, p->ack);
		conn_close(w, f, FLOW_DONE);
		return VERDICT_DROP;
	}
	if ((p->flags & TCP_FIN) && !(f->fin & FLOW_FIN_CLIENT)) {
		f->fin |= FLOW_FIN_CLIENT | FLOW_FIN_CLIENT_ACKED;
		f->c_fin = p->seq + p->paylen;
		f->c_nxt = f->c_fin + 1;
		f->b_ack = f->c_nxt;
		admit_leave(w, f);
	}
	/* Its FIN, new or again, acknowledged as its server would. */
	if (p->flags & TCP_FIN)
		worker_send(w, f, false, f->b_nxt, f->c_nxt, TCP_ACK,
			    (uint16_t)(FLOW_WINDOW_MIN >> f->adv_ws), f->ts_out,
			    f->c_tsval);
	if ((f->fin & done) == done) {
		if (f->state == FLOW_CLOSING) {
			flow_state_set(f, FLOW_CLOSED);
			flow_timer_set(&w->ft, f, FLOW_TIMER_CLOSED, w->now_ms);
		}
	} else if ((f->fin & FLOW_FIN_BACKEND_ACKED) &&
		   f->timer != FLOW_TIMER_CLOSING) {
		flow_timer_set(&w->ft, f, FLOW_TIMER_CLOSING, w->now_ms);
	}
	return VERDICT_DROP;
}

bool
upstream_timed(const struct flow *f)
{
	return (f->up == UP_ASKED && f->state == FLOW_SYN_SENT) ||
	       f->up == UP_DONE || (f->up == UP_CONN && worker_awaits_ack(f));
}

void
upstream_timer(struct worker *w, struct flow *f)
{
	if (f->up == UP_ASKED) {
		/* No answer to the TCPCT SYN: a path that drops unknown
		 * options, or a silent server; the next SYN is plain. */
		STAT_INC(w, upstream_silent);
		learn(w, f, FAR_LEGACY);
		f->up = UP_PLAIN;
		backend_syn_timer(w, f);
		return;
	}
	if (f->up == UP_DONE && f->hold < 0) {
		flow_timer_set(&w->ft, f, FLOW_TIMER_CLOSING, w->now_ms);
		return;
	}
	if (f->syn_tries >= w->cfg->syn_retries) {
		STAT_INC(w, held_unacked);
		if (f->up == UP_CONN)
			worker_rst_backend(w, f, f->c_nxt);
		worker_rst_client(w, f, f->up == UP_DONE ? f->c_ack : f->b_nxt);
		conn_close(w, f, FLOW_HELD_UNACKED);
		return;
	}
	f->syn_tries++;
	if (f->up == UP_DONE) {
		STAT_INC(w, upstream_answer_resent);
		resend_answer(w, f);
		worker_rto_arm(w, f, RTO_CLIENT + f->syn_tries);
	} else {
		send_query(w, f);
		worker_rto_arm(w, f, f->syn_tries);
	}
}
