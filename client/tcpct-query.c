/*
 * tcpct-query: one DNS query over TCP Cookie Transactions (RFC 6013), with
 * the answer printed the way kdig prints it.
 *
 *   tcpct-query [@SERVER] NAME [TYPE] [+transaction|+handshake] [+short]
 *               [+notcpct] [-p PORT] [-4|-6] [-t SECONDS] [-n COUNT] [-v]
 *
 * +handshake (the default) sends the query in the third packet; with
 * +transaction it goes in the SYN as well, so that a server that answers
 * in its SYN-ACK can, and one that does not gets it again in the third
 * packet.  A server that ignores the Cookie option gets plain TCP.  A line
 * on standard error says what happened (";; TCPCT: ...").  -n COUNT makes
 * COUNT queries in a row instead and prints their rate.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "../nfq/bytes.h"
#include "dns.h"
#include "utcp.h"

static struct utcp conn;

static void
usage(FILE *f)
{
	fprintf(f,
"usage: tcpct-query [@SERVER] NAME [TYPE] [+transaction|+handshake] [+short]\n"
"                   [+notcpct] [-p PORT] [-4|-6] [-t SECONDS] [-n COUNT]\n"
"                   [-v]\n");
}

static char *
default_server(void)
{
	static char line[256];
	char *ret = NULL;
	FILE *f = fopen("/etc/resolv.conf", "r");

	if (!f)
		return "127.0.0.1";
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		if (strncmp(p, "nameserver", 10) != 0 ||
		    !isspace((unsigned char)p[10]))
			continue;
		p += 10;
		while (isspace((unsigned char)*p))
			p++;
		p[strcspn(p, " \t\r\n")] = '\0';
		ret = p;
		break;
	}
	fclose(f);
	return ret ? ret : "127.0.0.1";
}

/* What one query did, for the report line and -n. */
struct outcome {
	bool tcpct, syn_data_acked, synack_fin;
	unsigned long synack_data, segs_out, segs_in, retrans;
	enum utcp_state end;
};

/*
 * Sends query q (qlen bytes, length prefix included) on conn, just opened,
 * and reads the answer into ans (*anslen: its bytes, prefix excluded);
 * closes conn.  Returns 0 or -1 (after a message unless quiet).
 */
static int
one_query(const char *server, const uint8_t *q, size_t qlen, uint8_t *ans,
	  size_t *anslen, struct outcome *out, bool quiet)
{
	size_t got = 0, need = 2;
	char err[256];
	int i;

	utcp_write(&conn, q, qlen);
	if (utcp_connect(&conn, err, sizeof(err)) < 0) {
		if (!quiet)
			fprintf(stderr, "tcpct-query: %s: %s\n", server, err);
		utcp_close(&conn);
		return -1;
	}
	/* RFC 7766 §8: a 2-byte length, then the message. */
	while (got < need) {
		size_t n = utcp_read(&conn, ans + got, need - got);

		got += n;
		if (got == 2 && need == 2)
			need = 2 + get16(ans);
		if (got >= need)
			break;
		if (n)
			continue;
		if (utcp_eof(&conn) || utcp_run(&conn, 100) < 0) {
			if (!quiet)
				fprintf(stderr, "tcpct-query: %s: no complete "
					"answer (state %s)\n", server,
					utcp_state_name(conn.state));
			utcp_close(&conn);
			return -1;
		}
	}
	/* Close our half; wait for theirs and give the last ACK.  Bytes
	 * past the answer are dropped, or the connection is never done. */
	utcp_shutdown(&conn);
	for (i = 0; i < 50 && !utcp_done(&conn); i++) {
		uint8_t rest[512];

		while (utcp_read(&conn, rest, sizeof(rest)) > 0)
			;
		if (utcp_done(&conn) || utcp_run(&conn, 20) < 0)
			break;
	}
	out->tcpct = conn.tcpct;
	out->syn_data_acked = conn.st.syn_data_acked;
	out->synack_fin = conn.st.synack_fin;
	out->synack_data = conn.st.synack_data;
	out->segs_out = conn.st.segs_out;
	out->segs_in = conn.st.segs_in;
	out->retrans = conn.st.retrans;
	out->end = conn.state;
	*anslen = need - 2;
	memmove(ans, ans + 2, *anslen);
	utcp_close(&conn);
	return 0;
}

/*
 * -n COUNT: COUNT queries one after another, each on its own connection
 * (a tuple of its own while the port range lasts); prints the rate and
 * packets per answer.
 */
static int
many(const char *server, const char *port, int family,
     const struct utcp_opts *o, const uint8_t *q, size_t qlen,
     unsigned count)
{
	unsigned long answered = 0, failed = 0, segs = 0, tcpct = 0;
	static struct utcp_batch batch;
	static uint8_t ans[65536 + 2];
	struct outcome out;
	uint16_t lo, hi;
	uint64_t t0;
	double secs;
	size_t anslen;
	char err[256];
	unsigned i;

	utcp_port_range(&lo, &hi);
	if (utcp_batch_begin(&batch, server, port, family, o, NULL, 0, lo, hi,
			     err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-query: %s\n", err);
		return 1;
	}
	t0 = utcp_now_us();
	for (i = 0; i < count && !utcp_stop; i++) {
		if (utcp_batch_open(&batch, &conn, err, sizeof(err)) == 0 &&
		    one_query(server, q, qlen, ans, &anslen, &out, true) == 0) {
			answered++;
			segs += out.segs_out + out.segs_in;
			tcpct += out.tcpct;
		} else {
			failed++;
		}
	}
	t0 = utcp_now_us() - t0;
	utcp_batch_end(&batch);
	secs = (double)t0 / 1e6;
	printf("queries %u answered %lu failed %lu tcpct %lu seconds %.3f "
	       "answers_per_s %.0f packets_per_answer %.2f\n", i, answered,
	       failed, tcpct, secs, secs > 0 ? (double)answered / secs : 0.0,
	       answered ? (double)segs / (double)answered : 0.0);
	return failed ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct utcp_opts o = {
		.tcpct = true, .clen = TCPCT_COOKIE_MAX, .sack = true,
		.ts = true, .ws = true, .timeout_ms = 5000, .syn_tries = 4,
		.iptables = "iptables", .ip6tables = "ip6tables",
	};
	const char *server = NULL, *name = NULL, *port = "53";
	int family = AF_UNSPEC, i, qtype = -1;
	bool shortout = false;
	static uint8_t q[DNS_QUERY_MAX + 2], ans[65536 + 2];
	size_t qlen, anslen = 0;
	struct outcome out;
	char err[256];
	unsigned count = 0;
	uint16_t id;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] == '@')
			server = a + 1;
		else if (!strcmp(a, "+transaction"))
			o.syn_data = true;
		else if (!strcmp(a, "+handshake"))
			o.syn_data = false;
		else if (!strcmp(a, "+short"))
			shortout = true;
		else if (!strcmp(a, "+notcpct"))
			o.tcpct = false;
		else if (!strcmp(a, "-4"))
			family = AF_INET;
		else if (!strcmp(a, "-6"))
			family = AF_INET6;
		else if (!strcmp(a, "-v"))
			o.verbose++;
		else if (!strcmp(a, "-p") && i + 1 < argc)
			port = argv[++i];
		else if (!strcmp(a, "-n") && i + 1 < argc)
			count = (unsigned)atoi(argv[++i]);
		else if (!strcmp(a, "-t") && i + 1 < argc)
			o.timeout_ms = (unsigned)atoi(argv[++i]) * 1000;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-' || a[0] == '+') {
			usage(stderr);
			return 2;
		} else if (!name)
			name = a;
		else if (qtype < 0 && (qtype = dns_type_code(a)) >= 0)
			;
		else {
			fprintf(stderr, "tcpct-query: unknown type '%s'\n", a);
			return 2;
		}
	}
	if (!name) {
		usage(stderr);
		return 2;
	}
	if (qtype < 0)
		qtype = DNS_TYPE_A;
	if (!server)
		server = default_server();
	if (RAND_bytes((uint8_t *)&id, sizeof(id)) != 1)
		return 1;
	qlen = dns_build_query(q + 2, sizeof(q) - 2, name, (uint16_t)qtype, id);
	if (!qlen) {
		fprintf(stderr, "tcpct-query: bad name '%s'\n", name);
		return 2;
	}
	put16(q, (uint16_t)qlen);

	utcp_catch_signals();
	if (count)
		return many(server, port, family, &o, q, qlen + 2, count);
	if (utcp_open(&conn, server, port, family, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-query: %s\n", err);
		return 1;
	}
	if (one_query(server, q, qlen + 2, ans, &anslen, &out, false) < 0)
		return 1;
	fprintf(stderr, ";; TCPCT: %s, query %s, answer %lu bytes in the "
		"SYN-ACK%s; %lu segments out, %lu in, %lu retransmitted, "
		"close %s\n",
		out.tcpct ? "yes" : "no (plain TCP)",
		out.syn_data_acked ? "taken in the SYN" :
		o.syn_data ? "sent in the SYN and again in the third packet" :
			     "in the third packet",
		out.synack_data, out.synack_fin ? " with FIN" : "",
		out.segs_out, out.segs_in, out.retrans,
		utcp_state_name(out.end));
	if (dns_print(stdout, ans, anslen, id, shortout) < 0) {
		fprintf(stderr, "tcpct-query: malformed answer\n");
		return 1;
	}
	return 0;
}
