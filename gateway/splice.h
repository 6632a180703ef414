/*
 * The splice (splice.c): a segment of an established flow translated in
 * flight, its FINs followed.
 */
#ifndef GATEWAY_SPLICE_H
#define GATEWAY_SPLICE_H

#include "worker.h"

void splice_c2b(struct worker *w, struct flow *f, struct pkt *p,
		const struct tcpopt *o, bool csum_partial);
void splice_b2c(struct worker *w, struct flow *f, struct pkt *p,
		const struct tcpopt *o, bool csum_partial);
/* A backend's old duplicate (accept.h's accept_backend_old) in the
 * client's view, f untouched: the client drops it and answers with the ACK
 * and D-SACK (RFC 2883) the backend needs. */
void splice_b2c_old(struct worker *w, const struct flow *f, struct pkt *p,
		    const struct tcpopt *o, bool csum_partial);

/* What a spliced segment does to f's clocks and state: the idle or the
 * message clock, the closing one once a FIN is in (progress: the segment
 * brought something new), the backend's slot given back once both sides
 * closed, the close once both FINs are acknowledged. */
void splice_touch(struct worker *w, struct flow *f, bool progress);

#endif
