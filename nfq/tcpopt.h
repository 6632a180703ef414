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
#define TCPOPT_SACK_MAX_BLOCKS	4
#define TCPOPT_TS		8	/* RFC 7323 §3.2 */
#define TCPOPT_TS_LEN		10

/* Why an option area was refused; the caller counts each. */
enum tcpopt_verdict {
	TCPOPT_OK = 0,
	TCPOPT_OVERRUN,		/* an option's length runs past the header */
	TCPOPT_BAD_LEN,		/* length byte < 2, or wrong for its kind */
	TCPOPT_DUPLICATE,	/* a single-instance option seen twice */
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
	uint8_t nsack;		/* SACK blocks */
	uint16_t sack_off;	/* first block's left edge */
};

/*
 * Parses the len option bytes at opts, which start hdr_off bytes into the TCP
 * header (normally 20).  Unknown options are skipped by their length.
 * Returns TCPOPT_OK and fills *o, or the reason the area was refused.
 */
enum tcpopt_verdict tcpopt_parse(const uint8_t *opts, size_t len,
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

#endif
