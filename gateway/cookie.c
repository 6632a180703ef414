#include "cookie.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "../nfq/bytes.h"

#define KEY_LEN		COOKIE_KEY_LEN
#define KEY_LABEL	"tcpctd syncookie v1"
#define KEY_LABEL_TCPCT	"tcpctd tcpct v1"
#define KEY_LABEL_TFO	"tcpctd tfo v1"
#define MAC128_LEN	16
#define TCPCT_KEYID_BIT	0x80	/* in the cookie's first byte */
#define TFO_KEYID_BIT	0x80	/* likewise */

const uint16_t cookie_mss_v4[COOKIE_MSS_INDEXES] = COOKIE_MSS_V4;
const uint16_t cookie_mss_v6[COOKIE_MSS_INDEXES] = COOKIE_MSS_V6;

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
	return cookie_mss_index_of(family, mss);
}

uint16_t
cookie_mss_value(uint8_t family, unsigned index)
{
	const uint16_t *t = family == AF_INET ? cookie_mss_v4 : cookie_mss_v6;

	return t[index & COOKIE_ISN_MSS_MASK];
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
	k->mac_mask = COOKIE_ISN_MAC_MASK;
	mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	if (!mac)
		return -1;
	for (i = 0; i < 2; i++) {
		k->mac128[i] = EVP_MAC_CTX_new(mac);
		k->mactfo[i] = EVP_MAC_CTX_new(mac);
	}
	EVP_MAC_free(mac);
	if (!k->mac128[0] || !k->mac128[1] ||
	    !k->mactfo[0] || !k->mactfo[1]) {
		cookie_keys_free(k);
		return -1;
	}
	return 0;
}

void
cookie_keys_free(struct cookie_keys *k)
{
	EVP_MAC_CTX_free(k->mac128[0]);
	EVP_MAC_CTX_free(k->mac128[1]);
	EVP_MAC_CTX_free(k->mactfo[0]);
	EVP_MAC_CTX_free(k->mactfo[1]);
	memset(k, 0, sizeof(*k));
}

/* Keys ctx with the epoch's key for label, giving outlen-byte MACs. */
static int
load_key(struct evp_mac_ctx_st *ctx, const struct cookie_keys *k,
	 const char *label, uint64_t epoch, size_t outlen)
{
	uint8_t key[KEY_LEN];
	OSSL_PARAM params[] = {
		OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &outlen),
		OSSL_PARAM_END,
	};
	int ok;

	if (keys_derive_secret(k->accepted ? k->master->accept
					    : k->master->secret,
			       label, epoch, key, sizeof(key)) < 0)
		return -1;
	ok = EVP_MAC_init(ctx, key, sizeof(key), params);
	OPENSSL_cleanse(key, sizeof(key));
	return ok == 1 ? 0 : -1;
}

/* The epoch's classic cookie key, for syncookie.h's SipHash. */
static int
load_sip(struct siphash_key *sip, const struct cookie_keys *k,
	 const char *label, uint64_t epoch)
{
	uint8_t key[KEY_LEN] = { 0 };

	if (keys_derive_secret(k->accepted ? k->master->accept
					    : k->master->secret,
			       label, epoch, key, sizeof(key)) < 0)
		return -1;
	sip->k0 = siphash_le64(key);
	sip->k1 = siphash_le64(key + 8);
	OPENSSL_cleanse(key, sizeof(key));
	return 0;
}

static int
load_epoch(struct cookie_keys *k, uint64_t epoch)
{
	unsigned slot = (unsigned)(epoch & 1);
	bool ok;

	if (k->valid[slot] && k->epoch[slot] == epoch)
		return 0;
	ok = load_sip(&k->sip[slot], k, KEY_LABEL, epoch) == 0 &&
	     load_key(k->mac128[slot], k, KEY_LABEL_TCPCT, epoch,
		      MAC128_LEN) == 0 &&
	     load_key(k->mactfo[slot], k, KEY_LABEL_TFO, epoch,
		      TFO_COOKIE_LEN) == 0;
	k->valid[slot] = ok;
	k->epoch[slot] = epoch;
	return ok ? 0 : -1;
}

int
cookie_keys_tick(struct cookie_keys *k, uint64_t now)
{
	uint64_t epoch = now / k->lifetime;
	bool ahead = now + COOKIE_KEY_LEAD >= (epoch + 1) * k->lifetime;

	if (load_epoch(k, epoch) < 0 ||
	    (ahead ? load_epoch(k, epoch + 1) < 0
		   : epoch && load_epoch(k, epoch - 1) < 0))
		return -1;
	if (k->alt && k->master->has_accept)
		return cookie_keys_tick(k->alt, now);
	return 0;
}

void
cookie_keys_rekey(struct cookie_keys *k, const struct keys_master *m)
{
	k->master = m;
	k->valid[0] = k->valid[1] = false;
	if (k->alt)
		cookie_keys_rekey(k->alt, m);
}

/* Whether k has keys of a second, accepted secret to try. */
static bool
has_alt(const struct cookie_keys *k)
{
	return k->alt && k->master->has_accept && k->alt->master == k->master;
}

static void
input_of(struct cookie_input *in, const struct cookie_tuple *t, uint32_t cisn)
{
	memcpy(in->caddr, t->caddr.b, sizeof(in->caddr));
	memcpy(in->saddr, t->saddr.b, sizeof(in->saddr));
	in->cport = t->cport;
	in->sport = t->sport;
	in->cisn = cisn;
	in->family = t->family;
}

uint32_t
cookie_make(struct cookie_keys *k, const struct cookie_tuple *t, uint32_t cisn,
	    uint64_t now, unsigned mss_index, unsigned tsbits)
{
	uint64_t epoch = now / k->lifetime;
	unsigned slot = (unsigned)(epoch & 1);
	struct cookie_input in;

	input_of(&in, t, cisn);
	return cookie_isn(&k->sip[slot], slot, &in, cookie_counter(now),
			  mss_index, tsbits);
}

static enum cookie_result
check_one(struct cookie_keys *k, const struct cookie_tuple *t, uint32_t isn,
	  uint32_t cisn, uint64_t now, unsigned tsbits, unsigned *mss_index)
{
	unsigned slot = isn >> COOKIE_ISN_KEYID_SHIFT;
	uint64_t epoch = now / k->lifetime;
	uint32_t counter = cookie_counter(now);
	struct cookie_input in;

	if (cookie_isn_age(isn, counter) > COOKIE_MAX_AGE)
		return COOKIE_EXPIRED;
	if (!k->valid[slot] || !cookie_epoch_usable(k->epoch[slot], epoch))
		return COOKIE_NO_KEY;
	input_of(&in, t, cisn);
	if (!cookie_isn_mac_ok(&k->sip[slot], isn, &in, counter, tsbits,
			       k->mac_mask))
		return COOKIE_BAD;
	*mss_index = isn & COOKIE_ISN_MSS_MASK;
	return COOKIE_OK;
}

/* Our keys, then those of the secret we accept as well (a rotation). */
enum cookie_result
cookie_check(struct cookie_keys *k, const struct cookie_tuple *t, uint32_t isn,
	     uint32_t cisn, uint64_t now, unsigned tsbits, unsigned *mss_index)
{
	enum cookie_result r = check_one(k, t, isn, cisn, now, tsbits,
					 mss_index);

	if (r != COOKIE_OK && r != COOKIE_EXPIRED && has_alt(k) &&
	    check_one(k->alt, t, isn, cisn, now, tsbits, mss_index) ==
		    COOKIE_OK)
		return COOKIE_OK;
	return r;
}

static int
tcpct_mac(struct cookie_keys *k, unsigned slot,
	  const struct tcpct_cookie_in *in, uint8_t *cr)
{
	uint8_t buf[64 + TCPCT_COOKIE_MAX], out[MAC128_LEN];
	size_t outlen = 0;
	const struct cookie_tuple *t = &in->t;

	if (in->clen < TCPCT_COOKIE_MIN || in->clen > TCPCT_COOKIE_MAX)
		return -1;
	memset(buf, 0, 64);
	memcpy(buf, t->caddr.b, 16);
	memcpy(buf + 16, t->saddr.b, 16);
	put16(buf + 32, t->cport);
	put16(buf + 34, t->sport);
	put32(buf + 36, in->snd_nxt);
	put32(buf + 40, in->rcv_nxt);
	put32(buf + 44, in->tsval);
	buf[48] = t->family;
	buf[49] = (uint8_t)in->clen;
	/* A transaction's ACK is never a third packet. */
	buf[50] = in->txn;
	memcpy(buf + 64, in->ci, in->clen);
	if (EVP_MAC_init(k->mac128[slot], NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(k->mac128[slot], buf, 64 + in->clen) != 1 ||
	    EVP_MAC_final(k->mac128[slot], out, &outlen, sizeof(out)) != 1)
		return -1;
	memcpy(cr, out, in->clen);
	cr[0] = (uint8_t)((cr[0] & ~TCPCT_KEYID_BIT) |
			  (slot ? TCPCT_KEYID_BIT : 0));
	cookie_tcpct_unecho(cr, in->ci, in->clen);
	return 0;
}

void
cookie_tcpct_unecho(uint8_t *cr, const uint8_t *ci, unsigned clen)
{
	unsigned i;

	if (CRYPTO_memcmp(cr, ci, clen) != 0)
		return;
	cr[0] ^= (uint8_t)~TCPCT_KEYID_BIT;
	for (i = 1; i < clen; i++)
		cr[i] ^= 0xff;
}

int
cookie_tcpct_make(struct cookie_keys *k, const struct tcpct_cookie_in *in,
		  uint64_t now, uint8_t *cr)
{
	uint64_t epoch = now / k->lifetime;
	unsigned slot = (unsigned)(epoch & 1);

	if (!k->valid[slot] || k->epoch[slot] != epoch)
		return -1;
	return tcpct_mac(k, slot, in, cr);
}

static enum cookie_result
tcpct_check_one(struct cookie_keys *k, const struct tcpct_cookie_in *in,
		uint64_t now_ms, const uint8_t *cr)
{
	unsigned slot = (cr[0] & TCPCT_KEYID_BIT) ? 1 : 0;
	uint64_t epoch = now_ms / 1000 / k->lifetime;
	uint8_t want[TCPCT_COOKIE_MAX];

	if ((uint32_t)now_ms - in->tsval > TCPCT_COOKIE_MAX_AGE_MS)
		return COOKIE_EXPIRED;
	if (!k->valid[slot] || !cookie_epoch_usable(k->epoch[slot], epoch))
		return COOKIE_NO_KEY;
	if (tcpct_mac(k, slot, in, want) < 0 ||
	    CRYPTO_memcmp(want, cr, in->clen) != 0)
		return COOKIE_BAD;
	return COOKIE_OK;
}

enum cookie_result
cookie_tcpct_check(struct cookie_keys *k, const struct tcpct_cookie_in *in,
		   uint64_t now_ms, const uint8_t *cr)
{
	enum cookie_result r = tcpct_check_one(k, in, now_ms, cr);

	if (r != COOKIE_OK && r != COOKIE_EXPIRED && has_alt(k) &&
	    tcpct_check_one(k->alt, in, now_ms, cr) == COOKIE_OK)
		return COOKIE_OK;
	return r;
}

static int
tfo_mac(struct cookie_keys *k, unsigned slot, uint8_t family,
	const struct inaddr *caddr, const struct inaddr *saddr, uint8_t *c)
{
	uint8_t in[33];
	size_t outlen = 0;

	memcpy(in, caddr->b, 16);
	memcpy(in + 16, saddr->b, 16);
	in[32] = family;
	if (EVP_MAC_init(k->mactfo[slot], NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(k->mactfo[slot], in, sizeof(in)) != 1 ||
	    EVP_MAC_final(k->mactfo[slot], c, &outlen, TFO_COOKIE_LEN) != 1)
		return -1;
	c[0] = (uint8_t)((c[0] & ~TFO_KEYID_BIT) | (slot ? TFO_KEYID_BIT : 0));
	return 0;
}

int
cookie_tfo_make(struct cookie_keys *k, uint8_t family,
		const struct inaddr *caddr, const struct inaddr *saddr,
		uint64_t now, uint8_t *c)
{
	uint64_t epoch = now / k->lifetime;
	unsigned slot = (unsigned)(epoch & 1);

	if (!k->valid[slot] || k->epoch[slot] != epoch)
		return -1;
	return tfo_mac(k, slot, family, caddr, saddr, c);
}

static enum cookie_result
tfo_check_one(struct cookie_keys *k, uint8_t family,
	      const struct inaddr *caddr, const struct inaddr *saddr,
	      uint64_t now, const uint8_t *c, unsigned len)
{
	uint8_t want[TFO_COOKIE_LEN];
	uint64_t epoch = now / k->lifetime;
	unsigned slot;

	if (len != TFO_COOKIE_LEN)
		return COOKIE_BAD;
	slot = (c[0] & TFO_KEYID_BIT) ? 1 : 0;
	if (!k->valid[slot] || !cookie_epoch_usable(k->epoch[slot], epoch))
		return COOKIE_NO_KEY;
	if (tfo_mac(k, slot, family, caddr, saddr, want) < 0 ||
	    CRYPTO_memcmp(want, c, TFO_COOKIE_LEN) != 0)
		return COOKIE_BAD;
	return COOKIE_OK;
}

enum cookie_result
cookie_tfo_check(struct cookie_keys *k, uint8_t family,
		 const struct inaddr *caddr, const struct inaddr *saddr,
		 uint64_t now, const uint8_t *c, unsigned len)
{
	enum cookie_result r = tfo_check_one(k, family, caddr, saddr, now, c,
					     len);

	if (r != COOKIE_OK && has_alt(k) &&
	    tfo_check_one(k->alt, family, caddr, saddr, now, c, len) ==
		    COOKIE_OK)
		return COOKIE_OK;
	return r;
}
