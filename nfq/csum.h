/*
 * Internet checksums (RFC 1071) and their incremental update (RFC 1624).
 *
 * Sums are carried unfolded in a uint32_t; csum_fold() reduces one to the
 * 16-bit one's-complement value that goes on the wire.
 */
#ifndef NFQ_CSUM_H
#define NFQ_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* Adds the bytes of buf to sum (big-endian 16-bit words, odd tail padded). */
uint32_t csum_add(uint32_t sum, const void *buf, size_t len);

/* Folds sum to 16 bits and returns its complement, in host order. */
uint16_t csum_fold(uint32_t sum);

/* Pseudo-header sums (RFC 793 §3.1, RFC 8200 §8.1) for a TCP segment. */
uint32_t csum_pseudo4(const uint8_t src[4], const uint8_t dst[4],
		      uint8_t proto, uint32_t l4len);
uint32_t csum_pseudo6(const uint8_t src[16], const uint8_t dst[16],
		      uint8_t proto, uint32_t l4len);

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').  csum points at the checksum field
 * (network order, possibly unaligned); old and new are host-order values of a
 * 16- or 32-bit field that sits at an even offset from the checksummed start.
 */
void csum_replace2(uint8_t *csum, uint16_t old, uint16_t new);
void csum_replace4(uint8_t *csum, uint32_t old, uint32_t new);

/*
 * The same for a run of len bytes that starts off bytes into the checksummed
 * data, at any parity (TCP options can place a 32-bit value at an odd offset).
 * old is the run's previous content, new its current one.
 */
void csum_replace_run(uint8_t *csum, size_t off, const uint8_t *old,
		      const uint8_t *new, size_t len);

#endif
