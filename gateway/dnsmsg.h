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
