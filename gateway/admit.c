/*
 * Who may have a connection (HACKING.md §4): per-client counts and rates
 * (limit.h), and the paces of what tcpctd sends to addresses it has not
 * verified.
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
#include "admit.h"

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

enum admission
admit_client(struct worker *w, const struct service *svc, const struct pkt *p)
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
		return ADMIT_REFUSED;
	}
	for (i = 0; i < COUNT_MAX; i++) {
		struct limit_key k = key_of(w, count_kind[i], idx, p->family,
					    &p->src);

		if (!limit_enter(l, &k, max[i]))
			break;
	}
	if (i == COUNT_MAX)
		return ADMIT_OK;
	leave(w, idx, p->family, &p->src, 0, i);
	switch (i) {
	case COUNT_ADDR:
		STAT_INC(w, refused_addr);
		return ADMIT_REFUSED;
	case COUNT_PREFIX:
		STAT_INC(w, refused_prefix);
		return ADMIT_REFUSED;
	case COUNT_PENDING_ADDR:
		STAT_INC(w, deferred_pending_addr);
		break;
	default:
		STAT_INC(w, deferred_pending_prefix);
		break;
	}
	/* A FIN's client is leaving: the RST spares it sending it again. */
	return p->flags & TCP_FIN ? ADMIT_REFUSED : ADMIT_DEFERRED;
}

bool
admit_synack(struct worker *w, const struct pkt *p)
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

bool
admit_txn_budget(struct worker *w, uint8_t family, const struct inaddr *caddr,
		 uint32_t bytes)
{
	/* One budget for all services and workers, as for the SYN-ACKs the
	 * answers ride in: what a reflected flood costs its victim is the
	 * sum of them. */
	struct limit_key k = key_of(w, LIMIT_TXN_RATE, 0, family, caddr);

	return limit_spend(&w->gw->limits, &k, w->now_ms, bytes,
			   w->cfg->txn_rate);
}

void
admit_undo(struct worker *w, unsigned service, uint8_t family,
	      const struct inaddr *caddr)
{
	leave(w, service, family, caddr, 0, COUNT_MAX);
}

void
admit_leave(struct worker *w, struct flow *f)
{
	if (!f->counted)
		return;
	f->counted = false;
	leave(w, f->service, f->key.family, &f->key.caddr, 0,
	      f->asked ? COUNT_PENDING_ADDR : COUNT_MAX);
}

void
admit_asked(struct worker *w, struct flow *f)
{
	f->asked = true;
	if (f->counted)
		leave(w, f->service, f->key.family, &f->key.caddr,
		      COUNT_PENDING_ADDR, COUNT_MAX);
}

