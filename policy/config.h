/*
 * The operator's intent: which services are protected and with which limits.
 *
 * For now the configuration file holds the long command-line options, one
 * per line without the dashes ("protect 192.0.2.2:53"), so that every
 * setting has one spelling in both places.
 */
#ifndef POLICY_CONFIG_H
#define POLICY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nfq/pkt.h"

#define POLICY_MAX_SERVICES	64

struct service {
	uint8_t family;
	struct inaddr addr;
	uint16_t port;
	char name[64];		/* as the operator wrote it */
};

enum rules_action { RULES_NONE, RULES_INSTALL, RULES_REMOVE, RULES_PRINT };

struct config {
	struct service services[POLICY_MAX_SERVICES];
	unsigned nservices;

	unsigned queues;		/* worker threads; each reads a flow
					 * queue (queue_base + i) and a SYN
					 * queue (queue_base + queues + i) */
	unsigned queue_base;
	unsigned queue_maxlen;
	unsigned batch;
	bool fail_open;			/* accept when the kernel queue is full */
	bool gso;			/* GSO packets come up unsegmented */
	bool bypass;			/* rules: accept when no daemon listens */
	unsigned mark;			/* on injected packets */
	bool synack_verdict;		/* SYN-ACK replaces the SYN in its
					 * verdict instead of a raw send */
	bool tcpct;			/* answer RFC 6013 cookie SYNs */
	bool tcpct_timewait_rst;	/* clear the backend's TIME-WAIT of
					 * a TCPCT flow with a RST */
	bool tcpct_txn;			/* answer DNS queries in SYN-ACKs */
	bool tfo;			/* issue RFC 7413 Fast Open cookies */
	unsigned tfo_pending;		/* flows made at a SYN, per service
					 * and worker */
	unsigned txn_pending;		/* transactions waiting, per worker */
	unsigned txn_timeout;		/* ms the backend has to answer */
	unsigned txn_rate;		/* answer bytes/s per client prefix */

	unsigned flows;			/* flow table size per worker */
	unsigned hold_slots;		/* early-data buffers per worker */
	unsigned idle_timeout;		/* s, established flows */
	unsigned closing_timeout;	/* s, after the first FIN */
	unsigned closed_linger;		/* s, after both FINs are acked */
	unsigned syn_retries;		/* backend SYN retransmissions */

	char secret_file[256];		/* master secret; random when empty */
	unsigned key_lifetime;		/* s per key epoch */
	unsigned probe_interval;	/* s between backend probes */

	enum rules_action rules;
	char iptables[64], ip6tables[64];

	int verbose;
};

/* Fills c with the defaults. */
void config_defaults(struct config *c);

/*
 * Error callback: where is a file name and line ("tcpctd.conf:3") or
 * "command line"; msg is one sentence without a newline.
 */
typedef void (*config_err_cb)(const char *where, const char *msg, void *arg);

/*
 * Applies one option by its long name with its argument (NULL for flags).
 * Returns 0, or -1 after calling err once with what is wrong.
 */
int config_set(struct config *c, const char *name, const char *value,
	       const char *where, config_err_cb err, void *arg);

/*
 * Reads path, one option per line; '#' starts a comment.  Every bad line is
 * reported; returns the number of errors (0 on success, -1 if the file
 * cannot be read, after reporting it).
 */
int config_load(struct config *c, const char *path, config_err_cb err,
		void *arg);

/* Semantic checks after everything is read.  Returns the number of errors. */
int config_check(const struct config *c, config_err_cb err, void *arg);

/*
 * Parses "ADDR:PORT" or "[ADDR6]:PORT" into s.  Returns 0 or -1.
 */
int service_parse(struct service *s, const char *text);

/* The service whose address and port are addr:port, or NULL. */
const struct service *config_find_service(const struct config *c,
					  uint8_t family,
					  const struct inaddr *addr,
					  uint16_t port);

#endif
