/*
 * Who may have a connection (admit.c): the per-client counts and rates of
 * a service's policy, and the paces of what tcpctd sends to addresses it
 * has not verified.
 */
#ifndef GATEWAY_ADMIT_H
#define GATEWAY_ADMIT_H

#include "worker.h"

/* admit_client counts a verified client in, as pending too, or refuses it
 * (a RST), or defers it at a pending cap (its segment dropped: the one
 * with its whole query takes it in), each counted; admit_undo undoes it,
 * admit_leave takes a flow's client out of the counts (once), admit_asked
 * out of the pending ones at its first whole message. */
enum admission { ADMIT_OK, ADMIT_REFUSED, ADMIT_DEFERRED };
enum admission admit_client(struct worker *w, const struct service *svc,
			    const struct pkt *p);
void admit_undo(struct worker *w, unsigned service, uint8_t family,
		const struct inaddr *caddr);
void admit_leave(struct worker *w, struct flow *f);
void admit_asked(struct worker *w, struct flow *f);

/* Counts a SYN-ACK (or any answer to an address not verified) towards a
 * client's prefix: false (counted) when over synack-rate. */
bool admit_synack(struct worker *w, const struct pkt *p);
/* Spends bytes of a transaction answer from the prefix's txn-rate: false
 * when it has not that many left. */
bool admit_txn_budget(struct worker *w, uint8_t family,
		      const struct inaddr *caddr, uint32_t bytes);

#endif
