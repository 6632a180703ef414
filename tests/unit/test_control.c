/*
 * daemon/control.c: the request line (control_parse), and the clients
 * the daemon's loop serves over real sockets (control_pollfds,
 * control_serve): their deadline, their slots, answers not taken, and
 * tcpctl flows (daemon/status.c), which waits for the workers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "../../daemon/control.h"
#include "../../daemon/status.h"
#include "../../gateway/dispatch.h"
#include "suites.h"
#include "testgw.h"
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

static bool
echo_parse(const char *req, FILE *out, uint64_t now, uint64_t *ticket,
	   void *arg)
{
	struct control_req r;
	char err[CONTROL_LINE_MAX + 64];

	(void)now;
	(void)ticket;
	(void)arg;
	if (control_parse(req, &r, err, sizeof(err)) < 0)
		fputs(err, out);
	else
		fprintf(out, "cmd %d json %d\n", (int)r.cmd, r.json);
	return true;
}

static struct control ctl;

/* A turn of the daemon's loop at now (mono ms): the poll, without a wait,
 * then the clients served through cb with arg. */
static void
turn_with(uint64_t now, control_handler *cb, void *arg)
{
	struct pollfd pfd[CONTROL_POLLFDS];
	int wait = 1000;

	control_pollfds(&ctl, pfd, now, &wait);
	CU_ASSERT(poll(pfd, CONTROL_POLLFDS, 0) >= 0);
	control_serve(&ctl, pfd, now, cb, arg);
}

static void
turn(uint64_t now, control_handler *cb)
{
	turn_with(now, cb, NULL);
}

/* A client in a slot of ctl since now; returns its end, which never
 * blocks (the daemon's end is left as accept gives it). */
static int
client(uint64_t now)
{
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	CU_ASSERT_EQUAL(control_add(&ctl, sv[1], now), 0);
	return sv[0];
}

/* What came to a client's end so far, in buf; 1 once the daemon closed
 * it (with what the client wrote unread: ECONNRESET), 0 while it is
 * open. */
static int
took(int fd, char *buf, size_t cap)
{
	size_t got = strlen(buf);
	ssize_t n = -1;

	while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	return got < cap - 1 && (n == 0 || (n < 0 && errno == ECONNRESET));
}

/* Clients in use. */
static unsigned
busy(void)
{
	unsigned i, n = 0;

	for (i = 0; i < CONTROL_CLIENTS; i++)
		n += ctl.client[i].fd >= 0;
	return n;
}

/* Sends req, returns the answer in buf. */
static void
ask(const char *req, size_t len, char *buf, size_t cap)
{
	int fd, turns;

	control_init(&ctl, -1);
	fd = client(0);
	CU_ASSERT_EQUAL_FATAL(write(fd, req, len), (ssize_t)len);
	shutdown(fd, SHUT_WR);
	for (turns = 0; busy() && turns < 3; turns++)
		turn(0, echo_parse);
	CU_ASSERT_EQUAL(busy(), 0);
	buf[0] = '\0';
	CU_ASSERT(took(fd, buf, cap));
	close(fd);
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
	ask("", 0, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "error: an empty request\n");
}

/*
 * A client that trickles its line, a byte at a time, has one deadline for
 * all of it, and costs the others nothing: they are answered in the turn
 * their line comes, while it waits in its slot.
 */
static void
test_control_trickle(void)
{
	char slow_buf[64] = "", late_buf[64] = "", fast_buf[64] = "";
	int slow, late, fast;
	uint64_t t;

	control_init(&ctl, -1);
	slow = client(0);
	late = client(0);
	CU_ASSERT_EQUAL(write(slow, "status", 6), 6);
	CU_ASSERT_EQUAL(write(late, "sta", 3), 3);
	for (t = 0; t < CONTROL_DEADLINE_MS; t += 100) {
		CU_ASSERT_EQUAL(write(slow, " ", 1), 1);
		turn(t, echo_parse);
		if (t == 500) {
			fast = client(t);
			CU_ASSERT_EQUAL(write(fast, "stats json\n", 11), 11);
			turn(t, echo_parse);
			CU_ASSERT(took(fast, fast_buf, sizeof(fast_buf)));
			CU_ASSERT_STRING_EQUAL(fast_buf, "cmd 1 json 1\n");
			close(fast);
		}
		if (t == 900) {
			/* Slow, but its line ends in time. */
			CU_ASSERT_EQUAL(write(late, "tus\n", 4), 4);
			turn(t, echo_parse);
			CU_ASSERT(took(late, late_buf, sizeof(late_buf)));
			CU_ASSERT_STRING_EQUAL(late_buf, "cmd 0 json 0\n");
			close(late);
		}
	}
	/* Its bytes kept coming, and it waits still: no answer yet. */
	turn(CONTROL_DEADLINE_MS - 1, echo_parse);
	CU_ASSERT_FALSE(took(slow, slow_buf, sizeof(slow_buf)));
	CU_ASSERT_EQUAL(busy(), 1);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_DEADLINE], 0);
	/* At its deadline it is closed unanswered, and counted. */
	turn(CONTROL_DEADLINE_MS, echo_parse);
	CU_ASSERT(took(slow, slow_buf, sizeof(slow_buf)));
	CU_ASSERT_STRING_EQUAL(slow_buf, "");
	CU_ASSERT_EQUAL(busy(), 0);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_DEADLINE], 1);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_FULL], 0);
	close(slow);
}

/* An answer of 4 MiB: more than a socket's buffer takes at once. */
static bool
big_answer(const char *req, FILE *out, uint64_t now, uint64_t *ticket,
	   void *arg)
{
	static char chunk[4096];
	unsigned i;

	(void)req;
	(void)now;
	(void)ticket;
	(void)arg;
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 1024; i++)
		fwrite(chunk, 1, sizeof(chunk), out);
	return true;
}

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A client that does not take its answer does not block the loop: the
 * answer waits in its slot, until its own deadline. */
static void
test_control_unread(void)
{
	char buf[64] = "", *part = malloc(1 << 20);
	int stuck, fast;
	uint64_t t0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(part);
	control_init(&ctl, -1);
	stuck = client(0);
	CU_ASSERT_EQUAL(write(stuck, "flows\n", 6), 6);
	turn(300, big_answer);
	/* The turns that find its socket full return at once. */
	t0 = wall_ms();
	turn(400, big_answer);
	turn(450, big_answer);
	CU_ASSERT(wall_ms() - t0 < 100);
	CU_ASSERT_EQUAL(busy(), 1);
	CU_ASSERT_PTR_NOT_NULL(ctl.client[0].answer);
	CU_ASSERT(ctl.client[0].sent < ctl.client[0].len);
	fast = client(500);
	CU_ASSERT_EQUAL(write(fast, "status\n", 7), 7);
	turn(500, echo_parse);
	CU_ASSERT(took(fast, buf, sizeof(buf)));
	CU_ASSERT_STRING_EQUAL(buf, "cmd 0 json 0\n");
	close(fast);
	/* The answer's deadline runs from when it was made. */
	turn(300 + CONTROL_DEADLINE_MS - 1, echo_parse);
	CU_ASSERT_EQUAL(busy(), 1);
	turn(300 + CONTROL_DEADLINE_MS, echo_parse);
	CU_ASSERT_EQUAL(busy(), 0);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_DEADLINE], 1);
	part[0] = '\0';
	CU_ASSERT(took(stuck, part, 1 << 20));
	CU_ASSERT(strlen(part) > 0 && strlen(part) < 4 << 20);
	close(stuck);
	free(part);
}

/* The listener: its clients accepted into the slots, one beyond them
 * refused at once and counted, and the socket file gone with it. */
static void
test_control_full(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd[CONTROL_CLIENTS + 1], lfd;
	char err[256], buf[64];
	unsigned i;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/tcpctd-unit-%d.sock",
		 (int)getpid());
	lfd = control_open(sun.sun_path, err, sizeof(err));
	CU_ASSERT_FATAL(lfd >= 0);
	control_init(&ctl, lfd);
	for (i = 0; i <= CONTROL_CLIENTS; i++) {
		fd[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		CU_ASSERT_EQUAL(connect(fd[i], (struct sockaddr *)&sun,
					sizeof(sun)), 0);
		if (i == CONTROL_CLIENTS - 1)
			turn(0, echo_parse);
	}
	CU_ASSERT_EQUAL(busy(), CONTROL_CLIENTS);
	turn(10, echo_parse);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_FULL], 1);
	buf[0] = '\0';
	CU_ASSERT(took(fd[CONTROL_CLIENTS], buf, sizeof(buf)));
	CU_ASSERT_STRING_EQUAL(buf, "");
	for (i = 0; i < CONTROL_CLIENTS; i++)
		CU_ASSERT_EQUAL(write(fd[i], "status\n", 7), 7);
	turn(20, echo_parse);
	for (i = 0; i < CONTROL_CLIENTS; i++) {
		buf[0] = '\0';
		CU_ASSERT(took(fd[i], buf, sizeof(buf)));
		CU_ASSERT_STRING_EQUAL(buf, "cmd 0 json 0\n");
	}
	CU_ASSERT_EQUAL(busy(), 0);
	control_close(&ctl, sun.sun_path);
	CU_ASSERT_NOT_EQUAL(access(sun.sun_path, F_OK), 0);
	for (i = 0; i <= CONTROL_CLIENTS; i++)
		close(fd[i]);
}

/*
 * tcpctl flows, the daemon's own answer (status_flows) over the clients'
 * sockets: the worker of a test bench gateway (testgw.h) holds the flows
 * and copies them when the test says, as its thread does between two of
 * its batches (worker_dump_flows).
 */
static const char *const flows_opts[] = {
	"protect", "192.0.2.2:53", "queues", "1", NULL,
};

static struct daemon flows_daemon;

/* The gateway with n connections, and the daemon over its worker. */
static struct tgw *
flows_gateway(unsigned n)
{
	struct tgw *g = tgw_new(flows_opts);
	struct tgw_conn c;
	unsigned i;

	for (i = 0; i < n; i++)
		tgw_handshake(g, &c, (uint16_t)(40000 + i), 0x1000u * (i + 1));
	memset(&flows_daemon, 0, sizeof(flows_daemon));
	flows_daemon.cfg = &g->cfg;
	flows_daemon.workers = &g->w;
	control_init(&ctl, -1);
	return g;
}

static void
flows_done(struct tgw *g)
{
	status_flows_free(&flows_daemon);
	tgw_free(g);
}

/* The daemon's handler (control_request) for the flows it is asked. */
static bool
flows_request(const char *req, FILE *out, uint64_t now, uint64_t *ticket,
	      void *arg)
{
	struct control_req r;
	char err[CONTROL_LINE_MAX + 64];

	CU_ASSERT_EQUAL_FATAL(control_parse(req, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.cmd, CONTROL_FLOWS);
	return status_flows(arg, out, r.json, now, ticket);
}

/* A turn at now (mono ms) for flows; returns how long it took, in wall
 * ms. */
static uint64_t
flows_turn(uint64_t now)
{
	uint64_t t0 = wall_ms();

	turn_with(now, flows_request, &flows_daemon);
	return wall_ms() - t0;
}

/* A client that asks req; its answer comes to buf (emptied). */
static int
flows_client(uint64_t now, const char *req, char *buf)
{
	int fd = client(now);

	CU_ASSERT_EQUAL(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	shutdown(fd, SHUT_WR);	/* as tcpctl does */
	buf[0] = '\0';
	return fd;
}

/* The answer for n flows, text or JSON: the summary, and a line each. */
static void
flows_check(const char *ans, bool json, unsigned n)
{
	char tail[96];
	const char *p;
	unsigned lines = 0;

	if (json)
		snprintf(tail, sizeof(tail), "\n], \"shown\": %u, \"total\": "
			 "%u}\n", n, n);
	else
		snprintf(tail, sizeof(tail), "%u of %u flows shown (at most %u a "
			 "worker)\n", n, n, (unsigned)FLOW_DUMP_MAX);
	CU_ASSERT(strlen(ans) > strlen(tail) &&
		  !strcmp(ans + strlen(ans) - strlen(tail), tail));
	CU_ASSERT(!json || !strncmp(ans, "{\"flows\": [", 11));
	for (p = ans; (p = strstr(p, json ? "\"backend\": \"192.0.2.2:53\""
					  : " > 192.0.2.2:53  ")); p++)
		lines++;
	CU_ASSERT_EQUAL(lines, n);
}

/*
 * Sixteen tcpctl flows at once, the worker slow to copy its flows: every
 * turn of the loop returns at once meanwhile (it waited up to a second a
 * request for each worker, 16 s in one turn, with neither the shield's
 * heartbeat nor the watchdog's ping), and every request is answered once
 * the worker has copied them, each as it always was.
 */
static void
test_control_flows_slow(void)
{
	struct tgw *g = flows_gateway(3);
	char buf[CONTROL_CLIENTS][2048];
	int fd[CONTROL_CLIENTS];
	uint64_t t, slowest = 0;
	unsigned i, answered;

	for (i = 0; i < CONTROL_CLIENTS; i++)
		fd[i] = flows_client(0, i % 2 ? "flows json\n" : "flows\n",
				     buf[i]);
	/* The worker busy with its batches for 300 ms. */
	for (t = 0; t <= 300; t += CONTROL_RETRY_MS) {
		uint64_t took_ms = flows_turn(t);

		if (took_ms > slowest)
			slowest = took_ms;
	}
	CU_ASSERT(slowest < 100);
	CU_ASSERT_EQUAL(busy(), CONTROL_CLIENTS);
	for (i = 0; i < CONTROL_CLIENTS; i++) {
		CU_ASSERT_FALSE(took(fd[i], buf[i], sizeof(buf[i])));
		CU_ASSERT_STRING_EQUAL(buf[i], "");
	}
	/* It copies them: the first request's round is told.  The others
	 * came once it was asked, and wait for the next. */
	worker_dump_flows(&g->w);
	CU_ASSERT(flows_turn(t += CONTROL_RETRY_MS) < 100);
	CU_ASSERT(took(fd[0], buf[0], sizeof(buf[0])));
	flows_check(buf[0], false, 3);
	CU_ASSERT_EQUAL(busy(), CONTROL_CLIENTS - 1);
	worker_dump_flows(&g->w);
	CU_ASSERT(flows_turn(t += CONTROL_RETRY_MS) < 100);
	for (i = answered = 0; i < CONTROL_CLIENTS; i++) {
		answered += took(fd[i], buf[i], sizeof(buf[i]));
		flows_check(buf[i], i % 2, 3);
		close(fd[i]);
	}
	CU_ASSERT_EQUAL(answered, CONTROL_CLIENTS);
	CU_ASSERT_EQUAL(busy(), 0);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_DEADLINE], 0);
	flows_done(g);
}

/* A worker that does not copy its flows: the request is told so, within
 * its deadline, as is one that waited for that round first; a client that
 * hangs up waiting is let go at once.  The worker's late answer to a
 * round given up does not pass for the next one's. */
static void
test_control_flows_silent(void)
{
	struct tgw *g = flows_gateway(2);
	char first[128], second[128], gone[128], late[2048];
	int f1, f2, f3, f4;
	uint64_t t;

	f1 = flows_client(0, "flows\n", first);
	f2 = flows_client(0, "flows json\n", second);
	f3 = flows_client(0, "flows\n", gone);
	flows_turn(0);
	close(f3);
	flows_turn(CONTROL_RETRY_MS);
	CU_ASSERT_EQUAL(busy(), 2);
	for (t = 2 * CONTROL_RETRY_MS; t < STATUS_FLOWS_WAIT_MS;
	     t += CONTROL_RETRY_MS)
		CU_ASSERT(flows_turn(t) < 100);
	CU_ASSERT_FALSE(took(f1, first, sizeof(first)));
	CU_ASSERT(flows_turn(STATUS_FLOWS_WAIT_MS) < 100);
	CU_ASSERT(took(f1, first, sizeof(first)));
	CU_ASSERT_STRING_EQUAL(first, "error: a worker did not answer in "
			       "time\n");
	/* The second waited for a round of its own. */
	CU_ASSERT_FALSE(took(f2, second, sizeof(second)));
	flows_turn(2 * STATUS_FLOWS_WAIT_MS - 1);
	CU_ASSERT_FALSE(took(f2, second, sizeof(second)));
	flows_turn(2 * STATUS_FLOWS_WAIT_MS);
	CU_ASSERT(took(f2, second, sizeof(second)));
	CU_ASSERT_STRING_EQUAL(second, "error: a worker did not answer in "
			       "time\n");
	CU_ASSERT(2 * STATUS_FLOWS_WAIT_MS < CONTROL_DEADLINE_MS);
	CU_ASSERT_EQUAL(ctl.dropped[CONTROL_DROP_DEADLINE], 0);
	/* The worker copies them at last, for the round given up; a new
	 * request's round is not that one. */
	worker_dump_flows(&g->w);
	t = 2 * STATUS_FLOWS_WAIT_MS + CONTROL_RETRY_MS;
	f4 = flows_client(t, "flows\n", late);
	flows_turn(t);
	flows_turn(t += CONTROL_RETRY_MS);
	CU_ASSERT_FALSE(took(f4, late, sizeof(late)));
	worker_dump_flows(&g->w);
	flows_turn(t + CONTROL_RETRY_MS);
	CU_ASSERT(took(f4, late, sizeof(late)));
	flows_check(late, false, 2);
	CU_ASSERT_EQUAL(busy(), 0);
	close(f1);
	close(f2);
	close(f4);
	flows_done(g);
}

/* A request waits for a round asked after it came: a connection made
 * before it is shown, though the round in flight was copied before. */
static void
test_control_flows_fresh(void)
{
	struct tgw *g = flows_gateway(3);
	char a[2048], b[2048];
	struct tgw_conn c;
	int fa, fb;

	fa = flows_client(0, "flows\n", a);
	flows_turn(0);
	worker_dump_flows(&g->w);
	tgw_handshake(g, &c, 41000, 0x9000);
	fb = flows_client(5, "flows\n", b);
	flows_turn(10);
	CU_ASSERT(took(fa, a, sizeof(a)));
	flows_check(a, false, 3);
	CU_ASSERT_FALSE(took(fb, b, sizeof(b)));
	worker_dump_flows(&g->w);
	flows_turn(20);
	CU_ASSERT(took(fb, b, sizeof(b)));
	flows_check(b, false, 4);
	close(fa);
	close(fb);
	flows_done(g);
}

void
register_control_tests(void)
{
	static const struct test_case cases[] = {
		{ "request lines: commands, JSON forms, every error",
		  test_control_parse },
		{ "answered over a socket pair: line ends, overlong lines",
		  test_control_answer },
		{ "a trickled line: one deadline, the others answered meanwhile",
		  test_control_trickle },
		{ "an answer not taken: the loop goes on, until its deadline",
		  test_control_unread },
		{ "the listener: its clients in slots, one too many refused",
		  test_control_full },
		{ "16 flows at once, a worker slow: the turns short, all answered",
		  test_control_flows_slow },
		{ "flows, a worker silent: told in time, its late copy not taken",
		  test_control_flows_silent },
		{ "flows: a round asked after the request, what it shows",
		  test_control_flows_fresh },
	};

	TEST_SUITE("control", cases);
}
