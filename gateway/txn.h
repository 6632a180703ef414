/*
 * TCPCT transactions for DNS services (RFC 6013; HACKING.md §1 step 5):
 * a SYN that carries a whole query is answered by a SYN-ACK that carries
 * the whole answer and a FIN, so that no connection is ever made.
 *
 * tcpctd asks the backend itself, over UDP, from the client's own address
 * (so the backend sees and logs the real client) and from a port of the
 * worker's range (so that the rules queue the answer to this worker).  The
 * only state is a pending entry while the backend answers, bounded in
 * number and in time; an answer that is truncated, too large or over the
 * client prefix's amplification budget (--txn-rate, one for all workers:
 * admit_txn_budget), or none in time, gets the plain TCPCT SYN-ACK
 * instead, and the client goes on with a handshake.  An answer that comes
 * past its time, or again, is dropped: it never goes on to the client's
 * address.  Other datagrams to our ports are an ordinary client's, whose
 * ephemeral port is in our range, and go on.
 */
#ifndef GATEWAY_TXN_H
#define GATEWAY_TXN_H

#include <stdbool.h>
#include <stdint.h>

#include "../nfq/pkt.h"
#include "../nfq/tcpct.h"
#include "../policy/rules.h"

#define TXN_PORT_BASE	RULES_TXN_PORT_BASE	/* our queries' UDP ports */
#define TXN_PORTS	RULES_TXN_PORTS		/* per worker */
#define TXN_PROBES	8	/* slots tried per key */
/* How long an ended transaction's key is remembered: a backend answer
 * later than this is taken for an ordinary client's. */
#define TXN_LATE_MS	10000

/* What a SYN asked for, kept until the backend answers. */
struct txn_syn {
	uint8_t family;
	struct inaddr caddr, saddr;
	uint16_t cport, sport;
	uint32_t cisn;		/* the SYN's sequence number */
	uint32_t tsval;		/* its TSval, echoed */
	uint16_t mss;		/* its options, for the SYN-ACK */
	bool has_ws, sack;
	uint8_t wscale;
	uint8_t clen;
	uint8_t ci[TCPCT_COOKIE_MAX];
	uint16_t qlen;		/* bytes of SYN data: length prefix + query */
	uint8_t service;
};

struct txn {
	struct txn_syn syn;
	uint16_t uport;		/* our UDP port */
	uint16_t id;		/* the query's DNS id */
	bool used;
	uint64_t expires;	/* monotonic ms */
	uint64_t late_until;	/* once released: until then an answer to
				 * its key is a late one (txn_late) */
};

struct txn_table {
	struct txn *slots;
	uint32_t cap;		/* a power of two */
	uint32_t used;
	/* Slots in claim order; one timeout for all keeps it sorted. */
	struct { uint32_t slot; uint64_t expires; } *fifo;
	uint32_t fhead, fcount;	/* ring of 2 · cap */
	uint64_t seed;
};

/* Allocates cap slots (rounded up to a power of two; 0: none).  0 or -1. */
int txn_table_init(struct txn_table *t, uint32_t cap, uint64_t seed);
void txn_table_free(struct txn_table *t);

/* A free slot for (caddr, uport, id), or NULL when it is taken or the
 * probes find none.  The caller fills it and sets used. */
struct txn *txn_claim(struct txn_table *t, uint8_t family,
		      const struct inaddr *caddr, uint16_t uport, uint16_t id);

/* The pending entry an answer to (caddr, uport, id) belongs to, or NULL. */
struct txn *txn_find(struct txn_table *t, uint8_t family,
		     const struct inaddr *caddr, uint16_t uport, uint16_t id);

/* The same SYN already pending under (uport, id) (a retransmission), or
 * NULL. */
struct txn *txn_find_syn(struct txn_table *t, const struct txn_syn *s,
			 uint16_t uport, uint16_t id);

/* Ends x; its key is remembered as ended until late_until (monotonic ms),
 * while no new transaction claims its slot. */
void txn_release(struct txn_table *t, struct txn *x, uint64_t late_until);

/* Whether (caddr, uport, id) is the key of a transaction that ended
 * (answered, or past txn-timeout) and is remembered at now. */
bool txn_late(struct txn_table *t, uint8_t family, const struct inaddr *caddr,
	      uint16_t uport, uint16_t id, uint64_t now);

/* Puts a claimed, filled slot in the table with its expiry. */
void txn_commit(struct txn_table *t, struct txn *x, uint64_t expires);

/* The oldest pending entry that has expired by now, or NULL. */
struct txn *txn_expired(struct txn_table *t, uint64_t now);

#endif
