/*
 * Everything the running daemon holds, in one place: its configuration
 * and the next one a reload reads, its secrets and the next ones, the
 * gateway its workers share, the backends' probes, the kernel shield,
 * tcpctl's clients, the command line a reload reads again.  One exists,
 * made by main and handed to what it calls.
 */
#ifndef DAEMON_DAEMON_H
#define DAEMON_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../gateway/probe.h"
#include "../gateway/worker.h"
#include "../policy/config.h"
#include "../policy/keys.h"
#include "../shield/shield.h"
#include "control.h"
#include "stats.h"

/*
 * tcpctl flows (status.c): the workers are asked in rounds, one at a time,
 * each raising every worker's dump.req; a request waits for the first
 * round asked after it came, and is answered from that round's answer in
 * its form (text, JSON), made once for all its requests.
 */
enum { FLOWS_TEXT, FLOWS_JSON, FLOWS_FORMS };

struct flows_round {
	uint64_t asked;		/* rounds asked of the workers */
	uint64_t told;		/* the round of answer[] (told == asked: none
				 * in flight) */
	uint64_t deadline_ms;	/* round asked's, while in flight */
	unsigned want[POLICY_MAX_QUEUES];	/* its dump.req, each worker's */
	bool forms[FLOWS_FORMS];	/* the answers it is to make */
	bool next[FLOWS_FORMS];		/* those of requests for asked + 1 */
	char *answer[FLOWS_FORMS];	/* round told's, or NULL */
	size_t len[FLOWS_FORMS];
};

struct daemon {
	/* The running configuration (one of configs) and a spare for the
	 * next reload. */
	struct config configs[2];
	struct config *cfg;
	/* The master secret(s) in use (one of masters), and a spare for
	 * the next rotation. */
	struct keys_master masters[2];
	struct keys_master *master;
	struct gateway gw;
	struct worker *workers;		/* cfg->queues of them */
	unsigned started;		/* workers whose threads run */
	int sigfd;			/* SIGTERM, SIGINT, SIGHUP, SIGUSR1 */
	bool stopping;			/* a stop drains (stop-grace) */
	time_t started_at;
	/* Each service's backend probe: in flight, or when the next is
	 * due (worker_mono_ms). */
	struct probe probes[POLICY_MAX_SERVICES];
	uint64_t next_probe[POLICY_MAX_SERVICES];
	int argc;			/* for a reload to read them again */
	char **argv;
	struct stats st;		/* the main thread's */
	/* The kernel shield, when on (gw.shield), with the main thread's
	 * keys for its map; shield_off says why it is not. */
	struct shield shield;
	struct cookie_keys shield_keys, shield_keys_alt;
	char shield_off[256];
	struct control ctl;		/* tcpctl's clients */
	struct flows_round flows;	/* tcpctl flows */
};

#endif
