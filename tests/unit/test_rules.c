/*
 * policy/rules.c: the workers' shares of the client port space.  Every port
 * is one worker's; an operating system's ephemeral range, and a load
 * generator's low ports, spread over all of them; and the printed rules
 * carry each share whole, in one multiport match.  Fragments of TCP
 * datagrams to protected addresses are dropped first, and counted (IPv6:
 * every fragment but those that resolve to another protocol).  A
 * removal gives up on an iptables that never stops finding the jump.
 * What has a backend's address but comes in from elsewhere is dropped
 * and counted too.
 */
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../policy/rules.h"
#include "suites.h"
#include "testutil.h"

/* owner[port]: the worker whose share holds it, from the multiport lists;
 * -1 if none, -2 if more than one. */
static void
owners(unsigned queues, int *owner)
{
	char buf[RULES_SHARE_RANGES * 12];
	unsigned w, p;

	for (p = 0; p < 65536; p++)
		owner[p] = -1;
	for (w = 0; w < queues; w++) {
		size_t n = rules_port_share(queues, w, buf, sizeof(buf));
		unsigned ranges = 0;
		char *s = buf;

		CU_ASSERT_FATAL(n > 0 && n < sizeof(buf));
		while (*s) {
			char *end;
			unsigned long lo = strtoul(s, &end, 10), hi;

			CU_ASSERT_FATAL(*end == ':');
			hi = strtoul(end + 1, &end, 10);
			CU_ASSERT_FATAL(lo <= hi && hi <= 65535);
			for (p = (unsigned)lo; p <= hi; p++)
				owner[p] = owner[p] == -1 ? (int)w : -2;
			ranges++;
			s = *end == ',' ? end + 1 : end;
		}
		/* A range counts as two of multiport's 15 ports. */
		CU_ASSERT(ranges == RULES_SHARE_RANGES && 2 * ranges <= 15);
	}
}

/* The most and fewest ports of lo..hi that one worker takes. */
static void
spread(const int *owner, unsigned queues, unsigned lo, unsigned hi,
       unsigned *most, unsigned *fewest)
{
	unsigned count[64] = { 0 }, w, p;

	for (p = lo; p <= hi; p++)
		count[owner[p]]++;
	*most = 0;
	*fewest = 65536;
	for (w = 0; w < queues; w++) {
		if (count[w] > *most)
			*most = count[w];
		if (count[w] < *fewest)
			*fewest = count[w];
	}
}

static void
test_rules_port_shares(void)
{
	static const unsigned queues[] = { 2, 3, 4, 7, 16, 64 };
	static int owner[65536];
	unsigned i, p, most, fewest;

	for (i = 0; i < sizeof(queues) / sizeof(queues[0]); i++) {
		unsigned n = queues[i];
		bool whole = true;

		owners(n, owner);
		for (p = 0; p < 65536; p++)
			whole &= owner[p] >= 0;
		CU_ASSERT(whole);
		/* Linux's ephemeral ports spread within 4:3 between the
		 * workers; Windows' and macOS's (a quarter of the space, 7n/4
		 * blocks) and kxdpgun's within 5:2, up to 16 workers. */
		spread(owner, n, 32768, 60999, &most, &fewest);
		CU_ASSERT(fewest > 0 && 3 * most <= 4 * fewest);
		if (n > 16)
			continue;
		spread(owner, n, 49152, 65535, &most, &fewest);
		CU_ASSERT(fewest > 0 && 2 * most <= 5 * fewest);
		spread(owner, n, 2000, 31530, &most, &fewest);
		CU_ASSERT(fewest > 0 && 2 * most <= 5 * fewest);
	}
	{
		/* A buffer too short: cut, and still a string. */
		char small[10];

		CU_ASSERT_EQUAL(rules_port_share(2, 0, small, sizeof(small)),
				sizeof(small) - 1);
		CU_ASSERT_EQUAL(strlen(small), sizeof(small) - 1);
	}
}

static void
test_rules_printed(void)
{
	struct config c;
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	unsigned shared = 0, queued = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "192.0.2.2:53", "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "queues", "3", "t", NULL, NULL),
			      0);
	CU_ASSERT_EQUAL(rules_apply(&c, RULES_PRINT, f), 0);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char share[RULES_SHARE_RANGES * 12];
		const char *m;

		if (!strstr(line, "-p tcp") || !strstr(line, "NFQUEUE"))
			continue;
		queued++;
		m = strstr(line, "-m multiport --");
		CU_ASSERT_PTR_NOT_NULL_FATAL(m);
		/* The worker's whole share, whichever of its queues. */
		rules_port_share(3, (unsigned)atoi(strstr(line, "--queue-num ") +
						   12) % 3,
				 share, sizeof(share));
		CU_ASSERT_PTR_NOT_NULL(strstr(m, share));
		shared++;
	}
	/* SYNs, flows toward the backend, flows from it: 3 each. */
	CU_ASSERT_EQUAL(queued, 9);
	CU_ASSERT_EQUAL(shared, 9);
	free(text);
}

/* The rules printed for c, in a string to free. */
static char *
printed(const struct config *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(rules_apply(c, RULES_PRINT, f), 0);
	fclose(f);
	return text;
}

/*
 * xt_u32's test "POS&MASK=LO:HI" (one location, one range) on an IPv4
 * header: the 4 bytes at POS, big-endian, masked, within LO..HI.
 */
static bool
u32_matches(const char *test, const uint8_t *ip)
{
	char *end;
	unsigned long pos = strtoul(test, &end, 0), mask, lo, hi;
	uint32_t v;

	CU_ASSERT_FATAL(*end == '&' && pos <= 16);
	mask = strtoul(end + 1, &end, 0);
	CU_ASSERT_FATAL(*end == '=');
	lo = strtoul(end + 1, &end, 0);
	CU_ASSERT_FATAL(*end == ':');
	hi = strtoul(end + 1, &end, 0);
	CU_ASSERT_FATAL(*end == '\0');
	v = (uint32_t)ip[pos] << 24 | (uint32_t)ip[pos + 1] << 16 |
	    (uint32_t)ip[pos + 2] << 8 | ip[pos + 3];
	v &= (uint32_t)mask;
	return v >= lo && v <= hi;
}

/* An IPv4 header of a TCP datagram to 192.0.2.2 (RFC 791 §3.1), with the
 * given flags and fragment offset field and TTL. */
static void
ipv4_header(uint8_t *ip, uint16_t flags_offset, uint8_t ttl)
{
	static const uint8_t h[20] = { 0x45, 0, 0, 40, 0x12, 0x34, 0, 0, 0, 6,
				       0, 0, 198, 18, 0, 1, 192, 0, 2, 2 };

	memcpy(ip, h, sizeof(h));
	ip[6] = (uint8_t)(flags_offset >> 8);
	ip[7] = (uint8_t)flags_offset;
	ip[8] = ttl;
}

/*
 * Every fragment of a TCP datagram to a protected address is dropped and
 * counted: one rule per address and family (two services on one address
 * share it), ahead of every other rule of the chain (the allow list's
 * RETURN included), each naming its family's counter, which the printed
 * commands make first.  The IPv4 rule's u32 test matches first, middle and
 * last fragments and no whole datagram, DF or not, whatever its TTL.  In
 * IPv6, where only the header chain tells the protocol, a fragment whose
 * chain resolves to another protocol than TCP passes first, and the drop
 * takes every other fragment, one whose chain does not resolve included.
 */
static void
test_rules_fragments(void)
{
	static const struct {
		uint16_t flags_offset;
		bool fragment;
	} hdrs[] = {
		{ 0x0000, false },	/* whole */
		{ 0x4000, false },	/* whole, DF */
		{ 0x2000, true },	/* first: MF, offset 0 */
		{ 0x2003, true },	/* middle */
		{ 0x0005, true },	/* last: offset, no MF */
		{ 0x1fff, true },	/* the largest offset */
		{ 0x8000, false },	/* the reserved bit alone */
	};
	struct config c;
	char *text, *line, *save = NULL;
	unsigned frag4 = 0, frag6 = 0, return6 = 0, others4 = 0, others6 = 0;
	unsigned i, ttl;
	char test[64];
	uint8_t ip[20];
	bool acct4 = false, acct6 = false;

	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "192.0.2.2:53", "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "192.0.2.2:80", "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "192.0.2.3:53", "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "[2001:db8:b::2]:53",
					 "t", NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "allow", "203.0.113.0/24", "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "allow", "2001:db8:a::/64", "t",
					 NULL, NULL), 0);
	text = printed(&c);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		bool v4 = !strncmp(line, "iptables ", 9);

		/* The counter made before the rules that name it. */
		if (!strcmp(line, "nfacct add " RULES_FRAGMENTS_ACCT4))
			acct4 = !frag4;
		if (!strcmp(line, "nfacct add " RULES_FRAGMENTS_ACCT6))
			acct6 = !frag6;
		if (!strstr(line, " -A TCPCTD "))
			continue;
		/* IPv6: what resolves to another protocol passes, first. */
		if (!v4 && strstr(line, " -m frag ") &&
		    strstr(line, "-j RETURN")) {
			CU_ASSERT_EQUAL(others6, 0);
			CU_ASSERT_EQUAL(frag6, 0);
			CU_ASSERT_STRING_EQUAL(strstr(line, " -A "),
				" -A TCPCTD ! -p tcp -d 2001:db8:b::2 -m frag "
				"-j RETURN");
			return6++;
			continue;
		}
		if (!strstr(line, "-j DROP") || !strstr(line, "nfacct") ||
		    strstr(line, "rpfilter")) {
			if (v4)
				others4++;
			else
				others6++;
			continue;
		}
		/* Ahead of every other rule of its family. */
		CU_ASSERT_EQUAL(v4 ? others4 : others6, 0);
		if (v4) {
			frag4++;
			CU_ASSERT(strstr(line, "-d 192.0.2.2 ") ||
				  strstr(line, "-d 192.0.2.3 "));
			CU_ASSERT_PTR_NOT_NULL(strstr(line,
				"-m nfacct --nfacct-name " RULES_FRAGMENTS_ACCT4
				" -j DROP"));
			/* Quoted, for the shell and iptables-restore. */
			CU_ASSERT_FATAL(sscanf(line, "%*[^\"]\"%63[^\"]\"",
					       test) == 1);
			CU_ASSERT_PTR_NOT_NULL(strstr(line, "-m u32 --u32 \""));
			for (i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++)
				for (ttl = 1; ttl < 256; ttl += 63) {
					ipv4_header(ip, hdrs[i].flags_offset,
						    (uint8_t)ttl);
					CU_ASSERT_EQUAL(u32_matches(test, ip),
							hdrs[i].fragment);
				}
		} else {
			/* Every other fragment, whatever -p makes of it. */
			frag6++;
			CU_ASSERT_EQUAL(return6, 1);
			CU_ASSERT_STRING_EQUAL(strstr(line, " -A "),
				" -A TCPCTD -d 2001:db8:b::2 -m frag -m nfacct "
				"--nfacct-name " RULES_FRAGMENTS_ACCT6
				" -j DROP");
		}
	}
	CU_ASSERT_EQUAL(frag4, 2);
	CU_ASSERT_EQUAL(frag6, 1);
	CU_ASSERT_EQUAL(return6, 1);
	CU_ASSERT(others4 > 0 && others6 > 0);
	CU_ASSERT(acct4 && acct6);
	free(text);
}

/* The lines of file dir/name that begin with prefix. */
static unsigned
lines_with(const char *dir, const char *name, const char *prefix)
{
	char path[160], line[256];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, prefix, strlen(prefix));
	fclose(f);
	return n;
}

/*
 * An iptables (and ip6tables) first on PATH that says yes to everything,
 * `-C` after every `-D` included, as a wrapper or a broken binary might: a
 * removal deletes the jump a bounded number of times (64), says it gave up,
 * and fails, instead of looping for ever.  It runs in a child, in a network
 * namespace of its own where it may make one (root), so that the fragment
 * counters it deletes are not the machine's; 20 s of it is a loop.
 */
static void
test_rules_remove_bounded(void)
{
	static const char script[] = "#!/bin/sh\n"
				     "echo \"$*\" >>\"${0%/*}/calls\"\n"
				     "exit 0\n";
	char dir[64], path[160], err[200];
	int status = 0;
	struct config c;
	unsigned d_in, d_out;
	pid_t pid;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/tcpctd-unit-rules.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/iptables", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(script, f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(chmod(path, 0755), 0);
	snprintf(err, sizeof(err), "%s/ip6tables", dir);
	CU_ASSERT_EQUAL_FATAL(symlink(path, err), 0);
	snprintf(err, sizeof(err), "%s/err", dir);
	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "192.0.2.2:53", "t",
					 NULL, NULL), 0);

	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		char env[4096];
		const char *old = getenv("PATH");

		alarm(20);
		(void)unshare(CLONE_NEWNET);
		snprintf(env, sizeof(env), "%s:%s", dir, old ? old : "/usr/bin:/bin");
		setenv("PATH", env, 1);
		if (!freopen(err, "w", stderr))
			_exit(3);
		status = rules_apply(&c, RULES_REMOVE, NULL);
		fflush(stderr);
		_exit(status > 0 ? 1 : 0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	/* Not ended by the alarm, and failed: a command failed. */
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	d_in = lines_with(dir, "calls", "-w -t raw -D PREROUTING -j TCPCTD");
	d_out = lines_with(dir, "calls", "-w -t raw -D OUTPUT -j TCPCTD_OUT");
	/* 64 deletions of each jump, in each family. */
	CU_ASSERT_EQUAL(d_in, 2 * 64);
	CU_ASSERT_EQUAL(d_out, 2 * 64);
	CU_ASSERT_EQUAL(lines_with(dir, "err", "iptables: PREROUTING still "
				   "jumps to TCPCTD after 64 deletions: "
				   "given up"), 1);
	CU_ASSERT_EQUAL(lines_with(dir, "err", "ip6tables: OUTPUT still "
				   "jumps to TCPCTD_OUT after 64 deletions: "
				   "given up"), 1);
	unlink(path);
	unlink(err);
	snprintf(path, sizeof(path), "%s/ip6tables", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/calls", dir);
	unlink(path);
	rmdir(dir);
}

/* What a rule matches, less its port share and target: the rules of one
 * kind of traffic share it. */
static void
rule_key(const char *line, char *key, size_t len)
{
	const char *cut[] = { " -m rpfilter", " -m multiport", " -j " };
	size_t n = strlen(line), i;

	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		const char *at = strstr(line, cut[i]);

		if (at && (size_t)(at - line) < n)
			n = (size_t)(at - line);
	}
	CU_ASSERT_FATAL(n < len);
	memcpy(key, line, n);
	key[n] = '\0';
}

/*
 * Issue 31: whatever has a backend's address and port (TCP from the
 * service's port, UDP transaction answers from 53) and is queued or
 * untracked meets first a rule that drops it, counted in its family's
 * counter, when it comes in where the route to that address does not go
 * out; the counters are made before any rule names them.
 */
static void
test_rules_spoofed(void)
{
	static const char *const opts[] = {
		"protect", "192.0.2.2:53", "protect", "192.0.2.2:80",
		"protect", "[2001:db8:b::2]:53", "allow", "203.0.113.0/24",
		"queues", "2", NULL
	};
	struct config c;
	char *text, *line, *save = NULL;
	char drops[16][256];
	unsigned ndrops = 0, taken = 0, i;
	bool acct4 = false, acct6 = false;

	config_defaults(&c);
	for (i = 0; opts[i]; i += 2)
		CU_ASSERT_EQUAL_FATAL(config_set(&c, opts[i], opts[i + 1], "t",
						 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_check(&c, NULL, NULL), 0);
	text = printed(&c);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		bool v4 = !strncmp(line, "iptables ", 9);
		char key[256];

		if (!strcmp(line, "nfacct add " RULES_SPOOFED_ACCT4))
			acct4 = !ndrops;
		if (!strcmp(line, "nfacct add " RULES_SPOOFED_ACCT6))
			acct6 = true;
		if (!strstr(line, " -A TCPCTD ") || !strstr(line, "--sport ") ||
		    strstr(line, "-j RETURN"))
			continue;
		rule_key(line, key, sizeof(key));
		if (strstr(line, "rpfilter")) {
			CU_ASSERT_PTR_NOT_NULL(strstr(line,
				v4 ? " -m rpfilter --invert -m nfacct "
				     "--nfacct-name " RULES_SPOOFED_ACCT4
				     " -j DROP" :
				     " -m rpfilter --invert -m nfacct "
				     "--nfacct-name " RULES_SPOOFED_ACCT6
				     " -j DROP"));
			CU_ASSERT_FATAL(ndrops < 16);
			snprintf(drops[ndrops++], sizeof(drops[0]), "%s", key);
			continue;
		}
		CU_ASSERT(strstr(line, "NFQUEUE") || strstr(line, "--notrack"));
		for (i = 0; i < ndrops && strcmp(drops[i], key); i++)
			;
		CU_ASSERT(i < ndrops);
		taken++;
	}
	/* TCP from each service: one drop; UDP answers: one per worker and
	 * DNS service.  Then notrack and a queue per worker behind each. */
	CU_ASSERT_EQUAL(ndrops, 3 + 2 * 2);
	CU_ASSERT_EQUAL(taken, 3 * 3 + 2 * 2 * 2);
	CU_ASSERT(acct4 && acct6);
	free(text);
}

/*
 * Issue 35: an upstream service's rules: the resolver's segments to the
 * far servers' prefix queued from PREROUTING and, for a resolver on the
 * gateway, from OUTPUT after the rule that lets tcpctd's own go; the far
 * servers' back, local destinations included, but tcpctd's own over lo.
 */
static void
test_rules_upstream(void)
{
	struct config c;
	char *text, *out_mark, *out_syn, *in_ret, *in_q;

	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "upstream", "203.0.113.0/24:53",
					 "t", NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_check(&c, NULL, NULL), 0);
	text = printed(&c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "-A TCPCTD -p tcp -d "
				      "203.0.113.0/24 --dport 53 --tcp-flags "
				      "SYN,ACK,FIN,RST SYN -j NFQUEUE "
				      "--queue-num 1\n"));
	out_mark = strstr(text, "-A TCPCTD_OUT -m mark --mark 0x7463 -j "
			  "RETURN\n");
	out_syn = strstr(text, "-A TCPCTD_OUT -p tcp -d 203.0.113.0/24 "
			 "--dport 53 --tcp-flags SYN,ACK,FIN,RST SYN -j "
			 "NFQUEUE --queue-num 1\n");
	CU_ASSERT(out_mark && out_syn && out_mark < out_syn);
	in_ret = strstr(text, "-A TCPCTD -p tcp -s 203.0.113.0/24 --sport 53 "
			"-m mark --mark 0x7463 -j RETURN\n");
	in_q = strstr(text, "-A TCPCTD -p tcp -s 203.0.113.0/24 --sport 53 "
		      "-j NFQUEUE --queue-num 0\n");
	CU_ASSERT(in_ret && in_q && in_ret < in_q);
	/* No probe to spare, no transactions answered for the prefix. */
	CU_ASSERT_PTR_NULL(strstr(text, "-s 203.0.113.0/24 --sport 53 -m "
				  "addrtype"));
	CU_ASSERT_PTR_NULL(strstr(text, "-p udp"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "-A TCPCTD -p tcp -d "
				      "203.0.113.0/24 -m u32"));
	free(text);
	/* Without one, TCPCTD_OUT is as it was. */
	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(config_set(&c, "protect", "192.0.2.2:53", "t",
					 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_check(&c, NULL, NULL), 0);
	text = printed(&c);
	CU_ASSERT_PTR_NULL(strstr(text, "TCPCTD_OUT -m mark --mark 0x7463 -j "
				  "RETURN"));
	free(text);
}

void
register_rules_tests(void)
{
	static const struct test_case cases[] = {
		{ "port shares: every port one worker's, ephemeral ranges "
		  "spread", test_rules_port_shares },
		{ "printed rules carry each share in one multiport match",
		  test_rules_printed },
		{ "every fragment of a TCP datagram to a protected address "
		  "dropped and counted, ahead of every other rule; IPv6: all "
		  "but those that resolve to another protocol",
		  test_rules_fragments },
		{ "a removal gives up on a jump iptables -C never stops "
		  "finding, and fails", test_rules_remove_bounded },
		{ "issue 31: what has a backend's address dropped and "
		  "counted first when it comes in where the route to it does "
		  "not go out", test_rules_spoofed },
		{ "issue 35: an upstream's rules, both chains",
		  test_rules_upstream },
	};

	TEST_SUITE("rules", cases);
}
