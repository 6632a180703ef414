#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void
config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->queues = 1;
	c->queue_maxlen = 8192;		/* the default 1024 overflows */
	c->batch = 32;
	c->gso = true;
	c->shield = SHIELD_AUTO;
	c->kernel_flows = true;
	snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", "/sys/fs/bpf/tcpctd");
	c->tcpct_timewait_rst = true;
	c->tcpct_txn = true;
	c->tfo_pending = 1024;
	c->upstream_cache = 4096;
	c->txn_pending = 1024;
	c->txn_timeout = 500;
	c->txn_rate = 65536;
	c->mark = 0x7463;		/* "tc" */
	c->flows = 65536;
	c->hold_slots = 16384;
	c->prefix4 = 24;
	c->prefix6 = 56;
	c->limit_slots = 65536;
	c->synack_rate = 10000;
	c->closing_timeout = 120;
	c->closed_linger = 10;
	c->syn_retries = 4;
	c->metrics_interval = 15;
	c->key_lifetime = 600;
	c->probe_interval = 60;
	snprintf(c->iptables, sizeof(c->iptables), "iptables");
	snprintf(c->ip6tables, sizeof(c->ip6tables), "ip6tables");
}

/* "HOST:PORT" or "[HOST]:PORT": HOST into host (len bytes, NUL-ended, not
 * empty), *colon at the colon before PORT; -1 when it is neither. */
static int
host_port(const char *text, char *host, size_t len, const char **colon)
{
	const char *h = text;
	size_t hlen;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return -1;
		h = text + 1;
		hlen = (size_t)(close - h);
		*colon = close + 1;
	} else {
		*colon = strrchr(text, ':');
		if (!*colon)
			return -1;
		hlen = (size_t)(*colon - text);
	}
	if (hlen == 0 || hlen >= len)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	return 0;
}

int
service_parse(struct service *s, const char *text)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon;
	char *end;
	unsigned long port;

	memset(s, 0, sizeof(*s));
	if (host_port(text, host, sizeof(host), &colon) < 0)
		return -1;
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

/*
 * Why no TCP segment is ever sent to a service at a, or NULL when one can
 * be: the rules made for such an address would match nothing, and the
 * daemon say it protects what it does not.  RFC 1122 §4.2.3.10: a SYN to a
 * broadcast or multicast address is discarded.  Loopback is taken, though
 * only the gateway's own programs reach it (tests/systemd.sh protects
 * 127.0.0.2 in its container).
 */
static const char *
service_addr_refused(uint8_t family, const struct inaddr *a)
{
	static const struct {
		struct prefix p;
		const char *why;
	} refused[] = {
		{ { AF_INET, 32, { { 0 } } }, "is no destination (RFC 1122 "
		  "§3.2.1.3 (a)), not 'every address': name each backend's "
		  "own" },
		{ { AF_INET, 8, { { 0 } } }, "is in 0.0.0.0/8, a source "
		  "address only (RFC 1122 §3.2.1.3 (b))" },
		{ { AF_INET, 32, { { 255, 255, 255, 255 } } }, "is the limited "
		  "broadcast address (RFC 1122 §3.2.1.3 (c)), and TCP connects "
		  "to one host" },
		{ { AF_INET, 4, { { 224 } } }, "is a multicast address "
		  "(224.0.0.0/4, RFC 5771), and TCP connects to one host" },
		{ { AF_INET6, 128, { { 0 } } }, "is the unspecified address, "
		  "no destination (RFC 4291 §2.5.2), not 'every address': "
		  "name each backend's own" },
		{ { AF_INET6, 8, { { 0xff } } }, "is a multicast address "
		  "(ff00::/8, RFC 4291 §2.7), and TCP connects to one host" },
		{ { AF_INET6, 96, { { [10] = 0xff, [11] = 0xff } } }, "is "
		  "IPv4-mapped (RFC 4291 §2.5.5.2), which no packet on the "
		  "wire carries: write the IPv4 address itself" },
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const struct prefix *p = &refused[i].p;
		unsigned bytes = p->len / 8u, rest = p->len % 8u;

		if (p->family == family &&
		    !memcmp(a->b, p->addr.b, bytes) &&
		    (!rest || !((a->b[bytes] ^ p->addr.b[bytes]) &
				(0xff00u >> rest))))
			return refused[i].why;
	}
	return NULL;
}

int
prefix_parse(struct prefix *p, const char *text)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	size_t hlen = slash ? (size_t)(slash - text) : strlen(text);
	unsigned long len;
	unsigned bits, i;
	bool host_bits = false;
	char *end;

	memset(p, 0, sizeof(*p));
	if (hlen == 0 || hlen >= sizeof(host))
		return -1;
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	if (inet_pton(AF_INET, host, p->addr.b) == 1)
		p->family = AF_INET;
	else if (inet_pton(AF_INET6, host, p->addr.b) == 1)
		p->family = AF_INET6;
	else
		return -1;
	bits = p->family == AF_INET ? 32 : 128;
	len = bits;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9')
			return -1;
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (errno || *end || len > bits)
			return -1;
	}
	p->len = (uint8_t)len;
	for (i = 0; i < 16; i++) {
		unsigned keep = p->len > 8 * i ? p->len - 8 * i : 0;

		if (keep < 8 && (p->addr.b[i] & (0xffu >> keep))) {
			p->addr.b[i] &= (uint8_t)(0xff00u >> keep);
			host_bits = true;
		}
	}
	return host_bits;
}

void
prefix_format(const struct prefix *p, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	inet_ntop(p->family, p->addr.b, host, sizeof(host));
	snprintf(buf, len, "%s/%u", host, p->len);
}

void
addrport_format(uint8_t family, const struct inaddr *a, uint16_t port,
		char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	inet_ntop(family, a->b, host, sizeof(host));
	snprintf(buf, len, family == AF_INET6 ? "[%s]:%u" : "%s:%u", host,
		 port);
}

void
service_format(const struct service *s, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (!s->upstream) {
		addrport_format(s->family, &s->addr, s->port, buf, len);
		return;
	}
	inet_ntop(s->family, s->addr.b, host, sizeof(host));
	snprintf(buf, len, s->family == AF_INET6 ? "[%s/%u]:%u" : "%s/%u:%u",
		 host, s->plen, s->port);
}

bool
service_named(const struct service *s, const char *backend)
{
	return strcmp(s->name, backend) != 0;
}

const char *
service_kind_name(enum service_kind kind)
{
	return kind == SERVICE_DNS ? "dns" : "generic";
}

/* Whether a lies in the first len bits of p (both of family). */
static bool
prefix_holds(const struct inaddr *p, unsigned len, const struct inaddr *a)
{
	unsigned bytes = len / 8u, rest = len % 8u;

	return !memcmp(a->b, p->b, bytes) &&
	       (!rest || !((a->b[bytes] ^ p->b[bytes]) & (0xff00u >> rest)));
}

const struct service *
config_find_service(const struct config *c, uint8_t family,
		    const struct inaddr *addr, uint16_t port)
{
	const struct service *best = NULL;
	unsigned i;

	for (i = 0; i < c->nservices; i++) {
		const struct service *s = &c->services[i];

		if (s->port != port || s->family != family)
			continue;
		if (!s->upstream) {
			if (memcmp(s->addr.b, addr->b, pkt_addrlen(family)) == 0)
				return s;
		} else if ((!best || s->plen > best->plen) &&
			   prefix_holds(&s->addr, s->plen, addr)) {
			best = s;
		}
	}
	return best;
}

bool
config_has_upstream(const struct config *c)
{
	for (unsigned i = 0; i < c->nservices; i++)
		if (c->services[i].upstream)
			return true;
	return false;
}

/*
 * Reads a number in min..max: decimal digits alone, with no sign, blank or
 * leading 0.  strtoul's base 0 read 010 as 8 and 0x10 as 16, which the
 * operator who wrote them need not have meant.  With hex, 0x and hex
 * digits as well, as iptables writes a mark.  Returns 0 or -1.
 */
static int
set_number(unsigned *out, const char *value, unsigned min, unsigned max,
	   bool hex)
{
	static const char digits[] = "0123456789", xdigits[] =
		"0123456789abcdefABCDEF";
	unsigned long v;
	int base = 10;
	char *end;

	if (!value)
		return -1;
	if (hex && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
		value += 2;
		base = 16;
	} else if (value[0] == '0' && value[1]) {
		return -1;
	}
	if (!*value || value[strspn(value, base == 16 ? xdigits : digits)])
		return -1;
	errno = 0;
	v = strtoul(value, &end, base);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int
set_uint(unsigned *out, const char *value, unsigned min, unsigned max)
{
	return set_number(out, value, min, max, false);
}

/* What to add to the report of a bad number that C would have read in
 * another base. */
static const char *
number_hint(const char *value)
{
	return value && value[0] == '0' &&
	       ((value[1] >= '0' && value[1] <= '9') || value[1] == 'x' ||
		value[1] == 'X') ?
		" (numbers are decimal, without a leading 0 or 0x)" : "";
}

/* Reads a switch: yes, true, on or 1, and no, false, off or 0, in any case,
 * as systemd and nsd take them.  Returns 0, or -1 for anything else. */
static int
parse_bool(const char *value, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; value && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(value, yes[i]) || !strcasecmp(value, no[i])) {
			*out = !strcasecmp(value, yes[i]);
			return 0;
		}
	}
	return -1;
}

/*
 * Reads a time in the unit of the option (unit_ms: 1000 for seconds, 1 for
 * milliseconds): a number alone is in that unit, or it carries its own,
 * ms, s, m, h or d ("500ms", "90s", "2m", "1h").  Returns 0, or -1 when
 * the text is no time, cannot be said in the option's unit, or is out of
 * min..max.
 */
static int
set_time(unsigned *out, const char *value, unsigned unit_ms, unsigned min,
	 unsigned max)
{
	static const struct { const char *name; unsigned long long ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	unsigned long long v, ms;
	char *end;
	size_t i;

	if (!value || value[0] < '0' || value[0] > '9' ||
	    (value[0] == '0' && value[1] >= '0' && value[1] <= '9'))
		return -1;	/* a sign, a blank, a leading 0 (set_number) */
	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || v > UINT_MAX)
		return -1;
	if (*end == '\0')
		return set_uint(out, value, min, max);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].name))
			break;
	if (i == sizeof(units) / sizeof(units[0]))
		return -1;
	ms = v * units[i].ms;
	if (ms % unit_ms || ms / unit_ms < min || ms / unit_ms > max)
		return -1;
	*out = (unsigned)(ms / unit_ms);
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

void
config_report(config_err_cb err, void *arg, const char *where,
	      const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err)
		err(where, msg, arg);
}
#define report config_report

/* The options that are one value each, by type.  OPT_FLAG is a bool that
 * needs no argument on the command line (--bypass, --bypass=no; yes or
 * no in a file); OPT_MARK a number that may be written in hex as well. */
enum opt_type {
	OPT_UINT, OPT_MARK, OPT_SECS, OPT_MS, OPT_BOOL, OPT_FLAG, OPT_PATH
};

struct opt {
	const char *name;
	enum opt_type type;
	size_t off, size;	/* the field in struct config */
	unsigned min, max;	/* OPT_UINT */
};

#define FIELD(f)	offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define UINT(n, f, lo, hi)	{ n, OPT_UINT, FIELD(f), lo, hi }
#define MARK(n, f)		{ n, OPT_MARK, FIELD(f), 1, UINT_MAX }
#define SECS(n, f, lo, hi)	{ n, OPT_SECS, FIELD(f), lo, hi }
#define MSECS(n, f, lo, hi)	{ n, OPT_MS, FIELD(f), lo, hi }
#define BOOL(n, f)		{ n, OPT_BOOL, FIELD(f), 0, 0 }
#define FLAG(n, f)		{ n, OPT_FLAG, FIELD(f), 0, 0 }
#define PATH(n, f)		{ n, OPT_PATH, FIELD(f), 0, 0 }
static const struct opt opts[] = {
	UINT("queues", queues, 1, POLICY_MAX_QUEUES),
	UINT("queue-base", queue_base, 0, 65535 - 128),
	UINT("queue-maxlen", queue_maxlen, 1, 1u << 20),
	UINT("batch", batch, 1, 256),
	MARK("mark", mark),
	UINT("flows", flows, 16, 1u << 24),
	UINT("hold-slots", hold_slots, 0, 1u << 20),
	UINT("prefix4", prefix4, 8, 32),
	UINT("prefix6", prefix6, 16, 128),
	UINT("limit-slots", limit_slots, 1024, 1u << 24),
	UINT("synack-rate", synack_rate, 0, 1u << 24),
	SECS("closing-timeout", closing_timeout, 1, 86400),
	SECS("closed-linger", closed_linger, 1, 3600),
	UINT("syn-retries", syn_retries, 0, 16),
	SECS("key-lifetime", key_lifetime, 240, 86400),
	SECS("probe-interval", probe_interval, 1, 86400),
	/* Under the unit's TimeoutStopSec= (90 s), past which systemd
	 * kills it and the stop counts as failed (the rules stay). */
	SECS("stop-grace", stop_grace, 0, 60),
	FLAG("fail-open", fail_open),
	FLAG("bypass", bypass),
	BOOL("gso", gso),
	BOOL("kernel-flows", kernel_flows),
	FLAG("synack-verdict", synack_verdict),
	BOOL("tcpct-timewait-rst", tcpct_timewait_rst),
	BOOL("tcpct-transactions", tcpct_txn),
	UINT("tfo-pending", tfo_pending, 0, 1u << 20),
	UINT("upstream-cache", upstream_cache, 16, 1u << 20),
	UINT("txn-pending", txn_pending, 0, 1u << 20),
	MSECS("txn-timeout", txn_timeout, 10, 10000),
	UINT("txn-rate", txn_rate, 0, 1u << 30),
	PATH("secret-file", secret_file),
	PATH("control-socket", control_socket),
	PATH("metrics-file", metrics_file),
	PATH("pin-dir", pin_dir),
	SECS("metrics-interval", metrics_interval, 1, 3600),
	PATH("iptables", iptables),
	PATH("ip6tables", ip6tables),
};

/* The policy fields, with each kind's default (config.h). */
struct policy_field {
	const char *name;
	size_t off;
	unsigned unit_ms;		/* 0: a count, else a time in that unit */
	unsigned min, max, def[2];	/* by enum service_kind */
};

enum { N = 0, S = 1000, MS = 1 };	/* POLICY_FIELDS' units */

static const struct policy_field policy_fields[] = {
#define X(f, n, unit, lo, hi, dns, generic)				\
	{ n, offsetof(struct policy, f), unit, lo, hi,			\
	  { [SERVICE_DNS] = (dns), [SERVICE_GENERIC] = (generic) } },
	POLICY_FIELDS(X)
#undef X
};
#define NPOLICY (sizeof(policy_fields) / sizeof(policy_fields[0]))

static unsigned *
policy_at(struct policy *p, size_t i)
{
	return (unsigned *)((uint8_t *)p + policy_fields[i].off);
}

static unsigned
policy_get(const struct policy *p, size_t i)
{
	return *(const unsigned *)((const uint8_t *)p + policy_fields[i].off);
}

/* set_time for option name, reporting a bad value; 0 or -1. */
static int
set_time_named(unsigned *out, const char *name, const char *value,
	       unsigned unit_ms, unsigned min, unsigned max, const char *where,
	       config_err_cb err, void *arg)
{
	if (set_time(out, value, unit_ms, min, max) == 0)
		return 0;
	report(err, arg, where, "%s: expected a time in %u..%u %s (or with ms, "
	       "s, m, h, d), got '%s'%s", name, min, max,
	       unit_ms == MS ? "ms" : "s", value ? value : "",
	       number_hint(value));
	return -1;
}

/* Sets policy field i of p from value; 0 or -1 after reporting. */
static int
set_policy(struct policy *p, uint32_t *set, size_t i, const char *value,
	   const char *where, config_err_cb err, void *arg)
{
	const struct policy_field *pf = &policy_fields[i];

	if (pf->max == 1) {
		/* A switch, as the global ones. */
		bool on;

		if (parse_bool(value, &on) < 0) {
			report(err, arg, where, "%s: expected yes or no, got "
			       "'%s'", pf->name, value ? value : "");
			return -1;
		}
		*policy_at(p, i) = on;
	} else if (pf->unit_ms) {
		if (set_time_named(policy_at(p, i), pf->name, value, pf->unit_ms,
				   pf->min, pf->max, where, err, arg) < 0)
			return -1;
	} else if (set_uint(policy_at(p, i), value, pf->min, pf->max) < 0) {
		report(err, arg, where, "%s: expected a number in %u..%u, got "
		       "'%s'%s", pf->name, pf->min, pf->max, value ? value : "",
		       number_hint(value));
		return -1;
	}
	*set |= 1u << i;
	return 0;
}

static int
find_policy(const char *name, size_t len)
{
	for (size_t i = 0; i < NPOLICY; i++)
		if (strlen(policy_fields[i].name) == len &&
		    !strncmp(name, policy_fields[i].name, len))
			return (int)i;
	return -1;
}

int
config_set_policy(struct policy *p, uint32_t *set, const char *name,
		  const char *value, const char *where, config_err_cb err,
		  void *arg)
{
	int i = find_policy(name, strlen(name));

	if (i < 0)
		return 1;
	return set_policy(p, set, (size_t)i, value, where, err, arg);
}

void
config_policy_merge(struct policy *dst, uint32_t *dst_set,
		    const struct policy *src, uint32_t src_set)
{
	for (size_t i = 0; i < NPOLICY; i++) {
		uint32_t bit = 1u << i;

		if (!(src_set & bit) || (*dst_set & bit))
			continue;
		*policy_at(dst, i) = *policy_at((struct policy *)src, i);
		*dst_set |= bit;
	}
}

int
config_add_service(struct config *c, const struct service *s,
		   const char *where, config_err_cb err, void *arg)
{
	if (c->nservices == POLICY_MAX_SERVICES) {
		report(err, arg, where, "protect: more than %d services",
		       POLICY_MAX_SERVICES);
		return -1;
	}
	for (unsigned i = 0; i < c->nservices; i++) {
		const struct service *o = &c->services[i];

		if (o->upstream == s->upstream && o->family == s->family &&
		    o->port == s->port && o->plen == s->plen &&
		    !memcmp(o->addr.b, s->addr.b, pkt_addrlen(s->family))) {
			report(err, arg, where, "%s: '%s' given twice",
			       s->upstream ? "upstream" : "protect", s->name);
			return -1;
		}
	}
	c->services[c->nservices++] = *s;
	return 0;
}

static int spec_options(struct service *s, const char *opt, char **save,
			const char *where, config_err_cb err, void *arg);

int
service_parse_spec(struct service *s, const char *text, const char *where,
		   config_err_cb err, void *arg)
{
	char buf[512], *item, *save = NULL;
	const char *why;

	if (!text || strlen(text) >= sizeof(buf)) {
		report(err, arg, where, "protect: expected ADDR:PORT or "
		       "[ADDR6]:PORT, got '%s'", text ? text : "");
		return -1;
	}
	memcpy(buf, text, strlen(text) + 1);
	item = strtok_r(buf, ",", &save);
	if (!item || service_parse(s, item) < 0) {
		report(err, arg, where, "protect: expected ADDR:PORT or "
		       "[ADDR6]:PORT, got '%s'", text);
		return -1;
	}
	if ((why = service_addr_refused(s->family, &s->addr))) {
		char host[INET6_ADDRSTRLEN];

		inet_ntop(s->family, s->addr.b, host, sizeof(host));
		report(err, arg, where, "protect: %s %s", host, why);
		return -1;
	}
	return spec_options(s, "protect", &save, where, err, arg);
}

/* The options after a service's address: dns, generic, NAME=VALUE. */
static int
spec_options(struct service *s, const char *opt, char **save,
	     const char *where, config_err_cb err, void *arg)
{
	char *item;

	s->kind = s->port == 53 ? SERVICE_DNS : SERVICE_GENERIC;
	while ((item = strtok_r(NULL, ",", save))) {
		const char *eq = strchr(item, '=');
		int i;

		if (!strcmp(item, "dns") || !strcmp(item, "generic")) {
			s->kind = item[0] == 'd' ? SERVICE_DNS
						 : SERVICE_GENERIC;
			s->kind_set = true;
			continue;
		}
		i = eq ? find_policy(item, (size_t)(eq - item)) : -1;
		if (i < 0) {
			report(err, arg, where, "%s: '%s' is not dns, "
			       "generic or a limit as NAME=VALUE", opt, item);
			return -1;
		}
		if (set_policy(&s->pol, &s->pol_set, (size_t)i, eq + 1, where,
			       err, arg) < 0)
			return -1;
	}
	return 0;
}

/* "PREFIX:PORT" or "[PREFIX6]:PORT" into s; 0, 1 when the prefix has
 * bits set past its length, or -1. */
static int
upstream_parse(struct service *s, const char *text)
{
	char host[INET6_ADDRSTRLEN + 8];
	const char *colon;
	struct prefix p;
	unsigned port;
	int r;

	memset(s, 0, sizeof(*s));
	if (host_port(text, host, sizeof(host), &colon) < 0 ||
	    set_uint(&port, colon + 1, 1, 65535) < 0)
		return -1;
	if ((r = prefix_parse(&p, host)) < 0 ||
	    (p.family == AF_INET6) != (text[0] == '['))
		return -1;
	s->family = p.family;
	s->addr = p.addr;
	s->plen = p.len;
	s->port = (uint16_t)port;
	s->upstream = true;
	snprintf(s->name, sizeof(s->name), "%s", text);
	return r;
}

int
upstream_parse_spec(struct service *s, const char *text, const char *where,
		    config_err_cb err, void *arg)
{
	char buf[512], *item, *save = NULL;
	const char *why;
	int r;

	if (!text || strlen(text) >= sizeof(buf)) {
		report(err, arg, where, "upstream: expected PREFIX:PORT or "
		       "[PREFIX6]:PORT, got '%s'", text ? text : "");
		return -1;
	}
	memcpy(buf, text, strlen(text) + 1);
	item = strtok_r(buf, ",", &save);
	if (!item || (r = upstream_parse(s, item)) < 0) {
		report(err, arg, where, "upstream: expected PREFIX:PORT or "
		       "[PREFIX6]:PORT, got '%s'", text);
		return -1;
	}
	if (r > 0) {
		struct prefix p = { s->family, s->plen, s->addr };
		char want[INET6_ADDRSTRLEN + 4];

		prefix_format(&p, want, sizeof(want));
		report(err, arg, where, "upstream: %s has bits set past its "
		       "length: %s, or the address alone", item, want);
		return -1;
	}
	/* A whole prefix (0.0.0.0/0: every server) is an operator's
	 * choice; one address must be one a segment can go to. */
	if (s->plen == 8 * pkt_addrlen(s->family) &&
	    (why = service_addr_refused(s->family, &s->addr))) {
		char host[INET6_ADDRSTRLEN];

		inet_ntop(s->family, s->addr.b, host, sizeof(host));
		report(err, arg, where, "upstream: %s %s", host, why);
		return -1;
	}
	return spec_options(s, "upstream", &save, where, err, arg);
}

/* Sets one option of the table; returns 0 or -1 after reporting. */
static int
set_opt(struct config *c, const struct opt *o, const char *value,
	const char *where, config_err_cb err, void *arg)
{
	void *field = (uint8_t *)c + o->off;

	switch (o->type) {
	case OPT_UINT:
	case OPT_MARK:
		if (set_number(field, value, o->min, o->max,
			       o->type == OPT_MARK) < 0) {
			report(err, arg, where, "%s: expected a number in "
			       "%u..%u%s, got '%s'%s", o->name, o->min, o->max,
			       o->type == OPT_MARK ? " (or 0x and hex digits)"
						   : "",
			       value ? value : "",
			       o->type == OPT_MARK ? "" : number_hint(value));
			return -1;
		}
		return 0;
	case OPT_SECS:
	case OPT_MS:
		return set_time_named(field, o->name, value,
				      o->type == OPT_MS ? MS : S, o->min, o->max,
				      where, err, arg);
	case OPT_BOOL:
	case OPT_FLAG:
		/* A flag on the command line, a switch in a file. */
		if (!value)
			*(bool *)field = true;
		else if (parse_bool(value, (bool *)field) < 0) {
			report(err, arg, where, "%s: expected yes or no, got "
			       "'%s'", o->name, value);
			return -1;
		}
		return 0;
	case OPT_PATH:
		if (set_str(field, o->size, value) < 0) {
			report(err, arg, where, "%s: expected a path shorter "
			       "than %zu bytes", o->name, o->size);
			return -1;
		}
		return 0;
	}
	return -1;
}

#define NOPTS	(sizeof(opts) / sizeof(opts[0]))

const char *
config_option(size_t i, bool *flag)
{
	static const char *const others[] = {
		"protect", "rules", "allow", "deny", "shield", "shield-dev",
		"upstream",
	};

	*flag = false;
	if (i < NOPTS) {
		*flag = opts[i].type == OPT_FLAG;
		return opts[i].name;
	}
	i -= NOPTS;
	if (i < NPOLICY)
		return policy_fields[i].name;
	i -= NPOLICY;
	return i < sizeof(others) / sizeof(others[0]) ? others[i] : NULL;
}

int
config_set(struct config *c, const char *name, const char *value,
	   const char *where, config_err_cb err, void *arg)
{
	size_t i;

	int pi;

	for (i = 0; i < NOPTS; i++)
		if (!strcmp(name, opts[i].name))
			return set_opt(c, &opts[i], value, where, err, arg);
	if ((pi = find_policy(name, strlen(name))) >= 0)
		return set_policy(&c->pol, &c->pol_set, (size_t)pi, value,
				  where, err, arg);
	if (!strcmp(name, "protect")) {
		struct service s;

		if (service_parse_spec(&s, value, where, err, arg) < 0)
			return -1;
		return config_add_service(c, &s, where, err, arg);
	}
	if (!strcmp(name, "upstream")) {
		struct service s;

		if (upstream_parse_spec(&s, value, where, err, arg) < 0)
			return -1;
		return config_add_service(c, &s, where, err, arg);
	}
	if (!strcmp(name, "shield")) {
		static const char *const modes[] = {
			[SHIELD_NO] = "no", [SHIELD_AUTO] = "auto",
			[SHIELD_YES] = "yes",
		};

		for (i = 0; value && i < sizeof(modes) / sizeof(modes[0]); i++)
			if (!strcasecmp(value, modes[i])) {
				c->shield = (enum shield_mode)i;
				return 0;
			}
		report(err, arg, where, "shield: expected auto, yes or no, "
		       "got '%s'", value ? value : "");
		return -1;
	}
	if (!strcmp(name, "shield-dev")) {
		if (c->nshield_devs == POLICY_MAX_SHIELD_DEVS ||
		    set_str(c->shield_devs[c->nshield_devs], IFNAMSIZ,
			    value) < 0) {
			report(err, arg, where, "shield-dev: an interface name "
			       "(at most %d of them), got '%s'",
			       POLICY_MAX_SHIELD_DEVS, value ? value : "");
			return -1;
		}
		c->nshield_devs++;
		return 0;
	}
	if (!strcmp(name, "allow") || !strcmp(name, "deny")) {
		bool allow = name[0] == 'a';
		struct prefix *list = allow ? c->allow : c->deny;
		unsigned *n = allow ? &c->nallow : &c->ndeny;
		struct prefix p;
		int r = value ? prefix_parse(&p, value) : -1;

		if (r < 0) {
			report(err, arg, where, "%s: expected ADDR/LEN, got "
			       "'%s'", name, value ? value : "");
			return -1;
		}
		if (r > 0) {
			/* 10.0.0.1/8: a typo for /32, or for 10.0.0.0/8? */
			char want[INET6_ADDRSTRLEN + 4];

			prefix_format(&p, want, sizeof(want));
			report(err, arg, where, "%s: %s has bits set past its "
			       "length: %s, or the address alone", name, value,
			       want);
			return -1;
		}
		if (*n == POLICY_MAX_PREFIXES) {
			report(err, arg, where, "%s: more than %d prefixes "
			       "(use an ipset rule of your own)", name,
			       POLICY_MAX_PREFIXES);
			return -1;
		}
		list[(*n)++] = p;
		return 0;
	}
	if (!strcmp(name, "verbose")) {
		/* -v on the command line, each one more. */
		if (set_uint(&c->verbose, value, 0, 3) < 0) {
			report(err, arg, where, "verbose: expected 0 to 3, "
			       "got '%s'", value ? value : "");
			return -1;
		}
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
	report(err, arg, where, "unknown option '%s'", name);
	return -1;
}

/* A service's own setting, else the global one, else its kind's. */
static void
resolve_policy(struct config *c, struct service *s)
{
	for (size_t i = 0; i < NPOLICY; i++) {
		unsigned *v = policy_at(&s->pol, i);

		if (s->pol_set & (1u << i))
			continue;
		*v = (c->pol_set & (1u << i)) ? *policy_at(&c->pol, i)
					    : policy_fields[i].def[s->kind];
	}
}

void
config_write_policies(const struct config *c, FILE *f)
{
	unsigned i;
	size_t j;

	for (i = 0; i < c->nservices; i++) {
		const struct service *s = &c->services[i];
		char addr[64];

		service_format(s, addr, sizeof(addr));
		fprintf(f, "\n# %s: [service %s], kind %s\n", addr, s->name,
			service_kind_name(s->kind));
		for (j = 0; j < NPOLICY; j++) {
			const struct policy_field *pf = &policy_fields[j];
			unsigned v = policy_get(&s->pol, j);
			char value[24], from[24];

			if (pf->max == 1)
				snprintf(value, sizeof(value), "%s",
					 v ? "yes" : "no");
			else
				snprintf(value, sizeof(value), "%u%s", v,
					 pf->unit_ms == S ? "s" :
					 pf->unit_ms == MS ? "ms" : "");
			if (s->pol_set & (1u << j))
				snprintf(from, sizeof(from), "its own");
			else if (c->pol_set & (1u << j))
				snprintf(from, sizeof(from), "[tcpctd]");
			else
				snprintf(from, sizeof(from), "default, %s",
					 service_kind_name(s->kind));
			fprintf(f, "%-22s = %-8s # %s\n", pf->name, value, from);
		}
	}
}

int
config_check(struct config *c, config_err_cb err, void *arg)
{
	int errors = 0;

	for (unsigned i = 0; i < c->nservices; i++)
		resolve_policy(c, &c->services[i]);
	if (c->limit_slots & (c->limit_slots - 1)) {
		report(err, arg, "configuration", "limit-slots must be a "
		       "power of two");
		errors++;
	}

	if (c->nservices == 0 && c->rules != RULES_REMOVE) {
		report(err, arg, "configuration", "no service to protect: give "
		       "at least one 'protect ADDR:PORT' (or 'upstream "
		       "PREFIX:PORT')");
		errors++;
	}
	for (unsigned i = 0; i < c->nservices; i++) {
		const struct service *s = &c->services[i];

		if (!s->upstream)
			continue;
		/* gateway/upstream.h: the first query, whole, is what the
		 * far server is asked in its SYN. */
		if (s->kind != SERVICE_DNS || !s->pol.delay_bind) {
			report(err, arg, "configuration", "upstream %s: only "
			       "DNS services with delay-bind (for now)",
			       s->name);
			errors++;
		}
	}
	/* The kernel shield answers and carries protected services only:
	 * an upstream flow is the daemon's (for now). */
	if (config_has_upstream(c)) {
		if (c->shield == SHIELD_YES) {
			report(err, arg, "configuration", "upstream services "
			       "need shield no (or auto, which then is no)");
			errors++;
		}
		c->shield = SHIELD_NO;
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
