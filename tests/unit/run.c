/*
 * The unit test runner: registers every module's suite (suites.h), runs
 * them with the basic interface in verbose mode, and exits 1 if any
 * assertion, test or suite failed (2 if CUnit itself could not start).
 *
 *	make build/unit-tests && build/unit-tests
 *	TCPCTD_TEST_SEED=123 build/unit-tests	replays other random cases
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#include "suites.h"
#include "testutil.h"

int
main(void)
{
	unsigned failures;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "CU_initialize_registry: %s\n",
			CU_get_error_msg());
		return 2;
	}
	register_csum_tests();
	register_pkt_tests();
	register_tcpopt_tests();
	register_cookie_tests();
	register_flow_tests();
	register_splice_tests();
	register_config_tests();
	register_keys_tests();
	register_probe_tests();
	register_tcpct_tests();
	register_txn_tests();
	register_tfo_tests();
	register_mem_tests();
	register_limit_tests();
	register_guard_tests();
	register_bind_tests();
	register_release_tests();
	register_control_tests();
	register_rules_tests();
	register_stats_tests();
	register_drain_tests();
	register_accept_tests();
	register_shield_tests();
	register_carry_tests();
	register_options_tests();
	register_utcp_tests();
	register_upstream_tests();

	printf("random seed 0x%" PRIx64 " (set TCPCTD_TEST_SEED to change)\n",
	       test_seed());
	CU_basic_set_mode(CU_BRM_VERBOSE);
	if (CU_basic_run_tests() != CUE_SUCCESS) {
		fprintf(stderr, "CU_basic_run_tests: %s\n",
			CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	failures = CU_get_number_of_failures() +
		   CU_get_number_of_tests_failed() +
		   CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return failures ? 1 : 0;
}
