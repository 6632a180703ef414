/*
 * What the daemon tells: tcpctl's status, backends and flows (text or
 * JSON), the metrics file for node_exporter, systemctl status's line, and
 * the counters, each from the daemon's own state (daemon.h).
 */
#ifndef DAEMON_STATUS_H
#define DAEMON_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon.h"

/* The counters, for a person (SIGUSR1, the exit). */
void status_print(struct daemon *d, FILE *f);
/* tcpctl status, and the backends alone. */
void status_write(struct daemon *d, FILE *f, bool json);
void status_backends(struct daemon *d, FILE *f, bool json);
/* The secret in use by its id; the shield, "on: IFACE ..." or "off: why". */
void status_keys(struct daemon *d, char *buf, size_t len);
void status_shield(struct daemon *d, char *buf, size_t len);
/*
 * tcpctl flows at now (mono ms), a control_handler's answer: each
 * connection, asked of every worker, which copies its flows between two of
 * its batches.  False while they have not (the round asked for *ticket, 0
 * the first time, still in flight); never waits for them.  A round they do
 * not all answer within STATUS_FLOWS_WAIT_MS is answered with an error.
 */
#define STATUS_FLOWS_WAIT_MS	400

bool status_flows(struct daemon *d, FILE *f, bool json, uint64_t now,
		  uint64_t *ticket);
/* The last round's answers, freed. */
void status_flows_free(struct daemon *d);
/* Service i's backend for a message: its address, and the service's name
 * when it has one of its own; buf. */
const char *status_backend_label(struct daemon *d, unsigned i, char *buf,
				 size_t len);
/* systemctl status's line (with READY=1 when ready). */
void status_notify(struct daemon *d, bool ready);
/* The metrics file, written aside and renamed over the old one. */
void status_metrics_file(struct daemon *d);

#endif
