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

#include "../gateway/carry.h"
#include "../gateway/probe.h"
#include "../gateway/shieldmap.h"
#include "../gateway/dispatch.h"
#include "../gateway/worker.h"
#include "../policy/config.h"
#include "../policy/keys.h"
#include "../policy/rules.h"
#include "control.h"
#include "daemon.h"
#include "log.h"
#include "options.h"
#include "probes.h"
#include "reload.h"
#include "status.h"
#include "reconfig.h"
#include "stats.h"


#define DRAIN_POLL_MS		100	/* a stop draining looks this often */



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
		status_backend_label(d, i, name, sizeof(name));
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
		status_notify(d, false);
}

/* One tcpctl request: a command and, for a script, "json"; flows is
 * answered once the workers have copied theirs, the others at once. */
static bool
control_request(const char *req, FILE *out, uint64_t now, uint64_t *ticket,
		void *arg)
{
	struct daemon *d = arg;
	char err[CONTROL_LINE_MAX + 64];
	struct control_req r;

	if (control_parse(req, &r, err, sizeof(err)) < 0) {
		fputs(err, out);
		return true;
	}
	if (r.cmd == CONTROL_FLOWS)
		return status_flows(d, out, r.json, now, ticket);
	stats_take(&d->st, &d->gw, d->workers, d->cfg->queues);
	switch (r.cmd) {
	case CONTROL_STATUS:
		status_write(d, out, r.json);
		break;
	case CONTROL_STATS:
		stats_write(&d->st, r.json ? STATS_JSON : STATS_TEXT, out);
		break;
	case CONTROL_METRICS:
		/* In JSON the same counters are stats'. */
		stats_write(&d->st, r.json ? STATS_JSON : STATS_PROMETHEUS, out);
		break;
	case CONTROL_BACKENDS:
		status_backends(d, out, r.json);
		if (r.json)
			fputc('\n', out);
		break;
	case CONTROL_RELOAD:
		daemon_reload(d, out);
		break;
	case CONTROL_KEYS_ROTATE:
		daemon_keys_rotate(d, out);
		break;
	case CONTROL_DRAIN:
	case CONTROL_ENABLE:
		set_drain(d, r.target, r.cmd == CONTROL_DRAIN, out);
		break;
	case CONTROL_FLOWS:	/* above */
		break;
	}
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
/* The per-client counts in the shield's pinned block, a predecessor's
 * when it left them: its connections still count. */
static int
pin_limits(struct daemon *d)
{
	uint32_t slots = d->cfg->limit_slots;
	uint64_t seed = d->gw.limits.seed;
	bool kept;
	void *b = shield_block(&d->shield, "limits", limits_bytes(slots),
			       &kept);

	if (!b)
		return -1;
	limits_free(&d->gw.limits);
	return limits_place(&d->gw.limits, slots, seed, b, kept);
}

static bool
shield_start(struct daemon *d, char *err, size_t errlen)
{
	char devs[200], note[256];

	/* As a worker's: the second, accepted secret's keys beside. */
	if (cookie_keys_init(&d->shield_keys, d->master,
			     d->cfg->key_lifetime) < 0 ||
	    cookie_keys_init(&d->shield_keys_alt, d->master,
			     d->cfg->key_lifetime) < 0) {
		snprintf(err, errlen, "SipHash from OpenSSL is not available");
		shield_keys_free(d);
		return false;
	}
	d->shield_keys.alt = &d->shield_keys_alt;
	d->shield_keys_alt.accepted = true;
	if (shieldmap_start(&d->shield, d->cfg, err, errlen, note,
			    sizeof(note)) < 0) {
		snprintf(d->shield_off, sizeof(d->shield_off), "%s", err);
		shield_keys_free(d);
		return false;
	}
	if (note[0])
		logx(LOG_NOTICE, "shield: the kernel's flows will not outlive "
		     "this daemon: %s", note);
	if (d->shield.pinned && pin_limits(d) < 0) {
		snprintf(err, errlen, "the limits' pinned block: %s",
			 strerror(errno));
		snprintf(d->shield_off, sizeof(d->shield_off), "%s", err);
		shield_close(&d->shield);
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
	d->gw.flow_watch = shieldmap_watch;
	shieldmap_devs(&d->shield, devs, sizeof(devs));
	logx(LOG_NOTICE, "shield on: %s", devs);
	return true;
}

/*
 * --rules remove takes tcpctd out of the packet path: the rules, and any
 * kernel shield of tcpctd's on the namespace's interfaces.  A daemon killed
 * before it could detach leaves one there (tc filters outlive their
 * loader); without the rules and a daemon behind it, it answers SYNs with
 * cookies that no one completes, and once its keys have expired it lets
 * the SYNs through and drops every client's ACK.  Says what it found on
 * out; returns how many would not go.
 */
static int
rules_remove_shield(const struct config *cfg, FILE *out)
{
	int left, removed = shield_remove_stale(&left), pins = 0;

	/* What a stop left for a successor goes with the filters. */
	if (cfg->pin_dir[0] && (pins = shield_unpin(cfg->pin_dir)) > 0)
		fprintf(out, "shield: %d pinned map%s removed from %s\n", pins,
			pins == 1 ? "" : "s", cfg->pin_dir);

	if (removed > 0)
		fprintf(out, "shield: tcpctd's tc filter removed from %d "
			"interface%s\n", removed, removed == 1 ? "" : "s");
	else if (!left)
		fprintf(out, "shield: no tc filter of tcpctd's to remove\n");
	if (left > 0)
		logx(LOG_ERR, "shield: tcpctd's tc filter would not go from %d "
		     "interface%s", left, left == 1 ? "" : "s");
	return left;
}

/* What the command line asks for before any start: RUN_DAEMON, or the
 * exit status of what it asked (help, the version, -t, --rules, errors). */
#define RUN_DAEMON	(-1)

static int
command(struct daemon *d, int argc, char **argv)
{
	struct options o;
	int errors;

	config_defaults(d->cfg);
	switch (options_parse(d->cfg, argc, argv, TCPCTD_CONFIG, &o, NULL)) {
	case OPTIONS_RUN:
		break;
	case OPTIONS_HELP:
		options_usage(stdout);
		return 0;
	case OPTIONS_VERSION:
		printf("tcpctd %s (commit %s)\n", TCPCTD_VERSION, TCPCTD_COMMIT);
		return 0;
	case OPTIONS_USAGE:
		options_usage(stderr);
		return 2;
	}
	errors = o.errors + config_check(d->cfg, options_config_error, NULL);
	if (errors && d->cfg->rules == RULES_REMOVE && !o.check_only) {
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
	if (o.check_only) {
		char err[256];

		/* What the start would find, as the user -t runs as (the
		 * unit's ExecStartPre= runs it as the daemon's). */
		if (keys_master_check(d->cfg->secret_file, err,
				      sizeof(err)) < 0) {
			fprintf(stderr, "secret: %s\n1 error\n", err);
			return 1;
		}
		printf("configuration OK\n");
		if (d->cfg->verbose)
			config_write_policies(d->cfg, stdout);
		return 0;
	}
	if (d->cfg->rules != RULES_NONE) {
		/* The shield first: until the rules go, what they queue is
		 * dropped (fail closed), not answered for no one. */
		int left = d->cfg->rules == RULES_REMOVE
				   ? rules_remove_shield(d->cfg, stdout) : 0;
		int failed = rules_apply(d->cfg, d->cfg->rules, stdout);

		if (failed)
			logx(LOG_ERR, "rules: %d command%s failed", failed,
			     failed == 1 ? "" : "s");
		return failed || left ? 1 : 0;
	}
	return RUN_DAEMON;
}

/* Everything but the workers: the secret, signals, the control socket,
 * the shared limits, the shield, the first probes.  0, or -1 (said). */
static int
setup(struct daemon *d)
{
	char err[256];
	sigset_t sigs;
	uint64_t seed;
	int ctlfd = -1;
	unsigned i;

	if (keys_master_load(d->master, d->cfg->secret_file, err,
			     sizeof(err)) < 0) {
		logx(LOG_ERR, "secret: %s", err);
		return -1;
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
	d->sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (d->sigfd < 0) {
		logx(LOG_ERR, "signalfd: %s", strerror(errno));
		return -1;
	}
	if (d->cfg->control_socket[0]) {
		ctlfd = control_open(d->cfg->control_socket, err, sizeof(err));
		if (ctlfd < 0) {
			logx(LOG_ERR, "control socket: %s", err);
			return -1;
		}
	}
	control_init(&d->ctl, ctlfd);
	d->gw.control = &d->ctl;
	d->started_at = time(NULL);
	d->gw.start_time = d->gw.reload_time = d->started_at;
	d->gw.reload_ok = true;

	d->gw.cfg = d->cfg;
	d->gw.master = d->master;
	if (RAND_bytes((uint8_t *)&seed, sizeof(seed)) != 1 ||
	    limits_init(&d->gw.limits, d->cfg->limit_slots, seed) < 0) {
		logx(LOG_ERR, "limit tables of %u slots: %s",
		     d->cfg->limit_slots, strerror(errno));
		return -1;
	}
	atomic_init(&d->gw.stop, false);
	if (d->cfg->shield != SHIELD_NO && !shield_start(d, err, sizeof(err))) {
		if (d->cfg->shield == SHIELD_YES) {
			logx(LOG_ERR, "shield: %s", err);
			return -1;
		}
		logx(LOG_NOTICE, "shield off: %s", err);
	}
	/* A killed predecessor's shield answers with keys this daemon may
	 * not hold, and sends ACKs to it marked as verified. */
	if (!d->gw.shield) {
		int left, stale = shield_remove_stale(&left);

		/* Its flows too: no one takes them over now. */
		if (d->cfg->pin_dir[0])
			(void)shield_unpin(d->cfg->pin_dir);
		if (stale > 0)
			logx(LOG_NOTICE, "shield: removed %d left by a daemon "
			     "before this one", stale);
		if (left > 0)
			logx(LOG_WARNING, "shield: %d left by a daemon before "
			     "this one would not go", left);
	}
	for (i = 0; i < POLICY_MAX_SERVICES; i++)
		d->probes[i].fd = -1;
	probes_round(d);
	return 0;
}

/* The workers, each on its queues and in its thread (d->started of them
 * running).  0, or -1 (said). */
static int
workers_start(struct daemon *d)
{
	char err[256], keys[384];
	unsigned i, adopted = 0;

	d->workers = calloc(d->cfg->queues, sizeof(*d->workers));
	if (!d->workers) {
		logx(LOG_ERR, "out of memory");
		return -1;
	}
	for (i = 0; i < d->cfg->queues; i++)
		if (worker_init(&d->workers[i], &d->gw, i, err,
				sizeof(err)) < 0 ||
		    carry_init(&d->workers[i], err, sizeof(err)) < 0) {
			logx(LOG_ERR, "worker %u: %s", i, err);
			return -1;
		}
	for (i = 0; i < d->cfg->queues; i++)
		adopted += carry_adopt(&d->workers[i]);
	if (d->gw.shield && d->gw.shield->kept)
		logx(LOG_NOTICE, "shield: taken over from the daemon before, "
		     "with %u flow%s", adopted, adopted == 1 ? "" : "s");
	for (i = 0; i < d->cfg->queues; i++) {
		if (pthread_create(&d->workers[i].thread, NULL, worker_run,
				   &d->workers[i]) != 0) {
			logx(LOG_ERR, "worker %u: cannot start its thread", i);
			return -1;
		}
		d->started++;
	}
	logx(LOG_NOTICE, "protecting %u service%s on queues %u..%u (flows) "
	     "and %u..%u (SYNs)", d->cfg->nservices,
	     d->cfg->nservices == 1 ? "" : "s", d->cfg->queue_base,
	     d->cfg->queue_base + d->cfg->queues - 1,
	     d->cfg->queue_base + d->cfg->queues,
	     d->cfg->queue_base + 2 * d->cfg->queues - 1);
	status_keys(d, keys, sizeof(keys));
	logx(LOG_NOTICE, "keys: %s", keys);
	return 0;
}

/* The main loop: signals, tcpctl's clients, the watchdog, probes, the
 * shield's maps and the metrics, until a stop (drained, when asked). */
static void
run(struct daemon *d)
{
	time_t next_metrics = 0;
	struct watchdog wd;
	uint64_t stop_at = 0;		/* worker_mono_ms(): a stop draining */

	watchdog_init(&wd);
	status_notify(d, true);
	for (;;) {
		struct pollfd pfd[1 + CONTROL_POLLFDS + POLICY_MAX_SERVICES] = {
			{ .fd = d->sigfd, .events = POLLIN },
		};
		struct signalfd_siginfo si;
		time_t now;
		uint64_t ms = worker_mono_ms();
		int wait = stop_at ? DRAIN_POLL_MS
			   : d->gw.shield ? SHIELDMAP_SYNC_MS : 1000;

		watchdog_wait(&wd, ms, &wait);
		control_pollfds(&d->ctl, &pfd[1], ms, &wait);
		nfds_t n = probes_pollfds(d, pfd, 1 + CONTROL_POLLFDS, &wait);

		/* A negative fd is skipped: without a control socket, a
		 * client's free slot. */
		if (poll(pfd, n, wait) < 0 && errno != EINTR) {
			logx(LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		if ((pfd[0].revents & POLLIN) &&
		    read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
			if ((si.ssi_signo == SIGTERM ||
			     si.ssi_signo == SIGINT) &&
			    (stop_at || !drain_for_stop(d, &stop_at)))
				break;
			if (si.ssi_signo == SIGUSR1)
				status_print(d, stderr);
			if (si.ssi_signo == SIGHUP)
				daemon_reload(d, NULL);
		}
		control_serve(&d->ctl, &pfd[1], worker_mono_ms(), control_request,
			      d);
		watchdog_kick(d, &wd);
		now = time(NULL);
		probes_tick(d);
		/* Keys, profiles and drains, as they are now. */
		if (d->gw.shield &&
		    shieldmap_sync(&d->shield, &d->gw, &d->shield_keys) < 0)
			logx(LOG_WARNING, "shield: a map refused an update");
		if (d->cfg->metrics_file[0] && now >= next_metrics) {
			status_metrics_file(d);
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
}

/* The workers stopped and everything setup made undone. */
static void
shutdown_daemon(struct daemon *d)
{
	unsigned i;

	sd_notify(0, "STOPPING=1");
	for (i = 0; i < POLICY_MAX_SERVICES; i++)
		probe_cancel(&d->probes[i]);
	atomic_store(&d->gw.stop, true);
	for (i = 0; i < d->started; i++)
		pthread_join(d->workers[i].thread, NULL);
	if (d->started)
		status_print(d, stderr);
	for (i = 0; d->workers && i < d->cfg->queues; i++) {
		carry_fini(&d->workers[i]);
		worker_fini(&d->workers[i]);
	}
	free(d->workers);
	if (d->gw.shield) {
		/* Its SYN-ACKs stop with the daemon that would take their
		 * ACKs; unless it carries flows for a successor, which takes
		 * it over (--rules remove takes it away on a last stop). */
		d->shield.leave = d->cfg->kernel_flows && d->shield.pinned;
		if (d->shield.leave)
			logx(LOG_NOTICE, "shield: left with its flows for the "
			     "next daemon (%s)", d->shield.pin_dir);
		shield_close(&d->shield);
		shield_keys_free(d);
		d->gw.shield = NULL;
		d->gw.flow_watch = NULL;
	}
	limits_free(&d->gw.limits);
	control_close(&d->ctl, d->cfg->control_socket);
	status_flows_free(d);
	close(d->sigfd);
	logx(LOG_NOTICE, "stopped");
}

int
main(int argc, char **argv)
{
	/* Everything the daemon holds, once: too large for the stack. */
	static struct daemon daemon;
	struct daemon *d = &daemon;
	int rc;

	d->cfg = &d->configs[0];
	d->master = &d->masters[0];
	snprintf(d->shield_off, sizeof(d->shield_off), "--shield no");
	d->argc = argc;
	d->argv = argv;
	log_setup();
	rc = command(d, argc, argv);
	if (rc != RUN_DAEMON)
		return rc;
	if (setup(d) < 0)
		return 1;
	rc = workers_start(d) < 0;
	if (!rc)
		run(d);
	shutdown_daemon(d);
	return rc;
}
