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
 * Connects to s from the gateway with a timeout of timeout_ms and reads the
 * negotiated options.  Returns 0 and fills *p, or -1 with errno set.
 */
int probe_backend(const struct service *s, unsigned timeout_ms,
		  struct profile *p);

#endif
