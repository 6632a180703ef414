#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

const char *
control_drop_name(enum control_drop d)
{
	static const char *const names[CONTROL_DROP_MAX] = {
		[CONTROL_DROP_DEADLINE] = "deadline",
		[CONTROL_DROP_FULL] = "full",
	};

	return d < CONTROL_DROP_MAX ? names[d] : "?";
}

void
control_init(struct control *ctl, int fd)
{
	unsigned i;

	memset(ctl, 0, sizeof(*ctl));
	ctl->fd = fd;
	for (i = 0; i < CONTROL_CLIENTS; i++)
		ctl->client[i].fd = -1;
}

static void
client_close(struct control_client *c)
{
	close(c->fd);
	free(c->answer);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void
control_close(struct control *ctl, const char *path)
{
	unsigned i;

	for (i = 0; i < CONTROL_CLIENTS; i++)
		if (ctl->client[i].fd >= 0)
			client_close(&ctl->client[i]);
	if (ctl->fd < 0)
		return;
	close(ctl->fd);
	ctl->fd = -1;
	unlink(path);
}

int
control_add(struct control *ctl, int c, uint64_t now)
{
	unsigned i;

	for (i = 0; i < CONTROL_CLIENTS; i++) {
		if (ctl->client[i].fd >= 0)
			continue;
		ctl->client[i].fd = c;
		ctl->client[i].deadline_ms = now + CONTROL_DEADLINE_MS;
		return 0;
	}
	ctl->dropped[CONTROL_DROP_FULL]++;
	close(c);
	return -1;
}

void
control_pollfds(const struct control *ctl, struct pollfd *pfd, uint64_t now,
		int *wait_ms)
{
	unsigned i;

	pfd[0] = (struct pollfd){ .fd = ctl->fd, .events = POLLIN };
	for (i = 0; i < CONTROL_CLIENTS; i++) {
		const struct control_client *c = &ctl->client[i];

		/* A client waiting for its answer has nothing to read (what
		 * it sends after its line is left unread): only its hangup
		 * wakes the loop, and the retry's time. */
		pfd[1 + i] = (struct pollfd){ .fd = c->fd };
		if (c->answer)
			pfd[1 + i].events = POLLOUT;
		else if (!c->waiting)
			pfd[1 + i].events = POLLIN;
		if (c->fd < 0)
			continue;
		if (c->deadline_ms <= now)
			*wait_ms = 0;
		else if (c->deadline_ms - now < (uint64_t)*wait_ms)
			*wait_ms = (int)(c->deadline_ms - now);
		if (c->waiting && *wait_ms > CONTROL_RETRY_MS)
			*wait_ms = CONTROL_RETRY_MS;
	}
}

/* Each step below returns 1 when the client is done, 0 while it has more
 * to come or to take, -1 on an error.  None waits: the socket's calls are
 * MSG_DONTWAIT. */
static int
would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Writes what c takes of its answer. */
static int
client_write(struct control_client *c)
{
	ssize_t w = send(c->fd, c->answer + c->sent, c->len - c->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (w < 0)
		return would_block() ? 0 : -1;
	c->sent += (size_t)w;
	return c->sent == c->len;
}

/* Asks cb for c's answer; once made, it has a deadline of its own to be
 * taken in. */
static int
client_answer(struct control_client *c, uint64_t now, control_handler *cb,
	      void *arg)
{
	FILE *out = open_memstream(&c->answer, &c->len);
	bool made;

	if (!out)
		return -1;
	made = cb(c->line, out, now, &c->ticket, arg);
	if (fclose(out) != 0)
		return -1;
	if (!made) {
		free(c->answer);
		c->answer = NULL;
		c->len = 0;
		return 0;
	}
	c->waiting = false;
	c->deadline_ms = now + CONTROL_DEADLINE_MS;
	return client_write(c);
}

/* Reads what came of c's line; it ends at its newline, the peer's end of
 * writing or CONTROL_LINE_MAX − 1 bytes, and is then answered through cb,
 * within a deadline of its own. */
static int
client_read(struct control_client *c, uint64_t now, control_handler *cb,
	    void *arg)
{
	ssize_t r = recv(c->fd, c->line + c->n, CONTROL_LINE_MAX - 1 - c->n,
			 MSG_DONTWAIT);

	if (r < 0)
		return would_block() ? 0 : -1;
	c->n += (size_t)r;
	if (r > 0 && c->n < CONTROL_LINE_MAX - 1 && !memchr(c->line, '\n', c->n))
		return 0;
	c->line[c->n] = '\0';
	c->line[strcspn(c->line, "\r\n")] = '\0';
	c->waiting = true;
	c->ticket = 0;
	c->deadline_ms = now + CONTROL_DEADLINE_MS;
	return client_answer(c, now, cb, arg);
}

void
control_serve(struct control *ctl, const struct pollfd *pfd, uint64_t now,
	      control_handler *cb, void *arg)
{
	unsigned i;

	for (i = 0; i < CONTROL_CLIENTS; i++) {
		struct control_client *c = &ctl->client[i];
		int rc = 0;

		if (c->fd < 0)
			continue;
		if (c->waiting)	/* gone (its hangup), or asked again */
			rc = (pfd[1 + i].revents & (POLLHUP | POLLERR | POLLNVAL))
			     ? -1 : client_answer(c, now, cb, arg);
		else if (pfd[1 + i].revents)
			rc = c->answer ? client_write(c)
				       : client_read(c, now, cb, arg);
		if (rc == 0 && now >= c->deadline_ms) {
			ctl->dropped[CONTROL_DROP_DEADLINE]++;
			rc = -1;
		}
		if (rc)
			client_close(c);
	}
	/* The backlog's worth at most: a turn stays short. */
	for (i = 0; (pfd[0].revents & POLLIN) && i < CONTROL_CLIENTS; i++) {
		int c = accept4(ctl->fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			break;
		control_add(ctl, c, now);
	}
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
