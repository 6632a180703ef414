/*
 * The operator's intent: which services are protected and with which limits.
 *
 * For now the configuration file holds the long command-line options, one
 * per line without the dashes ("protect 192.0.2.2:53"), so that every
 * setting has one spelling in both places.
 */
#ifndef POLICY_CONFIG_H
#define POLICY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <net/if.h>

#include "../nfq/pkt.h"

#define POLICY_MAX_SERVICES	64
#define POLICY_MAX_QUEUES	64	/* worker threads */

/* A DNS service's connections carry RFC 7766 messages, which tcpctd
 * frames and checks; a generic one's bytes are not looked at. */
enum service_kind { SERVICE_GENERIC, SERVICE_DNS };

/*
 * What a service allows its verified connections (HACKING.md §4): each
 * field an option of the same name, given globally or for one service on
 * its protect line; what neither sets is the kind's default.  0 is "no
 * limit" for all but the timeouts.  The unit is N for a count, S or MS for
 * a time in seconds or milliseconds (which takes a suffix as well: 2m).
 *
 *	field		option		   unit min max	     DNS   generic
 */
#define POLICY_FIELDS(X)						\
	X(idle_timeout,	"idle-timeout",	   S,  1, 86400 * 7,     10,   7440)	\
	X(msg_timeout,	"msg-timeout",	   MS, 100, 60000,	 2000, 2000)	\
	X(max_queries,	"max-queries",	   N,  0, 1u << 30,	 0,    0)	\
	X(max_lifetime,	"max-lifetime",	   S,  0, 86400 * 7,     0,    0)	\
	X(max_per_addr,	"max-per-addr",	   N,  0, 1u << 20,	 0,    0)	\
	X(max_per_prefix, "max-per-prefix", N, 0, 1u << 20,    0,    0)	\
	X(max_pending_per_addr, "max-pending-per-addr", N, 0, 1u << 20, 25, 0) \
	X(max_pending_per_prefix, "max-pending-per-prefix", N, 0, 1u << 20, 256, 0) \
	X(conn_rate,	"conn-rate",	   N,  0, 1u << 24,	 0,    0)	\
	X(delay_bind,	"delay-bind",	   N,  0, 1,		 1,    0)	\
	X(backend_max,	"backend-max",	   N,  0, 1u << 24,	 100,  0)	\
	X(backend_backlog, "backend-backlog", N, 0, 1u << 20,  128,  0)	\
	X(overload_idle, "overload-idle", S,  0, 86400 * 7,    2,    60)	\
	X(release_always, "release-always", N, 0, 1,	 0,    0)	\
	X(keep_client,	"keep-client",	   N,  0, 1,		 1,    1)	\
	X(tcpct,	"tcpct",	   N,  0, 1,		 1,    1)	\
	X(tfo,		"tfo",		   N,  0, 1,		 1,    1)

/*
 * idle_timeout	s without progress (new data either way, or an ACK of new
 *		data); DNS: about 10 s (RFC 9210, HACKING.md §4), generic:
 *		RFC 5382 REQ-5's 2 h 4 min
 * msg_timeout	ms a started DNS message has to complete in
 * max_queries	DNS messages a client may send on one connection
 * max_lifetime	s a connection may live
 * max_per_addr	concurrent verified connections per client address, all
 *		of them.  Off by default, as in dnsdist and unbound: one
 *		address may be a resolver farm or a NAT, which RFC 7766
 *		§6.2.2 wants such limits "much looser" for, and a busy one
 *		has dozens open at a time, each for a few ms
 * max_per_prefix  the same per client prefix (prefix4, prefix6)
 * max_pending_per_addr  the same, but only of the connections that are
 *		pending: their client has not sent a whole DNS message yet;
 *		DNS services only.  Over it, a segment that does not bring
 *		the client's whole first query is dropped, as if lost, and
 *		its TCP sends it again (a FIN gets a RST); the one that
 *		does completes the handshake, not pending.  A client that asks is never
 *		refused, however many handshakes it completes at once; one
 *		that handshakes and goes silent, or trickles half a query,
 *		holds this many at most, each until the idle or message
 *		clock resets it
 * max_pending_per_prefix  the same per client prefix: a prefix's take of
 *		the flow table (flows) and of the early-data buffers
 *		(hold_slots) that half queries hold
 * conn_rate	new verified connections per second per client prefix
 * delay_bind	no backend connection until the client has sent a whole
 *		first DNS message (generic: any data; only for protocols
 *		where the client speaks first)
 * backend_max	connections the backend takes (nsd's tcp-count, BIND's
 *		tcp-clients; 100 is nsd's default): at 4/5 of it tcpctd
 *		enters the overload mode, below 1/2 it leaves, and it never
 *		holds more; with delay_bind the next first message waits
 *		(backlog.c) (0: no limit)
 * backend_backlog  connections handed to the backend that it has not
 *		answered yet, at most: they wait in its accept queue (its
 *		listen backlog, 256 for nsd), which drops SYNs when full.
 *		With delay_bind, more first messages wait in tcpctd, in
 *		order (0: no limit)
 * overload_idle  s, the idle timeout while overloaded (if shorter)
 * release_always  release a DNS connection's backend half whenever all
 *		its queries are answered, not only while overloaded
 * keep_client	after a release the client's connection stays open, and
 *		its next query gets a new backend connection; 0: it is
 *		closed (a FIN from the backend's address)
 * tcpct	answer TCP Cookie Transactions (RFC 6013) SYNs with a
 *		responder cookie; 0: classic cookies for them
 * tfo		issue and take Fast Open cookies (RFC 7413); 0: the TFO
 *		option is ignored, the client falls back to a plain handshake
 *
 * The fields of range 0..1 are yes or no (1 or 0 as well).
 */
struct policy {
#define X(f, name, unit, lo, hi, dns, generic) unsigned f;
	POLICY_FIELDS(X)
#undef X
};

/* A client prefix of an allow or deny list: address bits past len are 0. */
struct prefix {
	uint8_t family;
	uint8_t len;
	struct inaddr addr;
};

#define POLICY_MAX_PREFIXES	64	/* per list; larger sets: ipset */

/*
 * A service is protected (a backend tcpctd answers for, at one address)
 * or upstream (issue 35): far servers in a prefix that a resolver behind
 * tcpctd connects to, for which tcpctd answers the resolver's SYN itself
 * and asks the far server with a TCPCT transaction (gateway/upstream.h).
 */
struct service {
	uint8_t family;
	struct inaddr addr;	/* upstream: the prefix, bits past plen 0 */
	uint16_t port;
	bool upstream;
	uint8_t plen;		/* upstream: the prefix's length */
	char name[64];		/* as the operator wrote it */
	enum service_kind kind;
	struct policy pol;	/* resolved by config_check() */
	uint32_t pol_set;	/* fields given on the protect line */
	bool kind_set;
};

enum rules_action { RULES_NONE, RULES_INSTALL, RULES_REMOVE, RULES_PRINT };

/* The marks the kernel shield sets, next to the injected packets' mark
 * (below it for the largest): on an ACK whose cookie it verified, and on
 * a segment of a flow it carries, which the rules let through. */
#define POLICY_MARK_NEAR(cfg, n)					\
	((cfg)->mark > UINT32_MAX - (n) ? (cfg)->mark - (n) : (cfg)->mark + (n))
#define POLICY_VERIFIED_MARK(cfg)	POLICY_MARK_NEAR(cfg, 1u)
#define POLICY_CARRIED_MARK(cfg)	POLICY_MARK_NEAR(cfg, 2u)

/* The kernel shield (shield/): off, on where the kernel takes it, or on
 * and the daemon refusing to start without it. */
enum shield_mode { SHIELD_NO, SHIELD_AUTO, SHIELD_YES };
#define POLICY_MAX_SHIELD_DEVS	16	/* shield/shield.h's SHIELD_MAX_DEVS */

struct config {
	struct service services[POLICY_MAX_SERVICES];
	unsigned nservices;

	unsigned queues;		/* worker threads; each reads a flow
					 * queue (queue_base + i) and a SYN
					 * queue (queue_base + queues + i) */
	unsigned queue_base;
	unsigned queue_maxlen;
	unsigned batch;
	bool fail_open;			/* accept when the kernel queue is full */
	bool gso;			/* GSO packets come up unsegmented */
	bool kernel_flows;		/* the shield carries established
					 * flows (gateway/carry.h) */
	bool bypass;			/* rules: accept when no daemon listens */
	unsigned mark;			/* on injected packets */
	bool synack_verdict;		/* SYN-ACK replaces the SYN in its
					 * verdict instead of a raw send */
	bool tcpct_timewait_rst;	/* clear the backend's TIME-WAIT of
					 * a TCPCT flow with a RST */
	bool tcpct_txn;			/* answer DNS queries in SYN-ACKs */
	unsigned tfo_pending;		/* flows made at a SYN, per service
					 * and worker */
	unsigned txn_pending;		/* transactions waiting, per worker */
	unsigned upstream_cache;	/* far servers known, per worker */
	unsigned txn_timeout;		/* ms the backend has to answer */
	unsigned txn_rate;		/* answer bytes/s per client prefix */

	unsigned flows;			/* flow table size per worker */
	unsigned hold_slots;		/* early-data buffers per worker */
	unsigned closing_timeout;	/* s, after the first FIN */
	unsigned closed_linger;		/* s, after both FINs are acked */
	unsigned syn_retries;		/* backend SYN retransmissions */

	struct policy pol;		/* given globally (pol_set says which) */
	uint32_t pol_set;
	unsigned prefix4, prefix6;	/* a client prefix, for the limits */
	unsigned synack_rate;		/* SYN-ACKs per second towards one
					 * client prefix, all services (0: any) */
	unsigned limit_slots;		/* counters of the per-client limits */

	char secret_file[256];		/* master secret; random when empty */
	enum shield_mode shield;
	char shield_devs[POLICY_MAX_SHIELD_DEVS][IFNAMSIZ];	/* none: all
							 * but loopback */
	unsigned nshield_devs;
	char control_socket[108];	/* tcpctl's socket; none when empty */
	char metrics_file[256];		/* Prometheus textfile; none when empty */
	char pin_dir[256];		/* a bpf filesystem's directory where
					 * the kernel's flows outlive a daemon
					 * (kernel-flows); none when empty */
	unsigned metrics_interval;	/* s between its writes */
	unsigned key_lifetime;		/* s per key epoch */
	unsigned probe_interval;	/* s between backend probes */
	unsigned stop_grace;		/* s a stop drains for; 0: none */

	/* Sources the rules drop before any queue (deny), or let pass to
	 * every protected service without a cookie handshake (allow); a
	 * prefix in both is denied. */
	struct prefix allow[POLICY_MAX_PREFIXES], deny[POLICY_MAX_PREFIXES];
	unsigned nallow, ndeny;

	enum rules_action rules;
	char iptables[64], ip6tables[64];

	unsigned verbose;		/* -v, verbose = N: more messages */
};

/* Fills c with the defaults. */
void config_defaults(struct config *c);

/*
 * Error callback: where is a file name and line ("tcpctd.conf:3") or
 * "command line"; msg is one sentence without a newline.
 */
typedef void (*config_err_cb)(const char *where, const char *msg, void *arg);

/*
 * Applies one option by its long name with its argument (NULL for flags).
 * Returns 0, or -1 after calling err once with what is wrong.
 */
int config_set(struct config *c, const char *name, const char *value,
	       const char *where, config_err_cb err, void *arg);

/*
 * The long options config_set() takes, for the command line: the name of
 * the i-th, or NULL past the last; *flag when it takes no argument there.
 */
const char *config_option(size_t i, bool *flag);

/*
 * Reads path, an INI file (tcpctd.conf(5), policy/conffile.c): [tcpctd]
 * holds the options, [service NAME] a service's protect lines, kind and
 * limits.  Every bad line is reported, as "path:line", but that a file
 * whose first line is no configuration is not read on; returns the number
 * of errors (0 on success, -1 if the file cannot be read, after reporting
 * it).
 */
int config_load(struct config *c, const char *path, config_err_cb err,
		void *arg);

/* For conffile.c: one message through err (printf-like). */
void config_report(config_err_cb err, void *arg, const char *where,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Sets the policy field called name in p (and its bit in *set): 0, -1
 * after reporting a bad value, or 1 when no field has that name. */
int config_set_policy(struct policy *p, uint32_t *set, const char *name,
		      const char *value, const char *where, config_err_cb err,
		      void *arg);

/* Sets in dst what src sets and dst does not (their bits in *set). */
void config_policy_merge(struct policy *dst, uint32_t *dst_set,
			 const struct policy *src, uint32_t src_set);

/* Adds s to c: 0, or -1 after reporting (a duplicate, too many). */
int config_add_service(struct config *c, const struct service *s,
		       const char *where, config_err_cb err, void *arg);

/* After everything is read: resolves each service's policy, then checks
 * what is only wrong in combination.  Returns the number of errors. */
int config_check(struct config *c, config_err_cb err, void *arg);

/* Each service's limits after config_check(), as tcpctd.conf lines, each
 * with where its value comes from: the service's own (its protect line or
 * section), [tcpctd]'s (or the command line's), or its kind's default. */
void config_write_policies(const struct config *c, FILE *f);

/*
 * Parses "ADDR:PORT" or "[ADDR6]:PORT" into s.  Returns 0 or -1.
 */
int service_parse(struct service *s, const char *text);

/*
 * Parses a protect value: the service, then comma-separated "dns",
 * "generic" or policy fields as "NAME=VALUE", e.g.
 * "192.0.2.2:53,max-queries=100".  Port 53 is DNS unless told otherwise.
 * An address no TCP segment is sent to (0.0.0.0, ::, broadcast,
 * multicast, IPv4-mapped) is refused with the reason.  Returns 0, or -1
 * after calling err once.
 */
int service_parse_spec(struct service *s, const char *text, const char *where,
		       config_err_cb err, void *arg);

/*
 * Parses "ADDR/LEN" (IPv6 without brackets) or a lone address (all its
 * bits) into p; bits past LEN are cleared.  Returns 0, 1 when some were
 * set (10.0.0.1/8), or -1.
 */
int prefix_parse(struct prefix *p, const char *text);

/* Writes p as "ADDR/LEN" into buf (INET6_ADDRSTRLEN + 4 bytes will do). */
void prefix_format(const struct prefix *p, char *buf, size_t len);

/* Writes an address and port as "ADDR:PORT" or "[ADDR6]:PORT" into buf
 * (INET6_ADDRSTRLEN + 8 bytes will do); service_format, s's backend. */
void addrport_format(uint8_t family, const struct inaddr *a, uint16_t port,
		     char *buf, size_t len);
void service_format(const struct service *s, char *buf, size_t len);

/* Whether s has a name of its own ([service NAME]), not its backend's as
 * a --protect service has; backend is service_format's text. */
bool service_named(const struct service *s, const char *backend);

/* "dns" or "generic". */
const char *service_kind_name(enum service_kind kind);

/*
 * Parses an upstream value: "PREFIX:PORT" ("203.0.113.0/24:53",
 * "[2001:db8:d::/48]:53", or one address), then the options of a protect
 * line.  The prefix must have no bits set past its length.  Returns 0, or
 * -1 after calling err once.
 */
int upstream_parse_spec(struct service *s, const char *text, const char *where,
			config_err_cb err, void *arg);

/* Whether c has an upstream service. */
bool config_has_upstream(const struct config *c);

/* The service whose address and port are addr:port, or NULL: a protected
 * one at that very address first, else the upstream one of the longest
 * prefix that holds it. */
const struct service *config_find_service(const struct config *c,
					  uint8_t family,
					  const struct inaddr *addr,
					  uint16_t port);

#endif
