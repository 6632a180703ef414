#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool log_journal;	/* stderr is the journal's stream */

void
log_setup(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long dev, ino;
	struct stat sb;

	log_journal = js && sscanf(js, "%lu:%lu", &dev, &ino) == 2 &&
		      fstat(STDERR_FILENO, &sb) == 0 &&
		      (unsigned long)sb.st_dev == dev &&
		      (unsigned long)sb.st_ino == ino;
}

void
logx(int prio, const char *fmt, ...)
{
	static double tokens = LOG_BURST;
	static time_t last;
	static unsigned long suppressed;
	time_t now = time(NULL);
	va_list ap;

	tokens += (double)(now - last);
	if (tokens > LOG_BURST)
		tokens = LOG_BURST;
	last = now;
	if (tokens < 1 && prio > LOG_ERR) {
		suppressed++;
		return;
	}
	if (tokens >= 1)
		tokens--;
	if (suppressed) {
		fprintf(stderr, "%stcpctd: %lu messages suppressed\n",
			log_journal ? "<4>" : "", suppressed);
		suppressed = 0;
	}
	va_start(ap, fmt);
	if (log_journal)
		fprintf(stderr, "<%d>", prio);
	fprintf(stderr, "tcpctd: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
