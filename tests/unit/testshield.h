/*
 * The kernel shield on the test bench (test_shield.c, test_carry.c): one
 * program, loaded once for the suites that run it through
 * BPF_PROG_TEST_RUN, its maps written as a daemon writes them for a test
 * bench gateway.  Loading needs CAP_BPF (make check runs as root); a
 * kernel that refuses the program fails the tests, since the daemon would
 * then run without its shield.
 */
#ifndef TESTS_UNIT_TESTSHIELD_H
#define TESTS_UNIT_TESTSHIELD_H

#include <stdbool.h>
#include <stdint.h>

#include "../../shield/shield.h"
#include "testgw.h"

extern struct shield tshield;

/* Whether tshield is loaded (loading it the first time); why not is said
 * on stderr. */
bool tshield_ready(void);
/* A suite's cleanup: unloads it.  0. */
int tshield_clean(void);

/* One of its counters, summed over the CPUs. */
uint64_t tshield_counter(enum shield_counter c);

/* Its maps as g's daemon writes them: g's keys ticked at t (wall-clock
 * seconds), verified ACKs marked mark, the program's clock set to
 * wall-clock clock_ns, the lists, addresses and every service with the
 * daemon's profile; with kernel-flows, the carried mark too. */
void tshield_sync(struct tgw *g, uint64_t t, uint64_t clock_ns, uint32_t mark);

#endif
