/*
 * DNS over TCP as tcpctd follows it (RFC 7766 §8): the framing of a
 * client's byte stream, and the messages it reads whole.  The stream's
 * verdict and what it counted must not depend on how TCP cut it into
 * segments: the input is fed whole, then in pieces of the sizes its first
 * two bytes choose, and both must agree.
 */
#include <string.h>

#include "../../gateway/dnsmsg.h"
#include "../../nfq/bytes.h"
#include "fuzz.h"

/* Feeds b in pieces until a verdict other than OK. */
static enum dnsframe_verdict
feed(struct dnsframe *d, const uint8_t *b, size_t n, uint16_t cut)
{
	uint32_t x = cut | 1u;

	while (n) {
		size_t piece = cut ? 1 + (x % 97) : n;
		enum dnsframe_verdict v;

		if (piece > n)
			piece = n;
		v = dnsframe_feed(d, b, piece);
		if (v != DNSFRAME_OK)
			return v;
		b += piece;
		n -= piece;
		x = x * 1103515245u + 12345u;
	}
	return DNSFRAME_OK;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dnsframe whole = { 0 }, cut = { 0 };
	enum dnsframe_verdict vw, vc;
	uint8_t *copy;

	if (size < 3)
		return 0;
	vw = feed(&whole, data + 2, size - 2, 0);
	vc = feed(&cut, data + 2, size - 2, get16(data));
	FUZZ_ASSERT(vw == vc);
	if (vw == DNSFRAME_OK)
		FUZZ_ASSERT(whole.started == cut.started &&
			    whole.pos == cut.pos && whole.xfr == cut.xfr &&
			    dnsframe_whole(&whole) == dnsframe_whole(&cut));

	/* The message readers, on a buffer of exactly the message's size. */
	copy = malloc(size - 2);
	if (!copy)
		return 0;
	memcpy(copy, data + 2, size - 2);
	(void)dnsmsg_is_query(copy, size - 2);
	(void)dnsmsg_is_whole_answer(copy, size - 2, get16(data));
	if (dnsmsg_edns_at_least(copy, size - 2, DNSMSG_EDNS_MIN) == 1) {
		/* Raised once, it stays: a second pass changes nothing. */
		uint8_t *again = malloc(size - 2);

		if (again) {
			memcpy(again, copy, size - 2);
			FUZZ_ASSERT(dnsmsg_edns_at_least(again, size - 2,
							 DNSMSG_EDNS_MIN) == 1);
			FUZZ_ASSERT(memcmp(again, copy, size - 2) == 0);
			free(again);
		}
	}
	free(copy);
	return 0;
}
