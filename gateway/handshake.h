/*
 * The handshake with a client (handshake.c), HACKING.md steps 1 to 3, and
 * the parts of a flow that Fast Open and TCPCT make theirs with.
 */
#ifndef GATEWAY_HANDSHAKE_H
#define GATEWAY_HANDSHAKE_H

#include "conn.h"

/* Step 1: a cookie SYN-ACK for the SYN p, with a Fast Open cookie when
 * tfo; built over p as its verdict (synack-verdict) or injected. */
enum verdict handshake_synack(struct worker *w, const struct service *svc,
			      struct pkt *p, const struct tcpopt *o, bool tfo);
/* Steps 2 and 3: true when the ACK p ends one of our handshakes (the flow
 * made, replacing old, or refused), false when it is no cookie's. */
bool handshake_verify(struct worker *w, const struct service *svc,
		      struct flow *old, struct pkt *p, const struct tcpopt *o,
		      bool csum_partial);
/* Holds an early segment, or a bare FIN right behind the one held as its
 * FIN flag; false when its data broke the service's policy and the flow is
 * gone. */
bool handshake_hold(struct worker *w, struct flow *f, const struct pkt *p,
		    bool csum_partial);
/* A flow's start from the SYN p itself (Fast Open: the client's own
 * options, no cookie to decode them from). */
void handshake_syn_start(struct worker *w, const struct service *svc,
			 const struct pkt *p, const struct tcpopt *o,
			 struct conn_start *st);

#endif
