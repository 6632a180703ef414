/*
 * gateway/probe.h: backend profiles survive their packing into one atomic
 * word, and an unknown backend gets the RFC 9293 defaults and no options.
 */
#include <string.h>

#include "../../gateway/probe.h"
#include "suites.h"
#include "testutil.h"

static void
test_profile_round_trip(void)
{
	static const uint16_t mss[] = { 536, 1220, 1440, 1460, 8940, 65535 };
	struct profile in, out;
	unsigned i, bits, ws;

	for (i = 0; i < sizeof(mss) / sizeof(mss[0]); i++)
		for (bits = 0; bits < 16; bits++)
			for (ws = 0; ws <= 14; ws++) {
				memset(&in, 0, sizeof(in));
				in.known = true;
				in.mss = mss[i];
				in.ws = bits & 1;
				in.wscale = in.ws ? (uint8_t)ws : 0;
				in.sack = bits & 2;
				in.ts = bits & 4;
				in.ecn = bits & 8;
				profile_unpack(profile_pack(&in), AF_INET, &out);
				CU_ASSERT(out.known);
				CU_ASSERT_EQUAL(out.mss, in.mss);
				CU_ASSERT_EQUAL(out.ws, in.ws);
				CU_ASSERT_EQUAL(out.wscale, in.wscale);
				CU_ASSERT_EQUAL(out.sack, in.sack);
				CU_ASSERT_EQUAL(out.ts, in.ts);
				CU_ASSERT_EQUAL(out.ecn, in.ecn);
			}
}

static void
test_profile_unknown(void)
{
	struct profile in = { .known = false, .mss = 1460, .ts = true };
	struct profile out;

	CU_ASSERT_EQUAL(profile_pack(&in), 0);
	profile_unpack(0, AF_INET, &out);
	CU_ASSERT(!out.known);
	CU_ASSERT_EQUAL(out.mss, 536);
	CU_ASSERT(!out.ws && !out.sack && !out.ts && !out.ecn);
	profile_unpack(0, AF_INET6, &out);
	CU_ASSERT_EQUAL(out.mss, 1220);
}

void
register_probe_tests(void)
{
	static const struct test_case cases[] = {
		{ "profile_pack/unpack round trip", test_profile_round_trip },
		{ "an unprobed backend: default MSS, no options",
		  test_profile_unknown },
	};

	TEST_SUITE("probe", cases);
}
