/*
 * The flow table: one entry per verified connection, per worker.
 *
 * Preallocated and bounded; nothing allocates after flow_table_init().  An
 * entry is found by its four-tuple from either direction, sits on at most
 * one timer list, and leaves the table only through flow_release(), which
 * takes the reason and keeps the counters.
 *
 * Timer lists are per service and kind.  An entry is appended with a
 * stamp, the time it was put there, and every entry of a list has the same
 * timeout (its service's, for that kind), so each list is in expiry order
 * and its head is the only entry to look at; a timeout that changes (the
 * overload mode) changes for the whole list at once.
 */
#ifndef GATEWAY_FLOW_H
#define GATEWAY_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "../nfq/pkt.h"
#include "../nfq/tcpct.h"
#include "../shield/maps.h"
#include "dnsmsg.h"

#define FLOW_NIL	UINT32_MAX
#define FLOW_SERVICES	64	/* = POLICY_MAX_SERVICES */

enum flow_state {
	FLOW_FREE = 0,
	FLOW_BINDING,		/* verified; no backend until a first
				 * message (bind.c) */
	FLOW_SYN_SENT,		/* backend SYN out */
	FLOW_ESTABLISHED,	/* spliced */
	FLOW_RELEASING,		/* our FIN out to the backend, for a client
				 * that stays (release.c) */
	FLOW_CLOSING,		/* a FIN seen */
	FLOW_CLOSED,		/* both FINs acknowledged: lingering */
	FLOW_STATE_MAX
};

/* Retransmission waits double (RFC 6298 §5.5): one timer list per wait. */
#define FLOW_RTO_LEVELS	4

/* Timer lists; within one, every entry has the same timeout, so appending
 * on each touch keeps the list sorted by expiry. */
enum flow_timer {
	FLOW_TIMER_NONE = 0,
	FLOW_TIMER_RTO,		/* a retransmission, first of the levels */
	FLOW_TIMER_RTO_LAST = FLOW_TIMER_RTO + FLOW_RTO_LEVELS - 1,
	FLOW_TIMER_IDLE,
	FLOW_TIMER_MSG,		/* a DNS message begun, not complete */
	FLOW_TIMER_CLOSING,
	FLOW_TIMER_CLOSED,
	FLOW_TIMER_DONE,	/* over and nothing to linger for (TCPCT) */
	FLOW_TIMER_QUEUED,	/* waiting for a place in the backend's
				 * backlog (backlog.c) */
	FLOW_TIMER_MAX
};

enum flow_reason {
	FLOW_RST_CLIENT = 0,
	FLOW_RST_BACKEND,
	FLOW_DONE,		/* closed by FINs, linger over */
	FLOW_IDLE,
	FLOW_CLOSING_TIMEOUT,
	FLOW_SYN_TIMEOUT,	/* the backend never answered */
	FLOW_REFUSED,		/* the backend answered the SYN with RST */
	FLOW_REPLACED,		/* a new verified handshake on the tuple */
	FLOW_EVICTED,		/* a lingering entry reclaimed for a new one */
	FLOW_OPTIONS,		/* the backend's options contradict its profile */
	FLOW_TFO_UNACKED,	/* Fast Open: our SYN-ACK never acknowledged */
	FLOW_MSG_TIMEOUT,	/* a DNS message not completed in time */
	FLOW_FRAMING,		/* DNS framing broken, or not a request */
	FLOW_MAX_QUERIES,	/* more DNS messages than max-queries */
	FLOW_LIFETIME,		/* older than max-lifetime */
	FLOW_FIN_UNBOUND,	/* the client closed before a first message */
	FLOW_HELD_UNACKED,	/* the backend never acknowledged held data */
	FLOW_RELEASE_STUCK,	/* a release the client never acknowledged */
	FLOW_BACKLOG_TIMEOUT,	/* no place in the backend's backlog in time */
	FLOW_HOLD_FULL,		/* the kernel's binding found no hold slot */
	FLOW_SHUTDOWN,
	FLOW_REASON_MAX
};

const char *flow_reason_name(enum flow_reason r);
const char *flow_state_name(enum flow_state s);

struct flow_key {
	uint8_t family;
	uint16_t cport, bport;	/* client's and backend's port */
	struct inaddr caddr, baddr;
};

/* The window a client segment is judged against until the backend has
 * advertised a larger one: the largest before scaling (RFC 7323 §2.2). */
#define FLOW_WINDOW_MIN		65535u

/* FIN bookkeeping bits. */
#define FLOW_FIN_CLIENT		0x01	/* client sent FIN */
#define FLOW_FIN_CLIENT_ACKED	0x02
#define FLOW_FIN_BACKEND	0x04
#define FLOW_FIN_BACKEND_ACKED	0x08
#define FLOW_FIN_BACKEND_FIRST	0x10	/* the backend closed first */

/*
 * What the DNS framer judged (DNSFRAME_JUDGED bytes: the length and header
 * bytes 2..5) of a DNS client's latest messages, for those the backend has
 * not acknowledged yet: a segment sent again must carry the same bytes
 * there (guard.c).  The messages follow each other from start, so each
 * one's place comes from the lengths before it.
 */
#define FLOW_DNS_SENT	8

struct flow_dnssent {
	uint32_t start;		/* seq of the oldest one's first byte */
	uint32_t lost;		/* with gap: judged bytes of messages that
				 * fell out (more than FLOW_DNS_SENT) lie
				 * before this seq */
	uint8_t head, n;	/* the oldest entry; entries */
	bool gap;
	uint16_t len[FLOW_DNS_SENT];
	uint8_t hdr[FLOW_DNS_SENT][4];
};

struct flow {
	struct flow_key key;
	uint32_t hnext;		/* next entry in the bucket, or FLOW_NIL */
	uint32_t tprev, tnext;	/* neighbours on the timer list */
	uint64_t stamp;		/* monotonic ms: put on the timer list */
	uint64_t born;		/* monotonic ms: verified */
	uint8_t state;		/* enum flow_state */
	uint8_t timer;		/* enum flow_timer: the list it is on */
	uint8_t fin;		/* FLOW_FIN_* */
	uint8_t syn_tries;	/* retransmissions (SYN, held data, FIN) */
	uint8_t service;	/* index into the configuration's services */
	bool counted;		/* in the per-client limits (limit.h) */
	bool asked;		/* a whole DNS message came: not pending */

	/* Options as negotiated on each side. */
	bool ts;		/* timestamps on both sides */
	bool sack;		/* SACK-permitted offered to the backend */
	bool ws;		/* window scaling negotiated with the client */
	uint8_t c_ws;		/* client's shift (0 without ws) */
	uint8_t adv_ws;		/* shift we announced to the client */
	uint8_t b_ws;		/* backend's shift, from its SYN-ACK */
	uint8_t c_ws_b;		/* client's shift as the backend applies it */
	uint16_t mss;		/* MSS given to the backend */

	/* Sequence spaces: the client's is kept end to end.  A binding
	 * starts at the bases: the ISNs of the handshake, and after a
	 * release (release.c) both sides' next sequence numbers less one,
	 * where the next backend connection's SYN and SYN-ACK stand. */
	uint32_t c_base;	/* the client's: the backend SYN's seq */
	uint32_t g_base;	/* ours, in the client's view: our ISN */
	uint32_t bisn;		/* backend's ISN */
	uint32_t seq_delta;	/* bisn − g_base */
	uint32_t ts_delta;	/* client-facing TSval − backend TSval */
	uint32_t gw_tsval;	/* TSval of our SYN-ACK (the client's TSecr) */
	uint32_t c_tsval;	/* latest TSval from the client */
	uint16_t c_win;		/* latest window from the client (raw) */
	uint32_t c_maxwin;	/* the largest it advertised, bytes (the
				 * MAX.SND.WND of RFC 5961 §5.2) */

	uint32_t c_nxt;		/* client's highest seq + len (its space) */
	uint32_t b_nxt;		/* backend's highest seq + len (client space) */
	uint32_t c_fin;		/* seq of the client's FIN */
	uint32_t b_fin;		/* seq of the backend's FIN (client space) */

	int32_t hold;		/* early-data slot, or -1 */
	uint16_t taken;		/* data bytes we acknowledged to the client
				 * for the backend (Fast Open SYN data, a
				 * DNS first message), held until it acks */
	bool tfo_pending;	/* made at a SYN, its SYN-ACK not yet acked */

	/* RFC 6013: a TCPCT flow's guarded segments (FIN, RST, the last
	 * ACK) must carry this Cookie-Pair, and the backend's get it. */
	bool tcpct;
	uint8_t ck_len;		/* one cookie's size; the pair is twice it */
	uint8_t ck[TCPCT_PAIR_MAX];	/* initiator then responder cookie */
	/* An upstream service's flow (upstream.h): how its far half goes,
	 * enum upstream_state; 0 for every other. */
	uint8_t up;

	struct dnsframe dns;	/* the client's messages (DNS services) */
	uint32_t dns_nxt;	/* the client's next byte to frame */
	uint32_t dns_bound;	/* messages before the latest binding */
	uint32_t c_ack;		/* the client's latest ACK (its space) */

	/* The backend's half, for its release (release.c): its answers
	 * framed as they pass, how far it acknowledged the client, and the
	 * FIN we send it in the client's stead. */
	struct dnsframe bdns;
	uint32_t bdns_nxt;	/* its next byte to frame (client space) */
	uint32_t b_ack;		/* its latest ACK (client space) */
	uint32_t b_maxwin;	/* the largest window it advertised, bytes */
	uint16_t b_win;		/* its latest window (raw, its scale) */
	uint32_t ts_out;	/* the latest TSval the client got from it */
	uint32_t r_fin;		/* seq of our FIN to it (client space) */
	bool backend_held;	/* counted in the service's open backends */
	bool opening;		/* in the backend's backlog: not answered */

	struct flow_dnssent sent;	/* the client's latest messages */

	/* The last challenge ACK (accept.c), for its rate limit. */
	bool challenged;
	uint32_t challenge_ms;	/* monotonic ms, truncated */

	/* When the kernel was last given it (monotonic ns, flow_give). */
	uint64_t given_ns;
	/* The interfaces each side's segments come in by (the latest the
	 * worker took; 0: none yet): the kernel carries a segment only from
	 * its side's, so that one with a backend's address from the clients'
	 * side meets the rules' rpfilter drop as ever. */
	uint32_t c_ifindex, b_ifindex;
};

struct flow_stats {
	uint64_t created, table_full;
	uint64_t released[FLOW_REASON_MAX];
	uint64_t active;
	uint64_t carried;	/* the kernel carries now (flow_give) */
};

/*
 * What a table keeps beside its entries and buckets, in the same memory
 * block (flow_table_place): a daemon that takes over a block its
 * predecessor left (a pinned one, the kernel's flows) finds the table as
 * it stood, its entries, lists and clocks (monotonic) all good.
 */
#define FLOW_LAYOUT_VERSION	3	/* up with any change to struct flow */

struct flow_core {
	uint64_t layout;	/* FLOW_LAYOUT: what a successor must share */
	uint32_t cap, mask;	/* entries; buckets − 1 */
	uint32_t used;
	uint32_t free_head;	/* free entries chained through hnext */
	uint64_t seed;
	uint32_t head[FLOW_SERVICES][FLOW_TIMER_MAX];
	uint32_t tail[FLOW_SERVICES][FLOW_TIMER_MAX];
};

#define FLOW_LAYOUT							\
	((uint64_t)FLOW_LAYOUT_VERSION << 48 |				\
	 (uint64_t)sizeof(struct flow) << 16 | sizeof(struct flow_core))

struct flow_table {
	struct flow_core *c;
	struct flow *flows;
	uint32_t *buckets;
	uint32_t cap;		/* c->cap */
	void *block;		/* c, flows and buckets */
	bool block_owned;	/* allocated by flow_table_init */
	bool adopted;		/* a predecessor's, as it left it */
	struct flow_stats st;
	/* Told of every key that enters the table (live, its entry idx) and
	 * leaves it, evictions included: the kernel shield's set of live
	 * tuples.  NULL: nobody is. */
	void (*watch)(void *arg, const struct flow_key *k, uint32_t idx,
		      bool live);
	void *watch_arg;
	/* Asked of an entry the kernel carries, before its timer is taken
	 * as expired (flow_timer_expired): whether it is due after all,
	 * once the owner caught up with what the kernel did.  NULL: none is
	 * carried. */
	bool (*due)(void *arg, struct flow *f, uint64_t cutoff);
	void *due_arg;
	/* A record per entry (flow_rec): the table's own, or the shield's
	 * (flow_table_share_recs). */
	struct shield_flow *recs;
	bool recs_shared;
};

/* Allocates a table of cap entries and their records.  Returns 0 or -1
 * (ENOMEM). */
int flow_table_init(struct flow_table *t, uint32_t cap, uint64_t seed);
void flow_table_free(struct flow_table *t);

/* The bytes of the block a table of cap entries lives in. */
size_t flow_table_bytes(uint32_t cap);

/*
 * A table of cap entries in block (flow_table_bytes(cap) bytes, the
 * caller's, which outlives it), with records of its own: the table left
 * there, when keep and it was one of this layout and size (t->adopted),
 * else a new one.  Returns 0 or -1 (ENOMEM).
 */
int flow_table_place(struct flow_table *t, uint32_t cap, uint64_t seed,
		     void *block, bool keep);
/* The table's records from now on are recs[0..cap), the kernel shield's
 * (zeroed); its own go.  Before any entry is made. */
void flow_table_share_recs(struct flow_table *t, struct shield_flow *recs);

struct flow *flow_lookup(struct flow_table *t, const struct flow_key *k);

/*
 * Inserts a new entry for k (which must not be in the table); NULL, with
 * table_full counted, when the table is full.  The entry is zeroed but for
 * its key, with hold = -1; set its service before its first timer.
 */
struct flow *flow_insert(struct flow_table *t, const struct flow_key *k);

/* What a full table gives up for a new entry: the oldest lingering
 * (FLOW_CLOSED) one, never a live connection; NULL when there is none.
 * Its owner ends it (FLOW_EVICTED) before inserting. */
bool flow_table_full(const struct flow_table *t);
struct flow *flow_evictable(struct flow_table *t);

/*
 * The flow's state machine, one table of moves (flow.c): FREE → BINDING or
 * SYN_SENT (a verified handshake), BINDING → SYN_SENT (a first message),
 * SYN_SENT → ESTABLISHED (the backend's SYN-ACK), ESTABLISHED → RELEASING
 * (release.c) or CLOSING (a FIN), RELEASING → BINDING (released) or
 * CLOSING (the client closes too), CLOSING → CLOSED (both FINs
 * acknowledged).  Any state → FREE is flow_release's alone.
 * flow_state_set makes a move; a checked build (TCPCTD_CHECKED: the
 * sanitizers' and the fuzzers') stops at one not in the table.
 */
bool flow_state_legal(enum flow_state from, enum flow_state to);
void flow_state_set(struct flow *f, enum flow_state to);

/* Removes f from the table and its timer list; the only way out. */
void flow_release(struct flow_table *t, struct flow *f, enum flow_reason r);

/* Puts f at the tail of its service's timer list which, stamped now. */
void flow_timer_set(struct flow_table *t, struct flow *f,
		    enum flow_timer which, uint64_t now);

/* The cutoff of a timer list whose timeout is timeout_ms: now − timeout,
 * or 0 so early in the clock's life. */
static inline uint64_t
flow_timer_cutoff(uint64_t now, uint64_t timeout_ms)
{
	return now > timeout_ms ? now - timeout_ms : 0;
}

/* The head of service's list which if its stamp is cutoff or older (its
 * timeout is over: flow_timer_cutoff), or NULL. */
struct flow *flow_timer_expired(struct flow_table *t, unsigned service,
				enum flow_timer which, uint64_t cutoff);

static inline uint32_t
flow_index(const struct flow_table *t, const struct flow *f)
{
	return (uint32_t)(f - t->flows);
}

/*
 * The kernel's flows (HACKING.md, "The kernel's flows"): each entry's
 * record, which the kernel shield carries while it owns it.  The daemon
 * gives an entry to the kernel (flow_give: its record from the entry, then
 * the owner), and takes it back (flow_take: the owner, a wait until no
 * program is inside, then the entry from its record) before it reads or
 * writes any of its state.
 */
static inline struct shield_flow *
flow_rec(const struct flow_table *t, const struct flow *f)
{
	return &t->recs[flow_index(t, f)];
}

static inline bool
flow_carried(const struct flow_table *t, const struct flow *f)
{
	return __atomic_load_n(&flow_rec(t, f)->owner, __ATOMIC_ACQUIRE) ==
	       SHIELD_OWNER_KERNEL;
}

/* A flow's tuple as the kernel shield's maps key it (client side first,
 * network byte order): its record's and its live tuple's. */
void flow_tuple(struct shield_tuple *t, const struct flow_key *k);

/* What the record needs beside the entry's own fields. */
struct flow_handover {
	uint32_t worker;	/* whose ring hears of it */
	bool dns;		/* a DNS service's */
	uint64_t now_ns;	/* monotonic */
	uint64_t deadline_ns;	/* max-lifetime's end, 0: none */
	/* A flow in SYN_SENT: the first query it holds, for the backend's
	 * SYN-ACK (at most SHIELD_QUERY_MAX − 1 bytes). */
	const uint8_t *query;
	uint16_t qlen;
};

/* Gives f to the kernel. */
void flow_give(struct flow_table *t, struct flow *f,
	       const struct flow_handover *h);

/* Takes f back, if the kernel had it: true, with f as the kernel left it. */
bool flow_take(struct flow_table *t, struct flow *f);

#endif
