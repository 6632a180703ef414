/*
 * tcpct-connect: a TCP Cookie Transactions (RFC 6013) connection carrying
 * standard input to HOST:PORT and what comes back to standard output, like
 * a minimal netcat.
 *
 *   tcpct-connect [-4|-6] [+notcpct] [+wait-eof] [-t SECONDS] [-b ADDR]...
 *                 [-n COUNT] [-v] HOST PORT
 *
 * End of input sends our FIN, or with +wait-eof the server's FIN does (the
 * server closes first); the program ends when both sides have closed.  A
 * line on standard error says what happened.  -b binds to ADDR.
 *
 * -n COUNT makes COUNT short connections one after another, each sending
 * standard input (read once, up to 64 KiB) and reading the server's answer
 * to its end, and prints a line of totals: a load of short connections for
 * TIME-WAIT and rate measurements.  A connection is completed when the
 * whole answer came, up to the server's FIN, and both sides closed; any
 * other is failed, counted by its reason (failed_REASON on the line; with
 * -v each one on stderr too).  Each takes the next port of the
 * namespace's ip_local_port_range, then the next -b address (up to 8), so
 * no 4-tuple repeats until ports × addresses connections are made.
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
		   "[-t SECONDS] [-b ADDR]... [-n COUNT] [-v] HOST PORT\n");
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

/* Why a connection of -n failed. */
enum failure {
	COMPLETED = 0,
	FAIL_LOCAL,		/* no port or socket here */
	FAIL_UNANSWERED,	/* no SYN-ACK to our SYNs */
	FAIL_REFUSED,		/* a RST to our SYN */
	FAIL_RESET,		/* a RST before the server's FIN */
	FAIL_TIMEOUT,		/* the server went silent before the close */
	FAIL_INTERRUPTED,	/* SIGINT or SIGTERM */
	FAILURES
};

static const char *const failure_names[FAILURES] = {
	[COMPLETED] = "completed",
	[FAIL_LOCAL] = "local",
	[FAIL_UNANSWERED] = "unanswered",
	[FAIL_REFUSED] = "refused",
	[FAIL_RESET] = "reset",
	[FAIL_TIMEOUT] = "timeout",
	[FAIL_INTERRUPTED] = "interrupted",
};

/* Takes every byte that arrived; adds their count to *bytes. */
static void
drain_answer(unsigned long *bytes)
{
	static uint8_t buf[1 << 16];
	size_t n;

	while ((n = utcp_read(&conn, buf, sizeof(buf))) > 0)
		*bytes += n;
}

/*
 * One short connection of -n on conn, just opened: req out (our FIN at
 * once unless wait_eof), the answer in (its bytes added to *bytes) up to
 * the server's FIN, both sides closed.  Returns COMPLETED or why not.
 */
static enum failure
short_conn(const uint8_t *req, size_t reqlen, bool wait_eof,
	   unsigned long *bytes, unsigned long *retrans)
{
	enum failure why = COMPLETED;
	char err[256];

	utcp_write(&conn, req, reqlen);
	if (!wait_eof)
		utcp_shutdown(&conn);
	if (utcp_connect(&conn, err, sizeof(err)) < 0) {
		why = utcp_stop ? FAIL_INTERRUPTED
		      : conn.state == UTCP_RESET ? FAIL_REFUSED
		      : FAIL_UNANSWERED;
		*retrans += conn.st.retrans;
		return why;
	}
	/* Done only once the answer is read too (utcp_done). */
	for (;;) {
		drain_answer(bytes);
		if (utcp_done(&conn))
			break;
		if (utcp_eof(&conn) && !conn.fin_queued)
			utcp_shutdown(&conn);
		if (utcp_run(&conn, 50) < 0) {
			drain_answer(bytes);	/* what came before a RST */
			break;
		}
	}
	if (conn.state == UTCP_RESET)
		why = FAIL_RESET;
	else if (!utcp_done(&conn) || !utcp_eof(&conn))
		why = utcp_stop ? FAIL_INTERRUPTED : FAIL_TIMEOUT;
	*retrans += conn.st.retrans;
	return why;
}

static int
many(const char *host, const char *port, int family,
     const struct utcp_opts *o, const char *const *laddrs, unsigned naddrs,
     bool wait_eof, unsigned count)
{
	static struct utcp_batch batch;
	static uint8_t req[1 << 16];
	unsigned long done = 0, failed = 0, tcpct = 0, bytes = 0, retrans = 0;
	unsigned long why_count[FAILURES] = { 0 };
	size_t reqlen = 0;
	uint16_t lo, hi;
	char err[256];
	uint64_t t0;
	double secs;
	unsigned i, k;
	ssize_t r;

	while (reqlen < sizeof(req) &&
	       (r = read(0, req + reqlen, sizeof(req) - reqlen)) != 0) {
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0)
			reqlen += (size_t)r;
	}
	utcp_port_range(&lo, &hi);
	if (utcp_batch_begin(&batch, host, port, family, o, laddrs, naddrs, lo,
			     hi, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-connect: %s\n", err);
		return 1;
	}
	t0 = utcp_now_us();
	for (i = 0; i < count && !utcp_stop; i++) {
		unsigned long before = bytes;
		enum failure why = FAIL_LOCAL;

		if (utcp_batch_open(&batch, &conn, err, sizeof(err)) == 0) {
			why = short_conn(req, reqlen, wait_eof, &bytes,
					 &retrans);
			snprintf(err, sizeof(err), "state %s",
				 utcp_state_name(conn.state));
		}
		why_count[why]++;
		if (why == COMPLETED) {
			done++;
			tcpct += conn.tcpct;
		} else {
			failed++;
			if (o->verbose)
				fprintf(stderr, "tcpct-connect: connection %u "
					"(port %u): %s (%s, %lu bytes in)\n",
					i + 1, (unsigned)conn.lport,
					failure_names[why], err,
					bytes - before);
		}
		utcp_close(&conn);
	}
	t0 = utcp_now_us() - t0;
	utcp_batch_end(&batch);
	secs = (double)t0 / 1e6;
	printf("connections %u completed %lu failed %lu tcpct %lu seconds %.3f "
	       "per_s %.0f bytes_in %lu retransmitted %lu tuples_reused %s",
	       i, done, failed, tcpct, secs, secs > 0 ? (double)done / secs : 0.0,
	       bytes, retrans, batch.wrapped ? "yes" : "no");
	for (k = COMPLETED + 1; k < FAILURES; k++)
		printf(" failed_%s %lu", failure_names[k], why_count[k]);
	printf("\n");
	return failed ? 1 : 0;
}

/* Writes every byte that arrived to standard output; -1 when it cannot. */
static int
deliver(void)
{
	static uint8_t buf[1 << 16];
	size_t n;

	while ((n = utcp_read(&conn, buf, sizeof(buf))) > 0)
		if (write_all(1, buf, n) < 0)
			return -1;
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
	const char *host = NULL, *port = NULL, *laddrs[UTCP_BATCH_ADDRS];
	unsigned naddrs = 0, count = 0;
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
		else if (!strcmp(a, "-n") && i + 1 < argc)
			count = (unsigned)atoi(argv[++i]);
		else if (!strcmp(a, "-b") && i + 1 < argc &&
			 naddrs < UTCP_BATCH_ADDRS)
			laddrs[naddrs++] = argv[++i];
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
	utcp_catch_signals();
	if (count) {
		/* Short connections give up on a silent peer sooner. */
		o.timeout_ms = o.timeout_ms < 5000 ? o.timeout_ms : 5000;
		return many(host, port, family, &o, laddrs, naddrs, wait_eof,
			    count);
	}
	o.laddr = naddrs ? laddrs[0] : NULL;
	if (utcp_open(&conn, host, port, family, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-connect: %s\n", err);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (utcp_connect(&conn, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-connect: %s:%s: %s\n", host, port, err);
		utcp_close(&conn);
		return 1;
	}
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	/* Done only once the answer is written out too (utcp_done). */
	for (;;) {
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
		if (deliver() < 0) {
			rc = 1;
			goto out;
		}
		if (utcp_done(&conn))
			break;
		if (utcp_eof(&conn) && !conn.fin_queued) {
			/* They are done; so are we. */
			in_eof = true;
			utcp_shutdown(&conn);
		}
		if (utcp_run(&conn, in_eof ? 50 : 5) < 0) {
			if (deliver() < 0 || conn.state != UTCP_RESET)
				rc = 1;
			break;
		}
	}
	/* A RST before the server's FIN cut its answer short. */
	if (conn.state == UTCP_RESET && !utcp_eof(&conn))
		rc = 1;
out:
	fprintf(stderr, ";; TCPCT: %s; %lu segments out, %lu in, %lu "
		"retransmitted, %lu out of order, close %s\n",
		conn.tcpct ? "yes" : "no (plain TCP)", conn.st.segs_out,
		conn.st.segs_in, conn.st.retrans, conn.st.ooo,
		utcp_state_name(conn.state));
	utcp_close(&conn);
	return rc;
}
