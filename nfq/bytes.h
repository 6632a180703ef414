/*
 * Unaligned big-endian loads and stores.  Packet fields are read through
 * memcpy so that no header is ever dereferenced at an odd address.
 */
#ifndef NFQ_BYTES_H
#define NFQ_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t
get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t
get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline void
put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

#endif
