/*
 * The TCPCT initiator's user-space TCP (client/utcp.c), which runs as root
 * and parses whatever arrives for its port: a connection is set up from the
 * input's first two bytes and its SYN sent, then the fuzzer plays the
 * server with a sequence of records, as fuzz_worker's:
 *
 *	opts (1 byte)  size (1 byte)  records...
 *	record: ctl (1 byte)  len (2 bytes, big-endian)  an IP packet
 *
 * opts: 0x01 TCPCT, 0x02 SACK, 0x04 Timestamps, 0x08 window scale, 0x10
 * data in the SYN, 0x20 IPv6.  size: the initiator cookie, 8 + 2 · (size
 * & 7) % 5 bytes; 64 · (size >> 3) bytes are written before the SYN.
 *
 * ctl, for each record (the packet, if any, is handed over first):
 *
 *	0x01 ANSWER	the packet is the server's: the connection's tuple,
 *			ack of all utcp sent, TSecr of its last TSval, the
 *			seq it expects next, and a Cookie-Pair of the right
 *			size is made the connection's
 *	0x02 KEEPSEQ	with ANSWER, the packet's own seq
 *	0x04 RAWSUM	the TCP checksum as given (else made right)
 *	0x08 KNOWN	the kernel vouched for the checksum
 *	0x10 READ	the application reads all there is
 *	0x20 WRITE	it writes 700 bytes
 *	0x40 SHUTDOWN	it closes its half
 *	0x80 RUN	the retransmission timer expires, utcp_run
 *
 * Every segment utcp sends must parse with a right checksum, and once
 * TCPCT is negotiated its FINs and RSTs carry the pair (RFC 6013).  The
 * receive ring's bytes and out-of-order ranges stay within the ring, and
 * the send side's numbers in order.
 */
#include <string.h>

#include "../../client/utcp.h"
#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../nfq/tcpct.h"
#include "../../nfq/tcpopt.h"
#include "fuzz.h"

#define OPT_TCPCT	0x01
#define OPT_SACK	0x02
#define OPT_TS		0x04
#define OPT_WS		0x08
#define OPT_SYN_DATA	0x10
#define OPT_V6		0x20

#define CTL_ANSWER	0x01
#define CTL_KEEPSEQ	0x02
#define CTL_RAWSUM	0x04
#define CTL_KNOWN	0x08
#define CTL_READ	0x10
#define CTL_WRITE	0x20
#define CTL_SHUTDOWN	0x40
#define CTL_RUN		0x80

#define WRITE_LEN	700
#define ISS		1000

#define SEQ_LEQ(a, b)	((int32_t)((a) - (b)) <= 0)
#define SEQ_GT(a, b)	((int32_t)((a) - (b)) > 0)

static const struct inaddr client4 = { { 198, 51, 100, 2 } };
static const struct inaddr server4 = { { 192, 0, 2, 2 } };
static const struct inaddr client6 = { { 0x20, 0x01, 0x0d, 0xb8, 0, 0x0c,
					  0, 0, 0, 0, 0, 0, 0, 0, 0, 2 } };
static const struct inaddr server6 = { { 0x20, 0x01, 0x0d, 0xb8, 0, 0x0b,
					  0, 0, 0, 0, 0, 0, 0, 0, 0, 2 } };

static struct utcp u;
static uint32_t last_tsval;	/* in utcp's last segment */

/* A segment utcp built: it parses, with a right checksum, and a FIN or
 * RST of a TCPCT connection carries the pair. */
static void
tap(void *arg, const uint8_t *b, size_t len)
{
	static uint8_t copy[65536];
	struct tcpopt o;
	struct pkt p;
	unsigned clen;

	(void)arg;
	FUZZ_ASSERT(len <= sizeof(copy));
	memcpy(copy, b, len);
	FUZZ_ASSERT(pkt_parse(&p, copy, len) == PKT_OK && p.len == len);
	FUZZ_ASSERT(pkt_tcp_csum_ok(&p));
	FUZZ_ASSERT(p.sport == u.lport && p.dport == u.rport);
	FUZZ_ASSERT(tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN,
				 p.doff - TCP_HDR_LEN, TCP_HDR_LEN,
				 &o) == TCPOPT_OK);
	if (o.has_tsx)
		FUZZ_ASSERT(tcpct_ext_parse(&p, &o) == TCPOPT_OK);
	if (o.has_ts)
		last_tsval = o.tsval;
	if (u.tcpct && (p.flags & (TCP_FIN | TCP_RST))) {
		FUZZ_ASSERT(tcpct_form(&o, p.flags, &clen) == TCPCT_PAIR &&
			    clen == u.clen);
		FUZZ_ASSERT(!memcmp(pkt_tcp(&p) + o.ck_off, u.ci, clen) &&
			    !memcmp(pkt_tcp(&p) + o.ck_off + clen, u.cr, clen));
	}
}

/* The connection's numbers, after every step. */
static void
check_state(void)
{
	unsigned i;

	FUZZ_ASSERT(u.state <= UTCP_RESET);
	FUZZ_ASSERT(u.rlen <= UTCP_RBUF && u.rhead < UTCP_RBUF);
	FUZZ_ASSERT(u.slen <= UTCP_SBUF);
	FUZZ_ASSERT(u.nranges <= UTCP_RANGES);
	for (i = 0; i < u.nranges; i++) {
		const struct utcp_range *r = &u.ranges[i];

		/* Beyond rcv_nxt, and inside the ring's free part. */
		FUZZ_ASSERT(SEQ_GT(r->start, u.rcv_nxt) &&
			    SEQ_GT(r->end, r->start));
		FUZZ_ASSERT(r->end - u.rcv_nxt <= UTCP_RBUF - u.rlen);
	}
	if (u.state == UTCP_SYN_SENT || u.state == UTCP_CLOSED)
		return;
	FUZZ_ASSERT(SEQ_LEQ(u.snd_una, u.snd_nxt) &&
		    SEQ_LEQ(u.snd_nxt, u.snd_max));
	/* What is in flight is queued data, and the FIN. */
	FUZZ_ASSERT(u.snd_max - u.snd_una <= u.slen + 1);
}

/* Makes the packet the server's answer to what utcp sent (ANSWER). */
static void
answer(struct pkt *p, bool keep_seq)
{
	uint8_t *th = pkt_tcp(p);
	size_t alen = pkt_addrlen(p->family);
	unsigned src = p->family == AF_INET ? 12 : 8, clen;
	struct tcpopt o;

	if (p->family != u.family)
		return;
	memcpy(p->data + src, u.raddr.b, alen);
	memcpy(p->data + src + alen, u.laddr.b, alen);
	put16(th + TCP_OFF_SPORT, u.rport);
	put16(th + TCP_OFF_DPORT, u.lport);
	put32(th + TCP_OFF_ACK, u.state == UTCP_SYN_SENT
				? ISS + 1 + u.syn_len : u.snd_max);
	if (!keep_seq && !(p->flags & TCP_SYN))
		put32(th + TCP_OFF_SEQ, u.rcv_nxt);
	if (tcpopt_parse(th + TCP_HDR_LEN, p->doff - TCP_HDR_LEN, TCP_HDR_LEN,
			 &o) == TCPOPT_OK &&
	    (!o.has_tsx || tcpct_ext_parse(p, &o) == TCPOPT_OK)) {
		if (o.has_ts)
			put32(th + o.ts_off + 4, last_tsval);
		if (tcpct_form(&o, p->flags, &clen) == TCPCT_PAIR &&
		    clen == u.clen) {
			memcpy(th + o.ck_off, u.ci, clen);
			memcpy(th + o.ck_off + clen, u.cr, clen);
		}
	}
	if (p->family == AF_INET) {
		put16(p->data + 10, 0);
		put16(p->data + 10, csum_fold(csum_add(0, p->data,
					(size_t)(p->data[0] & 0x0f) * 4)));
	}
}

static void
one_record(uint8_t ctl, uint8_t *buf, size_t len)
{
	static const uint8_t junk[WRITE_LEN] = { 'q' };
	struct pkt p;

	if (ctl & CTL_WRITE)
		(void)utcp_write(&u, junk, sizeof(junk));
	if (len) {
		if (pkt_parse(&p, buf, len) == PKT_OK) {
			if (ctl & CTL_ANSWER)
				answer(&p, ctl & CTL_KEEPSEQ);
			if (!(ctl & CTL_RAWSUM) &&
			    pkt_parse(&p, buf, len) == PKT_OK)
				pkt_tcp_csum_set(&p);
		}
		utcp_input(&u, buf, len, ctl & CTL_KNOWN);
		check_state();
	}
	if (ctl & CTL_READ) {
		static uint8_t rd[UTCP_RBUF];
		size_t had = u.rlen, n = utcp_read(&u, rd, sizeof(rd));

		FUZZ_ASSERT(n == had && u.rlen == 0);
	}
	if (ctl & CTL_SHUTDOWN)
		utcp_shutdown(&u);
	if (ctl & CTL_RUN) {
		if (u.rto_at)
			u.rto_at = 1;	/* due */
		(void)utcp_run(&u, 0);
	}
	check_state();
	(void)utcp_eof(&u);
	(void)utcp_done(&u);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t pre[64 * 31] = { 'p' };
	struct utcp_opts o = { 0 };
	bool v6;
	unsigned i;

	if (size < 2)
		return 0;
	o.tcpct = data[0] & OPT_TCPCT;
	o.sack = data[0] & OPT_SACK;
	o.ts = data[0] & OPT_TS;
	o.ws = data[0] & OPT_WS;
	o.syn_data = data[0] & OPT_SYN_DATA;
	o.clen = TCPCT_COOKIE_MIN + 2 * ((data[1] & 7) % 5);
	o.tap = tap;
	v6 = data[0] & OPT_V6;
	if (utcp_init(&u, v6 ? AF_INET6 : AF_INET, v6 ? &client6 : &client4,
		      40000, v6 ? &server6 : &server4, 53, &o) < 0)
		abort();
	u.iss = ISS;
	for (i = 0; i < TCPCT_COOKIE_MAX; i++)
		u.ci[i] = (uint8_t)(0x11 * (i + 1));
	last_tsval = 0;
	(void)utcp_write(&u, pre, 64u * (data[1] >> 3));
	utcp_start(&u);
	data += 2;
	size -= 2;

	while (size >= 3) {
		uint8_t buf[65536], ctl = data[0];
		size_t len = get16(data + 1);

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		memcpy(buf, data, len);
		data += len;
		size -= len;
		one_record(ctl, buf, len);
	}
	if (getenv("FUZZ_UTCP_STATS"))	/* what an input reached */
		fprintf(stderr, "%s tcpct %d in %lu out %lu ooo %lu "
			"unguarded %lu bad_csum %lu rcv %u snd %u\n",
			utcp_state_name(u.state), u.tcpct, u.st.segs_in,
			u.st.segs_out, u.st.ooo, u.st.unguarded, u.st.bad_csum,
			(unsigned)(u.rcv_nxt - u.irs),
			(unsigned)(u.snd_una - u.iss));
	/* The rings stay for the next input (utcp_init): not closed. */
	return 0;
}
