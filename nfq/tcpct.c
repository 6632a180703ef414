#include "tcpct.h"

#include <string.h>

#include "bytes.h"
#include "csum.h"

#define TSX_SIZE_32	1	/* RFC 6013 §3: 32-bit timestamps */
#define SACK_STRIP_MAX	3	/* blocks that fit next to Timestamps */

enum tcpct_form
tcpct_form(const struct tcpopt *o, uint8_t flags, unsigned *clen)
{
	unsigned body = o->ck_len >= 2 ? o->ck_len - 2u : 0;

	*clen = 0;
	if (!o->ck_len)
		return TCPCT_NONE;
	if (o->ck_len == TCPCT_COOKIELESS_LEN)
		return TCPCT_COOKIELESS;
	if (flags & TCP_SYN) {
		if (body < TCPCT_COOKIE_MIN || body > TCPCT_COOKIE_MAX)
			return TCPCT_NONE;
		*clen = body;
		return TCPCT_COOKIE;
	}
	/* Both halves are the same size (HACKING.md §1), and each is a whole cookie,
	 * an even number of bytes. */
	if (body % 4 || body < 2 * TCPCT_COOKIE_MIN || body > TCPCT_PAIR_MAX)
		return TCPCT_NONE;
	*clen = body / 2;
	return TCPCT_PAIR;
}

enum tcpopt_verdict
tcpct_ext_parse(struct pkt *p, struct tcpopt *o)
{
	size_t seg = p->len - p->l4off;
	size_t ext = (size_t)4 * o->tsx_extend, pair = (size_t)8 * o->tsx_size;
	const uint8_t *e;
	enum tcpopt_verdict v;

	if (!o->has_tsx)
		return TCPOPT_OK;
	if (ext < pair || ext > seg - p->doff)
		return TCPOPT_OVERRUN;
	e = pkt_tcp(p) + p->doff;
	v = tcpopt_parse_more(e + pair, ext - pair, p->doff + (unsigned)pair,
			      o);
	if (v != TCPOPT_OK)
		return v;
	/* Network order: the low 32 bits are the last four bytes of each. */
	o->has_ts = true;
	o->ts_off = (uint16_t)(p->doff + 4u * o->tsx_size - 4);
	o->tsval = get32(e + (size_t)4 * o->tsx_size - 4);
	o->tsecr = get32(e + (size_t)8 * o->tsx_size - 4);
	o->ext_len = (uint16_t)ext;
	p->payoff = (uint16_t)(p->payoff + ext);
	p->paylen -= (uint32_t)ext;
	return TCPOPT_OK;
}

static void
set_ip_len(struct pkt *p)
{
	uint8_t *ip = p->data;

	if (p->family == AF_INET) {
		size_t ihl = (size_t)(ip[0] & 0x0f) * 4;

		put16(ip + 2, (uint16_t)p->len);
		put16(ip + 10, 0);
		put16(ip + 10, csum_fold(csum_add(0, ip, ihl)));
	} else {
		put16(ip + 4, (uint16_t)(p->len - IPV6_HDR_LEN));
	}
}

int
tcpct_strip(struct pkt *p, struct tcpopt *o)
{
	uint8_t area[TCP_OPT_MAX], *th = pkt_tcp(p);
	size_t n = 0, nsack = o->nsack, doff;
	uint32_t paylen = p->paylen;

	if (o->has_tsx && o->tsx_size != TSX_SIZE_32)
		return -1;
	area[n++] = TCPOPT_NOP;
	area[n++] = TCPOPT_NOP;
	area[n++] = TCPOPT_TS;
	area[n++] = TCPOPT_TS_LEN;
	put32(area + n, o->tsval);
	put32(area + n + 4, o->tsecr);
	n += 8;
	if (nsack > SACK_STRIP_MAX)
		nsack = SACK_STRIP_MAX;
	if (nsack) {
		area[n++] = TCPOPT_NOP;
		area[n++] = TCPOPT_NOP;
		area[n++] = TCPOPT_SACK;
		area[n++] = (uint8_t)(2 + 8 * nsack);
		memcpy(area + n, th + o->sack_off, 8 * nsack);
		n += 8 * nsack;
	}
	/* The new header is never longer than the old one with its
	 * extension (TSX and the pair alone outweigh Timestamps). */
	doff = TCP_HDR_LEN + n;
	memmove(th + doff, p->data + p->payoff, paylen);
	memcpy(th + TCP_HDR_LEN, area, n);
	th[TCP_OFF_DOFF] = (uint8_t)((doff / 4) << 4 |
				     (th[TCP_OFF_DOFF] & 0x0f));
	p->len = p->l4off + doff + paylen;
	set_ip_len(p);
	if (pkt_parse(p, p->data, p->len) != PKT_OK ||
	    tcpopt_parse(th + TCP_HDR_LEN, n, TCP_HDR_LEN, o) != TCPOPT_OK)
		return -1;
	pkt_tcp_csum_set(p);
	return 0;
}

int
tcpct_guard(struct pkt *p, struct tcpopt *o, const uint8_t *pair,
	    unsigned clen, size_t cap)
{
	uint8_t hdr[TCPOPT_TSX_LEN + TCPCT_EXT_MAX], sack[4 + 8 * SACK_STRIP_MAX];
	struct tcpct_ext_spec s = {
		.clen = clen, .ci = pair, .cr = pair + clen, .extra = sack,
	};
	size_t n, area, nsack = o->nsack, need;
	uint8_t *th = pkt_tcp(p);
	uint32_t paylen = p->paylen;

	if (!o->has_ts || o->has_tsx)
		return -1;
	/* From the packet: a translator may have rewritten them. */
	s.tsval = get32(th + o->ts_off);
	s.tsecr = get32(th + o->ts_off + 4);
	if (nsack > SACK_STRIP_MAX)
		nsack = SACK_STRIP_MAX;
	if (nsack) {
		sack[0] = TCPOPT_NOP;
		sack[1] = TCPOPT_NOP;
		sack[2] = TCPOPT_SACK;
		sack[3] = (uint8_t)(2 + 8 * nsack);
		memcpy(sack + 4, th + o->sack_off, 8 * nsack);
		s.extra_len = 4 + 8 * nsack;
	}
	n = tcpct_ext_build(hdr, sizeof(hdr), &s, &area);
	need = p->l4off + TCP_HDR_LEN + n + paylen;
	if (!n || need > cap || need > 0xffff)
		return -1;
	memmove(th + TCP_HDR_LEN + n, p->data + p->payoff, paylen);
	memcpy(th + TCP_HDR_LEN, hdr, n);
	th[TCP_OFF_DOFF] = (uint8_t)(((TCP_HDR_LEN + area) / 4) << 4 |
				     (th[TCP_OFF_DOFF] & 0x0f));
	p->len = need;
	set_ip_len(p);
	if (pkt_parse(p, p->data, p->len) != PKT_OK ||
	    tcpopt_parse(th + TCP_HDR_LEN, area, TCP_HDR_LEN, o) != TCPOPT_OK ||
	    tcpct_ext_parse(p, o) != TCPOPT_OK)
		return -1;
	pkt_tcp_csum_set(p);
	return 0;
}

bool
tcpct_put_cookie(uint8_t *buf, size_t *optlen, size_t cap,
		 const uint8_t *cookie, size_t len)
{
	size_t olen = 2 + len, pad = (4 - olen % 4) % 4;
	uint8_t *q = buf + *optlen;

	if (*optlen + pad + olen > cap || olen > 0xff)
		return false;
	memset(q, TCPOPT_NOP, pad);
	q += pad;
	q[0] = TCPOPT_COOKIE;
	q[1] = (uint8_t)olen;
	memcpy(q + 2, cookie, len);
	*optlen += pad + olen;
	return true;
}

size_t
tcpct_ext_build(uint8_t *buf, size_t cap, const struct tcpct_ext_spec *s,
		size_t *area_len)
{
	size_t ext, n;
	uint8_t pair[TCPCT_PAIR_MAX];

	if (s->clen < TCPCT_COOKIE_MIN || s->clen > TCPCT_COOKIE_MAX ||
	    s->extra_len % 4)
		return 0;
	/* TS pair, NOP NOP + Cookie-Pair (a multiple of 4), extra. */
	ext = 8 + 4 + 2 * s->clen + s->extra_len;
	if (ext % 4 || ext > (size_t)TCPCT_EXT_MAX || TCPOPT_TSX_LEN + ext > cap)
		return 0;
	buf[0] = TCPOPT_EXP;
	buf[1] = TCPOPT_TSX_LEN;
	buf[2] = (uint8_t)(ext / 4);
	buf[3] = TSX_SIZE_32;
	put32(buf + 4, s->tsval);
	put32(buf + 8, s->tsecr);
	n = 12;
	memcpy(pair, s->ci, s->clen);
	memcpy(pair + s->clen, s->cr, s->clen);
	if (!tcpct_put_cookie(buf, &n, cap, pair, (size_t)2 * s->clen))
		return 0;
	if (s->extra_len)
		memcpy(buf + n, s->extra, s->extra_len);
	n += s->extra_len;
	*area_len = TCPOPT_TSX_LEN;
	return n;
}
