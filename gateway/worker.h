/*
 * A worker: one thread, one NFQUEUE queue, its own flow table, keys, raw
 * sockets and counters.  Workers share only the read-only configuration,
 * the master secret and the backend profiles (atomic words), so the packet
 * path takes no lock.
 */
#ifndef GATEWAY_WORKER_H
#define GATEWAY_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../nfq/inject.h"
#include "../nfq/pkt.h"
#include "../nfq/queue.h"
#include "../nfq/tcpopt.h"
#include "../policy/config.h"
#include "../policy/keys.h"
#include "../shield/shield.h"
#include "cookie.h"
#include "farcache.h"
#include "flow.h"
#include "limit.h"
#include "probe.h"
#include "txn.h"
#include "window.h"

/* Counters an operator reads; each is written by its worker only. */
#define WORKER_COUNTERS(X)						\
	X(packets, "packets seen")					\
	X(unprotected, "packets of no protected service (accepted)")	\
	X(truncated, "packets the kernel copied short (dropped)")	\
	X(bad_csum, "segments with a bad TCP checksum (dropped)")	\
	X(syn, "SYNs from clients")					\
	X(syn_bad_flags, "SYN with ACK, RST or FIN from a client")	\
	X(synack_sent, "SYN-ACK cookies sent")				\
	X(synack_capped, "SYN-ACKs, RSTs withheld: prefix over synack-rate") \
	X(ack_verified, "handshakes verified by cookie")		\
	X(no_ack_flag, "client segments without ACK (dropped)")	\
	X(stray_client, "client segments with no flow (dropped)")	\
	X(stray_backend, "backend segments with no flow (dropped)")	\
	X(shield_map_errors, "live tuples the kernel shield's map refused") \
	X(carry_given, "flows given to the kernel to carry")		\
	X(carry_taken, "flows taken back from the kernel")		\
	X(carry_events, "events of flows the kernel carried")		\
	X(carry_bound, "first queries the kernel bound to a backend")	\
	X(tickets_lent, "backlog places lent to the kernel's bindings")	\
	X(adopted, "flows taken over from the daemon before this one")	\
	X(carried_queued, "segments the kernel carried that were queued "	\
	  "(accepted as they were)")					\
	X(held, "early data segments held")				\
	X(hold_full, "early data dropped: no slot")			\
	X(early_dropped, "early data dropped: one segment held")	\
	X(held_fin, "client FINs held with the early data before them") \
	X(backend_syn, "SYNs sent to backends")				\
	X(backend_syn_retrans, "backend SYNs retransmitted")		\
	X(backend_synack, "backend SYN-ACKs")				\
	X(backend_synack_dup, "backend SYN-ACKs repeated")		\
	X(backend_challenge, "backend ACKs to our SYN (old tuple)")	\
	X(backend_refused, "backend RSTs to our SYN")			\
	X(options_mismatch, "backend options unlike its profile")	\
	X(c2b, "client segments spliced")				\
	X(b2c, "backend segments spliced")				\
	X(rst_client, "RSTs from clients")				\
	X(rst_backend, "RSTs from backends")				\
	X(rst_out_of_window, "RSTs no peer could mean (dropped)")	\
	X(rst_challenged, "RSTs in the window, not exact (challenged)") \
	X(syn_challenged, "SYNs on a live flow's tuple (challenged)")	\
	X(challenge_ack, "challenge ACKs sent (RFC 5961)")		\
	X(challenge_ack_limited, "challenge ACKs not sent: over the rate") \
	X(ack_too_old, "client ACKs older than a window (dropped)")	\
	X(backend_unacceptable, "backend segments no client would take (dropped)") \
	X(backend_old_dup, "backend old duplicates passed on for the client to acknowledge, unlearnt") \
	X(out_of_window, "client segments outside the backend's window (dropped)") \
	X(ack_unsent, "client ACKs of data never sent (dropped)")	\
	X(replaced, "flows replaced by a new verified handshake")	\
	X(flow_full, "verified handshakes refused: table full")	\
	X(key_errors, "key derivation failures")			\
	X(tcpct_syn, "TCPCT SYNs (with a Cookie option)")		\
	X(tcpct_classic, "TCPCT SYNs answered classically (no TS)")	\
	X(tcpct_synack, "TCPCT SYN-ACKs with a responder cookie")	\
	X(tcpct_verified, "TCPCT handshakes verified by Cookie-Pair")	\
	X(tcpct_bad, "TCPCT Cookie-Pairs that failed (dropped)")	\
	X(tcpct_expired, "TCPCT responder cookies too old (dropped)")	\
	X(tcpct_no_key, "TCPCT cookies of an unknown key (dropped)")	\
	X(tcpct_unguarded, "TCPCT FIN/RST/last ACK without pair (dropped)") \
	X(tcpct_ext_bad, "TCPCT segments not 32-bit TSX (dropped)")	\
	X(tcpct_guarded, "backend FIN/RST/last ACK given the pair")	\
	X(tcpct_guard_room, "backend segments too big for the pair")	\
	X(tcpct_timewait_rst, "backend TIME-WAITs cleared by a RST")	\
	X(tcpct_advisory_rst, "guarded FINs with no flow: RST with pair")	\
	X(tcpct_txn_asked, "transactions: queries sent to the backend")	\
	X(tcpct_txn_answered, "transactions: answered in the SYN-ACK")	\
	X(tcpct_txn_closed, "transactions: client's ACK of the answer")	\
	X(tcpct_txn_repeated, "transactions: SYN again while pending")	\
	X(tcpct_txn_refused, "transactions: SYN data not one DNS query")	\
	X(tcpct_txn_full, "transactions: no pending slot (handshake)")	\
	X(tcpct_txn_too_big, "transactions: answer TC or too big (handshake)") \
	X(tcpct_txn_over_budget, "transactions: prefix over its budget")	\
	X(tcpct_txn_timeout, "transactions: backend too slow (handshake)") \
	X(tcpct_txn_late, "transactions: answers none waits for (dropped)") \
	X(upstream_asked, "upstream: queries sent in a TCPCT SYN")	\
	X(upstream_answered, "upstream: answered in the far SYN-ACK (transaction)") \
	X(upstream_tcpct_conn, "upstream: responder cookie, no answer (TCPCT connection)") \
	X(upstream_plain, "upstream: far SYN-ACKs without TCPCT (plain TCP)") \
	X(upstream_plain_cached, "upstream: far servers known legacy (plain SYN at once)") \
	X(upstream_silent, "upstream: TCPCT SYNs unanswered (plain SYN instead)") \
	X(upstream_refused, "upstream: TCPCT SYNs refused (RST)")	\
	X(upstream_odd, "upstream: far SYN-ACKs of no path we take (reset, plain SYN)") \
	X(upstream_bad_pair, "upstream: far segments with another Cookie-Pair (dropped)") \
	X(upstream_unguarded, "upstream: far FIN/RST/last ACK without pair (dropped)") \
	X(upstream_guarded, "upstream: resolver FIN/RST/last ACK given the pair") \
	X(upstream_answer_resent, "upstream: answers sent the resolver again") \
	X(upstream_local_late, "upstream: resolver data after the answer's FIN (reset)") \
	X(upstream_cache_tcpct, "upstream cache: far servers known TCPCT")	\
	X(upstream_cache_legacy, "upstream cache: far servers known legacy") \
	X(upstream_cache_miss, "upstream cache: far servers not known")	\
	X(upstream_cache_replaced, "upstream cache: another server's entry given up") \
	X(tfo_request, "Fast Open SYNs asking for a cookie")		\
	X(tfo_valid, "Fast Open SYNs with a valid cookie")		\
	X(tfo_invalid, "Fast Open cookies not ours or too old")	\
	X(tfo_cookie_sent, "SYN-ACKs with a Fast Open cookie")		\
	X(tfo_data_deferred, "SYN data left for the client to re-send")	\
	X(tfo_taken, "Fast Open SYNs whose data was taken (flow at SYN)") \
	X(tfo_syn_repeated, "Fast Open SYNs repeated: SYN-ACK again")	\
	X(tfo_over_limit, "Fast Open SYNs over --tfo-pending (classic)") \
	X(tfo_busy_tuple, "Fast Open SYNs on a live flow's tuple (classic)") \
	X(tfo_synack_retrans, "Fast Open SYN-ACKs sent again (no ACK yet)") \
	X(tfo_unacked, "Fast Open flows given up: SYN-ACK never acked")	\
	X(refused_rate, "verified clients refused: prefix over conn-rate") \
	X(refused_addr, "verified clients refused: address at max-per-addr") \
	X(refused_prefix, "verified clients refused: prefix at max-per-prefix") \
	X(deferred_pending_addr, "verified DNS segments without a query not taken (dropped; a FIN reset): address at max-pending-per-addr") \
	X(deferred_pending_prefix, "verified DNS segments without a query not taken (dropped; a FIN reset): prefix at max-pending-per-prefix") \
	X(dns_out_of_order, "DNS client data past a hole (dropped)")	\
	X(dns_resent_changed, "DNS data sent again, not as framed (dropped)") \
	X(dns_resent_unknown, "DNS data sent again, its framing no longer kept (dropped)") \
	X(dns_short, "DNS messages shorter than a header (closed)")	\
	X(dns_not_request, "DNS messages no client sends (closed)")	\
	X(dns_max_queries, "DNS connections over max-queries (closed)")	\
	X(dns_msg_timeout, "DNS messages not complete in msg-timeout (closed)") \
	X(lifetime_closed, "connections older than max-lifetime (closed)") \
	X(bind_opened, "delayed binding: first message whole, backend opened") \
	X(bind_too_big, "delayed binding: more than a segment, opened early") \
	X(bind_out_of_order, "delayed binding: data past a hole (dropped)") \
	X(bind_fin, "delayed binding: client FIN before a first message") \
	X(held_unacked, "held data the backend never acknowledged (reset)") \
	X(released, "backend halves released, every query answered")	\
	X(release_kept, "... their clients kept, bound again")		\
	X(release_closed, "... their clients closed (keep-client 0)")	\
	X(release_stuck, "releases whose client never took the answer (reset)") \
	X(release_query_held, "queries sent during a release, held for the next") \
	X(overload_entered, "services entering the overload mode")	\
	X(overload_left, "services leaving the overload mode")		\
	X(backlog_queued, "first messages that waited for the backend's backlog") \
	X(backlog_timeout, "clients reset: no place in the backlog in time")

struct worker_stats {
#define X(name, desc) uint64_t name;
	WORKER_COUNTERS(X)
#undef X
	uint64_t parse[PKT_VERDICT_MAX];
	uint64_t tcpopt[TCPOPT_VERDICT_MAX];
	uint64_t cookie[COOKIE_RESULT_MAX];
};

/* The cookie a handshake was made with (HACKING.md, step 1). */
enum dialect { DIALECT_CLASSIC, DIALECT_TCPCT, DIALECT_TFO, DIALECT_MAX };

/* One service's share of the counters above, by dialect where a handshake
 * has one (a SYN-ACK carrying a Fast Open cookie is counted as tfo, the
 * classic ACK that completes it as classic). */
struct service_stats {
	uint64_t synack[DIALECT_MAX];	/* SYN-ACKs sent */
	uint64_t verified[DIALECT_MAX];	/* handshakes verified */
	uint64_t c2b, b2c;		/* segments spliced */
	uint64_t drained;		/* connections refused while draining */
};

struct control;

/* What all workers share; everything but the profiles is read-only. */
struct gateway {
	const struct config *_Atomic cfg;	/* swapped by a reload */
	const struct keys_master *_Atomic master;	/* swapped by a rotation */
	_Atomic uint32_t profile[POLICY_MAX_SERVICES];	/* profile_pack() */
	struct limits limits;		/* per-client counts (admit.c) */
	_Atomic uint32_t backend_open[POLICY_MAX_SERVICES];	/* overload.c */
	atomic_bool overload[POLICY_MAX_SERVICES];
	/* tcpctl drain: new connections refused, those open spliced on. */
	atomic_bool drain[POLICY_MAX_SERVICES];
	/* The main thread's: what the last probe of each backend said, and
	 * the daemon's own life for the metrics. */
	uint8_t backend_state[POLICY_MAX_SERVICES];	/* enum backend_state */
	int64_t start_time;		/* Unix time */
	int64_t reload_time;		/* of the last one taken; start_time */
	bool reload_ok;			/* the last reload taken (or none yet) */
	uint64_t reloads[2];		/* refused, taken */
	const struct control *control;	/* tcpctl's clients; NULL: none */
	/* The kernel shield, when it runs: the main thread writes its maps
	 * but the live tuples, which each worker's flow table writes through
	 * flow_watch (shieldmap_watch, for the worker as its arg; NULL
	 * without the shield). */
	struct shield *shield;
	void (*flow_watch)(void *arg, const struct flow_key *k, uint32_t idx,
			   bool live);
	atomic_bool stop;
};

enum backend_state { BACKEND_UNPROBED, BACKEND_UP, BACKEND_DOWN };

/*
 * One flow as `tcpctl flows` shows it: its tuple, where it stands, and how
 * tcpctd translates between its two halves.  The main thread asks a worker
 * for a dump by raising req; the worker, between two batches, copies up to
 * FLOW_DUMP_MAX of its flows into views, counts them all, and answers by
 * setting done to req.
 */
#define FLOW_DUMP_MAX	1024	/* per worker and request */

struct flow_view {
	struct flow_key key;
	uint8_t state, service, c_ws, b_ws, adv_ws;
	bool tcpct, ts, sack;
	uint16_t mss;
	uint32_t seq_delta, ts_delta;	/* backend − client-facing */
	uint32_t queries;		/* DNS messages from the client */
	uint64_t age_ms;
};

struct flow_dump {
	_Atomic unsigned req, done;
	struct flow_view *view;		/* FLOW_DUMP_MAX of them */
	unsigned n;			/* views filled */
	uint32_t total;			/* flows in the table */
};

struct hold_pool {
	uint8_t (*buf)[INJECT_BUF];
	uint16_t *len;
	int32_t *free;		/* stack of free slots */
	uint32_t nfree, cap;
};

/*
 * Each worker reads two queues: SYNs from clients arrive on their own queue
 * (stateless work only), everything else on the flow queue.  A SYN flood
 * then fills only the SYN queue, and established flows keep their share of
 * the worker (it takes one batch from each in turn).
 */
enum { WORKER_Q_FLOW, WORKER_Q_SYN, WORKER_QUEUES };

struct worker {
	unsigned id;
	struct gateway *gw;
	/* The configuration of this loop turn: a reload swaps gw->cfg, and
	 * the worker takes it at its next turn, so that a packet's service
	 * and the limits it is held to come from one configuration. */
	const struct config *cfg;
	pthread_t thread;
	struct queue q[WORKER_QUEUES];
	struct queue *cur;	/* the queue whose batch is being handled */
	struct inject ij;
	struct flow_table ft;
	struct shield_flows shield_flows;	/* ft's tuples for the shield */
	uint32_t slot_base;	/* ft's first record in the shield's */
	struct ring_buffer *ring;	/* the shield's events for ft; NULL:
					 * the kernel carries none of its
					 * flows (carry.h) */
	struct cookie_keys keys;
	struct cookie_keys keys_alt;	/* the master's second secret's */
	struct hold_pool hold;
	struct txn_table txn;	/* TCPCT transactions waiting for answers */
	struct farcache far;	/* what upstream far servers are */
	uint32_t tfo_pending[POLICY_MAX_SERVICES];	/* tfo.c */
	uint32_t opening[POLICY_MAX_SERVICES];		/* backlog.c */
	/* The places of each service's backlog lent to the binding flows
	 * the kernel carries, a word per service that the program takes
	 * them from (the shield's, mapped; backlog.c).  NULL: none. */
	uint64_t *tickets;
	/* The interface each service's backend answered by last, plus 1 (0:
	 * none yet): the one a binding the kernel makes expects its SYN-ACK
	 * from (carry.c), as the rules' rpfilter does. */
	uint32_t backend_dev[POLICY_MAX_SERVICES];
	uint64_t now_ms;	/* monotonic, this batch */
	uint64_t now_s;		/* wall clock, this batch */
	uint64_t now_wall_ms;	/* the same in ms (TCPCT cookies) */
	/* The packet in hand is an ACK whose cookie the kernel shield
	 * verified (its mark): not checked twice. */
	bool shield_verified;
	bool pkt_gso;		/* the packet in hand will be segmented */
	uint32_t pkt_indev;	/* the interface it came in by, 0: ours */
	uint64_t keys_checked;	/* now_s of the last key check */
	uint64_t challenge_s;	/* now_s of challenge_n (accept.c) */
	uint32_t challenge_n;	/* challenge ACKs sent in that second */
	struct worker_stats st;
	struct service_stats svc_st[POLICY_MAX_SERVICES];
	bool ready;
	uint64_t beat;		/* loop turns: the watchdog's proof of life */
	struct flow_dump dump;	/* tcpctl flows */
};

/* Sets up flow queue cfg->queue_base + id, SYN queue
 * cfg->queue_base + cfg->queues + id, and all the worker's tables.
 * Returns 0 or -1 with a message in err. */
int worker_init(struct worker *w, struct gateway *gw, unsigned id, char *err,
		size_t errlen);
void worker_fini(struct worker *w);
/* worker_init without the queues and raw sockets: tables, keys and clocks
 * only, for tests that drive worker_packet() by hand. */
int worker_init_state(struct worker *w, struct gateway *gw, unsigned id,
		      char *err, size_t errlen);

/* Increments a counter that another thread may read at the same time. */
#define STAT_ADD(p, v)							\
	__atomic_store_n(&(p), (p) + (v), __ATOMIC_RELAXED)
#define STAT_INC(w, field)	STAT_ADD((w)->st.field, 1)
#define SVC_STAT_INC(w, idx, field)	STAT_ADD((w)->svc_st[idx].field, 1)

/* CLOCK_MONOTONIC in ms: the clock of the workers' timers and of the
 * main loop's. */
uint64_t worker_mono_ms(void);
/* The worker's clocks for the batch in hand (now_ms, now_s, now_wall_ms). */
void worker_read_clocks(struct worker *w);

/* The index of svc, a service of the worker's configuration (w->cfg). */
static inline unsigned
worker_service(const struct worker *w, const struct service *svc)
{
	return (unsigned)(svc - w->cfg->services);
}

/* Whether service is drained (tcpctl drain, a stop with stop-grace). */
static inline bool
worker_draining(const struct worker *w, unsigned service)
{
	return atomic_load_explicit(&w->gw->drain[service],
				    memory_order_relaxed);
}

/* What becomes of the packet in hand. */
enum verdict { VERDICT_DROP, VERDICT_ACCEPT, VERDICT_MANGLED };

/* Fills s's family, addresses and ports for a segment of f towards the
 * backend (from the client's address) or towards the client. */
void worker_spec_to_backend(struct pkt_tcp_spec *s, const struct flow *f);
void worker_spec_to_client(struct pkt_tcp_spec *s, const struct flow *f);

/*
 * Sends a segment of f without data in one side's name towards the other
 * (to_backend: from the client's address), with timestamps tsval and tsecr
 * when f has them; win is the raw window field.
 */
void worker_send(struct worker *w, const struct flow *f, bool to_backend,
		 uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win,
		 uint32_t tsval, uint32_t tsecr);

/* The MSS to assume when a SYN carries none. */
uint16_t worker_default_mss(uint8_t family);
/* The profile of a service's backend now (the probe's). */
void worker_profile(struct worker *w, const struct service *svc,
		    uint8_t family, struct profile *prof);
/* A client segment's tuple, as a cookie is made over it; its flow key. */
void worker_cookie_tuple(struct cookie_tuple *t, const struct pkt *p);
struct flow_key worker_client_key(const struct pkt *p);
/* Checks the checksum of a data segment that worker_packet left alone
 * (counted when bad). */
bool worker_csum_ok(struct worker *w, const struct pkt *p,
		    bool csum_partial);

/* The client's latest window, in the units its backend applies. */
uint16_t worker_backend_win(const struct flow *f);

/* Sends a RST to the backend (seq = the client's next) and/or the client. */
void worker_rst_backend(struct worker *w, const struct flow *f, uint32_t seq);
void worker_rst_client(struct worker *w, const struct flow *f, uint32_t seq);

/*
 * Retransmission timeouts.  The backend is on the gateway's own link, its
 * round trip measured by the probe: the first wait for it is short, as
 * Linux's own floor (TCP_RTO_MIN, 200 ms), and each next one twice the
 * last (RFC 6298 §5.5), up to the last level.  A SYN the backend dropped
 * for a full accept queue is sent again before a client gives up on its
 * query.  Towards a client, whose round trip is unknown: 1 s (§2.1).
 */
#define RTO_MIN_MS	250
#define RTO_CLIENT	2	/* the level of 1 s */

static inline uint64_t
rto_ms(unsigned level)
{
	return (uint64_t)RTO_MIN_MS << level;
}

/* Arms f's retransmission timer at a level (capped at the last). */
void worker_rto_arm(struct worker *w, struct flow *f, unsigned level);

/*
 * An established flow that waits for an ACK of what we answered for the
 * other side: the client's of a Fast Open SYN-ACK, or the backend's of
 * data we acknowledged to the client for it.  It stays on the
 * retransmission timer (dispatch.c) until then, not on the policy's
 * clocks.
 */
static inline bool
worker_awaits_ack(const struct flow *f)
{
	return f->state != FLOW_BINDING &&
	       (f->tfo_pending || (f->taken && f->hold >= 0));
}

/* Notes what a client segment of f says of the client's clock (its
 * latest TSval, never one that went back) and window, for the segments
 * tcpctd sends in its name. */
static inline void
worker_client_seen(struct flow *f, const struct pkt *p, const struct tcpopt *o)
{
	if (f->ts && o->has_ts && (int32_t)(o->tsval - f->c_tsval) > 0)
		f->c_tsval = o->tsval;
	f->c_win = p->win;
}

/*
 * The hold pool: a slot per flow at most, for the client's first data while
 * the backend's handshake is under way (or until the backend acknowledges
 * it).  worker_hold_take gives f an empty one (false, counted, when none is
 * free); worker_hold_write writes in it, as the segment the backend gets
 * after its handshake, n bytes at pay: at c_base + 1, acknowledging
 * g_base + 1 (client space: splice_c2b translates it when it goes), with
 * the client's latest TSval; its length, 0 when it did not fit.
 */
bool worker_hold_take(struct worker *w, struct flow *f);
uint16_t worker_hold_write(struct worker *w, const struct flow *f,
			   const uint8_t *pay, uint32_t n);
/* Frees f's held data slot. */
void worker_hold_free(struct worker *w, struct flow *f);

/* Builds and queues a segment (a UDP datagram) for injection. 0 or -1. */
int worker_emit(struct worker *w, const struct pkt_tcp_spec *s);
int worker_emit_udp(struct worker *w, const struct pkt_tcp_spec *s);

#define SEQ_LT(a, b)	((int32_t)((a) - (b)) < 0)
#define SEQ_GT(a, b)	((int32_t)((a) - (b)) > 0)
#define SEQ_GEQ(a, b)	((int32_t)((a) - (b)) >= 0)

#endif
