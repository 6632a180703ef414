/*
 * tcpctd: stateless cookie handshakes in front of legacy TCP servers.
 *
 * Order of business (relayd's): options, configuration and its checks,
 * rules if asked, keys, backend probes, queues, then the loop that waits
 * for signals while the workers run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "../policy/config.h"
#include "../policy/keys.h"
#include "../policy/rules.h"
#include "probe.h"
#include "worker.h"

#ifndef TCPCTD_VERSION
#define TCPCTD_VERSION "0.1"
#endif

#define PROBE_TIMEOUT_MS	1000
#define PROBE_RETRY_S		5	/* while a backend has no profile */

static struct config cfg;
static struct keys_master master;
static struct gateway gw;
static struct worker *workers;

static void __attribute__((format(printf, 1, 2)))
logx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "tcpctd: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void
config_error(const char *where, const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "%s: error: %s\n", where, msg);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: tcpctd [-c FILE] [--protect ADDR:PORT]... [options]\n"
"  -c, --config FILE        read FILE, an INI file (tcpctd.conf(5))\n"
"  -t, --check              check the configuration and exit\n"
"  -v, --verbose            more messages\n"
"      --protect ADDR:PORT[,dns|,generic][,LIMIT=VALUE]...\n"
"                           protect a backend service ([ADDR6]:PORT for IPv6);\n"
"                           port 53 is DNS; LIMIT is one of the limits below\n"
"      --queues N           worker threads (1); each reads a flow queue\n"
"                           and a SYN queue: 2N queues from --queue-base\n"
"      --queue-base N       first queue number (0)\n"
"      --queue-maxlen N     kernel queue length (8192)\n"
"      --batch N            packets per receive (32)\n"
"      --fail-open          accept packets when the kernel queue is full\n"
"      --bypass             rules let traffic pass when no tcpctd runs\n"
"      --allow PREFIX       a source that bypasses tcpctd (repeatable)\n"
"      --deny PREFIX        a source the rules drop (repeatable)\n"
"      --mark N             mark of injected packets (0x7463)\n"
"      --synack-verdict     send SYN-ACKs as the SYN's mangled verdict\n"
"      --gso yes|no         take GSO packets unsegmented (yes)\n"
"      --tcpct yes|no       answer TCP Cookie Transactions, RFC 6013 (yes)\n"
"      --tcpct-timewait-rst yes|no\n"
"                           clear the backend's TIME-WAIT of TCPCT flows (yes)\n"
"      --tcpct-transactions yes|no\n"
"                           answer a DNS query in a TCPCT SYN in the SYN-ACK (yes)\n"
"      --tfo yes|no         TCP Fast Open, RFC 7413: cookies, data in SYNs (yes)\n"
"      --tfo-pending N      flows made at a SYN not yet acknowledged, per\n"
"                           service and worker (1024)\n"
"      --txn-pending N      transactions waiting for the backend, per worker (1024)\n"
"      --txn-timeout MS     time the backend has to answer one (500)\n"
"      --txn-rate BYTES     answer bytes/s per client /24 or /56 (65536)\n"
"      --flows N            flow table entries per worker (65536)\n"
"      --hold-slots N       early-data buffers per worker (16384)\n"
"  Limits, for every service unless its protect line says (DNS/generic):\n"
"      --idle-timeout S     without progress (10/7440)\n"
"      --msg-timeout MS     a DNS message must be complete within (2000)\n"
"      --max-queries N      DNS messages per connection (0: any)\n"
"      --max-lifetime S     connection lifetime (0: any)\n"
"      --max-per-addr N     connections per client address (25/0)\n"
"      --max-per-prefix N   connections per client prefix (256/0)\n"
"      --conn-rate N        new connections/s per client prefix (0: any)\n"
"      --delay-bind 0|1     no backend until a first whole message (1/0)\n"
"      --backend-max N      the backend's own connection limit: overload\n"
"                           from 4/5 of it to 1/2 (100/0: never)\n"
"      --overload-idle S    the idle timeout while overloaded (2/60)\n"
"      --release-always 0|1 release DNS backends once answered, always (0)\n"
"      --keep-client 0|1    keep the client after a release (1)\n"
"      --prefix4 N, --prefix6 N   a client prefix (24, 56)\n"
"      --limit-slots N      counters for the per-client limits (65536)\n"
"      --synack-rate N      SYN-ACKs/s towards one client prefix (10000; 0: any)\n"
"      --closing-timeout S  after the first FIN (120)\n"
"      --closed-linger S    after both FINs are acknowledged (10)\n"
"      --syn-retries N      backend SYN retransmissions (4)\n"
"      --secret-file FILE   master secret (random when not given)\n"
"      --key-lifetime S     seconds per key epoch (600)\n"
"      --probe-interval S   seconds between backend probes (60)\n"
"      --rules ACTION       install, remove or print the iptables rules, exit\n"
"      --iptables CMD, --ip6tables CMD   the commands to use\n"
"      --version            print the version and exit\n"
"Counters are printed on SIGUSR1 and at exit.\n");
}

/*
 * The kernel's side of each queue (/proc/net/netfilter/nfnetlink_queue):
 * packets waiting, dropped because the queue was full, and dropped because
 * our socket's buffer was.
 */
static void
print_kernel_queues(FILE *f)
{
	unsigned num, portid, waiting, mode, range, qdropped, udropped, seq;
	char line[256];
	FILE *in = fopen("/proc/net/netfilter/nfnetlink_queue", "re");

	if (!in)
		return;
	while (fgets(line, sizeof(line), in))
		if (sscanf(line, "%u %u %u %u %u %u %u %u", &num, &portid, &waiting,
			   &mode, &range, &qdropped, &udropped, &seq) == 8 &&
		    num >= cfg.queue_base &&
		    num < cfg.queue_base + WORKER_QUEUES * cfg.queues)
			fprintf(f, "kernel_queue%u_waiting %u\n"
				"kernel_queue%u_dropped_full %u\n"
				"kernel_queue%u_dropped_socket %u\n", num, waiting,
				num, qdropped, num, udropped);
	fclose(in);
}

static void
print_stats(FILE *f)
{
	struct worker_stats sum;
	struct flow_stats fs;
	struct queue_stats qs;
	struct inject_stats is;
	unsigned i, j;
	int k;

	memset(&sum, 0, sizeof(sum));
	memset(&fs, 0, sizeof(fs));
	memset(&qs, 0, sizeof(qs));
	memset(&is, 0, sizeof(is));
	for (i = 0; i < cfg.queues; i++) {
		const struct worker *w = &workers[i];
		const uint64_t *src = (const uint64_t *)&w->st;
		uint64_t *dst = (uint64_t *)&sum;
		if (!w->ready)
			continue;
		for (j = 0; j < sizeof(sum) / sizeof(uint64_t); j++)
			dst[j] += __atomic_load_n(&src[j], __ATOMIC_RELAXED);
		src = (const uint64_t *)&w->ft.st;
		dst = (uint64_t *)&fs;
		for (j = 0; j < sizeof(fs) / sizeof(uint64_t); j++)
			dst[j] += __atomic_load_n(&src[j], __ATOMIC_RELAXED);
		for (k = 0; k < WORKER_QUEUES; k++) {
			src = (const uint64_t *)&w->q[k].st;
			dst = (uint64_t *)&qs;
			for (j = 0; j < sizeof(qs) / sizeof(uint64_t); j++)
				dst[j] += __atomic_load_n(&src[j],
							  __ATOMIC_RELAXED);
		}
		src = (const uint64_t *)&w->ij.st;
		dst = (uint64_t *)&is;
		for (j = 0; j < sizeof(is) / sizeof(uint64_t); j++)
			dst[j] += __atomic_load_n(&src[j], __ATOMIC_RELAXED);
	}
#define X(name, desc) fprintf(f, "%-24s %12llu  %s\n", #name, \
			      (unsigned long long)sum.name, desc);
	WORKER_COUNTERS(X)
#undef X
	for (j = 1; j < PKT_VERDICT_MAX; j++)
		fprintf(f, "drop_%-19s %12llu\n", pkt_verdict_name(j),
			(unsigned long long)sum.parse[j]);
	for (j = 1; j < TCPOPT_VERDICT_MAX; j++)
		fprintf(f, "drop_%-19s %12llu\n", tcpopt_verdict_name(j),
			(unsigned long long)sum.tcpopt[j]);
	for (j = 0; j < COOKIE_RESULT_MAX; j++)
		fprintf(f, "cookie_%-17s %12llu\n", cookie_result_name(j),
			(unsigned long long)sum.cookie[j]);
	fprintf(f, "%-24s %12llu\n", "flows_active",
		(unsigned long long)fs.active);
	fprintf(f, "%-24s %12llu\n", "flows_created",
		(unsigned long long)fs.created);
	fprintf(f, "%-24s %12llu\n", "flows_table_full",
		(unsigned long long)fs.table_full);
	for (j = 0; j < FLOW_REASON_MAX; j++)
		fprintf(f, "flows_released_%-9s %12llu\n", flow_reason_name(j),
			(unsigned long long)fs.released[j]);
	for (j = 0; j < cfg.nservices; j++)
		fprintf(f, "service%u_backend_open %u\n"
			"service%u_overload %d\n", j,
			atomic_load(&gw.backend_open[j]), j,
			(int)atomic_load(&gw.overload[j]));
	fprintf(f, "%-24s %12llu\n", "queue_rx_packets",
		(unsigned long long)qs.rx_packets);
	fprintf(f, "%-24s %12llu\n", "queue_rx_batches",
		(unsigned long long)qs.rx_batches);
	fprintf(f, "%-24s %12llu\n", "queue_rx_errors",
		(unsigned long long)qs.rx_errors);
	fprintf(f, "%-24s %12llu\n", "queue_rx_enobufs",
		(unsigned long long)qs.rx_enobufs);
	fprintf(f, "%-24s %12llu\n", "queue_verdicts",
		(unsigned long long)qs.verdicts);
	fprintf(f, "%-24s %12llu\n", "queue_verdict_sends",
		(unsigned long long)qs.verdict_sends);
	fprintf(f, "%-24s %12llu\n", "queue_verdict_errors",
		(unsigned long long)qs.verdict_errors);
	fprintf(f, "%-24s %12llu\n", "queue_nl_errors",
		(unsigned long long)qs.nl_errors);
	print_kernel_queues(f);
	fprintf(f, "%-24s %12llu\n", "inject_sent",
		(unsigned long long)is.sent);
	fprintf(f, "%-24s %12llu\n", "inject_errors",
		(unsigned long long)is.errors);
	fprintf(f, "%-24s %12llu\n", "inject_flushes",
		(unsigned long long)is.flushes);
	fflush(f);
}

static void
probe_all(bool verbose, time_t now, time_t *next)
{
	unsigned i;

	for (i = 0; i < cfg.nservices; i++) {
		const struct service *s = &cfg.services[i];
		struct profile p, old;
		uint32_t packed, prev;

		if (next[i] > now)
			continue;
		prev = atomic_load(&gw.profile[i]);
		profile_unpack(prev, s->family, &old);
		if (probe_backend(s, PROBE_TIMEOUT_MS, &p) < 0) {
			if (verbose || !old.known)
				logx("probe %s: %s%s", s->name, strerror(errno),
				     old.known ? "; keeping its profile"
					       : "; assuming no options");
			next[i] = now + PROBE_RETRY_S;
			continue;
		}
		packed = profile_pack(&p);
		if (packed != prev)
			logx("backend %s: mss %u, wscale %s%u, sack %s, "
			     "timestamps %s, ecn %s", s->name, p.mss,
			     p.ws ? "" : "none/", p.wscale, p.sack ? "yes" : "no",
			     p.ts ? "yes" : "no", p.ecn ? "yes" : "no");
		atomic_store(&gw.profile[i], packed);
		next[i] = now + cfg.probe_interval;
	}
}

static int
parse_args(int argc, char **argv, bool *check_only)
{
	/* The daemon's own options, then every one of the configuration's
	 * (config_option), so that both spell each setting the same. */
	static const struct option own[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	struct option longopts[sizeof(own) / sizeof(own[0]) + 128];
	size_t nopt = 0, i;
	const char *name;
	bool flag;
	int ch, idx, errors = 0, n;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		longopts[nopt++] = own[i];
	for (i = 0; (name = config_option(i, &flag)) &&
		    nopt + 1 < sizeof(longopts) / sizeof(longopts[0]); i++)
		longopts[nopt++] = (struct option){
			name, flag ? no_argument : required_argument, NULL, 0,
		};
	longopts[nopt] = (struct option){ NULL, 0, NULL, 0 };
	while ((ch = getopt_long(argc, argv, "c:tvh", longopts, &idx)) != -1) {
		switch (ch) {
		case 0:
			errors += config_set(&cfg, longopts[idx].name, optarg,
					     "command line", config_error,
					     NULL) < 0;
			break;
		case 'c':
			n = config_load(&cfg, optarg, config_error, NULL);
			errors += n < 0 ? 1 : n;
			break;
		case 't':
			*check_only = true;
			break;
		case 'v':
			cfg.verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("tcpctd %s\n", TCPCTD_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "command line: error: unexpected '%s'\n",
			argv[optind]);
		errors++;
	}
	return errors;
}

int
main(int argc, char **argv)
{
	char err[256];
	bool check_only = false;
	time_t next_probe[POLICY_MAX_SERVICES] = { 0 };
	sigset_t sigs;
	unsigned i, started = 0;
	int errors, rc = 0;

	config_defaults(&cfg);
	errors = parse_args(argc, argv, &check_only);
	errors += config_check(&cfg, config_error, NULL);
	if (errors) {
		fprintf(stderr, "%d error%s\n", errors, errors == 1 ? "" : "s");
		return 1;
	}
	if (check_only) {
		printf("configuration OK\n");
		return 0;
	}
	if (cfg.rules != RULES_NONE) {
		int failed = rules_apply(&cfg, cfg.rules, stdout);
		if (failed)
			logx("rules: %d command%s failed", failed,
			     failed == 1 ? "" : "s");
		return failed ? 1 : 0;
	}
	if (keys_master_load(&master, cfg.secret_file, err, sizeof(err)) < 0) {
		logx("secret: %s", err);
		return 1;
	}

	/* Signals go to this thread only, through sigtimedwait(). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	gw.cfg = &cfg;
	gw.master = &master;
	{
		uint64_t seed;

		if (RAND_bytes((uint8_t *)&seed, sizeof(seed)) != 1 ||
		    limits_init(&gw.limits, cfg.limit_slots, seed) < 0) {
			logx("limit tables of %u slots: %s", cfg.limit_slots,
			     strerror(errno));
			return 1;
		}
	}
	atomic_init(&gw.stop, false);
	probe_all(cfg.verbose, time(NULL), next_probe);

	workers = calloc(cfg.queues, sizeof(*workers));
	if (!workers) {
		logx("out of memory");
		return 1;
	}
	for (i = 0; i < cfg.queues; i++)
		if (worker_init(&workers[i], &gw, i, err, sizeof(err)) < 0) {
			logx("worker %u: %s", i, err);
			rc = 1;
			goto out;
		}
	for (i = 0; i < cfg.queues; i++) {
		if (pthread_create(&workers[i].thread, NULL, worker_run,
				   &workers[i]) != 0) {
			logx("worker %u: cannot start its thread", i);
			rc = 1;
			goto out;
		}
		started++;
	}
	logx("protecting %u service%s on queues %u..%u (flows) and %u..%u "
	     "(SYNs)", cfg.nservices, cfg.nservices == 1 ? "" : "s",
	     cfg.queue_base, cfg.queue_base + cfg.queues - 1,
	     cfg.queue_base + cfg.queues, cfg.queue_base + 2 * cfg.queues - 1);

	for (;;) {
		struct timespec ts = { .tv_sec = 1 };
		int sig = sigtimedwait(&sigs, NULL, &ts);

		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGUSR1)
			print_stats(stderr);
		if (sig == SIGHUP)
			logx("reload is not supported yet; restart to apply "
			     "a new configuration");
		probe_all(cfg.verbose, time(NULL), next_probe);
	}
out:
	atomic_store(&gw.stop, true);
	for (i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);
	if (started)
		print_stats(stderr);
	for (i = 0; i < cfg.queues; i++)
		worker_fini(&workers[i]);
	free(workers);
	limits_free(&gw.limits);
	logx("stopped");
	return rc;
}
