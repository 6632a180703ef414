/*
 * The control socket (tcpctl(8)): a UNIX stream socket, one request line
 * per connection ("stats json"), one answer, then the close.  Simple
 * enough for socat as for tcpctl.  The daemon's main thread serves it
 * between signals; a client has a second to send its line and take its
 * answer, so a stuck one cannot hold the main thread for longer.
 */
#ifndef GATEWAY_CONTROL_H
#define GATEWAY_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONTROL_LINE_MAX	256

/* Binds and listens on path, mode 0660; a socket file left by a daemon
 * that is gone is replaced, one that answers is not.  Returns the fd or
 * -1 with a message in err. */
int control_open(const char *path, char *err, size_t errlen);
void control_close(int fd, const char *path);

/* The answer to one request, written to out; the answer to a request that
 * failed starts with "error: ". */
typedef void control_handler(const char *req, FILE *out, void *arg);

/* Accepts one client on fd and answers it through cb. */
void control_serve(int fd, control_handler *cb, void *arg);

/* Reads one request from c, a connected client, answers it through cb and
 * closes c. */
void control_answer(int c, control_handler *cb, void *arg);

/* The requests: a command and, for a script, "json" ("keys rotate";
 * "drain TARGET" and "enable TARGET", a service's name or a backend). */
enum control_cmd {
	CONTROL_STATUS,
	CONTROL_STATS,
	CONTROL_METRICS,
	CONTROL_FLOWS,
	CONTROL_BACKENDS,
	CONTROL_RELOAD,
	CONTROL_KEYS_ROTATE,
	CONTROL_DRAIN,
	CONTROL_ENABLE,
};

struct control_req {
	enum control_cmd cmd;
	bool json;
	char target[CONTROL_LINE_MAX];	/* drain, enable */
};

/* Parses a request line into r; returns 0, or -1 with the error line of
 * the answer ("error: ...\n") in err. */
int control_parse(const char *line, struct control_req *r, char *err,
		  size_t errlen);

#endif
