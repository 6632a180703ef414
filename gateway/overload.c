/*
 * The overload mode: tcpctd counts the connections it has open to each
 * service's backend (shared by all workers, one atomic word per service),
 * and when they near the backend's own limit (backend-max) the service is
 * overloaded until they fall to half of it.  Meanwhile its idle timeout is
 * overload-idle and a DNS connection's backend half is released as soon
 * as its queries are answered (release.c): one query per backend
 * connection, as dnsdist 2.0 does, while the client may keep its own.
 */
#include "overload.h"

/* Enter at 4/5 of the limit, leave at 1/2: the hysteresis keeps a backend
 * at its limit from flipping the mode with every connection. */
static uint32_t
enter_at(unsigned max)
{
	return max - max / 5;
}

static uint32_t
leave_at(unsigned max)
{
	return max / 2;
}

void
overload_hold(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];
	uint32_t open;

	if (f->backend_held)
		return;
	f->backend_held = true;
	open = atomic_fetch_add_explicit(&w->gw->backend_open[f->service], 1,
					 memory_order_relaxed) + 1;
	if (svc->pol.backend_max && open >= enter_at(svc->pol.backend_max) &&
	    !atomic_exchange_explicit(&w->gw->overload[f->service], true,
				      memory_order_relaxed))
		STAT_INC(w, overload_entered);
}

void
overload_unhold(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];
	uint32_t open;

	if (!f->backend_held)
		return;
	f->backend_held = false;
	open = atomic_fetch_sub_explicit(&w->gw->backend_open[f->service], 1,
					 memory_order_relaxed) - 1;
	if (open <= leave_at(svc->pol.backend_max) &&
	    atomic_exchange_explicit(&w->gw->overload[f->service], false,
				     memory_order_relaxed))
		STAT_INC(w, overload_left);
}

bool
overload_near(const struct worker *w, unsigned service, uint32_t more)
{
	unsigned max = w->cfg->services[service].pol.backend_max;

	return overload_on(w, service) ||
	       (max && atomic_load_explicit(&w->gw->backend_open[service],
					    memory_order_relaxed) +
				       more >= enter_at(max));
}

bool
overload_on(const struct worker *w, unsigned service)
{
	return atomic_load_explicit(&w->gw->overload[service],
				    memory_order_relaxed);
}

uint64_t
overload_idle_ms(const struct worker *w, unsigned service)
{
	const struct policy *pol = &w->cfg->services[service].pol;
	unsigned s = pol->idle_timeout;

	if (overload_on(w, service) && pol->overload_idle &&
	    pol->overload_idle < s)
		s = pol->overload_idle;
	return (uint64_t)s * 1000;
}
