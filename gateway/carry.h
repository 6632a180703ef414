/*
 * The kernel's flows (HACKING.md, "The kernel's flows"): the established
 * flows a worker gives the kernel shield to carry (flow.h's flow_give),
 * their segments it takes back to handle itself when the program passed
 * one on, and what it catches up with of what the program did meanwhile:
 * its events (a FIN, the close, every DNS query answered) and, at a flow's
 * timer, the segments it carried.  With kernel-flows off or no shield the
 * worker carries every flow itself, as before.
 */
#ifndef GATEWAY_CARRY_H
#define GATEWAY_CARRY_H

#include "worker.h"

/* Sets worker w up to give flows to the kernel, when its gateway does
 * (kernel-flows and a shield): its events ring, its table's hook.  0, or
 * -1 with a message in err. */
int carry_init(struct worker *w, char *err, size_t errlen);
void carry_fini(struct worker *w);

/* The descriptor to poll for the ring's events; -1 without one. */
int carry_fd(const struct worker *w);

/*
 * The flow a segment from the client (or the backend) belongs to, taken
 * back from the kernel if it had it, caught up: NULL when there is none.
 * The worker handles the segment, then gives the flow back (carry_give).
 */
struct flow *carry_segment(struct worker *w, const struct pkt *p,
			   bool from_client);
/* The same without taking it back: the flow a segment made (a verified
 * handshake's), to give the kernel.  NULL without kernel flows. */
struct flow *carry_flow(struct worker *w, const struct pkt *p,
			bool from_client);

/* Gives f to the kernel when it may carry it as f now stands. */
void carry_give(struct worker *w, struct flow *f);

/* Whether the kernel may carry f: an established or closing flow of
 * nothing but the splice (no TCPCT, Fast Open or release), or one whose
 * held data or first answer the worker waits for, which the kernel tells
 * it of. */
bool carry_able(const struct worker *w, const struct flow *f);

/* Catches up with the ring's events; how many there were. */
unsigned carry_events(struct worker *w);

/*
 * The flows of a table a predecessor left (flow.h's flow_table_place,
 * pinned): taken over as they stand, the counts that are not in the table
 * made again from them (backends open, backlog places, Fast Open pending);
 * those whose held data is gone (it was the predecessor's memory) or whose
 * service is not this configuration's are reset.  Before the worker runs.
 * Returns how many it took over.
 */
unsigned carry_adopt(struct worker *w);

#endif
