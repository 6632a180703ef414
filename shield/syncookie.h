/*
 * The classic SYN cookie, one source for both compilers: the daemon
 * (gateway/cookie.c) and the kernel shield (shield/shield.bpf.c) include
 * this header, so that a cookie one makes the other verifies, bit for bit.
 * It is freestanding: no libc, no loops but bounded ones, nothing the BPF
 * verifier refuses.  A BPF program defines uint8_t to uint64_t from the
 * kernel's types first: BPF has no <stdint.h>.
 *
 * Layout of the 32-bit ISN, most significant bit first:
 *
 *	31	key id: parity of the key epoch that made the MAC
 *	30..27	counter mod 16 (the counter ticks every COOKIE_TICK s)
 *	26..2	25 bits of SipHash-2-4 over the tuple, the client's ISN, the
 *		full counter, the MSS index and the option bits
 *	1..0	MSS index into the family's table
 *
 * The option bits travel in the low 6 bits of the SYN-ACK's TSval when the
 * client sent timestamps (the ACK's TSecr brings them back, RFC 7323 §4.3):
 * window scale in bits 0..3 (0xF: none), SACK-permitted in bit 4, ECN in
 * bit 5.  The MAC covers them too, so a forger cannot choose them either.
 */
#ifndef SHIELD_SYNCOOKIE_H
#define SHIELD_SYNCOOKIE_H

#ifndef __bpf__
#include <stdint.h>
#endif

#define COOKIE_TICK		64	/* s per counter value */
#define COOKIE_MAX_AGE		2	/* counter values older than now */
#define COOKIE_MSS_INDEXES	4

#define COOKIE_TS_WSCALE_MASK	0x0f
#define COOKIE_TS_WSCALE_NONE	0x0f
#define COOKIE_TS_SACK		0x10
#define COOKIE_TS_ECN		0x20
#define COOKIE_TS_BITS		0x3f
#define COOKIE_TS_PRESENT	0x40	/* not on the wire: TS were used */

#define COOKIE_ISN_KEYID_SHIFT	31
#define COOKIE_ISN_COUNT_SHIFT	27
#define COOKIE_ISN_COUNT_MASK	0xfu
#define COOKIE_ISN_MAC_SHIFT	2
#define COOKIE_ISN_MAC_MASK	0x1ffffffu
#define COOKIE_ISN_MSS_MASK	0x3u

#define COOKIE_FAMILY_INET	2	/* AF_INET, AF_INET6: the MAC's input */
#define COOKIE_FAMILY_INET6	10

/*
 * Keys per epoch (gateway/cookie.c): two slots, by the epoch's parity.  The
 * next epoch's key is loaded COOKIE_KEY_LEAD s before its boundary, into
 * the slot of the epoch before the current one, whose cookies have all
 * expired by then (COOKIE_MAX_AGE + 1 ticks, 192 s, and TCPCT's 128 s,
 * against a key-lifetime of at least 240 s): a handshake across the
 * boundary, and a flood timed to it, see nothing change there.
 */
#define COOKIE_KEY_LEAD		30

/* Whether the key of epoch key_epoch verifies at epoch: the current one's,
 * the previous one's, or the next one's (a gateway of the fleet whose clock
 * runs a little ahead crossed the boundary first). */
static inline int
cookie_epoch_usable(uint64_t key_epoch, uint64_t epoch)
{
	return key_epoch == epoch || key_epoch + 1 == epoch ||
	       key_epoch == epoch + 1;
}

#define COOKIE_KEY_LEN		16	/* SipHash-2-4 */
#define COOKIE_MSG_LEN		48

/* A SipHash-2-4 key as its two little-endian words: bytes 0..7 and 8..15
 * of a COOKIE_KEY_LEN-byte key. */
struct siphash_key {
	uint64_t k0, k1;
};

static inline uint64_t
siphash_le64(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

#define SIPHASH_ROTL(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPHASH_ROUND(v0, v1, v2, v3) do {				\
	v0 += v1; v1 = SIPHASH_ROTL(v1, 13); v1 ^= v0;			\
	v0 = SIPHASH_ROTL(v0, 32);					\
	v2 += v3; v3 = SIPHASH_ROTL(v3, 16); v3 ^= v2;			\
	v0 += v3; v3 = SIPHASH_ROTL(v3, 21); v3 ^= v0;			\
	v2 += v1; v1 = SIPHASH_ROTL(v1, 17); v1 ^= v2;			\
	v2 = SIPHASH_ROTL(v2, 32);					\
} while (0)

#define COOKIE_MSG_WORDS	(COOKIE_MSG_LEN / 8)

/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012) with a 64-bit result, over
 * COOKIE_MSG_LEN bytes given as the little-endian words SipHash reads: the
 * only length a classic cookie hashes, a whole number of words, so that
 * the loop has one constant bound.
 */
static inline uint64_t
siphash24_words(const struct siphash_key *k, const uint64_t *msg)
{
	uint64_t v0 = k->k0 ^ 0x736f6d6570736575ULL;
	uint64_t v1 = k->k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k->k0 ^ 0x6c7967656e657261ULL;
	uint64_t v3 = k->k1 ^ 0x7465646279746573ULL;
	uint64_t last = (uint64_t)COOKIE_MSG_LEN << 56;
	unsigned i;

	for (i = 0; i < COOKIE_MSG_WORDS; i++) {
		uint64_t m = msg[i];

		v3 ^= m;
		SIPHASH_ROUND(v0, v1, v2, v3);
		SIPHASH_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	v3 ^= last;
	SIPHASH_ROUND(v0, v1, v2, v3);
	SIPHASH_ROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	SIPHASH_ROUND(v0, v1, v2, v3);
	SIPHASH_ROUND(v0, v1, v2, v3);
	SIPHASH_ROUND(v0, v1, v2, v3);
	SIPHASH_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The same over COOKIE_MSG_LEN bytes. */
static inline uint64_t
siphash24_msg(const struct siphash_key *k, const uint8_t *msg)
{
	uint64_t m[COOKIE_MSG_WORDS];
	unsigned i;

	for (i = 0; i < COOKIE_MSG_WORDS; i++)
		m[i] = siphash_le64(msg + 8 * i);
	return siphash24_words(k, m);
}

/* 8 bytes at p, 8-aligned, as a little-endian word: one load where the
 * machine is little-endian (the BPF target's is the host's). */
static inline uint64_t
cookie_le64_aligned(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, __builtin_assume_aligned(p, 8), 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* What a classic cookie is bound to, client side first; an IPv4 address
 * takes the first 4 bytes of its 16, the rest zero.  The addresses are
 * aligned so that the hash reads them a word at a time. */
struct cookie_input {
	uint8_t caddr[16] __attribute__((aligned(8)));
	uint8_t saddr[16];
	uint16_t cport, sport;
	uint32_t cisn;
	uint8_t family;		/* COOKIE_FAMILY_* */
};

static inline void
cookie_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
cookie_put32(uint8_t *p, uint32_t v)
{
	cookie_put16(p, (uint16_t)(v >> 16));
	cookie_put16(p + 2, (uint16_t)v);
}

/* The 25-bit MAC of in at the full counter value, as the ISN holds it. */
static inline uint32_t
cookie_mac25(const struct siphash_key *k, const struct cookie_input *in,
	     uint32_t counter, unsigned mss_index, unsigned tsbits)
{
	/* The message's bytes: caddr, saddr, cport, sport, cisn, counter
	 * (big-endian), family, mss_index, tsbits, 0; read as SipHash
	 * reads them. */
	uint64_t m[COOKIE_MSG_WORDS] = {
		cookie_le64_aligned(in->caddr),
		cookie_le64_aligned(in->caddr + 8),
		cookie_le64_aligned(in->saddr),
		cookie_le64_aligned(in->saddr + 8),
		(uint64_t)__builtin_bswap16(in->cport) |
			(uint64_t)__builtin_bswap16(in->sport) << 16 |
			(uint64_t)__builtin_bswap32(in->cisn) << 32,
		(uint64_t)__builtin_bswap32(counter) |
			(uint64_t)in->family << 32 |
			(uint64_t)(uint8_t)mss_index << 40 |
			(uint64_t)(uint8_t)tsbits << 48,
	};
	uint64_t h = siphash24_words(k, m);

	/* The hash's first four bytes, little-endian as SipHash writes
	 * them, read as a big-endian word. */
	return __builtin_bswap32((uint32_t)h) & COOKIE_ISN_MAC_MASK;
}

/* The ISN for slot's key at counter. */
static inline uint32_t
cookie_isn(const struct siphash_key *k, unsigned slot,
	   const struct cookie_input *in, uint32_t counter, unsigned mss_index,
	   unsigned tsbits)
{
	mss_index &= COOKIE_ISN_MSS_MASK;
	return (uint32_t)slot << COOKIE_ISN_KEYID_SHIFT |
	       (counter & COOKIE_ISN_COUNT_MASK) << COOKIE_ISN_COUNT_SHIFT |
	       cookie_mac25(k, in, counter, mss_index, tsbits)
		       << COOKIE_ISN_MAC_SHIFT |
	       mss_index;
}

/* How many counter values old isn is at counter (mod 16); a cookie older
 * than COOKIE_MAX_AGE has expired. */
static inline uint32_t
cookie_isn_age(uint32_t isn, uint32_t counter)
{
	return (counter - (isn >> COOKIE_ISN_COUNT_SHIFT)) &
	       COOKIE_ISN_COUNT_MASK;
}

/* Whether isn's MAC bits selected by mask are those of in under k, the
 * ISN made age counter values before counter. */
static inline int
cookie_isn_mac_ok(const struct siphash_key *k, uint32_t isn,
		  const struct cookie_input *in, uint32_t counter,
		  unsigned tsbits, uint32_t mask)
{
	uint32_t full = counter - cookie_isn_age(isn, counter);

	return ((cookie_mac25(k, in, full, isn & COOKIE_ISN_MSS_MASK, tsbits) ^
		 isn >> COOKIE_ISN_MAC_SHIFT) & mask) == 0;
}

/* Linux's MSS tables (net/ipv4/syncookies.c, net/ipv6/syncookies.c): v4
 * 1460 = 1500 − 40; v6 8940 for jumbo frames. */
#define COOKIE_MSS_V4	{ 536, 1300, 1440, 1460 }
#define COOKIE_MSS_V6	{ 1220, 1420, 1440, 8940 }

/* Index of the largest table entry ≤ mss (0 when mss is below them all). */
static inline unsigned
cookie_mss_index_of(uint8_t family, uint16_t mss)
{
	const uint16_t v4[COOKIE_MSS_INDEXES] = COOKIE_MSS_V4;
	const uint16_t v6[COOKIE_MSS_INDEXES] = COOKIE_MSS_V6;
	unsigned i;

	/* An entry at a time, no pointer to either table: BPF allows no
	 * arithmetic a compiler might do on one. */
	for (i = COOKIE_MSS_INDEXES - 1; i > 0; i--)
		if ((family == COOKIE_FAMILY_INET ? v4[i] : v6[i]) <= mss)
			return i;
	return 0;
}

#endif
