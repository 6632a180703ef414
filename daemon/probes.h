/*
 * The backends' probes, run by the main loop without blocking it.
 */
#ifndef DAEMON_PROBES_H
#define DAEMON_PROBES_H

#include <poll.h>

#include "daemon.h"

/* Moves every probe on: takes the results in, starts those due.  How many
 * are in flight. */
unsigned probes_tick(struct daemon *d);
/* The probes in flight into pfd from n on (room for POLICY_MAX_SERVICES);
 * the new count, *wait_ms lowered to the nearest deadline. */
nfds_t probes_pollfds(struct daemon *d, struct pollfd *pfd, nfds_t n,
		      int *wait_ms);
/* The probes due, waited for: one probe's timeout at most. */
void probes_round(struct daemon *d);

#endif
