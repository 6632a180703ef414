/*
 * TCP options: parse the option area of a segment and build the option block
 * of the segments tcpctd originates.
 */
#ifndef NFQ_TCPOPT_H
#define NFQ_TCPOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Option kinds and lengths (IANA TCP parameters). */
#define TCPOPT_EOL		0
#define TCPOPT_NOP		1
#define TCPOPT_MSS		2	/* RFC 9293 §3.2 */
#define TCPOPT_MSS_LEN		4
#define TCPOPT_WSCALE		3	/* RFC 7323 §2.2 */
#define TCPOPT_WSCALE_LEN	3
#define TCPOPT_WSCALE_MAX	14	/* RFC 7323 §2.3 */
#define TCPOPT_SACK_PERM	4	/* RFC 2018 §2 */
#define TCPOPT_SACK_PERM_LEN	2
#define TCPOPT_SACK		5	/* RFC 2018 §3 */
#define TCPOPT_SACK_MAX_BLOCKS	4	/* in 40 bytes of options */
#define TCPOPT_TS		8	/* RFC 7323 §3.2 */
#define TCPOPT_TS_LEN		10
#define TCPOPT_COOKIE		253	/* RFC 6013 §3 (TCPCT) */
#define TCPOPT_EXP		254	/* RFC 6013 §3 TSX; RFC 6994 */
#define TCPOPT_TSX_LEN		4
#define TCPOPT_EXID_TFO		0xf989	/* RFC 7413 §4.1.1, RFC 6994 */
#define TCPOPT_TFO		34	/* RFC 7413 §4.1.1 */
#define TCPOPT_TFO_COOKIE_MIN	4	/* RFC 7413 §4.1.1 (erratum 4238) */
#define TCPOPT_TFO_COOKIE_MAX	16

/* Why an option area was refused; the caller counts each. */
enum tcpopt_verdict {
	TCPOPT_OK = 0,
	TCPOPT_OVERRUN,		/* an option's length runs past the header */
	TCPOPT_BAD_LEN,		/* length byte < 2, or wrong for its kind */
	TCPOPT_DUPLICATE,	/* a single-instance option seen twice */
	TCPOPT_EXCLUSIVE,	/* RFC 6013 §3: two cookie options, or
				 * Timestamps with Timestamps Extended */
	TCPOPT_VERDICT_MAX
};

const char *tcpopt_verdict_name(enum tcpopt_verdict v);

/*
 * What the parser found.  Offsets are from the start of the TCP header so
 * that a translator can rewrite a value in place.
 */
struct tcpopt {
	bool has_mss, has_wscale, sack_perm, has_ts;
	uint16_t mss;
	uint8_t wscale;		/* as sent; > 14 is used as 14 (RFC 7323) */
	uint32_t tsval, tsecr;
	uint16_t ts_off;	/* TSval; TSecr follows at ts_off + 4 */
	uint8_t nsack;		/* SACK blocks, at most TCPOPT_SACK_MAX_BLOCKS:
				 * the first of a longer option (only RFC
				 * 6013's header extension has room) */
	uint16_t sack_off;	/* first block's left edge */

	/* RFC 6013: the kind-253 option (Cookie, Cookie-Pair or Cookie-less,
	 * told apart by tcpct.h) and Timestamps Extended.  An option of a
	 * length outside RFC 6013's ranges is ignored, as it says. */
	uint8_t ck_len;		/* option length, 0 when none */
	uint16_t ck_off;	/* its body */
	bool has_tsx;
	uint8_t tsx_extend;	/* words of header extension */
	uint8_t tsx_size;	/* words per timestamp: 1, 2 or 4 */
	uint16_t ext_len;	/* header extension bytes, once parsed */

	/* RFC 7413 §4.1.1: Fast Open, kind 34 or (the form before its code
	 * point) kind 254 with ExID 0xF989.  A length outside the RFC's
	 * (cookie 0 or 4..16 bytes, even) is ignored. */
	bool has_tfo;
	bool tfo_exp;		/* the kind-254 form */
	uint8_t tfo_len;	/* cookie bytes; 0: a cookie request */
	uint16_t tfo_off;	/* the cookie */
};

/*
 * Parses the len option bytes at opts, which start hdr_off bytes into the TCP
 * header (normally 20).  Unknown options are skipped by their length.
 * Returns TCPOPT_OK and fills *o, or the reason the area was refused.
 */
enum tcpopt_verdict tcpopt_parse(const uint8_t *opts, size_t len,
				 unsigned hdr_off, struct tcpopt *o);

/* The same for a further area of the same segment (RFC 6013's header
 * extension): adds to *o, and a single-instance option already seen in an
 * earlier area is a duplicate. */
enum tcpopt_verdict tcpopt_parse_more(const uint8_t *opts, size_t len,
				      unsigned hdr_off, struct tcpopt *o);

/*
 * Builds an option block into buf (at least TCP_OPT_MAX bytes): MSS when
 * mss != 0, SACK-permitted, timestamps (tsval, tsecr) and window scale as
 * asked, NOP-padded to a multiple of 4, in the order Linux uses so that the
 * timestamps stay 4-byte aligned.  Returns the block's length.
 */
struct tcpopt_spec {
	uint16_t mss;
	bool sack_perm;
	bool ts;
	uint32_t tsval, tsecr;
	bool wscale;
	uint8_t wscale_shift;
};
size_t tcpopt_build(uint8_t *buf, const struct tcpopt_spec *s);

/*
 * Appends a Fast Open option carrying len bytes of cookie (exp: in the
 * kind-254 form) to the block at buf of *optlen bytes, NOP-padded in front
 * so that the block stays a multiple of 4.  Returns false when it does not
 * fit in cap bytes.
 */
bool tcpopt_put_tfo(uint8_t *buf, size_t *optlen, size_t cap,
		    const uint8_t *cookie, size_t len, bool exp);

#endif
