/*
 * Classic SYN cookies: the gateway's ISN carries everything it must remember
 * about a SYN it answered without keeping state (PROTOCOLS.md §3).
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
 * A forged ACK passes with probability 2^-25 per guess of the ISN.
 */
#ifndef GATEWAY_COOKIE_H
#define GATEWAY_COOKIE_H

#include <stdbool.h>
#include <stdint.h>

#include "../nfq/pkt.h"
#include "../policy/keys.h"

#define COOKIE_TICK		64	/* s per counter value */
#define COOKIE_MAX_AGE		2	/* counter values older than now */
#define COOKIE_MSS_INDEXES	4

#define COOKIE_TS_WSCALE_MASK	0x0f
#define COOKIE_TS_WSCALE_NONE	0x0f
#define COOKIE_TS_SACK		0x10
#define COOKIE_TS_ECN		0x20
#define COOKIE_TS_BITS		0x3f
#define COOKIE_TS_PRESENT	0x40	/* not on the wire: TS were used */

/* The MSS table for the family: the largest entry ≤ the client's MSS. */
extern const uint16_t cookie_mss_v4[COOKIE_MSS_INDEXES];
extern const uint16_t cookie_mss_v6[COOKIE_MSS_INDEXES];

/* Index of the largest table entry ≤ mss (0 when mss is below them all). */
unsigned cookie_mss_index(uint8_t family, uint16_t mss);
uint16_t cookie_mss_value(uint8_t family, unsigned index);

/* The four-tuple a cookie is bound to, client side first. */
struct cookie_tuple {
	uint8_t family;
	struct inaddr caddr, saddr;
	uint16_t cport, sport;
};

enum cookie_result {
	COOKIE_OK = 0,
	COOKIE_BAD,		/* MAC mismatch */
	COOKIE_EXPIRED,		/* counter older than COOKIE_MAX_AGE */
	COOKIE_NO_KEY,		/* the key id names an epoch we do not hold */
	COOKIE_RESULT_MAX
};

const char *cookie_result_name(enum cookie_result r);

struct evp_mac_ctx_st;

/*
 * A worker's keys: the current epoch's and the previous one's, each a keyed
 * SipHash context in the slot given by its epoch's parity.
 */
struct cookie_keys {
	const struct keys_master *master;
	unsigned lifetime;		/* s per epoch */
	uint64_t epoch[2];
	bool valid[2];
	struct evp_mac_ctx_st *mac[2];
};

/* Sets up k for master; returns 0 or -1.  Keys come with cookie_keys_tick. */
int cookie_keys_init(struct cookie_keys *k, const struct keys_master *m,
		     unsigned lifetime);
void cookie_keys_free(struct cookie_keys *k);

/*
 * Makes sure the keys for the epoch of now (wall-clock seconds) and the one
 * before are loaded; cheap when nothing changed.  Returns 0 or -1.
 */
int cookie_keys_tick(struct cookie_keys *k, uint64_t now);

/* The cookie counter at wall-clock time now. */
uint32_t cookie_counter(uint64_t now);

/*
 * Makes the ISN for a SYN with client ISN cisn at wall-clock time now.
 * tsbits are the option bits (COOKIE_TS_*, with COOKIE_TS_PRESENT when the
 * SYN-ACK carries timestamps).
 */
uint32_t cookie_make(struct cookie_keys *k, const struct cookie_tuple *t,
		     uint32_t cisn, uint64_t now, unsigned mss_index,
		     unsigned tsbits);

/*
 * Checks an ACK: isn is ack − 1, cisn is seq − 1, tsbits as above (from
 * the TSecr).  On COOKIE_OK sets *mss_index.
 */
enum cookie_result cookie_check(struct cookie_keys *k,
				const struct cookie_tuple *t, uint32_t isn,
				uint32_t cisn, uint64_t now,
				unsigned tsbits, unsigned *mss_index);

#endif
