#include "pkt.h"

#include <netinet/in.h>
#include <string.h>

#include "bytes.h"
#include "csum.h"

/* IPv4 flags/fragment offset: MF bit and 13-bit offset (RFC 791 §3.1). */
#define IPV4_DF		0x4000
#define IPV4_MF		0x2000
#define IPV4_OFFMASK	0x1fff

static const char *const verdict_names[PKT_VERDICT_MAX] = {
	[PKT_OK] = "ok",
	[PKT_TRUNCATED] = "truncated",
	[PKT_BAD_VERSION] = "bad_ip_version",
	[PKT_BAD_IHL] = "bad_ipv4_ihl",
	[PKT_BAD_LENGTH] = "bad_ip_length",
	[PKT_FRAGMENT] = "fragment",
	[PKT_NOT_TCP] = "not_tcp",
	[PKT_EXTHDR_LIMIT] = "ipv6_exthdr_limit",
	[PKT_BAD_DOFF] = "bad_tcp_doff",
};

const char *
pkt_verdict_name(enum pkt_verdict v)
{
	return (unsigned)v < PKT_VERDICT_MAX ? verdict_names[v] : "unknown";
}

static enum pkt_verdict
parse_ipv4(struct pkt *p, size_t len, uint8_t proto)
{
	const uint8_t *ip = p->data;
	size_t ihl, tot;

	if (len < IPV4_HDR_LEN)
		return PKT_TRUNCATED;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if (ihl < IPV4_HDR_LEN)
		return PKT_BAD_IHL;
	tot = get16(ip + 2);
	if (tot < ihl || tot > len)
		return PKT_BAD_LENGTH;
	if (get16(ip + 6) & (IPV4_MF | IPV4_OFFMASK))
		return PKT_FRAGMENT;
	if (ip[9] != proto)
		return PKT_NOT_TCP;
	p->family = AF_INET;
	p->len = tot;
	p->l4off = (uint16_t)ihl;
	memset(&p->src, 0, sizeof(p->src));
	memset(&p->dst, 0, sizeof(p->dst));
	memcpy(p->src.b, ip + 12, 4);
	memcpy(p->dst.b, ip + 16, 4);
	return PKT_OK;
}

/*
 * RFC 8200 §4: walk Hop-by-Hop, Routing and Destination Options headers by
 * their length byte; a Fragment header, ESP, or an unknown header ends the
 * walk without TCP.
 */
static enum pkt_verdict
parse_ipv6(struct pkt *p, size_t len, uint8_t proto)
{
	const uint8_t *ip = p->data;
	size_t off = IPV6_HDR_LEN, tot;
	uint8_t next;
	int n;

	if (len < IPV6_HDR_LEN)
		return PKT_TRUNCATED;
	tot = IPV6_HDR_LEN + (size_t)get16(ip + 4);
	if (tot > len)
		return PKT_BAD_LENGTH;	/* also jumbograms (length 0 is < 40) */
	next = ip[6];
	for (n = 0;; n++) {
		if (next == proto)
			break;
		if (next == IPPROTO_FRAGMENT)
			return PKT_FRAGMENT;
		if (next != IPPROTO_HOPOPTS && next != IPPROTO_ROUTING &&
		    next != IPPROTO_DSTOPTS)
			return PKT_NOT_TCP;
		if (n == PKT_EXTHDR_MAX)
			return PKT_EXTHDR_LIMIT;
		if (tot - off < 8)
			return PKT_TRUNCATED;
		next = ip[off];
		/* Hdr Ext Len counts 8-octet units beyond the first 8. */
		if (tot - off < 8 + (size_t)ip[off + 1] * 8)
			return PKT_TRUNCATED;
		off += 8 + (size_t)ip[off + 1] * 8;
	}
	p->family = AF_INET6;
	p->len = tot;
	p->l4off = (uint16_t)off;
	memcpy(p->src.b, ip + 8, 16);
	memcpy(p->dst.b, ip + 24, 16);
	return PKT_OK;
}

/* The IP header of a packet of protocol proto (PKT_NOT_TCP: another). */
static enum pkt_verdict
parse_ip(struct pkt *p, uint8_t *buf, size_t len, uint8_t proto)
{
	if (len > 0xffff + IPV6_HDR_LEN)
		len = 0xffff + IPV6_HDR_LEN;
	p->data = buf;
	if (len < 1)
		return PKT_TRUNCATED;
	switch (buf[0] >> 4) {
	case 4:
		return parse_ipv4(p, len, proto);
	case 6:
		return parse_ipv6(p, len, proto);
	default:
		return PKT_BAD_VERSION;
	}
}

/* Writes the IP header of a len-byte packet of proto from s into buf
 * (zeroed by the caller); the IPv4 header gets its checksum. */
static void
put_ip(uint8_t *ip, const struct pkt_tcp_spec *s, uint8_t proto, size_t len,
       bool df)
{
	uint8_t ttl = s->ttl ? s->ttl : 64;

	if (s->family == AF_INET) {
		ip[0] = 0x45;
		ip[1] = s->tos;
		put16(ip + 2, (uint16_t)len);
		if (df)
			put16(ip + 6, IPV4_DF);
		ip[8] = ttl;
		ip[9] = proto;
		memcpy(ip + 12, s->src->b, 4);
		memcpy(ip + 16, s->dst->b, 4);
		put16(ip + 10, csum_fold(csum_add(0, ip, IPV4_HDR_LEN)));
	} else {
		put32(ip, 6u << 28 | (uint32_t)s->tos << 20);
		put16(ip + 4, (uint16_t)(len - IPV6_HDR_LEN));
		ip[6] = proto;
		ip[7] = ttl;
		memcpy(ip + 8, s->src->b, 16);
		memcpy(ip + 24, s->dst->b, 16);
	}
}

/* The pseudo-header sum (RFC 9293 §3.1, RFC 8200 §8.1) of either family. */
static uint32_t
pseudo(uint8_t family, const struct inaddr *src, const struct inaddr *dst,
       uint8_t proto, uint32_t l4len)
{
	return family == AF_INET ? csum_pseudo4(src->b, dst->b, proto, l4len)
				 : csum_pseudo6(src->b, dst->b, proto, l4len);
}

enum pkt_verdict
pkt_parse_udp(struct pkt *p, uint8_t *buf, size_t len)
{
	enum pkt_verdict v = parse_ip(p, buf, len, IPPROTO_UDP);
	const uint8_t *uh;
	size_t l4len;

	if (v != PKT_OK)
		return v;
	l4len = p->len - p->l4off;
	uh = buf + p->l4off;
	/* RFC 768: the UDP length covers header and data. */
	if (l4len < UDP_HDR_LEN || get16(uh + 4) < UDP_HDR_LEN ||
	    get16(uh + 4) > l4len)
		return PKT_TRUNCATED;
	p->doff = UDP_HDR_LEN;
	p->payoff = (uint16_t)(p->l4off + UDP_HDR_LEN);
	p->paylen = (uint32_t)(get16(uh + 4) - UDP_HDR_LEN);
	p->sport = get16(uh);
	p->dport = get16(uh + 2);
	p->seq = p->ack = 0;
	p->flags = 0;
	p->win = 0;
	return PKT_OK;
}

size_t
pkt_build_udp(uint8_t *buf, size_t cap, const struct pkt_tcp_spec *s,
	      struct pkt *p)
{
	size_t iphl = s->family == AF_INET ? IPV4_HDR_LEN : IPV6_HDR_LEN;
	size_t len = iphl + UDP_HDR_LEN + s->paylen;
	uint8_t *uh;
	uint32_t sum;
	uint16_t c;

	if (len > cap || len > 0xffff)
		return 0;
	memset(buf, 0, iphl + UDP_HDR_LEN);
	put_ip(buf, s, IPPROTO_UDP, len, false);
	uh = buf + iphl;
	put16(uh, s->sport);
	put16(uh + 2, s->dport);
	put16(uh + 4, (uint16_t)(UDP_HDR_LEN + s->paylen));
	if (s->paylen)
		memcpy(uh + UDP_HDR_LEN, s->pay, s->paylen);
	sum = pseudo(s->family, s->src, s->dst, IPPROTO_UDP,
		     (uint32_t)(UDP_HDR_LEN + s->paylen));
	c = csum_fold(csum_add(sum, uh, UDP_HDR_LEN + s->paylen));
	put16(uh + 6, c ? c : 0xffff);	/* RFC 768: 0 means none */
	return pkt_parse_udp(p, buf, len) == PKT_OK ? len : 0;
}

enum pkt_verdict
pkt_parse(struct pkt *p, uint8_t *buf, size_t len)
{
	enum pkt_verdict v = parse_ip(p, buf, len, IPPROTO_TCP);
	const uint8_t *th;
	size_t l4len;

	if (v != PKT_OK)
		return v;
	l4len = p->len - p->l4off;
	if (l4len < TCP_HDR_LEN)
		return PKT_TRUNCATED;
	th = buf + p->l4off;
	p->doff = (uint16_t)((th[TCP_OFF_DOFF] >> 4) * 4);
	if (p->doff < TCP_HDR_LEN || p->doff > l4len)
		return PKT_BAD_DOFF;
	p->payoff = (uint16_t)(p->l4off + p->doff);
	p->paylen = (uint32_t)(l4len - p->doff);
	p->sport = get16(th + TCP_OFF_SPORT);
	p->dport = get16(th + TCP_OFF_DPORT);
	p->seq = get32(th + TCP_OFF_SEQ);
	p->ack = get32(th + TCP_OFF_ACK);
	p->flags = th[TCP_OFF_FLAGS];
	p->win = get16(th + TCP_OFF_WIN);
	return PKT_OK;
}

/* Options may place a value at an odd offset; the checksum pairs its bytes
 * the other way round there, which csum_replace_run() knows. */
static void
set_field(struct pkt *p, unsigned off, const uint8_t *v, size_t len,
	  bool csum_partial)
{
	uint8_t *th = pkt_tcp(p), old[4];

	if (memcmp(th + off, v, len) == 0)
		return;
	memcpy(old, th + off, len);
	memcpy(th + off, v, len);
	if (!csum_partial)
		csum_replace_run(th + TCP_OFF_CSUM, off, old, v, len);
}

void
pkt_set32(struct pkt *p, unsigned off, uint32_t v, bool csum_partial)
{
	uint8_t b[4];

	put32(b, v);
	set_field(p, off, b, 4, csum_partial);
}

void
pkt_set16(struct pkt *p, unsigned off, uint16_t v, bool csum_partial)
{
	uint8_t b[2];

	put16(b, v);
	set_field(p, off, b, 2, csum_partial);
}

static uint32_t
tcp_sum(const struct pkt *p)
{
	uint32_t l4len = (uint32_t)(p->len - p->l4off);

	return csum_add(pseudo(p->family, &p->src, &p->dst, IPPROTO_TCP, l4len),
			p->data + p->l4off, l4len);
}

bool
pkt_tcp_csum_ok(const struct pkt *p)
{
	return csum_fold(tcp_sum(p)) == 0;
}

void
pkt_tcp_csum_set(struct pkt *p)
{
	uint8_t *th = pkt_tcp(p);

	put16(th + TCP_OFF_CSUM, 0);
	put16(th + TCP_OFF_CSUM, csum_fold(tcp_sum(p)));
}

size_t
pkt_build_tcp(uint8_t *buf, size_t cap, const struct pkt_tcp_spec *s,
	      struct pkt *p)
{
	size_t iphl = s->family == AF_INET ? IPV4_HDR_LEN : IPV6_HDR_LEN;
	size_t doff = TCP_HDR_LEN + s->optlen;
	size_t len = iphl + doff + s->paylen;
	uint8_t *th;

	if (s->optlen > TCP_OPT_MAX || s->optlen % 4 || len > cap ||
	    len > 0xffff)
		return 0;
	memset(buf, 0, iphl + TCP_HDR_LEN);
	/* DF: RFC 9293 relies on PMTUD. */
	put_ip(buf, s, IPPROTO_TCP, len, true);
	th = buf + iphl;
	put16(th + TCP_OFF_SPORT, s->sport);
	put16(th + TCP_OFF_DPORT, s->dport);
	put32(th + TCP_OFF_SEQ, s->seq);
	put32(th + TCP_OFF_ACK, s->ack);
	th[TCP_OFF_DOFF] = (uint8_t)(doff / 4) << 4;
	th[TCP_OFF_FLAGS] = s->flags;
	put16(th + TCP_OFF_WIN, s->win);
	if (s->optlen)
		memcpy(th + TCP_HDR_LEN, s->opts, s->optlen);
	if (s->paylen)
		memcpy(th + doff, s->pay, s->paylen);

	if (pkt_parse(p, buf, len) != PKT_OK)
		return 0;
	pkt_tcp_csum_set(p);
	return len;
}
