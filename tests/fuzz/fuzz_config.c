/*
 * The configuration file (tcpctd.conf(5)), as an operator or a mistake
 * writes it: read by inih and policy/conffile.c, checked, and, when good,
 * turned into the iptables rules it stands for (printed, never run).
 * Every error names where it is; none is empty.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../policy/config.h"
#include "../../policy/rules.h"
#include "fuzz.h"

static void
err_cb(const char *where, const char *msg, void *arg)
{
	unsigned *n = arg;

	FUZZ_ASSERT(where && *where && msg && *msg);
	FUZZ_ASSERT(!strchr(msg, '\n'));
	(*n)++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config c;
	static FILE *devnull;
	char path[64];
	unsigned errors = 0;
	int fd, r;

	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	/* include reads the host's files, a glob of them as slow as the
	 * tree is big: test_config.c covers it. */
	if (size > 1 << 16 || memmem(data, size, "include", 7))
		return 0;
	fd = memfd_create("tcpctd.conf", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	config_defaults(&c);
	r = config_load(&c, path, err_cb, &errors);
	FUZZ_ASSERT((r == 0) == (errors == 0));
	if (r == 0 && config_check(&c, err_cb, &errors) == 0) {
		FUZZ_ASSERT(errors == 0);
		FUZZ_ASSERT(c.nservices <= POLICY_MAX_SERVICES);
		(void)rules_apply(&c, RULES_PRINT, devnull);
	}
	close(fd);
	return 0;
}
