#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->queues = 1;
	c->queue_maxlen = 8192;		/* the default 1024 overflows */
	c->batch = 32;
	c->gso = true;
	c->mark = 0x7463;		/* "tc" */
	c->flows = 65536;
	c->hold_slots = 4096;
	c->idle_timeout = 7440;		/* RFC 5382 REQ-5: 2 h 4 min */
	c->closing_timeout = 120;
	c->closed_linger = 10;
	c->syn_retries = 4;
	c->key_lifetime = 600;
	c->probe_interval = 60;
	snprintf(c->iptables, sizeof(c->iptables), "iptables");
	snprintf(c->ip6tables, sizeof(c->ip6tables), "ip6tables");
}

int
service_parse(struct service *s, const char *text)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = text;
	size_t hlen;
	char *end;
	unsigned long port;

	memset(s, 0, sizeof(*s));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (!close || close[1] != ':')
			return -1;
		h = text + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - text);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (colon[1] < '0' || colon[1] > '9')
		return -1;	/* strtoul would take a sign or blanks */
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port == 0 || port > 65535)
		return -1;
	if (text[0] != '[' && inet_pton(AF_INET, host, s->addr.b) == 1)
		s->family = AF_INET;
	else if (text[0] == '[' && inet_pton(AF_INET6, host, s->addr.b) == 1)
		s->family = AF_INET6;
	else
		return -1;
	s->port = (uint16_t)port;
	snprintf(s->name, sizeof(s->name), "%s", text);
	return 0;
}

const struct service *
config_find_service(const struct config *c, uint8_t family,
		    const struct inaddr *addr, uint16_t port)
{
	unsigned i;

	for (i = 0; i < c->nservices; i++) {
		const struct service *s = &c->services[i];
		if (s->port == port && s->family == family &&
		    memcmp(s->addr.b, addr->b, pkt_addrlen(family)) == 0)
			return s;
	}
	return NULL;
}

static int
set_uint(unsigned *out, const char *value, unsigned min, unsigned max)
{
	unsigned long v;
	char *end;

	if (!value || !*value)
		return -1;
	errno = 0;
	v = strtoul(value, &end, 0);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int
set_str(char *out, size_t cap, const char *value)
{
	if (!value || !*value || strlen(value) >= cap)
		return -1;
	memcpy(out, value, strlen(value) + 1);
	return 0;
}

static void __attribute__((format(printf, 4, 5)))
report(config_err_cb err, void *arg, const char *where, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err)
		err(where, msg, arg);
}

struct uint_opt {
	const char *name;
	size_t off;
	unsigned min, max;
};

#define UOPT(n, field, lo, hi) { n, offsetof(struct config, field), lo, hi }
static const struct uint_opt uint_opts[] = {
	UOPT("queues", queues, 1, 64),
	UOPT("queue-maxlen", queue_maxlen, 1, 1u << 20),
	UOPT("batch", batch, 1, 256),
	UOPT("mark", mark, 1, UINT_MAX),
	UOPT("flows", flows, 16, 1u << 24),
	UOPT("hold-slots", hold_slots, 0, 1u << 20),
	UOPT("idle-timeout", idle_timeout, 1, 86400 * 7),
	UOPT("closing-timeout", closing_timeout, 1, 86400),
	UOPT("closed-linger", closed_linger, 1, 3600),
	UOPT("syn-retries", syn_retries, 0, 16),
	UOPT("key-lifetime", key_lifetime, 240, 86400),
	UOPT("probe-interval", probe_interval, 1, 86400),
};

int
config_set(struct config *c, const char *name, const char *value,
	   const char *where, config_err_cb err, void *arg)
{
	size_t i;

	for (i = 0; i < sizeof(uint_opts) / sizeof(uint_opts[0]); i++) {
		const struct uint_opt *u = &uint_opts[i];
		unsigned v;
		if (strcmp(name, u->name) != 0)
			continue;
		if (set_uint(&v, value, u->min, u->max) < 0) {
			report(err, arg, where, "%s: expected a number in "
			       "%u..%u, got '%s'", name, u->min, u->max,
			       value ? value : "");
			return -1;
		}
		if (u->off == offsetof(struct config, queue_maxlen))
			c->queue_maxlen = v;
		else if (u->off == offsetof(struct config, mark))
			c->mark = v;
		else
			*(unsigned *)(void *)((uint8_t *)c + u->off) = v;
		return 0;
	}
	if (!strcmp(name, "queue-base")) {
		unsigned v;
		if (set_uint(&v, value, 0, 65535 - 64) < 0) {
			report(err, arg, where, "%s: bad queue number '%s'",
			       name, value ? value : "");
			return -1;
		}
		c->queue_base = (uint16_t)v;
		return 0;
	}
	if (!strcmp(name, "protect")) {
		struct service s;
		if (!value || service_parse(&s, value) < 0) {
			report(err, arg, where,
			       "protect: expected ADDR:PORT or [ADDR6]:PORT, "
			       "got '%s'", value ? value : "");
			return -1;
		}
		if (c->nservices == POLICY_MAX_SERVICES) {
			report(err, arg, where, "protect: more than %d "
			       "services", POLICY_MAX_SERVICES);
			return -1;
		}
		if (config_find_service(c, s.family, &s.addr, s.port)) {
			report(err, arg, where, "protect: '%s' given twice",
			       value);
			return -1;
		}
		c->services[c->nservices++] = s;
		return 0;
	}
	if (!strcmp(name, "rules")) {
		if (value && !strcmp(value, "install"))
			c->rules = RULES_INSTALL;
		else if (value && !strcmp(value, "remove"))
			c->rules = RULES_REMOVE;
		else if (value && !strcmp(value, "print"))
			c->rules = RULES_PRINT;
		else {
			report(err, arg, where, "rules: expected install, "
			       "remove or print, got '%s'",
			       value ? value : "");
			return -1;
		}
		return 0;
	}
	if (!strcmp(name, "secret-file") || !strcmp(name, "iptables") ||
	    !strcmp(name, "ip6tables")) {
		char *out = name[0] == 's' ? c->secret_file
			: name[2] == '6' ? c->ip6tables : c->iptables;
		size_t cap = name[0] == 's' ? sizeof(c->secret_file)
			: sizeof(c->iptables);
		if (set_str(out, cap, value) < 0) {
			report(err, arg, where, "%s: expected a path", name);
			return -1;
		}
		return 0;
	}
	if (!strcmp(name, "fail-open") || !strcmp(name, "bypass") ||
	    !strcmp(name, "synack-verdict") || !strcmp(name, "gso")) {
		bool *flag = name[0] == 'f' ? &c->fail_open
			: name[0] == 'b' ? &c->bypass
			: name[0] == 'g' ? &c->gso : &c->synack_verdict;
		if (!value || !strcmp(value, "yes") || !strcmp(value, "true"))
			*flag = true;
		else if (!strcmp(value, "no") || !strcmp(value, "false"))
			*flag = false;
		else {
			report(err, arg, where, "%s: expected yes or no, got "
			       "'%s'", name, value);
			return -1;
		}
		return 0;
	}
	report(err, arg, where, "unknown option '%s'", name);
	return -1;
}

int
config_load(struct config *c, const char *path, config_err_cb err, void *arg)
{
	char line[1024], where[300];
	unsigned lineno = 0;
	int errors = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		report(err, arg, path, "cannot open: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *name, *value, *hash;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			int ch;
			report(err, arg, where, "line too long");
			errors++;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
		if ((hash = strchr(p, '#')))
			*hash = '\0';
		name = strtok(p, " \t\r\n");
		if (!name)
			continue;
		value = strtok(NULL, " \t\r\n");
		if (strtok(NULL, " \t\r\n")) {
			report(err, arg, where, "%s: too many values", name);
			errors++;
			continue;
		}
		if (config_set(c, name, value, where, err, arg) < 0)
			errors++;
	}
	fclose(f);
	return errors;
}

int
config_check(const struct config *c, config_err_cb err, void *arg)
{
	int errors = 0;

	if (c->nservices == 0 && c->rules != RULES_REMOVE) {
		report(err, arg, "configuration", "no service to protect: give "
		       "at least one 'protect ADDR:PORT'");
		errors++;
	}
	if ((unsigned)c->queue_base + 2 * c->queues > 65536) {
		report(err, arg, "configuration", "queue-base + queues exceeds "
		       "the last queue number");
		errors++;
	}
	if (c->closed_linger > c->closing_timeout) {
		report(err, arg, "configuration", "closed-linger must not "
		       "exceed closing-timeout");
		errors++;
	}
	return errors;
}
