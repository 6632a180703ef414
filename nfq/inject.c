#include "inject.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int
inject_open(struct inject *ij, uint32_t mark)
{
	int err;

	memset(ij, 0, sizeof(*ij));
	ij->fd4 = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	ij->fd6 = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (ij->fd4 < 0 || ij->fd6 < 0)
		goto fail;
	if (mark &&
	    (setsockopt(ij->fd4, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0 ||
	     setsockopt(ij->fd6, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0))
		goto fail;
	return 0;
fail:
	err = errno;
	inject_close(ij);
	errno = err;
	return -1;
}

void
inject_close(struct inject *ij)
{
	if (ij->fd4 > 0)
		close(ij->fd4);
	if (ij->fd6 > 0)
		close(ij->fd6);
	ij->fd4 = ij->fd6 = -1;
}

uint8_t *
inject_slot(struct inject *ij)
{
	if (ij->n == INJECT_BATCH)
		inject_flush(ij);
	return ij->buf[ij->n];
}

void
inject_commit(struct inject *ij, uint8_t family, size_t len)
{
	struct sockaddr_in6 *to = &ij->to[ij->n];
	const uint8_t *ip = ij->buf[ij->n];

	memset(to, 0, sizeof(*to));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)to;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, ip + 16, 4);
	} else {
		to->sin6_family = AF_INET6;
		memcpy(&to->sin6_addr, ip + 24, 16);
	}
	ij->family[ij->n] = family;
	ij->iov[ij->n].iov_base = ij->buf[ij->n];
	ij->iov[ij->n].iov_len = len;
	ij->n++;
}

/* sendmmsg() takes one socket: send each run of one family in one call. */
static unsigned
send_run(struct inject *ij, unsigned from, unsigned to)
{
	int fd = ij->family[from] == AF_INET ? ij->fd4 : ij->fd6;
	socklen_t alen = ij->family[from] == AF_INET
		? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	unsigned i, failed = 0;

	for (i = from; i < to; i++) {
		memset(&ij->msgs[i], 0, sizeof(ij->msgs[i]));
		ij->msgs[i].msg_hdr.msg_name = &ij->to[i];
		ij->msgs[i].msg_hdr.msg_namelen = alen;
		ij->msgs[i].msg_hdr.msg_iov = &ij->iov[i];
		ij->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (from < to) {
		int n = sendmmsg(fd, &ij->msgs[from], to - from, MSG_DONTWAIT);
		if (n <= 0) {
			/* Skip the packet that failed; the peer retransmits. */
			if (n < 0 && errno == EINTR)
				continue;
			failed++;
			from++;
			continue;
		}
		from += (unsigned)n;
		ij->st.sent += (uint64_t)n;
	}
	return failed;
}

unsigned
inject_flush(struct inject *ij)
{
	unsigned i, start = 0, failed = 0;

	if (!ij->n)
		return 0;
	for (i = 1; i <= ij->n; i++)
		if (i == ij->n || ij->family[i] != ij->family[start]) {
			failed += send_run(ij, start, i);
			start = i;
		}
	ij->st.errors += failed;
	ij->st.flushes++;
	ij->n = 0;
	return failed;
}
