#include "csum.h"

#include <string.h>

#include "bytes.h"

uint32_t
csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t acc = sum;

	/* 32-bit loads into a 64-bit accumulator: no carry is lost before the
	 * final fold for any length below 2^34 bytes. */
	while (len >= 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		acc += be32toh(w);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		acc += (uint32_t)p[0] << 8 | p[1];
		p += 2;
		len -= 2;
	}
	if (len)
		acc += (uint32_t)p[0] << 8;
	while (acc >> 32)
		acc = (acc & 0xffffffffu) + (acc >> 32);
	/* Reduce to at most 17 bits so that callers can keep adding. */
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	return (uint32_t)acc;
}

uint16_t
csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t
csum_pseudo4(const uint8_t src[4], const uint8_t dst[4], uint8_t proto,
	     uint32_t l4len)
{
	uint32_t sum = csum_add(0, src, 4);
	sum = csum_add(sum, dst, 4);
	return sum + proto + (l4len & 0xffff) + (l4len >> 16);
}

uint32_t
csum_pseudo6(const uint8_t src[16], const uint8_t dst[16], uint8_t proto,
	     uint32_t l4len)
{
	uint32_t sum = csum_add(0, src, 16);
	sum = csum_add(sum, dst, 16);
	return sum + proto + (l4len & 0xffff) + (l4len >> 16);
}

void
csum_replace2(uint8_t *csum, uint16_t old, uint16_t new)
{
	uint32_t sum = (uint16_t)~get16(csum);

	sum += (uint16_t)~old;
	sum += new;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	put16(csum, (uint16_t)~sum);
}

void
csum_replace4(uint8_t *csum, uint32_t old, uint32_t new)
{
	csum_replace2(csum, (uint16_t)(old >> 16), (uint16_t)(new >> 16));
	csum_replace2(csum, (uint16_t)old, (uint16_t)new);
}

void
csum_replace_run(uint8_t *csum, size_t off, const uint8_t *old,
		 const uint8_t *new, size_t len)
{
	uint32_t diff = (uint16_t)~csum_fold(csum_add(0, new, len));
	uint32_t sum;

	diff += csum_fold(csum_add(0, old, len));
	diff = (diff & 0xffff) + (diff >> 16);
	/* A run at an odd offset pairs its bytes the other way round; the
	 * one's-complement sum of swapped words is the swapped sum. */
	if (off & 1)
		diff = ((diff & 0xff) << 8) | (diff >> 8);
	sum = (uint16_t)~get16(csum);
	sum += diff;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	put16(csum, (uint16_t)~sum);
}
