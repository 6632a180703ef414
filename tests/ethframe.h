/*
 * A client's TCP segment in an Ethernet frame, as the shield's tc program
 * sees it on a veth (BPF_PROG_TEST_RUN takes whole frames): two fixed
 * MACs, the EtherType of the family, then nfq/pkt.c's segment with the
 * options nfq/tcpopt.c builds.  tests/unit/test_shield.c checks what the
 * program sends for such frames; tests/bench/shieldrun.c times it.
 */
#ifndef TESTS_ETHFRAME_H
#define TESTS_ETHFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "../nfq/bytes.h"
#include "../nfq/pkt.h"
#include "../nfq/tcpopt.h"

#define ETH_LEN			14
#define ETH_TYPE_IPV4		0x0800
#define ETH_TYPE_IPV6		0x86dd

/* The segment ps, with the options os, into the frame b of cap bytes; the
 * frame's length, 0 when it does not fit. */
static inline size_t
eth_frame_tcp(uint8_t *b, size_t cap, const struct pkt_tcp_spec *ps,
	      const struct tcpopt_spec *os)
{
	static const uint8_t macs[12] = { 2, 0, 0, 0, 0, 0xb,
					  2, 0, 0, 0, 0, 0xc };
	uint8_t o[TCP_OPT_MAX];
	struct pkt_tcp_spec s = *ps;
	struct pkt p;
	size_t len;

	if (cap <= ETH_LEN)
		return 0;
	s.optlen = tcpopt_build(o, os);
	s.opts = o;
	memcpy(b, macs, sizeof(macs));
	put16(b + 12, s.family == AF_INET ? ETH_TYPE_IPV4 : ETH_TYPE_IPV6);
	len = pkt_build_tcp(b + ETH_LEN, cap - ETH_LEN, &s, &p);
	return len ? ETH_LEN + len : 0;
}

#endif
