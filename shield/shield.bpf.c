/*
 * The kernel shield: a tc (clsact ingress, direct action) program that does
 * the stateless part of the handshake before any packet crosses NFQUEUE.
 *
 *	classic SYN to a service	the cookie SYN-ACK, built in place and
 *					sent back out of the same interface
 *	ACK of no live flow		its cookie checked: passed on marked, or
 *					dropped and counted
 *	TCPCT, Fast Open, SYN data,	passed on while the daemon keeps up
 *	options it cannot read, a	(shield_config.special_pass); past that
 *	packet to a protected address	answered classically, or dropped
 *	it cannot read at all
 *	a live flow's, allowed sources,	passed on untouched, to the queue rules
 *	other ports and protocols	and the daemon as before
 *
 * The cookie is shield/syncookie.h's, the very code the daemon runs; the
 * SYN-ACK is the one gateway/handshake.c's handshake_synack() builds, byte
 * for byte (tests/unit/test_shield.c holds the two side by side).  What the
 * program cannot read it passes on: the daemon decides.  The headers are
 * read at once with bpf_skb_load_bytes, which sees past the skb's linear
 * part (a PF_PACKET ring's packets arrive non-linear), so none is passed
 * on for lack of a pull; the SYN-ACK is built over them and written back
 * at once.  Checksums are summed by the kernel (bpf_csum_diff), in the
 * byte order of memory, as the packet holds them.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

typedef __u8 uint8_t;
typedef __u16 uint16_t;
typedef __u32 uint32_t;
typedef __u64 uint64_t;
typedef __s64 int64_t;

#include "maps.h"

#define ETH_HDR_LEN	14
#define ETH_P_IPV4	0x0800
#define ETH_P_IPV6	0x86dd
#define IPV4_HDR_LEN	20
#define IPV6_HDR_LEN	40
#define IPPROTO_TCP_	6
/* RFC 8200 §4's extension headers, and AH (RFC 4302). */
#define IPPROTO_HOPOPTS_	0
#define IPPROTO_ROUTING_	43
#define IPPROTO_FRAGMENT_	44
#define IPPROTO_AH_		51
#define IPPROTO_DSTOPTS_	60
#define IPV4_DF		0x4000
#define IPV4_FRAG_MASK	0x3fff		/* MF and the offset */
#define TCP_HDR_LEN	20
#define TCP_OPT_MAX	40
#define TTL_DEFAULT	64		/* nfq/pkt.c's put_ip */

#define TCP_FIN		0x01
#define TCP_SYN		0x02
#define TCP_RST		0x04
#define TCP_ACK		0x10
#define TCP_ECE		0x40
#define TCP_CWR		0x80

#define TCPOPT_EOL		0
#define TCPOPT_NOP		1
#define TCPOPT_MSS		2
#define TCPOPT_WSCALE		3
#define TCPOPT_WSCALE_MAX	14	/* RFC 7323 §2.3 */
#define TCPOPT_SACK_PERM	4
#define TCPOPT_SACK		5
#define TCPOPT_TS		8
#define TCPOPT_TFO		34	/* RFC 7413 */
#define TCPOPT_COOKIE		253	/* RFC 6013 (TCPCT) */
#define TCPOPT_EXP		254	/* RFC 6994: TSX, TFO's old form */

/* RFC 9293 §3.7.1: the MSS to assume when a SYN carries none. */
#define DEFAULT_MSS_V4	536
#define DEFAULT_MSS_V6	1220

#define NS_PER_S	1000000000ull
#define NS_PER_MS	1000000ull

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shield_config);
} shield_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHIELD_MAX_SERVICES);
	__type(key, struct shield_service_key);
	__type(value, struct shield_service);
} shield_services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHIELD_MAX_SERVICES);
	__type(key, struct shield_addr);
	__type(value, __u8);
} shield_addrs SEC(".maps");

/* Sized by the daemon before loading: its flow tables' capacity. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHIELD_MAX_TUPLES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct shield_tuple);
	__type(value, __u32);		/* its record's slot */
} shield_flows SEC(".maps");

/* The flows' records (maps.h's struct shield_flow), a slot per entry of
 * the workers' flow tables: the daemon maps the array into its memory and
 * sizes it before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct shield_flow);
} shield_recs SEC(".maps");

/* The places in the services' backlogs the daemon lends each worker's
 * binding flows (SHIELD_TICKET_SLOT): one taken for each backend SYN the
 * program sends; mapped by the daemon, which lends them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SHIELD_MAX_WORKERS * SHIELD_MAX_SERVICES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);	/* an array's values are 8-byte aligned */
} shield_tickets SEC(".maps");

/* Each worker's events ring, which the daemon makes and reads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SHIELD_MAX_WORKERS);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, SHIELD_RING_BYTES);
	});
} shield_rings SEC(".maps");

/* This CPU's count of the SYNs passed to the daemon this second
 * (shield_config.special_pass), as a rate word of shield/ratelimit.h. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} shield_special SEC(".maps");

/* --deny and --allow: deny wins, as in the rules. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SHIELD_MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct shield_prefix);
	__type(value, __u8);
} shield_deny SEC(".maps"), shield_allow SEC(".maps");

/* The daemon's --synack-rate counts, mapped into it (shield/ratelimit.h);
 * sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} shield_rate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SHIELD_COUNTER_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} shield_counters SEC(".maps");

static __always_inline void
count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&shield_counters, &c);

	if (v)
		*v += 1;
}

/* What the program learnt of a packet.  Its addresses, ports and family
 * are the cookie's input as they stand, the sender's as the client's
 * (in.cisn is set where a cookie is made or checked); the addresses side
 * by side, the pseudo-header's in one sum. */
struct seg {
	struct cookie_input in;
	__u64 mono_ns;			/* when it came: the clock is read once */
	__u8 flags;
	/* Where the TCP header is: in the frame, behind the Ethernet header
	 * and a bare IP header, as in the SYN-ACK; in the packet, behind its
	 * IPv4 options or IPv6 extension headers too. */
	__u32 hl, l4off;
	__u32 seq, ack;
	__u16 win;
	__u16 csum;			/* as received, in memory's order */
	__u32 l4len;			/* header, options and data */
	__u32 optlen;
};

/* The options the SYN-ACK and a carried segment depend on (nfq/tcpopt.c's
 * reading); offsets from the TCP header. */
struct opts {
	__u8 has_mss, has_ws, sack_perm, has_ts;
	__u8 ws;
	__u8 special;			/* TCPCT, TSX or Fast Open */
	__u8 nsack;			/* SACK blocks, at most 4 */
	__u16 mss;
	__u16 ts_off, sack_off;		/* TSval; the first block */
	__u32 tsval, tsecr;
};

/* The headers as read (Ethernet, IP, TCP with its options), and the
 * SYN-ACK's as built over them.  Indices into the frame are masked with
 * FRAME_MASK, so that the verifier sees every read of an option's bytes
 * (up to 10) inside it. */
#define HDR_MAX		(ETH_HDR_LEN + IPV6_HDR_LEN + TCP_HDR_LEN + TCP_OPT_MAX)
#define FRAME_MASK	127
#define FRAME_BUF	(FRAME_MASK + 1 + 16)

/* The frame, and its options being read: where they start (base), their
 * length, where the next one starts, what was found. */
struct optctx {
	__u8 f[FRAME_BUF];
	__u32 base, len, i;
	struct opts o;
};

/* A packet's working space: more than BPF's 512 bytes of stack hold. */
struct scratch {
	struct seg s;
	struct optctx c;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} shield_scratch SEC(".maps");

static __always_inline __u16
get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static __always_inline __u32
get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* v, which the compiler may no longer reason about: the mask that
 * follows stays in the program for the verifier to see. */
static __always_inline __u32
opaque(__u32 v)
{
	asm volatile("" : "+r"(v));
	return v;
}

/*
 * Reads the option at c->i like nfq/tcpopt.c: 1 when there may be more, 0
 * at the end, -1 for anything nfq/tcpopt.c would refuse (a length that
 * overruns, a duplicate), which the daemon is left to judge and count.  A
 * global function, which the verifier checks once whatever led to it:
 * inlined in a loop, every path through every option would be its own.
 */
__noinline int
opt_step(struct optctx *c)
{
	const __u8 *p;
	__u32 i, len;
	__u8 kind, olen;

	if (!c)
		return -1;
	i = c->i;
	len = c->len;
	if (i >= len || i >= TCP_OPT_MAX)
		return 0;
	p = c->f + (opaque(c->base + i) & FRAME_MASK);
	kind = p[0];
	if (kind == TCPOPT_EOL)
		return 0;
	if (kind == TCPOPT_NOP) {
		c->i = i + 1;
		return 1;
	}
	if (len - i < 2)
		return -1;
	olen = p[1];
	if (olen < 2 || olen > len - i)
		return -1;
	switch (kind) {
	case TCPOPT_MSS:
		if (olen != 4 || c->o.has_mss)
			return -1;
		c->o.has_mss = 1;
		c->o.mss = get16(p + 2);
		break;
	case TCPOPT_WSCALE:
		if (olen != 3 || c->o.has_ws)
			return -1;
		c->o.has_ws = 1;
		c->o.ws = p[2] > TCPOPT_WSCALE_MAX ? TCPOPT_WSCALE_MAX : p[2];
		break;
	case TCPOPT_SACK_PERM:
		if (olen != 2)
			return -1;
		c->o.sack_perm = 1;
		break;
	case TCPOPT_SACK:
		if ((olen - 2) % 8 || olen == 2 || c->o.nsack)
			return -1;
		/* At most 4 fit in the standard area (RFC 2018 §3). */
		c->o.nsack = (__u8)((olen - 2) / 8);
		c->o.sack_off = (__u16)(TCP_HDR_LEN + i + 2);
		break;
	case TCPOPT_TS:
		if (olen != 10 || c->o.has_ts)
			return -1;
		c->o.has_ts = 1;
		c->o.tsval = get32(p + 2);
		c->o.tsecr = get32(p + 6);
		c->o.ts_off = (__u16)(TCP_HDR_LEN + i + 2);
		break;
	case TCPOPT_COOKIE:
	case TCPOPT_EXP:
	case TCPOPT_TFO:
		c->o.special = 1;
		break;
	default:
		break;
	}
	c->i = i + olen;
	return 1;
}

/* All of them, len bytes at base: 0, or -1 as opt_step. */
static __always_inline int
parse_opts(struct optctx *c, __u32 base, __u32 len)
{
	__u32 n;
	int r = 0;

	c->base = base;
	c->len = len;
	c->i = 0;
	__builtin_memset(&c->o, 0, sizeof(c->o));
	for (n = 0; n < TCP_OPT_MAX; n++) {
		r = opt_step(c);
		if (r <= 0)
			break;
	}
	return r < 0 ? -1 : 0;
}

static __always_inline __u16
fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* The one's complement sum of len bytes (a multiple of 4) at p, added to
 * seed; both in memory's byte order (RFC 1071 §2(B)). */
static __always_inline __u32
csum_add(const void *p, __u32 len, __u32 seed)
{
	return (__u32)bpf_csum_diff(0, 0, (void *)p, len, seed);
}

/* The pseudo-header's sum (RFC 9293 §3.1, RFC 8200 §8.1): the addresses,
 * the protocol and the segment's length, whichever way it goes. */
static __always_inline __u32
pseudo(const struct seg *s, __u32 l4len)
{
	/* The input begins with the two addresses. */
	return csum_add(&s->in, 32, bpf_htons(IPPROTO_TCP_) +
				    bpf_htons((__u16)l4len));
}

/* Whether the segment is CHECKSUM_PARTIAL, from a local stack: its
 * checksum field holds the pseudo-header's sum for the sender's device to
 * finish. */
static __always_inline int
csum_partial(const struct seg *s)
{
	return s->csum == fold(pseudo(s, s->l4len));
}

/*
 * Whether the segment's checksum is right, its header and options summed
 * (a segment without data): complete, or partial (*partial, when asked).
 */
static __always_inline int
csum_ok(const struct seg *s, const __u8 *tcp, int *partial)
{
	__u32 ph = pseudo(s, s->l4len);
	int p = csum_partial(s);

	if (partial)
		*partial = p;
	return p || fold(csum_add(tcp, (TCP_HDR_LEN + s->optlen) & 0x3c,
				  ph)) == 0xffff;
}

/* The frame's TCP header: hl masked for the verifier. */
static __always_inline __u8 *
tcp_of(struct optctx *c, const struct seg *s)
{
	return c->f + (opaque(s->hl) & 63);
}

/* What read_seg made of a packet. */
enum seg_kind {
	SEG_OTHER,	/* none of the shield's business: passed untouched */
	SEG_TCP,	/* a TCP segment, read into s and c */
	SEG_UNREAD,	/* TCP or maybe TCP, to s->in.saddr, that it cannot read */
};

/*
 * Walks the IPv6 extension headers as nfq/pkt.c does (RFC 8200 §4):
 * Hop-by-Hop, Routing and Destination Options by their length, up to
 * SHIELD_EXTHDR_MAX of them.  The offset of the TCP header in the packet, 0
 * when the chain ends in another protocol, or -1 when it cannot be
 * followed: a Fragment header, AH (which ip6tables' -p tcp sees through,
 * and nfq/pkt.c does not), a chain too long or past the packet's end.
 */
static __always_inline int
walk_ipv6(struct __sk_buff *skb, __u8 next, __u32 end)
{
	__u32 off = ETH_HDR_LEN + IPV6_HDR_LEN, n;
	__u8 h[2];

	for (n = 0; n <= SHIELD_EXTHDR_MAX; n++) {
		if (next == IPPROTO_TCP_)
			return (int)off;
		if (next == IPPROTO_FRAGMENT_ || next == IPPROTO_AH_)
			return -1;
		if (next != IPPROTO_HOPOPTS_ && next != IPPROTO_ROUTING_ &&
		    next != IPPROTO_DSTOPTS_)
			return 0;
		if (n == SHIELD_EXTHDR_MAX || off + 8 > end ||
		    bpf_skb_load_bytes(skb, off, h, 2) < 0)
			return -1;
		next = h[0];
		/* Hdr Ext Len counts 8-octet units beyond the first 8. */
		off += 8 + (__u32)h[1] * 8;
		if (off > end)
			return -1;
	}
	return -1;
}

/*
 * Reads the headers into c's frame: the Ethernet header, the IP header
 * without its options or extension headers (the SYN-ACK has none), and
 * the TCP header with its options at s->hl, where the SYN-ACK has it.
 * What the kernel drops before netfilter (a bad version or length) is
 * SEG_OTHER; so is anything but TCP.
 */
static __always_inline enum seg_kind
read_seg(struct __sk_buff *skb, struct seg *s, struct optctx *c)
{
	__u16 proto = bpf_ntohs(skb->protocol);
	__u8 *f = c->f, *ip = f + ETH_HDR_LEN, *tcp;
	__u32 end, want;
	int l4;

	__builtin_memset(s->in.caddr, 0, sizeof(s->in.caddr));
	__builtin_memset(s->in.saddr, 0, sizeof(s->in.saddr));
	if (proto == ETH_P_IPV4) {
		__u32 ihl;

		if (bpf_skb_load_bytes(skb, 0, f,
				       ETH_HDR_LEN + IPV4_HDR_LEN) < 0 ||
		    ip[0] >> 4 != 4 || ip[9] != IPPROTO_TCP_)
			return SEG_OTHER;
		ihl = (__u32)(ip[0] & 0x0f) * 4;
		end = ETH_HDR_LEN + get16(ip + 2);
		if (ihl < IPV4_HDR_LEN || end < ETH_HDR_LEN + ihl ||
		    end > skb->len)
			return SEG_OTHER;
		s->in.family = COOKIE_FAMILY_INET;
		s->hl = ETH_HDR_LEN + IPV4_HDR_LEN;
		__builtin_memcpy(s->in.caddr, ip + 12, 4);
		__builtin_memcpy(s->in.saddr, ip + 16, 4);
		if (get16(ip + 6) & IPV4_FRAG_MASK)
			return SEG_UNREAD;
		l4 = (int)(ETH_HDR_LEN + ihl);
	} else if (proto == ETH_P_IPV6) {
		if (bpf_skb_load_bytes(skb, 0, f,
				       ETH_HDR_LEN + IPV6_HDR_LEN) < 0 ||
		    ip[0] >> 4 != 6)
			return SEG_OTHER;
		/* A jumbogram's length is 0 (RFC 2675): nfq/pkt.c's too. */
		end = ETH_HDR_LEN + IPV6_HDR_LEN + get16(ip + 4);
		if (end > skb->len)
			return SEG_OTHER;
		s->in.family = COOKIE_FAMILY_INET6;
		s->hl = ETH_HDR_LEN + IPV6_HDR_LEN;
		__builtin_memcpy(s->in.caddr, ip + 8, 16);
		__builtin_memcpy(s->in.saddr, ip + 24, 16);
		l4 = walk_ipv6(skb, ip[6], end);
		if (l4 == 0)
			return SEG_OTHER;
		if (l4 < 0 || end == ETH_HDR_LEN + IPV6_HDR_LEN)
			return SEG_UNREAD;
	} else
		return SEG_OTHER;
	s->l4off = (__u32)l4;
	if (end < s->l4off + TCP_HDR_LEN)
		return SEG_UNREAD;
	s->l4len = end - s->l4off;
	/* The header and every option: as much as 60 bytes hold. */
	want = opaque(s->l4len < TCP_HDR_LEN + TCP_OPT_MAX
			      ? s->l4len : TCP_HDR_LEN + TCP_OPT_MAX);
	if (want < TCP_HDR_LEN || want > TCP_HDR_LEN + TCP_OPT_MAX ||
	    bpf_skb_load_bytes(skb, s->l4off, tcp_of(c, s), want) < 0)
		return SEG_UNREAD;
	tcp = tcp_of(c, s);
	s->in.cport = get16(tcp);
	s->in.sport = get16(tcp + 2);
	s->seq = get32(tcp + 4);
	s->ack = get32(tcp + 8);
	s->flags = tcp[13];
	s->win = get16(tcp + 14);
	__builtin_memcpy(&s->csum, tcp + 16, 2);
	s->optlen = (__u32)(tcp[12] >> 4) * 4;
	if (s->optlen < TCP_HDR_LEN || s->optlen > s->l4len)
		return SEG_UNREAD;
	s->optlen -= TCP_HDR_LEN;
	return SEG_TCP;
}

/* Wall-clock seconds, as the daemon's key epochs read them. */
static __always_inline __u64
wall_s(const struct shield_config *cfg, const struct seg *s)
{
	return (s->mono_ns + (__u64)cfg->wall_offset_ns) / NS_PER_S;
}

/* One more event in rate slot i at second now: the second's count, or
 * 0xffffffff when the slot is busy past a few tries (as if over). */
static __always_inline __u32
rate_bump(__u32 i, __u32 now)
{
	__u64 *word = bpf_map_lookup_elem(&shield_rate, &i);
	__u32 tries, n = 0xffffffffu;

	if (!word)
		return n;
	for (tries = 0; tries < 4; tries++) {
		__u64 old = *word, new = limit_rate_next(old, now, &n);

		if (new == old ||
		    __sync_val_compare_and_swap(word, old, new) == old)
			return n;
		n = 0xffffffffu;
	}
	return n;
}

/* gateway/admit.c's admit_synack: whether the client's prefix may have one
 * more SYN-ACK this second. */
static __always_inline int
synack_allowed(const struct shield_config *cfg, const struct seg *s,
	       __u64 now)
{
	__u8 addr[16];
	__u32 slot[2], a, b;

	if (!cfg->synack_rate)
		return 1;
	limit_prefix(s->in.caddr, s->in.family == COOKIE_FAMILY_INET
					  ? cfg->prefix4 : cfg->prefix6, addr);
	limit_slots(cfg->rate_seed, cfg->rate_mask, addr, cfg->rate_kind,
		    s->in.family, 0, slot);
	a = rate_bump(slot[0], (__u32)now);
	b = rate_bump(slot[1], (__u32)now);
	return (a < b ? a : b) <= cfg->synack_rate;
}

/* Whether one more SYN may go to the daemon's queue this second. */
static __always_inline int
special_allowed(const struct shield_config *cfg, __u64 now)
{
	__u32 zero = 0, n;
	__u64 *word;

	if (cfg->special_pass == SHIELD_PASS_ALL)
		return 1;
	word = bpf_map_lookup_elem(&shield_special, &zero);
	if (!word)
		return 0;
	*word = limit_rate_next(*word, (__u32)now, &n);
	return n <= cfg->special_pass;
}

/* A bare IP header over ip, from src to dst, of a TCP segment of l4len
 * bytes: nfq/pkt.c's put_ip as tcpctd's own segments have it. */
static __always_inline void
put_ip(__u8 *ip, __u8 family, const __u8 *src, const __u8 *dst, __u32 l4len)
{
	__u16 csum;

	if (family == COOKIE_FAMILY_INET) {
		ip[0] = 0x45;
		ip[1] = 0;
		cookie_put16(ip + 2, (__u16)(IPV4_HDR_LEN + l4len));
		ip[4] = ip[5] = 0;
		cookie_put16(ip + 6, IPV4_DF);
		ip[8] = TTL_DEFAULT;
		ip[9] = IPPROTO_TCP_;
		ip[10] = ip[11] = 0;
		__builtin_memcpy(ip + 12, src, 4);
		__builtin_memcpy(ip + 16, dst, 4);
		csum = (__u16)~fold(csum_add(ip, IPV4_HDR_LEN, 0));
		__builtin_memcpy(ip + 10, &csum, 2);
	} else {
		ip[0] = 0x60;
		ip[1] = ip[2] = ip[3] = 0;
		cookie_put16(ip + 4, (__u16)l4len);
		ip[6] = IPPROTO_TCP_;
		ip[7] = TTL_DEFAULT;
		__builtin_memcpy(ip + 8, src, 16);
		__builtin_memcpy(ip + 24, dst, 16);
	}
}

/*
 * A classic SYN: the SYN-ACK handshake_synack() builds, over the SYN itself.
 * Without timestamps only the MSS survives the cookie, so nothing else is
 * offered (as Linux does); with them, the option bits ride in the TSval's
 * low bits.
 */
static __always_inline int
syn(struct __sk_buff *skb, const struct shield_config *cfg,
    const struct shield_service *svc, struct scratch *w)
{
	struct seg *s = &w->s;
	struct optctx *c = &w->c;
	const struct opts *o = &c->o;
	__u8 *f = c->f, *ip = f + ETH_HDR_LEN, *out = tcp_of(c, s), mac[6];
	__u32 sum, optlen = 4, tsbits = 0, mss_index, l4len, len;
	__u16 csum;
	__u64 now, epoch;
	__u32 slot, isn;
	int ecn, partial, odd, data;

	/* What goes to the daemon is counted there, not here too. */
	if (svc->flags & SHIELD_SVC_DRAINED) {
		count(SHIELD_PASS_DRAINED);
		return TC_ACT_OK;
	}
	now = wall_s(cfg, s);
	odd = parse_opts(c, s->hl + TCP_HDR_LEN, s->optlen) < 0;
	data = s->l4len != TCP_HDR_LEN + s->optlen;
	/* A CHECKSUM_PARTIAL SYN (from a local stack) whose TCP header
	 * would move: the device that completes the SYN-ACK's checksum would
	 * look for it where the SYN had it. */
	if (s->l4off != s->hl && csum_partial(s))
		odd = 1;
	if (odd || data || o->special) {
		/* TCPCT, Fast Open, data, options it cannot read: the
		 * daemon's, while its queue keeps up. */
		if (special_allowed(cfg, now)) {
			count(o->special ? SHIELD_PASS_OPTION
					 : SHIELD_PASS_ODD);
			return TC_ACT_OK;
		}
		if (odd) {
			count(SHIELD_SHED);
			return TC_ACT_SHOT;
		}
		count(SHIELD_CLASSIC_FALLBACK);
	}
	epoch = now / cfg->lifetime;
	slot = (__u32)(epoch & 1);
	/* The daemon writes the next epoch's key well before its boundary:
	 * without it, the daemon's map writes are late (or it is gone). */
	if (!cfg->keys.valid[slot] || cfg->keys.epoch[slot] != epoch) {
		if (!special_allowed(cfg, now)) {
			count(SHIELD_SHED);
			return TC_ACT_SHOT;
		}
		count(SHIELD_PASS_NO_KEY);
		return TC_ACT_OK;
	}
	count(SHIELD_SYN);
	if (s->flags & (TCP_ACK | TCP_RST | TCP_FIN)) {
		count(SHIELD_SYN_BAD_FLAGS);
		return TC_ACT_SHOT;
	}
	/* A SYN's data is not read: its checksum goes unchecked. */
	if (!csum_ok(s, out, &partial) && !data) {
		count(SHIELD_CSUM_BAD);
		return TC_ACT_SHOT;
	}
	/* Spoofed SYNs must not turn the gateway into a reflector. */
	if (!synack_allowed(cfg, s, now)) {
		count(SHIELD_SYNACK_CAPPED);
		return TC_ACT_SHOT;
	}
	mss_index = cookie_mss_index_of(s->in.family, o->has_mss ? o->mss :
					s->in.family == COOKIE_FAMILY_INET
						? DEFAULT_MSS_V4
						: DEFAULT_MSS_V6);
	/* RFC 3168 §6.1.1: an ECN-setup SYN has both ECE and CWR. */
	ecn = (s->flags & (TCP_ECE | TCP_CWR)) == (TCP_ECE | TCP_CWR) &&
	      (svc->flags & SHIELD_SVC_ECN);
	if (!o->has_ts || !(svc->flags & SHIELD_SVC_TS))
		ecn = 0;
	else {
		tsbits = COOKIE_TS_PRESENT;
		tsbits |= o->has_ws && (svc->flags & SHIELD_SVC_WS)
				  ? o->ws : COOKIE_TS_WSCALE_NONE;
		if (o->sack_perm && (svc->flags & SHIELD_SVC_SACK))
			tsbits |= COOKIE_TS_SACK;
		if (ecn)
			tsbits |= COOKIE_TS_ECN;
	}
	s->in.cisn = s->seq;
	isn = cookie_isn(&cfg->keys.sip[slot], slot, &s->in,
			 (__u32)(now / COOKIE_TICK), mss_index, tsbits);

	/* The options, as nfq/tcpopt.c's tcpopt_build lays them out, over
	 * the SYN's (o holds what was read of them). */
	if (tsbits) {
		__u32 tsval = ((__u32)(s->mono_ns / NS_PER_MS) &
			       ~(__u32)COOKIE_TS_BITS) |
			      (tsbits & COOKIE_TS_BITS);

		if (tsbits & COOKIE_TS_SACK) {
			out[TCP_HDR_LEN + 4] = TCPOPT_SACK_PERM;
			out[TCP_HDR_LEN + 5] = 2;
		} else {
			out[TCP_HDR_LEN + 4] = TCPOPT_NOP;
			out[TCP_HDR_LEN + 5] = TCPOPT_NOP;
		}
		out[TCP_HDR_LEN + 6] = TCPOPT_TS;
		out[TCP_HDR_LEN + 7] = 10;
		cookie_put32(out + TCP_HDR_LEN + 8, tsval);
		cookie_put32(out + TCP_HDR_LEN + 12, o->tsval);
		optlen = 16;
		if ((tsbits & COOKIE_TS_WSCALE_MASK) != COOKIE_TS_WSCALE_NONE) {
			out[TCP_HDR_LEN + 16] = TCPOPT_NOP;
			out[TCP_HDR_LEN + 17] = TCPOPT_WSCALE;
			out[TCP_HDR_LEN + 18] = 3;
			out[TCP_HDR_LEN + 19] = svc->wscale;
			optlen = 20;
		}
	}
	out[TCP_HDR_LEN] = TCPOPT_MSS;
	out[TCP_HDR_LEN + 1] = 4;
	cookie_put16(out + TCP_HDR_LEN + 2, svc->mss);
	cookie_put16(out, s->in.sport);
	cookie_put16(out + 2, s->in.cport);
	cookie_put32(out + 4, isn);
	cookie_put32(out + 8, s->seq + 1);
	out[12] = (__u8)((TCP_HDR_LEN + optlen) / 4 << 4);
	out[13] = TCP_SYN | TCP_ACK | (ecn ? TCP_ECE : 0);
	/* One segment's window, never scaled on a SYN-ACK. */
	cookie_put16(out + 14, svc->mss);
	out[16] = out[17] = 0;
	out[18] = out[19] = 0;		/* no urgent pointer */
	l4len = TCP_HDR_LEN + optlen;
	sum = pseudo(s, l4len);
	/* The client's CHECKSUM_PARTIAL comes back as it went: the field
	 * holds the pseudo-header's sum, which its stack takes as verified
	 * and any device on the way completes. */
	csum = partial ? fold(sum) : (__u16)~fold(csum_add(out, l4len & 0x3c,
							    sum));
	__builtin_memcpy(out + 16, &csum, 2);

	__builtin_memcpy(mac, f, 6);
	__builtin_memcpy(f, f + 6, 6);
	__builtin_memcpy(f + 6, mac, 6);
	/* A bare IP header: the SYN's options or extension headers are
	 * the SYN's alone. */
	put_ip(ip, s->in.family, s->in.saddr, s->in.caddr, l4len);
	len = (opaque(s->hl) & 63) + l4len;
	if (bpf_skb_change_tail(skb, len, 0) < 0 ||
	    bpf_skb_store_bytes(skb, 0, f, len & FRAME_MASK,
				BPF_F_INVALIDATE_HASH) < 0) {
		count(SHIELD_UNREADABLE);
		return TC_ACT_SHOT;
	}
	count(SHIELD_SYNACK_SENT);
	return bpf_redirect(skb->ifindex, 0);
}

/* cookie_check's one secret: 0 (COOKIE_OK), or the counter of why not. */
static __always_inline __u32
check_one(const struct shield_keyset *k, __u64 now, __u32 lifetime,
	  __u32 isn, const struct cookie_input *in, __u32 tsbits)
{
	__u32 slot = isn >> COOKIE_ISN_KEYID_SHIFT, counter;
	__u64 epoch = now / lifetime;

	counter = (__u32)(now / COOKIE_TICK);
	if (cookie_isn_age(isn, counter) > COOKIE_MAX_AGE)
		return SHIELD_COOKIE_EXPIRED;
	if (!k->valid[slot] || !cookie_epoch_usable(k->epoch[slot], epoch))
		return SHIELD_COOKIE_NO_KEY;
	if (!cookie_isn_mac_ok(&k->sip[slot], isn, in, counter, tsbits,
			       COOKIE_ISN_MAC_MASK))
		return SHIELD_COOKIE_BAD;
	return 0;
}

/*
 * A segment of no live flow: only the end of one of our handshakes may
 * pass, as gateway/handshake.c's handshake_verify() would judge it (one
 * check of ack − 1 per ACK, then the secret accepted beside ours).
 */
static __always_inline int
ack(struct __sk_buff *skb, const struct shield_config *cfg,
    const struct shield_service *svc, struct scratch *w)
{
	struct seg *s = &w->s;
	const struct opts *o = &w->c.o;
	__u32 tsbits = 0, r;
	__u64 now;
	int odd;

	if (svc->flags & SHIELD_SVC_DRAINED) {
		count(SHIELD_PASS_DRAINED);
		return TC_ACT_OK;
	}
	now = wall_s(cfg, s);
	odd = parse_opts(&w->c, s->hl + TCP_HDR_LEN, s->optlen) < 0;
	/* A TCPCT third packet (its pair, or a header extension) is no
	 * classic cookie's, and options it cannot read are the daemon's to
	 * judge: passed while the daemon keeps up, dropped past that. */
	if (odd || o->special) {
		if (!special_allowed(cfg, now)) {
			count(SHIELD_SHED);
			return TC_ACT_SHOT;
		}
		count(odd ? SHIELD_PASS_ODD : SHIELD_PASS_OPTION);
		return TC_ACT_OK;
	}
	/* As the daemon: a segment it answers or acts on for itself alone
	 * has its checksum checked first (a SYN's, a pure ACK's). */
	if (s->l4len == TCP_HDR_LEN + s->optlen &&
	    !csum_ok(s, tcp_of(&w->c, s), NULL)) {
		count(SHIELD_CSUM_BAD);
		return TC_ACT_SHOT;
	}
	if (s->flags & TCP_RST) {
		count(SHIELD_RST_STRAY);
		return TC_ACT_SHOT;
	}
	if (!(s->flags & TCP_ACK)) {
		count(SHIELD_NO_ACK_FLAG);
		return TC_ACT_SHOT;
	}
	if (o->has_ts)
		tsbits = (o->tsecr & COOKIE_TS_BITS) | COOKIE_TS_PRESENT;
	s->in.cisn = s->seq - 1;
	r = check_one(&cfg->keys, now, cfg->lifetime, s->ack - 1, &s->in,
		      tsbits);
	if (r && r != SHIELD_COOKIE_EXPIRED && cfg->has_alt &&
	    !check_one(&cfg->alt, now, cfg->lifetime, s->ack - 1, &s->in,
		       tsbits))
		r = 0;
	if (r) {
		count(r);
		return TC_ACT_SHOT;
	}
	/* Nothing for the daemon to do until the client speaks: no flow,
	 * no queue crossing, for a connection that may never ask. */
	if ((svc->flags & SHIELD_SVC_DEFER) &&
	    s->l4len == TCP_HDR_LEN + s->optlen && !(s->flags & TCP_FIN)) {
		count(SHIELD_ACK_DEFERRED);
		return TC_ACT_SHOT;
	}
	skb->mark = cfg->verified_mark;
	count(SHIELD_ACK_VERIFIED);
	return TC_ACT_OK;
}

/*
 * Flows the program carries (maps.h's struct shield_flow; HACKING.md,
 * "The kernel's flows"): gateway/accept.c's judgement and gateway/splice.c's
 * translation of an established flow's segments, field for field, and its
 * FINs followed.  What it does not judge goes on to the daemon unmarked,
 * the record untouched.
 */
#define TCP_OFF_SEQ	4
#define TCP_OFF_ACK	8
#define TCP_OFF_WIN	14
#define TCP_OFF_CSUM	16
#define TCP_PSH		0x08

#define DNS_LEN_PREFIX	2		/* gateway/dnsmsg.h */
#define DNS_HDR_LEN	12
#define DNS_JUDGED	(DNS_LEN_PREFIX + 6)
/* Framing steps a segment of answers may take (about four a message). */
#define DNS_STEPS	32

/* Who passes it on, and why not. */
enum carry_verdict { CARRY_DONE, CARRY_DAEMON, CARRY_DROP, CARRY_REDIRECT };

/* Not the program's to carry: the daemon's flow, not a judgement. */
#define SHIELD_EV_NONE	0xffffffffu

static __always_inline int
seq_gt(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

static __always_inline int
seq_lt(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

static __always_inline __u32
max32(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* gateway/window.h's win_rescale. */
static __always_inline __u16
win_rescale(__u16 win, __u8 from, __u8 to)
{
	__u32 v = ((__u32)win << (from & 15)) >> (to & 15);

	if (v > 0xffff)
		v = 0xffff;
	return v == 0 && win ? 1 : (__u16)v;
}

/* A field's 16-bit one's complement sum (RFC 1071), big-endian. */
static __always_inline __u32
fold16(__u32 v)
{
	v = (v & 0xffff) + (v >> 16);
	return (v & 0xffff) + (v >> 16);
}

/*
 * Rewrites the big-endian field of len (2 or 4) bytes at off from the TCP
 * header from old to new, and its checksum by RFC 1624 eqn 3's difference
 * as nfq/csum.c's csum_replace_run makes it (byte-swapped at an odd
 * offset), which the kernel applies as the skb's checksum state wants (a
 * CHECKSUM_PARTIAL one keeps its pseudo-header's sum).  Unchanged, it
 * writes nothing, as nfq/pkt.c's set_field.
 */
static __always_inline int
set_field(struct __sk_buff *skb, const struct seg *s, __u32 off, __u32 len,
	  __u32 old, __u32 new)
{
	__u32 d, be;

	if (old == new)
		return 0;
	d = fold16(fold16(new) + (~fold16(old) & 0xffff));
	d = (d & 0xffff) + (d >> 16);
	if (off & 1)
		d = (d & 0xff) << 8 | d >> 8;
	if (len == 4) {
		be = bpf_htonl(new);
		if (bpf_skb_store_bytes(skb, s->l4off + off, &be, 4, 0) < 0)
			return -1;
	} else {
		__u16 be16 = bpf_htons((__u16)new);

		if (bpf_skb_store_bytes(skb, s->l4off + off, &be16, 2, 0) < 0)
			return -1;
	}
	/* The kernel sums words in memory's order. */
	return (int)bpf_l4_csum_replace(skb, s->l4off + TCP_OFF_CSUM, 0,
					bpf_htons((__u16)d), 0);
}

/* The record's tuple is the packet's: a slot reused meanwhile is not. */
static __always_inline int
same_tuple(const struct shield_tuple *a, const struct shield_tuple *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
	__u32 i;

	for (i = 0; i < sizeof(*a) / 8; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* Tells the flow's worker what happened to it; lost, counted, when its
 * ring is full (the worker catches up at the flow's next timer). */
static __always_inline void
tell(const struct shield_flow *r, __u32 slot, __u32 what)
{
	struct shield_event ev = { .slot = slot, .what = what };
	__u32 worker = r->worker;
	void *ring = bpf_map_lookup_elem(&shield_rings, &worker);

	if (!ring || bpf_ringbuf_output(ring, &ev, sizeof(ev), 0) < 0)
		count(SHIELD_EVENTS_LOST);
}

/*
 * An unacceptable client segment (RFC 9293 §3.10.7.4, RFC 5961): the
 * daemon answers it with a challenge ACK, which it sends at most once a
 * flow in SHIELD_CHALLENGE_INTERVAL_MS; within that, dropped here.  One
 * on a tuple both sides have closed may be a new incarnation's cookie ACK,
 * which the daemon alone checks.  Either way within the daemon's budget.
 */
static __always_inline enum carry_verdict
unacceptable(const struct shield_config *cfg, const struct seg *s,
	     const struct shield_flow *r, __u32 why)
{
	__u32 now_ms = (__u32)(s->mono_ns / NS_PER_MS);
	int reusable = (r->fin & (SHIELD_FIN_CLIENT | SHIELD_FIN_BACKEND)) ==
		       (SHIELD_FIN_CLIENT | SHIELD_FIN_BACKEND);

	if (!reusable && (r->flags & SHIELD_REC_CHALLENGED) &&
	    now_ms - r->challenge_ms < SHIELD_CHALLENGE_INTERVAL_MS) {
		count(why);
		count(SHIELD_CHALLENGE_LIMITED);
		return CARRY_DROP;
	}
	if (!special_allowed(cfg, wall_s(cfg, s))) {
		count(SHIELD_SHED);
		return CARRY_DROP;
	}
	return CARRY_DAEMON;
}

/* The TCP header's options, read; CARRY_DAEMON for what the program does
 * not read (TCPCT's, Fast Open's, odd ones). */
static __always_inline int
carry_opts(struct scratch *w)
{
	struct seg *s = &w->s;

	return parse_opts(&w->c, s->hl + TCP_HDR_LEN, s->optlen) < 0 ||
	       w->c.o.special;
}

/*
 * A client segment of a carried flow: gateway/accept.c's accept_client,
 * then gateway/splice.c's splice_c2b.  The client's sequence space runs end
 * to end: its ACK, SACK blocks and TSecr move into the backend's.
 */
static __always_inline enum carry_verdict
carry_c2b(struct __sk_buff *skb, const struct shield_config *cfg,
	  struct scratch *w, struct shield_flow *r, __u32 *ev)
{
	struct seg *s = &w->s;
	const struct opts *o = &w->c.o;
	const __u8 *th = tcp_of(&w->c, s);
	__u32 paylen = s->l4len - TCP_HDR_LEN - s->optlen;
	__u32 fin = !!(s->flags & TCP_FIN), end = s->seq + paylen + fin;
	__u32 rcv_nxt, wnd, max_snd_wnd, why = 0, i;
	__u8 was = r->fin;

	if (carry_opts(w) || (s->flags & (TCP_SYN | TCP_RST)))
		return CARRY_DAEMON;
	if (!(s->flags & TCP_ACK)) {
		count(SHIELD_NO_ACK_FLAG);
		return CARRY_DROP;
	}
	/* A DNS client's bytes are framed, and the framer is the daemon's. */
	if ((r->flags & SHIELD_REC_DNS) && paylen)
		return CARRY_DAEMON;
	rcv_nxt = seq_gt(r->b_ack, r->rcv_base) ? r->b_ack : r->rcv_base;
	wnd = max32(r->b_maxwin, SHIELD_WINDOW_MIN);
	max_snd_wnd = max32(r->c_maxwin, SHIELD_WINDOW_MIN);
	if (seq_gt(s->ack, r->b_nxt))
		why = SHIELD_ACK_UNSENT;
	else if (seq_lt(s->ack, r->c_ack - max_snd_wnd))
		why = SHIELD_ACK_TOO_OLD;
	else if (seq_gt(s->seq, rcv_nxt + wnd) || seq_lt(end, rcv_nxt - wnd))
		why = SHIELD_OUT_OF_WINDOW;
	if (why)
		return unacceptable(cfg, s, r, why);
	if (r->deadline_ns && s->mono_ns > r->deadline_ns)
		return CARRY_DAEMON;
	r->c_maxwin = max32(r->c_maxwin, (__u32)s->win << (r->c_ws & 15));

	if (seq_gt(s->ack, r->c_ack) && !seq_gt(s->ack, r->b_nxt))
		r->c_ack = s->ack;
	if ((r->fin & SHIELD_FIN_BACKEND) && seq_gt(s->ack, r->b_fin))
		r->fin |= SHIELD_FIN_BACKEND_ACKED;
	if (set_field(skb, s, TCP_OFF_ACK, 4, s->ack, s->ack + r->seq_delta))
		return CARRY_DROP;
	for (i = 0; i < 4; i++) {
		__u32 off = o->sack_off + 8 * i, k = opaque(off) & 63, v;

		if (i >= o->nsack)
			break;
		v = get32(th + k);
		if (set_field(skb, s, off, 4, v, v + r->seq_delta))
			return CARRY_DROP;
		v = get32(th + ((k + 4) & 63));
		if (set_field(skb, s, off + 4, 4, v, v + r->seq_delta))
			return CARRY_DROP;
	}
	if ((r->flags & SHIELD_REC_TS) && o->has_ts) {
		if (seq_gt(o->tsval, r->c_tsval))
			r->c_tsval = o->tsval;
		if (set_field(skb, s, o->ts_off + 4, 4, o->tsecr,
			      o->tsecr - r->ts_delta))
			return CARRY_DROP;
	}
	if (r->c_ws != r->c_ws_b &&
	    set_field(skb, s, TCP_OFF_WIN, 2, s->win,
		      win_rescale(s->win, r->c_ws, r->c_ws_b)))
		return CARRY_DROP;
	r->c_win = s->win;
	if (seq_gt(end, r->c_nxt))
		r->c_nxt = end;
	if (fin && !(r->fin & SHIELD_FIN_CLIENT)) {
		r->fin |= SHIELD_FIN_CLIENT;
		r->c_fin = s->seq + paylen;
	}
	*ev = (r->fin & ~was & (SHIELD_FIN_CLIENT | SHIELD_FIN_BACKEND))
		      ? SHIELD_EV_FIN : 0;
	count(SHIELD_C2B);
	return CARRY_DONE;
}

/*
 * The backend's answers counted as they pass, in order only, as
 * gateway/splice.c's frame_answers feeds gateway/dnsmsg.c's framer a
 * server's bytes: a 2-byte length, then that many.  0, or -1 when the
 * segment holds more messages than DNS_STEPS frame (the daemon's, then).
 */
static __always_inline int
count_answers(struct __sk_buff *skb, const struct seg *s,
	      struct shield_dnscount *d, __u32 seq, __u32 paylen)
{
	__u32 skip = d->nxt - seq, at, n, i;

	if (seq_gt(seq, d->nxt) || skip >= paylen)
		return 0;
	at = s->l4off + TCP_HDR_LEN + s->optlen + skip;
	n = paylen - skip;
	for (i = 0; i < DNS_STEPS && n; i++) {
		if (d->pos < DNS_LEN_PREFIX) {
			__u8 b;

			if (d->pos == 0)
				d->started++;
			if (bpf_skb_load_bytes(skb, at, &b, 1) < 0)
				return -1;
			d->len = (__u16)(d->len << 8 | b);
			at++;
			n--;
			/* A length under a header's: the framer stops
			 * (DNSFRAME_SHORT) and the segment counts as fed. */
			if (++d->pos == DNS_LEN_PREFIX && d->len < DNS_HDR_LEN)
				break;
		} else {
			__u32 left = d->pos < DNS_JUDGED
					     ? DNS_JUDGED - d->pos
					     : DNS_LEN_PREFIX + d->len - d->pos;
			__u32 take = n < left ? n : left;

			at += take;
			n -= take;
			d->pos += take;
		}
		if (d->pos >= DNS_JUDGED &&
		    d->pos == DNS_LEN_PREFIX + (__u32)d->len) {
			d->pos = 0;
			d->len = 0;
		}
	}
	if (n && i == DNS_STEPS)
		return -1;
	d->nxt = seq + paylen;
	return 0;
}

/*
 * gateway/splice.c's splice_b2c_old: a backend's old duplicate, wholly
 * behind what the client acknowledged, goes to the client in its view and
 * teaches the record nothing; the client drops it and answers with the
 * ACK (and D-SACK, RFC 2883) the backend needs.
 */
static __always_inline enum carry_verdict
old_b2c(struct __sk_buff *skb, const struct seg *s, const struct opts *o,
	const struct shield_flow *r, __u32 seq)
{
	if (set_field(skb, s, TCP_OFF_SEQ, 4, s->seq, seq))
		return CARRY_DROP;
	if ((r->flags & SHIELD_REC_TS) && o->has_ts &&
	    set_field(skb, s, o->ts_off, 4, o->tsval, o->tsval + r->ts_delta))
		return CARRY_DROP;
	if (r->b_ws != r->adv_ws &&
	    set_field(skb, s, TCP_OFF_WIN, 2, s->win,
		      win_rescale(s->win, r->b_ws, r->adv_ws)))
		return CARRY_DROP;
	count(SHIELD_BACKEND_OLD);
	return CARRY_DONE;
}

/*
 * A backend segment of a carried flow: gateway/accept.c's accept_backend,
 * then gateway/splice.c's splice_b2c.  Its SEQ and TSval move into the
 * client's view.
 */
static __always_inline enum carry_verdict
carry_b2c(struct __sk_buff *skb,
	  struct scratch *w, struct shield_flow *r, __u32 *ev)
{
	struct seg *s = &w->s;
	const struct opts *o = &w->c.o;
	__u32 paylen = s->l4len - TCP_HDR_LEN - s->optlen;
	__u32 fin = !!(s->flags & TCP_FIN), seq = s->seq - r->seq_delta;
	__u32 end = seq + paylen + fin, wnd, max_snd_wnd, started, last;
	struct shield_dnscount answers = r->answers;
	__u8 was = r->fin;
	__u32 held = 0;

	if (carry_opts(w) || (s->flags & (TCP_SYN | TCP_RST)) ||
	    !(s->flags & TCP_ACK))
		return CARRY_DAEMON;
	wnd = max32(max32(SHIELD_WINDOW_MIN, r->c_maxwin),
		    (__u32)r->c_win << (r->c_ws & 15));
	max_snd_wnd = max32(SHIELD_WINDOW_MIN, r->b_maxwin);
	/* gateway/accept.h: within the client's window and the backend's
	 * own numbers, not past what the client sent. */
	last = r->b_nxt + SHIELD_BACKEND_SLACK;
	if (seq_lt(r->c_ack + wnd, last))
		last = r->c_ack + wnd;
	if (seq_lt(end, r->c_ack - SHIELD_BACKEND_SLACK) &&
	    !seq_lt(end, r->c_ack - wnd) && !seq_lt(seq, r->g_base + 1))
		return old_b2c(skb, s, o, r, seq);
	if (seq_gt(seq, last) || seq_lt(end, r->c_ack - SHIELD_BACKEND_SLACK) ||
	    ((s->flags & TCP_ACK) &&
	     (seq_gt(s->ack, r->c_nxt) ||
	      seq_lt(s->ack, r->b_ack - max_snd_wnd)))) {
		count(SHIELD_BACKEND_UNACCEPTABLE);
		return CARRY_DROP;
	}
	if (r->deadline_ns && s->mono_ns > r->deadline_ns)
		return CARRY_DAEMON;
	started = answers.started;
	if ((r->flags & SHIELD_REC_DNS) && paylen &&
	    count_answers(skb, s, &answers, seq, paylen) < 0)
		return CARRY_DAEMON;

	r->b_maxwin = max32(r->b_maxwin, (__u32)s->win << (r->b_ws & 15));
	r->b_win = s->win;
	if (set_field(skb, s, TCP_OFF_SEQ, 4, s->seq, seq))
		return CARRY_DROP;
	if (seq_gt(s->ack, r->b_ack))
		r->b_ack = s->ack;
	if ((r->fin & SHIELD_FIN_CLIENT) && seq_gt(s->ack, r->c_fin))
		r->fin |= SHIELD_FIN_CLIENT_ACKED;
	/* What the daemon waits for: its held data taken, the backend's
	 * first answer (gateway/backend.c, gateway/backlog.c). */
	if ((r->flags & SHIELD_REC_HELD) && !seq_lt(s->ack, r->rcv_base)) {
		r->flags &= ~SHIELD_REC_HELD;
		held = SHIELD_EV_HELD_ACKED;
	}
	if ((r->flags & SHIELD_REC_OPENING) && (paylen || fin)) {
		r->flags &= ~SHIELD_REC_OPENING;
		held |= SHIELD_EV_OPENED;
	}
	if ((r->flags & SHIELD_REC_TS) && o->has_ts) {
		r->ts_out = o->tsval + r->ts_delta;
		if (set_field(skb, s, o->ts_off, 4, o->tsval, r->ts_out))
			return CARRY_DROP;
	}
	r->answers = answers;
	if (r->b_ws != r->adv_ws &&
	    set_field(skb, s, TCP_OFF_WIN, 2, s->win,
		      win_rescale(s->win, r->b_ws, r->adv_ws)))
		return CARRY_DROP;
	if (seq_gt(end, r->b_nxt))
		r->b_nxt = end;
	if (fin && !(r->fin & SHIELD_FIN_BACKEND)) {
		if (!(r->fin & SHIELD_FIN_CLIENT))
			r->fin |= SHIELD_FIN_BACKEND_FIRST;
		r->fin |= SHIELD_FIN_BACKEND;
		r->b_fin = seq + paylen;
	}
	*ev = (r->fin & ~was & (SHIELD_FIN_CLIENT | SHIELD_FIN_BACKEND))
		      ? SHIELD_EV_FIN : 0;
	/* Every query answered: the daemon may let the backend go
	 * (gateway/release.c). */
	if (answers.started != started && !answers.pos &&
	    answers.started >= r->queries)
		*ev |= SHIELD_EV_ANSWERED;
	*ev |= held;
	count(SHIELD_B2C);
	return CARRY_DONE;
}

/*
 * The binding in the kernel (HACKING.md, "The kernel's flows"): a verified
 * DNS client's first query, whole in one segment, becomes the backend's
 * SYN (the query kept in the record), and the backend's SYN-ACK the ACK
 * that carries the query to it, as gateway/bind.c and gateway/backend.c
 * would send them.  Nothing is sent to the client meanwhile: the backend's
 * ACK of the query, translated, is its acknowledgment, and its own timers
 * send the query again when anything is lost.
 */

/* One of the worker's places in the service's backlog: 0, or -1 when it
 * has none left (the daemon's to queue the flow, gateway/backlog.c). */
static __always_inline int
take_ticket(const struct shield_flow *r)
{
	__u32 slot = SHIELD_TICKET_SLOT(r->worker % SHIELD_MAX_WORKERS,
					r->service % SHIELD_MAX_SERVICES);
	__u64 *t = bpf_map_lookup_elem(&shield_tickets, &slot), old;

	if (!t)
		return -1;
	old = __sync_fetch_and_add(t, -1);
	if ((__s64)old > 0)
		return 0;
	__sync_fetch_and_add(t, 1);
	return -1;
}

/* Whether the query's question asks for a zone transfer (its answer is
 * many messages: the daemon's), or cannot be walked: gateway/dnsmsg.c's
 * question_byte over the record's copy. */
static __always_inline int
query_odd(const struct shield_flow *r, __u32 n)
{
	__u32 off = DNS_LEN_PREFIX + DNS_HDR_LEN, i;
	__u16 qtype;

	/* Not QUERY (NOTIFY, UPDATE, DSO): no question to walk. */
	if (r->query[DNS_LEN_PREFIX + 2] & 0x78)
		return 0;
	for (i = 0; i < 64; i++) {
		__u8 l;

		if (off >= n || off >= SHIELD_QUERY_MAX)
			return 1;
		l = r->query[off & (SHIELD_QUERY_MAX - 1)];
		if (l == 0)
			break;
		if (l & 0xc0)
			return 1;
		off += 1 + l;
	}
	if (i == 64 || off + 3 > n || off + 3 > SHIELD_QUERY_MAX - 1)
		return 1;
	qtype = (__u16)(r->query[(off + 1) & (SHIELD_QUERY_MAX - 1)] << 8 |
			r->query[(off + 2) & (SHIELD_QUERY_MAX - 1)]);
	return qtype == 251 || qtype == 252;	/* IXFR, AXFR */
}

/* Whether the record's query (n bytes, its 2-byte length first) is one
 * whole message a client may send (gateway/dnsmsg.h's dnsmsg_is_request):
 * QR 0, QUERY, NOTIFY or UPDATE with one question, or DSO with none. */
static __always_inline int
query_ok(const struct shield_flow *r, __u32 n)
{
	const __u8 *h = r->query + DNS_LEN_PREFIX;
	__u32 op = (h[2] & 0x78) >> 3, qd = (__u32)h[4] << 8 | h[5];

	if (n < DNS_LEN_PREFIX + DNS_HDR_LEN ||
	    ((__u32)r->query[0] << 8 | r->query[1]) != n - DNS_LEN_PREFIX ||
	    (h[2] & 0x80))
		return 0;
	if (op == 6)
		return qd == 0;
	return (op == 0 || op == 4 || op == 5) && qd == 1 && !query_odd(r, n);
}

/* The sum of the record's query, zero-padded to 4 bytes, into seed. */
static __always_inline __u32
query_sum(const struct shield_flow *r, __u32 seed)
{
	__u32 words = ((__u32)r->qlen + 3) / 4;

	if (!words || words > SHIELD_QUERY_MAX / 4)
		return seed;
	/* Bounded where the verifier sees it: 1 to 64 words. */
	words = ((opaque(words) - 1) & (SHIELD_QUERY_MAX / 4 - 1)) + 1;
	return (__u32)bpf_csum_diff(0, 0, (void *)r->query, words * 4, seed);
}

/* Whether the client segment in hand, its payload the record's query, has
 * a right checksum (gateway/worker.h's worker_csum_ok: a local stack's
 * partial one is taken as it is). */
static __always_inline int
query_csum_ok(struct scratch *w, const struct shield_flow *r)
{
	const struct seg *s = &w->s;
	__u32 sum;

	if (csum_partial(s))
		return 1;
	sum = csum_add(tcp_of(&w->c, s), (TCP_HDR_LEN + s->optlen) & 0x3c,
		       pseudo(s, s->l4len));
	return fold(query_sum(r, sum)) == 0xffff;
}

/*
 * The segment in hand, into the backend's SYN from the client's address,
 * as gateway/backend.c's send_backend_syn sends it: at the client's ISN,
 * the client's window unscaled, MSS, SACK permitted, timestamps (the
 * client's latest TSval) and window scale as the handshake agreed, laid
 * out as nfq/tcpopt.c lays them.  0, or -1 when it could not be written.
 */
static __always_inline int
backend_syn(struct __sk_buff *skb, struct scratch *w,
	    const struct shield_flow *r)
{
	struct seg *s = &w->s;
	__u8 *f = w->c.f, *ip = f + ETH_HDR_LEN, *out = tcp_of(&w->c, s);
	__u32 optlen = 4, l4len, sum, len, win = (__u32)r->c_win << (r->c_ws & 15);
	int partial = csum_partial(s);
	__u16 csum;

	/* A local stack's segment finished by its device: where it had its
	 * TCP header (gateway/carry.c gives no other). */
	if (partial && s->l4off != s->hl)
		return -1;
	out[TCP_HDR_LEN] = TCPOPT_MSS;
	out[TCP_HDR_LEN + 1] = 4;
	cookie_put16(out + TCP_HDR_LEN + 2, r->mss);
	if (r->flags & SHIELD_REC_TS) {
		if (r->flags & SHIELD_REC_SACK) {
			out[TCP_HDR_LEN + 4] = TCPOPT_SACK_PERM;
			out[TCP_HDR_LEN + 5] = 2;
		} else {
			out[TCP_HDR_LEN + 4] = TCPOPT_NOP;
			out[TCP_HDR_LEN + 5] = TCPOPT_NOP;
		}
		out[TCP_HDR_LEN + 6] = TCPOPT_TS;
		out[TCP_HDR_LEN + 7] = 10;
		cookie_put32(out + TCP_HDR_LEN + 8, r->c_tsval);
		cookie_put32(out + TCP_HDR_LEN + 12, 0);
		optlen = 16;
	} else if (r->flags & SHIELD_REC_SACK) {
		out[TCP_HDR_LEN + 4] = TCPOPT_NOP;
		out[TCP_HDR_LEN + 5] = TCPOPT_NOP;
		out[TCP_HDR_LEN + 6] = TCPOPT_SACK_PERM;
		out[TCP_HDR_LEN + 7] = 2;
		optlen = 8;
	}
	if (r->flags & SHIELD_REC_WS) {
		__u32 k = TCP_HDR_LEN + optlen;

		out[k & 63] = TCPOPT_NOP;
		out[(k + 1) & 63] = TCPOPT_WSCALE;
		out[(k + 2) & 63] = 3;
		out[(k + 3) & 63] = r->c_ws;
		optlen += 4;
	}
	cookie_put16(out, s->in.cport);
	cookie_put16(out + 2, s->in.sport);
	cookie_put32(out + 4, r->rcv_base - 1);
	cookie_put32(out + 8, 0);
	out[12] = (__u8)((TCP_HDR_LEN + optlen) / 4 << 4);
	out[13] = TCP_SYN;
	/* A SYN's window is never scaled (RFC 7323 §2.2). */
	cookie_put16(out + 14, (__u16)(win > 0xffff ? 0xffff : win));
	out[16] = out[17] = 0;
	out[18] = out[19] = 0;
	l4len = TCP_HDR_LEN + optlen;
	sum = pseudo(s, l4len);
	csum = partial ? fold(sum)
		       : (__u16)~fold(csum_add(out, l4len & 0x3c, sum));
	__builtin_memcpy(out + 16, &csum, 2);
	put_ip(ip, s->in.family, s->in.caddr, s->in.saddr, l4len);
	len = (opaque(s->hl) & 63) + l4len;
	if (bpf_skb_change_tail(skb, len, 0) < 0 ||
	    bpf_skb_store_bytes(skb, 0, f, len & FRAME_MASK,
				BPF_F_INVALIDATE_HASH) < 0)
		return -1;
	return 0;
}

/*
 * A binding flow's client segment (gateway/bind.c's bind_client): its whole
 * first query, at the client's ISN + 1, acknowledging our SYN-ACK, becomes
 * the backend's SYN, a place of the backend's backlog taken.  Anything
 * else is the daemon's, and so is every client segment once the SYN is
 * out (the query sent again, a FIN): gateway/client.c's SYN_SENT.
 */
static __always_inline enum carry_verdict
bind_c2b(struct __sk_buff *skb, struct scratch *w, struct shield_flow *r,
	 __u32 *ev)
{
	struct seg *s = &w->s;
	const struct opts *o = &w->c.o;
	__u32 paylen = s->l4len - TCP_HDR_LEN - s->optlen;
	__u32 at = s->l4off + TCP_HDR_LEN + s->optlen;

	if (carry_opts(w) ||
	    (s->flags & (TCP_SYN | TCP_RST | TCP_FIN | TCP_ACK)) != TCP_ACK ||
	    s->seq != r->rcv_base || s->ack != r->g_base + 1 ||
	    paylen < DNS_LEN_PREFIX + DNS_HDR_LEN ||
	    paylen >= SHIELD_QUERY_MAX ||
	    ((r->flags & SHIELD_REC_TS) && !o->has_ts))
		return CARRY_DAEMON;
	/* Zeroed past it, for its sum; bounded for the verifier. */
	__builtin_memset(r->query, 0, SHIELD_QUERY_MAX);
	if (bpf_skb_load_bytes(skb, at, r->query,
			       ((paylen - 1) & (SHIELD_QUERY_MAX - 1)) + 1) < 0)
		return CARRY_DAEMON;
	r->qlen = (__u16)paylen;
	if (!query_ok(r, paylen) || !query_csum_ok(w, r))
		return CARRY_DAEMON;
	if (take_ticket(r) < 0)
		return CARRY_DAEMON;
	if ((r->flags & SHIELD_REC_TS) && seq_gt(o->tsval, r->c_tsval))
		r->c_tsval = o->tsval;
	r->c_win = s->win;
	if (backend_syn(skb, w, r) < 0)
		return CARRY_DROP;
	/* gateway/backend.c's backend_open: nothing of the client's taken
	 * yet, none of the backend's answers; in its backlog, its one query
	 * asked. */
	r->b_ack = r->rcv_base;
	r->answers.nxt = r->g_base + 1;
	r->answers.pos = 0;
	r->answers.started = 0;
	r->answers.len = 0;
	r->state = SHIELD_STATE_SYN_SENT;
	r->flags |= SHIELD_REC_OPENING;
	r->queries = 1;
	*ev = SHIELD_EV_BOUND;
	count(SHIELD_BOUND_SYN);
	return CARRY_DONE;
}

/*
 * A binding flow's backend SYN-ACK (gateway/backend.c's backend_synack):
 * the backend's numbers recorded, and the SYN-ACK made the segment that
 * completes its handshake with the held query (backend_send_held's, as
 * splice_c2b translates it: at the client's ISN + 1, acknowledging the
 * backend's, the client's window at the backend's scale, the client's
 * TSval echoing the backend's), sent back out of the interface it came in
 * by.  The query stays held until the backend acknowledges it.
 */
static __always_inline enum carry_verdict
synack_b2c(struct __sk_buff *skb, struct scratch *w, struct shield_flow *r,
	   __u32 *ev)
{
	struct seg *s = &w->s;
	const struct opts *o = &w->c.o;
	__u8 *f = w->c.f, *ip = f + ETH_HDR_LEN, *out = tcp_of(&w->c, s);
	__u32 qlen = r->qlen, optlen = 0, l4len, sum, len, hl, btsval;
	__u8 mac[6];
	__u16 csum;
	int partial;

	if (carry_opts(w) ||
	    (s->flags & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) !=
		    (TCP_SYN | TCP_ACK) ||
	    s->ack != r->rcv_base || s->l4len != TCP_HDR_LEN + s->optlen ||
	    !qlen || qlen >= SHIELD_QUERY_MAX ||
	    ((r->flags & SHIELD_REC_TS) && !o->has_ts))
		return CARRY_DAEMON;
	if (!csum_ok(s, out, &partial)) {
		count(SHIELD_CSUM_BAD);
		return CARRY_DROP;
	}
	if (partial && s->l4off != s->hl)
		return CARRY_DAEMON;
	btsval = o->tsval;
	r->bisn = s->seq;
	r->seq_delta = r->bisn - r->g_base;
	r->b_maxwin = s->win;		/* a SYN-ACK's is never scaled */
	r->ts_out = r->gw_tsval;
	if (r->flags & SHIELD_REC_TS)
		r->ts_delta = r->gw_tsval - btsval;
	if ((r->flags & SHIELD_REC_WS) && o->has_ws) {
		r->b_ws = o->ws;
		r->c_ws_b = r->c_ws;
	}
	r->b_win = (__u16)(s->win >> (r->b_ws & 15));

	if (r->flags & SHIELD_REC_TS) {
		out[TCP_HDR_LEN] = TCPOPT_NOP;
		out[TCP_HDR_LEN + 1] = TCPOPT_NOP;
		out[TCP_HDR_LEN + 2] = TCPOPT_TS;
		out[TCP_HDR_LEN + 3] = 10;
		cookie_put32(out + TCP_HDR_LEN + 4, r->c_tsval);
		cookie_put32(out + TCP_HDR_LEN + 8, btsval);
		optlen = 12;
	}
	cookie_put16(out, s->in.sport);
	cookie_put16(out + 2, s->in.cport);
	cookie_put32(out + 4, r->rcv_base);
	cookie_put32(out + 8, r->bisn + 1);
	out[12] = (__u8)((TCP_HDR_LEN + optlen) / 4 << 4);
	out[13] = TCP_ACK | TCP_PSH;
	cookie_put16(out + 14, r->c_ws != r->c_ws_b
				       ? win_rescale(r->c_win, r->c_ws, r->c_ws_b)
				       : r->c_win);
	out[16] = out[17] = 0;
	out[18] = out[19] = 0;
	hl = opaque(s->hl) & 63;
	l4len = TCP_HDR_LEN + optlen + qlen;
	sum = pseudo(s, l4len);
	csum = partial ? fold(sum)
		       : (__u16)~fold(query_sum(r, csum_add(out,
							   (TCP_HDR_LEN + optlen) & 0x3c,
							   sum)));
	__builtin_memcpy(out + 16, &csum, 2);
	__builtin_memcpy(mac, f, 6);
	__builtin_memcpy(f, f + 6, 6);
	__builtin_memcpy(f + 6, mac, 6);
	put_ip(ip, s->in.family, s->in.saddr, s->in.caddr, l4len);
	len = hl + TCP_HDR_LEN + optlen;
	if (bpf_skb_change_tail(skb, len + qlen, 0) < 0 ||
	    bpf_skb_store_bytes(skb, 0, f, len & FRAME_MASK,
				BPF_F_INVALIDATE_HASH) < 0 ||
	    bpf_skb_store_bytes(skb, len & FRAME_MASK, r->query,
				((qlen - 1) & (SHIELD_QUERY_MAX - 1)) + 1,
				0) < 0)
		return CARRY_DROP;
	/* splice_c2b of the held segment. */
	r->c_maxwin = max32(r->c_maxwin, (__u32)r->c_win << (r->c_ws & 15));
	r->c_nxt = r->rcv_base + qlen;
	r->rcv_base += qlen;
	r->flags |= SHIELD_REC_HELD | SHIELD_REC_OPENING;
	r->state = SHIELD_STATE_ESTABLISHED;
	*ev = SHIELD_EV_BOUND;
	count(SHIELD_BOUND_SYNACK);
	return CARRY_REDIRECT;
}

/*
 * A segment of a live flow (its slot from the live-tuple map t): carried
 * when the daemon gave it to the program, passed on to the daemon when it
 * did not or the program cannot judge the segment.
 */
static __always_inline int
flow_segment(struct __sk_buff *skb, const struct shield_config *cfg,
	     struct scratch *w, const struct shield_tuple *t, __u32 slot,
	     int from_client)
{
	struct shield_flow *r = bpf_map_lookup_elem(&shield_recs, &slot);
	enum carry_verdict v = CARRY_DAEMON;
	__u32 ev = SHIELD_EV_NONE, gone;

	if (!r) {
		count(SHIELD_PASS_FLOW);
		return TC_ACT_OK;
	}
	/* Inside before looking at the owner (both full barriers): the
	 * daemon that takes the record back waits for this to go. */
	__sync_fetch_and_add(&r->busy, 1);
	if (__sync_fetch_and_or(&r->owner, 0) == SHIELD_OWNER_KERNEL &&
	    same_tuple(&r->key, t) &&
	    skb->ingress_ifindex ==
		    (from_client ? r->c_ifindex : r->b_ifindex)) {
		__u8 was = r->fin, state = r->state;

		ev = 0;
		if (state == SHIELD_STATE_BINDING)
			v = from_client ? bind_c2b(skb, w, r, &ev)
					: CARRY_DAEMON;
		else if (state == SHIELD_STATE_SYN_SENT)
			v = from_client ? CARRY_DAEMON
					: synack_b2c(skb, w, r, &ev);
		else
			v = from_client ? carry_c2b(skb, cfg, w, r, &ev)
					: carry_b2c(skb, w, r, &ev);
		if (v == CARRY_DONE || v == CARRY_REDIRECT) {
			if (r->fin && r->state == SHIELD_STATE_ESTABLISHED)
				r->state = SHIELD_STATE_CLOSING;
			if ((r->fin & ~was & (SHIELD_FIN_CLIENT_ACKED |
					      SHIELD_FIN_BACKEND_ACKED)) &&
			    (r->fin & (SHIELD_FIN_CLIENT_ACKED |
				       SHIELD_FIN_BACKEND_ACKED)) ==
				    (SHIELD_FIN_CLIENT_ACKED |
				     SHIELD_FIN_BACKEND_ACKED))
				ev |= SHIELD_EV_CLOSED;
			r->last_ns = w->s.mono_ns;
			/* The held query the SYN-ACK became is a client
			 * segment spliced, as the daemon counts it; the
			 * backend's SYN is none. */
			if (v == CARRY_REDIRECT || from_client)
				r->c2b += v == CARRY_REDIRECT ||
					  state != SHIELD_STATE_BINDING;
			else
				r->b2c++;
			if (ev)
				tell(r, slot, ev);
		}
	}
	/* Out, after every write to the record: the fetch's full barrier
	 * (its value kept, so that no compiler drops it to a plain add). */
	gone = __sync_fetch_and_add(&r->busy, -1);
	w->c.i = gone;
	if (v == CARRY_DROP)
		return TC_ACT_SHOT;
	if (v == CARRY_DAEMON) {
		count(ev == SHIELD_EV_NONE ? SHIELD_PASS_FLOW
					   : SHIELD_PASS_CARRIED);
		return TC_ACT_OK;
	}
	if (v == CARRY_REDIRECT)
		return bpf_redirect(skb->ifindex, 0);
	skb->mark = cfg->carried_mark;
	return TC_ACT_OK;
}

/* A segment from a service's address and port to a flow the program may
 * carry; anything else from there goes on untouched. */
static __always_inline int
backend_segment(struct __sk_buff *skb, const struct shield_config *cfg,
		struct scratch *w)
{
	const struct seg *s = &w->s;
	struct shield_service_key sk = { 0 };
	struct shield_tuple t = { 0 };
	__u32 *slot;

	sk.family = s->in.family;
	sk.port = bpf_htons(s->in.cport);
	__builtin_memcpy(sk.addr, s->in.caddr, 16);
	if (!bpf_map_lookup_elem(&shield_services, &sk))
		return TC_ACT_OK;
	t.family = s->in.family;
	t.cport = bpf_htons(s->in.sport);
	t.sport = bpf_htons(s->in.cport);
	__builtin_memcpy(t.caddr, s->in.saddr, 16);
	__builtin_memcpy(t.saddr, s->in.caddr, 16);
	slot = bpf_map_lookup_elem(&shield_flows, &t);
	return slot ? flow_segment(skb, cfg, w, &t, *slot, 0) : TC_ACT_OK;
}

SEC("tc")
int
shield(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct shield_config *cfg = bpf_map_lookup_elem(&shield_config, &zero);
	struct shield_service_key sk = { 0 };
	struct shield_addr dst = { 0 };
	struct shield_prefix src = { 0 };
	struct shield_tuple t = { 0 };
	struct shield_service *svc;
	struct scratch *w = bpf_map_lookup_elem(&shield_scratch, &zero);
	struct seg *s;
	__u32 *slot;
	int r;

	if (!cfg || !w)
		return TC_ACT_OK;
	/* Only this program marks an ACK verified, and only where it
	 * checked the cookie, or a segment carried, which the queue rules
	 * let through: whatever came before it (another tc program, a peer
	 * in the same namespace) cannot. */
	if ((cfg->verified_mark && skb->mark == cfg->verified_mark) ||
	    (cfg->carried_mark && skb->mark == cfg->carried_mark))
		skb->mark = 0;
	if (!cfg->enabled || !cfg->lifetime)
		return TC_ACT_OK;
	s = &w->s;
	s->mono_ns = bpf_ktime_get_ns();
	if (cfg->stand_aside_ms &&
	    s->mono_ns > cfg->heartbeat_ns + cfg->stand_aside_ms * NS_PER_MS) {
		count(SHIELD_STOOD_ASIDE);
		return TC_ACT_OK;
	}
	r = read_seg(skb, s, &w->c);
	if (r == SEG_OTHER)
		return TC_ACT_OK;
	if (r == SEG_UNREAD) {
		/* Its port may be a service's: to a protected address, the
		 * daemon's to judge (and drop) within its budget. */
		dst.family = s->in.family;
		__builtin_memcpy(dst.addr, s->in.saddr, 16);
		if (!bpf_map_lookup_elem(&shield_addrs, &dst))
			return TC_ACT_OK;
		if (!special_allowed(cfg, wall_s(cfg, s))) {
			count(SHIELD_SHED);
			return TC_ACT_SHOT;
		}
		count(s->in.family == COOKIE_FAMILY_INET ? SHIELD_PASS_UNREAD4
							 : SHIELD_PASS_UNREAD6);
		return TC_ACT_OK;
	}
	sk.family = s->in.family;
	sk.port = bpf_htons(s->in.sport);
	__builtin_memcpy(sk.addr, s->in.saddr, 16);
	svc = bpf_map_lookup_elem(&shield_services, &sk);
	if (!svc)
		return backend_segment(skb, cfg, w);
	src.prefixlen = 8 + 128;
	src.family = s->in.family;
	__builtin_memcpy(src.addr, s->in.caddr, 16);
	if ((cfg->lists & SHIELD_LIST_DENY) &&
	    bpf_map_lookup_elem(&shield_deny, &src)) {
		count(SHIELD_DENIED);
		return TC_ACT_SHOT;
	}
	if ((cfg->lists & SHIELD_LIST_ALLOW) &&
	    bpf_map_lookup_elem(&shield_allow, &src)) {
		count(SHIELD_PASS_ALLOWED);
		return TC_ACT_OK;
	}
	t.family = s->in.family;
	t.cport = bpf_htons(s->in.cport);
	t.sport = bpf_htons(s->in.sport);
	__builtin_memcpy(t.caddr, s->in.caddr, 16);
	__builtin_memcpy(t.saddr, s->in.saddr, 16);
	slot = bpf_map_lookup_elem(&shield_flows, &t);
	if (slot)
		return flow_segment(skb, cfg, w, &t, *slot, 1);
	if (s->flags & TCP_SYN)
		return syn(skb, cfg, svc, w);
	return ack(skb, cfg, svc, w);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
