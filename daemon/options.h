/*
 * The daemon's command line: its own options (-c, -t, -v, -h, -V) and
 * every setting of the configuration under the same name (config_option),
 * read into a configuration with the files it names, where they stand.
 * The same reading serves a reload, which reads the command line again.
 */
#ifndef DAEMON_OPTIONS_H
#define DAEMON_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "../policy/config.h"

#ifndef TCPCTD_VERSION			/* the Makefile's: debian/changelog's */
#define TCPCTD_VERSION "unknown"
#endif
#ifndef TCPCTD_COMMIT			/* the Makefile's: the git commit built */
#define TCPCTD_COMMIT "unknown"
#endif
#ifndef TCPCTD_CONFIG			/* the Makefile's, from SYSCONFDIR */
#define TCPCTD_CONFIG		"/etc/tcpctd/tcpctd.conf"
#endif

enum options_result {
	OPTIONS_RUN,		/* the configuration is read: run, or check */
	OPTIONS_HELP,		/* -h */
	OPTIONS_VERSION,	/* -V */
	OPTIONS_USAGE,		/* an option unknown or not spelt whole */
};

struct options {
	bool check_only;	/* -t */
	int errors;		/* in the settings and files, each reported */
};

/*
 * argv into c (set to its defaults by the caller), and into o what else
 * it asks.  Without -c or --protect, default_file is read first when it
 * exists (NULL: none), so that the options win over it.  Errors in the
 * settings go to errs (NULL: stderr) and are counted in o->errors.
 */
enum options_result options_parse(struct config *c, int argc, char **argv,
				  const char *default_file,
				  struct options *o, FILE *errs);

/* The options, for -h and a usage error. */
void options_usage(FILE *f);

/* A configuration error, to arg (a FILE: tcpctl's answer) or stderr: the
 * reporter of config_set, config_load and config_check. */
void options_config_error(const char *where, const char *msg, void *arg);

#endif
