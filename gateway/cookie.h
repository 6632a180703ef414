/*
 * Classic SYN cookies: the gateway's ISN carries everything it must remember
 * about a SYN it answered without keeping state.  The algorithm and the
 * ISN's layout are shield/syncookie.h's, shared with the kernel shield;
 * this module keeps the keys per epoch and the TCPCT and Fast Open cookies.
 *
 * A forged ACK passes with probability 2^-25 per guess of the ISN; while a
 * fleet rotates its secret, two secrets verify and the odds are 2^-24.
 */
#ifndef GATEWAY_COOKIE_H
#define GATEWAY_COOKIE_H

#include <stdbool.h>
#include <stdint.h>

#include "../nfq/pkt.h"
#include "../nfq/tcpct.h"
#include "../policy/keys.h"
#include "../shield/syncookie.h"

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
 * A worker's keys: the current epoch's and the previous one's (the next
 * one's, close to its boundary: syncookie.h's COOKIE_KEY_LEAD), each a
 * keyed SipHash context in the slot given by its epoch's parity.
 */
struct cookie_keys {
	const struct keys_master *master;
	bool accepted;			/* keyed by master's second secret */
	struct cookie_keys *alt;	/* those keys, tried when ours fail */
	unsigned lifetime;		/* s per epoch */
	uint64_t epoch[2];
	bool valid[2];
	struct siphash_key sip[2];	/* classic ISNs (syncookie.h) */
	struct evp_mac_ctx_st *mac128[2];	/* SipHash-2-4-128: TCPCT */
	struct evp_mac_ctx_st *mactfo[2];	/* SipHash-2-4-64: TFO */
	/* The MAC bits a classic ISN is checked on: all 25 of them, but
	 * fewer in the test that measures a forger's odds per ACK
	 * (RELIABILITY.md), which 2^-25 puts beyond any run. */
	uint32_t mac_mask;
};

/* Sets up k for master; returns 0 or -1.  Keys come with cookie_keys_tick. */
int cookie_keys_init(struct cookie_keys *k, const struct keys_master *m,
		     unsigned lifetime);
void cookie_keys_free(struct cookie_keys *k);

/*
 * Makes sure the keys for the epoch of now (wall-clock seconds) and the one
 * before are loaded, or, from COOKIE_KEY_LEAD s before the next epoch, the
 * next one's in place of the one before; k->alt's too when the master has a
 * second secret; cheap when nothing changed.  Returns 0 or -1.
 */
int cookie_keys_tick(struct cookie_keys *k, uint64_t now);

/* Keys k (and k->alt) from m from now on: loaded at the next tick. */
void cookie_keys_rekey(struct cookie_keys *k, const struct keys_master *m);

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

/*
 * TCPCT responder cookies (RFC 6013 §3.5; HACKING.md §1).  The cookie is
 * SipHash-2-4-128, under a key of its own per epoch, over the family, both
 * addresses and ports, the responder's sequence number as the third packet
 * will acknowledge it (own ISN + 1), the initiator's (its ISN + 1), the
 * responder's TSval in the SYN-ACK and the initiator cookie; truncated to the
 * initiator cookie's size.  Its top bit is the key id (the epoch's parity),
 * so one MAC checks it.  Nothing is kept: the third packet brings every
 * input back (ack, seq, TSecr, the pair).  The responder's TSval is
 * wall-clock milliseconds, which bounds a cookie's age at
 * TCPCT_COOKIE_MAX_AGE_MS across a fleet sharing a clock.
 */
#define TCPCT_COOKIE_MAX_AGE_MS	(COOKIE_TICK * COOKIE_MAX_AGE * 1000u)

struct tcpct_cookie_in {
	struct cookie_tuple t;
	uint32_t snd_nxt;	/* responder ISN + 1 */
	uint32_t rcv_nxt;	/* initiator ISN + 1 */
	uint32_t tsval;		/* responder's TSval in the SYN-ACK */
	const uint8_t *ci;	/* initiator cookie */
	unsigned clen;		/* its size, 8..16 */
	bool txn;		/* a transaction's SYN-ACK (answer and FIN) */
};

/*
 * Writes the responder cookie for in (in->clen bytes) to cr, with the key
 * of the epoch of now (wall-clock seconds).  Returns 0 or -1.
 */
int cookie_tcpct_make(struct cookie_keys *k, const struct tcpct_cookie_in *in,
		      uint64_t now, uint8_t *cr);

/* An initiator rejects its own cookie echoed back (RFC 6013 §3.5): when cr
 * equals ci, every bit of cr but the key id is inverted. */
void cookie_tcpct_unecho(uint8_t *cr, const uint8_t *ci, unsigned clen);

/*
 * Checks a responder cookie cr against in, at wall-clock time now_ms:
 * COOKIE_EXPIRED when in->tsval is older than TCPCT_COOKIE_MAX_AGE_MS (or
 * in the future), COOKIE_NO_KEY when its key id names no epoch we hold,
 * COOKIE_BAD when the MAC differs.
 */
enum cookie_result cookie_tcpct_check(struct cookie_keys *k,
				      const struct tcpct_cookie_in *in,
				      uint64_t now_ms, const uint8_t *cr);

/*
 * TCP Fast Open cookies (RFC 7413 §4.1.2; HACKING.md §2): SipHash-2-4-64,
 * under a key of its own per epoch, over the family and both addresses, so
 * that a cookie proves the client's address to this service's address and
 * to nothing else.  TFO_COOKIE_LEN bytes, as Linux issues; the top bit is
 * the key id (the epoch's parity).  A cookie verifies while its epoch is the
 * current or the previous one, until the next epoch's key takes its slot
 * COOKIE_KEY_LEAD s before that one begins: one key lifetime (less those
 * seconds) to two, across a fleet sharing the master secret.
 */
#define TFO_COOKIE_LEN	8

/* Writes the cookie for caddr → saddr with the key of the epoch of now
 * (wall-clock seconds) to c.  Returns 0 or -1. */
int cookie_tfo_make(struct cookie_keys *k, uint8_t family,
		    const struct inaddr *caddr, const struct inaddr *saddr,
		    uint64_t now, uint8_t *c);

/* Checks a cookie of len bytes: COOKIE_BAD for another length or MAC,
 * COOKIE_NO_KEY when its key id names no epoch we hold. */
enum cookie_result cookie_tfo_check(struct cookie_keys *k, uint8_t family,
				    const struct inaddr *caddr,
				    const struct inaddr *saddr, uint64_t now,
				    const uint8_t *c, unsigned len);

#endif
