/*
 * The kernel shield's control plane: loads shield.bpf.c (embedded in the
 * daemon at build time), attaches it to interfaces as a clsact ingress
 * filter, writes the maps it reads, and reads its counters.  Nothing here
 * is on the packet path but the live tuples' batch (struct shield_flows):
 * gathered per packet, written once per batch of packets.
 *
 * Where the kernel refuses BPF (no CAP_BPF, an old kernel, a container),
 * shield_open fails with the reason and the daemon runs without it.
 */
#ifndef SHIELD_SHIELD_H
#define SHIELD_SHIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maps.h"

#define SHIELD_MAX_DEVS	16
#define SHIELD_MAX_BLOCKS	(SHIELD_MAX_WORKERS + 1)

struct bpf_object;

struct shield {
	struct bpf_object *obj;
	int prog_fd;
	int config_fd, services_fd, addrs_fd, flows_fd, counters_fd;
	int recs_fd, rings_fd;
	/* The flows' records (struct shield_flow), mapped: a slot per entry
	 * of the workers' flow tables. */
	struct shield_flow *recs;
	size_t nrecs;
	/* The tickets the workers lend their binding flows in the kernel
	 * (SHIELD_TICKET_SLOT), mapped. */
	uint64_t *tickets;
	int ring_fd[SHIELD_MAX_WORKERS];	/* each worker's events ring */
	int allow_fd, deny_fd;
	/* The rate map, mapped: gateway/limit.c's table of rate words. */
	uint64_t *rate;
	size_t rate_len;
	unsigned ncpus;
	unsigned ndevs;
	int ifindex[SHIELD_MAX_DEVS];
	bool hook_made[SHIELD_MAX_DEVS];	/* clsact was ours to add */
	/* Pinned (shield_open_pinned): its maps and blocks live on in
	 * pin_dir after it; kept, they are a predecessor's. */
	char pin_dir[256];
	bool pinned, kept;
	/* At shield_close, leave the program attached and everything pinned,
	 * for a successor (shield_leave). */
	bool leave;
	struct shield_block {
		void *mem;
		size_t len;
	} blocks[SHIELD_MAX_BLOCKS];
	unsigned nblocks;
};

/* Loads the program with room for max_flows live tuples and their
 * records (sh->recs, zeroed) and a rate table of rate_words words
 * (sh->rate, zeroed).  0, or -1 with the reason in err. */
int shield_open(struct shield *sh, unsigned max_flows, unsigned rate_words,
		char *err, size_t errlen);

/*
 * The same with every map pinned under dir, a directory of a bpf
 * filesystem (made when missing): those a predecessor left there, when
 * they are all of this program's layout and size (sh->kept), else new ones
 * in their place.  -1 with the reason in err, nothing loaded, also where
 * dir is no bpf filesystem.
 */
int shield_open_pinned(struct shield *sh, unsigned max_flows,
		       unsigned rate_words, const char *dir, char *err,
		       size_t errlen);

/* A block of bytes bytes of memory pinned as name (letters, digits and
 * '_', as BPF names are) beside the maps: a
 * predecessor's (*kept) when the maps were kept and it is of that size,
 * else a new one, zeroed.  NULL with errno. */
void *shield_block(struct shield *sh, const char *name, size_t bytes,
		   bool *kept);

/* Removes whatever is pinned under dir (what tcpctd pinned there).
 * Returns how many, or -1 with errno. */
int shield_unpin(const char *dir);
/* Detaches it from every interface and unloads it. */
void shield_close(struct shield *sh);

/* Removes a shield that a daemon killed before it could detach left on
 * any interface (tc filters outlive their loader), where this daemon runs
 * without one.  Returns how many; *left says how many would not go. */
int shield_remove_stale(int *left);

/* Attaches it to ifindex's ingress.  0, or -1 with the reason in err. */
int shield_attach(struct shield *sh, int ifindex, char *err, size_t errlen);

/* Whether it is attached to ifindex. */
bool shield_attached(const struct shield *sh, int ifindex);

/* Worker's tickets, a word per service (gateway/backlog.c lends them). */
uint64_t *shield_tickets(struct shield *sh, unsigned worker);

/* Worker's events ring, made on the first call: its descriptor, or -1
 * with errno. */
int shield_ring(struct shield *sh, unsigned worker);

/* The config map's entry.  0, or -1 with errno. */
int shield_set_config(struct shield *sh, const struct shield_config *c);
/* A service's entry, or its removal (svc NULL). */
int shield_set_service(struct shield *sh, const struct shield_service_key *k,
		       const struct shield_service *svc);
/* Removes every service not in keep[0..n). */
int shield_prune_services(struct shield *sh,
			  const struct shield_service_key *keep, unsigned n);

/* The allow (allow true) or deny list: exactly the n prefixes p.  0, or
 * -1 with errno. */
int shield_set_list(struct shield *sh, bool allow,
		    const struct shield_prefix *p, unsigned n);

/* The protected addresses: exactly the n at a.  0, or -1 with errno. */
int shield_set_addrs(struct shield *sh, const struct shield_addr *a,
		     unsigned n);

/*
 * The flows a worker made and ended while handling a batch of packets,
 * written by shield_flows_flush in one call each way before the batch's
 * verdicts and packets go out, so that nothing the client sends in answer
 * finds its tuple missing.  The last word on a tuple stands.
 */
#define SHIELD_FLOW_BATCH	64

struct shield_flows {
	struct shield_tuple add[SHIELD_FLOW_BATCH];
	uint32_t slot[SHIELD_FLOW_BATCH];	/* each added one's record */
	struct shield_tuple del[SHIELD_FLOW_BATCH];
	unsigned nadd, ndel;
};

/* A flow made (live, its record at slot) or ended; a full batch is
 * written at once.  Returns the updates the map refused then (a full
 * map), as flush does. */
unsigned shield_flows_note(struct shield *sh, struct shield_flows *b,
			   const struct shield_tuple *t, uint32_t slot,
			   bool live);
/* Writes the batch and empties it: the ends, then the flows made.
 * Returns how many updates the map refused. */
unsigned shield_flows_flush(struct shield *sh, struct shield_flows *b);

/* Each counter, summed over the CPUs. */
int shield_counters(const struct shield *sh,
		    uint64_t out[SHIELD_COUNTER_MAX]);
/* Its name and what it counts (maps.h). */
const char *shield_counter_name(enum shield_counter c);
const char *shield_counter_help(enum shield_counter c);

#endif
