/*
 * The backend's backlog (backlog.c): at most backend-backlog connections
 * of a service waiting for their first answer, each worker its share; the
 * others wait here, in the order they came.
 */
#ifndef GATEWAY_BACKLOG_H
#define GATEWAY_BACKLOG_H

#include "worker.h"

/* Counts f as handed to the backend, or, when the worker's share of the
 * service's backend-backlog is taken (may_wait), queues it (false). */
bool backlog_admit(struct worker *w, struct flow *f, bool may_wait);
/*
 * The kernel's bindings (carry.h) take their places from those the worker
 * lends them, a few per service (backlog_lend, while the share has room,
 * none waits, and the backend is far from backend-max); a place lent and
 * not taken is the worker's again whenever it needs it.  backlog_taken
 * counts f in, as backlog_admit would have, when the kernel took one for
 * it.
 */
void backlog_lend(struct worker *w, unsigned service);
void backlog_taken(struct worker *w, struct flow *f);
/* Takes an answered or ended flow out. */
void backlog_done(struct worker *w, struct flow *f);
/* The first flow waiting that now fits, off the queue, for its caller to
 * start; NULL when none. */
struct flow *backlog_next(struct worker *w, unsigned service);
/* The first flow that waited longer than a message may take, counted, for
 * its caller to reset; NULL when none. */
struct flow *backlog_expired(struct worker *w, unsigned service);

#endif
