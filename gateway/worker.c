#include "worker.h"
#include "mem.h"

#include <errno.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "../nfq/bytes.h"

_Static_assert(FLOW_SERVICES == POLICY_MAX_SERVICES,
	       "a timer list per service");

uint64_t
worker_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The monotonic clock for timers; wall-clock time for the key epochs and
 * TCPCT's TSvals, which every gateway of a fleet must read alike (a
 * cookie's age). */
void
worker_read_clocks(struct worker *w)
{
	struct timespec ts;

	w->now_ms = worker_mono_ms();
	clock_gettime(CLOCK_REALTIME, &ts);
	w->now_s = (uint64_t)ts.tv_sec;
	w->now_wall_ms = (uint64_t)ts.tv_sec * 1000 +
			 (uint64_t)ts.tv_nsec / 1000000;
}

int
worker_init_state(struct worker *w, struct gateway *gw, unsigned id,
		  char *err, size_t errlen)
{
	const struct config *cfg = gw->cfg;
	uint64_t seed;
	uint32_t i;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->gw = gw;
	w->cfg = cfg;
	w->ij.fd4 = w->ij.fd6 = -1;
	if (RAND_bytes((uint8_t *)&seed, sizeof(seed)) != 1)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)id << 32);
	if (gw->shield && gw->shield->pinned) {
		/* Pinned beside the shield's maps: a predecessor's table,
		 * when it left one (carry.h's adoption). */
		char name[32];
		bool kept;
		void *b;

		snprintf(name, sizeof(name), "flows_%u", id);
		b = shield_block(gw->shield, name,
				 flow_table_bytes(cfg->flows), &kept);
		if (!b || flow_table_place(&w->ft, cfg->flows, seed, b,
					   kept) < 0) {
			snprintf(err, errlen, "pinned flow table %s: %s", name,
				 strerror(errno));
			goto fail;
		}
	} else if (flow_table_init(&w->ft, cfg->flows, seed) < 0) {
		snprintf(err, errlen, "flow table of %u entries: %s",
			 cfg->flows, strerror(errno));
		goto fail;
	}
	if (gw->shield) {
		/* Its records are the shield's, a slice per worker; a
		 * predecessor's carry nothing unless its table is taken over
		 * with them. */
		w->slot_base = id * cfg->flows;
		flow_table_share_recs(&w->ft, gw->shield->recs + w->slot_base);
		if (!w->ft.adopted)
			memset(w->ft.recs, 0, cfg->flows * sizeof(*w->ft.recs));
	}
	w->ft.watch = gw->flow_watch;	/* set with the shield */
	w->ft.watch_arg = w;
	if (txn_table_init(&w->txn, cfg->tcpct_txn ? cfg->txn_pending : 0,
			   seed ^ 1) < 0) {
		snprintf(err, errlen, "transaction table: out of memory");
		goto fail;
	}
	if (farcache_init(&w->far, cfg->upstream_cache, seed ^ 2) < 0) {
		snprintf(err, errlen, "upstream cache: out of memory");
		goto fail;
	}
	w->hold.cap = cfg->hold_slots;
	w->hold.buf = mem_resident(cfg->hold_slots, sizeof(*w->hold.buf));
	w->hold.len = mem_resident(cfg->hold_slots, sizeof(*w->hold.len));
	w->hold.free = mem_resident(cfg->hold_slots, sizeof(*w->hold.free));
	if (!w->hold.buf || !w->hold.len || !w->hold.free) {
		snprintf(err, errlen, "hold buffers: out of memory");
		goto fail;
	}
	for (i = 0; i < cfg->hold_slots; i++)
		w->hold.free[i] = (int32_t)i;
	w->hold.nfree = cfg->hold_slots;
	if (cookie_keys_init(&w->keys, gw->master, cfg->key_lifetime) < 0 ||
	    cookie_keys_init(&w->keys_alt, gw->master, cfg->key_lifetime) < 0) {
		snprintf(err, errlen, "SipHash from OpenSSL is not available");
		goto fail;
	}
	w->keys.alt = &w->keys_alt;
	w->keys_alt.accepted = true;
	w->dump.view = mem_resident(FLOW_DUMP_MAX, sizeof(*w->dump.view));
	if (!w->dump.view) {
		snprintf(err, errlen, "flow dump: out of memory");
		goto fail;
	}
	worker_read_clocks(w);
	if (cookie_keys_tick(&w->keys, w->now_s) < 0) {
		snprintf(err, errlen, "key derivation failed");
		goto fail;
	}
	w->keys_checked = w->now_s;
	return 0;
fail:
	worker_fini(w);
	return -1;
}

int
worker_init(struct worker *w, struct gateway *gw, unsigned id, char *err,
	    size_t errlen)
{
	const struct config *cfg = gw->cfg;
	struct queue_opts qo = {
		.maxlen = cfg->queue_maxlen,
		.batch = cfg->batch,
		.fail_open = cfg->fail_open,
		.gso = cfg->gso,
		.rcvbuf = 16 << 20,
	};
	int k;

	if (worker_init_state(w, gw, id, err, errlen) < 0)
		return -1;
	if (inject_open(&w->ij, cfg->mark) < 0) {
		snprintf(err, errlen, "raw sockets: %s", strerror(errno));
		goto fail;
	}
	for (k = 0; k < WORKER_QUEUES; k++) {
		qo.num = (uint16_t)(cfg->queue_base + id +
				    (k == WORKER_Q_SYN ? cfg->queues : 0));
		if (queue_open(&w->q[k], &qo) < 0) {
			snprintf(err, errlen, "queue %u: %s%s", qo.num,
				 strerror(errno),
				 errno == EBUSY || errno == EEXIST
				 ? " (another process has bound it)" : "");
			goto fail;
		}
	}
	w->cur = &w->q[WORKER_Q_FLOW];
	w->ready = true;
	return 0;
fail:
	worker_fini(w);
	return -1;
}

void
worker_fini(struct worker *w)
{
	for (int k = 0; k < WORKER_QUEUES; k++)
		if (w->q[k].nl)
			queue_close(&w->q[k]);
	inject_close(&w->ij);
	if (w->keys.mac128[0] || w->keys.mac128[1])
		cookie_keys_free(&w->keys);
	if (w->keys_alt.mac128[0] || w->keys_alt.mac128[1])
		cookie_keys_free(&w->keys_alt);
	flow_table_free(&w->ft);
	txn_table_free(&w->txn);
	farcache_free(&w->far);
	free(w->dump.view);
	w->dump.view = NULL;
	free(w->hold.buf);
	free(w->hold.len);
	free(w->hold.free);
	w->hold.buf = NULL;
	w->hold.len = NULL;
	w->hold.free = NULL;
	w->ready = false;
}

int
worker_emit(struct worker *w, const struct pkt_tcp_spec *s)
{
	uint8_t *buf = inject_slot(&w->ij);
	struct pkt p;
	size_t len;

	len = pkt_build_tcp(buf, INJECT_BUF, s, &p);
	if (!len)
		return -1;
	inject_commit(&w->ij, s->family, len);
	return 0;
}

int
worker_emit_udp(struct worker *w, const struct pkt_tcp_spec *s)
{
	uint8_t *buf = inject_slot(&w->ij);
	struct pkt p;
	size_t len;

	len = pkt_build_udp(buf, INJECT_BUF, s, &p);
	if (!len)
		return -1;
	inject_commit(&w->ij, s->family, len);
	return 0;
}

void
worker_spec_to_backend(struct pkt_tcp_spec *s, const struct flow *f)
{
	s->family = f->key.family;
	s->src = &f->key.caddr;
	s->dst = &f->key.baddr;
	s->sport = f->key.cport;
	s->dport = f->key.bport;
}

void
worker_spec_to_client(struct pkt_tcp_spec *s, const struct flow *f)
{
	s->family = f->key.family;
	s->src = &f->key.baddr;
	s->dst = &f->key.caddr;
	s->sport = f->key.bport;
	s->dport = f->key.cport;
}

void
worker_send(struct worker *w, const struct flow *f, bool to_backend,
	    uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win,
	    uint32_t tsval, uint32_t tsecr)
{
	struct tcpopt_spec os = { .ts = f->ts, .tsval = tsval, .tsecr = tsecr };
	struct pkt_tcp_spec s = {
		.seq = seq, .ack = ack, .flags = flags, .win = win,
	};
	uint8_t opts[TCP_OPT_MAX];

	if (to_backend)
		worker_spec_to_backend(&s, f);
	else
		worker_spec_to_client(&s, f);
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	worker_emit(w, &s);
}

uint16_t
worker_backend_win(const struct flow *f)
{
	return win_clamp(((uint32_t)f->c_win << f->c_ws) >> f->c_ws_b);
}

void
worker_rst_backend(struct worker *w, const struct flow *f, uint32_t seq)
{
	struct pkt_tcp_spec s = { .seq = seq, .flags = TCP_RST };

	worker_spec_to_backend(&s, f);
	worker_emit(w, &s);
}

void
worker_rst_client(struct worker *w, const struct flow *f, uint32_t seq)
{
	struct pkt_tcp_spec s = { .seq = seq, .flags = TCP_RST };

	worker_spec_to_client(&s, f);
	worker_emit(w, &s);
}

/* RFC 9293 §3.7.1: the MSS to assume when a SYN carries none. */
#define DEFAULT_MSS_V4	536
#define DEFAULT_MSS_V6	1220

uint16_t
worker_default_mss(uint8_t family)
{
	return family == AF_INET ? DEFAULT_MSS_V4 : DEFAULT_MSS_V6;
}

void
worker_profile(struct worker *w, const struct service *svc, uint8_t family,
	       struct profile *prof)
{
	unsigned idx = worker_service(w, svc);

	if (svc->upstream) {
		/* Far servers are not probed: a resolver is offered what
		 * TCPCT needs (timestamps, HACKING.md §1) and what servers
		 * do, the MSS of an Ethernet path with room for tunnels
		 * (cookie.h's table).  One without timestamps gets reset at
		 * its SYN-ACK (options_mismatch), as a backend that changed. */
		*prof = (struct profile){
			.known = true, .ws = true, .wscale = 7, .sack = true,
			.ts = true, .mss = family == AF_INET ? 1440 : 1420,
		};
		return;
	}
	profile_unpack(atomic_load_explicit(&w->gw->profile[idx],
					    memory_order_relaxed),
		       family, prof);
}

void
worker_cookie_tuple(struct cookie_tuple *t, const struct pkt *p)
{
	t->family = p->family;
	t->caddr = p->src;
	t->saddr = p->dst;
	t->cport = p->sport;
	t->sport = p->dport;
}

struct flow_key
worker_client_key(const struct pkt *p)
{
	struct flow_key k = {
		.family = p->family,
		.cport = p->sport,
		.bport = p->dport,
		.caddr = p->src,
		.baddr = p->dst,
	};

	return k;
}

bool
worker_csum_ok(struct worker *w, const struct pkt *p, bool csum_partial)
{
	if (!p->paylen || csum_partial || pkt_tcp_csum_ok(p))
		return true;
	STAT_INC(w, bad_csum);
	return false;
}

bool
worker_hold_take(struct worker *w, struct flow *f)
{
	struct hold_pool *h = &w->hold;

	if (!h->nfree) {
		STAT_INC(w, hold_full);
		return false;
	}
	f->hold = h->free[--h->nfree];
	h->len[f->hold] = 0;
	return true;
}

uint16_t
worker_hold_write(struct worker *w, const struct flow *f, const uint8_t *pay,
		  uint32_t n)
{
	struct hold_pool *h = &w->hold;
	struct tcpopt_spec os = { .ts = f->ts, .tsval = f->c_tsval,
				  .tsecr = f->gw_tsval };
	struct pkt_tcp_spec s = { 0 };
	uint8_t opts[TCP_OPT_MAX];
	struct pkt out;

	worker_spec_to_backend(&s, f);
	s.seq = f->c_base + 1;
	s.ack = f->g_base + 1;
	s.flags = TCP_ACK | TCP_PSH;
	s.win = f->c_win;
	s.opts = opts;
	s.optlen = tcpopt_build(opts, &os);
	s.pay = pay;
	s.paylen = n;
	h->len[f->hold] = (uint16_t)pkt_build_tcp(h->buf[f->hold], INJECT_BUF,
						  &s, &out);
	return h->len[f->hold];
}

void
worker_hold_free(struct worker *w, struct flow *f)
{
	if (f->hold >= 0) {
		w->hold.free[w->hold.nfree++] = f->hold;
		f->hold = -1;
	}
}

void
worker_rto_arm(struct worker *w, struct flow *f, unsigned level)
{
	if (level >= FLOW_RTO_LEVELS)
		level = FLOW_RTO_LEVELS - 1;
	flow_timer_set(&w->ft, f, FLOW_TIMER_RTO + level, w->now_ms);
}

