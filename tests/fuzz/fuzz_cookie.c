/*
 * Cookie verification, with every input an attacker controls: the tuple,
 * the sequence numbers, the TSecr bits, a TCPCT Cookie-Pair, a Fast Open
 * cookie, and the time they come back at.  Besides not crashing:
 *
 *  - what tcpctd made verifies, with the options it encoded, within the
 *    cookie's age, for the same tuple;
 *  - a TCPCT or Fast Open cookie with one bit changed, or checked for
 *    another tuple, never verifies (63 bits or more of MAC: no fuzzer
 *    meets a collision).  Classic cookies have 25 bits of MAC, 2^-25 per
 *    try by design; their forgeries are measured by tests/lab, not here.
 */
#include <string.h>

#include "../../gateway/cookie.h"
#include "../../nfq/bytes.h"
#include "fuzz.h"

#define NOW	1800000000u	/* wall-clock seconds, 2027 */
#define LIFETIME 600u

static struct keys_master master;
static struct cookie_keys keys, alt;

struct input {
	uint8_t family;
	uint8_t caddr[16], saddr[16];
	uint8_t cport[2], sport[2];
	uint8_t isn[4], cisn[4];
	uint8_t tsbits, mss_index;
	uint8_t delay[2];	/* seconds between the making and the check */
	uint8_t flip;		/* the bit to change */
	uint8_t clen;
	uint8_t ci[16], cr[16];
	uint8_t tfo[16];
	uint8_t tfo_len;
};

static void
setup(void)
{
	memset(master.secret, 0x42, sizeof(master.secret));
	memset(master.accept, 0x24, sizeof(master.accept));
	master.has_accept = true;
	if (cookie_keys_init(&keys, &master, LIFETIME) < 0 ||
	    cookie_keys_init(&alt, &master, LIFETIME) < 0)
		abort();
	keys.alt = &alt;
	alt.accepted = true;
}

static void
classic(const struct input *in, const struct cookie_tuple *t, uint64_t later)
{
	unsigned tsbits = in->tsbits & (COOKIE_TS_BITS | COOKIE_TS_PRESENT);
	unsigned idx = in->mss_index & 3, got = 99;
	uint32_t cisn = get32(in->cisn), isn;
	enum cookie_result r;

	/* Whatever the attacker sends back: no crash, a named result. */
	r = cookie_check(&keys, t, get32(in->isn), cisn, later, tsbits, &got);
	FUZZ_ASSERT(r < COOKIE_RESULT_MAX);
	/* Ours, back at once: verified, with its MSS index. */
	isn = cookie_make(&keys, t, cisn, NOW, idx, tsbits);
	got = 99;
	FUZZ_ASSERT(cookie_check(&keys, t, isn, cisn, NOW, tsbits, &got) ==
		    COOKIE_OK);
	FUZZ_ASSERT(got == idx);
}

static void
tcpct(const struct input *in, const struct cookie_tuple *t, uint64_t later)
{
	struct tcpct_cookie_in ci = {
		.t = *t, .snd_nxt = get32(in->isn), .rcv_nxt = get32(in->cisn),
		.tsval = (uint32_t)(NOW * 1000u), .ci = in->ci,
		.clen = 8 + (in->clen % 9), .txn = in->tsbits & 1,
	};
	uint8_t cr[16], bad[16];
	enum cookie_result r;

	r = cookie_tcpct_check(&keys, &ci, later * 1000, in->cr);
	FUZZ_ASSERT(r < COOKIE_RESULT_MAX);
	FUZZ_ASSERT(cookie_tcpct_make(&keys, &ci, NOW, cr) == 0);
	FUZZ_ASSERT(cookie_tcpct_check(&keys, &ci, (uint64_t)NOW * 1000, cr) ==
		    COOKIE_OK);
	memcpy(bad, cr, sizeof(bad));
	bad[(in->flip / 8) % ci.clen] ^= (uint8_t)(1u << (in->flip % 8));
	FUZZ_ASSERT(cookie_tcpct_check(&keys, &ci, (uint64_t)NOW * 1000, bad) !=
		    COOKIE_OK);
	ci.t.cport ^= 1;
	FUZZ_ASSERT(cookie_tcpct_check(&keys, &ci, (uint64_t)NOW * 1000, cr) !=
		    COOKIE_OK);
}

static void
tfo(const struct input *in, const struct cookie_tuple *t, uint64_t later)
{
	uint8_t c[TFO_COOKIE_LEN];
	struct inaddr other = t->caddr;
	enum cookie_result r;

	r = cookie_tfo_check(&keys, t->family, &t->caddr, &t->saddr, later,
			     in->tfo, in->tfo_len % 17);
	FUZZ_ASSERT(r < COOKIE_RESULT_MAX);
	FUZZ_ASSERT(cookie_tfo_make(&keys, t->family, &t->caddr, &t->saddr, NOW,
				    c) == 0);
	FUZZ_ASSERT(cookie_tfo_check(&keys, t->family, &t->caddr, &t->saddr,
				     NOW, c, sizeof(c)) == COOKIE_OK);
	other.b[in->flip % pkt_addrlen(t->family)] ^= 0x80;
	FUZZ_ASSERT(cookie_tfo_check(&keys, t->family, &other, &t->saddr, NOW,
				     c, sizeof(c)) != COOKIE_OK);
	c[(in->flip / 8) % sizeof(c)] ^= (uint8_t)(1u << (in->flip % 8));
	FUZZ_ASSERT(cookie_tfo_check(&keys, t->family, &t->caddr, &t->saddr,
				     NOW, c, sizeof(c)) != COOKIE_OK);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct cookie_tuple t;
	struct input in;
	uint64_t later;

	if (!ready) {
		setup();
		ready = true;
	}
	if (size < sizeof(in))
		return 0;
	memcpy(&in, data, sizeof(in));
	memset(&t, 0, sizeof(t));
	t.family = in.family & 1 ? AF_INET6 : AF_INET;
	memcpy(t.caddr.b, in.caddr, pkt_addrlen(t.family));
	memcpy(t.saddr.b, in.saddr, pkt_addrlen(t.family));
	t.cport = get16(in.cport);
	t.sport = get16(in.sport);
	later = NOW + get16(in.delay);
	FUZZ_ASSERT(cookie_keys_tick(&keys, NOW) == 0);
	classic(&in, &t, later);
	tcpct(&in, &t, later);
	tfo(&in, &t, later);
	/* The keys of a later time: all three checked again after a tick. */
	FUZZ_ASSERT(cookie_keys_tick(&keys, later) == 0);
	FUZZ_ASSERT(cookie_check(&keys, &t, get32(in.isn), get32(in.cisn),
				 later, in.tsbits & COOKIE_TS_BITS, &(unsigned){ 0 }) <
		    COOKIE_RESULT_MAX);
	return 0;
}
