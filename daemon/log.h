/*
 * The daemon's messages: to standard error, which journald takes under
 * systemd and reads the level of from a "<N>" prefix (sd-daemon(3)).
 * Nothing is logged per packet, and a burst is cut short: LOG_BURST
 * messages, then one a second, the rest counted and said when one gets
 * through.
 */
#ifndef DAEMON_LOG_H
#define DAEMON_LOG_H

#include <syslog.h>

#define LOG_BURST	20

/* Whether standard error is the journal's stream (JOURNAL_STREAM). */
void log_setup(void);

/* One message at syslog level prio. */
void logx(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
