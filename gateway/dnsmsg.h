/*
 * DNS messages as a TCP service carries them (RFC 1035 §4.1, RFC 7766 §8):
 * just enough to tell a query from garbage, to give the backend leg of a
 * TCPCT transaction a large EDNS buffer, and to accept its answer.  Every
 * read is bounded by the message length.
 */
#ifndef GATEWAY_DNSMSG_H
#define GATEWAY_DNSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNSMSG_HDR_LEN		12
#define DNSMSG_EDNS_MIN		1232	/* DNS flag day 2020 */
#define DNSMSG_LEN_PREFIX	2	/* RFC 7766 §8 */

/* What a client's message is judged by: its first bytes, the length and
 * header bytes 2..5 (flags, QDCOUNT).  Its question is walked only to
 * tell a zone transfer. */
#define DNSFRAME_JUDGED		(DNSMSG_LEN_PREFIX + 6)

/*
 * One half of a DNS-over-TCP connection, followed as it goes by: every
 * message is a 2-byte length and that many bytes (RFC 7766 §8).  A
 * client's must be ones a client sends; a server's are only counted.  Fed
 * the stream's bytes in order.
 */
struct dnsframe {
	uint32_t pos;		/* bytes of the current message seen, its
				 * length included; 0 between messages */
	uint16_t len;		/* its length, once pos >= 2 */
	uint8_t flags[4];	/* its header bytes 2..5: flags, QDCOUNT */
	bool server;		/* the server's half: not judged */
	bool xfr;		/* a client asked for a zone transfer, whose
				 * answer is many messages */
	uint8_t qstate;		/* where in a query's question (dnsmsg.c) */
	uint8_t qleft;		/* bytes left of its current label */
	uint16_t qtype;
	uint32_t started;	/* messages begun */
};

enum dnsframe_verdict {
	DNSFRAME_OK,
	DNSFRAME_SHORT,		/* a length under a header's 12 bytes */
	DNSFRAME_NOT_REQUEST,	/* an answer, or no opcode a client sends */
};

enum dnsframe_verdict dnsframe_feed(struct dnsframe *d, const uint8_t *b,
				    size_t n);

/* In the middle of a message (its timeout runs). */
static inline bool
dnsframe_mid(const struct dnsframe *d)
{
	return d->pos != 0;
}

/* Messages seen whole. */
static inline uint32_t
dnsframe_whole(const struct dnsframe *d)
{
	return d->started - (d->pos != 0);
}

/* A client's stream that begins with b, n bytes, holds a whole request. */
bool dnsframe_begins_whole(const uint8_t *b, size_t n);

/* Header bytes 2..5 of a message a client may send: QR 0, and QUERY,
 * NOTIFY or UPDATE with one question (zone) or DSO with none. */
bool dnsmsg_is_request(const uint8_t flags[4]);

/* A standard query: header, QR 0, opcode QUERY, one question. */
bool dnsmsg_is_query(const uint8_t *msg, size_t len);

/*
 * Raises the UDP payload size of msg's OPT record (RFC 6891 §6.1.2) to at
 * least size.  Returns 1 when msg has one, 0 when it has none, -1 when it
 * cannot be walked.
 */
int dnsmsg_edns_at_least(uint8_t *msg, size_t len, uint16_t size);

/* An answer to query id that is complete: QR 1, TC 0. */
bool dnsmsg_is_whole_answer(const uint8_t *msg, size_t len, uint16_t id);

#endif
