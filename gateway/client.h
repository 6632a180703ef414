/*
 * A client's segment (client.c): its flow's state, or none, decides who
 * takes it.
 */
#ifndef GATEWAY_CLIENT_H
#define GATEWAY_CLIENT_H

#include "worker.h"

enum verdict client_segment(struct worker *w, const struct service *svc,
			    struct pkt *p, struct tcpopt *o,
			    bool csum_partial);

#endif
