/*
 * The service's policy on its connections (guard.c): DNS framing, the idle,
 * message and lifetime clocks.
 */
#ifndef GATEWAY_GUARD_H
#define GATEWAY_GUARD_H

#include "worker.h"

/* guard_data frames a DNS client's bytes at seq before they go on, and
 * drops (counted) those past a hole or, framed before, not as they were
 * (GUARD_CLOSED: it broke a limit and is gone); guard_too_old closes a
 * flow past max-lifetime (true: gone); guard_touch restarts an established
 * flow's timer after a segment (progress: new data or a new ACK);
 * guard_timers expires idle and stalled flows within budget and returns
 * what is left of it. */
enum guard_verdict { GUARD_PASS, GUARD_DROP, GUARD_CLOSED };
enum guard_verdict guard_data(struct worker *w, struct flow *f, uint32_t seq,
			      const uint8_t *b, uint32_t len);
bool guard_too_old(struct worker *w, struct flow *f);
void guard_touch(struct worker *w, struct flow *f, bool progress);
unsigned guard_timers(struct worker *w, unsigned budget);

#endif
