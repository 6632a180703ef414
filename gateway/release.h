/*
 * Releasing a DNS connection's backend half while its client stays
 * (release.c).
 */
#ifndef GATEWAY_RELEASE_H
#define GATEWAY_RELEASE_H

#include "worker.h"

/* release_check starts a release when one is due (after a spliced
 * segment); release_client and release_backend take a FLOW_RELEASING
 * flow's segments, release_timer its retransmission timer. */
void release_check(struct worker *w, struct flow *f);
enum verdict release_client(struct worker *w, struct flow *f, struct pkt *p,
			    const struct tcpopt *o, bool csum_partial);
enum verdict release_backend(struct worker *w, struct flow *f,
			     struct pkt *p, const struct tcpopt *o,
			     bool csum_partial);
void release_timer(struct worker *w, struct flow *f);

#endif
