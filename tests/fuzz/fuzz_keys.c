/*
 * The master secret file (policy/keys.c), as a mistake or another local
 * user leaves it: what keys_master_load and keys_master_check make of a
 * path the input lays out in a directory of its own.  The input is
 *
 *	kind (1 byte)  mode (2 bytes, big-endian, its low 12 bits)  contents
 *
 * kind & 0x07 is what the path is: 0 a regular file of the contents, 1 a
 * symlink to one, 2 a directory, 3 a FIFO, 4 nothing (the loader makes a
 * secret there), 5 a regular file with an ACL that lets one more user
 * read; 6 and 7 as 0.  With kind & 0x08 (and root) the file's group is
 * not the running one.  The rest of the contents, up to a NUL, is also a
 * label for keys_derive.
 *
 * The loader must take exactly a regular file of 32 or 64 bytes that no
 * one but its owner (and, root's, the running group) may read, hand back
 * its bytes, leave nothing of a refused one, and never block; the check
 * (tcpctd -t) must say the same, bar the group it cannot know.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../../policy/keys.h"
#include "../acl.h"
#include "fuzz.h"

#define KIND_FILE	0
#define KIND_SYMLINK	1
#define KIND_DIR	2
#define KIND_FIFO	3
#define KIND_NONE	4
#define KIND_ACL	5
#define KIND_OTHER_GROUP	0x08

static char dir[64], path[128], target[128];

static void
cleanup(void)
{
	unlink(path);
	rmdir(path);
	unlink(target);
}

static void
remove_dir(void)
{
	cleanup();
	rmdir(dir);
}

static void
setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/fuzz_keys.XXXXXX",
		 tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/secret", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	atexit(remove_dir);
}

/* A regular file of the contents at p, mode mode whatever the umask. */
static void
make_file(const char *p, const uint8_t *data, size_t size, mode_t mode)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) ||
	    fchmod(fd, mode) < 0)
		abort();
	close(fd);
}

/* Whether the loader may take a regular file of size bytes, mode mode,
 * ours, of the running group or not, with an ACL or not; for the check
 * (root's, which cannot know the daemon's group) or the load. */
static bool
taken(size_t size, mode_t mode, bool own_group, bool has_acl, bool check)
{
	mode_t others = mode & (S_IRWXG | S_IRWXO);

	if (size != KEYS_MASTER_LEN && size != 2 * KEYS_MASTER_LEN)
		return false;
	if (geteuid() != 0 && !(mode & S_IRUSR))
		return false;	/* not even its owner may open it */
	if (others && (others != S_IRGRP || geteuid() != 0 ||
		       !(own_group || check)))
		return false;
	return !has_acl;
}

static void
check_refused(int rc, const struct keys_master *m, const char *err)
{
	static const struct keys_master zero;

	FUZZ_ASSERT(rc == -1);
	FUZZ_ASSERT(memchr(err, '\0', 256) && err[0]);
	FUZZ_ASSERT(!memcmp(m, &zero, sizeof(zero)));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keys_master m, again;
	char err[256];
	unsigned kind;
	mode_t mode;
	bool own_group = true, has_acl = false, want;
	int rc, crc;

	if (!dir[0])
		setup();
	if (size < 3 || size > 4096)
		return 0;
	kind = data[0];
	mode = (mode_t)((data[1] << 8 | data[2]) & 07777);
	data += 3;
	size -= 3;
	cleanup();

	switch (kind & 0x07) {
	case KIND_SYMLINK:
		make_file(target, data, size, mode);
		if (symlink(target, path) < 0)
			abort();
		break;
	case KIND_DIR:
		if (mkdir(path, 0700) < 0)
			abort();
		break;
	case KIND_FIFO:
		if (mkfifo(path, 0600) < 0)
			abort();
		break;
	case KIND_NONE:
		break;
	case KIND_ACL:
		make_file(path, data, size, mode);
		/* A file system without ACLs refuses it; one whose ACL is
		 * the mode alone keeps none. */
		(void)setxattr(path, TEST_ACL_XATTR, test_acl_one_more_reader,
			       sizeof(test_acl_one_more_reader), 0);
		has_acl = getxattr(path, TEST_ACL_XATTR, NULL, 0) >= 0;
		break;
	default:
		make_file(path, data, size, mode);
		break;
	}
	if ((kind & KIND_OTHER_GROUP) && geteuid() == 0 &&
	    (kind & 0x07) != KIND_NONE) {
		if (lchown(path, (uid_t)-1, getegid() + 1) < 0)
			abort();
		own_group = false;
	}

	memset(err, 0, sizeof(err));
	crc = keys_master_check(path, err, sizeof(err));
	memset(&m, 0xa5, sizeof(m));
	memset(err, 0, sizeof(err));
	rc = keys_master_load(&m, path, err, sizeof(err));

	switch (kind & 0x07) {
	case KIND_SYMLINK:
	case KIND_DIR:
	case KIND_FIFO:
		FUZZ_ASSERT(crc == -1);
		check_refused(rc, &m, err);
		return 0;
	case KIND_NONE: {
		struct stat st;

		/* Made: 32 random bytes, for the owner alone; and read
		 * back the same. */
		FUZZ_ASSERT(crc == 0 && rc == 0 && !m.has_accept);
		FUZZ_ASSERT(stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
			    (st.st_mode & 07777) == 0600 &&
			    st.st_size == KEYS_MASTER_LEN);
		FUZZ_ASSERT(keys_master_load(&again, path, err,
					     sizeof(err)) == 0 &&
			    !memcmp(again.secret, m.secret, KEYS_MASTER_LEN));
		return 0;
	}
	default:
		break;
	}
	FUZZ_ASSERT((crc == 0) == taken(size, mode, own_group, has_acl, true));
	want = taken(size, mode, own_group, has_acl, false);
	if (!want) {
		check_refused(rc, &m, err);
		return 0;
	}
	FUZZ_ASSERT(rc == 0);
	FUZZ_ASSERT(!memcmp(m.secret, data, KEYS_MASTER_LEN));
	FUZZ_ASSERT(m.has_accept == (size == 2 * KEYS_MASTER_LEN));
	if (m.has_accept)
		FUZZ_ASSERT(!memcmp(m.accept, data + KEYS_MASTER_LEN,
				    KEYS_MASTER_LEN));

	/* What the daemon derives from it: the same twice, and a label
	 * too long for HKDF's info refused. */
	{
		size_t llen = strnlen((const char *)data, size);
		uint8_t a[32];
		char label[64];

		if (llen >= sizeof(label))
			llen = sizeof(label) - 1;
		memcpy(label, data, llen);
		label[llen] = '\0';
		rc = keys_derive(&m, label, m.secret[0], a, sizeof(a));
		FUZZ_ASSERT(rc == (strlen(label) > 56 ? -1 : 0));
		if (rc == 0) {
			uint8_t b[32];

			FUZZ_ASSERT(keys_derive(&m, label, m.secret[0], b,
						sizeof(b)) == 0);
			FUZZ_ASSERT(!memcmp(a, b, sizeof(a)));
		}
		FUZZ_ASSERT(keys_secret_id(m.secret) ==
			    keys_secret_id(m.secret));
	}
	return 0;
}
