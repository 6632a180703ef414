/*
 * The daemon's side of the kernel shield (shield/): starting it on the
 * gateway's interfaces, and writing into its maps what the daemon knows --
 * the keys of the current and previous epochs (and of a second secret
 * accepted beside ours), each service's backend profile and drain, and the
 * tuples of the flows the workers hold.  The shield module knows maps; this
 * one knows what goes in them.
 */
#ifndef GATEWAY_SHIELDMAP_H
#define GATEWAY_SHIELDMAP_H

#include "../shield/shield.h"
#include "worker.h"

/* The mark on an ACK the shield verified: next to the injected packets'
 * mark (−1 for the largest), which no rule of tcpctd's matches; never 0,
 * every other packet's. */
#define SHIELDMAP_VERIFIED_MARK(cfg)	POLICY_VERIFIED_MARK(cfg)

/* The main loop writes the maps every SHIELDMAP_SYNC_MS; with --bypass,
 * the shield steps aside after SHIELDMAP_STAND_ASIDE_MS of silence. */
#define SHIELDMAP_SYNC_MS		500
#define SHIELDMAP_STAND_ASIDE_MS	1500

/* TCPCT, Fast Open and other SYNs the shield leaves to the daemon: each
 * worker takes SHIELDMAP_SPECIAL_RATE a second (about a fifth of what one
 * answers), none while a SYN queue holds more than 1/SHIELDMAP_SYN_QUEUE_BUSY
 * of its length. */
#define SHIELDMAP_SPECIAL_RATE		20000u
#define SHIELDMAP_SYN_QUEUE_BUSY	8u

/*
 * Loads the shield and attaches it to cfg's shield-dev interfaces (all but
 * loopback when none are named).  With kernel-flows and a pin-dir, its maps
 * are pinned there, a predecessor's taken over when it left them (why not,
 * when they cannot be, in note).  0, or -1 with the reason in err, the
 * shield closed again.
 */
int shieldmap_start(struct shield *sh, const struct config *cfg, char *err,
		    size_t errlen, char *note, size_t notelen);

/* Its interfaces' names, for tcpctl status. */
void shieldmap_devs(const struct shield *sh, char *buf, size_t len);

/*
 * Writes the config and services maps from gw at wall-clock now: keys
 * (loaded into k, the caller's, as a worker's are), profiles and drains;
 * services gone from the configuration are removed.  0, or -1 when a map
 * refused an update.
 */
int shieldmap_sync(struct shield *sh, const struct gateway *gw,
		   struct cookie_keys *k);

/* cfg's protected addresses into the shield's map, each once.  0, or -1
 * when the map refused an update. */
int shieldmap_addrs(struct shield *sh, const struct config *cfg);

/* cfg's allow and deny lists into the shield's maps, and into c which of
 * them the program looks up.  0, or -1 when a map refused an update. */
int shieldmap_lists(struct shield *sh, const struct config *cfg,
		    struct shield_config *c);

/* The config entry for keys k (and the second secret's, k->alt, when the
 * master has one), verified ACKs marked with mark. */
void shieldmap_config(struct shield_config *c, const struct cookie_keys *k,
		      uint32_t mark, int64_t wall_offset_ns);

/* The config entry's --synack-rate: cfg's cap, counted in l's rate table
 * (which must be the shield's, limits_share_rate). */
void shieldmap_rate(struct shield_config *c, const struct config *cfg,
		    const struct limits *l);

/* Whether the shield drops svc's verified cookie ACKs without data
 * (SHIELD_SVC_DEFER): with delay-bind and no per-client cap nothing is
 * done before the client's first data, which brings the same cookie. */
bool shieldmap_defers(const struct service *svc);

/* The services entry of a service at addr:port, index idx, whose backend
 * advertises prof; drained: its SYNs the daemon's; defer:
 * shieldmap_defers. */
void shieldmap_service(struct shield_service_key *key,
		       struct shield_service *v, uint8_t family,
		       const struct inaddr *addr, uint16_t port,
		       const struct profile *prof, bool drained, bool defer,
		       unsigned idx);

/* CLOCK_MONOTONIC in ns: the shield's clock (bpf_ktime_get_ns). */
uint64_t shieldmap_mono_ns(void);

/* A flow table's watch (flow.h) for worker arg: its live tuples, each with
 * its record's slot, into the worker's batch for the shield's map, which
 * shieldmap_flush writes. */
void shieldmap_watch(void *arg, const struct flow_key *k, uint32_t idx,
		     bool live);
void shieldmap_flush(struct worker *w);

#endif
