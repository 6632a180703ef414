#include "stats.h"

#include <inttypes.h>
#include <string.h>

#include "../gateway/probe.h"
#include "../policy/rules.h"
#include "../shield/shield.h"
#include "control.h"

/* Adds a row; the name is family's text form, with the label value. */
static struct stat_row *
add(struct stats *s, const char *family, const char *help, bool gauge,
    uint64_t value)
{
	struct stat_row *r;

	/* The last place is rows_left_out's. */
	if (s->n >= STATS_ROWS - 1) {
		s->left_out++;
		return NULL;
	}
	r = &s->row[s->n++];
	memset(r, 0, sizeof(*r));
	r->family = family;
	r->help = help;
	r->gauge = gauge;
	r->value = value;
	r->service = -1;
	snprintf(r->name, sizeof(r->name), "%s", family);
	return r;
}

/* A row of a labeled family: its text name is prefix, the label's value
 * and suffix. */
static struct stat_row *
add_labeled(struct stats *s, const char *prefix, const char *suffix,
	    const char *family, const char *help, bool gauge,
	    const char *label, const char *lvalue, uint64_t value)
{
	struct stat_row *r = add(s, family, help, gauge, value);

	if (!r)
		return NULL;
	r->label = label;
	snprintf(r->lvalue, sizeof(r->lvalue), "%s", lvalue);
	snprintf(r->name, sizeof(r->name), "%s%s%s", prefix, lvalue, suffix);
	return r;
}

/* A service as its rows name it, made once per service: the backend as
 * text, and the name's prefix, SERVICE/BACKEND/ or, for a service named
 * after its backend (--protect), BACKEND/. */
struct service_id {
	const struct service *svc;
	int index;
	char backend[56];
	char prefix[128];
};

static void
service_id(struct service_id *id, const struct config *cfg, unsigned i)
{
	id->svc = &cfg->services[i];
	id->index = (int)i;
	service_format(id->svc, id->backend, sizeof(id->backend));
	if (service_named(id->svc, id->backend))
		snprintf(id->prefix, sizeof(id->prefix), "%s/%s/",
			 id->svc->name, id->backend);
	else
		snprintf(id->prefix, sizeof(id->prefix), "%s/", id->backend);
}

/* A row of a service, labeled with its name and backend; what names it
 * within the service (synacks_tfo), label3 (dialect) is a third label. */
static struct stat_row *
add_service(struct stats *s, const struct service_id *id, const char *what,
	    const char *family, const char *help, bool gauge,
	    const char *label3, const char *lvalue3, uint64_t value)
{
	struct stat_row *r = add(s, family, help, gauge, value);

	if (!r)
		return NULL;
	r->label = "service";
	snprintf(r->lvalue, sizeof(r->lvalue), "%s", id->svc->name);
	memcpy(r->backend, id->backend, sizeof(r->backend));
	r->service = id->index;
	r->label3 = label3;
	r->lvalue3 = lvalue3;
	if (lvalue3)
		snprintf(r->what, sizeof(r->what), "%s_%s", what, lvalue3);
	else
		snprintf(r->what, sizeof(r->what), "%s", what);
	snprintf(r->name, sizeof(r->name), "%s%s", id->prefix, r->what);
	return r;
}

static const char *const dialect_names[DIALECT_MAX] = {
	[DIALECT_CLASSIC] = "classic",
	[DIALECT_TCPCT] = "tcpct",
	[DIALECT_TFO] = "tfo",
};

/* Sums n words that other threads write, each read once. */
static void
sum_words(uint64_t *dst, const void *src, size_t bytes)
{
	const uint64_t *w = src;
	size_t i;

	for (i = 0; i < bytes / sizeof(uint64_t); i++)
		dst[i] += __atomic_load_n(&w[i], __ATOMIC_RELAXED);
}

/* The row of the daemon's own counter of that family, unlabeled; NULL
 * when there is none. */
static struct stat_row *
find_family(struct stats *s, const char *family)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->row[i].family, family) && !s->row[i].label)
			return &s->row[i];
	return NULL;
}

/*
 * The kernel shield's counters.  One that counts what a daemon's counter
 * counts goes in its family, both labeled with the path that answered
 * (path="queue", path="shield"), so that a sum over the family is the
 * gateway's; its text row is shield/NAME.  The cookie results join
 * cookie_checks_total's; the shield's own counters are families of their
 * own.
 */
static void
take_shield(struct stats *s, const struct gateway *gw)
{
	uint64_t v[SHIELD_COUNTER_MAX];
	unsigned c;

	add(s, "shield_interfaces", "interfaces the kernel shield is on", true,
	    gw->shield ? gw->shield->ndevs : 0);
	if (!gw->shield || shield_counters(gw->shield, v) < 0)
		return;
	for (c = 0; c < s->n; c++)
		if (!strcmp(s->row[c].family, "cookie_checks_total")) {
			s->row[c].label3 = "path";
			s->row[c].lvalue3 = "queue";
		}
	for (c = 0; c < SHIELD_COUNTER_MAX; c++) {
		const char *name = shield_counter_name(c);
		const char *help = shield_counter_help(c);
		struct stat_row *daemon = find_family(s, name), *r;

		if (!strncmp(name, "cookie_", 7)) {
			r = add_labeled(s, "shield/", "", "cookie_checks_total",
					"classic cookies checked, by result",
					false, "result", name + 7, v[c]);
			if (r) {
				r->label3 = "path";
				r->lvalue3 = "shield";
				snprintf(r->name, sizeof(r->name),
					 "shield/%s", name);
			}
			continue;
		}
		if (!daemon) {
			add(s, name, help, false, v[c]);
			continue;
		}
		daemon->label = "path";
		snprintf(daemon->lvalue, sizeof(daemon->lvalue), "queue");
		r = add_labeled(s, "shield/", "", daemon->family, daemon->help,
				false, "path", "shield", v[c]);
		if (r)
			snprintf(r->name, sizeof(r->name), "shield/%s", name);
	}
}

/*
 * The kernel's side of each queue (nfnetlink_queue in /proc/net): packets
 * handed to it so far (its last packet id, which wraps at 2^32: each
 * worker's share of the load), waiting, dropped because the queue was
 * full, and dropped because our socket's buffer was.
 */
static void
take_kernel_queues(struct stats *s, const struct config *cfg)
{
	struct queue_kernel k[WORKER_QUEUES * POLICY_MAX_QUEUES];
	int n = queue_kernel_read(cfg->queue_base, WORKER_QUEUES * cfg->queues,
				  k, WORKER_QUEUES * POLICY_MAX_QUEUES);
	char q[12];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(q, sizeof(q), "%u", k[i].num);
		add_labeled(s, "kernel_queue", "_packets",
			    "kernel_queue_packets_total",
			    "packets the kernel handed the queue (wraps at 2^32)",
			    false, "queue", q, k[i].last_id);
		add_labeled(s, "kernel_queue", "_waiting",
			    "kernel_queue_waiting",
			    "packets in the kernel's queue, waiting for a verdict",
			    true, "queue", q, k[i].waiting);
		add_labeled(s, "kernel_queue", "_dropped_full",
			    "kernel_queue_dropped_full_total",
			    "packets the kernel dropped: the queue was full",
			    false, "queue", q, k[i].dropped_full);
		add_labeled(s, "kernel_queue", "_dropped_socket",
			    "kernel_queue_dropped_socket_total",
			    "packets the kernel dropped: our socket buffer was full",
			    false, "queue", q, k[i].dropped_socket);
	}
}

/*
 * What the rules dropped before any queue (policy/rules.c), per family,
 * from their kernel counters; none while the rules are not installed.
 */
static void
take_kernel_drops(struct stats *s)
{
	static const struct {
		uint8_t family;
		const char *name;
	} fam[] = { { AF_INET, "ipv4" }, { AF_INET6, "ipv6" } };
	static const struct {
		int (*read)(uint8_t family, uint64_t *packets);
		const char *prefix, *family, *help;
	} what[] = {
		{ rules_fragment_drops, "kernel_fragments_dropped_",
		  "kernel_fragments_dropped_total",
		  "fragments of TCP datagrams to a protected address, dropped "
		  "by the rules" },
		{ rules_spoofed_drops, "kernel_backend_spoofed_dropped_",
		  "kernel_backend_spoofed_dropped_total",
		  "packets with a backend's address from an interface the "
		  "route to it does not use, dropped by the rules" },
	};
	uint64_t dropped;
	unsigned i, j;

	for (j = 0; j < sizeof(what) / sizeof(what[0]); j++)
		for (i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
			if (what[j].read(fam[i].family, &dropped) == 0)
				add_labeled(s, what[j].prefix, "",
					    what[j].family, what[j].help,
					    false, "family", fam[i].name,
					    dropped);
}

/* The daemon itself, as Prometheus's own exporters say it. */
static void
take_daemon(struct stats *s, const struct gateway *gw)
{
	struct stat_row *r;
	unsigned j;

	r = add(s, "build_info", "1, with the version as a label", true, 1);
	if (r) {
		r->label = "version";
		snprintf(r->lvalue, sizeof(r->lvalue), "%s", TCPCTD_VERSION);
	}
	add(s, "start_time_seconds", "when the daemon started, Unix time",
	    true, (uint64_t)gw->start_time);
	add(s, "config_last_reload_successful",
	    "1 when the last reload was taken (or none was asked)", true,
	    gw->reload_ok);
	add(s, "config_last_reload_success_timestamp_seconds",
	    "when the running configuration was read, Unix time", true,
	    (uint64_t)gw->reload_time);
	add_labeled(s, "reloads_", "", "reloads_total",
		    "reloads asked for, by result", false, "result", "taken",
		    gw->reloads[1]);
	add_labeled(s, "reloads_", "", "reloads_total",
		    "reloads asked for, by result", false, "result", "refused",
		    gw->reloads[0]);
	for (j = 0; j < CONTROL_DROP_MAX; j++)
		add_labeled(s, "control_dropped_", "", "control_dropped_total",
			    "tcpctl clients closed unanswered, by reason",
			    false, "reason", control_drop_name(j),
			    gw->control ? gw->control->dropped[j] : 0);
}

/* Service j's rows, summed over the n workers. */
static void
take_service(struct stats *s, const struct gateway *gw,
	     const struct worker *workers, unsigned n, unsigned j)
{
	const struct config *cfg = gw->cfg;
	struct service_stats ss;
	struct service_id id;
	struct profile p;
	uint64_t unanswered = 0;
	unsigned d, i;

	memset(&ss, 0, sizeof(ss));
	for (i = 0; i < n; i++) {
		unanswered += __atomic_load_n(&workers[i].opening[j],
					      __ATOMIC_RELAXED);
		if (workers[i].ready)
			sum_words((uint64_t *)&ss, &workers[i].svc_st[j],
				  sizeof(ss));
	}
	profile_unpack(atomic_load(&gw->profile[j]),
		       cfg->services[j].family, &p);
	service_id(&id, cfg, j);
	add_service(s, &id, "backend_open", "backend_open",
		    "connections open to the backend", true, NULL,
		    NULL, atomic_load(&gw->backend_open[j]));
	add_service(s, &id, "backend_unanswered",
		    "backend_unanswered",
		    "connections the backend has not answered yet", true,
		    NULL, NULL, unanswered);
	add_service(s, &id, "overload", "overload",
		    "1 while the service is in the overload mode", true,
		    NULL, NULL, atomic_load(&gw->overload[j]));
	add_service(s, &id, "backend_profiled", "backend_profiled",
		    "1 once a probe of the backend has succeeded", true,
		    NULL, NULL, p.known);
	add_service(s, &id, "backend_up", "backend_up",
		    "1 while the last probe of the backend connected",
		    true, NULL, NULL,
		    gw->backend_state[j] == BACKEND_UP);
	add_service(s, &id, "draining", "draining",
		    "1 while the backend is drained (tcpctl drain)",
		    true, NULL, NULL, atomic_load(&gw->drain[j]));
	add_service(s, &id, "drained", "service_drained_total",
		    "new connections refused while draining", false,
		    NULL, NULL, ss.drained);
	for (d = 0; d < DIALECT_MAX; d++)
		add_service(s, &id, "synacks",
			    "service_synacks_total",
			    "SYN-ACKs sent, by the cookie they carry",
			    false, "dialect", dialect_names[d],
			    ss.synack[d]);
	for (d = 0; d < DIALECT_MAX; d++)
		add_service(s, &id, "verified",
			    "service_verified_total",
			    "handshakes verified, by dialect", false,
			    "dialect", dialect_names[d], ss.verified[d]);
	add_service(s, &id, "segments", "service_segments_total",
		    "segments spliced, by direction", false,
		    "direction", "to_backend", ss.c2b);
	add_service(s, &id, "segments", "service_segments_total",
		    "segments spliced, by direction", false,
		    "direction", "to_client", ss.b2c);
}

static void
take_queues(struct stats *s, const struct queue_stats *qs)
{
	add(s, "queue_rx_packets", "packets received from the queues", false,
	    qs->rx_packets);
	add(s, "queue_rx_batches", "receive calls that returned packets",
	    false, qs->rx_batches);
	add(s, "queue_rx_errors", "receive errors", false, qs->rx_errors);
	add(s, "queue_rx_enobufs", "receive buffer overruns", false,
	    qs->rx_enobufs);
	add(s, "queue_verdicts", "verdicts given", false, qs->verdicts);
	add(s, "queue_verdict_sends", "verdict batches sent", false,
	    qs->verdict_sends);
	add(s, "queue_verdict_errors", "verdict batches that failed", false,
	    qs->verdict_errors);
	add(s, "queue_nl_errors", "netlink errors in answer to verdicts",
	    false, qs->nl_errors);
}

void
stats_take(struct stats *s, const struct gateway *gw,
	   const struct worker *workers, unsigned n)
{
	const struct config *cfg = gw->cfg;
	struct worker_stats sum;
	struct flow_stats fs;
	struct queue_stats qs;
	struct inject_stats is;
	unsigned i, j;

	memset(&sum, 0, sizeof(sum));
	memset(&fs, 0, sizeof(fs));
	memset(&qs, 0, sizeof(qs));
	memset(&is, 0, sizeof(is));
	for (i = 0; i < n; i++) {
		const struct worker *w = &workers[i];

		if (!w->ready)
			continue;
		sum_words((uint64_t *)&sum, &w->st, sizeof(sum));
		sum_words((uint64_t *)&fs, &w->ft.st, sizeof(fs));
		for (j = 0; j < WORKER_QUEUES; j++)
			sum_words((uint64_t *)&qs, &w->q[j].st, sizeof(qs));
		sum_words((uint64_t *)&is, &w->ij.st, sizeof(is));
	}
	s->n = 0;
	s->left_out = 0;
	take_daemon(s, gw);
#define X(name, desc) add(s, #name, desc, false, sum.name);
	WORKER_COUNTERS(X)
#undef X
	for (j = 1; j < PKT_VERDICT_MAX; j++)
		add_labeled(s, "drop_", "", "parse_drops_total",
			    "packets dropped by the IP and TCP parser", false,
			    "reason", pkt_verdict_name(j), sum.parse[j]);
	for (j = 1; j < TCPOPT_VERDICT_MAX; j++)
		add_labeled(s, "drop_", "", "option_drops_total",
			    "packets dropped for their TCP options", false,
			    "reason", tcpopt_verdict_name(j), sum.tcpopt[j]);
	for (j = 0; j < COOKIE_RESULT_MAX; j++)
		add_labeled(s, "cookie_", "", "cookie_checks_total",
			    "classic cookies checked, by result", false,
			    "result", cookie_result_name(j), sum.cookie[j]);
	take_shield(s, gw);
	add(s, "flows_active", "spliced and binding connections", true,
	    fs.active);
	add(s, "flows_capacity", "flow table entries, all workers", true,
	    (uint64_t)cfg->flows * cfg->queues);
	add(s, "flows_carried", "connections the kernel carries now "
	    "(kernel-flows)", true, fs.carried);
	add(s, "flows_created", "flow entries made", false, fs.created);
	for (j = 0; j < FLOW_REASON_MAX; j++)
		add_labeled(s, "flows_released_", "", "flows_released",
			    "flow entries freed, by reason", false, "reason",
			    flow_reason_name(j), fs.released[j]);
	for (j = 0; j < cfg->nservices; j++)
		take_service(s, gw, workers, n, j);
	take_queues(s, &qs);
	take_kernel_queues(s, cfg);
	take_kernel_drops(s);
	add(s, "inject_sent", "packets tcpctd sent itself", false, is.sent);
	add(s, "inject_errors", "packets it could not send", false,
	    is.errors);
	add(s, "inject_flushes", "injection batches sent", false, is.flushes);
	s->n++;	/* its place kept by add() */
	s->row[s->n - 1] = (struct stat_row){
		.name = "rows_left_out", .family = "stats_rows_left_out",
		.help = "rows of these counters left out (none: a bug)",
		.service = -1, .gauge = true, .value = s->left_out,
	};
}

uint64_t
stats_get(const struct stats *s, const char *name)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->row[i].name, name))
			return s->row[i].value;
	return 0;
}

uint64_t
stats_service_get(const struct stats *s, unsigned i, const char *what)
{
	unsigned j;

	for (j = 0; j < s->n; j++)
		if (s->row[j].service == (int)i &&
		    !strcmp(s->row[j].what, what))
			return s->row[j].value;
	return 0;
}

void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A label value in the exposition format: \, " and newline escaped. */
static void
put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* Whether row i is the first of its family. */
static bool
first_of_family(const struct stats *s, unsigned i)
{
	unsigned j;

	for (j = 0; j < i; j++)
		if (!strcmp(s->row[j].family, s->row[i].family))
			return false;
	return true;
}

/* Prometheus: a family's samples together, after its HELP and TYPE (the
 * text rows go service by service); counters end in _total. */
static void
write_prometheus(const struct stats *s, FILE *f)
{
	unsigned i, j;

	for (i = 0; i < s->n; i++) {
		const struct stat_row *r = &s->row[i];
		const char *total = r->gauge || strstr(r->family, "_total")
					    ? "" : "_total";

		if (!first_of_family(s, i))
			continue;
		fprintf(f, "# HELP tcpctd_%s%s %s\n# TYPE tcpctd_%s%s %s\n",
			r->family, total, r->help, r->family, total,
			r->gauge ? "gauge" : "counter");
		for (j = i; j < s->n; j++) {
			const struct stat_row *q = &s->row[j];

			if (strcmp(q->family, r->family) != 0)
				continue;
			fprintf(f, "tcpctd_%s%s", q->family, total);
			if (q->label) {
				fprintf(f, "{%s=\"", q->label);
				put_label(f, q->lvalue);
				if (q->backend[0]) {
					fputs("\",backend=\"", f);
					put_label(f, q->backend);
				}
				if (q->label3) {
					fprintf(f, "\",%s=\"", q->label3);
					put_label(f, q->lvalue3);
				}
				fputs("\"}", f);
			}
			fprintf(f, " %" PRIu64 "\n", q->value);
		}
	}
}

/* One object: the daemon's rows by name, then "services", an object for
 * each backend with its service's rows by what they count. */
static void
write_json(const struct stats *s, FILE *f)
{
	const char *sep = "";
	unsigned i;
	int open = -1;

	fputc('{', f);
	for (i = 0; i < s->n; i++) {
		if (s->row[i].service >= 0)
			continue;
		fprintf(f, "%s\n  \"%s\": %" PRIu64, sep, s->row[i].name,
			s->row[i].value);
		sep = ",";
	}
	fprintf(f, "%s\n  \"services\": [", sep);
	/* A service's rows are together, in the order of its index. */
	for (i = 0; i < s->n; i++) {
		const struct stat_row *r = &s->row[i];

		if (r->service < 0)
			continue;
		if (r->service != open) {
			fprintf(f, "%s\n    {\"service\": ", open < 0 ? "" : "},");
			json_str(f, r->lvalue);
			fputs(", \"backend\": ", f);
			json_str(f, r->backend);
			open = r->service;
		}
		fprintf(f, ", \"%s\": %" PRIu64, r->what, r->value);
	}
	fprintf(f, "%s\n  ]\n}\n", open < 0 ? "" : "}");
}

void
stats_write(const struct stats *s, enum stats_format fmt, FILE *f)
{
	unsigned i;

	switch (fmt) {
	case STATS_TEXT:
		for (i = 0; i < s->n; i++)
			fprintf(f, "%-40s %12" PRIu64 "  %s\n", s->row[i].name,
				s->row[i].value, s->row[i].help);
		break;
	case STATS_JSON:
		write_json(s, f);
		break;
	case STATS_PROMETHEUS:
		write_prometheus(s, f);
		break;
	}
}
