/*
 * policy/keys.h: HKDF-SHA256 derivation against independently computed
 * vectors, and the master secret file's secrecy and length checks.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../policy/keys.h"
#include "../acl.h"
#include "suites.h"
#include "testutil.h"

/* Master secret 00 01 02 .. 1f. */
static void
fill(struct keys_master *m)
{
	unsigned i;

	for (i = 0; i < KEYS_MASTER_LEN; i++)
		m->secret[i] = (uint8_t)i;
}

/*
 * Expected outputs computed with Python 3's standard library, not OpenSSL:
 * RFC 5869 written out with hmac/hashlib,
 *
 *	prk = hmac.new(b"tcpctd", ikm, hashlib.sha256).digest()
 *	T(i) = hmac.new(prk, T(i-1) + info + bytes([i]), sha256).digest()
 *
 * with ikm = bytes(range(32)) and info = label + struct.pack(">Q", epoch).
 * The same code reproduces RFC 5869 test case 1 (OKM 3cb25f25...5865).
 */
static const uint8_t vec_syncookie[16] = {	/* label "tcpctd syncookie v1",
						 * epoch 0x0123456789abcdef */
	0x20, 0xa3, 0x28, 0xb6, 0xd6, 0xf4, 0x04, 0x01,
	0x69, 0xa2, 0x53, 0x06, 0xfd, 0x05, 0xd0, 0x9e,
};
static const uint8_t vec_test42[42] = {		/* label "test", epoch 0 */
	0x51, 0x36, 0xa6, 0x92, 0xf9, 0x2f, 0xc3, 0x58, 0xab, 0x09, 0x2d,
	0x12, 0x0f, 0xef, 0x28, 0x81, 0xc4, 0xc6, 0x1e, 0x15, 0x31, 0xb4,
	0x1f, 0xf3, 0x94, 0xb4, 0x03, 0x91, 0x21, 0x10, 0x40, 0x45, 0x92,
	0xac, 0x7f, 0x94, 0x89, 0x63, 0x66, 0xfa, 0x47, 0xec,
};

static void
test_derive_vectors(void)
{
	struct keys_master m;
	uint8_t out[42];

	fill(&m);
	CU_ASSERT_EQUAL_FATAL(keys_derive(&m, "tcpctd syncookie v1",
					  0x0123456789abcdefull, out, 16), 0);
	CU_ASSERT_EQUAL(memcmp(out, vec_syncookie, 16), 0);
	CU_ASSERT_EQUAL_FATAL(keys_derive(&m, "test", 0, out, 42), 0);
	CU_ASSERT_EQUAL(memcmp(out, vec_test42, 42), 0);
	/* HKDF output is a prefix of the longer output. */
	CU_ASSERT_EQUAL_FATAL(keys_derive(&m, "test", 0, out, 7), 0);
	CU_ASSERT_EQUAL(memcmp(out, vec_test42, 7), 0);
}

static void
test_derive_properties(void)
{
	struct keys_master m, m2;
	uint8_t a[32], b[32];

	fill(&m);
	CU_ASSERT_EQUAL(keys_derive(&m, "label", 5, a, sizeof(a)), 0);
	CU_ASSERT_EQUAL(keys_derive(&m, "label", 5, b, sizeof(b)), 0);
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof(a)), 0);	/* deterministic */

	CU_ASSERT_EQUAL(keys_derive(&m, "labem", 5, b, sizeof(b)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	CU_ASSERT_EQUAL(keys_derive(&m, "label ", 5, b, sizeof(b)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	CU_ASSERT_EQUAL(keys_derive(&m, "label", 6, b, sizeof(b)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	/* The epoch is all 64 bits, big-endian. */
	CU_ASSERT_EQUAL(keys_derive(&m, "label", 5 | 1ull << 63, b, sizeof(b)),
			0);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);

	m2 = m;
	m2.secret[31] ^= 0x80;
	CU_ASSERT_EQUAL(keys_derive(&m2, "label", 5, b, sizeof(b)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);

	/* A secret's id: its own, the same on every gateway and version
	 * (the first bytes of its "secret id" key), another's differs. */
	CU_ASSERT_EQUAL(keys_derive(&m, "secret id", 0, a, 4), 0);
	CU_ASSERT_EQUAL(keys_secret_id(m.secret),
			(uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
			(uint32_t)a[2] << 8 | a[3]);
	CU_ASSERT_NOT_EQUAL(keys_secret_id(m.secret),
			    keys_secret_id(m2.secret));

	/* A label that does not fit the info buffer (64 − 8 bytes). */
	{
		char label[64];

		memset(label, 'x', sizeof(label) - 1);
		label[sizeof(label) - 1] = '\0';
		CU_ASSERT_EQUAL(keys_derive(&m, label, 0, a, sizeof(a)), -1);
		label[56] = '\0';
		CU_ASSERT_EQUAL(keys_derive(&m, label, 0, a, sizeof(a)), 0);
	}
}

static char tmpdir[64];

static void
secret_file(char *path, size_t cap, const char *name, mode_t mode,
	    size_t len)
{
	uint8_t buf[128];
	size_t i;
	int fd;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(0x30 + i);
	snprintf(path, cap, "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, buf, len) == (ssize_t)len);
	CU_ASSERT_FATAL(fchmod(fd, mode) == 0);	/* whatever the umask */
	close(fd);
}

/* Whether keys_master_check (check) or keys_master_load refuses path as
 * not a regular file within 2 s: 0, or -1. */
static int
refused_at_once(const char *path, bool check)
{
	int status, i;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct keys_master m;
		char err[256] = "";
		int rc = check ? keys_master_check(path, err, sizeof(err))
			   : keys_master_load(&m, path, err, sizeof(err));

		_exit(rc == -1 && strstr(err, "not a regular file") ? 0 : 1);
	}
	for (i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0
			       ? 0 : -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static void
test_master_load(void)
{
	static const mode_t open_modes[] = { 0644, 0640, 0604, 0660, 0620,
					     0602, 0610, 0601 };
	char path[160], err[256];
	struct keys_master m, r1, r2;
	size_t i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tcpctd-unit-keys.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpdir));

	/* 0600 and 32 bytes: accepted, and the bytes are the file's. */
	secret_file(path, sizeof(path), "good", 0600, 32);
	err[0] = '\0';
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), 0);
	for (i = 0; i < KEYS_MASTER_LEN; i++)
		if (m.secret[i] != 0x30 + i)
			break;
	CU_ASSERT_EQUAL(i, KEYS_MASTER_LEN);
	unlink(path);

	CU_ASSERT_FALSE(m.has_accept);

	/* Read-only for the owner, with two secrets: the second one is
	 * accepted as well. */
	secret_file(path, sizeof(path), "ro", 0400, 64);
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), 0);
	CU_ASSERT(m.has_accept);
	CU_ASSERT_EQUAL(m.secret[0], 0x30);
	CU_ASSERT_EQUAL(m.accept[0], 0x30 + KEYS_MASTER_LEN);
	unlink(path);

	/* Neither one secret nor two: refused. */
	secret_file(path, sizeof(path), "odd", 0600, 40);
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "64"));
	unlink(path);
	secret_file(path, sizeof(path), "long", 0600, 65);
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), -1);
	unlink(path);

	/* Anything for group or others is refused, with the mode named
	 * (the group not the running one). */
	for (i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
		char want[16];

		secret_file(path, sizeof(path), "open", open_modes[i], 32);
		if (geteuid() == 0)
			CU_ASSERT_EQUAL(chown(path, 0, getegid() + 1), 0);
		err[0] = '\0';
		CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)),
				-1);
		snprintf(want, sizeof(want), "%04o", (unsigned)open_modes[i]);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
		unlink(path);
	}

	/* Root's file the running group may read, as configuration
	 * management installs it (0640 root:tcpctd): taken; its group
	 * writing or running it, or the world reading it, or another owner:
	 * refused. */
	if (geteuid() == 0) {
		static const mode_t group_modes[] = { 0660, 0650, 0644 };

		secret_file(path, sizeof(path), "group", 0640, 32);
		CU_ASSERT_EQUAL(chown(path, 0, getegid()), 0);
		CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)),
				0);
		for (i = 0; i < sizeof(group_modes) / sizeof(group_modes[0]);
		     i++) {
			CU_ASSERT_EQUAL(chmod(path, group_modes[i]), 0);
			CU_ASSERT_EQUAL(keys_master_load(&m, path, err,
							 sizeof(err)), -1);
		}
		/* root's tcpctd -t cannot know the daemon's group: the
		 * check takes root:any 0640, the load its own group's only. */
		CU_ASSERT_EQUAL(chmod(path, 0640), 0);
		CU_ASSERT_EQUAL(chown(path, 0, getegid() + 1), 0);
		CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)),
				-1);
		CU_ASSERT_EQUAL(chown(path, 65534, getegid()), 0);
		CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)),
				-1);
		unlink(path);
	}

	/* An ACL that lets one more user read: refused, whatever the mode
	 * bits say (where the file system keeps ACLs). */
	{
		secret_file(path, sizeof(path), "acl", 0600, 32);
		if (setxattr(path, TEST_ACL_XATTR, test_acl_one_more_reader,
			     sizeof(test_acl_one_more_reader), 0) == 0) {
			err[0] = '\0';
			CU_ASSERT_EQUAL(keys_master_load(&m, path, err,
							 sizeof(err)), -1);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "an ACL"));
		}
		unlink(path);
	}

	/* Short files. */
	secret_file(path, sizeof(path), "short", 0600, 31);
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "32"));
	unlink(path);
	secret_file(path, sizeof(path), "empty", 0600, 0);
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), -1);
	unlink(path);

	/* Missing: made, random, 0600, whatever the umask; the next load
	 * reads the same.  In a directory that is not there: an error. */
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	{
		struct stat st;
		mode_t old = umask(0);

		CU_ASSERT_EQUAL(keys_master_load(&r1, path, err, sizeof(err)),
				0);
		umask(old);
		CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
		CU_ASSERT_EQUAL(st.st_size, KEYS_MASTER_LEN);
		CU_ASSERT_EQUAL(keys_master_load(&r2, path, err, sizeof(err)),
				0);
		CU_ASSERT_EQUAL(memcmp(r1.secret, r2.secret, KEYS_MASTER_LEN),
				0);
		unlink(path);
	}
	/* tcpctd -t: what a load would say, with nothing made. */
	snprintf(path, sizeof(path), "%s/later", tmpdir);
	CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	secret_file(path, sizeof(path), "later", 0600, 32);
	CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(chmod(path, 0604), 0);
	CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "0604"));
	unlink(path);
	CU_ASSERT_EQUAL(keys_master_check("", err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/none/secret", tmpdir);
	CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), 0);
	/* A directory that is there but not ours to write. */
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "/proc/secret");
		CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot be made in /proc"));
	}
	snprintf(path, sizeof(path), "/proc/self/secret");
	CU_ASSERT_EQUAL(keys_master_check(path, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot be made in /proc/self"));
	snprintf(path, sizeof(path), "%s/none/secret", tmpdir);
	CU_ASSERT_EQUAL(keys_master_load(&m, path, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "none/secret"));
	{
		char link[160];

		secret_file(path, sizeof(path), "target", 0600, 32);
		snprintf(link, sizeof(link), "%s/link", tmpdir);
		CU_ASSERT_EQUAL_FATAL(symlink(path, link), 0);
		CU_ASSERT_EQUAL(keys_master_load(&m, link, err, sizeof(err)),
				-1);
		unlink(link);
		unlink(path);
	}

	/* A FIFO with no writer: refused at once, by the check and the
	 * load, not waited on forever (a child tries, so that a hang
	 * fails the test). */
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
	CU_ASSERT_EQUAL(refused_at_once(path, true), 0);
	CU_ASSERT_EQUAL(refused_at_once(path, false), 0);
	unlink(path);

	/* No path: a random secret, a different one each time. */
	CU_ASSERT_EQUAL(keys_master_load(&r1, "", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(keys_master_load(&r2, NULL, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(r1.secret, r2.secret, KEYS_MASTER_LEN), 0);

	CU_ASSERT_EQUAL(rmdir(tmpdir), 0);
}

void
register_keys_tests(void)
{
	static const struct test_case cases[] = {
		{ "keys_derive matches HKDF-SHA256 vectors",
		  test_derive_vectors },
		{ "keys_derive: deterministic, label/epoch/secret matter",
		  test_derive_properties },
		{ "keys_master_load: mode, length, symlink, FIFO, random",
		  test_master_load },
	};

	TEST_SUITE("keys", cases);
}
