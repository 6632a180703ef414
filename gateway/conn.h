/*
 * A connection's life in the flow table (conn.c): made in one place, ended
 * in one that gives back everything it holds.
 */
#ifndef GATEWAY_CONN_H
#define GATEWAY_CONN_H

#include "worker.h"

/* Makes the flow of a verified client, replacing old (may be NULL), in
 * state (FLOW_BINDING or FLOW_SYN_SENT); NULL when a policy cap or a full
 * table refuses it (counted; refused with a RST, deferred without). */
struct flow *conn_open(struct worker *w, const struct service *svc,
		       struct flow *old, const struct pkt *p,
		       enum flow_state state);
/* The RST that tells a verified client it may not have a flow (RFC 9293
 * §3.10.7.1: its seq from the ACK); none for a SYN. */
void conn_refuse(struct worker *w, const struct pkt *p);
/* Ends f, giving back its counts, backend slot, backlog place, Fast Open
 * pending count and hold slot. */
void conn_close(struct worker *w, struct flow *f, enum flow_reason r);
/* Resets both sides of f as its state allows (RFC 5961 §3.2), then ends
 * it. */
void conn_reset(struct worker *w, struct flow *f, enum flow_reason r);
/* The client acknowledged our Fast Open SYN-ACK: f is pending no more. */
void conn_unpend(struct worker *w, struct flow *f);

#endif
