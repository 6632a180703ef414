/*
 * A client's segment: its flow's state, or none, decides who takes it.
 */
#include "accept.h"
#include "admit.h"
#include "backend.h"
#include "bind.h"
#include "client.h"
#include "conn.h"
#include "guard.h"
#include "handshake.h"
#include "release.h"
#include "responder.h"
#include "splice.h"
#include "tfo.h"
#include "upstream.h"

/*
 * A service drained (tcpctl drain) is a closed port to new clients, so
 * that they try another server at once: a SYN gets the RST a closed port
 * sends, RFC 9293 §3.10.7.1 (seq 0, its SYN and data acknowledged); the
 * ACK of a handshake begun before gets conn_refuse()'s (seq from the ACK).  A
 * TCPCT client heeds only a guarded RST: responder_verify sends it.  Paced as
 * SYN-ACKs are, so that spoofed SYNs reflect no more RSTs than they would
 * SYN-ACKs.
 */
static void
drain_refuse(struct worker *w, unsigned service, const struct pkt *p)
{
	struct pkt_tcp_spec s = {
		.seq = 0, .ack = p->seq + 1 + p->paylen,
		.flags = TCP_RST | TCP_ACK,
	};

	pkt_tcp_reply(&s, p);
	if (!admit_synack(w, p))
		return;
	SVC_STAT_INC(w, service, drained);
	if (p->flags & TCP_SYN)
		worker_emit(w, &s);
	else
		conn_refuse(w, p);
}

/* A SYN: answered statelessly, unless it repeats a Fast Open SYN taken or
 * lands on a live flow's tuple. */
static enum verdict
client_syn(struct worker *w, const struct service *svc, struct flow *f,
	   struct pkt *p, const struct tcpopt *o, bool csum_partial)
{
	unsigned clen, service = worker_service(w, svc);
	enum tcpct_form form = tcpct_form(o, p->flags, &clen);
	bool tcpct = svc->pol.tcpct;

	STAT_INC(w, syn);
	if (p->flags & (TCP_ACK | TCP_RST | TCP_FIN)) {
		STAT_INC(w, syn_bad_flags);
		return VERDICT_DROP;
	}
	/* Our Fast Open SYN-ACK was lost: the client's SYN again, with its
	 * cookie and data or, once Linux's SYN timer has fired, with
	 * neither (RFC 7413 §4.2.2), gets the flow's own SYN-ACK; a fresh
	 * cookie would be a second ISN for one connection. */
	if (f && f->tfo_pending && p->seq == f->c_base) {
		STAT_INC(w, tfo_syn_repeated);
		tfo_synack(w, f, o->tsval);
		return VERDICT_DROP;
	}
	/* RFC 5961 §4: a SYN on a live connection's tuple is challenged, so
	 * that a blind one cannot begin a handshake that replaces it; a
	 * client that lost the connection answers the challenge with the
	 * RST that ends it.  A TCPCT SYN's cookie pair proves a new
	 * incarnation by itself. */
	if (f && !accept_reusable(f) &&
	    !(tcpct && form == TCPCT_COOKIE && o->has_ts)) {
		accept_syn(w, f);
		return VERDICT_DROP;
	}
	if (!f && worker_draining(w, service)) {
		drain_refuse(w, service, p);
		return VERDICT_DROP;
	}
	/* Spoofed SYNs must not turn us into a reflector. */
	if (!admit_synack(w, p))
		return VERDICT_DROP;
	if (tcpct && form == TCPCT_COOKIE) {
		STAT_INC(w, tcpct_syn);
		/* HACKING.md §1: TCPCT needs timestamps; without them the
		 * client gets a classic SYN-ACK, and no cookie in it tells it
		 * to carry on as plain TCP. */
		if (o->has_ts)
			return responder_synack(w, svc, p, o, clen);
		STAT_INC(w, tcpct_classic);
	}
	if (svc->pol.tfo && o->has_tfo) {
		enum tfo_syn t = tfo_syn(w, svc, p, o, csum_partial);

		if (t == TFO_TAKEN)
			return VERDICT_DROP;
		return handshake_synack(w, svc, p, o, t == TFO_COOKIE);
	}
	return handshake_synack(w, svc, p, o, false);
}

/* An acceptable segment of a live flow (accept_client): its state decides
 * who takes it. */
static enum verdict
client_flow(struct worker *w, const struct service *svc, struct flow *f,
	    struct pkt *p, struct tcpopt *o, bool csum_partial)
{
	/* RFC 6013's guard for the far server of a TCPCT connection. */
	bool up_guard = f->up == UP_CONN && upstream_guarded(f, p);

	if (f->up == UP_DONE)
		return upstream_local(w, f, p, o);
	if (f->tfo_pending && SEQ_GT(p->ack, f->g_base))
		conn_unpend(w, f);
	if (f->state == FLOW_RELEASING)
		return release_client(w, f, p, o, csum_partial);
	if (p->flags & TCP_RST) {
		if (f->state <= FLOW_SYN_SENT) {
			if (f->state == FLOW_SYN_SENT)
				worker_rst_backend(w, f, f->c_base + 1);
			conn_close(w, f, FLOW_RST_CLIENT);
			return VERDICT_DROP;
		}
		splice_c2b(w, f, p, o, csum_partial);
		if (up_guard)
			upstream_guard(w, f, p, o);
		release_check(w, f);
		conn_close(w, f, FLOW_RST_CLIENT);
		return VERDICT_MANGLED;
	}
	if (f->state == FLOW_BINDING) {
		bind_client(w, svc, f, p, o, csum_partial);
		return VERDICT_DROP;
	}
	if (f->state == FLOW_SYN_SENT) {
		if ((p->paylen || (p->flags & TCP_FIN)) &&
		    worker_csum_ok(w, p, csum_partial))
			handshake_hold(w, f, p, csum_partial);
		return VERDICT_DROP;
	}
	if (guard_too_old(w, f))
		return VERDICT_DROP;
	if (p->paylen && svc->kind == SERVICE_DNS) {
		/* The bytes are framed, so they must be the client's. */
		if (!worker_csum_ok(w, p, csum_partial) ||
		    guard_data(w, f, p->seq, p->data + p->payoff,
			       p->paylen) != GUARD_PASS)
			return VERDICT_DROP;
	}
	splice_c2b(w, f, p, o, csum_partial);
	if (up_guard)
		upstream_guard(w, f, p, o);
	release_check(w, f);
	return VERDICT_MANGLED;
}

enum verdict
client_segment(struct worker *w, const struct service *svc, struct pkt *p,
	       struct tcpopt *o, bool csum_partial)
{
	struct flow_key k = worker_client_key(p);
	unsigned service = worker_service(w, svc);
	bool tcpct = svc->pol.tcpct;
	enum tcpct_form form;
	unsigned clen;
	struct flow *f;

	f = flow_lookup(&w->ft, &k);
	if (p->flags & TCP_SYN)
		return client_syn(w, svc, f, p, o, csum_partial);
	form = tcpct_form(o, p->flags, &clen);
	/* Without ACK it is no handshake's end: dropped as ever. */
	if (!f && worker_draining(w, service) &&
	    (p->flags & (TCP_ACK | TCP_RST)) == TCP_ACK &&
	    !(tcpct && form == TCPCT_PAIR)) {
		drain_refuse(w, service, p);
		return VERDICT_DROP;
	}
	if (tcpct && form == TCPCT_PAIR &&
	    (!f || !f->tcpct || f->state >= FLOW_CLOSING) &&
	    responder_verify(w, svc, f, p, o, clen, csum_partial))
		return VERDICT_DROP;
	if (f && f->tcpct) {
		if (!responder_admit(w, f, p, o))
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
			handshake_verify(w, svc, NULL, p, o, csum_partial);
		}
		return VERDICT_DROP;
	}
	/* Once both sides have closed, the tuple is free for a new
	 * incarnation: the cookie decides.  On a live flow a cookie ACK
	 * is just an ACK of bytes never sent, refused below, so that a
	 * blind attacker's odds of ending it are RFC 5961's, not a
	 * cookie's. */
	if (accept_reusable(f) && (p->flags & (TCP_ACK | TCP_RST)) == TCP_ACK &&
	    handshake_verify(w, svc, f, p, o, csum_partial))
		return VERDICT_DROP;
	if (p->flags & TCP_RST)
		STAT_INC(w, rst_client);
	if (!accept_client(w, f, p))
		return VERDICT_DROP;
	f->c_ifindex = w->pkt_indev;
	return client_flow(w, svc, f, p, o, csum_partial);
}
