/*
 * NFQUEUE over libmnl: bind one queue, receive its packets in batches and
 * send their verdicts in batches.
 *
 * A queue owns its netlink socket, its receive buffers and its verdict
 * buffer; all are allocated by queue_open() and nothing else allocates.
 */
#ifndef NFQ_QUEUE_H
#define NFQ_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define QUEUE_RX_BUF	(65536 + 4096)	/* one packet of the 64 KiB copy range */

struct queue_opts {
	uint16_t num;		/* queue number */
	uint32_t maxlen;	/* kernel queue length */
	unsigned batch;		/* packets per receive */
	bool fail_open;		/* NFQA_CFG_F_FAIL_OPEN: accept when full */
	bool gso;		/* NFQA_CFG_F_GSO: GSO packets come up whole */
	int rcvbuf;		/* socket receive buffer, bytes */
};

/* A packet's data may be rewritten in place up to this many bytes (the
 * rest of its receive slot), to answer with a mangled verdict. */
#define QUEUE_PKT_ROOM	2048

struct queue_packet {
	uint32_t id;
	uint16_t hw_proto;	/* ETH_P_IP / ETH_P_IPV6, host order */
	uint8_t hook;
	uint8_t *data;		/* the packet, writable in place */
	size_t len;		/* bytes copied to us */
	bool truncated;		/* the kernel copied less than the packet */
	bool csum_partial;	/* NFQA_SKB_CSUMNOTREADY: the TCP checksum
				 * holds only the pseudo-header sum */
	bool gso;		/* NFQA_SKB_GSO: to be segmented later */
	uint32_t mark;		/* NFQA_MARK: the skb's mark, 0 without */
	uint32_t indev;		/* NFQA_IFINDEX_INDEV: where it came in, 0
				 * for a packet of this host's own */
};

/* A queue as the kernel sees it (/proc/net/netfilter/nfnetlink_queue). */
struct queue_kernel {
	unsigned num;
	unsigned waiting;	/* packets waiting for a verdict */
	unsigned dropped_full, dropped_socket;
	unsigned last_id;	/* packets handed over so far (wraps) */
};

/*
 * Reads the kernel's line for every queue in [first, first + n) into
 * out[0..max), in the kernel's order.  Returns how many, or -1 when the
 * file cannot be read (no queue bound yet, or no /proc).
 */
int queue_kernel_read(unsigned first, unsigned n, struct queue_kernel *out,
		      unsigned max);

struct queue_stats {
	uint64_t rx_packets, rx_batches, rx_errors, rx_enobufs;
	uint64_t verdicts, verdict_bytes, verdict_sends, verdict_errors;
	uint64_t nl_errors;	/* NLMSG_ERROR replies to our verdicts */
};

struct queue {
	struct mnl_socket *nl;
	unsigned portid;
	uint16_t num;
	unsigned batch;
	uint8_t *rx;		/* batch × QUEUE_RX_BUF */
	struct mmsghdr *msgs;
	struct iovec *iov;
	uint8_t *tx;		/* verdict batch */
	size_t tx_len, tx_cap;
	struct queue_stats st;
};

/*
 * Opens and binds queue o->num with copy-packet mode, the given length and
 * flags, NETLINK_NO_ENOBUFS and a large receive buffer.  Returns 0, or -1
 * with errno set (EBUSY: another process holds the queue).
 */
int queue_open(struct queue *q, const struct queue_opts *o);
void queue_close(struct queue *q);

/* The socket's descriptor, for poll(). */
int queue_fd(const struct queue *q);

typedef void (*queue_packet_cb)(struct queue_packet *pkt, void *arg);

/*
 * Receives up to one batch without blocking and calls cb for every packet in
 * arrival order.  Returns the number of packets, 0 when none were waiting,
 * or -1 with errno set on a socket error other than EAGAIN and ENOBUFS.  A
 * truncated netlink datagram is counted as an error, never parsed.
 */
int queue_recv_batch(struct queue *q, queue_packet_cb cb, void *arg);

/*
 * Adds a verdict for packet id to the batch; with data, the packet is
 * replaced by len bytes of data (a mangled accept).  Flushes first when the
 * batch is full.  Verdicts are NF_ACCEPT or NF_DROP.
 */
void queue_verdict(struct queue *q, uint32_t id, int verdict,
		 const uint8_t *data, size_t len);

/* Sends the batched verdicts.  Returns 0 or -1 with errno set. */
int queue_flush(struct queue *q);

#endif
