#include "shieldmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

_Static_assert(SHIELD_EXTHDR_MAX == PKT_EXTHDR_MAX,
	       "the shield walks the extension headers nfq/pkt.c walks");

static void
keyset(struct shield_keyset *ks, const struct cookie_keys *k)
{
	unsigned i;

	for (i = 0; i < 2; i++) {
		ks->sip[i] = k->sip[i];
		ks->epoch[i] = k->epoch[i];
		ks->valid[i] = k->valid[i];
	}
}

void
shieldmap_config(struct shield_config *c, const struct cookie_keys *k,
		 uint32_t mark, int64_t wall_offset_ns)
{
	memset(c, 0, sizeof(*c));
	keyset(&c->keys, k);
	/* cookie.c's has_alt: the accepted secret's keys, when there is
	 * one. */
	if (k->alt && k->master->has_accept && k->alt->master == k->master) {
		keyset(&c->alt, k->alt);
		c->has_alt = 1;
	}
	c->lifetime = k->lifetime;
	c->wall_offset_ns = wall_offset_ns;
	c->verified_mark = mark;
	c->special_pass = SHIELD_PASS_ALL;
	c->enabled = 1;
}

void
shieldmap_rate(struct shield_config *c, const struct config *cfg,
	       const struct limits *l)
{
	c->synack_rate = cfg->synack_rate;
	c->rate_mask = l->mask;
	c->rate_seed = l->seed;
	c->rate_kind = LIMIT_SYNACK_RATE;
	c->prefix4 = (uint8_t)cfg->prefix4;
	c->prefix6 = (uint8_t)cfg->prefix6;
}

bool
shieldmap_defers(const struct service *svc)
{
	/* Per-client caps count connections as they are made, silent ones
	 * too (tcpctd.conf(5)): those of a capped service are made at the
	 * ACK, as without the shield. */
	return svc->pol.delay_bind && !svc->pol.max_per_addr &&
	       !svc->pol.max_per_prefix;
}

void
shieldmap_service(struct shield_service_key *key, struct shield_service *v,
		  uint8_t family, const struct inaddr *addr, uint16_t port,
		  const struct profile *prof, bool drained, bool defer,
		  unsigned idx)
{
	memset(key, 0, sizeof(*key));
	memset(v, 0, sizeof(*v));
	key->family = family;
	key->port = htons(port);
	memcpy(key->addr, addr->b, sizeof(key->addr));
	v->mss = prof->mss;
	v->wscale = prof->wscale;
	v->flags = (uint8_t)((prof->ws ? SHIELD_SVC_WS : 0) |
			     (prof->sack ? SHIELD_SVC_SACK : 0) |
			     (prof->ts ? SHIELD_SVC_TS : 0) |
			     (prof->ecn ? SHIELD_SVC_ECN : 0) |
			     (drained ? SHIELD_SVC_DRAINED : 0) |
			     (defer ? SHIELD_SVC_DEFER : 0));
	v->index = idx;
}

void
shieldmap_watch(void *arg, const struct flow_key *k, uint32_t idx, bool live)
{
	struct worker *w = arg;
	struct shield_tuple t;

	flow_tuple(&t, k);
	STAT_ADD(w->st.shield_map_errors,
		 shield_flows_note(w->gw->shield, &w->shield_flows, &t,
				   w->slot_base + idx, live));
}

void
shieldmap_flush(struct worker *w)
{
	if (w->gw->shield)
		STAT_ADD(w->st.shield_map_errors,
			 shield_flows_flush(w->gw->shield, &w->shield_flows));
}

/* Attaches to ifname; a loopback interface only when named. */
static int
attach(struct shield *sh, const char *ifname, bool named, char *err,
       size_t errlen)
{
	unsigned idx = if_nametoindex(ifname);

	if (!idx) {
		snprintf(err, errlen, "%s: no such interface", ifname);
		return -1;
	}
	if (!named) {
		bool loopback = false;
		struct ifreq ifr;
		int fd;

		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
			loopback = ifr.ifr_flags & IFF_LOOPBACK;
		if (fd >= 0)
			close(fd);
		if (loopback)
			return 0;
	}
	if (shield_attach(sh, (int)idx, err, errlen) < 0) {
		char why[160];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", ifname, why);
		return -1;
	}
	return 0;
}

int
shieldmap_start(struct shield *sh, const struct config *cfg, char *err,
		size_t errlen, char *note, size_t notelen)
{
	unsigned flows = cfg->flows * cfg->queues, rate = 2 * cfg->limit_slots;
	int rc = 0;

	note[0] = '\0';
	/* Flows pinned by a predecessor that carried them: none here takes
	 * them over. */
	if (!cfg->kernel_flows && cfg->pin_dir[0])
		(void)shield_unpin(cfg->pin_dir);
	if (cfg->kernel_flows && cfg->pin_dir[0] &&
	    shield_open_pinned(sh, flows, rate, cfg->pin_dir, note,
			       notelen) == 0) {
		note[0] = '\0';
	} else if (shield_open(sh, flows, rate, err, errlen) < 0) {
		return -1;
	}
	if (cfg->nshield_devs) {
		unsigned d;

		for (d = 0; d < cfg->nshield_devs && rc == 0; d++)
			rc = attach(sh, cfg->shield_devs[d], true, err, errlen);
	} else {
		struct if_nameindex *all = if_nameindex(), *i;

		if (!all) {
			snprintf(err, errlen, "interfaces: %s",
				 strerror(errno));
			rc = -1;
		}
		for (i = all; rc == 0 && i && i->if_index; i++)
			rc = attach(sh, i->if_name, false, err, errlen);
		if (all)
			if_freenameindex(all);
		if (rc == 0 && !sh->ndevs) {
			snprintf(err, errlen, "no interface but loopback");
			rc = -1;
		}
	}
	if (rc < 0)
		shield_close(sh);
	return rc;
}

void
shieldmap_devs(const struct shield *sh, char *buf, size_t len)
{
	size_t n = 0;
	unsigned i;

	buf[0] = '\0';
	for (i = 0; i < sh->ndevs && n < len; i++) {
		char name[IF_NAMESIZE];
		int w;

		if (!if_indextoname((unsigned)sh->ifindex[i], name))
			snprintf(name, sizeof(name), "#%d", sh->ifindex[i]);
		w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

uint64_t
shieldmap_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* CLOCK_REALTIME − CLOCK_MONOTONIC, in ns. */
static int64_t
wall_offset(void)
{
	struct timespec mono, wall;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &wall);
	return ((int64_t)wall.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
	       ((int64_t)wall.tv_nsec - (int64_t)mono.tv_nsec);
}

/* What the shield may pass to the SYN queues a second per CPU: none
 * while one of them backs up, so that a flood of SYNs with TCPCT or Fast
 * Open options is answered in the kernel too, classically; else each
 * worker's share. */
static uint32_t
special_pass(const struct shield *sh, const struct config *cfg)
{
	struct queue_kernel k[POLICY_MAX_QUEUES];
	int n = queue_kernel_read(cfg->queue_base + cfg->queues, cfg->queues,
				  k, POLICY_MAX_QUEUES), i;

	for (i = 0; i < n; i++)
		if (k[i].waiting > cfg->queue_maxlen / SHIELDMAP_SYN_QUEUE_BUSY)
			return 0;
	return cfg->queues * SHIELDMAP_SPECIAL_RATE / (sh->ncpus ? sh->ncpus
								 : 1);
}

/* One of the operator's lists into the shield's. */
static int
sync_list(struct shield *sh, bool allow, const struct prefix *list,
	  unsigned n)
{
	struct shield_prefix p[POLICY_MAX_PREFIXES];
	unsigned i;

	for (i = 0; i < n && i < POLICY_MAX_PREFIXES; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].prefixlen = 8u + list[i].len;
		p[i].family = list[i].family;
		memcpy(p[i].addr, list[i].addr.b, sizeof(p[i].addr));
	}
	return shield_set_list(sh, allow, p, i);
}

int
shieldmap_lists(struct shield *sh, const struct config *cfg,
		struct shield_config *c)
{
	c->lists = (cfg->ndeny ? SHIELD_LIST_DENY : 0) |
		   (cfg->nallow ? SHIELD_LIST_ALLOW : 0);
	return sync_list(sh, true, cfg->allow, cfg->nallow) |
	       sync_list(sh, false, cfg->deny, cfg->ndeny);
}

int
shieldmap_addrs(struct shield *sh, const struct config *cfg)
{
	struct shield_addr a[POLICY_MAX_SERVICES];
	unsigned i, j, n = 0;

	for (i = 0; i < cfg->nservices && n < POLICY_MAX_SERVICES; i++) {
		const struct service *svc = &cfg->services[i];

		memset(&a[n], 0, sizeof(a[n]));
		a[n].family = svc->family;
		memcpy(a[n].addr, svc->addr.b, sizeof(a[n].addr));
		for (j = 0; j < n; j++)
			if (!memcmp(&a[j], &a[n], sizeof(a[n])))
				break;
		if (j == n)
			n++;
	}
	return shield_set_addrs(sh, a, n);
}

int
shieldmap_sync(struct shield *sh, const struct gateway *gw,
	       struct cookie_keys *k)
{
	const struct config *cfg = gw->cfg;
	const struct keys_master *m = gw->master;
	struct shield_service_key keep[POLICY_MAX_SERVICES];
	struct shield_config c;
	unsigned i;
	int failed = 0;

	/* A rotation swapped the master: the keys follow. */
	if (k->master != m)
		cookie_keys_rekey(k, m);
	if (cookie_keys_tick(k, (uint64_t)time(NULL)) < 0)
		return -1;
	shieldmap_config(&c, k, SHIELDMAP_VERIFIED_MARK(cfg), wall_offset());
	if (cfg->kernel_flows)
		c.carried_mark = POLICY_CARRIED_MARK(cfg);
	shieldmap_rate(&c, cfg, &gw->limits);
	c.heartbeat_ns = shieldmap_mono_ns();
	c.stand_aside_ms = cfg->bypass ? SHIELDMAP_STAND_ASIDE_MS : 0;
	c.special_pass = special_pass(sh, cfg);
	/* The lists before the config that has them looked up. */
	failed |= shieldmap_lists(sh, cfg, &c);
	failed |= shield_set_config(sh, &c);
	for (i = 0; i < cfg->nservices; i++) {
		const struct service *svc = &cfg->services[i];
		struct shield_service v;
		struct profile prof;

		profile_unpack(atomic_load(&gw->profile[i]), svc->family,
			       &prof);
		shieldmap_service(&keep[i], &v, svc->family, &svc->addr,
				  svc->port, &prof, atomic_load(&gw->drain[i]),
				  shieldmap_defers(svc), i);
		failed |= shield_set_service(sh, &keep[i], &v);
	}
	failed |= shield_prune_services(sh, keep, cfg->nservices);
	failed |= shieldmap_addrs(sh, cfg);
	return failed ? -1 : 0;
}
