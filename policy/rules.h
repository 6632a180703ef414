/*
 * iptables/ip6tables rules for what is protected.  tcpctd owns two chains
 * in the raw table, TCPCTD (jumped to from PREROUTING) and TCPCTD_OUT (from
 * OUTPUT); installing flushes and refills them, so it is idempotent, and
 * removing deletes the jumps and the chains and nothing else.  The commands
 * are whatever "iptables" the system selected, nft or legacy.
 */
#ifndef POLICY_RULES_H
#define POLICY_RULES_H

#include <stdio.h>

#include "config.h"

/* Installs, removes or prints (to out) the rules for c.  Returns the number
 * of commands that failed, 0 on success. */
int rules_apply(const struct config *c, enum rules_action action, FILE *out);

#endif
