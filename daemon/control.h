/*
 * The control socket (tcpctl(8)): a UNIX stream socket, one request line
 * per connection ("stats json"), one answer, then the close.  Simple
 * enough for socat as for tcpctl.  The daemon's main thread serves it from
 * its poll loop, beside the signals, the probes and the watchdog: a client
 * is a non-blocking connection in one of CONTROL_CLIENTS slots, with
 * CONTROL_DEADLINE_MS for its whole request line, as long again for its
 * answer to be made (tcpctl flows waits for the workers) and as long again
 * to take it.  A slow or stuck client, or an answer slow to come, costs
 * its own slot only, never the loop's time; a client past its deadline is
 * closed, one beyond the slots refused, and both counted.
 */
#ifndef GATEWAY_CONTROL_H
#define GATEWAY_CONTROL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONTROL_LINE_MAX	256
#define CONTROL_CLIENTS		16	/* served at once */
#define CONTROL_DEADLINE_MS	1000	/* for a request line; then its answer */
#define CONTROL_RETRY_MS	10	/* an answer not ready is asked again */
#define CONTROL_POLLFDS		(1 + CONTROL_CLIENTS)	/* control_pollfds */

/* One client: reading its line, then (waiting) until its answer is
 * made, then (answer set) writing it. */
struct control_client {
	int fd;			/* -1: a free slot */
	uint64_t deadline_ms;
	size_t n;		/* bytes of line read */
	char line[CONTROL_LINE_MAX];
	bool waiting;		/* its line read, its answer not ready */
	uint64_t ticket;	/* the handler's, while waiting */
	char *answer;		/* once answered; sent of len written */
	size_t len, sent;
};

/* Why a client was closed unanswered (tcpctd_control_dropped_total). */
enum control_drop {
	CONTROL_DROP_DEADLINE,	/* its line or its answer too slow */
	CONTROL_DROP_FULL,	/* every slot taken */
	CONTROL_DROP_MAX
};

struct control {
	int fd;			/* the listener, or -1 */
	struct control_client client[CONTROL_CLIENTS];
	uint64_t dropped[CONTROL_DROP_MAX];
};

const char *control_drop_name(enum control_drop d);

/* Binds and listens on path, mode 0660; a socket file left by a daemon
 * that is gone is replaced, one that answers is not.  Returns the fd or
 * -1 with a message in err. */
int control_open(const char *path, char *err, size_t errlen);
/* ctl with fd as its listener (-1: none) and every slot free. */
void control_init(struct control *ctl, int fd);
/* Closes the listener, removes path, and closes every client. */
void control_close(struct control *ctl, const char *path);

/*
 * The answer to one request at now (mono ms), written to out; the answer
 * to a request that failed starts with "error: ".  A handler whose answer
 * is not ready (tcpctl flows, until the workers have copied their flows)
 * writes nothing and returns false, never waiting: it is asked again every
 * CONTROL_RETRY_MS with the same req and *ticket as it left it (0 the
 * first time), until it answers or the client's deadline passes.
 */
typedef bool control_handler(const char *req, FILE *out, uint64_t now,
			     uint64_t *ticket, void *arg);

/* Takes c, a connected client, into a free slot, its deadline from now
 * (mono ms); without one c is closed and counted.  Returns 0 or -1. */
int control_add(struct control *ctl, int c, uint64_t now);

/* Fills CONTROL_POLLFDS entries of pfd, the listener's then a slot's each
 * (fd -1 when free: poll skips it), and lowers *wait_ms to the nearest
 * deadline, or to CONTROL_RETRY_MS while an answer is not ready. */
void control_pollfds(const struct control *ctl, struct pollfd *pfd,
		     uint64_t now, int *wait_ms);

/* After the poll, with its pfd: reads what came, answers each line ended
 * through cb (and asks cb again for those not ready), writes what answers
 * the clients take, accepts new ones, and closes those done or past their
 * deadline.  A call costs each client a read or a write, never a wait. */
void control_serve(struct control *ctl, const struct pollfd *pfd,
		   uint64_t now, control_handler *cb, void *arg);

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
