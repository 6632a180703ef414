/*
 * Just enough DNS for tcpct-query: build a query, print an answer the way
 * kdig does (RFC 1035 §4.1; unknown types as RFC 3597 §5 generic data).
 */
#ifndef CLIENT_DNS_H
#define CLIENT_DNS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

#define DNS_HDR_LEN	12
#define DNS_NAME_MAX	255	/* RFC 1035 §2.3.4 */
#define DNS_QUERY_MAX	512
#define DNS_EDNS_SIZE	1232	/* the DNS flag day 2020 buffer */

enum {
	DNS_TYPE_A = 1, DNS_TYPE_NS = 2, DNS_TYPE_CNAME = 5, DNS_TYPE_SOA = 6,
	DNS_TYPE_PTR = 12, DNS_TYPE_MX = 15, DNS_TYPE_TXT = 16,
	DNS_TYPE_AAAA = 28, DNS_TYPE_OPT = 41,
};

/* The code of a type name ("A", "aaaa", "TYPE65"), or -1. */
int dns_type_code(const char *name);

/* Writes a recursion-desired query for name/type with an EDNS(0) OPT record
 * into buf; returns its length, or 0 when the name is bad or cap too small. */
size_t dns_build_query(uint8_t *buf, size_t cap, const char *name,
		       uint16_t type, uint16_t id);

/* Prints the answer msg (len bytes) to f: the header, question and answer
 * sections like kdig, or only the answers' data with brief.  Returns 0, or
 * -1 when msg is malformed or its id is not id. */
int dns_print(FILE *f, const uint8_t *msg, size_t len, uint16_t id,
	      bool brief);

#endif
