/*
 * tcpctd: stateless cookie handshakes in front of legacy TCP servers.
 *
 * Order of business (relayd's): options, configuration and its checks,
 * rules if asked, keys, backend probes, queues, then the loop that waits
 * for signals while the workers run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <systemd/sd-daemon.h>

#include "../gateway/probe.h"
#include "../gateway/shieldmap.h"
#include "../gateway/worker.h"
#include "../policy/config.h"
#include "../policy/keys.h"
#include "../policy/rules.h"
#include "control.h"
#include "daemon.h"
#include "log.h"
#include "options.h"
#include "reconfig.h"
#include "stats.h"


#define PROBE_TIMEOUT_MS	1000
#define PROBE_RETRY_MS		5000	/* while a backend is down */
#define DRAIN_POLL_MS		100	/* a stop draining looks this often */

static bool reload(struct daemon *d, FILE *out);
static bool keys_rotate(struct daemon *d, FILE *out);


static void
print_stats(struct daemon *d, FILE *f)
{
	stats_take(&d->st, &d->gw, d->workers, d->cfg->queues);
	stats_write(&d->st, STATS_TEXT, f);
	fflush(f);
}

static const char *const backend_states[] = {
	[BACKEND_UNPROBED] = "unprobed", [BACKEND_UP] = "up",
	[BACKEND_DOWN] = "down",
};

/* What each service's backend is known to do, and how it fares. */
static void
write_backends(struct daemon *d, FILE *f, bool json)
{
	unsigned i;

	if (json)
		fputc('[', f);
	for (i = 0; i < d->cfg->nservices; i++) {
		const struct service *s = &d->cfg->services[i];
		unsigned long long open, unanswered;
		bool overload;
		char addr[64];
		const char *kind = service_kind_name(s->kind);
		struct profile p;

		profile_unpack(atomic_load(&d->gw.profile[i]), s->family, &p);
		open = stats_service_get(&d->st, i, "backend_open");
		unanswered = stats_service_get(&d->st, i, "backend_unanswered");
		overload = stats_service_get(&d->st, i, "overload") != 0;
		service_format(s, addr, sizeof(addr));
		if (!json) {
			/* The backend, and the service's own name if it has
			 * one (a [service NAME] section). */
			bool named = service_named(s, addr);

			fprintf(f, "%s (%s%s%s): %s%s; ", addr, kind,
				named ? ", service " : "", named ? s->name : "",
				backend_states[d->gw.backend_state[i]],
				atomic_load(&d->gw.drain[i]) ? ", draining" : "");
			if (p.known)
				fprintf(f, "mss %u, wscale %s, sack %s, "
					"timestamps %s, ecn %s", p.mss,
					p.ws ? "yes" : "no", p.sack ? "yes" : "no",
					p.ts ? "yes" : "no", p.ecn ? "yes" : "no");
			else
				fputs("not probed yet", f);
			fprintf(f, "; %llu open, %llu unanswered%s\n", open,
				unanswered, overload ? ", overloaded" : "");
			continue;
		}
		fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
		json_str(f, s->name);
		fprintf(f, ", \"backend\": ");
		json_str(f, addr);
		fprintf(f, ", \"state\": \"%s\", \"draining\": %s",
			backend_states[d->gw.backend_state[i]],
			atomic_load(&d->gw.drain[i]) ? "true" : "false");
		fprintf(f, ", \"kind\": \"%s\", \"profiled\": %s, \"mss\": %u, "
			"\"wscale\": %d, \"sack\": %s, \"timestamps\": %s, "
			"\"ecn\": %s, \"backend_open\": %llu, "
			"\"backend_unanswered\": %llu, \"overload\": %s}",
			kind, p.known ? "true" : "false", p.mss,
			p.ws ? (int)p.wscale : -1, p.sack ? "true" : "false",
			p.ts ? "true" : "false", p.ecn ? "true" : "false",
			open, unanswered, overload ? "true" : "false");
	}
	if (json)
		fputs("\n]", f);
}

/* The secret in use, by its id (keys.h): gateways of a fleet show the
 * same. */
static void
keys_describe(struct daemon *d, char *buf, size_t len)
{
	int n;

	if (d->cfg->secret_file[0])
		n = snprintf(buf, len, "secret %s, id %08x", d->cfg->secret_file,
			     keys_secret_id(d->master->secret));
	else
		n = snprintf(buf, len, "a random secret, id %08x",
			     keys_secret_id(d->master->secret));
	if (d->master->has_accept && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", accepting %08x",
			 keys_secret_id(d->master->accept));
}

/* "on: IFACE ...", or "off: why". */
static void
shield_describe(struct daemon *d, char *buf, size_t len)
{
	char devs[200];

	if (!d->gw.shield) {
		snprintf(buf, len, "off: %s", d->shield_off);
		return;
	}
	shieldmap_devs(&d->shield, devs, sizeof(devs));
	snprintf(buf, len, "on: %s", devs);
}

static void
write_status(struct daemon *d, FILE *f, bool json)
{
	unsigned long long active = stats_get(&d->st, "flows_active");
	unsigned long long cap = stats_get(&d->st, "flows_capacity");
	long long up = (long long)(time(NULL) - d->started_at);
	char keys[384];

	if (json) {
		fprintf(f, "{\"version\": \"%s\", \"pid\": %ld, "
			"\"uptime\": %lld, \"workers\": %u, "
			"\"queue_base\": %u, \"flows_active\": %llu, "
			"\"flows_capacity\": %llu, \"secret_file\": ",
			TCPCTD_VERSION, (long)getpid(), up, d->cfg->queues,
			d->cfg->queue_base, active, cap);
		json_str(f, d->cfg->secret_file);
		fprintf(f, ", \"secret_id\": \"%08x\", \"accepted_secret_id\": ",
			keys_secret_id(d->master->secret));
		if (d->master->has_accept)
			fprintf(f, "\"%08x\"", keys_secret_id(d->master->accept));
		else
			fputs("null", f);
		fputs(", \"shield\": ", f);
		shield_describe(d, keys, sizeof(keys));
		json_str(f, keys);
		fputs(", \"services\": ", f);
		write_backends(d, f, true);
		fputs("}\n", f);
		return;
	}
	fprintf(f, "tcpctd %s, pid %ld, up %lld s\n"
		"workers %u: flow queues %u..%u, SYN queues %u..%u\n"
		"flows %llu of %llu\n", TCPCTD_VERSION, (long)getpid(), up,
		d->cfg->queues, d->cfg->queue_base, d->cfg->queue_base + d->cfg->queues - 1,
		d->cfg->queue_base + d->cfg->queues,
		d->cfg->queue_base + 2 * d->cfg->queues - 1, active, cap);
	keys_describe(d, keys, sizeof(keys));
	fprintf(f, "keys: %s\n", keys);
	shield_describe(d, keys, sizeof(keys));
	fprintf(f, "shield: %s\n", keys);
	write_backends(d, f, false);
}

/* Service i's backend for a message: its address, and the service's
 * name when it has one of its own. */
static const char *
backend_label(struct daemon *d, unsigned i, char *buf, size_t len)
{
	const struct service *s = &d->cfg->services[i];
	char addr[64];

	service_format(s, addr, sizeof(addr));
	if (service_named(s, addr))
		snprintf(buf, len, "%s (service %s)", addr, s->name);
	else
		snprintf(buf, len, "%s", addr);
	return buf;
}

/* systemctl status's line: what is protected, backends down or drained,
 * the last reload refused; told again whenever one of them changes, and
 * with READY=1 the first time. */
static void
notify_status(struct daemon *d, bool ready)
{
	unsigned i, down = 0, drained = 0;
	char downs[32] = "", drains[32] = "";

	if (d->stopping)	/* its line says so until the end */
		return;
	for (i = 0; i < d->cfg->nservices; i++) {
		down += d->gw.backend_state[i] == BACKEND_DOWN;
		drained += atomic_load(&d->gw.drain[i]);
	}
	if (down)
		snprintf(downs, sizeof(downs), ", %u backend%s down", down,
			 down == 1 ? "" : "s");
	if (drained)
		snprintf(drains, sizeof(drains), ", %u draining", drained);
	sd_notifyf(0, "%sSTATUS=protecting %u service%s%s%s%s",
		   ready ? "READY=1\n" : "", d->cfg->nservices,
		   d->cfg->nservices == 1 ? "" : "s", downs, drains,
		   d->gw.reload_ok ? "" : ", the last reload refused");
}

/*
 * systemd's watchdog (WatchdogSec=): pinged at half its interval, and only
 * while every worker's loop turns; one that hangs stops the pings, and
 * systemd restarts the daemon.
 */
struct watchdog {
	uint64_t interval_ms;	/* 0: not asked for */
	uint64_t next_ms;
	uint64_t beat[POLICY_MAX_QUEUES];
};

/* Every backend drained, those a reload adds too, while a stop drains. */
static void
drain_all(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < d->cfg->nservices; i++)
		atomic_store(&d->gw.drain[i], true);
}

/* Connections open to the backends, all services. */
static unsigned long long
backends_open(struct daemon *d)
{
	unsigned long long n = 0;
	unsigned i;

	for (i = 0; i < d->cfg->nservices; i++)
		n += atomic_load(&d->gw.backend_open[i]);
	return n;
}

/*
 * SIGTERM with stop-grace: every backend drained (its new clients refused,
 * so they go elsewhere), and the stop waits until no connection is open to
 * a backend, stop-grace seconds at most, as haproxy's soft stop does; a
 * second SIGTERM stops at once.  Sets *stop_at and returns true when there
 * is something to wait for.
 */
static bool
drain_for_stop(struct daemon *d, uint64_t *stop_at)
{
	unsigned long long open = backends_open(d);

	if (!d->cfg->stop_grace || !open)
		return false;
	d->stopping = true;
	drain_all(d);
	*stop_at = worker_mono_ms() + (uint64_t)d->cfg->stop_grace * 1000;
	logx(LOG_NOTICE, "stopping: every backend drained, waiting up to "
	     "%u s for %llu connection%s", d->cfg->stop_grace, open,
	     open == 1 ? "" : "s");
	sd_notifyf(0, "STOPPING=1\nSTATUS=stopping: draining %llu "
		   "connection%s", open, open == 1 ? "" : "s");
	return true;
}

static void
watchdog_init(struct watchdog *wd)
{
	uint64_t usec;

	memset(wd, 0, sizeof(*wd));
	if (sd_watchdog_enabled(0, &usec) > 0)
		wd->interval_ms = usec / 2000 ? usec / 2000 : 1;
}

/* Lowers *wait_ms to the next ping's time: a turn of the loop that
 * something else woke (a control client, a probe) must not put the ping
 * off by up to an interval, which would leave systemd's WatchdogSec
 * without one. */
static void
watchdog_wait(const struct watchdog *wd, uint64_t now, int *wait_ms)
{
	if (!wd->interval_ms)
		return;
	if (wd->next_ms <= now)
		*wait_ms = 0;
	else if (wd->next_ms - now < (uint64_t)*wait_ms)
		*wait_ms = (int)(wd->next_ms - now);
}

static void
watchdog_kick(struct daemon *d, struct watchdog *wd)
{
	uint64_t now = worker_mono_ms();
	unsigned i;

	if (!wd->interval_ms || now < wd->next_ms)
		return;
	wd->next_ms = now + wd->interval_ms;
	for (i = 0; i < d->cfg->queues; i++) {
		uint64_t b = __atomic_load_n(&d->workers[i].beat,
					     __ATOMIC_RELAXED);

		if (b == wd->beat[i]) {
			logx(LOG_WARNING, "worker %u has not turned for %llu ms: no "
			     "watchdog ping", i,
			     (unsigned long long)wd->interval_ms);
			return;
		}
		wd->beat[i] = b;
	}
	sd_notify(0, "WATCHDOG=1");
}

/* Asks every worker for its flows and waits (a second at most) for each
 * to answer between two of its batches.  Returns how many answered. */
static unsigned
ask_flows(struct daemon *d)
{
	unsigned i, tries, answered = 0;

	for (i = 0; i < d->cfg->queues; i++)
		atomic_fetch_add(&d->workers[i].dump.req, 1);
	for (i = 0; i < d->cfg->queues; i++) {
		unsigned want = atomic_load(&d->workers[i].dump.req);

		for (tries = 0; tries < 1000 &&
		     atomic_load(&d->workers[i].dump.done) != want; tries++)
			usleep(1000);
		answered += atomic_load(&d->workers[i].dump.done) == want;
	}
	return answered;
}

/* tcpctl flows: each connection, the translation between its halves. */
static void
write_flows(struct daemon *d, FILE *f, bool json)
{
	unsigned i, j, shown = 0;
	uint64_t total = 0;

	if (ask_flows(d) != d->cfg->queues) {
		fputs("error: a worker did not answer in time\n", f);
		return;
	}
	if (json)
		fputs("{\"flows\": [", f);
	for (i = 0; i < d->cfg->queues; i++) {
		const struct flow_dump *dump = &d->workers[i].dump;

		total += dump->total;
		for (j = 0; j < dump->n; j++) {
			const struct flow_view *v = &dump->view[j];
			const struct service *s = &d->cfg->services[v->service];
			char c[64], b[64];

			addrport_format(v->key.family, &v->key.caddr,
					v->key.cport, c, sizeof(c));
			addrport_format(v->key.family, &v->key.baddr,
					v->key.bport, b, sizeof(b));
			if (!json) {
				fprintf(f, "%s > %s  %s  %s  %llu.%llu s  "
					"seq +%08x  ts +%08x  wscale %u/%u/%u  "
					"mss %u%s%s  queries %u  worker %u\n",
					c, b, flow_state_name(v->state),
					v->tcpct ? "tcpct" : "cookie",
					(unsigned long long)(v->age_ms / 1000),
					(unsigned long long)(v->age_ms % 1000 / 100),
					v->seq_delta, v->ts_delta, v->c_ws,
					v->adv_ws,
					v->b_ws, v->mss, v->ts ? "  ts" : "",
					v->sack ? "  sack" : "", v->queries, i);
				continue;
			}
			fprintf(f, "%s\n  {\"client\": \"%s\", \"backend\": \"%s\", "
				"\"service\": ", shown ? "," : "", c, b);
			json_str(f, s->name);
			fprintf(f, ", \"state\": \"%s\", \"dialect\": \"%s\", "
				"\"age_ms\": %llu, \"seq_delta\": %u, "
				"\"ts_delta\": %u, \"client_wscale\": %u, "
				"\"our_wscale\": %u, \"backend_wscale\": %u, "
				"\"mss\": %u, \"timestamps\": %s, \"sack\": %s, "
				"\"queries\": %u, \"worker\": %u}",
				flow_state_name(v->state),
				v->tcpct ? "tcpct" : "cookie",
				(unsigned long long)v->age_ms, v->seq_delta,
				v->ts_delta, v->c_ws, v->adv_ws, v->b_ws, v->mss,
				v->ts ? "true" : "false",
				v->sack ? "true" : "false", v->queries, i);
			shown++;
		}
		if (!json)
			shown += dump->n;
	}
	if (json)
		fprintf(f, "\n], \"shown\": %u, \"total\": %llu}\n", shown,
			(unsigned long long)total);
	else
		fprintf(f, "%u of %llu flows shown (at most %u a worker)\n",
			shown, (unsigned long long)total, (unsigned)FLOW_DUMP_MAX);
}

/*
 * tcpctl drain|enable TARGET: the backends of the service named TARGET,
 * the backend at TARGET, or every one ("all").  A drained backend's new
 * clients are refused as a closed port refuses them, so that they try
 * another server at once; its connections open stay spliced.
 */
static void
set_drain(struct daemon *d, const char *target, bool on, FILE *out)
{
	unsigned i, n = 0;

	if (d->stopping && !on) {
		fputs("error: stopping: every backend stays drained\n", out);
		return;
	}
	for (i = 0; i < d->cfg->nservices; i++) {
		unsigned long long open = atomic_load(&d->gw.backend_open[i]);
		char addr[64], name[160];

		service_format(&d->cfg->services[i], addr, sizeof(addr));
		if (strcmp(target, "all") != 0 &&
		    strcmp(target, d->cfg->services[i].name) != 0 &&
		    strcmp(target, addr) != 0)
			continue;
		n++;
		backend_label(d, i, name, sizeof(name));
		if (atomic_exchange(&d->gw.drain[i], on) != on)
			logx(LOG_NOTICE, "backend %s: %s", name,
			     on ? "draining: new connections refused"
				: "taking new connections again");
		fprintf(out, "%s: %s, %llu connection%s open to it\n", name,
			on ? "draining" : "enabled", open, open == 1 ? "" : "s");
	}
	if (!n)
		fprintf(out, "error: no service or backend '%s'\n", target);
	else
		notify_status(d, false);
}

/* One tcpctl request: a command and, for a script, "json". */
static void
control_request(const char *req, FILE *out, void *arg)
{
	struct daemon *d = arg;
	char err[CONTROL_LINE_MAX + 64];
	struct control_req r;

	if (control_parse(req, &r, err, sizeof(err)) < 0) {
		fputs(err, out);
		return;
	}
	stats_take(&d->st, &d->gw, d->workers, d->cfg->queues);
	switch (r.cmd) {
	case CONTROL_STATUS:
		write_status(d, out, r.json);
		break;
	case CONTROL_STATS:
		stats_write(&d->st, r.json ? STATS_JSON : STATS_TEXT, out);
		break;
	case CONTROL_METRICS:
		/* In JSON the same counters are stats'. */
		stats_write(&d->st, r.json ? STATS_JSON : STATS_PROMETHEUS, out);
		break;
	case CONTROL_FLOWS:
		write_flows(d, out, r.json);
		break;
	case CONTROL_BACKENDS:
		write_backends(d, out, r.json);
		if (r.json)
			fputc('\n', out);
		break;
	case CONTROL_RELOAD:
		reload(d, out);
		break;
	case CONTROL_KEYS_ROTATE:
		keys_rotate(d, out);
		break;
	case CONTROL_DRAIN:
	case CONTROL_ENABLE:
		set_drain(d, r.target, r.cmd == CONTROL_DRAIN, out);
		break;
	}
}

/* The metrics as a node_exporter textfile: written aside, then renamed
 * over the old one, so that a scrape never reads half of it. */
static void
write_metrics_file(struct daemon *d)
{
	char tmp[sizeof(d->configs[0].metrics_file) + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", d->cfg->metrics_file);
	f = fopen(tmp, "we");
	if (!f) {
		logx(LOG_WARNING, "metrics: %s: %s", tmp, strerror(errno));
		return;
	}
	/* For node_exporter, another user: the unit's UMask would make it
	 * ours alone.  Counters are no secret. */
	if (fchmod(fileno(f), 0644) < 0)
		logx(LOG_WARNING, "metrics: %s: %s", tmp, strerror(errno));
	stats_take(&d->st, &d->gw, d->workers, d->cfg->queues);
	stats_write(&d->st, STATS_PROMETHEUS, f);
	if (fclose(f) != 0 || rename(tmp, d->cfg->metrics_file) != 0) {
		logx(LOG_WARNING, "metrics: %s: %s", d->cfg->metrics_file, strerror(errno));
		unlink(tmp);
	}
}

/* A probe of service i's backend failed with err: it is down (logged
 * once), its profile stays, and it is tried again soon. */
static void
probe_failed(struct daemon *d, unsigned i, int err, uint64_t now)
{
	char name[160];

	if (d->gw.backend_state[i] != BACKEND_DOWN)
		logx(LOG_WARNING, "backend %s: down (%s)%s",
		     backend_label(d, i, name, sizeof(name)), strerror(err),
		     atomic_load(&d->gw.profile[i]) ? "; keeping its profile"
						 : "; assuming no options");
	else if (d->cfg->verbose)
		logx(LOG_INFO, "backend %s: still down (%s)",
		     backend_label(d, i, name, sizeof(name)), strerror(err));
	d->next_probe[i] = now + PROBE_RETRY_MS;
	if (d->gw.backend_state[i] != BACKEND_DOWN) {
		d->gw.backend_state[i] = BACKEND_DOWN;
		notify_status(d, false);
	}
}

/* A probe of service i's backend connected and found p: it is up, its
 * profile p (a change logged), and the next probe an interval away. */
static void
probe_succeeded(struct daemon *d, unsigned i, const struct profile *p, uint64_t now)
{
	uint32_t packed = profile_pack(p);
	bool was_down = d->gw.backend_state[i] == BACKEND_DOWN;
	char name[160];

	backend_label(d, i, name, sizeof(name));
	if (was_down)
		logx(LOG_NOTICE, "backend %s: up again", name);
	if (packed != atomic_load(&d->gw.profile[i]))
		logx(LOG_INFO, "backend %s: mss %u, wscale %s%u, sack %s, "
		     "timestamps %s, ecn %s", name, p->mss,
		     p->ws ? "" : "none/", p->wscale, p->sack ? "yes" : "no",
		     p->ts ? "yes" : "no", p->ecn ? "yes" : "no");
	atomic_store(&d->gw.profile[i], packed);
	d->gw.backend_state[i] = BACKEND_UP;
	d->next_probe[i] = now + (uint64_t)d->cfg->probe_interval * 1000;
	if (was_down)
		notify_status(d, false);
}

/* Moves every backend probe on without waiting: takes the results of
 * those in flight, starts those due.  Returns how many are in flight. */
static unsigned
probe_tick(struct daemon *d)
{
	uint64_t now = worker_mono_ms();
	unsigned i, flying = 0;

	for (i = 0; i < d->cfg->nservices; i++) {
		struct profile p;
		int rc;

		if (d->probes[i].fd < 0 && d->next_probe[i] <= now &&
		    probe_start(&d->probes[i], &d->cfg->services[i],
				now + PROBE_TIMEOUT_MS) < 0) {
			probe_failed(d, i, errno, now);
			continue;
		}
		if (d->probes[i].fd < 0)
			continue;
		rc = probe_finish(&d->probes[i], now, &p);
		if (rc == 0)
			flying++;
		else if (rc < 0)
			probe_failed(d, i, errno, now);
		else
			probe_succeeded(d, i, &p, now);
	}
	return flying;
}

/* Adds the probes in flight to pfd (room for POLICY_MAX_SERVICES past n);
 * returns the new count, and lowers *wait_ms to the nearest deadline. */
static nfds_t
probe_pollfds(struct daemon *d, struct pollfd *pfd, nfds_t n, int *wait_ms)
{
	uint64_t now = worker_mono_ms();

	for (unsigned i = 0; i < d->cfg->nservices; i++) {
		if (d->probes[i].fd < 0)
			continue;
		pfd[n++] = (struct pollfd){ .fd = d->probes[i].fd, .events = POLLOUT };
		if (d->probes[i].deadline_ms <= now)
			*wait_ms = 0;
		else if (d->probes[i].deadline_ms - now < (uint64_t)*wait_ms)
			*wait_ms = (int)(d->probes[i].deadline_ms - now);
	}
	return n;
}

/* The probes due, all at once, waited for: at start, before the workers
 * start, and after a reload for its new services.  At most one
 * PROBE_TIMEOUT_MS, however many backends are silent. */
static void
probe_round(struct daemon *d)
{
	while (probe_tick(d)) {
		struct pollfd pfd[POLICY_MAX_SERVICES];
		int wait = PROBE_TIMEOUT_MS;
		nfds_t n = probe_pollfds(d, pfd, 0, &wait);

		if (poll(pfd, n, wait) < 0 && errno != EINTR)
			break;
	}
}

/* Waits until every worker has turned its loop twice: none holds a
 * pointer into the configuration it had before. */
static void
workers_quiesce(struct daemon *d)
{
	uint64_t seen[POLICY_MAX_QUEUES];
	unsigned i, tries;

	for (i = 0; i < d->cfg->queues; i++)
		seen[i] = __atomic_load_n(&d->workers[i].beat, __ATOMIC_RELAXED);
	for (i = 0; i < d->cfg->queues; i++)
		for (tries = 0; tries < 2000 &&
		     __atomic_load_n(&d->workers[i].beat, __ATOMIC_RELAXED) <
			     seen[i] + 2; tries++)
			usleep(1000);
}

/*
 * A reload (SIGHUP, tcpctl reload): the command line and its files read
 * again.  New services, limits, timeouts and switches take effect at once
 * and spliced connections stay as they are; a file that does not parse,
 * or that changes what only a restart can, is refused, and the running
 * configuration stays.  The rules are the caller's (the unit's
 * ExecReload installs them after this).
 */
static bool
reload_take(struct daemon *d, FILE *out)
{
	struct config *next = d->cfg == &d->configs[0] ? &d->configs[1] : &d->configs[0];
	const char *what;
	unsigned added, i;
	struct options o;
	char *why = NULL;
	size_t whylen = 0;
	FILE *errs = open_memstream(&why, &whylen);
	int errors;

	if (!errs) {
		fprintf(out, "error: out of memory\n");
		return false;
	}
	config_defaults(next);
	/* The command line was read whole at the start: it still is. */
	errors = options_parse(next, d->argc, d->argv, TCPCTD_CONFIG, &o,
			       errs) != OPTIONS_RUN;
	errors += o.errors;
	errors += config_check(next, options_config_error, errs);
	fclose(errs);
	if (errors) {
		/* The verdict first (tcpctl reads it there), then each. */
		fprintf(out, "error: %d error%s: the running configuration "
			"stays\n%s", errors, errors == 1 ? "" : "s", why);
		free(why);
		return false;
	}
	free(why);
	what = reconfig_needs_restart(d->cfg, next);
	if (what) {
		fprintf(out, "error: %s changed: that needs a restart; the "
			"running configuration stays\n", what);
		return false;
	}
	if (!reconfig_keep_order(d->cfg, next, out))
		return false;
	added = next->nservices - d->cfg->nservices;
	for (i = d->cfg->nservices; i < next->nservices; i++) {
		d->next_probe[i] = 0;
		d->gw.backend_state[i] = BACKEND_UNPROBED;
	}
	atomic_store(&d->gw.cfg, next);
	workers_quiesce(d);
	d->cfg = next;
	probe_round(d);	/* the new ones: one probe timeout at most */
	logx(LOG_NOTICE, "reloaded: %u service%s, %u new", d->cfg->nservices,
	     d->cfg->nservices == 1 ? "" : "s", added);
	fprintf(out, "reloaded: %u service%s, %u new\n", d->cfg->nservices,
		d->cfg->nservices == 1 ? "" : "s", added);
	return true;
}

/* A reload, and what the metrics say of it. */
static bool
reload(struct daemon *d, FILE *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	bool taken;

	if (!m) {
		logx(LOG_ERR, "reload: out of memory");
		return false;
	}
	taken = reload_take(d, m);
	fclose(m);
	if (out)
		fputs(text, out);
	/* The journal has a refusal too, at its level, whoever asked
	 * (SIGHUP has no one to answer); a reload taken is logged by
	 * reload_take. */
	if (!taken) {
		char *line, *next;

		for (line = text; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			logx(LOG_ERR, "reload refused: %s",
			     strncmp(line, "error: ", 7) ? line : line + 7);
		}
	}
	free(text);
	d->gw.reloads[taken]++;
	d->gw.reload_ok = taken;
	if (taken)
		d->gw.reload_time = time(NULL);
	notify_status(d, false);
	return taken;
}

/*
 * tcpctl keys rotate: the secret file read again.  Its first secret makes
 * cookies from now on; a second one verifies them too, so that a fleet
 * can change its secret one gateway at a time (keys.h).  Every worker
 * takes the new keys before its next batch.
 */
static bool
keys_rotate(struct daemon *d, FILE *out)
{
	struct keys_master *next = d->master == &d->masters[0] ? &d->masters[1]
							 : &d->masters[0];
	char err[256], keys[384];

	if (!d->cfg->secret_file[0]) {
		fputs("error: no secret-file: the secret is random, made at "
		      "start\n", out);
		return false;
	}
	if (keys_master_load(next, d->cfg->secret_file, err, sizeof(err)) < 0) {
		fprintf(out, "error: %s; the keys in use stay\n", err);
		return false;
	}
	atomic_store(&d->gw.master, next);
	workers_quiesce(d);
	OPENSSL_cleanse(d->master, sizeof(*d->master));
	d->master = next;
	keys_describe(d, keys, sizeof(keys));
	logx(LOG_NOTICE, "keys: read again: %s", keys);
	fprintf(out, "keys: %s read again: cookies made with its first "
		"secret%s\nkeys: %s\n", d->cfg->secret_file,
		d->master->has_accept ? ", verified with both" : "", keys);
	return true;
}

static void
shield_keys_free(struct daemon *d)
{
	if (d->shield_keys.mac128[0])
		cookie_keys_free(&d->shield_keys);
	if (d->shield_keys_alt.mac128[0])
		cookie_keys_free(&d->shield_keys_alt);
}

/* The kernel shield on the configured interfaces, its maps written;
 * false with the reason in err. */
static bool
shield_start(struct daemon *d, char *err, size_t errlen)
{
	char devs[200];

	/* As a worker's: the second, accepted secret's keys beside. */
	if (cookie_keys_init(&d->shield_keys, d->master, d->cfg->key_lifetime) < 0 ||
	    cookie_keys_init(&d->shield_keys_alt, d->master, d->cfg->key_lifetime) < 0) {
		snprintf(err, errlen, "SipHash from OpenSSL is not available");
		shield_keys_free(d);
		return false;
	}
	d->shield_keys.alt = &d->shield_keys_alt;
	d->shield_keys_alt.accepted = true;
	if (shieldmap_start(&d->shield, d->cfg, err, errlen) < 0) {
		snprintf(d->shield_off, sizeof(d->shield_off), "%s", err);
		shield_keys_free(d);
		return false;
	}
	if (shieldmap_sync(&d->shield, &d->gw, &d->shield_keys) < 0) {
		snprintf(err, errlen, "its maps refused the keys or services");
		snprintf(d->shield_off, sizeof(d->shield_off), "%s", err);
		shield_close(&d->shield);
		shield_keys_free(d);
		return false;
	}
	/* One count of SYN-ACKs per prefix, whichever path answers. */
	limits_share_rate(&d->gw.limits, (_Atomic uint64_t *)d->shield.rate);
	d->gw.shield = &d->shield;
	shieldmap_devs(&d->shield, devs, sizeof(devs));
	logx(LOG_NOTICE, "shield on: %s", devs);
	return true;
}

int
main(int argc, char **argv)
{
	/* Everything the daemon holds, once: too large for the stack. */
	static struct daemon daemon;
	struct daemon *d = &daemon;
	char err[256];
	struct options o;
	bool check_only;
	time_t next_metrics = 0;
	sigset_t sigs;
	int sigfd, ctlfd = -1;
	struct watchdog wd;
	uint64_t stop_at = 0;		/* worker_mono_ms(): a stop draining */
	unsigned i, started = 0;
	int errors, rc = 0, stale;

	d->cfg = &d->configs[0];
	d->master = &d->masters[0];
	snprintf(d->shield_off, sizeof(d->shield_off), "--shield no");
	d->argc = argc;
	d->argv = argv;
	log_setup();
	config_defaults(d->cfg);
	switch (options_parse(d->cfg, argc, argv, TCPCTD_CONFIG, &o, NULL)) {
	case OPTIONS_RUN:
		break;
	case OPTIONS_HELP:
		options_usage(stdout);
		return 0;
	case OPTIONS_VERSION:
		printf("tcpctd %s\n", TCPCTD_VERSION);
		return 0;
	case OPTIONS_USAGE:
		options_usage(stderr);
		return 2;
	}
	check_only = o.check_only;
	errors = o.errors + config_check(d->cfg, options_config_error, NULL);
	if (errors && d->cfg->rules == RULES_REMOVE && !check_only) {
		/* Removing needs nothing of the file but the commands: one
		 * broken since the start must not leave the rules behind
		 * when the service stops. */
		logx(LOG_WARNING, "%d error%s in the configuration: removing "
		     "the rules all the same", errors, errors == 1 ? "" : "s");
		errors = 0;
	}
	if (errors) {
		fprintf(stderr, "%d error%s\n", errors, errors == 1 ? "" : "s");
		return 1;
	}
	if (check_only) {
		/* What the start would find, as the user -t runs as (the
		 * unit's ExecStartPre= runs it as the daemon's). */
		if (keys_master_check(d->cfg->secret_file, err, sizeof(err)) < 0) {
			fprintf(stderr, "secret: %s\n1 error\n", err);
			return 1;
		}
		printf("configuration OK\n");
		if (d->cfg->verbose)
			config_write_policies(d->cfg, stdout);
		return 0;
	}
	if (d->cfg->rules != RULES_NONE) {
		int failed = rules_apply(d->cfg, d->cfg->rules, stdout);
		if (failed)
			logx(LOG_ERR, "rules: %d command%s failed", failed,
			     failed == 1 ? "" : "s");
		return failed ? 1 : 0;
	}
	if (keys_master_load(d->master, d->cfg->secret_file, err, sizeof(err)) < 0) {
		logx(LOG_ERR, "secret: %s", err);
		return 1;
	}

	/* A control client that leaves early must not end the daemon. */
	signal(SIGPIPE, SIG_IGN);
	/* Signals come to this thread only, through a signalfd. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (sigfd < 0) {
		logx(LOG_ERR, "signalfd: %s", strerror(errno));
		return 1;
	}
	if (d->cfg->control_socket[0]) {
		ctlfd = control_open(d->cfg->control_socket, err, sizeof(err));
		if (ctlfd < 0) {
			logx(LOG_ERR, "control socket: %s", err);
			return 1;
		}
	}
	control_init(&d->ctl, ctlfd);
	d->gw.control = &d->ctl;
	d->started_at = time(NULL);
	d->gw.start_time = d->gw.reload_time = d->started_at;
	d->gw.reload_ok = true;

	d->gw.cfg = d->cfg;
	d->gw.master = d->master;
	{
		uint64_t seed;

		if (RAND_bytes((uint8_t *)&seed, sizeof(seed)) != 1 ||
		    limits_init(&d->gw.limits, d->cfg->limit_slots, seed) < 0) {
			logx(LOG_ERR, "limit tables of %u slots: %s", d->cfg->limit_slots,
			     strerror(errno));
			return 1;
		}
	}
	atomic_init(&d->gw.stop, false);
	if (d->cfg->shield != SHIELD_NO && !shield_start(d, err, sizeof(err))) {
		if (d->cfg->shield == SHIELD_YES) {
			logx(LOG_ERR, "shield: %s", err);
			return 1;
		}
		logx(LOG_NOTICE, "shield off: %s", err);
	}
	/* A killed predecessor's shield answers with keys this daemon may
	 * not hold, and sends ACKs to it marked as verified. */
	if (!d->gw.shield && (stale = shield_remove_stale()) > 0)
		logx(LOG_NOTICE, "shield: removed %d left by a daemon before "
		     "this one", stale);
	for (i = 0; i < POLICY_MAX_SERVICES; i++)
		d->probes[i].fd = -1;
	probe_round(d);

	d->workers = calloc(d->cfg->queues, sizeof(*d->workers));
	if (!d->workers) {
		logx(LOG_ERR, "out of memory");
		return 1;
	}
	for (i = 0; i < d->cfg->queues; i++)
		if (worker_init(&d->workers[i], &d->gw, i, err, sizeof(err)) < 0) {
			logx(LOG_ERR, "worker %u: %s", i, err);
			rc = 1;
			goto out;
		}
	for (i = 0; i < d->cfg->queues; i++) {
		if (pthread_create(&d->workers[i].thread, NULL, worker_run,
				   &d->workers[i]) != 0) {
			logx(LOG_ERR, "worker %u: cannot start its thread", i);
			rc = 1;
			goto out;
		}
		started++;
	}
	logx(LOG_NOTICE, "protecting %u service%s on queues %u..%u (flows) and %u..%u "
	     "(SYNs)", d->cfg->nservices, d->cfg->nservices == 1 ? "" : "s",
	     d->cfg->queue_base, d->cfg->queue_base + d->cfg->queues - 1,
	     d->cfg->queue_base + d->cfg->queues, d->cfg->queue_base + 2 * d->cfg->queues - 1);
	{
		char keys[384];

		keys_describe(d, keys, sizeof(keys));
		logx(LOG_NOTICE, "keys: %s", keys);
	}

	watchdog_init(&wd);
	notify_status(d, true);
	for (;;) {
		struct pollfd pfd[1 + CONTROL_POLLFDS + POLICY_MAX_SERVICES] = {
			{ .fd = sigfd, .events = POLLIN },
		};
		struct signalfd_siginfo si;
		time_t now;
		uint64_t ms = worker_mono_ms();
		int wait = stop_at ? DRAIN_POLL_MS
			   : d->gw.shield ? SHIELDMAP_SYNC_MS : 1000;

		watchdog_wait(&wd, ms, &wait);
		control_pollfds(&d->ctl, &pfd[1], ms, &wait);
		nfds_t n = probe_pollfds(d, pfd, 1 + CONTROL_POLLFDS, &wait);

		/* A negative fd is skipped: without a control socket, a
		 * client's free slot. */
		if (poll(pfd, n, wait) < 0 && errno != EINTR) {
			logx(LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		if ((pfd[0].revents & POLLIN) &&
		    read(sigfd, &si, sizeof(si)) == sizeof(si)) {
			if ((si.ssi_signo == SIGTERM ||
			     si.ssi_signo == SIGINT) &&
			    (stop_at || !drain_for_stop(d, &stop_at)))
				break;
			if (si.ssi_signo == SIGUSR1)
				print_stats(d, stderr);
			if (si.ssi_signo == SIGHUP)
				reload(d, NULL);
		}
		control_serve(&d->ctl, &pfd[1], worker_mono_ms(), control_request,
			      d);
		watchdog_kick(d, &wd);
		now = time(NULL);
		probe_tick(d);
		/* Keys, profiles and drains, as they are now. */
		if (d->gw.shield && shieldmap_sync(&d->shield, &d->gw, &d->shield_keys) < 0)
			logx(LOG_WARNING, "shield: a map refused an update");
		if (d->cfg->metrics_file[0] && now >= next_metrics) {
			write_metrics_file(d);
			next_metrics = now + d->cfg->metrics_interval;
		}
		if (stop_at) {
			unsigned long long open = backends_open(d);

			drain_all(d);
			if (!open || worker_mono_ms() >= stop_at) {
				logx(LOG_NOTICE, "stopping: %llu connection%s "
				     "still open to backends", open,
				     open == 1 ? "" : "s");
				break;
			}
		}
	}
out:
	sd_notify(0, "STOPPING=1");
	for (i = 0; i < POLICY_MAX_SERVICES; i++)
		probe_cancel(&d->probes[i]);
	atomic_store(&d->gw.stop, true);
	for (i = 0; i < started; i++)
		pthread_join(d->workers[i].thread, NULL);
	if (started)
		print_stats(d, stderr);
	for (i = 0; i < d->cfg->queues; i++)
		worker_fini(&d->workers[i]);
	free(d->workers);
	if (d->gw.shield) {
		/* Its SYN-ACKs stop with the daemon that would take their
		 * ACKs. */
		shield_close(&d->shield);
		shield_keys_free(d);
		d->gw.shield = NULL;
	}
	limits_free(&d->gw.limits);
	control_close(&d->ctl, d->cfg->control_socket);
	close(sigfd);
	logx(LOG_NOTICE, "stopped");
	return rc;
}
