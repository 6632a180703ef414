/*
 * The backends' probes, from the main loop: a connect to each backend
 * learns what it does (gateway/probe.c), every probe-interval while it is
 * up and every PROBE_RETRY_MS while it is down, never waiting on one.
 */
#include "probes.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "status.h"

#define PROBE_TIMEOUT_MS	1000
#define PROBE_RETRY_MS		5000	/* while a backend is down */

/* A probe of service i's backend failed with err: it is down (logged
 * once), its profile stays, and it is tried again soon. */
static void
probe_failed(struct daemon *d, unsigned i, int err, uint64_t now)
{
	char name[160];

	if (d->gw.backend_state[i] != BACKEND_DOWN)
		logx(LOG_WARNING, "backend %s: down (%s)%s",
		     status_backend_label(d, i, name, sizeof(name)),
		     strerror(err),
		     atomic_load(&d->gw.profile[i]) ? "; keeping its profile"
						 : "; assuming no options");
	else if (d->cfg->verbose)
		logx(LOG_INFO, "backend %s: still down (%s)",
		     status_backend_label(d, i, name, sizeof(name)),
		     strerror(err));
	d->next_probe[i] = now + PROBE_RETRY_MS;
	if (d->gw.backend_state[i] != BACKEND_DOWN) {
		d->gw.backend_state[i] = BACKEND_DOWN;
		status_notify(d, false);
	}
}

/* A probe of service i's backend connected and found p: it is up, its
 * profile p (a change logged), and the next probe an interval away. */
static void
probe_succeeded(struct daemon *d, unsigned i, const struct profile *p,
		uint64_t now)
{
	uint32_t packed = profile_pack(p);
	bool was_down = d->gw.backend_state[i] == BACKEND_DOWN;
	char name[160];

	status_backend_label(d, i, name, sizeof(name));
	if (was_down)
		logx(LOG_NOTICE, "backend %s: up again", name);
	if (packed != atomic_load(&d->gw.profile[i]))
		logx(LOG_INFO, "backend %s: mss %u, wscale %s%u, sack %s, "
		     "timestamps %s, ecn %s", name, p->mss,
		     p->ws ? "" : "none/", p->wscale, p->sack ? "yes" : "no",
		     p->ts ? "yes" : "no", p->ecn ? "yes" : "no");
	atomic_store(&d->gw.profile[i], packed);
	d->gw.backend_state[i] = BACKEND_UP;
	d->next_probe[i] = now + (uint64_t)d->cfg->probe_interval * 1000;
	if (was_down)
		status_notify(d, false);
}

/* Moves every backend probe on without waiting: takes the results of
 * those in flight, starts those due.  Returns how many are in flight. */
unsigned
probes_tick(struct daemon *d)
{
	uint64_t now = worker_mono_ms();
	unsigned i, flying = 0;

	for (i = 0; i < d->cfg->nservices; i++) {
		struct profile p;
		int rc;

		/* An upstream's far servers are many and not ours to probe:
		 * the workers offer a profile of their own (worker.c). */
		if (d->cfg->services[i].upstream)
			continue;
		if (d->probes[i].fd < 0 && d->next_probe[i] <= now &&
		    probe_start(&d->probes[i], &d->cfg->services[i],
				now + PROBE_TIMEOUT_MS) < 0) {
			probe_failed(d, i, errno, now);
			continue;
		}
		if (d->probes[i].fd < 0)
			continue;
		rc = probe_finish(&d->probes[i], now, &p);
		if (rc == 0)
			flying++;
		else if (rc < 0)
			probe_failed(d, i, errno, now);
		else
			probe_succeeded(d, i, &p, now);
	}
	return flying;
}

/* Adds the probes in flight to pfd (room for POLICY_MAX_SERVICES past n);
 * returns the new count, and lowers *wait_ms to the nearest deadline. */
nfds_t
probes_pollfds(struct daemon *d, struct pollfd *pfd, nfds_t n, int *wait_ms)
{
	uint64_t now = worker_mono_ms();

	for (unsigned i = 0; i < d->cfg->nservices; i++) {
		if (d->probes[i].fd < 0)
			continue;
		pfd[n++] = (struct pollfd){ .fd = d->probes[i].fd,
					    .events = POLLOUT };
		if (d->probes[i].deadline_ms <= now)
			*wait_ms = 0;
		else if (d->probes[i].deadline_ms - now < (uint64_t)*wait_ms)
			*wait_ms = (int)(d->probes[i].deadline_ms - now);
	}
	return n;
}

/* The probes due, all at once, waited for: at start, before the workers
 * start, and after a reload for its new services.  At most one
 * PROBE_TIMEOUT_MS, however many backends are silent. */
void
probes_round(struct daemon *d)
{
	while (probes_tick(d)) {
		struct pollfd pfd[POLICY_MAX_SERVICES];
		int wait = PROBE_TIMEOUT_MS;
		nfds_t n = probes_pollfds(d, pfd, 0, &wait);

		if (poll(pfd, n, wait) < 0 && errno != EINTR)
			break;
	}
}
