/*
 * tcpctl: asks a running tcpctd over its control socket (tcpctl(8)).
 *
 *	tcpctl [-s SOCKET | -c FILE] [-j] status | stats | backends | flows |
 *		metrics | reload | keys rotate | drain TARGET | enable TARGET
 *
 * -c finds the socket where tcpctd's configuration says it is, as
 * nsd-control and unbound-control read their daemon's file.
 * The request is one line, the command and "json" for -j; the answer is
 * copied to standard output, and one that starts with "error: " to
 * standard error, with exit status 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../policy/config.h"

#define DEFAULT_SOCKET	"/run/tcpctd/tcpctd.sock"
#define ERROR_PREFIX	"error: "
#define ANSWER_MAX	(16u << 20)

static void
usage(FILE *f)
{
	fprintf(f,
"usage: tcpctl [-s SOCKET | -c FILE] [-j] COMMAND\n"
"       tcpctl -h | -V\n"
"  -s, --socket SOCKET  tcpctd's control socket (" DEFAULT_SOCKET ")\n"
"  -c, --config FILE    the socket tcpctd's configuration FILE names\n"
"  -j, --json  answer in JSON (status, stats, metrics, backends, flows)\n"
"  -h, --help  this text;  -V, --version  tcpctl's version\n"
"commands:\n"
"  status      version, uptime, queues, flows, services\n"
"  stats       every counter, with what it counts\n"
"  backends    each service's backend: what the probe learned, its load\n"
"  flows       each connection: its state, age and translation\n"
"  metrics     the counters in Prometheus's text format\n"
"  reload      read the configuration again; spliced connections stay\n"
"  keys rotate read the secret file again: its first secret makes cookies,\n"
"              a second one is accepted as well\n"
"  drain T     refuse new clients of T (a service, ADDR:PORT or all);\n"
"              its open connections stay\n"
"  enable T    take new clients of T again\n");
}

/* The file's errors are the daemon's to report, at a reload. */
static void
ignore(const char *where, const char *msg, void *arg)
{
	(void)where;
	(void)msg;
	(void)arg;
}

/* The control socket FILE names; exits 2 when it names none. */
static const char *
socket_of(const char *file)
{
	static struct config c;

	config_defaults(&c);
	if (config_load(&c, file, ignore, NULL) < 0) {
		fprintf(stderr, "tcpctl: %s: %s\n", file, strerror(errno));
		exit(2);
	}
	if (!c.control_socket[0]) {
		fprintf(stderr, "tcpctl: %s names no control-socket\n", file);
		exit(2);
	}
	return c.control_socket;
}

int
main(int argc, char **argv)
{
	const char *path = DEFAULT_SOCKET;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char req[256], *buf;
	size_t got = 0, cap = 65536;
	int ch, fd, json = 0, len, error;
	ssize_t n;

	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};

	while ((ch = getopt_long(argc, argv, "s:c:jhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			path = optarg;
			break;
		case 'c':
			path = socket_of(optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("tcpctl %s (commit %s)\n", TCPCTD_VERSION,
			       TCPCTD_COMMIT);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	/* The command's words (keys rotate), then json for -j. */
	for (len = 0; optind < argc && len >= 0 && (size_t)len < sizeof(req);
	     optind++)
		len += snprintf(req + len, sizeof(req) - (size_t)len, "%s%s",
				len ? " " : "", argv[optind]);
	if (len >= 0 && (size_t)len < sizeof(req))
		len += snprintf(req + len, sizeof(req) - (size_t)len, "%s\n",
				json ? " json" : "");
	if (len < 0 || (size_t)len >= sizeof(req) ||
	    strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "tcpctl: too long\n");
		return 2;
	}
	memcpy(sun.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		fprintf(stderr, "tcpctl: %s: %s (is tcpctd running, with "
			"control-socket set?)\n", path, strerror(errno));
		return 1;
	}
	if (write(fd, req, (size_t)len) != len) {
		fprintf(stderr, "tcpctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	shutdown(fd, SHUT_WR);
	buf = malloc(cap);
	if (!buf) {
		fprintf(stderr, "tcpctl: out of memory\n");
		return 1;
	}
	/* The whole answer first: its first bytes tell an error. */
	while ((n = read(fd, buf + got, cap - got)) > 0) {
		got += (size_t)n;
		if (got == cap) {
			char *more = cap < ANSWER_MAX ? realloc(buf, cap * 2)
						      : NULL;

			if (!more) {
				fprintf(stderr, "tcpctl: answer too long\n");
				return 1;
			}
			buf = more;
			cap *= 2;
		}
	}
	close(fd);
	if (n < 0 || !got) {
		fprintf(stderr, "tcpctl: %s: %s\n", path,
			n < 0 ? strerror(errno) : "no answer");
		return 1;
	}
	error = got >= strlen(ERROR_PREFIX) &&
		!memcmp(buf, ERROR_PREFIX, strlen(ERROR_PREFIX));
	fwrite(buf, 1, got, error ? stderr : stdout);
	free(buf);
	return error;
}
