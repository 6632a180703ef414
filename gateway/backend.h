/*
 * The backend's half of a flow (backend.c), HACKING.md step 4.
 */
#ifndef GATEWAY_BACKEND_H
#define GATEWAY_BACKEND_H

#include "worker.h"

/* Sends the backend SYN of a flow and starts its retransmission. */
void backend_open(struct worker *w, struct flow *f);
/* What backend_open and backend_synack do but send, for a binding the
 * kernel made (carry.h): the backend's SYN sent, counted in, on its
 * retransmission timer; then the backend's SYN-ACK taken, the held query
 * sent. */
void backend_kernel_open(struct worker *w, struct flow *f);
void backend_kernel_synack(struct worker *w, struct flow *f);
/* Sends the held segment to the backend; false when there is none. */
bool backend_send_held(struct worker *w, struct flow *f);
/* The backend acknowledged ack (client space) of a flow whose data was
 * taken (Fast Open, a first message): the held data goes once that
 * covers it. */
void backend_held_acked(struct worker *w, struct flow *f, uint32_t ack);
/* A backend segment of a flow in FLOW_SYN_SENT, or a SYN of any. */
enum verdict backend_segment(struct worker *w, struct flow *f,
			     struct pkt *p, const struct tcpopt *o,
			     bool csum_partial);
/* The SYN's retransmission timer of a flow in FLOW_SYN_SENT. */
void backend_syn_timer(struct worker *w, struct flow *f);

#endif
