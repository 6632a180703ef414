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

#endif
