/*
 * Injection of the packets tcpctd originates, through raw sockets (IPv4
 * IPPROTO_RAW and IPv6 IPPROTO_RAW both carry our own IP header), batched
 * with sendmmsg() and marked with SO_MARK so that no rule queues them again.
 */
#ifndef NFQ_INJECT_H
#define NFQ_INJECT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define INJECT_BATCH	64
#define INJECT_BUF	2048	/* one built segment: headers + ≤ 1 MSS */

struct inject_stats {
	uint64_t sent, errors, flushes;
};

struct inject {
	int fd4, fd6;
	unsigned n;
	uint8_t family[INJECT_BATCH];
	struct sockaddr_in6 to[INJECT_BATCH];
	struct iovec iov[INJECT_BATCH];
	struct mmsghdr msgs[INJECT_BATCH];
	uint8_t buf[INJECT_BATCH][INJECT_BUF];
	struct inject_stats st;
};

/* Opens both raw sockets with the given mark.  Returns 0 or -1 (errno). */
int inject_open(struct inject *ij, uint32_t mark);
void inject_close(struct inject *ij);

/* The buffer for the next packet (INJECT_BUF bytes); flushes when full. */
uint8_t *inject_slot(struct inject *ij);

/* Queues the packet built in the current slot: len bytes of family. */
void inject_commit(struct inject *ij, uint8_t family, size_t len);

/* Sends what is queued.  Returns the number of packets that failed. */
unsigned inject_flush(struct inject *ij);

#endif
