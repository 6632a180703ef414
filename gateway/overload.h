/*
 * The overload mode (overload.c): a service whose backend holds most of
 * the connections it takes idles them out sooner and releases DNS
 * connections between queries (release.c).
 */
#ifndef GATEWAY_OVERLOAD_H
#define GATEWAY_OVERLOAD_H

#include "worker.h"

/* overload_hold counts f's backend connection as open (once),
 * overload_unhold takes it out (once); either may flip the service's mode.
 * overload_idle_ms is the service's idle timeout now. */
void overload_hold(struct worker *w, struct flow *f);
void overload_unhold(struct worker *w, struct flow *f);
bool overload_on(const struct worker *w, unsigned service);
/* Whether the service is overloaded, or would be with more connections
 * to its backend than ours now. */
bool overload_near(const struct worker *w, unsigned service, uint32_t more);
uint64_t overload_idle_ms(const struct worker *w, unsigned service);

#endif
