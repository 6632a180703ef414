/*
 * tcpct-query: one DNS query over TCP Cookie Transactions (RFC 6013), with
 * the answer printed the way kdig prints it.
 *
 *   tcpct-query [@SERVER] NAME [TYPE] [+transaction|+handshake] [+short]
 *               [+notcpct] [-p PORT] [-4|-6] [-t SECONDS] [-v]
 *
 * +handshake (the default) sends the query in the third packet; with
 * +transaction it goes in the SYN as well, so that a server that answers
 * in its SYN-ACK can, and one that does not gets it again in the third
 * packet.  A server that ignores the Cookie option gets plain TCP.  A line
 * on standard error says what happened (";; TCPCT: ...").
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
static volatile sig_atomic_t stop;

/* The connection ends in the main loop, which removes our rule. */
static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: tcpct-query [@SERVER] NAME [TYPE] [+transaction|+handshake] [+short]\n"
"                   [+notcpct] [-p PORT] [-4|-6] [-t SECONDS] [-v]\n");
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
	uint8_t q[DNS_QUERY_MAX + 2], ans[65536 + 2];
	size_t qlen, got = 0, need = 2;
	char err[256];
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

	if (utcp_open(&conn, server, port, family, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-query: %s\n", err);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	conn.o.stop = &stop;
	utcp_write(&conn, q, qlen + 2);
	if (utcp_connect(&conn, err, sizeof(err)) < 0) {
		fprintf(stderr, "tcpct-query: %s: %s\n", server, err);
		utcp_close(&conn);
		return 1;
	}
	/* RFC 7766 §8: a 2-byte length, then the message. */
	while (got < need) {
		got += utcp_read(&conn, ans + got, need - got);
		if (got == 2 && need == 2)
			need = 2 + get16(ans);
		if (got >= need)
			break;
		if (utcp_eof(&conn) || utcp_run(&conn, 100) < 0) {
			fprintf(stderr, "tcpct-query: %s: no complete answer "
				"(state %s)\n", server,
				utcp_state_name(conn.state));
			utcp_close(&conn);
			return 1;
		}
	}
	/* Close our half; wait for theirs and give the last ACK. */
	utcp_shutdown(&conn);
	for (i = 0; i < 50 && !utcp_done(&conn); i++)
		if (utcp_run(&conn, 20) < 0)
			break;
	fprintf(stderr, ";; TCPCT: %s, query %s, answer %lu bytes in the "
		"SYN-ACK%s; %lu segments out, %lu in, %lu retransmitted, "
		"close %s\n",
		conn.tcpct ? "yes" : "no (plain TCP)",
		conn.st.syn_data_acked ? "taken in the SYN" :
		o.syn_data ? "sent in the SYN and again in the third packet" :
			     "in the third packet",
		conn.st.synack_data, conn.st.synack_fin ? " with FIN" : "",
		conn.st.segs_out, conn.st.segs_in, conn.st.retrans,
		utcp_state_name(conn.state));
	utcp_close(&conn);
	if (dns_print(stdout, ans + 2, need - 2, id, shortout) < 0) {
		fprintf(stderr, "tcpct-query: malformed answer\n");
		return 1;
	}
	return 0;
}
