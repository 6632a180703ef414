/*
 * Backend profiles: what each protected backend really does with MSS,
 * window scaling, SACK and timestamps, learned by opening a real TCP
 * connection to it from the gateway and reading TCP_INFO back.
 *
 * A profile is packed into one 32-bit word so that workers read it with a
 * single atomic load while the main thread re-probes.
 */
#ifndef GATEWAY_PROBE_H
#define GATEWAY_PROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../policy/config.h"

struct profile {
	bool known;		/* a probe has succeeded */
	uint16_t mss;		/* the backend's MSS option */
	bool ws;		/* sends and honours window scale */
	uint8_t wscale;		/* its shift */
	bool sack, ts, ecn;
};

uint32_t profile_pack(const struct profile *p);
void profile_unpack(uint32_t w, uint8_t family, struct profile *p);

/*
 * A probe in flight: a non-blocking connect from the gateway, which the
 * main loop polls with its other descriptors, so that a silent backend
 * holds up nothing else.  fd is -1 when none is in flight.
 */
struct probe {
	int fd;
	uint64_t deadline_ms;
};

/* Starts a probe of s, to give up at deadline_ms.  Returns 0, or -1 with
 * errno set when it failed at once (pr->fd stays -1). */
int probe_start(struct probe *pr, const struct service *s,
		uint64_t deadline_ms);

/* Takes the result of a probe in flight at now_ms: 1 with *p filled once
 * connected, 0 while it is still connecting, -1 with errno set when it
 * failed (ETIMEDOUT past its deadline).  The socket is closed but on 0. */
int probe_finish(struct probe *pr, uint64_t now_ms, struct profile *p);

/* Abandons a probe in flight, if any. */
void probe_cancel(struct probe *pr);

#endif
