#include "dns.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../nfq/bytes.h"

#define DNS_CLASS_IN	1
#define DNS_FLAG_RD	0x0100
#define DNS_PTR_MASK	0xc0	/* RFC 1035 §4.1.4 compression */
#define DNS_PTR_HOPS	64

static const struct {
	const char *name;
	int code;
} types[] = {
	{ "A", DNS_TYPE_A }, { "NS", DNS_TYPE_NS },
	{ "CNAME", DNS_TYPE_CNAME }, { "SOA", DNS_TYPE_SOA },
	{ "PTR", DNS_TYPE_PTR }, { "MX", DNS_TYPE_MX },
	{ "TXT", DNS_TYPE_TXT }, { "AAAA", DNS_TYPE_AAAA },
};

int
dns_type_code(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(name, types[i].name))
			return types[i].code;
	if (!strncasecmp(name, "TYPE", 4) && name[4]) {
		char *end;
		long v = strtol(name + 4, &end, 10);

		if (!*end && v >= 0 && v <= 0xffff)
			return (int)v;
	}
	return -1;
}

static const char *
type_name(uint16_t code, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].code == code)
			return types[i].name;
	snprintf(buf, len, "TYPE%u", code);
	return buf;
}

size_t
dns_build_query(uint8_t *buf, size_t cap, const char *name, uint16_t type,
		uint16_t id)
{
	size_t n = DNS_HDR_LEN, namelen = strlen(name);
	const char *p = name;

	if (cap < DNS_HDR_LEN + DNS_NAME_MAX + 4 + 11 || namelen > 253)
		return 0;
	memset(buf, 0, DNS_HDR_LEN);
	put16(buf, id);
	put16(buf + 2, DNS_FLAG_RD);
	put16(buf + 4, 1);		/* QDCOUNT */
	put16(buf + 10, 1);		/* ARCOUNT: the OPT record */
	while (*p) {
		size_t l = strcspn(p, ".");

		if (l == 0 || l > 63)
			return 0;
		buf[n++] = (uint8_t)l;
		memcpy(buf + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	buf[n++] = 0;
	put16(buf + n, type);
	put16(buf + n + 2, DNS_CLASS_IN);
	n += 4;
	/* RFC 6891 §6.1.2: root name, OPT, payload size, no flags. */
	buf[n++] = 0;
	put16(buf + n, DNS_TYPE_OPT);
	put16(buf + n + 2, DNS_EDNS_SIZE);
	memset(buf + n + 4, 0, 6);
	n += 10;
	return n;
}

/* Reads the name at *off into out (dotted, with a final dot); returns 0
 * and moves *off past it, or -1. */
static int
read_name(const uint8_t *msg, size_t len, size_t *off, char *out, size_t cap)
{
	size_t pos = *off, o = 0;
	bool jumped = false;
	unsigned hops = 0;

	for (;;) {
		uint8_t l;

		if (pos >= len)
			return -1;
		l = msg[pos];
		if ((l & DNS_PTR_MASK) == DNS_PTR_MASK) {
			if (pos + 1 >= len || ++hops > DNS_PTR_HOPS)
				return -1;
			if (!jumped)
				*off = pos + 2;
			jumped = true;
			pos = (size_t)(get16(msg + pos) & 0x3fff);
			continue;
		}
		if (l & DNS_PTR_MASK)
			return -1;
		pos++;
		if (!l)
			break;
		if (pos + l > len || o + l + 2 > cap)
			return -1;
		memcpy(out + o, msg + pos, l);
		o += l;
		out[o++] = '.';
		pos += l;
	}
	if (!o)
		out[o++] = '.';
	out[o] = '\0';
	if (!jumped)
		*off = pos;
	return 0;
}

static int
print_rdata(FILE *f, const uint8_t *msg, size_t len, size_t off,
	    uint16_t type, uint16_t rdlen)
{
	char name[DNS_NAME_MAX + 2], name2[DNS_NAME_MAX + 2], addr[64];
	size_t p = off, end = off + rdlen;
	uint16_t i;

	switch (type) {
	case DNS_TYPE_A:
		if (rdlen != 4)
			return -1;
		fprintf(f, "%s", inet_ntop(AF_INET, msg + off, addr,
					   sizeof(addr)));
		return 0;
	case DNS_TYPE_AAAA:
		if (rdlen != 16)
			return -1;
		fprintf(f, "%s", inet_ntop(AF_INET6, msg + off, addr,
					   sizeof(addr)));
		return 0;
	case DNS_TYPE_NS:
	case DNS_TYPE_CNAME:
	case DNS_TYPE_PTR:
		if (read_name(msg, len, &p, name, sizeof(name)) < 0)
			return -1;
		fprintf(f, "%s", name);
		return 0;
	case DNS_TYPE_MX:
		if (rdlen < 3)
			return -1;
		p += 2;
		if (read_name(msg, len, &p, name, sizeof(name)) < 0)
			return -1;
		fprintf(f, "%u %s", get16(msg + off), name);
		return 0;
	case DNS_TYPE_SOA:
		if (read_name(msg, len, &p, name, sizeof(name)) < 0 ||
		    read_name(msg, len, &p, name2, sizeof(name2)) < 0 ||
		    p + 20 > end)
			return -1;
		fprintf(f, "%s %s %u %u %u %u %u", name, name2,
			get32(msg + p), get32(msg + p + 4), get32(msg + p + 8),
			get32(msg + p + 12), get32(msg + p + 16));
		return 0;
	case DNS_TYPE_TXT:
		while (p < end) {
			uint8_t l = msg[p++];

			if (p + l > end)
				return -1;
			fprintf(f, "%s\"", p - 1 == off ? "" : " ");
			for (i = 0; i < l; i++) {
				uint8_t c = msg[p + i];

				if (c == '"' || c == '\\')
					fprintf(f, "\\%c", c);
				else if (c < 0x20 || c > 0x7e)
					fprintf(f, "\\%03u", c);
				else
					fputc(c, f);
			}
			fputc('"', f);
			p += l;
		}
		return 0;
	default:
		fprintf(f, "\\# %u", rdlen);
		if (rdlen)
			fputc(' ', f);
		for (i = 0; i < rdlen; i++)
			fprintf(f, "%02X", msg[off + i]);
		return 0;
	}
}

static const char *const rcodes[] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
};

int
dns_print(FILE *f, const uint8_t *msg, size_t len, uint16_t id, bool brief)
{
	char name[DNS_NAME_MAX + 2], tbuf[16];
	size_t off = DNS_HDR_LEN;
	uint16_t qd, an, i, rcode;

	if (len < DNS_HDR_LEN || get16(msg) != id)
		return -1;
	qd = get16(msg + 4);
	an = get16(msg + 6);
	rcode = msg[3] & 0x0f;
	if (!brief)
		fprintf(f, ";; ->>HEADER<<- opcode: QUERY; status: %s; id: %u\n",
			rcode < 6 ? rcodes[rcode] : "RCODE?", id);
	for (i = 0; i < qd; i++) {
		if (read_name(msg, len, &off, name, sizeof(name)) < 0 ||
		    off + 4 > len)
			return -1;
		if (!brief)
			fprintf(f, ";; QUESTION SECTION:\n;; %s\t\tIN\t%s\n",
				name, type_name(get16(msg + off), tbuf,
						sizeof(tbuf)));
		off += 4;
	}
	if (!brief && an)
		fprintf(f, "\n;; ANSWER SECTION:\n");
	for (i = 0; i < an; i++) {
		uint16_t type, rdlen;
		uint32_t ttl;

		if (read_name(msg, len, &off, name, sizeof(name)) < 0 ||
		    off + 10 > len)
			return -1;
		type = get16(msg + off);
		ttl = get32(msg + off + 4);
		rdlen = get16(msg + off + 8);
		off += 10;
		if (off + rdlen > len)
			return -1;
		if (!brief)
			fprintf(f, "%s\t%u\tIN\t%s\t", name, ttl,
				type_name(type, tbuf, sizeof(tbuf)));
		if (print_rdata(f, msg, len, off, type, rdlen) < 0)
			return -1;
		fputc('\n', f);
		off += rdlen;
	}
	return 0;
}
