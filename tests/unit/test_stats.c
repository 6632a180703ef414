/*
 * daemon/stats.c: the rows of the largest configuration, every one there
 * (none left out), a service's named after it and its backend, and the
 * JSON a script reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "../../daemon/stats.h"
#include "suites.h"
#include "testutil.h"

static void
ignore(const char *where, const char *msg, void *arg)
{
	(void)where;
	(void)msg;
	(void)arg;
}

/* The row named name, or NULL. */
static const struct stat_row *
row(const struct stats *s, const char *name)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->row[i].name, name))
			return &s->row[i];
	return NULL;
}

static void
test_stats_largest(void)
{
	static struct config cfg;
	static struct gateway gw;
	static struct stats st;
	struct worker *workers;
	char spec[64], *json = NULL;
	size_t len = 0;
	unsigned i;
	FILE *f;

	config_defaults(&cfg);
	CU_ASSERT_EQUAL(config_set(&cfg, "queues", "64", "t", ignore, NULL), 0);
	for (i = 0; i < POLICY_MAX_SERVICES; i++) {
		snprintf(spec, sizeof(spec), "192.0.2.%u:53", i + 1);
		CU_ASSERT_EQUAL(config_set(&cfg, "protect", spec, "t", ignore,
					   NULL), 0);
	}
	/* One named as a [service NAME] names it. */
	snprintf(cfg.services[1].name, sizeof(cfg.services[1].name), "dns");
	CU_ASSERT_EQUAL_FATAL(config_check(&cfg, ignore, NULL), 0);
	workers = calloc(cfg.queues, sizeof(*workers));
	CU_ASSERT_PTR_NOT_NULL_FATAL(workers);
	gw.cfg = &cfg;
	atomic_store(&gw.drain[2], true);

	stats_take(&st, &gw, workers, cfg.queues);
	CU_ASSERT_PTR_NOT_NULL(row(&st, "rows_left_out"));
	CU_ASSERT_EQUAL(stats_get(&st, "rows_left_out"), 0);
	CU_ASSERT_PTR_NOT_NULL(row(&st, "192.0.2.64:53/segments_to_client"));
	CU_ASSERT_PTR_NOT_NULL(row(&st, "inject_flushes"));
	CU_ASSERT_PTR_NOT_NULL(row(&st, "dns/192.0.2.2:53/verified_tfo"));
	CU_ASSERT_EQUAL(stats_service_get(&st, 2, "draining"), 1);
	CU_ASSERT_EQUAL(stats_get(&st, "192.0.2.3:53/draining"), 1);
	CU_ASSERT_EQUAL(stats_get(&st, "flows_capacity"),
			(uint64_t)cfg.flows * 64);

	/* JSON: the daemon's rows by name, each backend's in services[]. */
	f = open_memstream(&json, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	stats_write(&st, STATS_JSON, f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\n  \"inject_flushes\": 0,\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\n    {\"service\": \"dns\", "
				       "\"backend\": \"192.0.2.2:53\", "
				       "\"backend_open\": 0,"));
	CU_ASSERT_PTR_NULL(strstr(json, "\"service1_"));
	CU_ASSERT(len > 8 && !strcmp(json + len - 8, "}\n  ]\n}\n"));
	free(json);
	free(workers);
}

void
register_stats_tests(void)
{
	static const struct test_case cases[] = {
		{ "stats_take: 64 services and 64 queues, no row left out; "
		  "names and JSON", test_stats_largest },
	};

	TEST_SUITE("stats", cases);
}
