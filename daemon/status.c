/*
 * What the daemon tells: tcpctl's status, backends and flows, the
 * metrics file, systemctl status's line, the counters on SIGUSR1.
 */
#include "status.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "../gateway/shieldmap.h"
#include "log.h"

void
status_print(struct daemon *d, FILE *f)
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
void
status_backends(struct daemon *d, FILE *f, bool json)
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
void
status_keys(struct daemon *d, char *buf, size_t len)
{
	int n;

	if (d->cfg->secret_file[0])
		n = snprintf(buf, len, "secret %s, id %08x",
			     d->cfg->secret_file,
			     keys_secret_id(d->master->secret));
	else
		n = snprintf(buf, len, "a random secret, id %08x",
			     keys_secret_id(d->master->secret));
	if (d->master->has_accept && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", accepting %08x",
			 keys_secret_id(d->master->accept));
}

/* "on: IFACE ...", or "off: why". */
void
status_shield(struct daemon *d, char *buf, size_t len)
{
	char devs[200];

	if (!d->gw.shield) {
		snprintf(buf, len, "off: %s", d->shield_off);
		return;
	}
	shieldmap_devs(&d->shield, devs, sizeof(devs));
	snprintf(buf, len, "on: %s", devs);
}

void
status_write(struct daemon *d, FILE *f, bool json)
{
	unsigned long long active = stats_get(&d->st, "flows_active");
	unsigned long long cap = stats_get(&d->st, "flows_capacity");
	unsigned long long carried = stats_get(&d->st, "flows_carried");
	unsigned long long adopted = stats_get(&d->st, "adopted");
	long long up = (long long)(time(NULL) - d->started_at);
	char keys[384];

	if (json) {
		fprintf(f, "{\"version\": \"%s\", \"pid\": %ld, "
			"\"uptime\": %lld, \"workers\": %u, "
			"\"queue_base\": %u, \"flows_active\": %llu, "
			"\"flows_capacity\": %llu, \"flows_carried\": %llu, "
			"\"flows_adopted\": %llu, \"secret_file\": ",
			TCPCTD_VERSION, (long)getpid(), up, d->cfg->queues,
			d->cfg->queue_base, active, cap, carried, adopted);
		json_str(f, d->cfg->secret_file);
		fprintf(f, ", \"secret_id\": \"%08x\", \"accepted_secret_id\": ",
			keys_secret_id(d->master->secret));
		if (d->master->has_accept)
			fprintf(f, "\"%08x\"",
				keys_secret_id(d->master->accept));
		else
			fputs("null", f);
		fputs(", \"shield\": ", f);
		status_shield(d, keys, sizeof(keys));
		json_str(f, keys);
		fputs(", \"services\": ", f);
		status_backends(d, f, true);
		fputs("}\n", f);
		return;
	}
	fprintf(f, "tcpctd %s, pid %ld, up %lld s\n"
		"workers %u: flow queues %u..%u, SYN queues %u..%u\n"
		"flows %llu of %llu, %llu carried by the kernel, %llu taken "
		"over at the start\n", TCPCTD_VERSION, (long)getpid(), up,
		d->cfg->queues, d->cfg->queue_base,
		d->cfg->queue_base + d->cfg->queues - 1,
		d->cfg->queue_base + d->cfg->queues,
		d->cfg->queue_base + 2 * d->cfg->queues - 1, active, cap,
		carried, adopted);
	status_keys(d, keys, sizeof(keys));
	fprintf(f, "keys: %s\n", keys);
	status_shield(d, keys, sizeof(keys));
	fprintf(f, "shield: %s\n", keys);
	status_backends(d, f, false);
}

/* Service i's backend for a message: its address, and the service's
 * name when it has one of its own. */
const char *
status_backend_label(struct daemon *d, unsigned i, char *buf, size_t len)
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
void
status_notify(struct daemon *d, bool ready)
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

/* A request waits for the round in flight, then for its own, each
 * within STATUS_FLOWS_WAIT_MS (and a retry late): its error is told
 * before its deadline cuts it. */
_Static_assert(2 * (STATUS_FLOWS_WAIT_MS + CONTROL_RETRY_MS) <
	       CONTROL_DEADLINE_MS, "a flows request outlives its rounds");

/* Round asked + 1, asked of every worker: each answers between two of its
 * batches (worker_dump_flows). */
static void
flows_ask(struct daemon *d, uint64_t now)
{
	struct flows_round *r = &d->flows;
	unsigned i;

	r->asked++;
	r->deadline_ms = now + STATUS_FLOWS_WAIT_MS;
	memcpy(r->forms, r->next, sizeof(r->forms));
	memset(r->next, 0, sizeof(r->next));
	for (i = 0; i < d->cfg->queues; i++)
		r->want[i] = atomic_fetch_add(&d->workers[i].dump.req, 1) + 1;
}

/* Each connection of the workers' dumps, the translation between its
 * halves. */
static void
flows_write(struct daemon *d, FILE *f, bool json)
{
	unsigned i, j, shown = 0;
	uint64_t total = 0;

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

/* Round asked ends, every worker answered (or not, past its deadline):
 * its answers in the forms asked, for each of its requests. */
static void
flows_tell(struct daemon *d, bool answered)
{
	struct flows_round *r = &d->flows;
	unsigned k;

	for (k = 0; k < FLOWS_FORMS; k++) {
		FILE *f;

		free(r->answer[k]);
		r->answer[k] = NULL;
		r->len[k] = 0;
		if (!r->forms[k] ||
		    !(f = open_memstream(&r->answer[k], &r->len[k])))
			continue;
		if (answered)
			flows_write(d, f, k == FLOWS_JSON);
		else
			fputs("error: a worker did not answer in time\n", f);
		if (fclose(f) != 0) {
			free(r->answer[k]);
			r->answer[k] = NULL;
		}
	}
	r->told = r->asked;
}

/* Whether the round in flight is over: every worker answered, or its
 * time is up. */
static void
flows_tick(struct daemon *d, uint64_t now)
{
	struct flows_round *r = &d->flows;
	unsigned i, answered = 0;

	if (r->told == r->asked)
		return;
	for (i = 0; i < d->cfg->queues; i++)
		answered += atomic_load(&d->workers[i].dump.done) == r->want[i];
	if (answered == d->cfg->queues || now >= r->deadline_ms)
		flows_tell(d, answered == d->cfg->queues);
}

bool
status_flows(struct daemon *d, FILE *f, bool json, uint64_t now,
	     uint64_t *ticket)
{
	struct flows_round *r = &d->flows;
	unsigned form = json ? FLOWS_JSON : FLOWS_TEXT;

	flows_tick(d, now);
	/* Its round made no answer of its form (it was not asked for by
	 * the time the round was, or no memory): the next one. */
	if (*ticket && r->told >= *ticket && !r->answer[form])
		*ticket = 0;
	if (!*ticket) {
		*ticket = r->asked + 1;
		r->next[form] = true;
	}
	if (r->told == r->asked && r->asked < *ticket)
		flows_ask(d, now);
	if (r->told < *ticket)
		return false;
	fwrite(r->answer[form], 1, r->len[form], f);
	return true;
}

void
status_flows_free(struct daemon *d)
{
	unsigned k;

	for (k = 0; k < FLOWS_FORMS; k++) {
		free(d->flows.answer[k]);
		d->flows.answer[k] = NULL;
	}
}

/* The metrics as a node_exporter textfile: written aside, then renamed
 * over the old one, so that a scrape never reads half of it. */
void
status_metrics_file(struct daemon *d)
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
		logx(LOG_WARNING, "metrics: %s: %s", d->cfg->metrics_file,
		     strerror(errno));
		unlink(tmp);
	}
}
