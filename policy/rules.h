/*
 * iptables/ip6tables rules for what is protected.  tcpctd owns two chains
 * in the raw table, TCPCTD (jumped to from PREROUTING) and TCPCTD_OUT (from
 * OUTPUT); installing replaces what they hold in one iptables-restore
 * transaction, so it is idempotent and a reinstall is atomic, and
 * removing deletes the jumps and the chains and nothing else.  The commands
 * are whatever "iptables" the system selected, nft or legacy.
 */
#ifndef POLICY_RULES_H
#define POLICY_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* A DNS service (port 53) gets TCPCT transactions; the UDP answers to the
 * queries tcpctd makes for them come back to ports RULES_TXN_PORT_BASE +
 * RULES_TXN_PORTS · worker, and are queued to that worker. */
#define RULES_DNS_PORT		53
#define RULES_TXN_PORT_BASE	61440
#define RULES_TXN_PORTS		64

/* With more than one worker, each takes RULES_SHARE_RANGES blocks of the
 * client port space (rules.c), in one multiport match: 7 ranges, as a
 * range counts as two of its 15 ports. */
#define RULES_SHARE_RANGES	7

/* Worker's share as a multiport list ("lo:hi,lo:hi,..."): blocks worker,
 * worker + queues, ... of the space cut into RULES_SHARE_RANGES blocks per
 * worker.  Written to buf (len > 0); returns its length (len - 1 when buf
 * was too short for it). */
size_t rules_port_share(unsigned queues, unsigned worker, char *buf,
			size_t len);

/* Whether s takes TCPCT transactions: DNS queries in SYNs, answered from
 * the backend over UDP (gateway/txn.h). */
bool rules_takes_txn(const struct config *cfg, const struct service *s);

/*
 * Every fragment of a TCP datagram to a protected address is dropped ahead
 * of any other rule (rules.c), and counted in a named kernel counter
 * (nfacct) per family, made by an install and deleted by a removal.  In
 * IPv6 that is every fragment whose header chain does not resolve to
 * another protocol than TCP.
 */
#define RULES_FRAGMENTS_ACCT4	"tcpctd-fragments-ipv4"
#define RULES_FRAGMENTS_ACCT6	"tcpctd-fragments-ipv6"

/* The fragments the rules of family dropped so far: 0 with *packets set,
 * or -1 (errno) when their counter cannot be read: no rules installed, or
 * no CAP_NET_ADMIN. */
int rules_fragment_drops(uint8_t family, uint64_t *packets);

/*
 * A packet with a backend's address and port (TCP from the service's
 * port; UDP transaction answers from port 53) is dropped when it comes in
 * from an interface other than the one the route back to that address
 * uses (rpfilter): whoever can deliver such a packet to the gateway from
 * the clients' side could otherwise forge the backend's half of a
 * connection (its SYN-ACK, its ACKs) with every number it knows as the
 * client.  Counted per family like the fragments.  A gateway whose
 * backends and clients share an interface gets nothing from it; the
 * sequence checks (gateway/accept.h) still hold there.
 */
#define RULES_SPOOFED_ACCT4	"tcpctd-backend-spoofed-ipv4"
#define RULES_SPOOFED_ACCT6	"tcpctd-backend-spoofed-ipv6"

/* The packets with a backend's address the rules of family dropped so far
 * as rules_fragment_drops counts them. */
int rules_spoofed_drops(uint8_t family, uint64_t *packets);

/* Installs, removes or prints (to out) the rules for c; a removal says on
 * out, per family, whether there was anything to remove.  Returns the
 * number of commands that failed, 0 on success. */
int rules_apply(const struct config *c, enum rules_action action, FILE *out);

#endif
