/*
 * policy/config.h: service syntax, errors through the callback (naming the
 * option and where), a file with good and bad lines, and the semantic
 * checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../policy/config.h"
#include "suites.h"
#include "testutil.h"

/* What the error callback was told. */
#define MAX_ERRS	16
struct errs {
	unsigned n;
	char where[MAX_ERRS][320];
	char msg[MAX_ERRS][512];
};

static void
collect(const char *where, const char *msg, void *arg)
{
	struct errs *e = arg;

	if (e->n < MAX_ERRS) {
		snprintf(e->where[e->n], sizeof(e->where[0]), "%s", where);
		snprintf(e->msg[e->n], sizeof(e->msg[0]), "%s", msg);
	}
	e->n++;
}

static void
test_service_parse(void)
{
	static const char *const bad[] = {
		"1.2.3:53", "192.0.2.2", "192.0.2.2:0", ":53", "[::1]53",
		"2001:db8::1:53", "192.0.2.2:65536", "192.0.2.2:", "[::1]:",
		"[::1", "[]:53", "192.0.2.2:53x", "192.0.2.2:0x35",
		"192.0.2.2:-1", "host.example:53", "[::1]:99999", "",
		"192.0.2.256:53", "[192.0.2.2]:53", "192.0.2.2:+53", "192.0.2.2: 53",
		"192.0.2.2:-18446744073709551615",
	};
	static const uint8_t v6[16] = {
		0x20, 0x01, 0x0d, 0xb8, [15] = 1,
	};
	struct service s;
	size_t i;

	CU_ASSERT_EQUAL_FATAL(service_parse(&s, "192.0.2.2:53"), 0);
	CU_ASSERT_EQUAL(s.family, AF_INET);
	CU_ASSERT_EQUAL(memcmp(s.addr.b, (uint8_t[]){ 192, 0, 2, 2 }, 4), 0);
	CU_ASSERT_EQUAL(s.port, 53);
	CU_ASSERT_STRING_EQUAL(s.name, "192.0.2.2:53");

	CU_ASSERT_EQUAL_FATAL(service_parse(&s, "[2001:db8::1]:53"), 0);
	CU_ASSERT_EQUAL(s.family, AF_INET6);
	CU_ASSERT_EQUAL(memcmp(s.addr.b, v6, 16), 0);
	CU_ASSERT_EQUAL(s.port, 53);
	CU_ASSERT_STRING_EQUAL(s.name, "[2001:db8::1]:53");

	CU_ASSERT_EQUAL(service_parse(&s, "192.0.2.2:65535"), 0);
	CU_ASSERT_EQUAL(s.port, 65535);
	CU_ASSERT_EQUAL(service_parse(&s, "[::ffff:192.0.2.2]:1"), 0);
	CU_ASSERT_EQUAL(s.family, AF_INET6);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = service_parse(&s, bad[i]);

		if (r != -1)
			fprintf(stderr, "\n    accepted '%s'", bad[i]);
		CU_ASSERT_EQUAL(r, -1);
	}
}

static void
test_find_service(void)
{
	struct config c;
	struct service s4, s6;

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:53", "t", NULL,
				   NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "[2001:db8::1]:853", "t",
				   NULL, NULL), 0);
	service_parse(&s4, "192.0.2.2:53");
	service_parse(&s6, "[2001:db8::1]:853");
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET, &s4.addr, 53),
			    &c.services[0]);
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET6, &s6.addr, 853),
			    &c.services[1]);
	CU_ASSERT_PTR_NULL(config_find_service(&c, AF_INET, &s4.addr, 54));
	CU_ASSERT_PTR_NULL(config_find_service(&c, AF_INET6, &s4.addr, 53));
	CU_ASSERT_PTR_NULL(config_find_service(&c, AF_INET6, &s6.addr, 53));
}

/* Each bad value is reported once, through the callback, naming the option
 * and where it came from; the config keeps its old value. */
static void
test_config_set_errors(void)
{
	static const struct {
		const char *name, *value, *needle;
	} bad[] = {
		{ "flows", "abc", "flows" },
		{ "flows", "15", "flows" },		/* below 16 */
		{ "flows", "", "flows" },
		{ "flows", NULL, "flows" },
		{ "queues", "0", "queues" },
		{ "queues", "65", "queues" },
		{ "key-lifetime", "60", "key-lifetime" },
		{ "verbose", "4", "verbose: expected 0 to 3" },
		{ "verbose", "loud", "verbose" },
		{ "idle-timeout", "10x", "idle-timeout" },
		{ "idle-timeout", "1500ms", "idle-timeout: expected a time" },
		{ "idle-timeout", "0s", "idle-timeout" },	/* below 1 */
		{ "idle-timeout", "s", "idle-timeout" },
		{ "idle-timeout", "-1s", "idle-timeout" },
		{ "msg-timeout", "50ms", "msg-timeout" },	/* below 100 */
		{ "msg-timeout", "2min", "msg-timeout" },
		{ "key-lifetime", "99999999999d", "key-lifetime" },
		{ "gso", "yesno", "gso: expected yes or no" },
		{ "delay-bind", "2", "delay-bind: expected yes or no" },
		{ "queue-base", "65500", "queue-base" },
		{ "protect", "192.0.2.2", "protect" },
		{ "protect", NULL, "protect" },
		{ "rules", "maybe", "rules" },
		{ "fail-open", "perhaps", "fail-open" },
		{ "bypass", "2", "bypass" },
		{ "tfo", "perhaps", "tfo: expected yes or no, got 'perhaps'" },
		{ "secret-file", NULL, "secret-file" },
		{ "iptables", "", "iptables" },
		{ "no-such-option", "1", "no-such-option" },
	};
	struct config c, before;
	size_t i;

	config_defaults(&c);
	before = c;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct errs e = { 0 };
		int r = config_set(&c, bad[i].name, bad[i].value,
				   "command line", collect, &e);

		CU_ASSERT_EQUAL(r, -1);
		CU_ASSERT_EQUAL(e.n, 1);
		if (e.n != 1)
			continue;
		CU_ASSERT_STRING_EQUAL(e.where[0], "command line");
		if (!strstr(e.msg[0], bad[i].needle))
			fprintf(stderr, "\n    '%s' does not name %s",
				e.msg[0], bad[i].needle);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0], bad[i].needle));
		CU_ASSERT_PTR_NULL(strchr(e.msg[0], '\n'));
	}
	CU_ASSERT_EQUAL(memcmp(&c, &before, sizeof(c)), 0);
	/* The offending value is quoted. */
	{
		struct errs e = { 0 };
		config_set(&c, "flows", "abc", "x", collect, &e);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0], "'abc'"));
	}
	/* A NULL callback is allowed. */
	CU_ASSERT_EQUAL(config_set(&c, "flows", "abc", "x", NULL, NULL), -1);
}

static void
test_config_set_values(void)
{
	struct errs e = { 0 };
	struct config c;

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "flows", "1024", "t", collect, &e), 0);
	CU_ASSERT_EQUAL(c.flows, 1024);
	CU_ASSERT_EQUAL(config_set(&c, "mark", "0x10", "t", collect, &e), 0);
	CU_ASSERT_EQUAL(c.mark, 0x10);
	CU_ASSERT_EQUAL(config_set(&c, "queue-maxlen", "100", "t", collect,
				   &e), 0);
	CU_ASSERT_EQUAL(c.queue_maxlen, 100);
	CU_ASSERT_EQUAL(config_set(&c, "queue-base", "7", "t", collect, &e),
			0);
	CU_ASSERT_EQUAL(c.queue_base, 7);
	CU_ASSERT_EQUAL(config_set(&c, "fail-open", NULL, "t", collect, &e), 0);
	CU_ASSERT_TRUE(c.fail_open);
	CU_ASSERT_EQUAL(config_set(&c, "fail-open", "no", "t", collect, &e), 0);
	CU_ASSERT_FALSE(c.fail_open);
	CU_ASSERT_EQUAL(config_set(&c, "bypass", "yes", "t", collect, &e), 0);
	CU_ASSERT_TRUE(c.bypass);
	/* Every switch takes the same words, in any case. */
	{
		static const char *const on[] = { "yes", "true", "on", "1", "YES", "True" };
		static const char *const off[] = { "no", "false", "off", "0", "NO", "Off" };

		for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
			CU_ASSERT_EQUAL(config_set(&c, "gso", off[i], "t", collect, &e), 0);
			CU_ASSERT_FALSE(c.gso);
			CU_ASSERT_EQUAL(config_set(&c, "gso", on[i], "t", collect, &e), 0);
			CU_ASSERT_TRUE(c.gso);
			CU_ASSERT_EQUAL(config_set(&c, "delay-bind", off[i], "t", collect, &e), 0);
			CU_ASSERT_EQUAL(c.pol.delay_bind, 0);
			CU_ASSERT_EQUAL(config_set(&c, "tfo", on[i], "t", collect, &e), 0);
			CU_ASSERT_EQUAL(c.pol.tfo, 1);
		}
	}
	/* Times: a number in the option's unit, or one with its own. */
	{
		static const struct {
			const char *name, *value;
			size_t off;
			unsigned want;
		} times[] = {
			{ "idle-timeout", "2m", offsetof(struct config, pol.idle_timeout), 120 },
			{ "idle-timeout", "90", offsetof(struct config, pol.idle_timeout), 90 },
			{ "idle-timeout", "3000ms", offsetof(struct config, pol.idle_timeout), 3 },
			{ "msg-timeout", "3s", offsetof(struct config, pol.msg_timeout), 3000 },
			{ "msg-timeout", "250ms", offsetof(struct config, pol.msg_timeout), 250 },
			{ "key-lifetime", "1h", offsetof(struct config, key_lifetime), 3600 },
			{ "closing-timeout", "1d", offsetof(struct config, closing_timeout), 86400 },
			{ "txn-timeout", "1s", offsetof(struct config, txn_timeout), 1000 },
		};

		for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
			CU_ASSERT_EQUAL(config_set(&c, times[i].name, times[i].value,
						   "t", collect, &e), 0);
			CU_ASSERT_EQUAL(*(const unsigned *)((const uint8_t *)&c +
							    times[i].off),
					times[i].want);
		}
	}
	CU_ASSERT_EQUAL(e.n, 0);
	CU_ASSERT_EQUAL(config_set(&c, "rules", "print", "t", collect, &e), 0);
	CU_ASSERT_EQUAL(c.rules, RULES_PRINT);
	CU_ASSERT_EQUAL(config_set(&c, "iptables", "/sbin/iptables-legacy",
				   "t", collect, &e), 0);
	CU_ASSERT_STRING_EQUAL(c.iptables, "/sbin/iptables-legacy");
	CU_ASSERT_STRING_EQUAL(c.ip6tables, "ip6tables");
	CU_ASSERT_EQUAL(config_set(&c, "ip6tables", "/sbin/ip6tables-nft",
				   "t", collect, &e), 0);
	CU_ASSERT_STRING_EQUAL(c.ip6tables, "/sbin/ip6tables-nft");
	CU_ASSERT_STRING_EQUAL(c.iptables, "/sbin/iptables-legacy");
	CU_ASSERT_EQUAL(config_set(&c, "secret-file", "/etc/tcpctd/secret",
				   "t", collect, &e), 0);
	CU_ASSERT_STRING_EQUAL(c.secret_file, "/etc/tcpctd/secret");
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:53", "t", collect,
				   &e), 0);
	CU_ASSERT_EQUAL(c.nservices, 1);
	CU_ASSERT_EQUAL(e.n, 0);

	/* The same service twice is an error. */
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:53", "t", collect,
				   &e), -1);
	CU_ASSERT_EQUAL(e.n, 1);
	CU_ASSERT_EQUAL(c.nservices, 1);
}

/* Two bad lines (3 and 6) among three good ones: both reported as
 * file:line, the good ones applied, 2 returned. */
/* The error at index i is at line and says what. */
static void
assert_err(const struct errs *e, unsigned i, const char *path, unsigned line,
	   const char *what)
{
	char want[96];

	CU_ASSERT_FATAL(i < e->n && i < MAX_ERRS);
	snprintf(want, sizeof(want), "%s:%u", path, line);
	CU_ASSERT_STRING_EQUAL(e->where[i], want);
	if (!strstr(e->msg[i], what))
		fprintf(stderr, "\n  error %u: '%s' lacks '%s'\n", i,
			e->msg[i], what);
	CU_ASSERT_PTR_NOT_NULL(strstr(e->msg[i], what));
}

static void
test_config_load(void)
{
	static const char text[] =
		"# tcpctd test configuration\n"		/* 1 */
		"[tcpctd]\n"				/* 2 */
		"flows = many\n"			/* 3: bad */
		"idle-timeout = 600   # ten minutes\n"	/* 4 */
		"no-such-option = 1\n"			/* 5: bad */
		"protect = 192.0.2.2:53\n"		/* 6: bad */
		"\n"					/* 7 */
		"[service dns]\n"			/* 8 */
		"  protect = 192.0.2.2:53\n"		/* 9 */
		"protect = [2001:db8::2]:53,max-queries=3\n"	/* 10 */
		"max-per-addr = 5 ; inline\n"		/* 11 */
		"kind = generic\n"			/* 12 */
		"queues 2\n"				/* 13: bad */
		"[service web]\n"			/* 14 */
		"protect = 192.0.2.2:80,dns\n"		/* 15 */
		"wat = 1\n"				/* 16: bad */
		"kind = web\n"				/* 17: bad */
		"[bogus]\n"				/* 18 */
		"x = 1\n"				/* 19: bad */
		"[service dns]\n"			/* 20: again */
		"fail-open = yes\n"			/* 21: bad */
		"\tmax-lifetime = 30\n"			/* 22 */
		"[tcpctd]\n"				/* 23: again */
		"fail-open = yes\n";			/* 24 */
	char path[64];
	struct errs e = { 0 };
	struct config c;
	const struct service *s;

	test_tmp_file(path, sizeof(path), text);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, path, collect, &e), 10);
	CU_ASSERT_EQUAL_FATAL(e.n, 10);
	assert_err(&e, 0, path, 3, "flows: expected a number");
	assert_err(&e, 1, path, 5, "unknown option 'no-such-option'");
	assert_err(&e, 2, path, 6, "protect belongs in a [service NAME]");
	assert_err(&e, 3, path, 13, "expected NAME = VALUE or [section], "
		   "got 'queues 2'");
	assert_err(&e, 4, path, 16, "'wat' is not a setting of [service web]");
	assert_err(&e, 5, path, 17, "kind: expected dns or generic, got 'web'");
	assert_err(&e, 6, path, 19, "[bogus] is not a section");
	/* A section heads once in a file; what follows is still read. */
	assert_err(&e, 7, path, 20, "[service dns] again: line 8 heads it "
		   "already");
	assert_err(&e, 8, path, 21, "'fail-open' is not a setting of "
		   "[service dns]");
	assert_err(&e, 9, path, 23, "[tcpctd] again: line 2 heads it");
	CU_ASSERT_TRUE(c.fail_open);
	CU_ASSERT_EQUAL(c.flows, 65536);	/* the default stayed */
	CU_ASSERT_EQUAL_FATAL(c.nservices, 3);
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 0);

	/* A section's settings reach all its backends, wherever they stand
	 * in it; a protect line's own win; the global ones fill the rest. */
	s = &c.services[0];
	CU_ASSERT_STRING_EQUAL(s->name, "dns");
	CU_ASSERT_EQUAL(s->kind, SERVICE_GENERIC);
	CU_ASSERT_EQUAL(s->pol.max_per_addr, 5);
	CU_ASSERT_EQUAL(s->pol.max_lifetime, 30);
	CU_ASSERT_EQUAL(s->pol.idle_timeout, 600);
	CU_ASSERT_EQUAL(s->pol.max_queries, 0);
	s = &c.services[1];
	CU_ASSERT_EQUAL(s->family, AF_INET6);
	CU_ASSERT_STRING_EQUAL(s->name, "dns");
	CU_ASSERT_EQUAL(s->pol.max_queries, 3);
	CU_ASSERT_EQUAL(s->pol.max_per_addr, 5);
	s = &c.services[2];
	CU_ASSERT_STRING_EQUAL(s->name, "web");
	CU_ASSERT_EQUAL(s->kind, SERVICE_DNS);	/* its protect line said */
	CU_ASSERT_EQUAL(s->pol.max_per_addr, 0);
	CU_ASSERT_EQUAL(s->pol.max_pending_per_addr, 25);
	unlink(path);
}

/* Writes text to dir/name. */
static void
put_file(const char *dir, const char *name, const char *text)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void
test_config_include(void)
{
	static const char *const made[] = {
		"tcpctd.conf", "limits.conf", "loop.conf",
		"conf.d/10-dns.conf", "conf.d/20-web.conf",
		"conf.d/20-web.conf~", "conf.d/30-rules.conf",
		"conf.d/.hidden.conf",
	};
	char dir[64], path[160], sub[160], where[200];
	struct errs e = { 0 };
	struct config c;
	size_t i;

	snprintf(dir, sizeof(dir), "/tmp/tcpctd-unit-include.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/conf.d", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
	put_file(dir, "tcpctd.conf",
		 "[tcpctd]\n"				/* 1 */
		 "queues = 2\n"				/* 2 */
		 "include = conf.d/*.conf\n"		/* 3 */
		 "include = none.d/*.conf\n"		/* 4: matches none */
		 "[service dns]\n"			/* 5 */
		 "max-per-addr = 7\n"			/* 6 */
		 "include = missing.conf\n"		/* 7: bad */
		 "include = loop.conf\n"			/* 8 */
		 "max-queries = 9\n"			/* 9: [service dns] */
		 "include = limits.conf\n");		/* 10: in it too */
	put_file(dir, "limits.conf", "max-lifetime = 30\n");
	/* Not a setting: an action, for the command line alone.  A
	 * directory is no file to include; a file read already is not read
	 * again (four such files would each include each other forever). */
	put_file(sub, "30-rules.conf", "rules = install\nverbose = 2\n"
				       "include = .\ninclude = *.conf\n");
	put_file(sub, "10-dns.conf",
		 "[service dns]\nprotect = 192.0.2.2:53\n");
	put_file(sub, "20-web.conf",
		 "flows = 1024\n"			/* outside: [tcpctd] */
		 "[service web]\n"
		 "protect = 192.0.2.3:80\n"
		 "kind = generic\n"
		 "bogus = 1\n");				/* 5: bad */
	put_file(sub, ".hidden.conf", "[service x]\nprotect = 192.0.2.9:1\n");
	put_file(sub, "20-web.conf~", "[service y]\nprotect = 192.0.2.9:2\n");
	put_file(dir, "loop.conf", "include = loop.conf\n");

	snprintf(path, sizeof(path), "%s/tcpctd.conf", dir);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, path, collect, &e), 8);
	CU_ASSERT_EQUAL_FATAL(e.n, 8);
	snprintf(where, sizeof(where), "%s/20-web.conf", sub);
	assert_err(&e, 0, where, 5, "'bogus' is not a setting of [service web]");
	snprintf(where, sizeof(where), "%s/30-rules.conf", sub);
	assert_err(&e, 1, where, 1, "rules: an action of the command line");
	assert_err(&e, 2, where, 3, "/conf.d/.: not a file");
	assert_err(&e, 3, where, 4, "10-dns.conf: read already (a loop?)");
	assert_err(&e, 4, where, 4, "20-web.conf: read already");
	assert_err(&e, 5, where, 4, "30-rules.conf: read already");
	assert_err(&e, 6, path, 7, "no such file");
	snprintf(where, sizeof(where), "%s/loop.conf", dir);
	assert_err(&e, 7, where, 1, "loop.conf: read already (a loop?)");
	CU_ASSERT_EQUAL(c.rules, RULES_NONE);
	CU_ASSERT_EQUAL(c.verbose, 2);

	/* The files in order, the dot file and the backup left out; the
	 * main file's [service dns] reaches the backend an included file
	 * gave it, before and after the include lines. */
	CU_ASSERT_EQUAL(c.queues, 2);
	CU_ASSERT_EQUAL(c.flows, 1024);
	CU_ASSERT_EQUAL_FATAL(c.nservices, 2);
	CU_ASSERT_STRING_EQUAL(c.services[0].name, "dns");
	CU_ASSERT_EQUAL(c.services[0].pol.max_per_addr, 7);
	CU_ASSERT_EQUAL(c.services[0].pol.max_queries, 9);
	CU_ASSERT_STRING_EQUAL(c.services[1].name, "web");
	CU_ASSERT_EQUAL(c.services[1].kind, SERVICE_GENERIC);
	/* A file included in a section: its first lines are that section's
	 * (unbound's include), not [tcpctd]'s. */
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 0);
	CU_ASSERT_EQUAL(c.services[0].pol.max_lifetime, 30);
	CU_ASSERT_EQUAL(c.services[1].pol.max_lifetime, 0);

	for (i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(where, sizeof(where), "%s/%s", dir, made[i]);
		remove(where);
	}
	rmdir(sub);
	rmdir(dir);
}

/* tcpctd -t -v: each backend's limits, and where each comes from. */
static void
test_write_policies(void)
{
	struct errs e = { 0 };
	struct config c;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:53,max-queries=3",
				   "t", collect, &e), 0);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.3:80,generic", "t",
				   collect, &e), 0);
	CU_ASSERT_EQUAL(config_set(&c, "idle-timeout", "20", "t", collect, &e),
			0);
	CU_ASSERT_EQUAL_FATAL(config_check(&c, collect, &e), 0);
	f = open_memstream(&text, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	config_write_policies(&c, f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "# 192.0.2.2:53: [service "
				       "192.0.2.2:53], kind dns\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nmax-queries            = "
				       "3        # its own\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nidle-timeout           = "
				       "20s      # [tcpctd]\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nmsg-timeout            = "
				       "2000ms   # default, dns\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nmax-per-addr           = "
				       "0        # default, dns\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nmax-pending-per-prefix = "
				       "256      # default, dns\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "kind generic\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\ndelay-bind             = "
				       "no       # default, generic\n"));
	free(text);
}

static void
test_config_load_other_errors(void)
{
	char path[64], *text;
	struct errs e = { 0 };
	struct config c;
	size_t n = 2000, i;

	/* A line longer than the reader takes: one error, and the line
	 * after it is still read. */
	text = malloc(n + 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	strcpy(text, "[tcpctd]\nsecret-file = /");
	memset(text + strlen(text), 'a', n);
	strcpy(text + 24 + n, "\n[service x]\nprotect = 192.0.2.2:53\n");
	test_tmp_file(path, sizeof(path), text);
	free(text);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, path, collect, &e), 1);
	assert_err(&e, 0, path, 2, "line too long");
	CU_ASSERT_EQUAL(c.nservices, 1);
	unlink(path);

	/* Names a service cannot have; the same backend twice. */
	memset(&e, 0, sizeof(e));
	text = malloc(2048);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	strcpy(text, "[service ]\nkind = dns\n[service ");
	for (i = 0; i < 70; i++)
		strcat(text, "n");
	strcat(text, "]\nkind = dns\n[service a]\nprotect = 192.0.2.2:53\n"
		     "[service b]\nprotect = 192.0.2.2:53\n"
		     "[service web/1]\nkind = dns\n[service a b]\nkind = dns\n"
		     "[service ns1.example:tcp-53_x]\nkind = dns\n");
	test_tmp_file(path, sizeof(path), text);
	free(text);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, path, collect, &e), 5);
	assert_err(&e, 0, path, 2, "a service needs a name");
	assert_err(&e, 1, path, 3, "a section name of 49 bytes at most");
	assert_err(&e, 2, path, 8, "protect: '192.0.2.2:53' given twice");
	/* A slash or a blank would break the counters' names. */
	assert_err(&e, 3, path, 10, "needs a name of letters, digits");
	assert_err(&e, 4, path, 12, "needs a name of letters, digits");
	unlink(path);

	/* A file that cannot be opened: -1, reported once. */
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(config_load(&c, "/nonexistent/tcpctd.conf", collect,
				    &e), -1);
	CU_ASSERT_EQUAL(e.n, 1);
}

static void
test_config_check(void)
{
	struct errs e = { 0 };
	struct config c;

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 1);
	CU_ASSERT_EQUAL(e.n, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0], "protect"));

	/* Removing rules needs no service. */
	c.rules = RULES_REMOVE;
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 0);
	c.rules = RULES_NONE;

	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:53", "t", NULL,
				   NULL), 0);
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 0);

	/* Impossible limits. */
	c.closed_linger = c.closing_timeout + 1;
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 1);
	c.closed_linger = 10;
	/* Two queues per worker: a flow queue and a SYN queue. */
	c.queue_base = 65536 - 128;
	c.queues = 64;
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 0);
	c.queue_base = 65536 - 127;
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 1);
	c.queue_base = 65500;
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 1);
}

/* A service's policy: its own setting, else the global one, else its
 * kind's default, whatever the order they were given in. */
static void
test_policy(void)
{
	static const struct {
		const char *value, *needle;
	} bad[] = {
		{ "192.0.2.2:53,dnss", "dnss" },
		{ "192.0.2.2:53,max-queries", "max-queries" },
		{ "192.0.2.2:53,max-queries=", "max-queries" },
		{ "192.0.2.2:53,max-queries=-1", "max-queries" },
		{ "192.0.2.2:53,msg-timeout=50", "msg-timeout" },
		{ "192.0.2.2:53,idle-timeout=0", "idle-timeout" },
		{ "192.0.2.2:53,flows=5", "flows" },
		{ "192.0.2.2,dns", "protect" },
		{ "192.0.2.2:53,tcpct=maybe", "tcpct: expected yes or no" },
		{ "192.0.2.2:53,tfo=2", "tfo: expected yes or no" },
	};
	struct errs e = { 0 };
	struct config c;
	size_t i;

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:53", "t", NULL,
				   NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:80", "t", NULL,
				   NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "192.0.2.2:853,dns,"
				   "max-per-addr=5,idle-timeout=30", "t",
				   NULL, NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "[2001:db8::2]:53,generic",
				   "t", NULL, NULL), 0);
	/* Given after the services, still theirs unless they say. */
	CU_ASSERT_EQUAL(config_set(&c, "max-queries", "100", "t", NULL, NULL),
			0);
	CU_ASSERT_EQUAL(config_set(&c, "idle-timeout", "20", "t", NULL, NULL),
			0);
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 0);
	CU_ASSERT_EQUAL(e.n, 0);
	CU_ASSERT_EQUAL(c.services[0].kind, SERVICE_DNS);
	CU_ASSERT_EQUAL(c.services[1].kind, SERVICE_GENERIC);
	CU_ASSERT_EQUAL(c.services[2].kind, SERVICE_DNS);
	CU_ASSERT_EQUAL(c.services[3].kind, SERVICE_GENERIC);
	CU_ASSERT_EQUAL(c.services[0].pol.idle_timeout, 20);
	CU_ASSERT_EQUAL(c.services[1].pol.idle_timeout, 20);
	CU_ASSERT_EQUAL(c.services[2].pol.idle_timeout, 30);
	CU_ASSERT_EQUAL(c.services[2].pol.max_queries, 100);
	/* Per kind: DNS caps a client's pending connections, 25 per
	 * address and 256 per prefix, and not all of them; generic caps
	 * neither. */
	CU_ASSERT_EQUAL(c.services[0].pol.max_per_addr, 0);
	CU_ASSERT_EQUAL(c.services[0].pol.max_per_prefix, 0);
	CU_ASSERT_EQUAL(c.services[0].pol.max_pending_per_addr, 25);
	CU_ASSERT_EQUAL(c.services[0].pol.max_pending_per_prefix, 256);
	CU_ASSERT_EQUAL(c.services[1].pol.max_per_addr, 0);
	CU_ASSERT_EQUAL(c.services[1].pol.max_pending_per_addr, 0);
	CU_ASSERT_EQUAL(c.services[1].pol.max_pending_per_prefix, 0);
	CU_ASSERT_EQUAL(c.services[2].pol.max_per_addr, 5);
	CU_ASSERT_EQUAL(c.services[2].pol.max_pending_per_addr, 25);
	CU_ASSERT_EQUAL(c.services[3].pol.max_per_addr, 0);
	CU_ASSERT_EQUAL(c.services[0].pol.msg_timeout, 2000);
	CU_ASSERT_EQUAL(c.services[0].pol.conn_rate, 0);
	CU_ASSERT_STRING_EQUAL(c.services[2].name, "192.0.2.2:853");
	/* Without globals: the kinds' own idle timeouts. */
	config_defaults(&c);
	config_set(&c, "protect", "192.0.2.2:53", "t", NULL, NULL);
	config_set(&c, "protect", "192.0.2.2:80", "t", NULL, NULL);
	CU_ASSERT_EQUAL(config_check(&c, NULL, NULL), 0);
	CU_ASSERT_EQUAL(c.services[0].pol.idle_timeout, 10);
	CU_ASSERT_EQUAL(c.services[1].pol.idle_timeout, 7440);
	/* Dialects: every one by default; off globally, or for one service
	 * (yes, no, 1 or 0). */
	CU_ASSERT_TRUE(c.services[0].pol.tcpct && c.services[0].pol.tfo);
	CU_ASSERT_TRUE(c.services[1].pol.tcpct && c.services[1].pol.tfo);
	config_defaults(&c);
	config_set(&c, "protect", "192.0.2.2:53,tfo=no", "t", NULL, NULL);
	config_set(&c, "protect", "192.0.2.2:80,tcpct=1", "t", NULL, NULL);
	CU_ASSERT_EQUAL(config_set(&c, "tcpct", "no", "t", NULL, NULL), 0);
	CU_ASSERT_EQUAL(config_check(&c, NULL, NULL), 0);
	CU_ASSERT_EQUAL(c.services[0].pol.tcpct, 0);
	CU_ASSERT_EQUAL(c.services[0].pol.tfo, 0);
	CU_ASSERT_EQUAL(c.services[1].pol.tcpct, 1);
	CU_ASSERT_EQUAL(c.services[1].pol.tfo, 1);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		config_defaults(&c);
		CU_ASSERT_EQUAL(config_set(&c, "protect", bad[i].value, "t",
					   collect, &e), -1);
		CU_ASSERT_EQUAL(e.n, 1);
		CU_ASSERT_EQUAL(c.nservices, 0);
		if (e.n)
			CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0],
						      bad[i].needle));
	}
	memset(&e, 0, sizeof(e));
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "limit-slots", "3000", "t", NULL, NULL),
			0);
	config_set(&c, "protect", "192.0.2.2:53", "t", NULL, NULL);
	CU_ASSERT_EQUAL(config_check(&c, collect, &e), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0], "limit-slots"));
}

/* Prefixes as operators write them; bits past the length cleared, and
 * said (1). */
static void
test_prefixes(void)
{
	static const struct {
		const char *in, *out;	/* out NULL: refused */
		int r;
	} cases[] = {
		{ "198.51.100.0/24", "198.51.100.0/24", 0 },
		{ "198.51.100.77/24", "198.51.100.0/24", 1 },
		{ "198.51.100.77/23", "198.51.100.0/23", 1 },
		{ "198.51.100.77/25", "198.51.100.0/25", 1 },
		{ "198.51.100.128/25", "198.51.100.128/25", 0 },
		{ "198.51.100.7", "198.51.100.7/32", 0 },
		{ "0.0.0.0/0", "0.0.0.0/0", 0 },
		{ "2001:db8:c::2/64", "2001:db8:c::/64", 1 },
		{ "2001:db8:c:ffff::/49", "2001:db8:c:8000::/49", 1 },
		{ "2001:db8:c:8000::/49", "2001:db8:c:8000::/49", 0 },
		{ "2001:db8::1", "2001:db8::1/128", 0 },
		{ "198.51.100.0/33", NULL, -1 },
		{ "2001:db8::/129", NULL, -1 },
		{ "198.51.100.0/", NULL, -1 },
		{ "198.51.100.0/-1", NULL, -1 },
		{ "198.51.100.0/ 8", NULL, -1 },
		{ "/24", NULL, -1 },
		{ "[2001:db8::]/32", NULL, -1 },
		{ "example.test/24", NULL, -1 },
	};
	char buf[INET6_ADDRSTRLEN + 8];
	struct config c;
	struct errs e = { 0 };
	struct prefix p;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = prefix_parse(&p, cases[i].in);

		CU_ASSERT_EQUAL(r, cases[i].out ? cases[i].r : -1);
		if (r >= 0 && cases[i].out) {
			prefix_format(&p, buf, sizeof(buf));
			CU_ASSERT_STRING_EQUAL(buf, cases[i].out);
		}
	}
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "allow", "203.0.113.0/24", "t", collect,
				   &e), 0);
	CU_ASSERT_EQUAL(config_set(&c, "deny", "2001:db8:f::/48", "t", collect,
				   &e), 0);
	CU_ASSERT_EQUAL(c.nallow, 1);
	CU_ASSERT_EQUAL(c.ndeny, 1);
	CU_ASSERT_EQUAL(c.deny[0].family, AF_INET6);
	CU_ASSERT_EQUAL(config_set(&c, "deny", "2001:db8:f::/480", "t",
				   collect, &e), -1);
	CU_ASSERT_EQUAL(e.n, 1);
	CU_ASSERT_STRING_EQUAL(e.msg[0], "deny: expected ADDR/LEN, got "
			       "'2001:db8:f::/480'");
	for (i = 1; i < POLICY_MAX_PREFIXES; i++)
		CU_ASSERT_EQUAL(config_set(&c, "allow", "198.18.0.0/15", "t",
					   collect, &e), 0);
	CU_ASSERT_EQUAL(config_set(&c, "allow", "198.18.0.0/15", "t", collect,
				   &e), -1);
	CU_ASSERT_EQUAL(c.nallow, POLICY_MAX_PREFIXES);
	CU_ASSERT_EQUAL(c.allow[0].addr.b[0], 203);	/* the first kept */
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[1], "more than 64"));
}

/*
 * Files a new operator gets wrong, each with the one error it gets: an
 * address no segment is sent to, a number C would read in another base,
 * a prefix with bits past its length, a section headed twice; and what is
 * right though it looks odd (a byte-order mark, loopback, a hex mark).
 */
static void
test_config_mistakes(void)
{
	static const struct {
		const char *text;	/* after "[service dns]\n" */
		unsigned line;		/* 0: no error */
		const char *what;
	} cases[] = {
		{ "protect = 0.0.0.0:53\n", 2, "protect: 0.0.0.0 is no "
		  "destination (RFC 1122 §3.2.1.3 (a)), not 'every address'" },
		{ "protect = 0.1.2.3:53\n", 2, "protect: 0.1.2.3 is in "
		  "0.0.0.0/8, a source address only" },
		{ "protect = 255.255.255.255:53\n", 2, "protect: "
		  "255.255.255.255 is the limited broadcast address" },
		{ "protect = 224.0.0.1:53\n", 2, "protect: 224.0.0.1 is a "
		  "multicast address (224.0.0.0/4, RFC 5771)" },
		{ "protect = 239.255.255.250:80\n", 2, "is a multicast" },
		{ "protect = [::]:53\n", 2, "protect: :: is the unspecified "
		  "address, no destination (RFC 4291 §2.5.2), not 'every "
		  "address'" },
		{ "protect = [ff02::1]:53\n", 2, "protect: ff02::1 is a "
		  "multicast address (ff00::/8" },
		{ "protect = 192.0.2.2:53\nprotect = [::ffff:192.0.2.2]:53\n",
		  3, "protect: ::ffff:192.0.2.2 is IPv4-mapped (RFC 4291 "
		  "§2.5.5.2), which no packet on the wire carries" },
		{ "protect = 192.0.2.2:53,max-queries=010\n", 2,
		  "max-queries: expected a number in 0..1073741824, got '010' "
		  "(numbers are decimal, without a leading 0 or 0x)" },
		{ "protect = 192.0.2.2:53\nidle-timeout = 010\n", 3,
		  "idle-timeout: expected a time in 1..604800 s (or with ms, s, "
		  "m, h, d), got '010' (numbers are decimal" },
		{ "protect = 192.0.2.2:53\nidle-timeout = 010s\n", 3,
		  "got '010s' (numbers are decimal" },
		{ "protect = 192.0.2.2:53\nmax-per-addr = 0x10\n", 3,
		  "max-per-addr: expected a number in 0..1048576, got '0x10' "
		  "(numbers are decimal" },
		{ "protect = 192.0.2.2:53\nmax-per-addr = +16\n", 3,
		  "max-per-addr: expected a number in 0..1048576, got '+16'" },
		{ "protect = 192.0.2.2:53\n[tcpctd]\nflows = 01024\n", 4,
		  "flows: expected a number in 16..16777216, got '01024' "
		  "(numbers are decimal" },
		{ "protect = 192.0.2.2:53\n[tcpctd]\nmark = 010\n", 4,
		  "mark: expected a number in 1..4294967295 (or 0x and hex "
		  "digits), got '010'" },
		{ "protect = 192.0.2.2:53\n[tcpctd]\ndeny = 10.0.0.1/8\n", 4,
		  "deny: 10.0.0.1/8 has bits set past its length: 10.0.0.0/8, "
		  "or the address alone" },
		{ "protect = 192.0.2.2:53\n[tcpctd]\nallow = 2001:db8::1/64\n",
		  4, "allow: 2001:db8::1/64 has bits set past its length: "
		  "2001:db8::/64" },
		{ "protect = 192.0.2.2:53\n[service web]\nprotect = "
		  "192.0.2.2:80\n[service dns]\nprotect = 192.0.2.3:53\n", 5,
		  "[service dns] again: line 1 heads it already; a section "
		  "stands once in a file" },
		{ "protect = 192.0.2.2:53\nidle-timeout = 0010\n", 3,
		  "got '0010'" },
		/* Right, though they may look wrong. */
		{ "protect = 127.0.0.2:53\nprotect = [::1]:53\n", 0, NULL },
		{ "protect = 192.0.2.2:53\nmax-per-addr = 0\nmsg-timeout = "
		  "100\nidle-timeout = 10s\n[tcpctd]\nmark = 0x7463\n"
		  "deny = 10.0.0.0/8\nallow = 2001:db8::/32\n", 0, NULL },
	};
	struct errs e;
	struct config c;
	char path[64], text[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&e, 0, sizeof(e));
		snprintf(text, sizeof(text), "[service dns]\n%s",
			 cases[i].text);
		test_tmp_file(path, sizeof(path), text);
		config_defaults(&c);
		CU_ASSERT_EQUAL(config_load(&c, path, collect, &e),
				cases[i].line ? 1 : 0);
		if (cases[i].line && e.n == 1) {
			assert_err(&e, 0, path, cases[i].line, cases[i].what);
		} else if (e.n != (cases[i].line ? 1 : 0)) {
			fprintf(stderr, "\n  case %zu: %u errors, the first "
				"'%s'\n", i, e.n, e.n ? e.msg[0] : "");
			CU_FAIL("the errors expected");
		}
		unlink(path);
	}
}

/*
 * What is not a configuration stops at its first line, unquoted (an
 * include of /etc/shadow would put every hash in the journal); a UTF-8
 * byte-order mark is skipped; a control character is no text.
 */
static void
test_config_not_config(void)
{
	static const char shadow[] =
		"root:$y$j9T$SECRETSALT$SECRETHASH:19700:0:99999:7:::\n"
		"daemon:*:19700:0:99999:7:::\n"
		"nobody:*:19700:0:99999:7:::\n";
	char dir[64], path[160], where[200];
	struct errs e = { 0 };
	struct config c;
	unsigned i;

	snprintf(dir, sizeof(dir), "/tmp/tcpctd-unit-shadow.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	/* A byte-order mark, before a header or a setting. */
	put_file(dir, "bom.conf", "\xef\xbb\xbf[tcpctd]\nqueues = 2\n"
				  "[service dns]\nprotect = 192.0.2.2:53\n");
	put_file(dir, "bom2.conf", "\xef\xbb\xbfqueues = 3\n");
	memset(&e, 0, sizeof(e));
	snprintf(where, sizeof(where), "%s/bom.conf", dir);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, where, collect, &e), 0);
	CU_ASSERT_EQUAL(e.n, 0);
	CU_ASSERT_EQUAL(c.queues, 2);
	CU_ASSERT_EQUAL(c.nservices, 1);
	snprintf(where, sizeof(where), "%s/bom2.conf", dir);
	CU_ASSERT_EQUAL(config_load(&c, where, collect, &e), 0);
	CU_ASSERT_EQUAL(c.queues, 3);
	/* A mark further on is no mark but a character. */
	put_file(dir, "bom3.conf", "[tcpctd]\n\xef\xbb\xbfqueues = 3\n");
	memset(&e, 0, sizeof(e));
	snprintf(where, sizeof(where), "%s/bom3.conf", dir);
	CU_ASSERT_EQUAL(config_load(&c, where, collect, &e), 1);

	/* What is not a configuration. */
	put_file(dir, "shadow", shadow);
	put_file(dir, "script", "#!/bin/sh\n# a comment\n\nset -e\n"
				"x=1\n");
	put_file(dir, "binary", "\x7f" "ELF\x02\x01\x01 = \x03\n"
				"queues = 2\n");
	put_file(dir, "tcpctd.conf",
		 "[tcpctd]\n"				/* 1 */
		 "include = shadow\n"			/* 2 */
		 "include = script\n"			/* 3 */
		 "include = binary\n"			/* 4 */
		 "[service dns]\n"			/* 5 */
		 "protect = 192.0.2.2:53\n"		/* 6 */
		 "flows = 1024\x01\n"			/* 7: bad */
		 "kind = generic\n");			/* 8 */
	snprintf(path, sizeof(path), "%s/tcpctd.conf", dir);
	memset(&e, 0, sizeof(e));
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, path, collect, &e), 4);
	CU_ASSERT_EQUAL_FATAL(e.n, 4);
	snprintf(where, sizeof(where), "%s/shadow", dir);
	assert_err(&e, 0, where, 1, "not a configuration file: its first "
		   "line is no [section] or NAME = VALUE, and the rest is not "
		   "read");
	snprintf(where, sizeof(where), "%s/script", dir);
	assert_err(&e, 1, where, 4, "not a configuration file");
	snprintf(where, sizeof(where), "%s/binary", dir);
	assert_err(&e, 2, where, 1, "not a configuration file");
	assert_err(&e, 3, path, 7, "a control character: the line is not "
		   "text");
	for (i = 0; i < e.n; i++) {
		CU_ASSERT_PTR_NULL(strstr(e.msg[i], "SECRET"));
		CU_ASSERT_PTR_NULL(strstr(e.msg[i], "daemon"));
		CU_ASSERT_PTR_NULL(strstr(e.msg[i], "set -e"));
	}
	/* The including file read on; nothing of the others taken. */
	CU_ASSERT_EQUAL(c.queues, 1);
	CU_ASSERT_EQUAL(c.flows, 65536);
	CU_ASSERT_EQUAL_FATAL(c.nservices, 1);
	CU_ASSERT_EQUAL(c.services[0].kind, SERVICE_GENERIC);
	/* -c /etc/shadow: the same. */
	memset(&e, 0, sizeof(e));
	snprintf(where, sizeof(where), "%s/shadow", dir);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, where, collect, &e), 1);
	CU_ASSERT_EQUAL(e.n, 1);
	{
		static const char *const made[] = {
			"shadow", "script", "binary", "tcpctd.conf", "bom.conf",
			"bom2.conf", "bom3.conf",
		};

		for (i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
			snprintf(where, sizeof(where), "%s/%s", dir, made[i]);
			remove(where);
		}
	}
	rmdir(dir);
}

/* Every name config_option() gives the command line is one config_set()
 * knows, flags take no value, and the new ones are there. */
static void
test_config_options(void)
{
	const char *name;
	bool flag, seen_synack = false, seen_bind = false;
	size_t i;

	for (i = 0; (name = config_option(i, &flag)); i++) {
		struct config c;
		struct errs e = { 0 };

		config_defaults(&c);
		config_set(&c, name, flag ? NULL : "", "t", collect, &e);
		CU_ASSERT(e.n == 0 || !strstr(e.msg[0], "unknown option"));
		if (flag)
			CU_ASSERT_EQUAL(e.n, 0);
		seen_synack |= !strcmp(name, "synack-rate");
		seen_bind |= !strcmp(name, "delay-bind");
	}
	CU_ASSERT(i > 40);
	CU_ASSERT(seen_synack && seen_bind);
}

/*
 * Issue 35: an upstream service names far servers by prefix; a protected
 * service at an address wins over the prefix that holds it, and of two
 * prefixes the longer; bad prefixes are refused with why; only DNS with
 * delay-bind, and without the shield.
 */
static void
test_upstream(void)
{
	static const char text[] =
		"[tcpctd]\n"
		"upstream = 203.0.113.0/24:53\n"	/* 2: bad */
		"[service far]\n"
		"upstream = 203.0.113.0/24:53\n"	/* 4 */
		"upstream = [2001:db8:d::/48]:53\n"	/* 5 */
		"upstream = 203.0.113.1/24:53\n"	/* 6: bad */
		"max-queries = 7\n";
	struct service a, b;
	struct errs e = { 0 };
	char path[64], buf[80];
	struct config c;

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "upstream", "198.51.100.0/24:53", "t",
				   NULL, NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "upstream", "198.51.100.128/25:53",
				   "t", NULL, NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "protect", "198.51.100.200:53", "t",
				   NULL, NULL), 0);
	CU_ASSERT_EQUAL(config_set(&c, "upstream", "[2001:db8:d::/48]:53",
				   "t", NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(c.nservices, 4);
	CU_ASSERT(c.services[0].upstream && c.services[0].plen == 24);
	CU_ASSERT_EQUAL(c.services[0].kind, SERVICE_DNS);
	service_format(&c.services[0], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "198.51.100.0/24:53");
	service_format(&c.services[3], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "[2001:db8:d::/48]:53");
	service_parse(&a, "198.51.100.7:53");
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET, &a.addr, 53),
			    &c.services[0]);
	service_parse(&a, "198.51.100.129:53");
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET, &a.addr, 53),
			    &c.services[1]);
	service_parse(&a, "198.51.100.200:53");
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET, &a.addr, 53),
			    &c.services[2]);
	CU_ASSERT_PTR_NULL(config_find_service(&c, AF_INET, &a.addr, 54));
	service_parse(&a, "198.51.101.1:53");
	CU_ASSERT_PTR_NULL(config_find_service(&c, AF_INET, &a.addr, 53));
	service_parse(&b, "[2001:db8:d:ffff::35]:53");
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET6, &b.addr, 53),
			    &c.services[3]);
	service_parse(&b, "[2001:db8:e::35]:53");
	CU_ASSERT_PTR_NULL(config_find_service(&c, AF_INET6, &b.addr, 53));
	/* The same prefix twice; the shield (auto) steps aside. */
	CU_ASSERT_EQUAL(config_set(&c, "upstream", "198.51.100.0/24:53", "t",
				   collect, &e), -1);
	CU_ASSERT_EQUAL(e.n, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0], "given twice"));
	CU_ASSERT_EQUAL(c.shield, SHIELD_AUTO);
	CU_ASSERT_EQUAL(config_check(&c, NULL, NULL), 0);
	CU_ASSERT_EQUAL(c.shield, SHIELD_NO);
	CU_ASSERT(config_has_upstream(&c));

	/* Refused, each with why. */
	{
		static const struct { const char *v, *msg; } bad[] = {
			{ "198.51.100.1/24:53", "bits set past its length: "
			  "198.51.100.0/24" },
			{ "198.51.100.0/33:53", "expected PREFIX:PORT" },
			{ "2001:db8::/32:53", "expected PREFIX:PORT" },
			{ "[198.51.100.0/24]:53", "expected PREFIX:PORT" },
			{ "198.51.100.0/24", "expected PREFIX:PORT" },
			{ "198.51.100.0/24:0", "expected PREFIX:PORT" },
			{ "224.0.0.1:53", "multicast" },
			{ "198.51.100.0/24:53,bogus", "'bogus' is not dns" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memset(&e, 0, sizeof(e));
			config_defaults(&c);
			CU_ASSERT_EQUAL(config_set(&c, "upstream", bad[i].v,
						   "t", collect, &e), -1);
			CU_ASSERT_EQUAL(e.n, 1);
			CU_ASSERT_PTR_NOT_NULL(strstr(e.msg[0], bad[i].msg));
			CU_ASSERT_EQUAL(c.nservices, 0);
		}
	}
	/* Every server of a family is a prefix like another. */
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "upstream", "0.0.0.0/0:53", "t", NULL,
				   NULL), 0);
	service_parse(&a, "192.0.2.9:53");
	CU_ASSERT_PTR_EQUAL(config_find_service(&c, AF_INET, &a.addr, 53),
			    &c.services[0]);
	/* Generic, no delay-bind, the shield required: not (yet). */
	{
		static const char *const checks[][4] = {
			{ "upstream", "198.51.100.0/24:853", NULL, NULL },
			{ "upstream", "198.51.100.0/24:53,delay-bind=no",
			  NULL, NULL },
			{ "upstream", "198.51.100.0/24:53", "shield", "yes" },
		};

		for (size_t i = 0; i < 3; i++) {
			config_defaults(&c);
			CU_ASSERT_EQUAL(config_set(&c, checks[i][0],
						   checks[i][1], "t", NULL,
						   NULL), 0);
			if (checks[i][2])
				CU_ASSERT_EQUAL(config_set(&c, checks[i][2],
							   checks[i][3], "t",
							   NULL, NULL), 0);
			CU_ASSERT_EQUAL(config_check(&c, NULL, NULL), 1);
		}
	}
	/* In a file: a [service NAME]'s line, not [tcpctd]'s. */
	memset(&e, 0, sizeof(e));
	test_tmp_file(path, sizeof(path), text);
	config_defaults(&c);
	CU_ASSERT_EQUAL(config_load(&c, path, collect, &e), 2);
	CU_ASSERT_EQUAL_FATAL(e.n, 2);
	assert_err(&e, 0, path, 2, "upstream belongs in a [service NAME]");
	assert_err(&e, 1, path, 6, "bits set past its length");
	CU_ASSERT_EQUAL_FATAL(c.nservices, 2);
	CU_ASSERT(c.services[0].upstream && c.services[1].upstream);
	CU_ASSERT_STRING_EQUAL(c.services[1].name, "far");
	CU_ASSERT_EQUAL(config_check(&c, NULL, NULL), 0);
	CU_ASSERT_EQUAL(c.services[0].pol.max_queries, 7);
	unlink(path);
}

void
register_config_tests(void)
{
	static const struct test_case cases[] = {
		{ "service_parse accepts and refuses", test_service_parse },
		{ "config_find_service", test_find_service },
		{ "config_set errors name the option", test_config_set_errors },
		{ "config_set applies values", test_config_set_values },
		{ "config_load: an INI file, every bad line by file:line, "
		  "section settings", test_config_load },
		{ "config_load: include, a glob in order, sections gather, "
		  "loops", test_config_include },
		{ "config_write_policies: values, units, where they come from",
		  test_write_policies },
		{ "config_load: long lines, service names, duplicates, no file",
		  test_config_load_other_errors },
		{ "config_check: no service, impossible limits",
		  test_config_check },
		{ "policy: per service, global, per kind; bad specs",
		  test_policy },
		{ "every option named for the command line is known",
		  test_config_options },
		{ "allow and deny prefixes", test_prefixes },
		{ "config_load: an operator's mistakes, each refused with why",
		  test_config_mistakes },
		{ "config_load: no configuration, a byte-order mark, control "
		  "characters", test_config_not_config },
		{ "issue 35: upstream services, by prefix; in a file; refused "
		  "with why", test_upstream },
	};

	TEST_SUITE("config", cases);
}
