#include "queue.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

/* Room for one verdict header plus its attributes, without the payload. */
#define VERDICT_HDR_ROOM	256

static int
send_config(struct queue *q, struct nlmsghdr *nlh)
{
	uint8_t buf[MNL_SOCKET_BUFFER_SIZE];
	uint32_t seq = nlh->nlmsg_seq;
	ssize_t n;

	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(q->nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	n = mnl_socket_recvfrom(q->nl, buf, sizeof(buf));
	if (n < 0)
		return -1;
	return mnl_cb_run(buf, (size_t)n, seq, q->portid, NULL, NULL) < 0
		? -1 : 0;
}

int
queue_open(struct queue *q, const struct queue_opts *o)
{
	uint8_t buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	uint32_t flags;
	int one = 1, err;
	unsigned i;

	memset(q, 0, sizeof(*q));
	q->num = o->num;
	q->batch = o->batch ? o->batch : 32;
	q->nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!q->nl)
		return -1;
	if (mnl_socket_bind(q->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		goto fail;
	q->portid = mnl_socket_get_portid(q->nl);

	/* An overflowing receive queue must cost packets, not the loop. */
	mnl_socket_setsockopt(q->nl, NETLINK_NO_ENOBUFS, &one, sizeof(one));
	if (o->rcvbuf > 0 &&
	    setsockopt(mnl_socket_get_fd(q->nl), SOL_SOCKET, SO_RCVBUFFORCE,
		       &o->rcvbuf, sizeof(o->rcvbuf)) < 0)
		setsockopt(mnl_socket_get_fd(q->nl), SOL_SOCKET, SO_RCVBUF,
			   &o->rcvbuf, sizeof(o->rcvbuf));

	q->tx_cap = (size_t)q->batch * (QUEUE_RX_BUF + VERDICT_HDR_ROOM);
	{
		int sndbuf = (int)q->tx_cap + 65536;
		if (setsockopt(mnl_socket_get_fd(q->nl), SOL_SOCKET,
			       SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
			setsockopt(mnl_socket_get_fd(q->nl), SOL_SOCKET,
				   SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	q->rx = malloc((size_t)q->batch * QUEUE_RX_BUF);
	q->msgs = calloc(q->batch, sizeof(*q->msgs));
	q->iov = calloc(q->batch, sizeof(*q->iov));
	q->tx = malloc(q->tx_cap);
	if (!q->rx || !q->msgs || !q->iov || !q->tx) {
		errno = ENOMEM;
		goto fail;
	}
	for (i = 0; i < q->batch; i++) {
		q->iov[i].iov_base = q->rx + (size_t)i * QUEUE_RX_BUF;
		q->iov[i].iov_len = QUEUE_RX_BUF;
		q->msgs[i].msg_hdr.msg_iov = &q->iov[i];
		q->msgs[i].msg_hdr.msg_iovlen = 1;
	}

	nlh = nfq_nlmsg_put((char *)buf, NFQNL_MSG_CONFIG, q->num);
	nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
	if (send_config(q, nlh) < 0)
		goto fail;

	nlh = nfq_nlmsg_put((char *)buf, NFQNL_MSG_CONFIG, q->num);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, 0xffff);
	if (o->maxlen)
		nfq_nlmsg_cfg_put_qmaxlen(nlh, o->maxlen);
	/*
	 * With NFQA_CFG_F_GSO a GSO packet comes up whole, its checksum left
	 * for the kernel to finish (NFQA_SKB_CSUMNOTREADY), and is translated
	 * once instead of once per segment.  The copy range only bounds what
	 * is copied: the kernel copies min(range, length), so a SYN costs its
	 * own size.  A packet longer than the range arrives truncated and is
	 * refused by the caller (the sender's GSO limit keeps them below it).
	 */
	flags = o->fail_open ? NFQA_CFG_F_FAIL_OPEN : 0;
	if (o->gso)
		flags |= NFQA_CFG_F_GSO;
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK,
			 htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO));
	if (send_config(q, nlh) < 0)
		goto fail;
	return 0;
fail:
	err = errno;
	queue_close(q);
	errno = err;
	return -1;
}

void
queue_close(struct queue *q)
{
	if (q->nl)
		mnl_socket_close(q->nl);
	free(q->rx);
	free(q->msgs);
	free(q->iov);
	free(q->tx);
	memset(q, 0, sizeof(*q));
}

int
queue_fd(const struct queue *q)
{
	return mnl_socket_get_fd(q->nl);
}

static void
handle_msg(struct queue *q, const struct nlmsghdr *nlh, queue_packet_cb cb,
	   void *arg)
{
	struct nlattr *attr[NFQA_MAX + 1] = { 0 };
	struct nfqnl_msg_packet_hdr ph;
	struct queue_packet pkt;

	if (nlh->nlmsg_type == NLMSG_ERROR) {
		q->st.nl_errors++;
		return;
	}
	if (NFNL_MSG_TYPE(nlh->nlmsg_type) != NFQNL_MSG_PACKET)
		return;
	if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR] ||
	    mnl_attr_get_payload_len(attr[NFQA_PACKET_HDR]) < sizeof(ph)) {
		q->st.rx_errors++;
		return;
	}
	memcpy(&ph, mnl_attr_get_payload(attr[NFQA_PACKET_HDR]), sizeof(ph));
	memset(&pkt, 0, sizeof(pkt));
	pkt.id = ntohl(ph.packet_id);
	pkt.hw_proto = ntohs(ph.hw_protocol);
	pkt.hook = ph.hook;
	if (attr[NFQA_PAYLOAD]) {
		pkt.data = mnl_attr_get_payload(attr[NFQA_PAYLOAD]);
		pkt.len = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
	}
	if (attr[NFQA_CAP_LEN] &&
	    mnl_attr_validate(attr[NFQA_CAP_LEN], MNL_TYPE_U32) == 0 &&
	    ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN])) > pkt.len)
		pkt.truncated = true;
	if (attr[NFQA_SKB_INFO] &&
	    mnl_attr_validate(attr[NFQA_SKB_INFO], MNL_TYPE_U32) == 0) {
		uint32_t info = ntohl(mnl_attr_get_u32(attr[NFQA_SKB_INFO]));

		pkt.csum_partial = info & NFQA_SKB_CSUMNOTREADY;
		pkt.gso = info & NFQA_SKB_GSO;
	}
	if (attr[NFQA_MARK] &&
	    mnl_attr_validate(attr[NFQA_MARK], MNL_TYPE_U32) == 0)
		pkt.mark = ntohl(mnl_attr_get_u32(attr[NFQA_MARK]));
	if (attr[NFQA_IFINDEX_INDEV] &&
	    mnl_attr_validate(attr[NFQA_IFINDEX_INDEV], MNL_TYPE_U32) == 0)
		pkt.indev = ntohl(mnl_attr_get_u32(attr[NFQA_IFINDEX_INDEV]));
	q->st.rx_packets++;
	cb(&pkt, arg);
}

int
queue_recv_batch(struct queue *q, queue_packet_cb cb, void *arg)
{
	int n, i, pkts = 0;

	n = recvmmsg(queue_fd(q), q->msgs, q->batch, MSG_DONTWAIT, NULL);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		if (errno == ENOBUFS) {
			q->st.rx_enobufs++;
			return 0;
		}
		q->st.rx_errors++;
		return -1;
	}
	q->st.rx_batches++;
	for (i = 0; i < n; i++) {
		struct msghdr *mh = &q->msgs[i].msg_hdr;
		const struct nlmsghdr *nlh = q->iov[i].iov_base;
		int len = (int)q->msgs[i].msg_len;

		if (mh->msg_flags & MSG_TRUNC) {
			q->st.rx_errors++;
			continue;
		}
		while (mnl_nlmsg_ok(nlh, len)) {
			handle_msg(q, nlh, cb, arg);
			pkts++;
			nlh = mnl_nlmsg_next(nlh, &len);
		}
	}
	return pkts;
}

void
queue_verdict(struct queue *q, uint32_t id, int verdict,
	    const uint8_t *data, size_t len)
{
	struct nlmsghdr *nlh;

	if (q->tx_len + VERDICT_HDR_ROOM + MNL_ALIGN(len) > q->tx_cap)
		queue_flush(q);
	nlh = nfq_nlmsg_put((char *)q->tx + q->tx_len, NFQNL_MSG_VERDICT, q->num);
	nfq_nlmsg_verdict_put(nlh, (int)id, verdict);
	if (data)
		nfq_nlmsg_verdict_put_pkt(nlh, data, (uint32_t)len);
	q->tx_len += nlh->nlmsg_len;
	q->st.verdicts++;
}

int
queue_flush(struct queue *q)
{
	ssize_t n;

	if (!q->tx_len)
		return 0;
	n = mnl_socket_sendto(q->nl, q->tx, q->tx_len);
	q->st.verdict_sends++;
	q->st.verdict_bytes += q->tx_len;
	q->tx_len = 0;
	if (n < 0) {
		q->st.verdict_errors++;
		return -1;
	}
	return 0;
}

int
queue_kernel_read(unsigned first, unsigned n, struct queue_kernel *out,
		  unsigned max)
{
	unsigned num, portid, waiting, mode, range, qdropped, udropped, seq;
	char line[256];
	/* /proc/self/net: with ProcSubset=pid, /proc/net is hidden. */
	FILE *in = fopen("/proc/self/net/netfilter/nfnetlink_queue", "re");
	unsigned got = 0;

	if (!in)
		return -1;
	while (got < max && fgets(line, sizeof(line), in)) {
		if (sscanf(line, "%u %u %u %u %u %u %u %u", &num, &portid,
			   &waiting, &mode, &range, &qdropped, &udropped,
			   &seq) != 8 ||
		    num < first || num - first >= n)
			continue;
		out[got++] = (struct queue_kernel){
			.num = num, .waiting = waiting,
			.dropped_full = qdropped, .dropped_socket = udropped,
			.last_id = seq,
		};
	}
	fclose(in);
	return (int)got;
}
