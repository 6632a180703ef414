/*
 * Every counter and gauge of a running tcpctd, summed over its workers,
 * as one list of rows, and that list written for a person (name, value,
 * what it counts), for a script (one JSON object) or for Prometheus (the
 * text exposition format, families with HELP and TYPE, labels for reasons,
 * services and backends).  The daemon's SIGUSR1 dump, `tcpctl stats` and `tcpctl
 * metrics` are the same rows.
 */
#ifndef GATEWAY_STATS_H
#define GATEWAY_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../gateway/worker.h"

/* Every row there can be: each service's (stats_take), each kernel
 * queue's, and the daemon's own with room to grow; a row past them is
 * left out, and counted in the last one, rows_left_out. */
#define STATS_SERVICE_ROWS	(9 + 2 * DIALECT_MAX)
#define STATS_ROWS	(POLICY_MAX_SERVICES * STATS_SERVICE_ROWS +	\
			 4 * WORKER_QUEUES * POLICY_MAX_QUEUES + 256)

struct stat_row {
	char name[160];		/* the text and JSON name */
	int service;		/* its service's index, or -1 */
	char what[32];		/* a service's: its name within it */
	const char *family;	/* Prometheus: tcpctd_<family> */
	const char *help;
	const char *label;	/* its label's name, or NULL */
	char lvalue[64];
	char backend[56];	/* services: a second label, the backend */
	const char *label3;	/* and a third (dialect, direction), or NULL */
	const char *lvalue3;
	bool gauge;
	uint64_t value;
};

struct stats {
	struct stat_row row[STATS_ROWS];
	unsigned n;
	unsigned left_out;	/* rows past STATS_ROWS */
};

/* Reads every counter of gw and its n workers (those that are ready). */
void stats_take(struct stats *s, const struct gateway *gw,
		const struct worker *workers, unsigned n);

/* The value of the row named name; 0 when there is none. */
uint64_t stats_get(const struct stats *s, const char *name);
/* The value of service i's row what (backend_open); 0 when none. */
uint64_t stats_service_get(const struct stats *s, unsigned i,
			   const char *what);

/*
 * The rows as text (a row a line: name, value, what it counts; a
 * service's rows named SERVICE/BACKEND/WHAT, or BACKEND/WHAT when the
 * service is named after its backend), as JSON (one object; a service's
 * rows in "services", an object per backend) or for Prometheus.
 */
enum stats_format { STATS_TEXT, STATS_JSON, STATS_PROMETHEUS };
void stats_write(const struct stats *s, enum stats_format fmt, FILE *f);

/* A JSON string: quotes, backslashes and control characters escaped. */
void json_str(FILE *f, const char *s);

#endif
