/*
 * The kernel's flows (carry.h): giving, taking back, catching up.
 */
#include "carry.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "backend.h"
#include "backlog.h"
#include "bind.h"
#include "conn.h"
#include "release.h"
#include "splice.h"

/* What the worker's entry said of f when it was given: what the kernel
 * did since shows against it. */
struct given {
	uint8_t fin;
	uint32_t c_nxt, b_nxt;
};

static void
given_of(struct given *g, const struct flow *f)
{
	g->fin = f->fin;
	g->c_nxt = f->c_nxt;
	g->b_nxt = f->b_nxt;
}

/*
 * What the worker would have done itself for the segments the kernel
 * carried (splice.c): the client out of the per-client counts at its FIN,
 * the flow's clocks as a segment moves them, its close, a release when
 * every query has its answer.  The clocks are set from now: a flow that
 * had progress since it was given runs its idle time afresh from the
 * moment the worker learns of it, up to one timeout late.
 */
static void
catch_up(struct worker *w, struct flow *f, const struct given *g,
	 const struct shield_flow *r)
{
	bool progress = f->c_nxt != g->c_nxt || f->b_nxt != g->b_nxt;
	uint8_t flags = r->flags;

	/* A binding the kernel made: its first query held, its backend's
	 * SYN sent, its SYN-ACK maybe taken. */
	if (f->state == FLOW_BINDING && r->state != SHIELD_STATE_BINDING &&
	    (r->qlen >= SHIELD_QUERY_MAX ||
	     !bind_kernel(w, f, r->query, r->qlen,
			  r->state >= SHIELD_STATE_ESTABLISHED)))
		return;
	if (f->state == FLOW_SYN_SENT && r->state >= SHIELD_STATE_ESTABLISHED)
		backend_kernel_synack(w, f);
	if (f->state == FLOW_ESTABLISHED && r->state == SHIELD_STATE_CLOSING)
		flow_state_set(f, FLOW_CLOSING);
	/* dispatch.c's from_backend, before its splice. */
	if (f->opening && !(flags & SHIELD_REC_OPENING))
		backlog_done(w, f);
	if (f->taken)
		backend_held_acked(w, f, f->b_ack);
	if ((f->fin & FLOW_FIN_CLIENT) && !(g->fin & FLOW_FIN_CLIENT))
		admit_leave(w, f);
	splice_touch(w, f, progress);
	release_check(w, f);
}

/* Takes f back from the kernel if it had it, and catches up: whether it
 * had. */
static bool
take(struct worker *w, struct flow *f)
{
	struct given g;

	given_of(&g, f);
	if (!flow_take(&w->ft, f))
		return false;
	STAT_INC(w, carry_taken);
	/* The service's counts have what the kernel carried of it. */
	STAT_ADD(w->svc_st[f->service].c2b, flow_rec(&w->ft, f)->c2b);
	STAT_ADD(w->svc_st[f->service].b2c, flow_rec(&w->ft, f)->b2c);
	catch_up(w, f, &g, flow_rec(&w->ft, f));
	return true;
}

/* The first query a flow in SYN_SENT holds, for its record: NULL when
 * there is none the kernel may send. */
static const uint8_t *
held_query(const struct worker *w, const struct flow *f, uint16_t *len)
{
	struct pkt p;

	if (f->hold < 0 ||
	    pkt_parse(&p, w->hold.buf[f->hold], w->hold.len[f->hold]) !=
		    PKT_OK ||
	    p.paylen != f->taken || p.paylen >= SHIELD_QUERY_MAX)
		return NULL;
	*len = (uint16_t)p.paylen;
	return p.data + p.payoff;
}

bool
carry_able(const struct worker *w, const struct flow *f)
{
	bool dns = w->cfg->services[f->service].kind == SERVICE_DNS;

	if (!w->ring || f->tcpct || f->tfo_pending)
		return false;
	switch (f->state) {
	case FLOW_BINDING:
		/* Its first query the kernel's to bind (shield.bpf.c's
		 * bind_c2b): a DNS client's first binding, nothing of it
		 * framed or held yet, no FIN. */
		return dns && !f->dns_bound && !f->dns.started &&
		       !dnsframe_mid(&f->dns) && f->hold < 0 && !f->taken &&
		       !f->fin && f->timer == FLOW_TIMER_IDLE &&
		       w->backend_dev[f->service];
	case FLOW_SYN_SENT:
		/* The backend's SYN-ACK the kernel's to answer with the held
		 * query: the SYN's timer is the worker's. */
		return dns && f->hold >= 0 && f->taken &&
		       f->taken < SHIELD_QUERY_MAX && !f->fin &&
		       f->timer >= FLOW_TIMER_RTO &&
		       f->timer <= FLOW_TIMER_RTO_LAST &&
		       w->backend_dev[f->service];
	case FLOW_ESTABLISHED:
	case FLOW_CLOSING:
		break;
	default:
		return false;
	}
	/* Held data the backend has to acknowledge: the kernel tells when
	 * it did, the retransmission timer is the worker's. */
	if (f->hold >= 0)
		return f->taken && f->timer >= FLOW_TIMER_RTO &&
		       f->timer <= FLOW_TIMER_RTO_LAST;
	return f->timer == FLOW_TIMER_IDLE || f->timer == FLOW_TIMER_MSG ||
	       f->timer == FLOW_TIMER_CLOSING;
}

void
carry_give(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];
	struct flow_handover h = {
		.worker = w->id,
		.dns = svc->kind == SERVICE_DNS,
		.now_ns = w->now_ms * 1000000,
	};

	if (f->state == FLOW_FREE || flow_carried(&w->ft, f) ||
	    !carry_able(w, f))
		return;
	if (f->state == FLOW_SYN_SENT &&
	    !(h.query = held_query(w, f, &h.qlen)))
		return;
	if (svc->pol.max_lifetime)
		h.deadline_ns = (f->born + (uint64_t)svc->pol.max_lifetime *
					   1000) * 1000000;
	/* A place in the backend's backlog for its binding, and the
	 * interface its backend's SYN-ACK comes in by: the service's. */
	if (f->state <= FLOW_SYN_SENT)
		f->b_ifindex = w->backend_dev[f->service] - 1;
	if (f->state == FLOW_BINDING)
		backlog_lend(w, f->service);
	flow_give(&w->ft, f, &h);
	STAT_INC(w, carry_given);
}

struct flow *
carry_flow(struct worker *w, const struct pkt *p, bool from_client)
{
	struct flow_key k = from_client ? worker_client_key(p) : (struct flow_key){
		.family = p->family, .cport = p->dport, .bport = p->sport,
		.caddr = p->dst, .baddr = p->src,
	};

	return w->ring ? flow_lookup(&w->ft, &k) : NULL;
}

struct flow *
carry_segment(struct worker *w, const struct pkt *p, bool from_client)
{
	struct flow *f = carry_flow(w, p, from_client);

	if (f)
		take(w, f);
	return f;
}

/* flow.h's due: an entry the kernel carried meets its timer.  Due as it
 * stands when the kernel carried nothing of it since it was given; else
 * caught up (its clocks set anew, if that moved them) and given back. */
static bool
due(void *arg, struct flow *f, uint64_t cutoff)
{
	struct worker *w = arg;
	uint64_t given = f->given_ns;

	(void)cutoff;
	if (!take(w, f))
		return true;
	/* Gone as it caught up (a binding's framing broken): off its list. */
	if (f->state == FLOW_FREE)
		return false;
	if (flow_rec(&w->ft, f)->last_ns <= given)
		return true;
	carry_give(w, f);
	return false;
}

/*
 * A binding the kernel made, its backend's SYN sent: the worker holds the
 * query, counts the backend's connection in and sets the SYN's timer, as
 * bind_kernel does, without taking the flow from the kernel, which is to
 * answer the SYN-ACK any moment.  It may: what it reads of the record the
 * program wrote before it sent the SYN and no longer writes (the query,
 * the client's clock and window), and what it writes of the entry is its
 * own.  Whether it did (false: the flow is to be taken).
 */
static bool
note_bound(struct worker *w, struct flow *f)
{
	const struct shield_flow *r = flow_rec(&w->ft, f);

	if (f->state != FLOW_BINDING || !flow_carried(&w->ft, f) ||
	    __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) !=
		    SHIELD_STATE_SYN_SENT ||
	    r->qlen >= SHIELD_QUERY_MAX)
		return false;
	f->c_tsval = r->c_tsval;
	f->c_win = r->c_win;
	if (bind_kernel(w, f, r->query, r->qlen, false))
		/* Due at the SYN's timer unless the kernel moves it on. */
		f->given_ns = w->now_ms * 1000000;
	return true;
}

/* One event of the ring. */
static int
on_event(void *ctx, void *data, size_t len)
{
	struct worker *w = ctx;
	struct shield_event ev;
	struct flow *f;
	uint32_t i;

	if (len < sizeof(ev))
		return 0;
	memcpy(&ev, data, sizeof(ev));
	i = ev.slot - w->slot_base;
	if (i >= w->ft.cap)
		return 0;
	f = &w->ft.flows[i];
	if (f->state == FLOW_FREE)
		return 0;
	if (ev.what == SHIELD_EV_BOUND && note_bound(w, f))
		return 0;
	/* Taken since, for a segment, it was caught up then. */
	if (!take(w, f))
		return 0;
	STAT_INC(w, carry_events);
	carry_give(w, f);
	return 0;
}

unsigned
carry_events(struct worker *w)
{
	int n;

	if (!w->ring)
		return 0;
	n = ring_buffer__consume(w->ring);
	return n > 0 ? (unsigned)n : 0;
}

/* Whether f's service is still the one it was made for. */
static bool
same_service(const struct worker *w, const struct flow *f)
{
	const struct service *svc;

	if (f->service >= w->cfg->nservices)
		return false;
	svc = &w->cfg->services[f->service];
	return svc->family == f->key.family && svc->port == f->key.bport &&
	       !memcmp(svc->addr.b, f->key.baddr.b, sizeof(svc->addr.b));
}

unsigned
carry_adopt(struct worker *w)
{
	unsigned n = 0;
	uint32_t i;

	if (!w->ft.adopted)
		return 0;
	for (i = 0; i < w->ft.cap; i++) {
		struct flow *f = &w->ft.flows[i];

		if (f->state == FLOW_FREE)
			continue;
		if (!same_service(w, f)) {
			flow_release(&w->ft, f, FLOW_SHUTDOWN);
			continue;
		}
		if (f->backend_held)
			atomic_fetch_add_explicit(&w->gw->backend_open[f->service],
						  1, memory_order_relaxed);
		if (f->opening)
			STAT_ADD(w->opening[f->service], 1);
		if (f->tfo_pending)
			w->tfo_pending[f->service]++;
		if (flow_carried(&w->ft, f))
			w->ft.st.carried++;
		n++;
	}
	for (i = 0; i < w->ft.cap; i++) {
		struct flow *f = &w->ft.flows[i];

		if (f->state == FLOW_FREE || f->hold < 0)
			continue;
		f->hold = -1;
		conn_reset(w, f, FLOW_SHUTDOWN);
		n--;
	}
	STAT_ADD(w->st.adopted, n);
	return n;
}

/* The places the worker lent the kernel's bindings (backlog.c), back. */
static void
tickets_clear(struct worker *w)
{
	if (!w->tickets)
		return;
	for (unsigned s = 0; s < SHIELD_MAX_SERVICES; s++)
		__atomic_store_n(&w->tickets[s], 0, __ATOMIC_RELAXED);
}

int
carry_init(struct worker *w, char *err, size_t errlen)
{
	struct shield *sh = w->gw->shield;
	int fd;

	if (!sh || !w->cfg->kernel_flows)
		return 0;
	fd = shield_ring(sh, w->id);
	if (fd < 0 ||
	    !(w->ring = ring_buffer__new(fd, on_event, w, NULL))) {
		snprintf(err, errlen, "the shield's events ring: %s",
			 strerror(errno));
		return -1;
	}
	w->ft.due = due;
	w->ft.due_arg = w;
	/* A predecessor's places lent went with its counts. */
	w->tickets = shield_tickets(sh, w->id);
	tickets_clear(w);
	return 0;
}

void
carry_fini(struct worker *w)
{
	/* None lent for the kernel to bind with while nobody counts them. */
	tickets_clear(w);
	w->tickets = NULL;
	if (w->ring)
		ring_buffer__free(w->ring);
	w->ring = NULL;
	w->ft.due = NULL;
}

int
carry_fd(const struct worker *w)
{
	return w->ring ? ring_buffer__epoll_fd(w->ring) : -1;
}
