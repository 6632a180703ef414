/*
 * The TCPCT responder (responder.c), RFC 6013, in front of a backend that
 * knows nothing of it.
 */
#ifndef GATEWAY_RESPONDER_H
#define GATEWAY_RESPONDER_H

#include "worker.h"

/* responder_synack answers a Cookie SYN; responder_verify makes a flow
 * from a third packet (true when it was one, valid or not, and needs
 * nothing more); responder_admit checks and normalises a client segment of
 * a TCPCT flow (false: drop it); responder_b2c gives the backend's guarded
 * segments the pair. */
enum verdict responder_synack(struct worker *w, const struct service *svc,
			      struct pkt *p, const struct tcpopt *o,
			      unsigned clen);
bool responder_verify(struct worker *w, const struct service *svc,
		      struct flow *old, struct pkt *p, struct tcpopt *o,
		      unsigned clen, bool csum_partial);
bool responder_admit(struct worker *w, struct flow *f, struct pkt *p,
		     struct tcpopt *o);
void responder_b2c(struct worker *w, struct flow *f, struct pkt *p,
		   struct tcpopt *o);
/* A UDP answer from a DNS backend (ours, or passed on); a transaction
 * whose backend did not answer in time. */
enum verdict responder_udp(struct worker *w, struct pkt *p);
void responder_txn_timer(struct worker *w, struct txn *x);

#endif
