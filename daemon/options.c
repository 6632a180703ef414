#include "options.h"

#include <getopt.h>
#include <string.h>
#include <unistd.h>

void
options_config_error(const char *where, const char *msg, void *arg)
{
	fprintf(arg ? (FILE *)arg : stderr, "%s: error: %s\n", where, msg);
}

void
options_usage(FILE *f)
{
	fprintf(f,
"usage: tcpctd [-c FILE] [--protect ADDR:PORT]... [options]\n"
"  -c, --config FILE        read FILE, an INI file (tcpctd.conf(5)); without\n"
"                           it or --protect, " TCPCTD_CONFIG "\n"
"  -t, --check              check the configuration and exit\n"
"  -v, --verbose            more messages\n"
"      --protect ADDR:PORT[,dns|,generic][,LIMIT=VALUE]...\n"
"                           protect a backend service ([ADDR6]:PORT for IPv6);\n"
"                           port 53 is DNS; LIMIT is one of the limits below\n"
"      --upstream PREFIX:PORT[,LIMIT=VALUE]...\n"
"                           far DNS servers a resolver behind tcpctd asks:\n"
"                           its queries go to them as TCPCT transactions\n"
"                           ([PREFIX6]:PORT for IPv6; needs --shield no)\n"
"      --upstream-cache N   far servers remembered (TCPCT or not) per\n"
"                           worker (4096)\n"
"      --queues N           worker threads (1); each reads a flow queue\n"
"                           and a SYN queue: 2N queues from --queue-base\n"
"      --queue-base N       first queue number (0)\n"
"      --queue-maxlen N     kernel queue length (8192)\n"
"      --batch N            packets per receive (32)\n"
"      --fail-open[=yes|no] accept packets when the kernel queue is full\n"
"      --bypass[=yes|no]    rules let traffic pass when no tcpctd runs\n"
"      --allow PREFIX       a source that bypasses tcpctd (repeatable)\n"
"      --deny PREFIX        a source the rules drop (repeatable)\n"
"      --mark N             mark of injected packets (0x7463)\n"
"      --synack-verdict[=yes|no]\n"
"                           send SYN-ACKs as the SYN's mangled verdict\n"
"      --gso yes|no         take GSO packets unsegmented (yes)\n"
"      --shield auto|yes|no the kernel shield: SYN-ACKs and forged-ACK drops\n"
"                           in a tc BPF program (auto: where it loads)\n"
"      --shield-dev IFACE   an interface for it (repeatable; all but lo)\n"
"      --kernel-flows yes|no\n"
"                           the shield carries established flows (yes)\n"
"      --pin-dir DIR        where they outlive a restart, on a bpf\n"
"                           filesystem (/sys/fs/bpf/tcpctd; none: '')\n"
"      --tcpct-timewait-rst yes|no\n"
"                           clear the backend's TIME-WAIT of TCPCT flows (yes)\n"
"      --tcpct-transactions yes|no\n"
"                           answer a DNS query in a TCPCT SYN in the SYN-ACK (yes)\n"
"      --tfo-pending N      flows made at a SYN not yet acknowledged, per\n"
"                           service and worker (1024)\n"
"      --txn-pending N      transactions waiting for the backend, per worker (1024)\n"
"      --txn-timeout MS     time the backend has to answer one (500)\n"
"      --txn-rate BYTES     answer bytes/s per client prefix, all workers (65536)\n"
"      --flows N            flow table entries per worker (65536)\n"
"      --hold-slots N       early-data buffers per worker (16384)\n"
"  Limits, for every service unless its protect line says (DNS/generic):\n"
"      --idle-timeout S     without progress (10/7440)\n"
"      --msg-timeout MS     a DNS message must be complete within (2000)\n"
"      --max-queries N      DNS messages per connection (0: any)\n"
"      --max-lifetime S     connection lifetime (0: any)\n"
"      --max-per-addr N     connections per client address, all (0: any)\n"
"      --max-per-prefix N   connections per client prefix, all (0: any)\n"
"      --max-pending-per-addr N\n"
"                           connections without a whole DNS message yet,\n"
"                           per client address; over it, a segment\n"
"                           without a whole query is dropped (25; DNS)\n"
"      --max-pending-per-prefix N\n"
"                           the same per client prefix (256; DNS)\n"
"      --conn-rate N        new connections/s per client prefix (0: any)\n"
"      --delay-bind yes|no  no backend until a first whole message (yes/no)\n"
"      --backend-max N      the backend's own connection limit: overload\n"
"                           from 4/5 of it to 1/2 (100/0: never)\n"
"      --backend-backlog N  connections the backend has not answered yet;\n"
"                           more first messages wait (128/0: no limit)\n"
"      --overload-idle S    the idle timeout while overloaded (2/60)\n"
"      --release-always yes|no  release DNS backends once answered (no)\n"
"      --keep-client yes|no keep the client after a release (yes)\n"
"      --tcpct yes|no       answer TCP Cookie Transactions, RFC 6013 (yes)\n"
"      --tfo yes|no         TCP Fast Open, RFC 7413: cookies, data in SYNs (yes)\n"
"      --prefix4 N, --prefix6 N   a client prefix (24, 56)\n"
"      --limit-slots N      counters for the per-client limits (65536)\n"
"      --synack-rate N      SYN-ACKs/s towards one client prefix (10000; 0: any)\n"
"      --closing-timeout S  after the first FIN (120)\n"
"      --closed-linger S    after both FINs are acknowledged (10)\n"
"      --syn-retries N      backend SYN retransmissions (4)\n"
"      --secret-file FILE   master secret (random when not given)\n"
"      --key-lifetime S     seconds per key epoch (600)\n"
"      --probe-interval S   seconds between backend probes (60)\n"
"      --stop-grace S       at a stop, drain for up to S seconds (0)\n"
"      --control-socket PATH  tcpctl's socket (none)\n"
"      --metrics-file PATH  write the metrics there for node_exporter (none)\n"
"      --metrics-interval S seconds between those writes (15)\n"
"      --rules ACTION       install, remove or print the iptables rules, exit\n"
"      --iptables CMD, --ip6tables CMD   the commands to use\n"
"  -V, --version            print the version and exit\n"
"  -h, --help               this text\n"
"A time S or MS may carry its own unit: 500ms, 90s, 2m, 1h, 1d.  A switch\n"
"is yes or no (true/false, on/off, 1/0).\n"
"Counters are printed on SIGUSR1 and at exit, and to tcpctl(8).\n");
}

/*
 * getopt_long takes any prefix of a long option, and glibc does not call
 * one ambiguous when its candidates look alike: --tcp would set
 * --tcpct-timewait-rst, --ma --mark.  A setting must be named whole: any
 * other word after "--" is refused as getopt refuses an unknown option.
 */
static bool
whole_names(int argc, char **argv, const struct option *longopts)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq;
		const struct option *o;
		size_t len;

		if (!strcmp(a, "--"))
			return true;
		if (strncmp(a, "--", 2) != 0)
			continue;
		eq = strchr(a, '=');
		len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		for (o = longopts; o->name; o++)
			if (strlen(o->name) == len && !strncmp(o->name, a + 2, len))
				break;
		if (!o->name) {
			fprintf(stderr, "%s: unrecognized option '%s' (options "
				"are spelled whole)\n", argv[0], a);
			return false;
		}
		if (o->has_arg == required_argument && !eq)
			i++;	/* its value, whatever it looks like */
	}
	return true;
}

/* Whether the command line gives a file (-c) or a service (--protect,
 * --upstream). */
static bool
names_config(int argc, char **argv, const struct option *longopts)
{
	int ch, idx, was = opterr;
	bool named = false;

	opterr = 0;	/* the real pass says what is wrong */
	optind = 0;
	while ((ch = getopt_long(argc, argv, "c:tvhV", longopts, &idx)) != -1)
		if (ch == 'c' ||
		    (ch == 0 && (!strcmp(longopts[idx].name, "protect") ||
				 !strcmp(longopts[idx].name, "upstream"))))
			named = true;
	opterr = was;
	return named;
}

enum options_result
options_parse(struct config *c, int argc, char **argv,
	      const char *default_file, struct options *o, FILE *errs)
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
	int ch, idx, n;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		longopts[nopt++] = own[i];
	for (i = 0; (name = config_option(i, &flag)) &&
		    nopt + 1 < sizeof(longopts) / sizeof(longopts[0]); i++)
		longopts[nopt++] = (struct option){
			name, flag ? optional_argument : required_argument,
			NULL, 0,
		};
	longopts[nopt] = (struct option){ NULL, 0, NULL, 0 };
	o->check_only = false;
	o->errors = 0;
	if (!whole_names(argc, argv, longopts))
		return OPTIONS_USAGE;
	/* Neither a file nor a service: the installed file, when there is
	 * one, as nsd and unbound read theirs; first, for the options to
	 * win over it as they win over a -c before them. */
	if (default_file && !names_config(argc, argv, longopts) &&
	    access(default_file, F_OK) == 0) {
		n = config_load(c, default_file, options_config_error, errs);
		o->errors += n < 0 ? 1 : n;
	}
	optind = 0;	/* a reload reads the same argv again */
	while ((ch = getopt_long(argc, argv, "c:tvhV", longopts, &idx)) != -1) {
		switch (ch) {
		case 0:
			o->errors += config_set(c, longopts[idx].name, optarg,
						"command line",
						options_config_error, errs) < 0;
			break;
		case 'c':
			n = config_load(c, optarg, options_config_error, errs);
			o->errors += n < 0 ? 1 : n;
			break;
		case 't':
			o->check_only = true;
			break;
		case 'v':
			c->verbose++;
			break;
		case 'h':
			return OPTIONS_HELP;
		case 'V':
			return OPTIONS_VERSION;
		default:
			return OPTIONS_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(errs ? errs : stderr,
			"command line: error: unexpected '%s'\n", argv[optind]);
		o->errors++;
	}
	return OPTIONS_RUN;
}
