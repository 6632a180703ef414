/*
 * Key material: one master secret, and per-epoch keys derived from it with
 * HKDF-SHA256 (RFC 5869).  Gateways that share the master secret file and a
 * clock derive the same key for the same epoch, so any of them verifies any
 * other's cookies with no coordination.
 */
#ifndef POLICY_KEYS_H
#define POLICY_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEYS_MASTER_LEN	32

/* A secret file holds one secret, or two: the first makes cookies and
 * both verify them.  Rotating a fleet's secret without a refused handshake:
 * give every gateway OLD then NEW, then NEW then OLD, then NEW alone,
 * with `tcpctl keys rotate` after each step (README). */
struct keys_master {
	uint8_t secret[KEYS_MASTER_LEN];	/* makes and verifies */
	uint8_t accept[KEYS_MASTER_LEN];	/* verifies, when has_accept */
	bool has_accept;
};

/*
 * Loads the master secret from path, or makes a random one when path is
 * empty.  The file must hold KEYS_MASTER_LEN bytes (one secret) or twice
 * that (a second one, accepted as well), be owned by
 * root or the running user, and be unreadable by others: the world, a
 * group but the running one of a file root owns (0640 root:tcpctd), and
 * anyone an ACL names;
 * when there is none, a new random one is made there, mode 0600, for the
 * other gateways of a fleet to be given a copy of.
 * Returns 0, or -1 with a message in err.
 */
int keys_master_load(struct keys_master *m, const char *path, char *err,
		     size_t errlen);

/*
 * What keys_master_load would say of path, without making it: 0 when it
 * is a secret the running user may use, or when it is not there and can be
 * made there (or its directory is not there yet either: the unit's
 * StateDirectory before a first start); else -1 with a message in err.
 * For tcpctd -t; run by root, it takes a file any group may read (0640),
 * not knowing the group the daemon will run as.
 */
int keys_master_check(const char *path, char *err, size_t errlen);

/*
 * Derives outlen bytes for (label, epoch): HKDF-SHA256 with the master
 * secret as input key material, salt "tcpctd", and info label || epoch
 * (big-endian 64-bit).  Returns 0 or -1.
 */
int keys_derive(const struct keys_master *m, const char *label,
		uint64_t epoch, uint8_t *out, size_t outlen);
/* The same from one secret of KEYS_MASTER_LEN bytes. */
int keys_derive_secret(const uint8_t *secret, const char *label,
		       uint64_t epoch, uint8_t *out, size_t outlen);

/* A secret's name, shown to tell whether two gateways share one: 32 bits
 * derived from it (label "secret id"), which give nothing of it away. */
uint32_t keys_secret_id(const uint8_t *secret);

#endif
