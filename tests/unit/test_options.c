/*
 * daemon/options.c and daemon/reconfig.c: the command line read as the
 * daemon reads it at the start and at every reload (settings spelt whole,
 * files where they stand, the installed file only when neither a file nor
 * a service is named), and what a reload decides before it takes a
 * configuration (what needs a restart, the services' order).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../daemon/options.h"
#include "../../daemon/reconfig.h"
#include "suites.h"
#include "testutil.h"

#define ARGC(a)	((int)(sizeof(a) / sizeof(a[0])) - 1)

/* argv (NULL-ended) read into c from its defaults, the errors' text
 * swallowed; the result, with o filled. */
static enum options_result
parse(struct config *c, char **argv, const char *default_file,
      struct options *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *errs = open_memstream(&text, &len);
	enum options_result r;
	int argc = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(errs);
	while (argv[argc])
		argc++;
	config_defaults(c);
	r = options_parse(c, argc, argv, default_file, o, errs);
	fclose(errs);
	free(text);
	return r;
}

static void
test_options_read(void)
{
	char *run[] = { "tcpctd", "--protect", "192.0.2.2:53", "--queues",
			"2", "-t", "-v", "--shield", "yes", NULL };
	char *bad[] = { "tcpctd", "--protect", "192.0.2.2:53", "--queues",
			"many", "stray", NULL };
	char *help[] = { "tcpctd", "-h", NULL };
	char *version[] = { "tcpctd", "--version", NULL };
	char *unknown[] = { "tcpctd", "--no-such-option", NULL };
	/* getopt_long would take these prefixes for --tcpct-timewait-rst
	 * and --mark. */
	char *prefix[] = { "tcpctd", "--tcp", "no", NULL };
	char *prefix2[] = { "tcpctd", "--ma=5", NULL };
	/* A service no segment is addressed to, a number in C's octal, a
	 * prefix with bits past its length: as refused as in a file. */
	char *nothing[] = { "tcpctd", "--protect", "0.0.0.0:53", "--protect",
			    "[::]:53", "--protect", "[::ffff:192.0.2.2]:53",
			    "--protect", "[ff02::fb]:5353", "--idle-timeout",
			    "010", "--max-per-addr", "0x10", "--deny",
			    "10.0.0.1/8", "-t", NULL };
	struct options o;
	struct config c;

	CU_ASSERT_EQUAL(parse(&c, run, NULL, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(o.errors, 0);
	CU_ASSERT(o.check_only);
	CU_ASSERT_EQUAL(c.queues, 2);
	CU_ASSERT_EQUAL(c.verbose, 1);
	CU_ASSERT_EQUAL(c.shield, SHIELD_YES);
	CU_ASSERT_EQUAL(c.nservices, 1);
	/* A bad value and a word that is no option: counted, not fatal. */
	CU_ASSERT_EQUAL(parse(&c, bad, NULL, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(o.errors, 2);
	CU_ASSERT_FALSE(o.check_only);
	/* Unsaid, the shield is on where the kernel takes it, and carries
	 * connections that outlive the daemon. */
	CU_ASSERT_EQUAL(c.shield, SHIELD_AUTO);
	CU_ASSERT(c.kernel_flows);
	CU_ASSERT_STRING_EQUAL(c.pin_dir, "/sys/fs/bpf/tcpctd");
	CU_ASSERT_EQUAL(parse(&c, help, NULL, &o), OPTIONS_HELP);
	CU_ASSERT_EQUAL(parse(&c, version, NULL, &o), OPTIONS_VERSION);
	CU_ASSERT_EQUAL(parse(&c, unknown, NULL, &o), OPTIONS_USAGE);
	CU_ASSERT_EQUAL(parse(&c, prefix, NULL, &o), OPTIONS_USAGE);
	CU_ASSERT_EQUAL(parse(&c, prefix2, NULL, &o), OPTIONS_USAGE);
	CU_ASSERT_EQUAL(parse(&c, nothing, NULL, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(o.errors, 7);
	CU_ASSERT_EQUAL(c.nservices, 0);
	CU_ASSERT_EQUAL(c.ndeny, 0);
	CU_ASSERT_EQUAL(c.pol_set, 0);
}

static void
test_options_files(void)
{
	char path[64], deflt[64];
	char *file_then[] = { "tcpctd", "-c", path, "--queues", "4", NULL };
	char *then_file[] = { "tcpctd", "--queues", "4", "-c", path, NULL };
	char *nothing[] = { "tcpctd", "--queues", "4", NULL };
	char *service[] = { "tcpctd", "--protect", "192.0.2.3:80", NULL };
	struct options o;
	struct config c;

	test_tmp_file(path, sizeof(path), "[tcpctd]\nqueues = 3\n"
		  "[service dns]\nprotect = 192.0.2.2:53\n");
	test_tmp_file(deflt, sizeof(deflt), "[tcpctd]\nqueues = 5\nflows = 1024\n"
		  "[service web]\nprotect = 192.0.2.2:80\n");
	/* Files and options count where they stand: the last word wins. */
	CU_ASSERT_EQUAL(parse(&c, file_then, deflt, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(o.errors, 0);
	CU_ASSERT_EQUAL(c.queues, 4);
	CU_ASSERT_EQUAL(c.nservices, 1);
	CU_ASSERT_EQUAL(c.flows, 65536);	/* the default file unread */
	CU_ASSERT_EQUAL(parse(&c, then_file, deflt, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(c.queues, 3);
	/* Neither a file nor a service: the installed file first, the
	 * options over it. */
	CU_ASSERT_EQUAL(parse(&c, nothing, deflt, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(c.queues, 4);
	CU_ASSERT_EQUAL(c.flows, 1024);
	CU_ASSERT_EQUAL(c.nservices, 1);
	/* A service named on the command line: not the installed file. */
	CU_ASSERT_EQUAL(parse(&c, service, deflt, &o), OPTIONS_RUN);
	CU_ASSERT_EQUAL(c.flows, 65536);
	CU_ASSERT_EQUAL(c.nservices, 1);
	CU_ASSERT_EQUAL(c.services[0].port, 80);
	/* A file that is not there is an error, not a silence. */
	unlink(path);
	CU_ASSERT_EQUAL(parse(&c, file_then, deflt, &o), OPTIONS_RUN);
	CU_ASSERT(o.errors >= 1);
	unlink(deflt);
}

/* c with the services of the lines given (NULL-ended), checked. */
static void
services(struct config *c, const char *const *protect)
{
	config_defaults(c);
	for (; *protect; protect++)
		CU_ASSERT_EQUAL_FATAL(config_set(c, "protect", *protect, "test",
						 NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(config_check(c, NULL, NULL), 0);
}

static void
test_reconfig(void)
{
	static const char *const ab[] = { "192.0.2.2:53", "192.0.2.2:80",
					  NULL };
	static const char *const bca[] = { "192.0.2.2:80", "192.0.2.3:53",
					   "192.0.2.2:53", NULL };
	static const char *const b[] = { "192.0.2.2:80", NULL };
	static const struct {
		const char *name, *value, *restart;
	} changes[] = {
		{ "queues", "2", "queues" },
		{ "flows", "1024", "flows" },
		{ "prefix4", "16", "prefix4" },
		{ "key-lifetime", "1200", "key-lifetime" },
		{ "shield", "no", "shield" },
		{ "shield-dev", "eth0", "shield-dev" },
		{ "secret-file", "/etc/tcpctd/secret", "secret-file" },
		{ "control-socket", "/run/t.sock", "control-socket" },
		{ "idle-timeout", "30", NULL },
		{ "synack-rate", "5", NULL },
		{ "verbose", "2", NULL },
	};
	struct config old, c;
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	unsigned i;

	services(&old, ab);
	for (i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		const char *got;

		services(&c, ab);
		CU_ASSERT_EQUAL_FATAL(config_set(&c, changes[i].name,
						 changes[i].value, "test",
						 NULL, NULL), 0);
		got = reconfig_needs_restart(&old, &c);
		if (changes[i].restart) {
			CU_ASSERT_STRING_EQUAL(got ? got : "",
					       changes[i].restart);
		} else {
			CU_ASSERT_PTR_NULL(got);
		}
	}
	/* The running order kept, the new service after it. */
	services(&c, bca);
	out = open_memstream(&text, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT(reconfig_keep_order(&old, &c, out));
	CU_ASSERT_EQUAL(c.services[0].port, 53);
	CU_ASSERT_EQUAL(c.services[1].port, 80);
	CU_ASSERT(!memcmp(&c.services[2].addr, &(struct inaddr){
		{ 192, 0, 2, 3 } }, 4));
	/* A service gone: refused, saying which. */
	services(&c, b);
	CU_ASSERT_FALSE(reconfig_keep_order(&old, &c, out));
	fclose(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "192.0.2.2:53"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "needs a restart"));
	free(text);
}

void
register_options_tests(void)
{
	static const struct test_case cases[] = {
		{ "the command line: settings spelt whole, -h, -V, errors "
		  "counted", test_options_read },
		{ "files where they stand; the installed one only when "
		  "nothing is named", test_options_files },
		{ "a reload: what needs a restart, the services' order kept",
		  test_reconfig },
	};

	TEST_SUITE("options", cases);
}
