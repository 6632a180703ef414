/*
 * TCP Cookie Transactions (RFC 6013) on the wire: the kind-253 cookie
 * options, Timestamps Extended (TSX, kind 254) and the TCP header extension
 * it announces.  HACKING.md §1.
 *
 * The reading of Extend used here (the one that gives the Extend values of
 * RFC 6013 Appendix A's examples, 16 and 15, for their layouts; the test
 * "Appendix A layouts" in tests/unit/test_tcpct.c parses both and rebuilds
 * A.2 byte for byte): Extend counts the 32-bit words of
 * header extension that follow the standard header, whose data offset ends
 * with the option area that holds TSX.  The extension starts with the
 * timestamp pair (TSval then TSecr, Size words each), then options laid out
 * as in the standard area (the Cookie-Pair, the SYN's options repeated,
 * SACK blocks).  It takes no sequence space: the first data byte follows it.
 */
#ifndef NFQ_TCPCT_H
#define NFQ_TCPCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkt.h"
#include "tcpopt.h"

#define TCPCT_COOKIE_MIN	8	/* RFC 6013 §3: bytes of one cookie */
#define TCPCT_COOKIE_MAX	16
#define TCPCT_COOKIELESS_LEN	2	/* RFC 6013 §3 */
#define TCPCT_PAIR_MAX		(2 * TCPCT_COOKIE_MAX)
#define TCPCT_SYN_DATA_MAX	496	/* HACKING.md §1: data in a SYN */
#define TCPCT_SYNACK_DATA_MAX	1220	/* and in a SYN-ACK */
#define TCPCT_EXT_MAX		(255 * 4)	/* Extend is one byte */

/* What a kind-253 option is, by its length and the segment it is in. */
enum tcpct_form {
	TCPCT_NONE = 0,
	TCPCT_COOKIELESS,	/* length 2 */
	TCPCT_COOKIE,		/* in a SYN: one cookie of 8..16 bytes */
	TCPCT_PAIR,		/* elsewhere: initiator then responder cookie */
};

/*
 * The form of o's kind-253 option in a segment with the given flags; a
 * length that fits neither form there is TCPCT_NONE (ignored).  *clen is
 * the size of one cookie.
 */
enum tcpct_form tcpct_form(const struct tcpopt *o, uint8_t flags,
			   unsigned *clen);

/*
 * With o->has_tsx, checks that the header extension (4 · Extend bytes after
 * the standard header) lies within the segment and holds the timestamp pair,
 * reads the pair into o->tsval/tsecr (the low 32 bits of each; has_ts is set
 * and ts_off points at TSval when Size is 1) and parses the options after
 * it into o (of a SACK option, the first TCPOPT_SACK_MAX_BLOCKS blocks:
 * tcpopt.h).  p's payload then starts after the extension.  Returns
 * TCPOPT_OK, TCPOPT_OVERRUN when the extension is longer than the segment
 * or too short for the pair, or the options' verdict.
 */
enum tcpopt_verdict tcpct_ext_parse(struct pkt *p, struct tcpopt *o);

/*
 * Rewrites a parsed TCPCT segment (with TSX) in place into the standard form
 * a legacy peer understands: option area NOP NOP Timestamps from the
 * extension's pair (32-bit), then up to 3 SACK blocks; the other options,
 * the TSX and cookie options and the extension are removed, the data moves
 * up.  IP lengths and both checksums are made anew.  p and o are parsed
 * again.  Returns 0, or -1 when o's pair is not 32-bit (Size 1).
 */
int tcpct_strip(struct pkt *p, struct tcpopt *o);

/*
 * The reverse, for a segment towards a TCPCT initiator that must be guarded
 * (HACKING.md §1, step 4): a standard segment with Timestamps (o->has_ts; the
 * values are read from the packet, o's offsets must be current) becomes
 * area TSX, extension TSval TSecr NOP NOP Cookie-Pair (pair: 2 · clen
 * bytes), then its SACK blocks if any; the data moves down.  cap is the
 * room at p->data.  Returns 0, or -1 (no Timestamps, or no room) with p
 * unchanged.
 */
int tcpct_guard(struct pkt *p, struct tcpopt *o, const uint8_t *pair,
		unsigned clen, size_t cap);

/*
 * Appends a kind-253 option carrying len bytes of cookie (one cookie, or a
 * pair) to the option block at buf of *optlen bytes, NOP-padded in front so
 * that the block stays a multiple of 4.  Returns false when it does not fit
 * in cap bytes.
 */
bool tcpct_put_cookie(uint8_t *buf, size_t *optlen, size_t cap,
		      const uint8_t *cookie, size_t len);

/*
 * Builds the standard option area and the header extension of a TCPCT
 * segment with 32-bit timestamps: area = TSX (Extend computed); extension =
 * TSval, TSecr, NOP NOP Cookie-Pair (ci then cr, clen bytes each), then
 * the extra bytes (other options, a multiple of 4).  Writes to buf (cap
 * bytes); returns the bytes of area + extension, with *area_len the
 * standard area's, or 0 when it does not fit.
 */
struct tcpct_ext_spec {
	uint32_t tsval, tsecr;
	const uint8_t *ci, *cr;
	unsigned clen;
	const uint8_t *extra;
	size_t extra_len;
};
size_t tcpct_ext_build(uint8_t *buf, size_t cap,
		       const struct tcpct_ext_spec *s, size_t *area_len);

#endif
