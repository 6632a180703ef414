/*
 * What a reload decides before it takes a configuration: whether the new
 * one changes what only a restart can, and the order of its services.
 */
#ifndef DAEMON_RECONFIG_H
#define DAEMON_RECONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "../policy/config.h"

/* What only a restart can change: the queues and the tables sized at
 * start, the per-client counters' keys (the prefixes), the keys, the
 * shield and the control socket.  The first such option that differs
 * between a and b, or NULL. */
const char *reconfig_needs_restart(const struct config *a,
				   const struct config *b);

/* c's services in old's order, so that every index a flow, a timer list
 * or a counter holds still names its service; new ones after them.
 * False, with the reason to out, when a service of old is gone from c:
 * its spliced connections would lose their translation. */
bool reconfig_keep_order(const struct config *old, struct config *c,
			 FILE *out);

#endif
