/*
 * policy/rules.c: the workers' shares of the client port space.  Every port
 * is one worker's; an operating system's ephemeral range, and a load
 * generator's low ports, spread over all of them; and the printed rules
 * carry each share whole, in one multiport match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void
register_rules_tests(void)
{
	static const struct test_case cases[] = {
		{ "port shares: every port one worker's, ephemeral ranges "
		  "spread", test_rules_port_shares },
		{ "printed rules carry each share in one multiport match",
		  test_rules_printed },
	};

	TEST_SUITE("rules", cases);
}
