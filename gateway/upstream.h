/*
 * tcpctd as the TCPCT initiator (RFC 6013) for a resolver that knows
 * nothing of it (issue 35): an upstream service's far servers.
 *
 * The local leg is a protected service's: the resolver's SYN to a far
 * server gets a classic cookie SYN-ACK from the far server's address, no
 * state kept (handshake.c), and its first query is taken whole (bind.c).
 * Then, instead of a plain SYN, the far server is sent a TCPCT SYN with
 * an initiator cookie and, when it is one query of at most
 * TCPCT_SYN_DATA_MAX bytes, the query itself, as `tcpct-query
 * +transaction` sends it (HACKING.md §1 step 1).  Its SYN-ACK decides:
 *
 *  - a responder cookie, the whole answer and FIN (step 5): a
 *    transaction.  The answer goes to the resolver from the far server's
 *    address, with a FIN (it opens a new connection for its next query),
 *    and the far server gets our ACK of it and FIN in the third packet's
 *    form, which ends the exchange there with nothing kept.  The flow is
 *    the resolver's alone from then on (UP_DONE): the answer is sent
 *    again until acknowledged, the resolver's FIN acknowledged, every
 *    segment judged by accept.c first;
 *  - a responder cookie and no answer: a TCPCT connection (UP_CONN).  The
 *    query goes in the third packet (TSX, the Cookie-Pair and the SYN's
 *    options in the header extension, step 3), and the flow is spliced as
 *    any other, but that the resolver's FIN, RST and last ACK get the pair
 *    and the far server's must carry it, its extension stripped before
 *    the resolver sees them (step 4);
 *  - no TCPCT option: a legacy server (UP_PLAIN), spliced as a protected
 *    backend is (backend.c), the query sent again after its handshake.
 *
 * A TCPCT SYN that goes unanswered for RTO_CLIENT's wait (the far
 * server's round trip is unknown: RFC 6298 §2.1's 1 s) is taken for one a
 * firewall dropped: the first retransmission is a plain SYN.  What each
 * far server turned out to be is cached (farcache.h): a legacy one is
 * asked with a plain SYN at once.
 */
#ifndef GATEWAY_UPSTREAM_H
#define GATEWAY_UPSTREAM_H

#include "worker.h"

enum upstream_state {
	UP_NONE = 0,		/* not an upstream flow */
	UP_ASKED,		/* TCPCT SYN out */
	UP_PLAIN,		/* plain TCP with the far server */
	UP_CONN,		/* a TCPCT connection with it */
	UP_DONE,		/* answered in its SYN-ACK: the resolver's only */
};

/* The initiator cookie's size: the largest, which with MSS, SACK,
 * timestamps and window scale fills a SYN's 40 option bytes (§1). */
#define UPSTREAM_COOKIE_LEN	TCPCT_COOKIE_MAX

/* Opens f's far half, its first query held (bind_start's, for an
 * upstream service). */
void upstream_open(struct worker *w, struct flow *f);

/* A far server's segment of an upstream flow while its SYN is out, or
 * after a transaction (UP_DONE). */
enum verdict upstream_far(struct worker *w, struct flow *f, struct pkt *p,
			  struct tcpopt *o, bool csum_partial);

/* Whether a far server's segment of a TCPCT connection may go on: its
 * pair if it has one, one if it is guarded; its extension stripped. */
bool upstream_far_admit(struct worker *w, struct flow *f, struct pkt *p,
			struct tcpopt *o);

/* A resolver's acceptable segment of a flow after its transaction
 * (UP_DONE); dropped. */
enum verdict upstream_local(struct worker *w, struct flow *f,
			    const struct pkt *p, const struct tcpopt *o);

/* Whether the resolver's segment p of a TCPCT connection must carry the
 * pair (before splice_c2b); upstream_guard gives it the pair after. */
bool upstream_guarded(const struct flow *f, const struct pkt *p);
void upstream_guard(struct worker *w, struct flow *f, struct pkt *p,
		    struct tcpopt *o);

/* f's retransmission timer, when it is upstream's (upstream_timed). */
bool upstream_timed(const struct flow *f);
void upstream_timer(struct worker *w, struct flow *f);

#endif
