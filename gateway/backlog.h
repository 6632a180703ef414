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
/* Takes an answered or ended flow out. */
void backlog_done(struct worker *w, struct flow *f);
/* The first flow waiting that now fits, off the queue, for its caller to
 * start; NULL when none. */
struct flow *backlog_next(struct worker *w, unsigned service);
/* The first flow that waited longer than a message may take, counted, for
 * its caller to reset; NULL when none. */
struct flow *backlog_expired(struct worker *w, unsigned service);

#endif
