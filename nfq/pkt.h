/*
 * IPv4, IPv6 and TCP headers: parse a packet handed up by the queue, and
 * build the few packets tcpctd originates.
 *
 * Parsers are "ok, then read": every field is read only after the remaining
 * length has been checked, and no length found in a packet is trusted beyond
 * the buffer the kernel gave us.  A packet that cannot be parsed yields a
 * named reason (enum pkt_verdict) that the caller counts.
 */
#ifndef NFQ_PKT_H
#define NFQ_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define IPV4_HDR_LEN	20
#define IPV6_HDR_LEN	40
#define TCP_HDR_LEN	20
#define UDP_HDR_LEN	8
#define TCP_OPT_MAX	40	/* RFC 9293 §3.1: data offset ≤ 15 words */

/* RFC 9293 §3.1 control bits. */
#define TCP_FIN	0x01
#define TCP_SYN	0x02
#define TCP_RST	0x04
#define TCP_PSH	0x08
#define TCP_ACK	0x10
#define TCP_URG	0x20
#define TCP_ECE	0x40
#define TCP_CWR	0x80

/* Offsets of TCP header fields. */
#define TCP_OFF_SPORT	0
#define TCP_OFF_DPORT	2
#define TCP_OFF_SEQ	4
#define TCP_OFF_ACK	8
#define TCP_OFF_DOFF	12
#define TCP_OFF_FLAGS	13
#define TCP_OFF_WIN	14
#define TCP_OFF_CSUM	16
#define TCP_OFF_URG	18

/* Why a packet was not parsed as TCP; the caller counts each. */
enum pkt_verdict {
	PKT_OK = 0,
	PKT_TRUNCATED,		/* shorter than the headers it announces */
	PKT_BAD_VERSION,
	PKT_BAD_IHL,		/* IPv4 header length < 20 */
	PKT_BAD_LENGTH,		/* IP total/payload length beyond the buffer */
	PKT_FRAGMENT,		/* any fragment: never parsed as TCP */
	PKT_NOT_TCP,
	PKT_EXTHDR_LIMIT,	/* IPv6 extension header chain too long */
	PKT_BAD_DOFF,		/* TCP data offset < 5 or past the segment */
	PKT_VERDICT_MAX
};

const char *pkt_verdict_name(enum pkt_verdict v);

/* An address of either family, stored as 16 bytes (IPv4 in the first 4). */
struct inaddr {
	uint8_t b[16];
};

/* A parsed packet; all offsets are from the start of the IP header. */
struct pkt {
	uint8_t *data;		/* the IP packet, owned by the caller */
	size_t len;		/* bytes of IP packet (the IP length, ≤ buffer) */
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint16_t l4off;		/* TCP header */
	uint16_t doff;		/* TCP header length in bytes */
	uint16_t payoff;	/* first payload byte */
	uint32_t paylen;	/* payload bytes */
	struct inaddr src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
};

/*
 * Parses buf (len bytes, an IPv4 or IPv6 packet) into p.  Returns PKT_OK or
 * the reason it refused.  IPv6 extension headers are walked, at most
 * PKT_EXTHDR_MAX of them; fragments of either family are refused.  Trailing
 * bytes past the IP length (link padding) are ignored.
 */
#define PKT_EXTHDR_MAX	8
enum pkt_verdict pkt_parse(struct pkt *p, uint8_t *buf, size_t len);

static inline uint8_t *
pkt_tcp(const struct pkt *p)
{
	return p->data + p->l4off;
}

static inline size_t
pkt_addrlen(uint8_t family)
{
	return family == AF_INET ? 4 : 16;
}

/* Sets the 32-bit TCP field at off to v, updating the checksum (RFC 1624)
 * unless csum_partial says the kernel will compute it later. */
void pkt_set32(struct pkt *p, unsigned off, uint32_t v, bool csum_partial);
void pkt_set16(struct pkt *p, unsigned off, uint16_t v, bool csum_partial);

/* Full TCP checksum check: returns true if the segment's checksum is right. */
bool pkt_tcp_csum_ok(const struct pkt *p);

/* Computes and stores the full TCP checksum of p (used for built packets). */
void pkt_tcp_csum_set(struct pkt *p);

/*
 * Writes an IP + TCP header for a segment from src:sport to dst:dport into
 * buf (cap bytes) with optlen bytes of TCP options taken from opts and paylen
 * bytes of payload from pay (may be NULL when paylen is 0), computes both
 * checksums and fills *p to describe it.  Returns the packet length, or 0 if
 * it does not fit in cap or optlen is not a multiple of 4 ≤ 40.
 */
struct pkt_tcp_spec {
	uint8_t family;
	const struct inaddr *src, *dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	uint8_t ttl;		/* hop limit; 64 when 0 */
	uint8_t tos;		/* IPv4 TOS / IPv6 traffic class */
	const uint8_t *opts;
	size_t optlen;
	const uint8_t *pay;
	size_t paylen;
};
size_t pkt_build_tcp(uint8_t *buf, size_t cap, const struct pkt_tcp_spec *s,
		     struct pkt *p);

/* Addresses s as a reply to p, from where p went to where it came from
 * (s points into p). */
static inline void
pkt_tcp_reply(struct pkt_tcp_spec *s, const struct pkt *p)
{
	s->family = p->family;
	s->src = &p->dst;
	s->dst = &p->src;
	s->sport = p->dport;
	s->dport = p->sport;
}

/*
 * UDP, for the DNS queries tcpctd makes for TCPCT transactions: parse a
 * UDP packet into p (ports, payoff, paylen from the UDP length; PKT_NOT_TCP
 * when it is not UDP), and build one from s (addresses, ports, ttl, pay;
 * the TCP fields are ignored).  Same returns as their TCP twins.
 */
enum pkt_verdict pkt_parse_udp(struct pkt *p, uint8_t *buf, size_t len);
size_t pkt_build_udp(uint8_t *buf, size_t cap, const struct pkt_tcp_spec *s,
		     struct pkt *p);

#endif
