#include "keys.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "../nfq/bytes.h"

/* A new secret from OpenSSL's generator, readable by its owner only; made
 * whole aside and linked into place, so that a gateway starting at the
 * same moment reads all of it or none. */
static int
create_secret(const char *path, char *err, size_t errlen)
{
	uint8_t secret[KEYS_MASTER_LEN];
	char tmp[PATH_MAX];
	int fd, rc = -1;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld.new", path, (long)getpid()) >=
	    (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	if (RAND_bytes(secret, sizeof(secret)) != 1) {
		snprintf(err, errlen, "RAND_bytes failed");
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write(fd, secret, sizeof(secret)) != (ssize_t)sizeof(secret) ||
	    fsync(fd) < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	/* link() fails if another made it first: theirs stands. */
	if (link(tmp, path) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	unlink(tmp);
	rc = 0;
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc;
}

/*
 * keys_master_load's work; the check (tcpctd -t) neither makes the file
 * nor, run by root, knows the group the daemon will run as: any group
 * may read it then.
 */
static int
master_load(struct keys_master *m, const char *path, bool check, char *err,
	    size_t errlen)
{
	gid_t group = check && geteuid() == 0 ? (gid_t)-1 : getegid();
	struct stat st;
	ssize_t n;
	int fd;

	memset(m, 0, sizeof(*m));
	if (!path || !*path) {
		if (RAND_bytes(m->secret, sizeof(m->secret)) != 1) {
			snprintf(err, errlen, "RAND_bytes failed");
			return -1;
		}
		return 0;
	}
	/* O_NONBLOCK: a FIFO there would hold the open until a writer came;
	 * it is refused below as not a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT && !check &&
	    create_secret(path, err, errlen) < 0)
		return -1;
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == EACCES) {
		const struct group *gr = getgrgid(getegid());

		/* The usual cause: root's copy, under the unit's user. */
		if (gr)
			snprintf(err, errlen, "%s: %s: the daemon's group may "
				 "read it as root:%s, mode 0640", path,
				 strerror(EACCES), gr->gr_name);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(EACCES));
		return -1;
	}
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	/* relayd's check_file_secrecy: owner and mode before the contents. */
	if (st.st_uid != 0 && st.st_uid != getuid()) {
		snprintf(err, errlen, "%s: owned by uid %u, not root or the "
			 "running user", path, (unsigned)st.st_uid);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	/* Group read is for the daemon's own group under a file root
	 * writes, as unbound's and nsd's control keys are (root:unbound
	 * 0640): configuration management puts it in /etc. */
	if ((st.st_mode & (S_IRWXG | S_IRWXO)) &&
	    ((st.st_mode & (S_IRWXG | S_IRWXO)) != S_IRGRP ||
	     st.st_uid != 0 ||
	     (group != (gid_t)-1 && st.st_gid != group))) {
		snprintf(err, errlen, "%s: mode %04o lets others read it",
			 path, (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	/* An ACL beyond the mode bits lets others in whatever they say. */
	if (fgetxattr(fd, "system.posix_acl_access", NULL, 0) >= 0) {
		snprintf(err, errlen, "%s: an ACL lets others read it", path);
		goto fail;
	}
	{
		uint8_t buf[2 * KEYS_MASTER_LEN + 1];

		n = read(fd, buf, sizeof(buf));
		if (n != (ssize_t)KEYS_MASTER_LEN &&
		    n != (ssize_t)(2 * KEYS_MASTER_LEN)) {
			snprintf(err, errlen, "%s: need %d bytes of secret, or "
				 "%d: a second one, accepted as well", path,
				 KEYS_MASTER_LEN, 2 * KEYS_MASTER_LEN);
			OPENSSL_cleanse(buf, sizeof(buf));
			goto fail;
		}
		memcpy(m->secret, buf, KEYS_MASTER_LEN);
		m->has_accept = n == (ssize_t)(2 * KEYS_MASTER_LEN);
		if (m->has_accept)
			memcpy(m->accept, buf + KEYS_MASTER_LEN,
			       KEYS_MASTER_LEN);
		OPENSSL_cleanse(buf, sizeof(buf));
	}
	close(fd);
	return 0;
fail:
	close(fd);
	OPENSSL_cleanse(m, sizeof(*m));
	return -1;
}

int
keys_master_load(struct keys_master *m, const char *path, char *err,
		 size_t errlen)
{
	return master_load(m, path, false, err, errlen);
}

int
keys_derive(const struct keys_master *m, const char *label, uint64_t epoch,
	    uint8_t *out, size_t outlen)
{
	return keys_derive_secret(m->secret, label, epoch, out, outlen);
}

int
keys_derive_secret(const uint8_t *secret, const char *label, uint64_t epoch,
		   uint8_t *out, size_t outlen)
{
	uint8_t info[64];
	size_t llen = strlen(label);
	EVP_KDF *kdf;
	EVP_KDF_CTX *kctx;
	OSSL_PARAM params[5], *p = params;
	int i, ok;

	if (llen > sizeof(info) - 8)
		return -1;
	/* HKDF info is bytes, no terminator. */
	memcpy(info, label, llen); /* NOLINT(bugprone-not-null-terminated-result) */
	for (i = 0; i < 8; i++)
		info[llen + (size_t)i] = (uint8_t)(epoch >> (56 - 8 * i));

	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (!kdf)
		return -1;
	kctx = EVP_KDF_CTX_new(kdf);
	EVP_KDF_free(kdf);
	if (!kctx)
		return -1;
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						(char *)"SHA256", 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						 (void *)secret,
						 KEYS_MASTER_LEN);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
						 (void *)"tcpctd", 6);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
						 llen + 8);
	*p = OSSL_PARAM_construct_end();
	ok = EVP_KDF_derive(kctx, out, outlen, params);
	EVP_KDF_CTX_free(kctx);
	return ok == 1 ? 0 : -1;
}

uint32_t
keys_secret_id(const uint8_t *secret)
{
	uint8_t id[4];

	if (keys_derive_secret(secret, "secret id", 0, id, sizeof(id)) < 0)
		return 0;
	return get32(id);
}

int
keys_master_check(const char *path, char *err, size_t errlen)
{
	struct keys_master m;
	int rc;

	struct stat st;

	if (!path || !*path)
		return 0;
	/* lstat: a link that leads nowhere is there, and refused. */
	if (lstat(path, &st) < 0 && errno == ENOENT) {
		const char *slash = strrchr(path, '/');
		char dir[PATH_MAX];

		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s",
				 slash == path ? 1 : (int)(slash - path), path);
		/* A directory not there yet is the unit's StateDirectory
		 * before its first start: systemd makes it. */
		if (access(dir, W_OK | X_OK) < 0 && errno != ENOENT) {
			snprintf(err, errlen, "%s: not there, and it cannot "
				 "be made in %s: %s", path, dir,
				 strerror(errno));
			return -1;
		}
		return 0;
	}
	rc = master_load(&m, path, true, err, errlen);
	OPENSSL_cleanse(&m, sizeof(m));
	return rc;
}
