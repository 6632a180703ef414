/*
 * A connection's life in the flow table (conn.c): made in one place, ended
 * in one that gives back everything it holds.
 */
#ifndef GATEWAY_CONN_H
#define GATEWAY_CONN_H

#include "worker.h"

/* What a handshake agreed with the client: a flow starts from it. */
struct conn_start {
	enum flow_state state;	/* FLOW_BINDING or FLOW_SYN_SENT */
	uint32_t cisn;		/* the client's ISN */
	uint32_t gisn;		/* ours */
	uint32_t gw_tsval;	/* our SYN-ACK's TSval */
	uint32_t c_tsval;	/* the client's latest TSval */
	uint16_t c_win;		/* its window, in its scaled units */
	uint16_t mss;		/* for the backend */
	bool ts, sack, ws;	/* as for struct flow */
	uint8_t c_ws;		/* the client's shift, with ws */
	uint8_t adv_ws;		/* the shift we announced, with ws */
};

/* Makes the flow of a verified client from st, replacing old (may be
 * NULL); NULL when a policy cap or a full table refuses it (counted;
 * refused with a RST, deferred without). */
struct flow *conn_open(struct worker *w, const struct service *svc,
		       struct flow *old, const struct pkt *p,
		       const struct conn_start *st);
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
