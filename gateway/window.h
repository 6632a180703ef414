/*
 * Window fields (RFC 7323 §2): a 16-bit count, scaled by a shift that each
 * side chose in its SYN.
 */
#ifndef GATEWAY_WINDOW_H
#define GATEWAY_WINDOW_H

#include <stdint.h>

#define WIN_FIELD_MAX	0xffff

/* A window in bytes (or units) as a field holds it: at most the field's
 * largest. */
static inline uint16_t
win_clamp(uint32_t win)
{
	return win > WIN_FIELD_MAX ? WIN_FIELD_MAX : (uint16_t)win;
}

/* A window field at scale from as the other side reads it at scale to;
 * a small open window never turns into a closed one. */
static inline uint16_t
win_rescale(uint16_t win, uint8_t from, uint8_t to)
{
	uint16_t v = win_clamp(((uint32_t)win << from) >> to);

	return v == 0 && win ? 1 : v;
}

#endif
