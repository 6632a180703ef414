/*
 * The backend's backlog.  A connection the backend has not answered yet
 * waits in its accept queue (its listen backlog: 256 for nsd), and when
 * that is full the backend's kernel drops SYNs and handshakes without a
 * word; each costs the client a retransmission timeout, and a burst that
 * overflows it costs many.  tcpctd keeps at most backend-backlog such
 * connections per service, each worker its share, from the SYN it sends
 * until the first byte of an answer or the end.  A first message held by
 * delayed binding that finds them all taken waits here instead, in the
 * order it came, acknowledged with a zero window, until an answer frees a
 * place: a proxy's per-server queue, and the backend never sees the burst.
 * So does one that finds the backend holding backend-max connections of
 * ours (its own limit, nsd's tcp-count): a connection past it would only
 * wait in the backend's accept queue, or be refused.
 */
#include "backlog.h"

/* The worker's share of the service's backlog. */
static uint32_t
share(const struct worker *w, unsigned service)
{
	const struct config *cfg = w->cfg;
	uint32_t n = cfg->services[service].pol.backend_backlog;

	if (!n)
		return UINT32_MAX;
	n /= cfg->queues;
	return n ? n : 1;
}

/* Whether the backend has as many connections from us as it takes
 * (backend-max, all workers): then the next one waits too. */
static bool
backend_full(const struct worker *w, unsigned service)
{
	unsigned max = w->cfg->services[service].pol.backend_max;

	return max && atomic_load_explicit(&w->gw->backend_open[service],
					   memory_order_relaxed) >= max;
}

static struct flow *
first_waiting(struct worker *w, unsigned service)
{
	return flow_timer_expired(&w->ft, service, FLOW_TIMER_QUEUED,
				  UINT64_MAX);
}

bool
backlog_admit(struct worker *w, struct flow *f, bool may_wait)
{
	unsigned s = f->service;

	if (f->opening)
		return true;
	/* Behind those already waiting, even with a place free: backlog_run
	 * gives it to the first of them. */
	if (may_wait && (w->opening[s] >= share(w, s) || backend_full(w, s) ||
			 first_waiting(w, s))) {
		if (f->timer != FLOW_TIMER_QUEUED) {
			STAT_INC(w, backlog_queued);
			flow_timer_set(&w->ft, f, FLOW_TIMER_QUEUED,
				       w->now_ms);
		}
		return false;
	}
	f->opening = true;
	STAT_ADD(w->opening[s], 1);	/* read by the stats */
	return true;
}

struct flow *
backlog_next(struct worker *w, unsigned service)
{
	struct flow *f;

	if (w->opening[service] >= share(w, service) ||
	    backend_full(w, service) || !(f = first_waiting(w, service)))
		return NULL;
	flow_timer_set(&w->ft, f, FLOW_TIMER_NONE, w->now_ms);
	return f;
}

void
backlog_done(struct worker *w, struct flow *f)
{
	if (!f->opening)
		return;
	f->opening = false;
	STAT_ADD(w->opening[f->service], -1);
}

struct flow *
backlog_expired(struct worker *w, unsigned service)
{
	/* As long as a message may take to arrive, it may wait; then the
	 * client is reset, the backend none the wiser. */
	uint64_t wait = w->cfg->services[service].pol.msg_timeout;
	struct flow *f = first_waiting(w, service);

	if (!f || f->stamp + wait > w->now_ms)
		return NULL;
	STAT_INC(w, backlog_timeout);
	return f;
}
