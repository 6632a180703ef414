/*
 * Which segments of a live flow a client may send: RFC 9293 §3.10.7.4's
 * acceptability test with RFC 5961's stricter rules for RST, SYN and ACK,
 * applied in every flow state before anything (a TSval, a window, a FIN,
 * a byte) is taken from the segment.  An off-path attacker who knows the
 * four-tuple but not the sequence numbers then needs about 2^31 tries to
 * have one segment taken (a 2^16 window for seq times a 2^16 one for ack),
 * and one RST in 2^31 at best (two exact values).
 *
 * What the receiving end expects next (RCV.NXT) depends on who it is: the
 * gateway itself while a flow is binding or its backend opening, then the
 * backend, whose latest ACK tcpctd saw.
 */
#ifndef GATEWAY_ACCEPT_H
#define GATEWAY_ACCEPT_H

#include <stdbool.h>

#include "worker.h"

/* RFC 5961 §7: challenge ACKs are rate-limited, per flow as Linux's
 * tcp_invalid_ratelimit does (one in 500 ms), and per worker as its
 * tcp_challenge_ack_limit does (1000 a second). */
#define ACCEPT_CHALLENGE_INTERVAL_MS	500
#define ACCEPT_CHALLENGE_PER_S		1000

/*
 * Whether the client segment p of f is acceptable.  An unacceptable one
 * is counted and, where RFC 9293 or RFC 5961 answer it (a RST in the
 * window but not exact, an ACK outside what was sent, a segment outside
 * the window), answered with a challenge ACK within the limits above;
 * the caller drops it.  An acceptable one raises f's record of the
 * client's largest window.
 */
bool accept_client(struct worker *w, struct flow *f, const struct pkt *p);

/*
 * Whether a SYN on f's tuple may begin a new connection (a cookie
 * SYN-ACK, then a verified ACK replacing f): only once both sides have
 * sent their FIN.  On any other live flow RFC 5961 §4 answers a SYN with
 * a challenge ACK (accept_syn does), and a verified ACK never replaces it.
 */
bool accept_reusable(const struct flow *f);

/* A SYN on the live, not reusable, flow f: counted, challenged. */
void accept_syn(struct worker *w, struct flow *f);

/*
 * Whether the segment p from the backend of f (SYN-ACKs aside: they are the
 * handshake's) is one its client would take and its backend could have
 * sent; only such a segment moves the flow (its ACK, FIN, window,
 * timestamp; what guard.c and release.c go by).  Its source address
 * proves nothing: a packet with the backend's address may come from
 * anyone who can deliver one to the gateway's ingress, the client itself
 * among them (the rules drop those that come from an interface the route
 * to the backend does not use, but not on a one-armed gateway).  So:
 *
 *  - a RST at exactly what the backend sent (b_nxt) or what the client
 *    acknowledged (c_ack), else dropped (rst_out_of_window);
 *  - seq, in client space, as the client's receiver judges it (RFC 9293
 *    §3.10.7.4 from its side: RCV.NXT is at least c_ack, RCV.WND its
 *    window, at least FLOW_WINDOW_MIN), and within the backend's own
 *    sequence state, which no client sets: starting no further than
 *    ACCEPT_BACKEND_SLACK past b_nxt (what lies between was lost before
 *    the gateway), ending no earlier than ACCEPT_BACKEND_SLACK before
 *    c_ack (an old duplicate).  The client's window alone would not do:
 *    the client chooses it, up to 2^30 with window scale 14, and so any
 *    seq within a quarter of the space either side of c_ack;
 *  - an ACK no later than the client's SND.NXT (c_nxt, and our FIN in its
 *    name while releasing) and no earlier than the backend's latest ACK
 *    less its largest window (RFC 5961 §5.2).
 *
 * The ACK costs nothing to guess for whoever sent the client's bytes, so
 * seq is all a forger must guess: one in (b_nxt − c_ack + 2 ·
 * ACCEPT_BACKEND_SLACK) / 2^32, about 2^-15 with nothing in flight.  An
 * unacceptable segment is counted (backend_unacceptable) and dropped.  An
 * old duplicate further behind within the client's window (a spurious
 * retransmission, common where paths reorder) goes on to a spliced flow's
 * client unlearnt (accept_backend_old below): the client drops it and its
 * ACK and D-SACK tell the backend how far it is, and that the
 * retransmission was spurious (RFC 3708); a forger must guess a seq among
 * the bytes the backend sent, and wins the client's duplicate ACK, nothing
 * more.  While releasing, with no client
 * behind, the ACK is ours (rate-limited as challenges are).
 */
#define ACCEPT_BACKEND_SLACK	FLOW_WINDOW_MIN

bool accept_backend(struct worker *w, struct flow *f, const struct pkt *p);
/* Whether p, from f's backend, is an old duplicate of a spliced flow: wholly
 * more than ACCEPT_BACKEND_SLACK behind what the client acknowledged, within
 * its window and within what the backend ever sent.  It goes on to the client unlearnt (splice.h's
 * splice_b2c_old), for the client to acknowledge with D-SACK (RFC 2883),
 * as its receiver would have a duplicate that came by any other route
 * (RFC 9293 §3.10.7.4: not acceptable, an ACK in reply). */
bool accept_backend_old(const struct flow *f, const struct pkt *p);

/* What the client's receiver expects next from it (client space). */
uint32_t accept_rcv_nxt(const struct flow *f);

#endif
