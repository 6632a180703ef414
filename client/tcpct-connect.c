/*
 * tcpct-connect: a TCP Cookie Transactions (RFC 6013) connection carrying
 * standard input to HOST:PORT and what comes back to standard output, like
 * a minimal netcat.
 *
 *   tcpct-connect [-4|-6] [+notcpct] [+wait-eof] [-t SECONDS] [-v] HOST PORT
 *
 * End of input sends our FIN, or with +wait-eof the server's FIN does (the
 * server closes first); the program ends when both sides have closed.  A line on standard error says what happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utcp.h"

static struct utcp conn;

static void
usage(FILE *f)
{
	fprintf(f, "usage: tcpct-connect [-4|-6] [+notcpct] [+wait-eof] "
		   "[-t SECONDS] [-v] HOST PORT\n");
}

static int
write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct utcp_opts o = {
		.tcpct = true, .clen = TCPCT_COOKIE_MAX, .sack = true,
		.ts = true, .ws = true, .timeout_ms = 30000, .syn_tries = 4,
		.iptables = "iptables", .ip6tables = "ip6tables",
	};
	const char *host = NULL, *port = NULL;
	int family = AF_UNSPEC, i, rc = 0;
	bool in_eof = false, wait_eof = false;
	static uint8_t buf[1 << 16];
	char err[256];

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-4"))
			family = AF_INET;
		else if (!strcmp(a, "-6"))
			family = AF_INET6;
		else if (!strcmp(a, "+notcpct"))
			o.tcpct = false;
		else if (!strcmp(a, "+wait-eof"))
			wait_eof = true;
		else if (!strcmp(a, "-v"))
			o.verbose++;
		else if (!strcmp(a, "-t") && i + 1 < argc)
			o.timeout_ms = (unsigned)atoi(argv[++i]) * 1000;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] != '-' && a[0] != '+' && !host) {
			host = a;
		} else if (a[0] != '-' && a[0] != '+' && !port) {
			port = a;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!host || !port) {
		usage(stderr);
		return 2;
	}
	if (utcp_open(&conn, host, port, family, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-connect: %s\n", err);
		return 1;
	}
	utcp_catch_signals();
	signal(SIGPIPE, SIG_IGN);
	if (utcp_connect(&conn, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-connect: %s:%s: %s\n", host, port, err);
		utcp_close(&conn);
		return 1;
	}
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	while (!utcp_done(&conn)) {
		size_t n;

		/* Keep the send ring topped up from standard input. */
		while (!in_eof && conn.slen < UTCP_SBUF / 2) {
			ssize_t r = read(0, buf, sizeof(buf));

			if (r > 0) {
				utcp_write(&conn, buf, (size_t)r);
			} else if (r == 0) {
				in_eof = true;
				if (!wait_eof)
					utcp_shutdown(&conn);
			} else {
				break;
			}
		}
		while ((n = utcp_read(&conn, buf, sizeof(buf))) > 0)
			if (write_all(1, buf, n) < 0) {
				rc = 1;
				goto out;
			}
		if (utcp_eof(&conn) && !conn.fin_queued) {
			/* They are done; so are we. */
			in_eof = true;
			utcp_shutdown(&conn);
		}
		if (utcp_run(&conn, in_eof ? 50 : 5) < 0) {
			if (conn.state != UTCP_RESET || !utcp_eof(&conn))
				rc = 1;
			break;
		}
	}
out:
	fprintf(stderr, ";; TCPCT: %s; %lu segments out, %lu in, %lu "
		"retransmitted, %lu out of order, close %s\n",
		conn.tcpct ? "yes" : "no (plain TCP)", conn.st.segs_out,
		conn.st.segs_in, conn.st.retrans, conn.st.ooo,
		utcp_state_name(conn.state));
	utcp_close(&conn);
	return rc;
}
