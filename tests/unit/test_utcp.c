/*
 * client/utcp.c, the initiator tools' user-space TCP, through its close
 * sequences (issue 25), IPv4 and IPv6, plain and TCPCT: the test plays an
 * HTTP/1.0 server with segments built here and reads back every segment
 * utcp builds (its tap).  Our FIN first, then the answer, then the
 * server's FIN (tcpct-connect -n's exchange); both FINs crossing; the
 * server's FIN first; RSTs after our FIN; the answer sent again after our
 * FIN.  After its FIN utcp keeps receiving under RFC 9293 §3.10.7.4 and
 * RFC 5961, acknowledges, and hands over every byte before it says done.
 */
#include <string.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>

#include "../../client/utcp.h"
#include "../../nfq/pkt.h"
#include "../../nfq/tcpct.h"
#include "../../nfq/tcpopt.h"
#include "suites.h"
#include "testutil.h"

#define ISS		1000u		/* ours */
#define PEER_ISS	0x7ffffff0u	/* the server's: wraps past 2^31 */
#define LPORT		40000
#define RPORT		80
#define PEER_WS		7
#define PEER_WIN	512		/* << PEER_WS: 64 KiB */
#define ANSWER_LEN	383		/* the answer */

static const char request[] = "GET /hello HTTP/1.0\r\n\r\n";
#define REQ_LEN		((uint32_t)sizeof(request) - 1)

/* A segment utcp built, as the tap saw it. */
struct seg {
	uint8_t flags;
	uint32_t seq, ack;
	size_t len;
	bool pair;		/* carries our Cookie-Pair */
	uint8_t data[1500];
};

static struct utcp u;
static struct seg out[32];
static unsigned nout;
static uint8_t family;
static uint32_t our_tsval, peer_tsval;
static uint8_t cr[TCPCT_COOKIE_MAX];	/* the server's cookie */
static uint8_t answer[ANSWER_LEN];

static void
tap(void *arg, const uint8_t *b, size_t len)
{
	uint8_t copy[2048];
	struct seg *s = &out[nout < 32 ? nout : 31];
	struct tcpopt o;
	struct pkt p;
	unsigned clen;

	(void)arg;
	CU_ASSERT_FATAL(len <= sizeof(copy));
	memcpy(copy, b, len);
	CU_ASSERT_FATAL(pkt_parse(&p, copy, len) == PKT_OK);
	CU_ASSERT(pkt_tcp_csum_ok(&p));
	CU_ASSERT_FATAL(tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN,
				     p.doff - TCP_HDR_LEN, TCP_HDR_LEN,
				     &o) == TCPOPT_OK);
	if (o.has_tsx)
		CU_ASSERT_FATAL(tcpct_ext_parse(&p, &o) == TCPOPT_OK);
	if (o.has_ts)
		our_tsval = o.tsval;
	s->flags = p.flags;
	s->seq = p.seq;
	s->ack = p.ack;
	s->len = p.paylen;
	CU_ASSERT_FATAL(s->len <= sizeof(s->data));
	memcpy(s->data, p.data + p.payoff, p.paylen);
	s->pair = tcpct_form(&o, p.flags, &clen) == TCPCT_PAIR &&
		  clen == u.clen && !memcmp(pkt_tcp(&p) + o.ck_off, u.ci, clen) &&
		  !memcmp(pkt_tcp(&p) + o.ck_off + clen, cr, clen);
	if (nout < 32)
		nout++;
}

/* The last segment utcp sent. */
static const struct seg *
last(void)
{
	CU_ASSERT_FATAL(nout > 0);
	return &out[nout - 1];
}

/*
 * A segment from the server: Timestamps in the option area, or with pair
 * (a guarded FIN or RST of a TCPCT server, HACKING.md §1 step 4) TSX and
 * the extension with the Cookie-Pair.
 */
static void
peer_seg(uint8_t flags, uint32_t seq, uint32_t ack, uint16_t win,
	 const uint8_t *data, size_t len, bool pair)
{
	uint8_t buf[4096], opts[TCP_OPT_MAX], body[TCPOPT_TSX_LEN + TCPCT_EXT_MAX + 1500];
	struct pkt_tcp_spec s = { 0 };
	struct pkt p;
	size_t n;

	s.family = family;
	s.src = family == AF_INET ? &test_backend4 : &test_backend6;
	s.dst = family == AF_INET ? &test_client4 : &test_client6;
	s.sport = RPORT;
	s.dport = LPORT;
	s.seq = seq;
	s.ack = ack;
	s.flags = flags;
	s.win = win;
	if (pair) {
		struct tcpct_ext_spec e = {
			.tsval = ++peer_tsval, .tsecr = our_tsval,
			.ci = u.ci, .cr = cr, .clen = u.clen,
		};
		size_t area;

		n = tcpct_ext_build(body, sizeof(body), &e, &area);
		CU_ASSERT_FATAL(n > 0 && n + len <= sizeof(body));
		memcpy(opts, body, area);
		memmove(body, body + area, n - area);
		if (len)
			memcpy(body + n - area, data, len);
		s.opts = opts;
		s.optlen = area;
		s.pay = body;
		s.paylen = n - area + len;
	} else {
		struct tcpopt_spec t = {
			.ts = true, .tsval = ++peer_tsval, .tsecr = our_tsval,
		};

		s.opts = opts;
		s.optlen = tcpopt_build(opts, &t);
		s.pay = data;
		s.paylen = len;
	}
	n = pkt_build_tcp(buf, sizeof(buf), &s, &p);
	CU_ASSERT_FATAL(n > 0);
	utcp_input(&u, buf, n, false);
}

/* As the server sends it: FIN and RST guarded on a TCPCT connection. */
static void
peer(uint8_t flags, uint32_t seq, uint32_t ack, const uint8_t *data,
     size_t len)
{
	peer_seg(flags, seq, ack, PEER_WIN, data, len,
		 u.tcpct && (flags & (TCP_FIN | TCP_RST)));
}

/* Sequence numbers: the server's byte i of the answer, and ours after the
 * request (where our FIN goes). */
#define PSEQ(i)		(PEER_ISS + 1 + (uint32_t)(i))
#define OUR_FIN		(ISS + 1 + REQ_LEN)

/*
 * A connection to the server with the request written and, with shut, our
 * FIN queued before the SYN (tcpct-connect -n without +wait-eof), up to
 * the third packet.  Returns the index of the third packet in out.
 */
static unsigned
start(uint8_t fam, bool tcpct, bool shut)
{
	struct utcp_opts o = {
		.tcpct = tcpct, .clen = TCPCT_COOKIE_MAX, .sack = true,
		.ts = true, .ws = true, .tap = tap,
	};
	const struct inaddr *la = fam == AF_INET ? &test_client4 : &test_client6;
	const struct inaddr *ra = fam == AF_INET ? &test_backend4 : &test_backend6;
	struct tcpopt_spec t = {
		.mss = 1460, .sack_perm = true, .ts = true, .wscale = true,
		.wscale_shift = PEER_WS,
	};
	uint8_t opts[TCP_OPT_MAX];
	struct pkt_tcp_spec s = { 0 };
	uint8_t buf[256];
	struct pkt p;
	size_t n, i;

	family = fam;
	nout = 0;
	peer_tsval = 5000;
	for (i = 0; i < sizeof(answer); i++)
		answer[i] = (uint8_t)('a' + i % 26);
	for (i = 0; i < sizeof(cr); i++)
		cr[i] = (uint8_t)(0xc0 + i);
	CU_ASSERT_FATAL(utcp_init(&u, fam, la, LPORT, ra, RPORT, &o) == 0);
	u.iss = ISS;
	for (i = 0; i < sizeof(u.ci); i++)
		u.ci[i] = (uint8_t)(0x11 * (i + 1));
	CU_ASSERT_FATAL(utcp_write(&u, request, REQ_LEN) == REQ_LEN);
	if (shut)
		utcp_shutdown(&u);
	utcp_start(&u);
	CU_ASSERT_FATAL(nout == 1 && out[0].flags == TCP_SYN);

	t.tsval = ++peer_tsval;
	t.tsecr = our_tsval;
	n = tcpopt_build(opts, &t);
	if (tcpct)
		CU_ASSERT_FATAL(tcpct_put_cookie(opts, &n, sizeof(opts), cr,
						 TCPCT_COOKIE_MAX));
	s.family = fam;
	s.src = ra;
	s.dst = la;
	s.sport = RPORT;
	s.dport = LPORT;
	s.seq = PEER_ISS;
	s.ack = ISS + 1;
	s.flags = TCP_SYN | TCP_ACK;
	s.win = 65535;
	s.opts = opts;
	s.optlen = n;
	n = pkt_build_tcp(buf, sizeof(buf), &s, &p);
	CU_ASSERT_FATAL(n > 0);
	utcp_input(&u, buf, n, false);
	CU_ASSERT_FATAL(u.tcpct == tcpct);
	CU_ASSERT_FATAL(nout >= 2);
	return 1;
}

/* Every byte utcp holds for the application equals the answer's first
 * len bytes. */
static void
read_answer(size_t len)
{
	static uint8_t got[UTCP_RBUF];

	CU_ASSERT_EQUAL(utcp_read(&u, got, sizeof(got)), len);
	CU_ASSERT_EQUAL(memcmp(got, answer, len), 0);
}

/* The retransmission timer expires. */
static int
rto_fires(void)
{
	CU_ASSERT_FATAL(u.rto_at != 0);
	u.rto_at = 1;
	return utcp_run(&u, 0);
}

/* Each test runs four times: IPv4 and IPv6, plain and TCPCT. */
#define CASES		4
#define CASE_FAMILY(c)	((c) & 1 ? AF_INET6 : AF_INET)
#define CASE_TCPCT(c)	(((c) & 2) != 0)

/*
 * tcpct-connect -n: request and FIN queued before the SYN.  The FIN rides
 * with the request in the third packet, as Linux sends a FIN with data not
 * yet sent (one segment: tcpctd holds the whole of it while it connects
 * the backend, where a FIN behind it was dropped and sent again 200 ms
 * later).  The answer after our FIN is taken and acknowledged; with the
 * server's FIN in the same burst, utcp is not done until it is read.
 */
static void
test_our_fin_first(void)
{
	for (int c = 0; c < CASES; c++) {
		uint8_t fam = CASE_FAMILY(c);
		bool ct = CASE_TCPCT(c);
		unsigned third = start(fam, ct, true), n;
		const struct seg *s;

		CU_ASSERT_EQUAL(nout, third + 1);
		s = &out[third];
		CU_ASSERT_EQUAL(s->flags, TCP_ACK | TCP_PSH | TCP_FIN);
		CU_ASSERT_EQUAL(s->seq, ISS + 1);
		CU_ASSERT_EQUAL(s->ack, PSEQ(0));
		CU_ASSERT_EQUAL(s->len, REQ_LEN);
		CU_ASSERT_EQUAL(memcmp(s->data, request, REQ_LEN), 0);
		CU_ASSERT_EQUAL(s->pair, ct);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT1);

		/* Request and FIN acknowledged: nothing to answer. */
		n = nout;
		peer(TCP_ACK, PSEQ(0), OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);
		CU_ASSERT_EQUAL(nout, n);

		/* The answer's head (Python's http.server writes its
		 * headers first), then its rest with the FIN. */
		peer(TCP_ACK | TCP_PSH, PSEQ(0), OUR_FIN + 1, answer, 155);
		CU_ASSERT_EQUAL(nout, n + 1);
		s = last();
		CU_ASSERT_EQUAL(s->flags, TCP_ACK);
		CU_ASSERT_EQUAL(s->seq, OUR_FIN + 1);
		CU_ASSERT_EQUAL(s->ack, PSEQ(155));
		peer(TCP_ACK | TCP_PSH | TCP_FIN, PSEQ(155), OUR_FIN + 1,
		     answer + 155, ANSWER_LEN - 155);
		CU_ASSERT_EQUAL(nout, n + 2);
		s = last();
		CU_ASSERT_EQUAL(s->flags, TCP_ACK);
		CU_ASSERT_EQUAL(s->ack, PSEQ(ANSWER_LEN) + 1);
		/* The last ACK is guarded (HACKING.md §1 step 4). */
		CU_ASSERT_EQUAL(s->pair, ct);
		CU_ASSERT_EQUAL(u.state, UTCP_TIME_WAIT);

		/* Closed, but the answer is not read yet: not done. */
		CU_ASSERT_FALSE(utcp_done(&u));
		CU_ASSERT_FALSE(utcp_eof(&u));
		read_answer(ANSWER_LEN);
		CU_ASSERT_TRUE(utcp_eof(&u));
		CU_ASSERT_TRUE(utcp_done(&u));

		/* Its FIN again (our ACK lost): acknowledged again. */
		peer(TCP_ACK | TCP_FIN, PSEQ(ANSWER_LEN), OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(nout, n + 3);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN) + 1);
		CU_ASSERT_EQUAL(u.state, UTCP_TIME_WAIT);
		utcp_close(&u);
	}
}

/*
 * Both FINs cross: the server's does not acknowledge ours (CLOSING); ours
 * goes again on the timer, alone; the server's again is acknowledged
 * again; the ACK of ours ends it.
 */
static void
test_simultaneous_close(void)
{
	for (int c = 0; c < CASES; c++) {
		uint8_t fam = CASE_FAMILY(c);
		bool ct = CASE_TCPCT(c);
		unsigned third = start(fam, ct, false);

		CU_ASSERT_EQUAL(out[third].flags, TCP_ACK | TCP_PSH);
		CU_ASSERT_EQUAL(out[third].len, REQ_LEN);
		peer(TCP_ACK | TCP_PSH, PSEQ(0), OUR_FIN, answer, ANSWER_LEN);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN));
		utcp_shutdown(&u);
		CU_ASSERT_EQUAL(last()->flags, TCP_ACK | TCP_FIN);
		CU_ASSERT_EQUAL(last()->seq, OUR_FIN);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT1);

		peer(TCP_ACK | TCP_FIN, PSEQ(ANSWER_LEN), OUR_FIN, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_CLOSING);
		CU_ASSERT_EQUAL(last()->flags, TCP_ACK);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN) + 1);
		CU_ASSERT_EQUAL(last()->pair, ct);

		nout = 0;
		CU_ASSERT_EQUAL(rto_fires(), 0);
		CU_ASSERT_EQUAL(nout, 1);
		CU_ASSERT_EQUAL(out[0].flags, TCP_ACK | TCP_FIN);
		CU_ASSERT_EQUAL(out[0].seq, OUR_FIN);
		CU_ASSERT_EQUAL(out[0].len, 0);
		CU_ASSERT_EQUAL(out[0].pair, ct);

		peer(TCP_ACK | TCP_FIN, PSEQ(ANSWER_LEN), OUR_FIN, NULL, 0);
		CU_ASSERT_EQUAL(nout, 2);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN) + 1);
		CU_ASSERT_EQUAL(u.state, UTCP_CLOSING);

		peer(TCP_ACK, PSEQ(ANSWER_LEN) + 1, OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_TIME_WAIT);
		CU_ASSERT_EQUAL(u.rto_at, 0);
		CU_ASSERT_FALSE(utcp_done(&u));
		read_answer(ANSWER_LEN);
		CU_ASSERT_TRUE(utcp_eof(&u));
		CU_ASSERT_TRUE(utcp_done(&u));
		utcp_close(&u);
	}
}

/*
 * The server closes first (what +wait-eof waits for).  Before that, a FIN
 * that acknowledges what we never sent is not taken (RFC 5961 §5.2: an
 * ACK goes back), nor one past the window.
 */
static void
test_peer_fin_first(void)
{
	for (int c = 0; c < CASES; c++) {
		uint8_t fam = CASE_FAMILY(c);
		bool ct = CASE_TCPCT(c);
		unsigned n;

		start(fam, ct, false);
		peer(TCP_ACK, PSEQ(0), OUR_FIN, NULL, 0);
		n = nout;
		peer(TCP_ACK | TCP_FIN, PSEQ(0), OUR_FIN + 4000, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_ESTABLISHED);
		CU_ASSERT_EQUAL(nout, n + 1);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(0));
		peer(TCP_ACK | TCP_FIN, PSEQ(UTCP_RBUF + 100), OUR_FIN, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_ESTABLISHED);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(0));

		peer(TCP_ACK | TCP_PSH | TCP_FIN, PSEQ(0), OUR_FIN, answer,
		     ANSWER_LEN);
		CU_ASSERT_EQUAL(u.state, UTCP_CLOSE_WAIT);
		CU_ASSERT_EQUAL(last()->flags, TCP_ACK);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN) + 1);
		CU_ASSERT_FALSE(utcp_eof(&u));
		CU_ASSERT_FALSE(utcp_done(&u));
		read_answer(ANSWER_LEN);
		CU_ASSERT_TRUE(utcp_eof(&u));
		CU_ASSERT_FALSE(utcp_done(&u));

		utcp_shutdown(&u);
		CU_ASSERT_EQUAL(u.state, UTCP_LAST_ACK);
		CU_ASSERT_EQUAL(last()->flags, TCP_ACK | TCP_FIN);
		CU_ASSERT_EQUAL(last()->seq, OUR_FIN);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN) + 1);
		CU_ASSERT_EQUAL(last()->pair, ct);
		peer(TCP_ACK, PSEQ(ANSWER_LEN) + 1, OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_CLOSED);
		CU_ASSERT_TRUE(utcp_done(&u));
		utcp_close(&u);
	}
}

/*
 * RSTs after our FIN (RFC 5961 §3.2): one in the window but not at
 * RCV.NXT gets a challenge ACK, one outside it nothing, and neither
 * changes anything; one at RCV.NXT resets, and the bytes before it are
 * still read, but without the server's FIN the answer is not whole.  After
 * the server's FIN (CLOSING) the answer is whole: a RST only closes.
 */
static void
test_rst_after_our_fin(void)
{
	for (int c = 0; c < CASES; c++) {
		uint8_t fam = CASE_FAMILY(c);
		bool ct = CASE_TCPCT(c);
		unsigned n;

		start(fam, ct, true);
		peer(TCP_ACK, PSEQ(0), OUR_FIN + 1, NULL, 0);
		peer(TCP_ACK | TCP_PSH, PSEQ(0), OUR_FIN + 1, answer, 155);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);

		n = nout;
		peer(TCP_RST | TCP_ACK, PSEQ(155) + 1000, OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);
		CU_ASSERT_EQUAL(nout, n + 1);
		CU_ASSERT_EQUAL(last()->flags, TCP_ACK);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(155));
		peer(TCP_RST | TCP_ACK, PSEQ(0) - 100, OUR_FIN + 1, NULL, 0);
		peer(TCP_RST | TCP_ACK, PSEQ(155) + 0x40000000u, OUR_FIN + 1,
		     NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);
		CU_ASSERT_EQUAL(nout, n + 1);
		if (ct) {
			/* RFC 6013 §7: without the pair, nothing. */
			peer_seg(TCP_RST | TCP_ACK, PSEQ(155), OUR_FIN + 1,
				 PEER_WIN, NULL, 0, false);
			CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);
		}

		peer(TCP_RST | TCP_ACK, PSEQ(155), OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_RESET);
		CU_ASSERT_TRUE(utcp_done(&u));
		CU_ASSERT_EQUAL(utcp_run(&u, 0), -1);
		read_answer(155);
		CU_ASSERT_FALSE(utcp_eof(&u));
		utcp_close(&u);

		/* The answer and the server's FIN before it acknowledges
		 * ours, then its RST. */
		start(fam, ct, true);
		peer(TCP_ACK | TCP_PSH | TCP_FIN, PSEQ(0), OUR_FIN, answer,
		     ANSWER_LEN);
		CU_ASSERT_EQUAL(u.state, UTCP_CLOSING);
		peer(TCP_RST | TCP_ACK, PSEQ(ANSWER_LEN) + 1, OUR_FIN, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_CLOSED);
		CU_ASSERT_EQUAL(utcp_run(&u, 0), 0);
		CU_ASSERT_FALSE(utcp_done(&u));
		read_answer(ANSWER_LEN);
		CU_ASSERT_TRUE(utcp_eof(&u));
		CU_ASSERT_TRUE(utcp_done(&u));
		utcp_close(&u);
	}
}

/*
 * After our FIN the server sends its answer again, whole or overlapping
 * (our ACK was lost): acknowledged again, each byte delivered once, and
 * the old segment's window and ACK change nothing.  A segment that
 * acknowledges what we never sent brings no data (RFC 5961 §5.2).  And
 * ours, unacknowledged, goes again on the timer as it went: request and
 * FIN in one segment.
 */
static void
test_data_again_after_our_fin(void)
{
	for (int c = 0; c < CASES; c++) {
		uint8_t fam = CASE_FAMILY(c);
		bool ct = CASE_TCPCT(c);
		uint32_t wnd;
		unsigned n;

		start(fam, ct, true);
		nout = 0;
		CU_ASSERT_EQUAL(rto_fires(), 0);
		CU_ASSERT_EQUAL(nout, 1);
		CU_ASSERT_EQUAL(out[0].flags, TCP_ACK | TCP_PSH | TCP_FIN);
		CU_ASSERT_EQUAL(out[0].seq, ISS + 1);
		CU_ASSERT_EQUAL(out[0].len, REQ_LEN);
		CU_ASSERT_EQUAL(out[0].pair, ct);

		peer(TCP_ACK, PSEQ(0), OUR_FIN + 1, NULL, 0);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);
		wnd = u.snd_wnd;
		peer(TCP_ACK | TCP_PSH, PSEQ(0), OUR_FIN + 1, answer, 100);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(100));

		/* The same segment again, as it was first sent: before the
		 * server had our request, with its window then. */
		n = nout;
		peer_seg(TCP_ACK | TCP_PSH, PSEQ(0), ISS + 1, 3, answer, 100,
			 false);
		CU_ASSERT_EQUAL(nout, n + 1);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(100));
		CU_ASSERT_EQUAL(u.snd_wnd, wnd);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);

		/* Overlapping: 50 old bytes, 100 new. */
		peer(TCP_ACK | TCP_PSH, PSEQ(50), OUR_FIN + 1, answer + 50, 150);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(200));

		/* Acknowledging what we never sent: not taken. */
		n = nout;
		peer(TCP_ACK | TCP_PSH, PSEQ(200), OUR_FIN + 1000,
		     answer + 200, 100);
		CU_ASSERT_EQUAL(nout, n + 1);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(200));

		peer(TCP_ACK | TCP_PSH | TCP_FIN, PSEQ(200), OUR_FIN + 1,
		     answer + 200, ANSWER_LEN - 200);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(ANSWER_LEN) + 1);
		CU_ASSERT_EQUAL(u.state, UTCP_TIME_WAIT);
		read_answer(ANSWER_LEN);
		CU_ASSERT_TRUE(utcp_eof(&u));
		CU_ASSERT_TRUE(utcp_done(&u));
		utcp_close(&u);
	}
}

/*
 * After our FIN the answer fills our window (the application reads
 * nothing): a segment at rcv_nxt still brings its ACK of our FIN (RFC
 * 9293 §3.10.7.4: valid ACKs are taken with the window shut), not its
 * bytes; once read, they come again and are taken.
 */
static void
test_window_shut_after_our_fin(void)
{
	static uint8_t fill[1024];

	for (int c = 0; c < CASES; c++) {
		uint8_t fam = CASE_FAMILY(c);
		bool ct = CASE_TCPCT(c);
		uint32_t i;

		start(fam, ct, true);
		for (i = 0; i < UTCP_RBUF / sizeof(fill); i++)
			peer(TCP_ACK, PSEQ(i * sizeof(fill)), OUR_FIN, fill,
			     sizeof(fill));
		CU_ASSERT_EQUAL_FATAL(u.rlen, UTCP_RBUF);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(UTCP_RBUF));
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT1);

		peer(TCP_ACK | TCP_PSH | TCP_FIN, PSEQ(UTCP_RBUF), OUR_FIN + 1,
		     answer, 100);
		CU_ASSERT_EQUAL(u.state, UTCP_FIN_WAIT2);
		CU_ASSERT_EQUAL(u.rlen, UTCP_RBUF);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(UTCP_RBUF));

		while (utcp_read(&u, fill, sizeof(fill)) > 0)
			;
		peer(TCP_ACK | TCP_PSH | TCP_FIN, PSEQ(UTCP_RBUF), OUR_FIN + 1,
		     answer, 100);
		CU_ASSERT_EQUAL(last()->ack, PSEQ(UTCP_RBUF + 100) + 1);
		CU_ASSERT_EQUAL(u.state, UTCP_TIME_WAIT);
		read_answer(100);
		CU_ASSERT_TRUE(utcp_done(&u));
		utcp_close(&u);
	}
}

void
register_utcp_tests(void)
{
	static const struct test_case cases[] = {
		{ "our FIN first, the answer, the server's FIN", test_our_fin_first },
		{ "simultaneous close", test_simultaneous_close },
		{ "the server's FIN first", test_peer_fin_first },
		{ "RST after our FIN", test_rst_after_our_fin },
		{ "the answer again after our FIN", test_data_again_after_our_fin },
		{ "our window shut after our FIN", test_window_shut_after_our_fin },
	};

	TEST_SUITE("utcp", cases);
}
