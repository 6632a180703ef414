/*
 * tcpctd.conf(5): an INI file, read with inih (the libinih package).
 *
 *	[tcpctd]
 *	queues = 2
 *	secret-file = /etc/tcpctd/secret
 *
 *	[service dns]
 *	protect = 192.0.2.2:53
 *	protect = [2001:db8:b::2]:53
 *	backend-max = 64
 *
 * [tcpctd] (or keys before any section) takes every long option of the
 * command line under the same name; its limits are every service's
 * defaults.  [service NAME] takes protect lines (repeatable, each one
 * backend address and port, with the command line's ",dns" or
 * ",NAME=VALUE" suffixes), "kind = dns|generic" and limits for its own
 * backends.  A section heads once in a file: the same header further on
 * is a mistake more often than not (a block copied for a new service,
 * its name left), and it would add to the first one unseen.  "include =
 * PATTERN" reads other files there, as if their text stood in its place
 * (unbound's include): a glob, in order, such as the conf.d directory
 * Debian's nsd.conf and unbound.conf include.  Their lines before a
 * section header belong to the including line's section, and a section
 * they name again gathers: a drop-in may add a backend to a service.
 *
 * A file whose first line (comments and blank lines aside) is no section
 * header or NAME = VALUE is not a configuration (include = /etc/shadow):
 * it is not read further, and that line not quoted in the error.
 *
 * inih gives its handler no line number, so our reader hands it the lines
 * one at a time and counts them; it also judges the syntax itself, so that
 * every bad line is reported, not only the first (inih returns just that
 * one), and gives inih lines without leading blanks (an indented line would
 * otherwise continue the previous value).
 */
#include <errno.h>
#include <glob.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"

#define LINE_MAX_LEN	1024
#define SECTION_MAX_LEN	49	/* inih's MAX_SECTION, less its NUL */
#define INCLUDE_DEPTH	8	/* files within files */
#define FILES_MAX	256	/* files one load reads, each once */
#define HEADS_MAX	(POLICY_MAX_SERVICES + 8)	/* headers per file
						 * checked for a repeat */

/* A section header of the file being read, and where. */
struct heading {
	char name[SECTION_MAX_LEN + 1];
	unsigned line;
};

/* A [service NAME] section: its settings, for every backend it lists. */
struct section {
	char name[64];
	bool kind_set;
	enum service_kind kind;
	struct policy pol;
	uint32_t pol_set;
};

struct conffile {
	struct config *c;
	const char *path;
	FILE *f;
	unsigned line;
	char where[300];
	config_err_cb err;
	void *arg;
	int errors;
	bool skip;		/* under a section header refused */
	bool content;		/* the file has had a line not a comment */
	struct heading *heads;	/* the file's section headers so far */
	unsigned nheads;
	unsigned depth;		/* of includes */
	char outer[SECTION_MAX_LEN + 1];	/* the include line's section */
	struct { dev_t dev; ino_t ino; } read[FILES_MAX];	/* so far */
	unsigned nread;
	struct section sec[POLICY_MAX_SERVICES];
	unsigned nsec;
	int8_t of[POLICY_MAX_SERVICES];	/* each service's section, or -1 */
};

static void
where_now(struct conffile *cf)
{
	snprintf(cf->where, sizeof(cf->where), "%s:%u", cf->path, cf->line);
}

static char *
skip_blanks(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Whether s, a NAME = VALUE line, names a setting as tcpctd spells them
 * (letters, digits, - and _), the first line of a configuration. */
static bool
setting_named(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");

	return n > 0 && s[n + strspn(s + n, " \t")] == '=';
}

/* A section header at s, "[NAME]": an error when the file has had it
 * already (the file's first HEADS_MAX headers are remembered). */
static void
heading(struct conffile *cf, const char *s)
{
	size_t len = strlen(s) - 2;
	unsigned i;

	for (i = 0; i < cf->nheads; i++)
		if (strlen(cf->heads[i].name) == len &&
		    !strncmp(cf->heads[i].name, s + 1, len)) {
			config_report(cf->err, cf->arg, cf->where, "%s again: "
				      "line %u heads it already; a section "
				      "stands once in a file (another file "
				      "may add to it)", s, cf->heads[i].line);
			cf->errors++;
			return;
		}
	if (cf->nheads < HEADS_MAX) {
		memcpy(cf->heads[cf->nheads].name, s + 1, len);
		cf->heads[cf->nheads].name[len] = '\0';
		cf->heads[cf->nheads++].line = cf->line;
	}
}

/* What is wrong with a line, if anything, before inih sees it. */
enum line_fault {
	LINE_GOOD,
	LINE_LONG,		/* longer than our buffer */
	LINE_OVER,		/* longer than inih's */
	LINE_CONTROL,
	LINE_SYNTAX,
};

/*
 * inih's reader: the next line, its blanks in front and a trailing
 * " #comment" removed; a line that is not a comment, a section or
 * NAME = VALUE is reported and handed over empty.  A file whose first
 * such line is not text, or neither a section nor a setting, is not read
 * on (NULL, inih's end of file) and that line not quoted.
 */
static char *
next_line(char *out, int size, void *stream)
{
	struct conffile *cf = stream;
	char buf[LINE_MAX_LEN], *s, *end;
	enum line_fault fault = LINE_GOOD;
	size_t len;

	if (!fgets(buf, sizeof(buf), cf->f))
		return NULL;
	cf->line++;
	where_now(cf);
	/* The UTF-8 byte-order mark some editors begin a file with. */
	if (cf->line == 1 && !strncmp(buf, "\xef\xbb\xbf", 3))
		memmove(buf, buf + 3, strlen(buf + 3) + 1);
	len = strlen(buf);
	if (len && buf[len - 1] != '\n' && !feof(cf->f)) {
		int ch;

		while ((ch = fgetc(cf->f)) != EOF && ch != '\n')
			;
		fault = LINE_LONG;
		buf[0] = '\0';
	}
	s = skip_blanks(buf);
	for (end = s; *end; end++)
		if (*end == '#' && end > s && (end[-1] == ' ' ||
					       end[-1] == '\t'))
			break;
	*end = '\0';
	while (end > s && (end[-1] == '\n' || end[-1] == '\r' ||
			   end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	for (end = s; *end && !fault; end++)
		if (((unsigned char)*end < 0x20 && *end != '\t') ||
		    *end == 0x7f)
			fault = LINE_CONTROL;
	if (!fault && (int)strlen(s) + 2 > size)
		fault = LINE_OVER;
	if (!fault && *s && *s != '#' && *s != ';' &&
	    !(*s == '[' && s[strlen(s) - 1] == ']') && !strchr(s, '='))
		fault = LINE_SYNTAX;
	if (!cf->content && (fault || (*s && *s != '#' && *s != ';'))) {
		cf->content = true;
		if ((fault && fault != LINE_SYNTAX) ||
		    (*s != '[' && !setting_named(s))) {
			config_report(cf->err, cf->arg, cf->where, "not a "
				      "configuration file: its first line is "
				      "no [section] or NAME = VALUE, and the "
				      "rest is not read");
			cf->errors++;
			return NULL;
		}
	}
	switch (fault) {
	case LINE_GOOD:
		break;
	case LINE_LONG:
		config_report(cf->err, cf->arg, cf->where, "line too long "
			      "(more than %d bytes)", LINE_MAX_LEN - 2);
		break;
	case LINE_OVER:
		config_report(cf->err, cf->arg, cf->where, "line too long "
			      "(more than %d bytes)", size - 2);
		break;
	case LINE_CONTROL:
		config_report(cf->err, cf->arg, cf->where, "a control "
			      "character: the line is not text");
		break;
	case LINE_SYNTAX:
		config_report(cf->err, cf->arg, cf->where, "expected NAME = "
			      "VALUE or [section], got '%s'", s);
		break;
	}
	if (fault) {
		cf->errors++;
		*s = '\0';
	}
	if (*s == '[') {
		/* inih would cut a longer name short, silently. */
		cf->skip = strlen(s) - 2 > SECTION_MAX_LEN;
		if (cf->skip) {
			config_report(cf->err, cf->arg, cf->where, "a section "
				      "name of %d bytes at most, and what "
				      "follows it is not read",
				      SECTION_MAX_LEN);
			cf->errors++;
			*s = '\0';
		} else {
			heading(cf, s);
		}
	}
	snprintf(out, (size_t)size, "%s\n", s);
	return out;
}

static struct section *
section_of(struct conffile *cf, const char *name)
{
	struct section *s;
	unsigned i;

	for (i = 0; i < cf->nsec; i++)
		if (!strcmp(cf->sec[i].name, name))
			return &cf->sec[i];
	/* haproxy's rule for names: they appear in counter names and
	 * labels, where a blank, a slash or a quote would need escaping. */
	if (cf->nsec == POLICY_MAX_SERVICES || !*name ||
	    !strcmp(name, "all") ||	/* tcpctl drain all */
	    strlen(name) >= sizeof(s->name) ||
	    name[strspn(name, "abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")])
		return NULL;
	s = &cf->sec[cf->nsec++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

/* A setting of [service NAME]; 0 or -1 (reported). */
static int
service_setting(struct conffile *cf, struct section *sec, const char *name,
		const char *value)
{
	struct config *c = cf->c;
	struct service s;
	int r;

	if (!strcmp(name, "protect") || !strcmp(name, "upstream")) {
		r = name[0] == 'p' ?
		    service_parse_spec(&s, value, cf->where, cf->err, cf->arg) :
		    upstream_parse_spec(&s, value, cf->where, cf->err, cf->arg);
		if (r < 0 ||
		    config_add_service(c, &s, cf->where, cf->err, cf->arg) < 0)
			return -1;
		snprintf(c->services[c->nservices - 1].name,
			 sizeof(s.name), "%s", sec->name);
		cf->of[c->nservices - 1] = (int8_t)(sec - cf->sec);
		return 0;
	}
	if (!strcmp(name, "kind")) {
		if (strcmp(value, "dns") != 0 && strcmp(value, "generic") != 0) {
			config_report(cf->err, cf->arg, cf->where, "kind: "
				      "expected dns or generic, got '%s'",
				      value);
			return -1;
		}
		sec->kind = value[0] == 'd' ? SERVICE_DNS : SERVICE_GENERIC;
		sec->kind_set = true;
		return 0;
	}
	r = config_set_policy(&sec->pol, &sec->pol_set, name, value,
			      cf->where, cf->err, cf->arg);
	if (r > 0)
		config_report(cf->err, cf->arg, cf->where, "'%s' is not a "
			      "setting of [service %s] (protect, upstream, "
			      "kind or a limit)", name, sec->name);
	return r ? -1 : 0;
}

static int read_file(struct conffile *cf, const char *path,
		     const char *section);

/* glob(3)'s: a directory that is not there matches nothing; one that
 * cannot be read is an error. */
static int
glob_error(const char *path, int err)
{
	(void)path;
	return err != ENOENT && err != ENOTDIR;
}

/* include = PATTERN: the files it matches, in order; relative to the
 * including file's directory.  A pattern with no wildcard names a file
 * that must be there; one with a wildcard may match none (an empty
 * conf.d).  0 or -1 (reported). */
static int
include(struct conffile *cf, const char *section, const char *pattern)
{
	const char *slash = strrchr(cf->path, '/');
	bool wild = strpbrk(pattern, "*?[") != NULL;
	char path[PATH_MAX];
	glob_t g;
	int n;
	size_t i;

	if (cf->depth == INCLUDE_DEPTH) {
		config_report(cf->err, cf->arg, cf->where, "include: files "
			      "within files %d deep at most", INCLUDE_DEPTH);
		return -1;
	}
	if (pattern[0] != '/' && slash)
		n = snprintf(path, sizeof(path), "%.*s/%s",
			     (int)(slash - cf->path), cf->path, pattern);
	else
		n = snprintf(path, sizeof(path), "%s", pattern);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		config_report(cf->err, cf->arg, cf->where, "include: path "
			      "too long");
		return -1;
	}
	switch (glob(path, 0, glob_error, &g)) {
	case 0:
		break;
	case GLOB_NOMATCH:
		if (wild)
			return 0;
		config_report(cf->err, cf->arg, cf->where, "include: %s: no "
			      "such file", path);
		return -1;
	default:
		config_report(cf->err, cf->arg, cf->where, "include: %s: "
			      "cannot be read", path);
		return -1;
	}
	/* A file that cannot be read is counted where it is reported. */
	for (i = 0; i < g.gl_pathc; i++)
		read_file(cf, g.gl_pathv[i], section);
	globfree(&g);
	return 0;
}

static int
handle(void *user, const char *section, const char *name, const char *value)
{
	struct conffile *cf = user;
	int r;

	if (cf->skip)
		return 1;
	/* inih begins each file outside any section. */
	if (!*section)
		section = cf->outer;
	if (!strcmp(name, "include")) {
		r = include(cf, section, value);
	} else if (!*section || !strcmp(section, "tcpctd")) {
		if (!strcmp(name, "protect") || !strcmp(name, "upstream")) {
			config_report(cf->err, cf->arg, cf->where, "%s "
				      "belongs in a [service NAME] section",
				      name);
			r = -1;
		} else if (!strcmp(name, "rules")) {
			/* An action, not a setting: in the unit's file it
			 * would turn the daemon into the rules' installer. */
			config_report(cf->err, cf->arg, cf->where, "rules: "
				      "an action of the command line alone "
				      "(tcpctd --rules)");
			r = -1;
		} else {
			r = config_set(cf->c, name, value, cf->where, cf->err,
				       cf->arg);
		}
	} else if (!strncmp(section, "service ", 8)) {
		struct section *sec = section_of(cf, section + 8);

		if (!sec) {
			config_report(cf->err, cf->arg, cf->where, "[%s]: a "
				      "service needs a name of letters, digits "
				      "and - _ . :, and there are %d at most",
				      section, POLICY_MAX_SERVICES);
			r = -1;
		} else {
			r = service_setting(cf, sec, name, value);
		}
	} else {
		config_report(cf->err, cf->arg, cf->where, "[%s] is not a "
			      "section: [tcpctd] or [service NAME]", section);
		r = -1;
	}
	if (r < 0)
		cf->errors++;
	return 1;	/* on to the next line, whatever this one did */
}

/* A section's kind and limits reach each of its backends, but for what a
 * protect line set for itself. */
static void
apply_sections(struct conffile *cf)
{
	for (unsigned i = 0; i < cf->c->nservices; i++) {
		struct service *s = &cf->c->services[i];
		const struct section *sec;

		if (cf->of[i] < 0)
			continue;
		sec = &cf->sec[cf->of[i]];
		if (sec->kind_set && !s->kind_set) {
			s->kind = sec->kind;
			s->kind_set = true;
		}
		config_policy_merge(&s->pol, &s->pol_set, &sec->pol,
				    sec->pol_set);
	}
}

/* One file, with what it includes, its first lines in section; the
 * including file's reading is put back after.  0, or -1 when it cannot be
 * read (reported); its errors, that one too, are counted in cf. */
static int
read_file(struct conffile *cf, const char *path, const char *section)
{
	const char *up_path = cf->path;
	FILE *up_f = cf->f;
	unsigned up_line = cf->line, up_nheads = cf->nheads;
	bool up_skip = cf->skip, up_content = cf->content;
	struct heading heads[HEADS_MAX], *up_heads = cf->heads;
	char up_outer[sizeof(cf->outer)];
	int errors = cf->errors;
	struct stat st = { 0 };
	const char *why = NULL;
	unsigned i;

	cf->f = fopen(path, "re");
	if (!cf->f)
		why = strerror(errno);
	else if (fstat(fileno(cf->f), &st) < 0 || !S_ISREG(st.st_mode))
		why = "not a file";
	else {
		/* Each file once: a second time is a loop, or a mistake. */
		for (i = 0; i < cf->nread; i++)
			if (cf->read[i].dev == st.st_dev &&
			    cf->read[i].ino == st.st_ino)
				why = "read already (a loop?)";
		if (!why && cf->nread == FILES_MAX)
			why = "more files than tcpctd reads";
	}
	if (why) {
		if (cf->f)
			fclose(cf->f);
		if (up_f)
			config_report(cf->err, cf->arg, cf->where, "include: "
				      "%s: %s", path, why);
		else
			config_report(cf->err, cf->arg, path, "cannot open: "
				      "%s", why);
		cf->errors++;
		cf->f = up_f;
		return -1;
	}
	cf->read[cf->nread].dev = st.st_dev;
	cf->read[cf->nread++].ino = st.st_ino;
	cf->path = path;
	cf->line = 0;
	cf->skip = false;
	cf->content = false;
	cf->heads = heads;
	cf->nheads = 0;
	memcpy(up_outer, cf->outer, sizeof(up_outer));
	if (section != cf->outer)	/* an include before any header */
		snprintf(cf->outer, sizeof(cf->outer), "%s", section);
	cf->depth++;
	if (ini_parse_stream(next_line, cf, handle, cf) != 0 &&
	    cf->errors == errors) {
		/* inih saw what our reader let through as good. */
		config_report(cf->err, cf->arg, path, "cannot be parsed");
		cf->errors++;
	}
	fclose(cf->f);
	cf->depth--;
	memcpy(cf->outer, up_outer, sizeof(up_outer));
	cf->path = up_path;
	cf->f = up_f;
	cf->line = up_line;
	cf->skip = up_skip;
	cf->content = up_content;
	cf->heads = up_heads;
	cf->nheads = up_nheads;
	if (up_f)
		where_now(cf);
	return 0;
}

int
config_load(struct config *c, const char *path, config_err_cb err, void *arg)
{
	struct conffile cf;

	memset(&cf, 0, sizeof(cf));
	cf.c = c;
	cf.err = err;
	cf.arg = arg;
	memset(cf.of, -1, sizeof(cf.of));
	if (read_file(&cf, path, "") < 0)
		return -1;
	apply_sections(&cf);
	return cf.errors;
}
