/*
 * A reload and a key rotation: the configuration or the secret read again,
 * taken by the workers at their next turn, or refused with the reasons.
 */
#include "reload.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "probes.h"
#include "reconfig.h"
#include "status.h"

/* Waits until every worker has turned its loop twice: none holds a
 * pointer into the configuration it had before. */
static void
workers_quiesce(struct daemon *d)
{
	uint64_t seen[POLICY_MAX_QUEUES];
	unsigned i, tries;

	for (i = 0; i < d->cfg->queues; i++)
		seen[i] = __atomic_load_n(&d->workers[i].beat,
					  __ATOMIC_RELAXED);
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
	struct config *next = d->cfg == &d->configs[0] ? &d->configs[1]
						       : &d->configs[0];
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
	probes_round(d);	/* the new ones: one probe timeout at most */
	logx(LOG_NOTICE, "reloaded: %u service%s, %u new", d->cfg->nservices,
	     d->cfg->nservices == 1 ? "" : "s", added);
	fprintf(out, "reloaded: %u service%s, %u new\n", d->cfg->nservices,
		d->cfg->nservices == 1 ? "" : "s", added);
	return true;
}

/* A reload, and what the metrics say of it. */
bool
daemon_reload(struct daemon *d, FILE *out)
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
	status_notify(d, false);
	return taken;
}

/*
 * tcpctl keys rotate: the secret file read again.  Its first secret makes
 * cookies from now on; a second one verifies them too, so that a fleet
 * can change its secret one gateway at a time (keys.h).  Every worker
 * takes the new keys before its next batch.
 */
bool
daemon_keys_rotate(struct daemon *d, FILE *out)
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
	status_keys(d, keys, sizeof(keys));
	logx(LOG_NOTICE, "keys: read again: %s", keys);
	fprintf(out, "keys: %s read again: cookies made with its first "
		"secret%s\nkeys: %s\n", d->cfg->secret_file,
		d->master->has_accept ? ", verified with both" : "", keys);
	return true;
}
