/*
 * Delayed binding (bind.c): no backend connection until a client has sent
 * a whole first message.
 */
#ifndef GATEWAY_BIND_H
#define GATEWAY_BIND_H

#include "worker.h"

/* A client segment of a flow in FLOW_BINDING; the segment is consumed
 * (dropped), and f may be gone after.  bind_close closes a binding flow's
 * client with a FIN from the backend's address.  bind_take holds p's new
 * bytes (BIND_OK, *taken of them), or drops p (BIND_DROP), or they are
 * more than a binding holds (BIND_FULL), or they broke the service's
 * framing and f is gone (BIND_GONE); the caller acknowledges what is held
 * with bind_acknowledge, unless the backend is called at once.
 * bind_resume carries on with a flow bound again after a release, with
 * what bind_take held meanwhile; bind_start opens the backend of a flow
 * that waited for the backend's backlog (backlog.h). */
void bind_client(struct worker *w, const struct service *svc, struct flow *f,
		 const struct pkt *p, const struct tcpopt *o,
		 bool csum_partial);
void bind_close(struct worker *w, struct flow *f);
enum bind_take { BIND_OK, BIND_DROP, BIND_FULL, BIND_GONE };
enum bind_take bind_take(struct worker *w, struct flow *f, const struct pkt *p,
			 bool csum_partial, uint32_t *taken);
void bind_acknowledge(struct worker *w, const struct flow *f);
/* The window a binding flow's client has now (raw, in its units). */
uint16_t bind_window(struct worker *w, const struct flow *f);
void bind_resume(struct worker *w, struct flow *f);
void bind_start(struct worker *w, struct flow *f);
/* What bind_client and bind_start do but send, for a binding the kernel
 * made of f's first query (carry.h): the query held, the backend's SYN
 * sent and, answered, its SYN-ACK taken.  false when f is gone (the
 * framing broken). */
bool bind_kernel(struct worker *w, struct flow *f, const uint8_t *query,
		 uint16_t qlen, bool answered);

#endif
