/*
 * TCP Fast Open (tfo.c), RFC 7413, on behalf of a backend that knows
 * nothing of it.
 */
#ifndef GATEWAY_TFO_H
#define GATEWAY_TFO_H

#include "worker.h"

/* tfo_syn looks at a SYN with the option: TFO_COOKIE when its SYN-ACK must
 * carry a fresh cookie, TFO_TAKEN when its data was taken (flow made,
 * SYN-ACK sent), TFO_NONE for a plain classic answer.  tfo_synack (re)sends
 * a Fast Open flow's SYN-ACK. */
enum tfo_syn { TFO_NONE, TFO_COOKIE, TFO_TAKEN };
enum tfo_syn tfo_syn(struct worker *w, const struct service *svc,
		     struct pkt *p, const struct tcpopt *o, bool csum_partial);
void tfo_synack(struct worker *w, const struct flow *f, uint32_t tsecr);

#endif
