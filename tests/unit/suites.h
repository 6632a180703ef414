/*
 * One CUnit suite per module (HACKING.md, tests): each test_<module>.c
 * registers its suite, and run.c calls every register function below.
 */
#ifndef TESTS_UNIT_SUITES_H
#define TESTS_UNIT_SUITES_H

void register_csum_tests(void);
void register_pkt_tests(void);
void register_tcpopt_tests(void);
void register_cookie_tests(void);
void register_flow_tests(void);
void register_splice_tests(void);
void register_config_tests(void);
void register_keys_tests(void);
void register_probe_tests(void);
void register_tcpct_tests(void);
void register_txn_tests(void);
void register_tfo_tests(void);
void register_mem_tests(void);
void register_limit_tests(void);
void register_guard_tests(void);
void register_bind_tests(void);
void register_release_tests(void);
void register_control_tests(void);
void register_rules_tests(void);
void register_stats_tests(void);
void register_drain_tests(void);
void register_accept_tests(void);
void register_shield_tests(void);
void register_carry_tests(void);
void register_options_tests(void);
void register_utcp_tests(void);
void register_upstream_tests(void);

#endif
