/*
 * The service's policy applied to its connections (PROTOCOLS.md §4): who
 * may have one (per-client counts and rates, limit.h), how long one may sit
 * idle, stall in a DNS message or live, and what a DNS client may send.
 * A connection that breaks a limit is reset on both sides, so that the
 * backend's slot is free at once, and released with the reason.
 *
 * A connection is counted per client address and prefix twice: among all
 * of the client's (max-per-addr, max-per-prefix, off by default) and,
 * until its first whole DNS message, among its pending ones
 * (max-pending-per-addr, max-pending-per-prefix; DNS services only).
 * What holds connections without asking (handshake and silence, half a
 * query, a storm of them) holds pending ones, until the idle or message
 * clock ends them.  At a pending cap the segment that would make one more
 * is dropped, as if lost, not refused (but a FIN): the client's TCP sends
 * it again, and the segment that brings its whole first query completes
 * the handshake as well (it carries the cookie) and is not pending.  So a
 * client that asks is never turned away by those caps, however many
 * handshakes it completes at once; one that does not holds nothing more.
 */
#include "worker.h"

static uint64_t
cutoff(uint64_t now, uint64_t timeout_ms)
{
	return now > timeout_ms ? now - timeout_ms : 0;
}

static struct limit_key
key_of(const struct worker *w, enum limit_kind kind, unsigned service,
       uint8_t family, const struct inaddr *addr)
{
	const struct config *cfg = w->cfg;

	return limit_key(kind, service, family, addr,
			 family == AF_INET ? cfg->prefix4 : cfg->prefix6);
}

/* The counts a client's connection is in: all of them, then the pending
 * ones, each per address and per prefix. */
enum { COUNT_ADDR, COUNT_PREFIX, COUNT_PENDING_ADDR, COUNT_PENDING_PREFIX,
       COUNT_MAX };

static const enum limit_kind count_kind[COUNT_MAX] = {
	[COUNT_ADDR] = LIMIT_ADDR,
	[COUNT_PREFIX] = LIMIT_PREFIX,
	[COUNT_PENDING_ADDR] = LIMIT_PENDING_ADDR,
	[COUNT_PENDING_PREFIX] = LIMIT_PENDING_PREFIX,
};

/* Takes the client out of counts [from, to). */
static void
leave(struct worker *w, unsigned service, uint8_t family,
      const struct inaddr *caddr, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		struct limit_key k = key_of(w, count_kind[i], service, family,
					    caddr);

		limit_leave(&w->gw->limits, &k);
	}
}

enum guard_admission
guard_admit(struct worker *w, const struct service *svc, const struct pkt *p)
{
	/* Counted as pending even when it brings its whole query, until
	 * guard_data frames it: the counts stay the same whatever the kind
	 * (a generic service's connections stay pending). */
	bool pending = svc->kind == SERVICE_DNS &&
		       !(p->paylen && dnsframe_begins_whole(p->data + p->payoff,
							   p->paylen));
	const unsigned max[COUNT_MAX] = {
		[COUNT_ADDR] = svc->pol.max_per_addr,
		[COUNT_PREFIX] = svc->pol.max_per_prefix,
		[COUNT_PENDING_ADDR] = pending ? svc->pol.max_pending_per_addr
					       : 0,
		[COUNT_PENDING_PREFIX] = pending ?
					 svc->pol.max_pending_per_prefix : 0,
	};
	unsigned idx = worker_service(w, svc), i;
	struct limits *l = &w->gw->limits;
	struct limit_key kr = key_of(w, LIMIT_CONN_RATE, idx, p->family,
				     &p->src);

	if (!limit_rate(l, &kr, w->now_s, svc->pol.conn_rate)) {
		STAT_INC(w, refused_rate);
		return GUARD_REFUSED;
	}
	for (i = 0; i < COUNT_MAX; i++) {
		struct limit_key k = key_of(w, count_kind[i], idx, p->family,
					    &p->src);

		if (!limit_enter(l, &k, max[i]))
			break;
	}
	if (i == COUNT_MAX)
		return GUARD_ADMITTED;
	leave(w, idx, p->family, &p->src, 0, i);
	switch (i) {
	case COUNT_ADDR:
		STAT_INC(w, refused_addr);
		return GUARD_REFUSED;
	case COUNT_PREFIX:
		STAT_INC(w, refused_prefix);
		return GUARD_REFUSED;
	case COUNT_PENDING_ADDR:
		STAT_INC(w, deferred_pending_addr);
		break;
	default:
		STAT_INC(w, deferred_pending_prefix);
		break;
	}
	/* A FIN's client is leaving: the RST spares it sending it again. */
	return p->flags & TCP_FIN ? GUARD_REFUSED : GUARD_DEFERRED;
}

bool
guard_synack(struct worker *w, const struct pkt *p)
{
	/* One count for all services: what a reflected flood costs its
	 * victim is the sum of them. */
	struct limit_key k = key_of(w, LIMIT_SYNACK_RATE, 0, p->family,
				    &p->src);

	if (limit_rate(&w->gw->limits, &k, w->now_s, w->cfg->synack_rate))
		return true;
	STAT_INC(w, synack_capped);
	return false;
}

void
guard_unadmit(struct worker *w, unsigned service, uint8_t family,
	      const struct inaddr *caddr)
{
	leave(w, service, family, caddr, 0, COUNT_MAX);
}

void
guard_leave(struct worker *w, struct flow *f)
{
	if (!f->counted)
		return;
	f->counted = false;
	leave(w, f->service, f->key.family, &f->key.caddr, 0,
	      f->asked ? COUNT_PENDING_ADDR : COUNT_MAX);
}

/* The client's first whole DNS message: f is no longer pending. */
static void
asked(struct worker *w, struct flow *f)
{
	f->asked = true;
	if (f->counted)
		leave(w, f->service, f->key.family, &f->key.caddr,
		      COUNT_PENDING_ADDR, COUNT_MAX);
}

void
guard_close(struct worker *w, struct flow *f, enum flow_reason r)
{
	if (f->state == FLOW_BINDING) {
		/* No backend connection yet.  Our FIN, if sent, took a seq:
		 * the client is past it once it acknowledged it, else one
		 * of the two is exact (RFC 5961 §3.2). */
		if (f->fin & FLOW_FIN_BACKEND)
			worker_rst_client(w, f, f->gisn + 2);
		if (!(f->fin & FLOW_FIN_BACKEND_ACKED))
			worker_rst_client(w, f, f->gisn + 1);
	} else if (f->state == FLOW_SYN_SENT) {
		/* The backend has our SYN at most. */
		worker_rst_backend(w, f, f->cisn + 1);
		worker_rst_client(w, f, f->gisn + 1);
	} else if (f->state == FLOW_RELEASING) {
		release_rst(w, f);
	} else {
		worker_rst_backend(w, f, f->c_nxt);
		worker_rst_client(w, f, f->b_nxt);
	}
	worker_release(w, f, r);
}

enum guard_verdict
guard_data(struct worker *w, struct flow *f, uint32_t seq, const uint8_t *b,
	   uint32_t len)
{
	const struct service *svc = &w->cfg->services[f->service];
	uint32_t skip = f->dns_nxt - seq;
	enum dnsframe_verdict v;

	if (svc->kind != SERVICE_DNS || !len)
		return GUARD_PASS;
	/* Only bytes in order can be framed: a segment past a hole waits
	 * for the client to send the hole (we drop it; it comes again). */
	if (SEQ_GT(seq, f->dns_nxt)) {
		STAT_INC(w, dns_out_of_order);
		return GUARD_DROP;
	}
	if (skip >= len)
		return GUARD_PASS;	/* all of it seen before */
	v = dnsframe_feed(&f->dns, b + skip, len - skip);
	f->dns_nxt = seq + len;
	if (v != DNSFRAME_OK) {
		if (v == DNSFRAME_SHORT)
			STAT_INC(w, dns_short);
		else
			STAT_INC(w, dns_not_request);
		guard_close(w, f, FLOW_FRAMING);
		return GUARD_CLOSED;
	}
	if (svc->pol.max_queries && f->dns.started > svc->pol.max_queries) {
		STAT_INC(w, dns_max_queries);
		guard_close(w, f, FLOW_MAX_QUERIES);
		return GUARD_CLOSED;
	}
	if (!f->asked && dnsframe_whole(&f->dns))
		asked(w, f);
	return GUARD_PASS;
}

bool
guard_too_old(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];

	if (!svc->pol.max_lifetime ||
	    w->now_ms - f->born < (uint64_t)svc->pol.max_lifetime * 1000)
		return false;
	STAT_INC(w, lifetime_closed);
	guard_close(w, f, FLOW_LIFETIME);
	return true;
}

void
guard_touch(struct worker *w, struct flow *f, bool progress)
{
	const struct service *svc = &w->cfg->services[f->service];

	if (worker_awaits_ack(f))
		return;
	if (svc->kind == SERVICE_DNS && dnsframe_mid(&f->dns)) {
		/* The message's clock runs from its start, whatever else
		 * comes meanwhile. */
		if (f->timer != FLOW_TIMER_MSG)
			flow_timer_set(&w->ft, f, FLOW_TIMER_MSG, w->now_ms);
		return;
	}
	/* RFC 7766 §6.2.3: idle is no DNS activity, so a DNS connection's
	 * clock is reset only by progress; anything resets a generic one's
	 * (keepalives included). */
	if (progress || svc->kind != SERVICE_DNS || f->timer != FLOW_TIMER_IDLE)
		flow_timer_set(&w->ft, f, FLOW_TIMER_IDLE, w->now_ms);
}

unsigned
guard_timers(struct worker *w, unsigned budget)
{
	const struct config *cfg = w->cfg;

	for (unsigned s = 0; s < cfg->nservices; s++) {
		const struct policy *pol = &cfg->services[s].pol;
		struct flow *f;
		uint64_t idle = cutoff(w->now_ms, overload_idle_ms(w, s));
		uint64_t msg = cutoff(w->now_ms, pol->msg_timeout);

		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_MSG, msg))) {
			budget--;
			STAT_INC(w, dns_msg_timeout);
			guard_close(w, f, FLOW_MSG_TIMEOUT);
		}
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_IDLE,
							 idle))) {
			budget--;
			guard_close(w, f, FLOW_IDLE);
		}
	}
	return budget;
}
