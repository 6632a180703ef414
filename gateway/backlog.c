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
#include "overload.h"

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

/* The places lent to the kernel at most, per worker and service: what a
 * burst of bindings takes between two of the worker's turns. */
#define BACKLOG_TICKETS	4

/* Places lent that the kernel has not taken.  The program takes one by
 * taking 1 off and giving it back when that went below 0: a word seen
 * below 0 has none. */
static uint32_t
lent(const struct worker *w, unsigned service)
{
	int64_t n;

	if (!w->tickets)
		return 0;
	n = (int64_t)__atomic_load_n(&w->tickets[service], __ATOMIC_RELAXED);
	return n > 0 ? (uint32_t)n : 0;
}

/* One place lent taken back: whether there was one. */
static bool
take_back(struct worker *w, unsigned service)
{
	uint64_t v;

	if (!w->tickets)
		return false;
	v = __atomic_load_n(&w->tickets[service], __ATOMIC_RELAXED);
	while ((int64_t)v > 0)
		if (__atomic_compare_exchange_n(&w->tickets[service], &v, v - 1,
						false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

/* Whether the worker's share has a place for one more: one lent to the
 * kernel taken back if need be. */
static bool
place_free(struct worker *w, unsigned service)
{
	uint32_t n = share(w, service);

	if (w->opening[service] >= n)
		return false;
	return w->opening[service] + lent(w, service) < n ||
	       take_back(w, service);
}

bool
backlog_admit(struct worker *w, struct flow *f, bool may_wait)
{
	unsigned s = f->service;

	if (f->opening)
		return true;
	/* Behind those already waiting, even with a place free: backlog_run
	 * gives it to the first of them. */
	if (may_wait && (backend_full(w, s) || first_waiting(w, s) ||
			 !place_free(w, s))) {
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

	if (backend_full(w, service) || !(f = first_waiting(w, service)) ||
	    !place_free(w, service))
		return NULL;
	flow_timer_set(&w->ft, f, FLOW_TIMER_NONE, w->now_ms);
	return f;
}

void
backlog_lend(struct worker *w, unsigned service)
{
	const struct config *cfg = w->cfg;
	uint32_t have = lent(w, service), all = 0;

	if (!w->tickets || have >= BACKLOG_TICKETS ||
	    w->opening[service] + have >= share(w, service) ||
	    first_waiting(w, service))
		return;
	/* Every worker's places lent counted in: the backend never gets
	 * more of ours than it takes, nor the overload mode's trigger
	 * (overload.c) a connection it did not see. */
	if (overload_near(w, service, BACKLOG_TICKETS * cfg->queues))
		return;
	/* Each binding the kernel makes takes a hold slot when the worker
	 * catches up with it (bind.c). */
	for (unsigned s = 0; s < cfg->nservices; s++)
		all += lent(w, s);
	if (w->hold.nfree <= all)
		return;
	__atomic_fetch_add(&w->tickets[service], 1, __ATOMIC_RELAXED);
	STAT_INC(w, tickets_lent);
}

void
backlog_taken(struct worker *w, struct flow *f)
{
	if (f->opening)
		return;
	f->opening = true;
	STAT_ADD(w->opening[f->service], 1);
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
