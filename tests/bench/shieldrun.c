/*
 * shieldrun: the kernel shield's own time per packet, through
 * BPF_PROG_TEST_RUN (the kernel's count of the program's run time, without
 * the skb's making): classic SYNs answered (IPv4 with timestamps, window
 * scale and SACK, as Linux sends them), forged ACKs dropped, cookie ACKs
 * passed.  Each packet runs once (the program rewrites a SYN into its
 * SYN-ACK), n of each, on distinct ports.
 *
 *	shieldrun [n]		needs CAP_BPF and CAP_PERFMON (root)
 *
 * Prints a line per kind: "syn 100000 runs: median 412 ns, mean 450 ns";
 * the median, since a shared machine's stalls land in the mean.  A
 * benchmark, not a test (tests/unit/test_shield.c checks what the program
 * sends).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <linux/pkt_cls.h>

#include "../../gateway/shieldmap.h"
#include "../ethframe.h"

#define FRAME_MAX	256
#define LIFETIME	600
#define MARK		1

static const struct inaddr client = { .b = { 198, 51, 100, 2 } };
static const struct inaddr server = { .b = { 192, 0, 2, 2 } };

/* A client's segment to server:53 in an Ethernet frame; its length. */
static size_t
frame(uint8_t *b, uint16_t cport, uint32_t seq, uint32_t ack, uint8_t flags,
      uint32_t tsecr)
{
	struct tcpopt_spec os = {
		.mss = flags & TCP_SYN ? 1460 : 0, .sack_perm = flags & TCP_SYN,
		.ts = true, .tsval = 4242, .tsecr = tsecr,
		.wscale = flags & TCP_SYN, .wscale_shift = 7,
	};
	struct pkt_tcp_spec ps = {
		.family = AF_INET, .src = &client, .dst = &server,
		.sport = cport, .dport = 53, .seq = seq, .ack = ack,
		.flags = flags, .win = 64240,
	};

	return eth_frame_tcp(b, FRAME_MAX, &ps, &os);
}

/* The program's run time for one frame, in ns; out gets the frame as it
 * left. */
static uint32_t
run(int prog, const uint8_t *in, size_t len, uint8_t *out, int *verdict)
{
	struct __sk_buff ctx = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = in,
		    .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = FRAME_MAX, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(prog, &t) < 0) {
		perror("shieldrun: BPF_PROG_TEST_RUN");
		exit(1);
	}
	*verdict = (int)t.retval;
	return t.duration;
}

static int
by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* n of each kind through prog, their times into each; 0, or -1 when the
 * program did not answer as it must. */
static int
measure(int prog, unsigned n, uint32_t *each[3])
{
	unsigned i;

	for (i = 0; i < n; i++) {
		uint8_t in[FRAME_MAX], out[FRAME_MAX];
		uint16_t port = (uint16_t)(1024 + i % 60000);
		uint32_t cisn = 0x1000u * i + 7, isn, tsval;
		int v;
		size_t len = frame(in, port, cisn, 0, TCP_SYN, 0);

		each[0][i] = run(prog, in, len, out, &v);
		if (v != TC_ACT_REDIRECT) {
			fprintf(stderr, "shieldrun: a SYN not answered (%d)\n",
				v);
			return -1;
		}
		isn = get32(out + ETH_LEN + 20 + 4);
		tsval = get32(out + ETH_LEN + 20 + TCP_HDR_LEN + 8);
		len = frame(in, port, cisn + 1, isn ^ 0x5a5a5a5a, TCP_ACK,
			    tsval);
		each[1][i] = run(prog, in, len, out, &v);
		len = frame(in, port, cisn + 1, isn + 1, TCP_ACK, tsval);
		each[2][i] = run(prog, in, len, out, &v);
		if (v != TC_ACT_OK) {
			fprintf(stderr, "shieldrun: a cookie ACK refused\n");
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000;
	uint64_t now = (uint64_t)time(NULL);
	static const char *const kind[] = { "syn", "ack-forged", "ack-cookie" };
	struct keys_master master;
	struct cookie_keys keys;
	struct shield_service_key sk;
	struct shield_service sv;
	struct shield_config c;
	struct profile prof = {
		.known = true, .mss = 1460, .ws = true, .wscale = 7,
		.sack = true, .ts = true,
	};
	struct shield sh;
	uint32_t *all, *each[3];
	char err[256];
	unsigned i, k;
	int rc = 1;

	if (!n)
		n = 1;
	memset(&master, 0x5a, sizeof(master));
	if (shield_open(&sh, 1024, 1024, err, sizeof(err)) < 0) {
		fprintf(stderr, "shieldrun: %s\n", err);
		return 1;
	}
	if (cookie_keys_init(&keys, &master, LIFETIME) < 0) {
		fprintf(stderr, "shieldrun: keys\n");
		shield_close(&sh);
		return 1;
	}
	all = calloc(3 * (size_t)n, sizeof(*all));
	for (k = 0; k < 3 && all; k++)
		each[k] = all + (size_t)k * n;
	if (!all || cookie_keys_tick(&keys, now) < 0) {
		perror("shieldrun");
		goto out;
	}
	shieldmap_config(&c, &keys, MARK, (int64_t)(now * 1000000000u) -
						  (int64_t)shieldmap_mono_ns());
	shieldmap_service(&sk, &sv, AF_INET, &server, 53, &prof, false, false,
			  0);
	if (shield_set_config(&sh, &c) < 0 ||
	    shield_set_service(&sh, &sk, &sv) < 0) {
		fprintf(stderr, "shieldrun: maps refused the setup\n");
		goto out;
	}
	if (measure(sh.prog_fd, n, each) < 0)
		goto out;
	for (k = 0; k < 3; k++) {
		uint64_t sum = 0;

		for (i = 0; i < n; i++)
			sum += each[k][i];
		qsort(each[k], n, sizeof(*each[k]), by_value);
		printf("%-10s %u runs: median %u ns, mean %.0f ns\n", kind[k],
		       n, each[k][n / 2], (double)sum / n);
	}
	rc = 0;
out:
	free(all);
	cookie_keys_free(&keys);
	shield_close(&sh);
	return rc;
}
