/*
 * Key material: one master secret, and per-epoch keys derived from it with
 * HKDF-SHA256 (RFC 5869).  Gateways that share the master secret file and a
 * clock derive the same key for the same epoch, so any of them verifies any
 * other's cookies with no coordination.
 */
#ifndef POLICY_KEYS_H
#define POLICY_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define KEYS_MASTER_LEN	32

struct keys_master {
	uint8_t secret[KEYS_MASTER_LEN];
};

/*
 * Loads the master secret from path, or makes a random one when path is
 * empty.  The file must hold at least KEYS_MASTER_LEN bytes, be owned by
 * root or the running user, and be unreadable by others (group and world);
 * when there is none, a new random one is made there, mode 0600, for the
 * other gateways of a fleet to be given a copy of.
 * Returns 0, or -1 with a message in err.
 */
int keys_master_load(struct keys_master *m, const char *path, char *err,
		     size_t errlen);

/*
 * Derives outlen bytes for (label, epoch): HKDF-SHA256 with the master
 * secret as input key material, salt "tcpctd", and info label || epoch
 * (big-endian 64-bit).  Returns 0 or -1.
 */
int keys_derive(const struct keys_master *m, const char *label,
		uint64_t epoch, uint8_t *out, size_t outlen);

#endif
