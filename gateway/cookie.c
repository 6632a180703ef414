#include "cookie.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "../nfq/bytes.h"

#define KEY_LEN		16	/* SipHash-2-4 */
#define KEY_LABEL	"tcpctd syncookie v1"

#define ISN_KEYID_SHIFT	31
#define ISN_COUNT_SHIFT	27
#define ISN_COUNT_MASK	0xfu
#define ISN_MAC_SHIFT	2
#define ISN_MAC_MASK	0x1ffffffu
#define ISN_MSS_MASK	0x3u

/* PROTOCOLS.md §3: Linux's tables; v4 1460 = 1500 − 40, v6 8940 for jumbo. */
const uint16_t cookie_mss_v4[COOKIE_MSS_INDEXES] = { 536, 1300, 1440, 1460 };
const uint16_t cookie_mss_v6[COOKIE_MSS_INDEXES] = { 1220, 1420, 1440, 8940 };

static const char *const result_names[COOKIE_RESULT_MAX] = {
	[COOKIE_OK] = "ok",
	[COOKIE_BAD] = "bad",
	[COOKIE_EXPIRED] = "expired",
	[COOKIE_NO_KEY] = "no_key",
};

const char *
cookie_result_name(enum cookie_result r)
{
	return (unsigned)r < COOKIE_RESULT_MAX ? result_names[r] : "unknown";
}

unsigned
cookie_mss_index(uint8_t family, uint16_t mss)
{
	const uint16_t *t = family == AF_INET ? cookie_mss_v4 : cookie_mss_v6;
	unsigned i;

	for (i = COOKIE_MSS_INDEXES - 1; i > 0; i--)
		if (t[i] <= mss)
			return i;
	return 0;
}

uint16_t
cookie_mss_value(uint8_t family, unsigned index)
{
	const uint16_t *t = family == AF_INET ? cookie_mss_v4 : cookie_mss_v6;

	return t[index & ISN_MSS_MASK];
}

uint32_t
cookie_counter(uint64_t now)
{
	return (uint32_t)(now / COOKIE_TICK);
}

int
cookie_keys_init(struct cookie_keys *k, const struct keys_master *m,
		 unsigned lifetime)
{
	EVP_MAC *mac;
	int i;

	memset(k, 0, sizeof(*k));
	k->master = m;
	k->lifetime = lifetime;
	mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	if (!mac)
		return -1;
	for (i = 0; i < 2; i++)
		k->mac[i] = EVP_MAC_CTX_new(mac);
	EVP_MAC_free(mac);
	if (!k->mac[0] || !k->mac[1]) {
		cookie_keys_free(k);
		return -1;
	}
	return 0;
}

void
cookie_keys_free(struct cookie_keys *k)
{
	EVP_MAC_CTX_free(k->mac[0]);
	EVP_MAC_CTX_free(k->mac[1]);
	memset(k, 0, sizeof(*k));
}

static int
load_epoch(struct cookie_keys *k, uint64_t epoch)
{
	unsigned slot = (unsigned)(epoch & 1);
	uint8_t key[KEY_LEN];
	size_t outlen = 8;
	OSSL_PARAM params[] = {
		OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &outlen),
		OSSL_PARAM_END,
	};
	int ok;

	if (k->valid[slot] && k->epoch[slot] == epoch)
		return 0;
	if (keys_derive(k->master, KEY_LABEL, epoch, key, sizeof(key)) < 0)
		return -1;
	ok = EVP_MAC_init(k->mac[slot], key, sizeof(key), params);
	memset(key, 0, sizeof(key));
	k->valid[slot] = ok == 1;
	k->epoch[slot] = epoch;
	return ok == 1 ? 0 : -1;
}

int
cookie_keys_tick(struct cookie_keys *k, uint64_t now)
{
	uint64_t epoch = now / k->lifetime;

	if (load_epoch(k, epoch) < 0)
		return -1;
	return epoch ? load_epoch(k, epoch - 1) : 0;
}

static uint32_t
mac25(struct cookie_keys *k, unsigned slot, const struct cookie_tuple *t,
      uint32_t cisn, uint32_t counter, unsigned mss_index, unsigned tsbits)
{
	uint8_t in[48], out[8];
	size_t outlen = 0;

	memset(in, 0, sizeof(in));
	memcpy(in, t->caddr.b, 16);
	memcpy(in + 16, t->saddr.b, 16);
	put16(in + 32, t->cport);
	put16(in + 34, t->sport);
	put32(in + 36, cisn);
	put32(in + 40, counter);
	in[44] = t->family;
	in[45] = (uint8_t)mss_index;
	in[46] = (uint8_t)tsbits;
	/* Re-initialising without a key keeps the key and allocates nothing. */
	if (EVP_MAC_init(k->mac[slot], NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(k->mac[slot], in, sizeof(in)) != 1 ||
	    EVP_MAC_final(k->mac[slot], out, &outlen, sizeof(out)) != 1)
		return 0;
	return get32(out) & ISN_MAC_MASK;
}

uint32_t
cookie_make(struct cookie_keys *k, const struct cookie_tuple *t, uint32_t cisn,
	    uint64_t now, unsigned mss_index, unsigned tsbits)
{
	uint64_t epoch = now / k->lifetime;
	unsigned slot = (unsigned)(epoch & 1);
	uint32_t counter = cookie_counter(now);

	mss_index &= ISN_MSS_MASK;
	return (uint32_t)slot << ISN_KEYID_SHIFT |
	       (counter & ISN_COUNT_MASK) << ISN_COUNT_SHIFT |
	       mac25(k, slot, t, cisn, counter, mss_index, tsbits)
		       << ISN_MAC_SHIFT |
	       mss_index;
}

enum cookie_result
cookie_check(struct cookie_keys *k, const struct cookie_tuple *t, uint32_t isn,
	     uint32_t cisn, uint64_t now, unsigned tsbits, unsigned *mss_index)
{
	unsigned slot = isn >> ISN_KEYID_SHIFT;
	uint64_t epoch = now / k->lifetime;
	uint32_t counter = cookie_counter(now), age, full;
	unsigned idx = isn & ISN_MSS_MASK;

	age = (counter - (isn >> ISN_COUNT_SHIFT)) & ISN_COUNT_MASK;
	if (age > COOKIE_MAX_AGE)
		return COOKIE_EXPIRED;
	/* The slot must hold this epoch's key or the one before. */
	if (!k->valid[slot] ||
	    (k->epoch[slot] != epoch && k->epoch[slot] + 1 != epoch))
		return COOKIE_NO_KEY;
	full = counter - age;
	if (mac25(k, slot, t, cisn, full, idx, tsbits) !=
	    ((isn >> ISN_MAC_SHIFT) & ISN_MAC_MASK))
		return COOKIE_BAD;
	*mss_index = idx;
	return COOKIE_OK;
}
