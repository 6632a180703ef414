#include "tcpopt.h"

#include <string.h>

#include "bytes.h"

static const char *const verdict_names[TCPOPT_VERDICT_MAX] = {
	[TCPOPT_OK] = "ok",
	[TCPOPT_OVERRUN] = "option_overrun",
	[TCPOPT_BAD_LEN] = "option_bad_length",
	[TCPOPT_DUPLICATE] = "option_duplicate",
	[TCPOPT_EXCLUSIVE] = "option_exclusive",
};

const char *
tcpopt_verdict_name(enum tcpopt_verdict v)
{
	return (unsigned)v < TCPOPT_VERDICT_MAX ? verdict_names[v] : "unknown";
}

/* RFC 6013 §3.1, §3.2: Cookie-less 2, Cookie 10..18, Cookie-Pair 18..34,
 * all even.  Anything else is not a TCPCT option and is ignored. */
static bool
cookie_len_ok(uint8_t olen)
{
	return olen % 2 == 0 && (olen == 2 || (olen >= 10 && olen <= 34));
}

/* RFC 6013 §3.3: Size 1, 2 or 4 (32-, 64- or 128-bit timestamps). */
static bool
tsx_size_ok(uint8_t size)
{
	return size == 1 || size == 2 || size == 4;
}

#define TSX_SIZE_MASK	0x07
#define TFO_EXP_HDR	4	/* kind, length, ExID */

/* RFC 7413 §4.1.1: a cookie of 0 (a request) or 4..16 bytes, even. */
static bool
tfo_cookie_len_ok(unsigned clen)
{
	return clen % 2 == 0 &&
	       (clen == 0 || (clen >= TCPOPT_TFO_COOKIE_MIN &&
			      clen <= TCPOPT_TFO_COOKIE_MAX));
}

/* Records a Fast Open option whose cookie is clen bytes at body. */
static enum tcpopt_verdict
take_tfo(struct tcpopt *o, unsigned clen, size_t body, bool exp)
{
	if (!tfo_cookie_len_ok(clen))
		return TCPOPT_OK;
	if (o->has_tfo)
		return TCPOPT_DUPLICATE;
	o->has_tfo = true;
	o->tfo_exp = exp;
	o->tfo_len = (uint8_t)clen;
	o->tfo_off = (uint16_t)body;
	return TCPOPT_OK;
}

enum tcpopt_verdict
tcpopt_parse(const uint8_t *opts, size_t len, unsigned hdr_off,
	     struct tcpopt *o)
{
	memset(o, 0, sizeof(*o));
	return tcpopt_parse_more(opts, len, hdr_off, o);
}

enum tcpopt_verdict
tcpopt_parse_more(const uint8_t *opts, size_t len, unsigned hdr_off,
		  struct tcpopt *o)
{
	size_t i = 0;

	while (i < len) {
		uint8_t kind = opts[i], olen;

		if (kind == TCPOPT_EOL)
			break;
		if (kind == TCPOPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2)
			return TCPOPT_OVERRUN;
		olen = opts[i + 1];
		if (olen < 2)
			return TCPOPT_BAD_LEN;
		if (olen > len - i)
			return TCPOPT_OVERRUN;
		switch (kind) {
		case TCPOPT_MSS:
			if (olen != TCPOPT_MSS_LEN)
				return TCPOPT_BAD_LEN;
			if (o->has_mss)
				return TCPOPT_DUPLICATE;
			o->has_mss = true;
			o->mss = get16(opts + i + 2);
			break;
		case TCPOPT_WSCALE:
			if (olen != TCPOPT_WSCALE_LEN)
				return TCPOPT_BAD_LEN;
			if (o->has_wscale)
				return TCPOPT_DUPLICATE;
			o->has_wscale = true;
			o->wscale = opts[i + 2];
			if (o->wscale > TCPOPT_WSCALE_MAX)
				o->wscale = TCPOPT_WSCALE_MAX;
			break;
		case TCPOPT_SACK_PERM:
			if (olen != TCPOPT_SACK_PERM_LEN)
				return TCPOPT_BAD_LEN;
			o->sack_perm = true;
			break;
		case TCPOPT_SACK:
			if ((olen - 2) % 8 || olen == 2)
				return TCPOPT_BAD_LEN;
			if (o->nsack)
				return TCPOPT_DUPLICATE;
			/* The standard area holds 4 blocks (RFC 2018 §3),
			 * RFC 6013's header extension up to 31.  The first
			 * 4 are kept, the most recent (RFC 2018 §4), and the
			 * rest ignored: SACK is advisory, and a sender told
			 * fewer blocks only retransmits more. */
			o->nsack = (uint8_t)((olen - 2) / 8);
			if (o->nsack > TCPOPT_SACK_MAX_BLOCKS)
				o->nsack = TCPOPT_SACK_MAX_BLOCKS;
			o->sack_off = (uint16_t)(hdr_off + i + 2);
			break;
		case TCPOPT_TS:
			if (olen != TCPOPT_TS_LEN)
				return TCPOPT_BAD_LEN;
			if (o->has_ts)
				return TCPOPT_DUPLICATE;
			o->has_ts = true;
			o->tsval = get32(opts + i + 2);
			o->tsecr = get32(opts + i + 6);
			o->ts_off = (uint16_t)(hdr_off + i + 2);
			if (o->has_tsx)
				return TCPOPT_EXCLUSIVE;
			break;
		case TCPOPT_COOKIE:
			if (!cookie_len_ok(olen))
				break;
			if (o->ck_len)
				return TCPOPT_EXCLUSIVE;
			o->ck_len = olen;
			o->ck_off = (uint16_t)(hdr_off + i + 2);
			break;
		case TCPOPT_TFO: {
			enum tcpopt_verdict v = take_tfo(o, olen - 2u,
							 hdr_off + i + 2, false);

			if (v != TCPOPT_OK)
				return v;
			break;
		}
		case TCPOPT_EXP:
			/* Kind 254 is shared (RFC 6994): TFO's form starts
			 * with its ExID; a 4-byte one without it is TSX. */
			if (olen >= TFO_EXP_HDR &&
			    get16(opts + i + 2) == TCPOPT_EXID_TFO) {
				enum tcpopt_verdict v = take_tfo(
					o, olen - TFO_EXP_HDR,
					hdr_off + i + TFO_EXP_HDR, true);

				if (v != TCPOPT_OK)
					return v;
				break;
			}
			if (olen != TCPOPT_TSX_LEN ||
			    !tsx_size_ok(opts[i + 3] & TSX_SIZE_MASK))
				break;
			if (o->has_tsx)
				return TCPOPT_DUPLICATE;
			if (o->has_ts)
				return TCPOPT_EXCLUSIVE;
			o->has_tsx = true;
			o->tsx_extend = opts[i + 2];
			o->tsx_size = opts[i + 3] & TSX_SIZE_MASK;
			break;
		default:
			break;
		}
		i += olen;
	}
	return TCPOPT_OK;
}

size_t
tcpopt_build(uint8_t *buf, const struct tcpopt_spec *s)
{
	uint8_t *p = buf;

	if (s->mss) {
		p[0] = TCPOPT_MSS;
		p[1] = TCPOPT_MSS_LEN;
		put16(p + 2, s->mss);
		p += 4;
	}
	if (s->ts) {
		if (s->sack_perm) {
			p[0] = TCPOPT_SACK_PERM;
			p[1] = TCPOPT_SACK_PERM_LEN;
		} else {
			p[0] = TCPOPT_NOP;
			p[1] = TCPOPT_NOP;
		}
		p[2] = TCPOPT_TS;
		p[3] = TCPOPT_TS_LEN;
		put32(p + 4, s->tsval);
		put32(p + 8, s->tsecr);
		p += 12;
	} else if (s->sack_perm) {
		p[0] = TCPOPT_NOP;
		p[1] = TCPOPT_NOP;
		p[2] = TCPOPT_SACK_PERM;
		p[3] = TCPOPT_SACK_PERM_LEN;
		p += 4;
	}
	if (s->wscale) {
		p[0] = TCPOPT_NOP;
		p[1] = TCPOPT_WSCALE;
		p[2] = TCPOPT_WSCALE_LEN;
		p[3] = s->wscale_shift;
		p += 4;
	}
	return (size_t)(p - buf);
}

bool
tcpopt_put_tfo(uint8_t *buf, size_t *optlen, size_t cap,
	       const uint8_t *cookie, size_t len, bool exp)
{
	size_t olen = (exp ? TFO_EXP_HDR : 2) + len;
	size_t pad = (4 - olen % 4) % 4;
	uint8_t *p = buf + *optlen;

	if (*optlen + pad + olen > cap || !tfo_cookie_len_ok((unsigned)len))
		return false;
	memset(p, TCPOPT_NOP, pad);
	p += pad;
	p[0] = exp ? TCPOPT_EXP : TCPOPT_TFO;
	p[1] = (uint8_t)olen;
	if (exp)
		put16(p + 2, TCPOPT_EXID_TFO);
	memcpy(p + olen - len, cookie, len);
	*optlen += pad + olen;
	return true;
}
