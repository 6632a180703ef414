/*
 * What the daemon and the kernel shield share: the layout of every map the
 * program reads (the daemon writes them all) and of its counters (the
 * daemon reads them).  Compiled by both, as syncookie.h is.
 */
#ifndef SHIELD_MAPS_H
#define SHIELD_MAPS_H

#include "ratelimit.h"
#include "syncookie.h"

#define SHIELD_MAX_SERVICES	64	/* POLICY_MAX_SERVICES */
#define SHIELD_EXTHDR_MAX	8	/* nfq/pkt.h's PKT_EXTHDR_MAX */
#define SHIELD_MAX_WORKERS	64	/* POLICY_MAX_QUEUES */
#define SHIELD_RING_BYTES	(256 * 1024)	/* a worker's events ring */
/* gateway/accept.h's: one challenge ACK a flow per this many ms, and
 * gateway/flow.h's FLOW_WINDOW_MIN. */
#define SHIELD_CHALLENGE_INTERVAL_MS	500
#define SHIELD_WINDOW_MIN		65535u
/* gateway/accept.h's ACCEPT_BACKEND_SLACK: how far a backend's segment
 * may start past what it sent, and end before what the client took. */
#define SHIELD_BACKEND_SLACK		65535u
#define SHIELD_MAX_TUPLES	(1u << 20)	/* live flows of all workers */

/* The keys of one secret: the current epoch's and the previous one's (the
 * next one's, close to its boundary), each in the slot of its epoch's
 * parity (gateway/cookie.h's cookie_keys). */
struct shield_keyset {
	struct siphash_key sip[2];
	uint64_t epoch[2];
	uint32_t valid[2];
};

#define SHIELD_LIST_DENY	0x01
#define SHIELD_LIST_ALLOW	0x02

/* The one entry of the config map. */
struct shield_config {
	struct shield_keyset keys;	/* the secret's */
	struct shield_keyset alt;	/* a second secret accepted too */
	uint32_t has_alt;
	uint32_t lifetime;		/* s per key epoch */
	/* CLOCK_REALTIME − CLOCK_MONOTONIC in ns: the key epochs and the
	 * cookie counter are wall-clock time, which every gateway of a
	 * fleet reads alike; the program has the monotonic clock. */
	int64_t wall_offset_ns;
	uint32_t verified_mark;		/* on an ACK whose cookie verified */
	uint32_t carried_mark;		/* on a segment of a flow it carries:
					 * the queue rules let it through */
	uint32_t enabled;		/* 0: everything passes */
	/* --synack-rate: SYN-ACKs a second towards a prefix (0: no cap),
	 * counted in the rate map as gateway/limit.c counts them. */
	uint32_t synack_rate;
	uint32_t rate_mask;		/* the map's slots per half − 1 */
	uint64_t rate_seed;
	uint8_t rate_kind;		/* LIMIT_SYNACK_RATE */
	uint8_t prefix4, prefix6;
	/* Which of the deny and allow maps hold prefixes: an empty one is
	 * not looked up. */
	uint8_t lists;			/* SHIELD_LIST_* */
	uint8_t pad[4];
	/* When the daemon last wrote the map (CLOCK_MONOTONIC ns), which
	 * it does twice a second.  With stand_aside (--bypass: the rules let
	 * traffic through when no daemon listens), the program steps aside
	 * once the daemon has been silent that long, so that clients reach
	 * the backends as the rules promise instead of handshakes nobody
	 * completes.  Without it (fail-closed), it answers SYNs through a
	 * crash. */
	uint64_t heartbeat_ns;
	uint32_t stand_aside_ms;	/* of silence; 0: never */
	/* SYNs a second, per CPU, that the program passes to the daemon's
	 * SYN queue for their TCPCT or Fast Open options, their data or
	 * options it does not read; past them it answers a SYN classically
	 * (every TCPCT and TFO client takes that as the fall-back) and drops
	 * one it cannot read.  The daemon lowers it to 0 while its SYN
	 * queues back up, so that such a flood cannot go round the shield.
	 * SHIELD_PASS_ALL: no limit. */
	uint32_t special_pass;
};

#define SHIELD_PASS_ALL		0xffffffffu

/* The services map: a protected address and port (network byte order). */
struct shield_service_key {
	uint8_t family;			/* COOKIE_FAMILY_* */
	uint8_t pad;
	uint16_t port;
	uint8_t addr[16];
};

#define SHIELD_SVC_WS		0x01	/* backend: window scale */
#define SHIELD_SVC_SACK		0x02
#define SHIELD_SVC_TS		0x04
#define SHIELD_SVC_ECN		0x08
#define SHIELD_SVC_DRAINED	0x10	/* its SYNs go to the daemon */
/* Its flows start at the client's first data (delay-bind): a verified
 * cookie ACK without data is dropped, the segment with the data, whose
 * cookie is the same, starts the flow. */
#define SHIELD_SVC_DEFER	0x20

/* The backend's profile as the SYN-ACK advertises it. */
struct shield_service {
	uint16_t mss;
	uint8_t wscale;
	uint8_t flags;			/* SHIELD_SVC_* */
	uint32_t index;			/* the daemon's service index */
};

/* The protected addresses, whatever their ports (network byte order): a
 * packet to one that the program cannot read is passed only within
 * shield_config.special_pass, for its port may be a service's. */
struct shield_addr {
	uint8_t family;
	uint8_t pad[3];
	uint8_t addr[16];
};

/* The live-tuple map: a flow the daemon has, client side first, and the
 * slot of its record (struct shield_flow) in the records map. */
struct shield_tuple {
	uint8_t family;
	uint8_t pad;
	uint16_t cport, sport;		/* network byte order */
	uint16_t pad2;
	uint8_t caddr[16], saddr[16];
};

/*
 * A flow's record, the part of it the kernel may carry (HACKING.md, "The
 * kernel's flows"): one per slot of the workers' flow tables, in an array
 * the daemon maps into its memory.  The daemon gives an established flow
 * to the program (owner SHIELD_OWNER_KERNEL), which then translates its
 * segments both ways and follows its FINs, as gateway/splice.c would, and
 * passes on to the daemon what it cannot judge.  Before the daemon reads
 * or writes a record it takes it back: owner to SHIELD_OWNER_DAEMON, then
 * it waits until no program is inside (busy, which a program raises
 * before it reads owner and lowers when done).  Field by field these are
 * gateway/flow.h's struct flow's of the same name.
 */
#define SHIELD_OWNER_DAEMON	0
#define SHIELD_OWNER_KERNEL	1

/* gateway/flow.h's states a carried flow may be in, and its FIN bits. */
#define SHIELD_STATE_BINDING		1
#define SHIELD_STATE_SYN_SENT		2
#define SHIELD_STATE_ESTABLISHED	3
#define SHIELD_STATE_CLOSING		5
#define SHIELD_FIN_CLIENT		0x01
#define SHIELD_FIN_CLIENT_ACKED		0x02
#define SHIELD_FIN_BACKEND		0x04
#define SHIELD_FIN_BACKEND_ACKED	0x08
#define SHIELD_FIN_BACKEND_FIRST	0x10

#define SHIELD_REC_TS		0x01	/* timestamps on both sides */
#define SHIELD_REC_DNS		0x02	/* a DNS service's: the client's data
					 * is the daemon's to frame, the
					 * backend's answers are counted */
#define SHIELD_REC_CHALLENGED	0x04	/* challenge_ms is set */
#define SHIELD_REC_HELD		0x08	/* the daemon holds data the backend
					 * has not acknowledged: rcv_base */
#define SHIELD_REC_OPENING	0x10	/* the backend has not answered yet
					 * (gateway/backlog.c) */
/* What a binding flow's backend SYN offers (gateway/backend.c). */
#define SHIELD_REC_SACK		0x20	/* SACK permitted */
#define SHIELD_REC_WS		0x40	/* window scaling, at c_ws */

/* What the program tells a flow's worker (its events ring). */
#define SHIELD_EV_FIN		0x01	/* a first FIN of one side */
#define SHIELD_EV_CLOSED	0x02	/* both FINs acknowledged */
#define SHIELD_EV_ANSWERED	0x04	/* every DNS query has its answer */
#define SHIELD_EV_HELD_ACKED	0x08	/* the backend took the held data */
#define SHIELD_EV_OPENED	0x10	/* the backend's first answer or FIN */
#define SHIELD_EV_BOUND		0x20	/* a binding's query: the backend's
					 * SYN sent, or its SYN-ACK taken */

/* The first query a binding flow may hold in its record: most are under
 * 100 bytes; a longer one is the daemon's to hold. */
#define SHIELD_QUERY_MAX	256

/* The tickets map: a place in a service's backlog (gateway/backlog.c) per
 * ticket, that the daemon lends a worker's binding flows in the kernel. */
#define SHIELD_TICKET_SLOT(worker, service)				\
	((worker) * SHIELD_MAX_SERVICES + (service))

struct shield_event {
	uint32_t slot;			/* the record's */
	uint32_t what;			/* SHIELD_EV_* */
};

/* The backend's DNS answers, as gateway/dnsmsg.h's framer counts a
 * server's: bytes of the current message seen (its length included), its
 * length, messages begun. */
struct shield_dnscount {
	uint32_t nxt;			/* its next byte (client space) */
	uint32_t pos;
	uint32_t started;
	uint16_t len;
	uint16_t pad;
};

struct shield_flow {
	uint32_t owner;			/* SHIELD_OWNER_* */
	uint32_t busy;			/* programs inside it now */
	struct shield_tuple key;	/* whose it is */
	uint32_t worker;		/* whose events ring hears of it */
	/* The interfaces each side's segments come in by: one from
	 * elsewhere is the daemon's (and the rules') to judge. */
	uint32_t c_ifindex, b_ifindex;
	uint8_t state;			/* SHIELD_STATE_* */
	uint8_t fin;			/* SHIELD_FIN_* */
	uint8_t flags;			/* SHIELD_REC_* */
	uint8_t c_ws, c_ws_b, b_ws, adv_ws;
	uint8_t pad;
	uint16_t c_win, b_win;
	uint32_t seq_delta, ts_delta;
	/* What the gateway acknowledged itself (c_base + 1 + taken), under
	 * which the client's RCV.NXT is the backend's ACK. */
	uint32_t rcv_base;
	uint32_t c_nxt, b_nxt, c_ack, b_ack, c_fin, b_fin;
	uint32_t c_tsval, ts_out;
	uint32_t c_maxwin, b_maxwin;
	uint32_t queries;		/* the client's DNS messages so far */
	struct shield_dnscount answers;
	uint32_t challenge_ms;		/* the last challenge ACK's time */
	uint32_t service;		/* its tickets' (SHIELD_TICKET_SLOT) */
	/* A binding's, for the backend's SYN and SYN-ACK: the MSS it
	 * offers, our ISN and SYN-ACK's TSval (the client's view), the
	 * backend's ISN once it answered, the first query. */
	uint16_t mss;
	uint16_t qlen;
	uint32_t g_base, gw_tsval, bisn;
	uint8_t query[SHIELD_QUERY_MAX];
	uint64_t last_ns;		/* CLOCK_MONOTONIC: its latest segment */
	uint64_t deadline_ns;		/* max-lifetime: the daemon's past it
					 * (0: none) */
	/* Segments it carried each way since the daemon gave it the flow,
	 * which the daemon adds to the service's counts when it takes it
	 * back. */
	uint32_t c2b, b2c;
};

/* The allow and deny maps (longest-prefix match): the operator's lists,
 * which the queue rules apply after the shield has seen the packet.  The
 * prefix length counts the family's 8 bits too. */
#define SHIELD_MAX_PREFIXES	128	/* POLICY_MAX_PREFIXES of each family */

struct shield_prefix {
	uint32_t prefixlen;		/* 8 + the prefix's own */
	uint8_t family;
	uint8_t addr[16];
	uint8_t pad[3];			/* zero */
};

/* Per-CPU counters, an array indexed by these.  Names are the daemon's
 * counters' where the daemon counts the same event (daemon/stats.c shows
 * them side by side, told apart by a label). */
#define SHIELD_COUNTERS(X)						\
	X(SYN, syn, "SYNs from clients")				\
	X(SYNACK_SENT, synack_sent, "SYN-ACK cookies sent")		\
	X(SYNACK_CAPPED, synack_capped,					\
	  "SYN-ACKs not sent: the prefix's --synack-rate")		\
	X(SYN_BAD_FLAGS, syn_bad_flags,					\
	  "SYN with ACK, RST or FIN from a client")			\
	X(ACK_VERIFIED, shield_ack_marked,				\
	  "ACKs whose cookie verified here, passed on marked")		\
	X(ACK_DEFERRED, shield_ack_deferred,				\
	  "ACKs without data whose cookie verified here, dropped: a "	\
	  "delay-bind service's flow starts at the client's data")	\
	X(COOKIE_BAD, cookie_bad, "ACKs dropped: the cookie's MAC")	\
	X(COOKIE_EXPIRED, cookie_expired, "ACKs dropped: cookie too old") \
	X(COOKIE_NO_KEY, cookie_no_key,					\
	  "ACKs dropped: the cookie's key is gone")			\
	X(NO_ACK_FLAG, no_ack_flag,					\
	  "client segments without ACK (dropped)")			\
	X(RST_STRAY, stray_client, "client segments with no flow (dropped)") \
	X(CSUM_BAD, bad_csum, "segments with a bad TCP checksum (dropped)") \
	X(PASS_FLOW, shield_pass_flow,					\
	  "segments of a live flow, passed to the daemon")		\
	X(PASS_OPTION, shield_pass_option,				\
	  "TCPCT and Fast Open segments, passed to the daemon")	\
	X(PASS_DRAINED, shield_pass_drained,				\
	  "segments to a drained service, passed to the daemon")	\
	X(PASS_ODD, shield_pass_odd,					\
	  "odd TCP options, SYN data: passed to the daemon")		\
	X(PASS_UNREAD4, shield_pass_unread_ipv4,			\
	  "IPv4 packets to a protected address it cannot read "	\
	  "(fragments, bad lengths), passed within the budget")	\
	X(PASS_UNREAD6, shield_pass_unread_ipv6,			\
	  "IPv6 packets to a protected address it cannot read "	\
	  "(fragments, AH, more than 8 extension headers, bad lengths), " \
	  "passed within the budget")					\
	X(PASS_NO_KEY, shield_pass_no_key,				\
	  "SYNs passed to the daemon within the budget for want of the "	\
	  "epoch's key: the daemon's map writes are late")		\
	X(UNREADABLE, shield_unreadable,				\
	  "SYN-ACKs that could not be written (dropped)")		\
	X(PASS_ALLOWED, shield_pass_allowed,				\
	  "segments from an allowed source, passed untouched")		\
	X(DENIED, shield_denied, "segments from a denied source (dropped)") \
	X(CLASSIC_FALLBACK, shield_classic_fallback,			\
	  "TCPCT, Fast Open and data SYNs answered classically: the "	\
	  "daemon's SYN queue was busy")				\
	X(SHED, shield_shed,						\
	  "segments for the daemon to judge (odd options, TCPCT, "	\
	  "packets it cannot read), dropped: the daemon was busy")	\
	X(STOOD_ASIDE, shield_stood_aside,				\
	  "packets passed untouched while the daemon was silent (bypass)") \
	X(C2B, c2b, "client segments spliced")				\
	X(B2C, b2c, "backend segments spliced")				\
	X(ACK_UNSENT, ack_unsent,					\
	  "segments acknowledging what was never sent (dropped)")	\
	X(ACK_TOO_OLD, ack_too_old,					\
	  "segments acknowledging before the window (dropped)")		\
	X(OUT_OF_WINDOW, out_of_window,					\
	  "segments outside the receive window (dropped)")		\
	X(CHALLENGE_LIMITED, challenge_ack_limited,			\
	  "challenge ACKs not sent: rate limit")			\
	X(BACKEND_UNACCEPTABLE, backend_unacceptable,			\
	  "backend segments outside its connection (dropped)")		\
	X(BACKEND_OLD, backend_old_dup,					\
	  "backend old duplicates passed on for the client to "	\
	  "acknowledge, unlearnt")					\
	X(PASS_CARRIED, shield_pass_carried,				\
	  "segments of a flow it carries, passed to the daemon to judge") \
	X(EVENTS_LOST, shield_events_lost,				\
	  "events the workers' rings had no room for")			\
	X(BOUND_SYN, shield_bound_syn,					\
	  "backend SYNs sent for a first query held in the kernel")	\
	X(BOUND_SYNACK, shield_bound_synack,				\
	  "backend SYN-ACKs answered with the held query")

#define SHIELD_ENUM(name, str, help) SHIELD_##name,
enum shield_counter {
	SHIELD_COUNTERS(SHIELD_ENUM)
	SHIELD_COUNTER_MAX
};
#undef SHIELD_ENUM

/* The counters map's size: room for counters to come, so that a daemon
 * with more takes its predecessor's pins over. */
#define SHIELD_COUNTER_SLOTS	64
_Static_assert(SHIELD_COUNTER_MAX <= SHIELD_COUNTER_SLOTS,
	       "shield counters past the map");

#endif
