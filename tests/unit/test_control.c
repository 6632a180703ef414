/*
 * gateway/control.c: the request line (control_parse), and a request
 * answered over a real socket pair (control_answer).
 */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../gateway/control.h"
#include "suites.h"
#include "testutil.h"

static void
test_control_parse(void)
{
	static const struct {
		const char *line;
		enum control_cmd cmd;
		bool json;
	} good[] = {
		{ "status", CONTROL_STATUS, false },
		{ "status json", CONTROL_STATUS, true },
		{ "  stats   json ", CONTROL_STATS, true },
		{ "metrics", CONTROL_METRICS, false },
		{ "flows json", CONTROL_FLOWS, true },
		{ "backends", CONTROL_BACKENDS, false },
		{ "reload", CONTROL_RELOAD, false },
		{ "keys rotate", CONTROL_KEYS_ROTATE, false },
		{ "metrics json", CONTROL_METRICS, true },
		{ "drain dns", CONTROL_DRAIN, false },
		{ "enable [2001:db8::2]:53", CONTROL_ENABLE, false },
	};
	static const struct {
		const char *line, *needle;
	} bad[] = {
		{ "", "error: an empty request\n" },
		{ "   ", "error: an empty request\n" },
		{ "flush", "error: unknown command 'flush'\n" },
		{ "reload json", "(in JSON)" },
		{ "stats yaml", "error: stats: unknown argument 'yaml'\n" },
		{ "keys", "error: keys: expected 'keys rotate'\n" },
		{ "keys json", "expected 'keys rotate'" },
		{ "stats json now", "error: stats: too many arguments\n" },
		{ "drain", "error: drain: expected 'drain SERVICE' or 'drain "
			   "ADDR:PORT'\n" },
		{ "enable a b", "error: enable: too many arguments\n" },
	};
	struct control_req r;
	char err[CONTROL_LINE_MAX + 64];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&r, 0xff, sizeof(r));
		CU_ASSERT_EQUAL(control_parse(good[i].line, &r, err,
					      sizeof(err)), 0);
		CU_ASSERT_EQUAL(r.cmd, good[i].cmd);
		CU_ASSERT_EQUAL(r.json, good[i].json);
	}
	/* drain and enable name what they act on. */
	CU_ASSERT_EQUAL(control_parse("enable [2001:db8::2]:53", &r, err,
				      sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(r.target, "[2001:db8::2]:53");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(control_parse(bad[i].line, &r, err,
					      sizeof(err)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].needle));
	}
}

static void
echo_parse(const char *req, FILE *out, void *arg)
{
	struct control_req r;
	char err[CONTROL_LINE_MAX + 64];

	(void)arg;
	if (control_parse(req, &r, err, sizeof(err)) < 0)
		fputs(err, out);
	else
		fprintf(out, "cmd %d json %d\n", (int)r.cmd, r.json);
}

/* Sends req, returns the answer in buf. */
static void
ask(const char *req, size_t len, char *buf, size_t cap)
{
	int sv[2];
	ssize_t n;
	size_t got = 0;

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(write(sv[0], req, len), (ssize_t)len);
	shutdown(sv[0], SHUT_WR);
	control_answer(sv[1], echo_parse, NULL);
	while (got < cap - 1 && (n = read(sv[0], buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(sv[0]);
}

static void
test_control_answer(void)
{
	char buf[1024], big[600];

	ask("stats json\n", 11, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "cmd 1 json 1\n");
	/* Without a newline: the peer's end of writing ends the line. */
	ask("keys rotate", 11, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "cmd 6 json 0\n");
	ask("status\r\nflows\n", 14, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "cmd 0 json 0\n");
	/* A line longer than CONTROL_LINE_MAX is cut, never overrun. */
	memset(big, 'x', sizeof(big));
	ask(big, sizeof(big), buf, sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "error: unknown command 'xxx"));
	CU_ASSERT(strlen(buf) < CONTROL_LINE_MAX + 64);
	/* A NUL ends the request. */
	ask("status\0json\n", 12, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "cmd 0 json 0\n");
}

void
register_control_tests(void)
{
	static const struct test_case cases[] = {
		{ "request lines: commands, JSON forms, every error",
		  test_control_parse },
		{ "answered over a socket pair: line ends, overlong lines",
		  test_control_answer },
	};

	TEST_SUITE("control", cases);
}
