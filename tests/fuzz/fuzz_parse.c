/*
 * The parse chain every queued packet goes through (worker_packet): IPv4 or
 * IPv6 with its extension headers, TCP, the option area, RFC 6013's header
 * extension, the kind-253 form; UDP for the backend's answers to TCPCT
 * transactions.  Whatever is accepted must describe bytes inside the
 * buffer, and building a standard TCPCT form out of it must stay there.
 */
#include <string.h>

#include "../../nfq/pkt.h"
#include "../../nfq/tcpct.h"
#include "../../nfq/tcpopt.h"
#include "fuzz.h"

#define ROOM	65536

static void
check_opts(const struct pkt *p, const struct tcpopt *o)
{
	size_t tcp_len = p->len - p->l4off;

	if (o->has_ts)
		FUZZ_ASSERT(o->ts_off + 8u <= tcp_len);
	if (o->nsack)
		FUZZ_ASSERT(o->nsack <= TCPOPT_SACK_MAX_BLOCKS &&
			    o->sack_off + 8u * o->nsack <= tcp_len);
	if (o->ck_len)
		FUZZ_ASSERT(o->ck_off + o->ck_len - 2u <= tcp_len);
	if (o->has_tfo)
		FUZZ_ASSERT(o->tfo_off + (size_t)o->tfo_len <= tcp_len &&
			    (o->tfo_len == 0 ||
			     (o->tfo_len >= TCPOPT_TFO_COOKIE_MIN &&
			      o->tfo_len <= TCPOPT_TFO_COOKIE_MAX)));
	if (o->has_wscale)
		FUZZ_ASSERT(o->wscale <= 255);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[ROOM];
	enum tcpopt_verdict ov;
	struct tcpopt o;
	struct pkt p;
	unsigned clen;

	if (size > ROOM)
		return 0;
	memcpy(buf, data, size);
	if (pkt_parse(&p, buf, size) != PKT_OK) {
		if (pkt_parse_udp(&p, buf, size) == PKT_OK)
			FUZZ_ASSERT(p.payoff + (size_t)p.paylen <= size);
		return 0;
	}
	FUZZ_ASSERT(p.len <= size);
	FUZZ_ASSERT(p.l4off + (size_t)p.doff <= p.len);
	FUZZ_ASSERT(p.doff >= TCP_HDR_LEN && p.doff <= TCP_HDR_LEN + TCP_OPT_MAX);
	FUZZ_ASSERT(p.payoff + (size_t)p.paylen == p.len);
	(void)pkt_tcp_csum_ok(&p);

	ov = tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN, p.doff - TCP_HDR_LEN,
			  TCP_HDR_LEN, &o);
	if (ov != TCPOPT_OK)
		return 0;
	check_opts(&p, &o);
	if (o.has_tsx) {
		if (tcpct_ext_parse(&p, &o) != TCPOPT_OK)
			return 0;
		FUZZ_ASSERT(p.payoff + (size_t)p.paylen == p.len);
		check_opts(&p, &o);
	}
	(void)tcpct_form(&o, p.flags, &clen);
	if (!o.has_tsx && o.has_ts && size > 0) {
		/* Guarded for a TCPCT initiator: it parses back as TCPCT. */
		static const uint8_t pair[32] = { 1, 2, 3, 4, 5, 6, 7, 8 };
		unsigned plen = 8u + (data[0] & 1u) * 8u;
		struct tcpopt g;
		struct pkt q;

		if (!(p.flags & TCP_SYN) &&
		    tcpct_guard(&p, &o, pair, plen, ROOM) == 0) {
			FUZZ_ASSERT(pkt_parse(&q, p.data, p.len) == PKT_OK);
			FUZZ_ASSERT(tcpopt_parse(pkt_tcp(&q) + TCP_HDR_LEN,
						 q.doff - TCP_HDR_LEN,
						 TCP_HDR_LEN, &g) == TCPOPT_OK);
			FUZZ_ASSERT(g.has_tsx);
			FUZZ_ASSERT(tcpct_ext_parse(&q, &g) == TCPOPT_OK);
			FUZZ_ASSERT(tcpct_form(&g, q.flags, &clen) ==
					    TCPCT_PAIR && clen == plen);
			FUZZ_ASSERT(pkt_tcp_csum_ok(&q));
		}
		return 0;
	}
	if (o.has_tsx && tcpct_strip(&p, &o) == 0) {
		/* The standard form: parses again, with a right checksum. */
		struct pkt q;

		FUZZ_ASSERT(p.len <= size);
		FUZZ_ASSERT(pkt_parse(&q, p.data, p.len) == PKT_OK);
		FUZZ_ASSERT(pkt_tcp_csum_ok(&q));
	}
	return 0;
}
