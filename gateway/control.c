#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define CONTROL_TIMEOUT_S	1

static int
fill_addr(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun->sun_path, path, strlen(path));
	return 0;
}

/* Whether a daemon answers on path. */
static int
in_use(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), live;

	if (fd < 0)
		return 0;
	live = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0;
	close(fd);
	return live;
}

int
control_open(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, rc;

	if (fill_addr(&sun, path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (in_use(&sun)) {
		snprintf(err, errlen, "%s: another tcpctd answers there", path);
		return -1;
	}
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0117);	/* the owner and its group: rw */
	rc = bind(fd, (const struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0 || listen(fd, 16) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void
control_close(int fd, const char *path)
{
	if (fd < 0)
		return;
	close(fd);
	unlink(path);
}

/* Reads the request line: up to its newline, the peer's end of writing
 * or CONTROL_LINE_MAX − 1 bytes.  Returns its length or -1. */
static int
read_line(int c, char *line)
{
	size_t n = 0;

	while (n < CONTROL_LINE_MAX - 1) {
		ssize_t r = read(c, line + n, CONTROL_LINE_MAX - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
		if (memchr(line, '\n', n))
			break;
	}
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	return (int)n;
}

static void
write_all(int c, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(c, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		b += w;
		n -= (size_t)w;
	}
}

void
control_serve(int fd, control_handler *cb, void *arg)
{
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (c >= 0)
		control_answer(c, cb, arg);
}

void
control_answer(int c, control_handler *cb, void *arg)
{
	struct timeval tv = { .tv_sec = CONTROL_TIMEOUT_S };
	char line[CONTROL_LINE_MAX];
	char *answer = NULL;
	size_t len = 0;
	FILE *out;

	if (setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    read_line(c, line) < 0) {
		close(c);
		return;
	}
	out = open_memstream(&answer, &len);
	if (out) {
		cb(line, out, arg);
		if (fclose(out) == 0)
			write_all(c, answer, len);
		free(answer);
	}
	close(c);
}

int
control_parse(const char *line, struct control_req *r, char *err,
	      size_t errlen)
{
	static const struct {
		const char *name;
		enum control_cmd cmd;
		bool json;		/* has a JSON form */
	} cmds[] = {
		{ "status", CONTROL_STATUS, true },
		{ "stats", CONTROL_STATS, true },
		{ "metrics", CONTROL_METRICS, true },
		{ "flows", CONTROL_FLOWS, true },
		{ "backends", CONTROL_BACKENDS, true },
		{ "reload", CONTROL_RELOAD, false },
	};
	char cmd[CONTROL_LINE_MAX], how[CONTROL_LINE_MAX] = "", extra[2];
	int n = sscanf(line, "%255s %255s %1s", cmd, how, extra);
	size_t i;

	if (n < 1) {
		snprintf(err, errlen, "error: an empty request\n");
		return -1;
	}
	if (n == 3) {
		snprintf(err, errlen, "error: %s: too many arguments\n", cmd);
		return -1;
	}
	if (!strcmp(cmd, "keys")) {
		if (strcmp(how, "rotate") != 0) {
			snprintf(err, errlen, "error: keys: expected 'keys "
				 "rotate'\n");
			return -1;
		}
		r->cmd = CONTROL_KEYS_ROTATE;
		r->json = false;
		return 0;
	}
	if (!strcmp(cmd, "drain") || !strcmp(cmd, "enable")) {
		if (n != 2) {
			snprintf(err, errlen, "error: %s: expected '%s "
				 "SERVICE' or '%s ADDR:PORT'\n", cmd, cmd, cmd);
			return -1;
		}
		r->cmd = cmd[0] == 'd' ? CONTROL_DRAIN : CONTROL_ENABLE;
		r->json = false;
		snprintf(r->target, sizeof(r->target), "%s", how);
		return 0;
	}
	r->json = n == 2 && !strcmp(how, "json");
	if (n == 2 && !r->json) {
		snprintf(err, errlen, "error: %s: unknown argument '%s'\n", cmd,
			 how);
		return -1;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(cmd, cmds[i].name) != 0)
			continue;
		if (r->json && !cmds[i].json)
			break;
		r->cmd = cmds[i].cmd;
		return 0;
	}
	snprintf(err, errlen, "error: unknown command '%s'%s\n", line,
		 r->json ? " (in JSON)" : "");
	return -1;
}
