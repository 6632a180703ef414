/*
 * The control socket's protocol (tcpctl(8)): whatever a local client
 * writes, over a real socket pair and in two pieces, a turn of the loop
 * between them, is read within CONTROL_LINE_MAX and answered with one
 * line: a parsed request or an "error: " line.
 */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../daemon/control.h"
#include "fuzz.h"

static bool
handler(const char *req, FILE *out, uint64_t now, uint64_t *ticket, void *arg)
{
	struct control_req r;
	char err[CONTROL_LINE_MAX + 64];

	(void)now;
	(void)ticket;
	(void)arg;
	FUZZ_ASSERT(strlen(req) < CONTROL_LINE_MAX);
	if (control_parse(req, &r, err, sizeof(err)) < 0) {
		FUZZ_ASSERT(!strncmp(err, "error: ", 7));
		fputs(err, out);
	} else {
		FUZZ_ASSERT(r.cmd <= CONTROL_ENABLE);
		/* drain and enable name one word. */
		FUZZ_ASSERT((r.cmd != CONTROL_DRAIN && r.cmd != CONTROL_ENABLE) ||
			    (r.target[0] && !strpbrk(r.target, " \t\n")));
		fprintf(out, "ok %d %d\n", (int)r.cmd, r.json);
	}
	return true;
}

/* A turn of the daemon's loop: what came is read, or the answer written. */
static void
turn(struct control *ctl)
{
	struct pollfd pfd[CONTROL_POLLFDS];
	int wait = 1000;

	control_pollfds(ctl, pfd, 0, &wait);
	FUZZ_ASSERT(poll(pfd, CONTROL_POLLFDS, wait) > 0);
	control_serve(ctl, pfd, 0, handler, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct control ctl;
	char answer[1024];
	size_t got = 0, half = size / 2;
	ssize_t n;
	int sv[2], turns;

	if (size > 4096)	/* one socket buffer: the write does not block */
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	control_init(&ctl, -1);
	FUZZ_ASSERT(control_add(&ctl, sv[1], 0) == 0);
	if (half && write(sv[0], data, half) != (ssize_t)half)
		abort();
	if (half)
		turn(&ctl);
	if (ctl.client[0].fd >= 0 && size > half &&
	    write(sv[0], data + half, size - half) != (ssize_t)(size - half))
		abort();
	shutdown(sv[0], SHUT_WR);
	/* The rest, the peer's end of writing, the answer: a turn each. */
	for (turns = 0; ctl.client[0].fd >= 0; turns++) {
		FUZZ_ASSERT(turns < 3);
		turn(&ctl);
	}
	while (got < sizeof(answer) &&
	       (n = read(sv[0], answer + got, sizeof(answer) - got)) > 0)
		got += (size_t)n;
	close(sv[0]);
	FUZZ_ASSERT(got > 0 && got < sizeof(answer) && answer[got - 1] == '\n');
	FUZZ_ASSERT(!memcmp(answer, "ok ", 3) || !memcmp(answer, "error: ", 7));
	return 0;
}
