/*
 * gateway/mem.h: tables resident from the start.  The resident size grows
 * by the whole table at once, the table is zeroed, and sizes that overflow
 * are refused.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../gateway/mem.h"
#include "suites.h"
#include "testutil.h"

/* This process's resident size in bytes, from /proc/self/statm. */
static size_t
resident(void)
{
	unsigned long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
}

static void
test_resident(void)
{
	const size_t n = 16384, size = 2048;	/* the default hold pool */
	size_t before, after, i, nonzero = 0;
	uint8_t *p;

	before = resident();
	p = mem_resident(n, size);
	after = resident();
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	printf("\n    %zu KiB asked, resident grew %zu KiB ", n * size >> 10,
	       (after - before) >> 10);
	/* All of it at once, not on first use (a plain calloc grows ~0). */
	CU_ASSERT(after >= before + n * size - n * size / 16);
	for (i = 0; i < n * size; i++)
		nonzero += p[i] != 0;
	CU_ASSERT_EQUAL(nonzero, 0);
	free(p);
}

static void
test_sizes(void)
{
	void *p;

	errno = 0;
	CU_ASSERT_PTR_NULL(mem_resident(SIZE_MAX / 2, 4));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	p = mem_resident(0, 64);	/* an unused table is still freeable */
	CU_ASSERT_PTR_NOT_NULL(p);
	free(p);
}

void
register_mem_tests(void)
{
	static const struct test_case cases[] = {
		{ "resident at once, zeroed", test_resident },
		{ "overflowing and empty sizes", test_sizes },
	};

	TEST_SUITE("mem", cases);
}
