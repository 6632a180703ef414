#include "dnsmsg.h"

#include "../nfq/bytes.h"

#define DNS_QR		0x80	/* in byte 2 */
#define DNS_OPCODE	0x78
#define DNS_TC		0x02
#define DNS_TYPE_OPT	41
#define DNS_PTR		0xc0
#define DNS_OPCODE_SHIFT 3
#define DNS_OP_QUERY	0	/* RFC 1035 §4.1.1 */
#define DNS_OP_NOTIFY	4	/* RFC 1996 */
#define DNS_OP_UPDATE	5	/* RFC 2136 */
#define DNS_OP_DSO	6	/* RFC 8490: no question (§5.4) */
#define DNS_LEN_PREFIX	DNSMSG_LEN_PREFIX
#define DNS_LABEL_PTR	0xc0	/* RFC 1035 §4.1.4 */
#define DNS_TYPE_IXFR	251	/* RFC 1995 */
#define DNS_TYPE_AXFR	252	/* RFC 5936 */

/* A query's question, walked as it passes to find its QTYPE. */
enum {
	DNSQ_DONE = 0,		/* not looked at (further) */
	DNSQ_LABEL,		/* a label's length byte next */
	DNSQ_IN_LABEL,
	DNSQ_TYPE_HI,
	DNSQ_TYPE_LO,
};

static void
question_byte(struct dnsframe *d, uint8_t c)
{
	switch (d->qstate) {
	case DNSQ_LABEL:
		if (c == 0)
			d->qstate = DNSQ_TYPE_HI;
		else if (c & DNS_LABEL_PTR)
			d->qstate = DNSQ_DONE;	/* no client compresses one */
		else {
			d->qleft = c;
			d->qstate = DNSQ_IN_LABEL;
		}
		break;
	case DNSQ_IN_LABEL:
		if (--d->qleft == 0)
			d->qstate = DNSQ_LABEL;
		break;
	case DNSQ_TYPE_HI:
		d->qtype = (uint16_t)(c << 8);
		d->qstate = DNSQ_TYPE_LO;
		break;
	case DNSQ_TYPE_LO:
		d->qtype |= c;
		if (d->qtype == DNS_TYPE_AXFR || d->qtype == DNS_TYPE_IXFR)
			d->xfr = true;
		d->qstate = DNSQ_DONE;
		break;
	default:
		break;
	}
}

bool
dnsmsg_is_request(const uint8_t flags[4])
{
	unsigned op = (flags[0] & DNS_OPCODE) >> DNS_OPCODE_SHIFT;
	unsigned qd = get16(flags + 2);

	if (flags[0] & DNS_QR)
		return false;
	if (op == DNS_OP_DSO)
		return qd == 0;
	return (op == DNS_OP_QUERY || op == DNS_OP_NOTIFY ||
		op == DNS_OP_UPDATE) && qd == 1;
}

enum dnsframe_verdict
dnsframe_feed(struct dnsframe *d, const uint8_t *b, size_t n)
{
	while (n) {
		if (d->pos < DNS_LEN_PREFIX) {
			if (d->pos == 0) {
				d->started++;
				d->qstate = d->server ? DNSQ_DONE : DNSQ_LABEL;
			}
			d->len = (uint16_t)(d->len << 8 | *b++);
			n--;
			if (++d->pos == DNS_LEN_PREFIX &&
			    d->len < DNSMSG_HDR_LEN)
				return DNSFRAME_SHORT;
		} else if (d->pos < DNSFRAME_JUDGED) {
			if (d->pos >= DNS_LEN_PREFIX + 2)
				d->flags[d->pos - DNS_LEN_PREFIX - 2] = *b;
			b++;
			n--;
			if (++d->pos == DNSFRAME_JUDGED && !d->server) {
				if (!dnsmsg_is_request(d->flags))
					return DNSFRAME_NOT_REQUEST;
				if (d->flags[0] & DNS_OPCODE)
					d->qstate = DNSQ_DONE;
			}
		} else if (d->qstate != DNSQ_DONE &&
			   d->pos >= DNS_LEN_PREFIX + DNSMSG_HDR_LEN) {
			question_byte(d, *b++);
			n--;
			d->pos++;
		} else {
			size_t left = DNS_LEN_PREFIX + (size_t)d->len - d->pos;
			size_t take;

			/* Up to the question, when it is to be walked. */
			if (d->qstate != DNSQ_DONE &&
			    left > DNS_LEN_PREFIX + DNSMSG_HDR_LEN - d->pos)
				left = DNS_LEN_PREFIX + DNSMSG_HDR_LEN - d->pos;
			take = n < left ? n : left;
			b += take;
			n -= take;
			d->pos += (uint32_t)take;
		}
		if (d->pos >= DNSFRAME_JUDGED &&
		    d->pos == DNS_LEN_PREFIX + (uint32_t)d->len) {
			d->pos = 0;
			d->len = 0;
		}
	}
	return DNSFRAME_OK;
}

bool
dnsframe_begins_whole(const uint8_t *b, size_t n)
{
	struct dnsframe d = { 0 };

	return dnsframe_feed(&d, b, n) == DNSFRAME_OK && dnsframe_whole(&d);
}

bool
dnsmsg_is_query(const uint8_t *msg, size_t len)
{
	return len >= DNSMSG_HDR_LEN && !(msg[2] & (DNS_QR | DNS_OPCODE)) &&
	       get16(msg + 4) == 1;
}

bool
dnsmsg_is_whole_answer(const uint8_t *msg, size_t len, uint16_t id)
{
	return len >= DNSMSG_HDR_LEN && get16(msg) == id &&
	       (msg[2] & DNS_QR) && !(msg[2] & DNS_TC);
}

/* Moves *off past the name there; false when it runs out. */
static bool
skip_name(const uint8_t *msg, size_t len, size_t *off)
{
	size_t o = *off;

	while (o < len) {
		uint8_t l = msg[o];

		if ((l & DNS_PTR) == DNS_PTR) {
			if (o + 2 > len)
				return false;
			*off = o + 2;
			return true;
		}
		if (l & DNS_PTR)
			return false;
		o += 1 + (size_t)l;
		if (!l) {
			*off = o;
			return true;
		}
	}
	return false;
}

int
dnsmsg_edns_at_least(uint8_t *msg, size_t len, uint16_t size)
{
	size_t off = DNSMSG_HDR_LEN;
	unsigned qd, rr, i;

	if (len < DNSMSG_HDR_LEN)
		return -1;
	qd = get16(msg + 4);
	rr = (unsigned)get16(msg + 6) + get16(msg + 8) + get16(msg + 10);
	for (i = 0; i < qd; i++) {
		if (!skip_name(msg, len, &off) || len - off < 4)
			return -1;
		off += 4;
	}
	for (i = 0; i < rr; i++) {
		size_t rdlen;

		if (!skip_name(msg, len, &off) || len - off < 10)
			return -1;
		rdlen = get16(msg + off + 8);
		if (get16(msg + off) == DNS_TYPE_OPT) {
			if (get16(msg + off + 2) < size)
				put16(msg + off + 2, size);
			return 1;
		}
		if (len - off - 10 < rdlen)
			return -1;
		off += 10 + rdlen;
	}
	return 0;
}
