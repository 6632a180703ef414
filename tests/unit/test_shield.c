/*
 * The kernel shield (shield/shield.bpf.c), run by the kernel itself through
 * BPF_PROG_TEST_RUN, beside the daemon's own path on the worker test bench
 * (testgw.c): for the same SYN, at the same time and with the same keys,
 * the shield's SYN-ACK is the daemon's byte for byte, and the daemon
 * verifies its cookie; forged ACKs are dropped, valid ones passed with the
 * mark; what the shield must not touch passes untouched.
 *
 * Loading needs CAP_BPF (make check runs as root); a kernel that refuses
 * the program fails these tests, since the daemon would then run without
 * its shield.
 */
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <CUnit/CUnit.h>
#include <linux/pkt_cls.h>

#include "../../gateway/conn.h"
#include "../../gateway/shieldmap.h"
#include "../../nfq/bytes.h"
#include "../../nfq/csum.h"
#include "../../shield/shield.h"
#include "../ethframe.h"
#include "suites.h"
#include "testgw.h"
#include "testshield.h"
#include "testutil.h"

#define FRAME_MAX	256
#define MARK		0x5eed
#define SHIELDED	4242		/* an interface index */
/* Wall-clock times in the middle of a cookie counter tick and of a key
 * epoch (600 s), so that the shield's clock, set to them, stays there. */
#define T_SLOT0		(TGW_NOW_S + 30)
#define T_SLOT1		(T_SLOT0 + 600)

static const char *const opts[] = {
	"protect", "192.0.2.2:53",
	"protect", "[2001:db8:b::2]:53",
	"synack-rate", "0",
	"key-lifetime", "600",
	NULL,
};

/* The shield's maps as g's daemon writes them at t (tshield_sync), its
 * clock at wall-clock clock_ns. */
static void
sync_shield_clock(struct tgw *g, uint64_t t, uint64_t clock_ns)
{
	tshield_sync(g, t, clock_ns, MARK);
}

/* The same at t, the shield's clock half a second in (so that the test's
 * own time does not carry it over a second). */
static void
sync_shield(struct tgw *g, uint64_t t)
{
	sync_shield_clock(g, t, t * 1000000000u + 500000000u);
}

/* A test bench gateway of options o, synced into the shield at t: NULL,
 * the test failed, where the shield does not load. */
static struct tgw *
bench_at(const char *const *o, uint64_t t)
{
	struct tgw *g;

	if (!tshield_ready()) {
		CU_FAIL("the shield does not load");
		return NULL;
	}
	g = tgw_new(o);
	sync_shield(g, t);
	return g;
}

/* The test bench's worker writing its flows' tuples to the shield, as
 * worker_init_state sets a daemon's up. */
static void
shield_worker(struct tgw *g)
{
	g->gw.shield = &tshield;
	g->w.ft.watch = shieldmap_watch;
	g->w.ft.watch_arg = &g->w;
}

struct syn_spec {
	uint8_t family;
	uint16_t cport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t mss;		/* 0: none */
	int wscale;		/* -1: none */
	bool sack, ts;
	uint32_t tsval, tsecr;
	uint16_t paylen;
};

/* An Ethernet frame with the client's segment to service 0 (IPv4) or 1
 * (IPv6); returns its length. */
static size_t
frame(uint8_t *b, const struct syn_spec *s)
{
	static const uint8_t pay[64] = { 'q' };
	bool v4 = s->family == AF_INET;
	struct tcpopt_spec os = {
		.mss = s->mss, .sack_perm = s->sack, .ts = s->ts,
		.tsval = s->tsval, .tsecr = s->tsecr,
		.wscale = s->wscale >= 0,
		.wscale_shift = (uint8_t)(s->wscale >= 0 ? s->wscale : 0),
	};
	struct pkt_tcp_spec ps = {
		.family = s->family,
		.src = v4 ? &test_client4 : &test_client6,
		.dst = v4 ? &test_backend4 : &test_backend6,
		.sport = s->cport, .dport = 53,
		.seq = s->seq, .ack = s->ack, .flags = s->flags,
		.win = 64240, .pay = pay, .paylen = s->paylen,
	};
	size_t len = eth_frame_tcp(b, FRAME_MAX, &ps, &os);

	CU_ASSERT_FATAL(len > 0);
	return len;
}

/* The shield's verdict on a frame that came with mark in_mark; out gets
 * the frame as it left, *mark (when asked) its mark. */
static int
run_marked(const uint8_t *in, size_t len, uint32_t in_mark, uint8_t *out,
	   uint32_t *outlen, uint32_t *mark)
{
	struct __sk_buff ctx = { .mark = in_mark };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = in,
		    .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = FRAME_MAX, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx), .repeat = 1);

	CU_ASSERT_EQUAL_FATAL(bpf_prog_test_run_opts(tshield.prog_fd, &t), 0);
	*outlen = t.data_size_out;
	if (mark)
		*mark = ctx.mark;
	return (int)t.retval;
}

static int
run(const uint8_t *in, size_t len, uint8_t *out, uint32_t *outlen,
    uint32_t *mark)
{
	return run_marked(in, len, 0, out, outlen, mark);
}

/* The handshake's end for SYN s: the shield answers it (its SYN-ACK's
 * ISN and TSval, 0 without timestamps), and s becomes the client's third
 * packet, which echoes that TSval. */
static void
cookie_ack(struct syn_spec *s)
{
	uint8_t in[FRAME_MAX], out[FRAME_MAX];
	uint32_t outlen, tsval = 0;
	struct pkt p;
	struct tcpopt o;
	size_t len = frame(in, s);

	CU_ASSERT_EQUAL_FATAL(run(in, len, out, &outlen, NULL),
			      TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, out + ETH_LEN, outlen - ETH_LEN),
			      PKT_OK);
	CU_ASSERT_EQUAL_FATAL(tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN,
					   p.doff - TCP_HDR_LEN, TCP_HDR_LEN,
					   &o), TCPOPT_OK);
	if (o.has_ts)
		tsval = o.tsval;
	s->flags = TCP_ACK;
	s->seq++;
	s->ack = get32(pkt_tcp(&p) + TCP_OFF_SEQ) + 1;
	s->mss = 0;
	s->wscale = -1;
	s->sack = false;
	s->tsecr = tsval;
	s->tsval++;
}

static uint64_t
counter(enum shield_counter c)
{
	return tshield_counter(c);
}

/*
 * Every combination a SYN-ACK depends on, IPv4 and IPv6, in both key slots:
 * the shield's frame is the daemon's packet behind the swapped MACs, and
 * the daemon's cookie check takes the shield's ISN.
 */
static void
test_synack_as_daemon(void)
{
	static const uint16_t msss[] = { 0, 536, 1300, 1440, 1460, 8940 };
	struct tgw *g;
	unsigned n = 0, fam, slot, m, combo;

	g = bench_at(opts, T_SLOT0);
	if (!g)
		return;
	for (slot = 0; slot < 2; slot++) {
		sync_shield(g, slot ? T_SLOT1 : T_SLOT0);
		for (fam = 0; fam < 2; fam++)
		for (m = 0; m < sizeof(msss) / sizeof(msss[0]); m++)
		for (combo = 0; combo < 16; combo++) {
			struct syn_spec s = {
				.family = fam ? AF_INET6 : AF_INET,
				.cport = (uint16_t)(20000 + n),
				.seq = 0x1000u * n + 7, .flags = TCP_SYN,
				.mss = msss[m],
				.wscale = combo & 1 ? 7 : -1,
				.sack = combo & 2, .ts = combo & 4,
				.tsval = 4242 + n,
			};
			uint8_t in[FRAME_MAX], out[FRAME_MAX];
			const struct tgw_out *d;
			struct cookie_tuple t;
			struct pkt p;
			unsigned idx = 9, tsbits = 0;
			uint32_t outlen, isn;
			size_t len;

			if (combo & 8)
				s.flags |= TCP_ECE | TCP_CWR;
			len = frame(in, &s);
			CU_ASSERT_EQUAL_FATAL(run(in, len, out, &outlen, NULL),
					      TC_ACT_REDIRECT);
			CU_ASSERT_FATAL(outlen > ETH_LEN);
			CU_ASSERT_FATAL(!memcmp(out, in + 6, 6) &&
					!memcmp(out + 6, in, 6));
			CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, out + ETH_LEN,
							outlen - ETH_LEN),
					      PKT_OK);
			/* The daemon at the shield's millisecond: its
			 * TSval's high bits are the clock's. */
			if (s.ts) {
				struct tcpopt o;

				CU_ASSERT_EQUAL_FATAL(tcpopt_parse(
					pkt_tcp(&p) + TCP_HDR_LEN,
					p.doff - TCP_HDR_LEN, TCP_HDR_LEN, &o),
					TCPOPT_OK);
				g->w.now_ms = o.tsval;
				tsbits = (o.tsval & COOKIE_TS_BITS) |
					 COOKIE_TS_PRESENT;
			}
			tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
			d = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
			CU_ASSERT_PTR_NOT_NULL_FATAL(d);
			CU_ASSERT_EQUAL_FATAL(d->p.len, outlen - ETH_LEN);
			CU_ASSERT_FATAL(!memcmp(d->buf, out + ETH_LEN,
						outlen - ETH_LEN));
			/* And the daemon takes the shield's cookie. */
			isn = get32(pkt_tcp(&p) + TCP_OFF_SEQ);
			t.family = s.family;
			t.caddr = fam ? test_client6 : test_client4;
			t.saddr = fam ? test_backend6 : test_backend4;
			t.cport = s.cport;
			t.sport = 53;
			CU_ASSERT_EQUAL_FATAL(cookie_check(&g->w.keys, &t, isn,
							   s.seq, g->w.now_s,
							   tsbits, &idx),
					      COOKIE_OK);
			CU_ASSERT_EQUAL(isn >> COOKIE_ISN_KEYID_SHIFT, slot);
			CU_ASSERT_EQUAL(idx, cookie_mss_index(s.family,
				s.mss ? s.mss : worker_default_mss(
							s.family)));
			n++;
		}
	}
	tgw_free(g);
	CU_ASSERT_EQUAL(n, 2 * 2 * 6 * 16);
}

/*
 * ACKs of no live flow: a cookie ACK with data passes with the mark (with
 * and without timestamps, in either key slot, and under a second secret
 * accepted beside ours), one without data to this delay-bind service is
 * verified and dropped; one with a forged ack number is dropped and counted, and
 * so are a RST and a segment without ACK; a live flow's segments pass.
 */
static void
test_ack(void)
{
	struct tgw *g;
	unsigned i, fam;

	g = bench_at(opts, T_SLOT1);
	if (!g)
		return;
	shield_worker(g);
	for (fam = 0; fam < 2; fam++)
	for (i = 0; i < 4; i++) {
		struct syn_spec s = {
			.family = fam ? AF_INET6 : AF_INET,
			.cport = (uint16_t)(30000 + 4 * fam + i),
			.seq = 77 + i, .flags = TCP_SYN, .mss = 1460,
			.wscale = 7, .sack = true, .ts = i & 1,
			.tsval = 1000,
		};
		uint8_t in[FRAME_MAX], out[FRAME_MAX];
		uint32_t outlen, mark, bad0, bad1, v0, d0;
		struct tgw_conn c = { .cport = s.cport, .service = fam };
		struct flow *f;
		size_t len;

		/* The third packet, and its first data. */
		cookie_ack(&s);
		len = frame(in, &s);
		v0 = (uint32_t)counter(SHIELD_ACK_VERIFIED);
		d0 = (uint32_t)counter(SHIELD_ACK_DEFERRED);
		/* Without data, to a delay-bind service: verified, and
		 * dropped, nothing for the daemon to do yet. */
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark),
				TC_ACT_SHOT);
		CU_ASSERT_EQUAL(counter(SHIELD_ACK_DEFERRED), d0 + 1);
		CU_ASSERT_EQUAL(counter(SHIELD_ACK_VERIFIED), v0);
		/* The same with a bad checksum: dropped for it, as the
		 * daemon drops a pure ACK, before its cookie is looked at. */
		bad0 = (uint32_t)counter(SHIELD_CSUM_BAD);
		in[len - (s.ts ? 13 : 3)] ^= 0x40;
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		CU_ASSERT_EQUAL(counter(SHIELD_CSUM_BAD), bad0 + 1);
		CU_ASSERT_EQUAL(counter(SHIELD_ACK_DEFERRED), d0 + 1);
		/* Its first data, with the same cookie: passed marked. */
		s.paylen = 40;
		s.flags = TCP_ACK | TCP_PSH;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark), TC_ACT_OK);
		CU_ASSERT_EQUAL(mark, MARK);
		CU_ASSERT_EQUAL(outlen, len);
		CU_ASSERT(!memcmp(in, out, len));
		CU_ASSERT_EQUAL(counter(SHIELD_ACK_VERIFIED), v0 + 1);
		/* The option bits are the MAC's too. */
		if (s.ts) {
			s.tsecr ^= COOKIE_TS_SACK;
			len = frame(in, &s);
			CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL),
					TC_ACT_SHOT);
			s.tsecr ^= COOKIE_TS_SACK;
		}
		/* Forged: another ack number, seq, or no ACK at all. */
		bad0 = (uint32_t)counter(SHIELD_COOKIE_BAD);
		s.ack ^= 0x100;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		s.ack ^= 0x100;
		s.seq += 1;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		s.seq -= 1;
		bad1 = (uint32_t)counter(SHIELD_COOKIE_BAD);
		CU_ASSERT_EQUAL(bad1, bad0 + 2 + (s.ts ? 1 : 0) * 0);
		s.flags = TCP_RST | TCP_ACK;
		s.paylen = 0;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		s.flags = TCP_FIN;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		/* The daemon takes the third packet and makes the flow,
		 * whose tuple the shield has once the worker's batch is
		 * written; then all of it passes, unmarked, until the flow
		 * ends and that is written too. */
		s.flags = TCP_ACK;
		len = frame(in, &s);
		tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
		f = tgw_flow(g, &c);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		s.seq += 5000;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		shieldmap_flush(&g->w);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark), TC_ACT_OK);
		CU_ASSERT_EQUAL(mark, 0);
		s.flags = TCP_SYN;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
		conn_close(&g->w, f, FLOW_SHUTDOWN);
		s.flags = TCP_ACK;
		len = frame(in, &s);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
		shieldmap_flush(&g->w);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
	}
	CU_ASSERT_EQUAL(g->w.st.shield_map_errors, 0);
	tgw_free(g);
}

/* A service that binds at once (delay-bind 0), and one with a per-address
 * cap, whose silent connections count: their cookie ACK without data
 * passes marked, for the daemon to make the flow. */
static void
test_ack_bound_at_once(void)
{
	static const char *const at_once[] = {
		"protect", "192.0.2.2:53,delay-bind=0", "synack-rate", "0",
		"key-lifetime", "600", NULL,
	};
	static const char *const capped[] = {
		"protect", "192.0.2.2:53,max-per-addr=4", "synack-rate", "0",
		"key-lifetime", "600", NULL,
	};
	const char *const *const cfgs[] = { at_once, capped };
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct syn_spec s = {
			.family = AF_INET, .cport = (uint16_t)(30100 + k),
			.seq = 77, .flags = TCP_SYN, .mss = 1460,
			.wscale = 7, .sack = true, .ts = true, .tsval = 1000,
		};
		uint8_t in[FRAME_MAX], out[FRAME_MAX];
		uint32_t outlen, mark, d0;
		struct tgw *g = bench_at(cfgs[k], T_SLOT1);
		size_t len;

		if (!g)
			return;
		cookie_ack(&s);
		len = frame(in, &s);
		d0 = (uint32_t)counter(SHIELD_ACK_DEFERRED);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark), TC_ACT_OK);
		CU_ASSERT_EQUAL(mark, MARK);
		CU_ASSERT_EQUAL(counter(SHIELD_ACK_DEFERRED), d0);
		tgw_free(g);
	}
}

/* What the shield must not touch: other ports and addresses, SYNs with
 * TCPCT or Fast Open options, with data, or with bad flags (dropped),
 * and a bad checksum (dropped). */
static void
test_untouched(void)
{
	struct syn_spec s = {
		.family = AF_INET, .cport = 40000, .seq = 5,
		.flags = TCP_SYN, .mss = 1460, .wscale = -1,
	};
	uint8_t in[FRAME_MAX], out[FRAME_MAX];
	uint32_t outlen;
	struct tgw *g;
	size_t len;

	g = bench_at(opts, T_SLOT0);
	if (!g)
		return;
	/* Another port. */
	len = frame(in, &s);
	put16(in + ETH_LEN + IPV4_HDR_LEN + TCP_OFF_DPORT, 54);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
	CU_ASSERT(outlen == len && !memcmp(in, out, len));
	/* Data on a SYN. */
	s.paylen = 20;
	len = frame(in, &s);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
	CU_ASSERT(outlen == len && !memcmp(in, out, len));
	s.paylen = 0;
	/* SYN|FIN. */
	s.flags = TCP_SYN | TCP_FIN;
	len = frame(in, &s);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
	s.flags = TCP_SYN;
	/* A bad checksum. */
	len = frame(in, &s);
	in[ETH_LEN + IPV4_HDR_LEN + TCP_OFF_CSUM] ^= 0x55;
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
	/* A Fast Open option (kind 34, empty: a cookie request). */
	len = frame(in, &s);
	{
		uint8_t *th = in + ETH_LEN + IPV4_HDR_LEN;
		struct pkt p;

		/* MSS, then NOP NOP 34 2 in place of nothing: grow doff. */
		th[TCP_HDR_LEN + 4] = TCPOPT_NOP;
		th[TCP_HDR_LEN + 5] = TCPOPT_NOP;
		th[TCP_HDR_LEN + 6] = TCPOPT_TFO;
		th[TCP_HDR_LEN + 7] = 2;
		th[TCP_OFF_DOFF] = (TCP_HDR_LEN + 8) / 4 << 4;
		len += 4;
		put16(in + ETH_LEN + 2, (uint16_t)(len - ETH_LEN));
		put16(in + ETH_LEN + 10, 0);
		put16(in + ETH_LEN + 10,
		      csum_fold(csum_add(0, in + ETH_LEN, IPV4_HDR_LEN)));
		CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, in + ETH_LEN,
						len - ETH_LEN), PKT_OK);
		pkt_tcp_csum_set(&p);
	}
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
	CU_ASSERT(outlen == len && !memcmp(in, out, len));
	tgw_free(g);
	/* The operator's lists, as the daemon writes them: an allowed
	 * source passes untouched, a denied one is dropped, and deny wins
	 * over a longer allow; without them, the SYN is answered. */
	{
		static const char *const allowed[] = {
			"protect", "192.0.2.2:53", "synack-rate", "0",
			"allow", "198.51.100.2/32", NULL,
		};
		static const char *const both[] = {
			"protect", "192.0.2.2:53", "synack-rate", "0",
			"allow", "198.51.100.2/32", "deny", "198.51.100.0/24",
			NULL,
		};

		s.flags = TCP_SYN;
		len = frame(in, &s);
		g = bench_at(allowed, T_SLOT0);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
		CU_ASSERT(outlen == len && !memcmp(in, out, len));
		tgw_free(g);
		g = bench_at(both, T_SLOT0);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
		tgw_free(g);
		g = bench_at(opts, T_SLOT0);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL),
				TC_ACT_REDIRECT);
		tgw_free(g);
	}
}

/*
 * Past special_pass, a Fast Open SYN with data is answered classically,
 * byte for byte as the daemon answers it where Fast Open is off (its data
 * not acknowledged, no cookie), and one with options the shield cannot
 * read is dropped; within it, both go to the daemon.
 */
static void
test_fallback(void)
{
	static const char *const no_tfo[] = {
		"protect", "192.0.2.2:53", "tfo", "0", "synack-rate", "0",
		"key-lifetime", "600", NULL,
	};
	struct syn_spec s = {
		.family = AF_INET, .cport = 42000, .seq = 77, .flags = TCP_SYN,
		.mss = 1460, .wscale = 7, .ts = true, .tsval = 99,
		.paylen = 20,
	};
	uint8_t in[FRAME_MAX], out[FRAME_MAX];
	uint8_t *th = in + ETH_LEN + IPV4_HDR_LEN;
	const struct tgw_out *d;
	struct shield_config c;
	struct tgw *g;
	uint32_t outlen;
	size_t len;
	struct tcpopt o;
	struct pkt p;

	g = bench_at(no_tfo, T_SLOT0);
	if (!g)
		return;
	/* The SYN with its data, an empty Fast Open option (34 2, a cookie
	 * request) in place of the NOP NOP before its timestamps. */
	len = frame(in, &s);
	CU_ASSERT_EQUAL_FATAL(th[TCP_HDR_LEN + 4], TCPOPT_NOP);
	th[TCP_HDR_LEN + 4] = TCPOPT_TFO;
	th[TCP_HDR_LEN + 5] = 2;
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, in + ETH_LEN, len - ETH_LEN),
			      PKT_OK);
	pkt_tcp_csum_set(&p);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
	CU_ASSERT(outlen == len && !memcmp(in, out, len));
	shieldmap_config(&c, &g->w.keys, MARK,
			 (int64_t)((uint64_t)T_SLOT0 * 1000000000u +
				   500000000u) - (int64_t)shieldmap_mono_ns());
	c.special_pass = 0;
	CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
	CU_ASSERT_EQUAL_FATAL(run(in, len, out, &outlen, NULL),
			      TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, out + ETH_LEN, outlen - ETH_LEN),
			      PKT_OK);
	CU_ASSERT_EQUAL(p.paylen, 0);
	CU_ASSERT_EQUAL(get32(pkt_tcp(&p) + TCP_OFF_ACK), s.seq + 1);
	CU_ASSERT_EQUAL_FATAL(tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN,
					   p.doff - TCP_HDR_LEN, TCP_HDR_LEN,
					   &o), TCPOPT_OK);
	CU_ASSERT(!o.has_tfo);
	g->w.now_ms = o.tsval;
	tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
	d = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL_FATAL(d->p.len, outlen - ETH_LEN);
	CU_ASSERT(!memcmp(d->buf, out + ETH_LEN, outlen - ETH_LEN));
	/* Options it cannot read: a length past the end. */
	s.paylen = 0;
	len = frame(in, &s);
	th[TCP_HDR_LEN + 1] = 40;
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, in + ETH_LEN, len - ETH_LEN),
			      PKT_OK);
	pkt_tcp_csum_set(&p);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_SHOT);
	c.special_pass = SHIELD_PASS_ALL;
	CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL), TC_ACT_OK);
	tgw_free(g);
}

/*
 * A key epoch's boundary (every key-lifetime, on wall-clock multiples, so
 * a flood may be timed to it): with the daemon's keys written a second
 * before it, the shield 0.2 s past it answers a SYN itself, with a cookie
 * the daemon takes, and verifies the ACK of a SYN-ACK the daemon sent
 * before it.  Keys an epoch old (the daemon's map writes stopped) send SYNs
 * to the daemon within its budget only.
 */
static void
test_epoch_boundary(void)
{
	uint64_t b = (T_SLOT0 / 600 + 1) * 600;
	struct syn_spec s = {
		.family = AF_INET, .cport = 46000, .seq = 31, .flags = TCP_SYN,
		.mss = 1460, .wscale = -1,
	};
	uint8_t in[FRAME_MAX], out[FRAME_MAX];
	const struct tgw_out *d;
	uint32_t outlen, mark, isn;
	unsigned idx, i;
	struct cookie_tuple t = {
		.family = AF_INET, .caddr = test_client4,
		.saddr = test_backend4, .cport = 46000, .sport = 53,
	};
	struct pkt p;
	struct tgw *g;
	size_t len;

	g = bench_at(opts, b - 1);
	if (!g)
		return;
	sync_shield_clock(g, b - 1, b * 1000000000u + 200000000u);
	len = frame(in, &s);
	CU_ASSERT_EQUAL_FATAL(run(in, len, out, &outlen, NULL),
			      TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, out + ETH_LEN, outlen - ETH_LEN),
			      PKT_OK);
	isn = get32(pkt_tcp(&p) + TCP_OFF_SEQ);
	CU_ASSERT_EQUAL(isn >> COOKIE_ISN_KEYID_SHIFT, (b / 600) & 1);
	CU_ASSERT_EQUAL(cookie_keys_tick(&g->w.keys, b), 0);
	CU_ASSERT_EQUAL(cookie_check(&g->w.keys, &t, isn, s.seq, b, 0, &idx),
			COOKIE_OK);
	/* The daemon's SYN-ACK a second before the boundary, its ACK at the
	 * shield 0.2 s past it. */
	CU_ASSERT_EQUAL(cookie_keys_tick(&g->w.keys, b - 1), 0);
	g->w.now_s = b - 1;
	s.cport = t.cport = 46001;
	len = frame(in, &s);
	tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
	d = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	s.flags = TCP_ACK | TCP_PSH;	/* with data: delay-bind defers none */
	s.seq++;
	s.ack = d->p.seq + 1;
	s.mss = 0;
	s.paylen = 40;
	len = frame(in, &s);
	CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark), TC_ACT_OK);
	CU_ASSERT_EQUAL(mark, MARK);
	/* Keys the daemon wrote an epoch ago (its map writes stopped): the
	 * SYN goes to the daemon within its budget only. */
	tgw_free(g);
	g = bench_at(opts, b - 700);
	if (!g)
		return;
	s.flags = TCP_SYN;
	s.seq = 31;
	s.ack = 0;
	s.mss = 1460;
	s.paylen = 0;
	len = frame(in, &s);
	for (i = 0; i < 2; i++) {
		struct shield_config c;
		uint64_t n = counter(SHIELD_PASS_NO_KEY),
			 shed = counter(SHIELD_SHED);

		shieldmap_config(&c, &g->w.keys, MARK,
				 (int64_t)(b * 1000000000u + 200000000u) -
					 (int64_t)shieldmap_mono_ns());
		c.special_pass = i ? SHIELD_PASS_ALL : 0;
		CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL),
				i ? TC_ACT_OK : TC_ACT_SHOT);
		CU_ASSERT_EQUAL(counter(SHIELD_PASS_NO_KEY), n + i);
		CU_ASSERT_EQUAL(counter(SHIELD_SHED), shed + !i);
	}
	tgw_free(g);
}

/* IPv4 options: n bytes (NOPs, then an EOL) behind the IP header of frame
 * b of len bytes, which has room for them; the frame's new length. */
static size_t
ipv4_opts(uint8_t *b, size_t len, unsigned n)
{
	uint8_t *ip = b + ETH_LEN;

	CU_ASSERT_FATAL(n % 4 == 0 && n <= 40 && len + n <= FRAME_MAX);
	memmove(ip + IPV4_HDR_LEN + n, ip + IPV4_HDR_LEN,
		len - ETH_LEN - IPV4_HDR_LEN);
	memset(ip + IPV4_HDR_LEN, 1, n);		/* NOP */
	ip[IPV4_HDR_LEN + n - 1] = 0;			/* EOL */
	ip[0] = (uint8_t)(0x40 | (IPV4_HDR_LEN + n) / 4);
	put16(ip + 2, (uint16_t)(len + n - ETH_LEN));
	put16(ip + 10, 0);
	put16(ip + 10, csum_fold(csum_add(0, ip, IPV4_HDR_LEN + n)));
	return len + n;
}

/* IPv6 extension headers of the types t[0..n), 8 bytes each (a PadN),
 * behind the IPv6 header of frame b; the frame's new length.  The TCP
 * checksum stands: the pseudo-header has the upper layer's length. */
static size_t
ipv6_exthdrs(uint8_t *b, size_t len, const uint8_t *t, unsigned n)
{
	uint8_t *ip = b + ETH_LEN, *e = ip + IPV6_HDR_LEN;
	unsigned i;

	CU_ASSERT_FATAL(len + 8 * n <= FRAME_MAX);
	memmove(e + 8 * n, e, len - ETH_LEN - IPV6_HDR_LEN);
	for (i = 0; i < n; i++) {
		uint8_t *h = e + 8 * i;

		h[0] = i + 1 < n ? t[i + 1] : ip[6];
		h[1] = 0;
		h[2] = 1;				/* PadN, 4 bytes */
		h[3] = 4;
		memset(h + 4, 0, 4);
	}
	ip[6] = t[0];
	put16(ip + 4, (uint16_t)(get16(ip + 4) + 8 * n));
	return len + 8 * n;
}

/* The IPv4 and IPv6 layouts a flood may take: IP options of 4 and 40
 * bytes, one Destination Options header, and Hop-by-Hop, Destination
 * Options and a Routing header (type 0, no segment left) in a row. */
static const struct layout {
	uint8_t family;
	unsigned ipopts;
	uint8_t ext[3];
	unsigned next;
} layouts[] = {
	{ AF_INET, 4, { 0 }, 0 },
	{ AF_INET, 40, { 0 }, 0 },
	{ AF_INET6, 0, { IPPROTO_DSTOPTS }, 1 },
	{ AF_INET6, 0, { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_ROUTING },
	  3 },
};

static size_t
laid_out(uint8_t *b, size_t len, const struct layout *l)
{
	return l->family == AF_INET ? ipv4_opts(b, len, l->ipopts)
				    : ipv6_exthdrs(b, len, l->ext, l->next);
}

/*
 * IPv4 options and IPv6 extension headers change nothing: the SYN is
 * answered in the kernel with the daemon's SYN-ACK for the same SYN, byte
 * for byte (a bare IP header), its ACK passed marked, and a forged ACK
 * dropped, with no budget for the daemon left.
 */
static void
test_ip_options(void)
{
	struct shield_config c;
	struct tgw *g;
	unsigned i;

	g = bench_at(opts, T_SLOT0);
	if (!g)
		return;
	shieldmap_config(&c, &g->w.keys, MARK,
			 (int64_t)((uint64_t)T_SLOT0 * 1000000000u +
				   500000000u) - (int64_t)shieldmap_mono_ns());
	c.special_pass = 0;
	CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		struct syn_spec s = {
			.family = l->family, .cport = (uint16_t)(43000 + i),
			.seq = 1000 * i + 3, .flags = TCP_SYN, .mss = 1460,
			.wscale = 7, .sack = true, .ts = true, .tsval = 5 + i,
		};
		uint8_t in[FRAME_MAX], out[FRAME_MAX];
		uint32_t outlen, mark, isn, bad;
		const struct tgw_out *d;
		struct tcpopt o;
		struct pkt p;
		size_t len;

		len = laid_out(in, frame(in, &s), l);
		CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, in + ETH_LEN,
						len - ETH_LEN), PKT_OK);
		CU_ASSERT_EQUAL_FATAL(run(in, len, out, &outlen, NULL),
				      TC_ACT_REDIRECT);
		CU_ASSERT_EQUAL_FATAL(pkt_parse(&p, out + ETH_LEN,
						outlen - ETH_LEN), PKT_OK);
		CU_ASSERT_EQUAL_FATAL(tcpopt_parse(pkt_tcp(&p) + TCP_HDR_LEN,
						   p.doff - TCP_HDR_LEN,
						   TCP_HDR_LEN, &o), TCPOPT_OK);
		g->w.now_ms = o.tsval;
		tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
		d = tgw_find(g, false, TCP_SYN | TCP_ACK, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		CU_ASSERT_EQUAL(d->p.len, outlen - ETH_LEN);
		CU_ASSERT(d->p.len == outlen - ETH_LEN &&
			  !memcmp(d->buf, out + ETH_LEN, d->p.len));
		/* Its first data, with the same options. */
		isn = get32(pkt_tcp(&p) + TCP_OFF_SEQ);
		s.flags = TCP_ACK | TCP_PSH;
		s.paylen = 40;
		s.seq++;
		s.ack = isn + 1;
		s.mss = 0;
		s.wscale = -1;
		s.sack = false;
		s.tsecr = o.tsval;
		len = laid_out(in, frame(in, &s), l);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark), TC_ACT_OK);
		CU_ASSERT_EQUAL(mark, MARK);
		bad = (uint32_t)counter(SHIELD_COOKIE_BAD);
		s.ack ^= 0x4000;
		len = laid_out(in, frame(in, &s), l);
		CU_ASSERT_EQUAL(run(in, len, out, &outlen, &mark), TC_ACT_SHOT);
		CU_ASSERT_EQUAL(counter(SHIELD_COOKIE_BAD), bad + 1);
	}
	memset(&c, 0, sizeof(c));
	CU_ASSERT_EQUAL(shield_set_config(&tshield, &c), 0);
	tgw_free(g);
}

/* What a frame of layout l becomes to be unreadable: the kinds below. */
enum unread {
	UNREAD_FRAG_FIRST,	/* a first fragment (MF) */
	UNREAD_FRAG_LATER,	/* a later fragment, no TCP header in it */
	UNREAD_DOFF,		/* a data offset under 5 */
	UNREAD_CHAIN,		/* IPv6: more extension headers than walked */
	UNREAD_AH,		/* IPv6: AH, which ip6tables' -p tcp passes */
	UNREAD_MAX
};

/* A forged ACK to port 53 made unreadable as u says: its length, 0 where
 * u is not of the family. */
static size_t
unreadable(uint8_t *b, uint8_t family, enum unread u, bool to_service)
{
	static const uint8_t chain[SHIELD_EXTHDR_MAX + 1] = {
		IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
		IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
		IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
	};
	static const uint8_t frag[] = { IPPROTO_FRAGMENT }, ah[] = { IPPROTO_AH };
	struct syn_spec s = {
		.family = family, .cport = 44000, .seq = 77, .ack = 0xbad,
		.flags = TCP_ACK, .wscale = -1,
	};
	uint8_t *ip = b + ETH_LEN;
	size_t len = frame(b, &s);

	if (!to_service)
		ip[family == AF_INET ? 19 : 39] ^= 1;	/* another address */
	if (family == AF_INET) {
		switch (u) {
		case UNREAD_FRAG_FIRST:
			put16(ip + 6, 0x2000);
			break;
		case UNREAD_FRAG_LATER:
			put16(ip + 6, 185);
			break;
		case UNREAD_DOFF:
			ip[IPV4_HDR_LEN + TCP_OFF_DOFF] = 4 << 4;
			break;
		default:
			return 0;
		}
		put16(ip + 10, 0);
		put16(ip + 10, csum_fold(csum_add(0, ip, IPV4_HDR_LEN)));
		return len;
	}
	switch (u) {
	case UNREAD_FRAG_FIRST:
	case UNREAD_FRAG_LATER:
		len = ipv6_exthdrs(b, len, frag, 1);
		/* Offset and M: the PadN bytes read as a Fragment header's. */
		put16(ip + IPV6_HDR_LEN + 2, u == UNREAD_FRAG_FIRST ? 1 : 0x100);
		return len;
	case UNREAD_DOFF:
		ip[IPV6_HDR_LEN + TCP_OFF_DOFF] = 4 << 4;
		return len;
	case UNREAD_CHAIN:
		return ipv6_exthdrs(b, len, chain, SHIELD_EXTHDR_MAX + 1);
	case UNREAD_AH:
		return ipv6_exthdrs(b, len, ah, 1);
	default:
		return 0;
	}
}

/*
 * What the shield cannot read goes to the daemon, which drops it, only
 * within the daemon's budget: with none left, every such packet to a
 * protected address is dropped and counted, by family; within it, passed
 * and counted; to another address, untouched and not counted.  And the
 * daemon's own parse refuses each of them.
 */
static void
test_unreadable(void)
{
	struct shield_config c;
	struct tgw *g;
	unsigned fam, u, pass;

	g = bench_at(opts, T_SLOT0);
	if (!g)
		return;
	shieldmap_config(&c, &g->w.keys, MARK,
			 (int64_t)((uint64_t)T_SLOT0 * 1000000000u +
				   500000000u) - (int64_t)shieldmap_mono_ns());
	for (pass = 0; pass < 2; pass++) {
		c.special_pass = pass ? SHIELD_PASS_ALL : 0;
		CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
		for (fam = 0; fam < 2; fam++)
		for (u = 0; u < UNREAD_MAX; u++) {
			uint8_t in[FRAME_MAX], out[FRAME_MAX];
			uint8_t family = fam ? AF_INET6 : AF_INET;
			enum shield_counter passed =
				fam ? SHIELD_PASS_UNREAD6 : SHIELD_PASS_UNREAD4;
			uint64_t shed = counter(SHIELD_SHED),
				 n = counter(passed);
			uint32_t outlen;
			struct pkt p;
			size_t len = unreadable(in, family, u, true);

			if (!len)
				continue;
			CU_ASSERT_NOT_EQUAL(pkt_parse(&p, in + ETH_LEN,
						      len - ETH_LEN), PKT_OK);
			CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL),
					pass ? TC_ACT_OK : TC_ACT_SHOT);
			CU_ASSERT_EQUAL(counter(SHIELD_SHED), shed + !pass);
			CU_ASSERT_EQUAL(counter(passed), n + pass);
			len = unreadable(in, family, u, false);
			CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL),
					TC_ACT_OK);
			CU_ASSERT(outlen == len && !memcmp(in, out, len));
			CU_ASSERT_EQUAL(counter(SHIELD_SHED), shed + !pass);
			CU_ASSERT_EQUAL(counter(passed), n + pass);
		}
	}
	memset(&c, 0, sizeof(c));
	CU_ASSERT_EQUAL(shield_set_config(&tshield, &c), 0);
	tgw_free(g);
}

/*
 * The verified mark is the shield's alone: a packet that arrives with it
 * and is not a cookie ACK the shield checked (another port, a live flow's,
 * UDP, one it cannot read) leaves without it; any other mark stays.
 */
static void
test_mark_cleared(void)
{
	struct syn_spec s = {
		.family = AF_INET, .cport = 45000, .seq = 5, .ack = 0xbad,
		.flags = TCP_ACK, .wscale = -1,
	};
	uint8_t in[FRAME_MAX], out[FRAME_MAX];
	unsigned i;
	struct tgw *g;

	g = bench_at(opts, T_SLOT0);
	if (!g)
		return;
	for (i = 0; i < 4; i++) {
		uint32_t in_mark = i == 3 ? 0x77 : MARK, mark, outlen;
		size_t len = frame(in, &s);

		switch (i) {
		case 0:			/* another port */
		case 3:
			put16(in + ETH_LEN + IPV4_HDR_LEN + TCP_OFF_DPORT, 54);
			break;
		case 1:			/* unreadable, within the budget */
			len = unreadable(in, AF_INET, UNREAD_FRAG_LATER, true);
			break;
		default:		/* not TCP */
			in[ETH_LEN + 9] = IPPROTO_UDP;
			break;
		}
		CU_ASSERT_EQUAL(run_marked(in, len, in_mark, out, &outlen,
					   &mark), TC_ACT_OK);
		CU_ASSERT_EQUAL(mark, i == 3 ? in_mark : 0u);
	}
	tgw_free(g);
}

/*
 * An ACK the shield marked verified is taken without a second check: one
 * whose ack number is no cookie opens a flow when the mark is the
 * shield's, the shield is on and the ACK came in by one of its
 * interfaces, and none without the mark, with another mark, by another
 * interface, or with the shield off.
 */
static void
test_mark_trusted(void)
{
	static const struct {
		bool shield;
		int mark;		/* 0: none, 1: the shield's, 2: another */
		uint32_t indev;		/* SHIELDED: one the shield is on */
		bool flow;
	} cases[] = {
		{ true, 1, SHIELDED, true }, { true, 0, SHIELDED, false },
		{ true, 2, SHIELDED, false }, { false, 1, SHIELDED, false },
		{ true, 1, SHIELDED + 1, false }, { true, 1, 0, false },
	};
	unsigned i, ndevs = tshield.ndevs;

	if (!tshield_ready()) {
		CU_FAIL("the shield does not load");
		return;
	}
	/* As attached there: what the daemon looks up. */
	CU_ASSERT_FATAL(ndevs < SHIELD_MAX_DEVS);
	tshield.ifindex[tshield.ndevs++] = SHIELDED;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tgw *g = tgw_new(opts);
		struct syn_spec s = {
			.family = AF_INET, .cport = 50000, .seq = 1001,
			.ack = 0x12345673, .flags = TCP_ACK, .wscale = -1,
		};
		uint8_t in[FRAME_MAX];
		size_t len = frame(in, &s);

		g->gw.shield = cases[i].shield ? &tshield : NULL;
		g->mark = cases[i].mark == 1 ? SHIELDMAP_VERIFIED_MARK(&g->cfg)
			  : cases[i].mark == 2 ? 0x99 : 0;
		g->indev = cases[i].indev;
		tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
		CU_ASSERT_EQUAL(g->w.st.ack_verified, cases[i].flow ? 1 : 0);
		CU_ASSERT_EQUAL(g->w.ft.c->used, cases[i].flow ? 1 : 0);
		tgw_free(g);
	}
	tshield.ndevs = ndevs;
}

/*
 * --synack-rate counts SYN-ACKs towards a prefix once, whichever path sent
 * them: with a cap of 5, three from the shield leave the daemon two, and
 * after those the shield sends none either.
 */
static void
test_synack_rate_shared(void)
{
	static const char *const capped[] = {
		"protect", "192.0.2.2:53", "synack-rate", "5",
		"key-lifetime", "600", NULL,
	};
	struct shield_config c;
	unsigned i, daemon_sent = 0;
	struct tgw *g;

	if (!tshield_ready()) {
		CU_FAIL("the shield does not load");
		return;
	}
	g = tgw_new(capped);
	memset(tshield.rate, 0, tshield.rate_len);
	limits_share_rate(&g->gw.limits, (_Atomic uint64_t *)tshield.rate);
	sync_shield(g, T_SLOT0);
	shieldmap_config(&c, &g->w.keys, MARK,
			 (int64_t)((uint64_t)T_SLOT0 * 1000000000u + 500000000u) -
				 (int64_t)shieldmap_mono_ns());
	shieldmap_rate(&c, &g->cfg, &g->gw.limits);
	CU_ASSERT_EQUAL_FATAL(shield_set_config(&tshield, &c), 0);
	for (i = 0; i < 8; i++) {
		struct syn_spec s = {
			.family = AF_INET, .cport = (uint16_t)(41000 + i),
			.seq = 9 + i, .flags = TCP_SYN, .mss = 1460,
			.wscale = -1,
		};
		uint8_t in[FRAME_MAX];
		size_t len = frame(in, &s);

		if (i < 3 || i >= 6) {
			uint8_t out[FRAME_MAX];
			uint32_t outlen;

			CU_ASSERT_EQUAL(run(in, len, out, &outlen, NULL),
					i < 3 ? TC_ACT_REDIRECT : TC_ACT_SHOT);
			continue;
		}
		tgw_send_raw(g, in + ETH_LEN, len - ETH_LEN);
		daemon_sent += tgw_find(g, false, TCP_SYN | TCP_ACK, NULL) !=
			       NULL;
	}
	CU_ASSERT_EQUAL(daemon_sent, 2);
	CU_ASSERT_EQUAL(g->w.st.synack_capped, 1);
	memset(&c, 0, sizeof(c));
	CU_ASSERT_EQUAL(shield_set_config(&tshield, &c), 0);
	tgw_free(g);
}

/* Whether the shield passes a segment of no cookie from the IPv4 test
 * client's port: whether it holds that tuple. */
static bool
tuple_live(uint16_t port)
{
	struct syn_spec s = {
		.family = AF_INET, .cport = port, .seq = 5, .ack = 0xdead,
		.flags = TCP_ACK, .wscale = -1,
	};
	uint8_t in[FRAME_MAX], out[FRAME_MAX];
	uint32_t outlen;
	size_t len = frame(in, &s);

	return run(in, len, out, &outlen, NULL) == TC_ACT_OK;
}

static void
note(struct shield_flows *b, uint16_t port, bool live)
{
	struct flow_key k = {
		.family = AF_INET, .cport = port, .bport = 53,
		.caddr = test_client4, .baddr = test_backend4,
	};
	struct shield_tuple t;

	flow_tuple(&t, &k);
	CU_ASSERT_EQUAL(shield_flows_note(&tshield, b, &t, port, live), 0);
}

/*
 * The live tuples' batch: nothing reaches the map before the flush, the
 * last word on a tuple within a batch stands, a full batch is written at
 * once, and an end of a tuple the map never had stops nothing.
 */
static void
test_flow_batch(void)
{
	static struct shield_flows b;
	struct tgw *g;
	unsigned i;

	g = bench_at(opts, T_SLOT0);
	if (!g)
		return;
	note(&b, 40000, true);
	CU_ASSERT_FALSE(tuple_live(40000));
	note(&b, 40001, true);
	note(&b, 40001, false);
	CU_ASSERT_EQUAL(shield_flows_flush(&tshield, &b), 0);
	CU_ASSERT(tuple_live(40000));
	CU_ASSERT_FALSE(tuple_live(40001));
	/* Ended and made again: live; an end of one never made first. */
	note(&b, 40002, false);
	note(&b, 40000, false);
	note(&b, 40000, true);
	note(&b, 40003, true);
	note(&b, 40003, false);
	CU_ASSERT_EQUAL(shield_flows_flush(&tshield, &b), 0);
	CU_ASSERT(tuple_live(40000));
	CU_ASSERT_FALSE(tuple_live(40003));
	/* A batch's worth and more: the full one goes at once. */
	for (i = 0; i <= SHIELD_FLOW_BATCH; i++)
		note(&b, (uint16_t)(41000 + i), true);
	CU_ASSERT_EQUAL(b.nadd, 1);
	CU_ASSERT(tuple_live(41000));
	CU_ASSERT_FALSE(tuple_live(41000 + SHIELD_FLOW_BATCH));
	note(&b, 40005, false);
	note(&b, 40000, false);
	for (i = 0; i <= SHIELD_FLOW_BATCH; i++)
		note(&b, (uint16_t)(41000 + i), false);
	CU_ASSERT_EQUAL(shield_flows_flush(&tshield, &b), 0);
	CU_ASSERT_FALSE(tuple_live(40000));
	for (i = 0; i <= SHIELD_FLOW_BATCH; i++)
		CU_ASSERT_FALSE(tuple_live((uint16_t)(41000 + i)));
	tgw_free(g);
}

void
register_shield_tests(void)
{
	CU_pSuite s = CU_add_suite("shield", NULL, tshield_clean);
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "SYN-ACK byte for byte the daemon's: v4, v6, MSS, WS, SACK, "
		  "TS, ECN, both key slots", test_synack_as_daemon },
		{ "ACKs: cookie passed marked, forged and stray dropped, live "
		  "flows untouched", test_ack },
		{ "a service that binds at once, one with a per-address cap: "
		  "a bare cookie ACK passed marked", test_ack_bound_at_once },
		{ "other ports, SYN data, TFO options, allowed sources pass; "
		  "bad flags and checksums, denied sources dropped",
		  test_untouched },
		{ "past its budget for the daemon: Fast Open with data "
		  "answered classically as the daemon would, odd options "
		  "dropped", test_fallback },
		{ "a key epoch's boundary: SYNs answered across it, cookies "
		  "of either side verified", test_epoch_boundary },
		{ "IPv4 options and IPv6 extension headers: SYN-ACK the "
		  "daemon's, ACKs checked, no budget needed", test_ip_options },
		{ "what it cannot read, to a protected address: within the "
		  "budget only, counted by family", test_unreadable },
		{ "the verified mark cleared on whatever it does not verify",
		  test_mark_cleared },
		{ "the daemon takes the shield's mark for its check, from the "
		  "shield's interfaces, and no other mark", test_mark_trusted },
		{ "--synack-rate: one count per prefix for shield and daemon",
		  test_synack_rate_shared },
		{ "live tuples written a batch at a time, the last word on "
		  "each standing", test_flow_batch },
	};
	unsigned i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		CU_add_test(s, tests[i].name, tests[i].fn);
}
