#include "probe.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PACK_KNOWN	(1u << 31)
#define PACK_WS		(1u << 20)
#define PACK_SACK	(1u << 21)
#define PACK_TS		(1u << 22)
#define PACK_ECN	(1u << 23)
#define PACK_WSHIFT	16
#define TS_OPTION_SPACE	12	/* NOP NOP TS: what mss_cache leaves out */

uint32_t
profile_pack(const struct profile *p)
{
	if (!p->known)
		return 0;
	return PACK_KNOWN | p->mss | (uint32_t)(p->wscale & 0xf) << PACK_WSHIFT |
	       (p->ws ? PACK_WS : 0) | (p->sack ? PACK_SACK : 0) |
	       (p->ts ? PACK_TS : 0) | (p->ecn ? PACK_ECN : 0);
}

void
profile_unpack(uint32_t w, uint8_t family, struct profile *p)
{
	memset(p, 0, sizeof(*p));
	if (!(w & PACK_KNOWN)) {
		/* Until a probe succeeds: the RFC 9293 §3.7.1 default MSS
		 * and no options, which every TCP honours. */
		p->mss = family == AF_INET ? 536 : 1220;
		return;
	}
	p->known = true;
	p->mss = (uint16_t)w;
	p->wscale = (uint8_t)((w >> PACK_WSHIFT) & 0xf);
	p->ws = w & PACK_WS;
	p->sack = w & PACK_SACK;
	p->ts = w & PACK_TS;
	p->ecn = w & PACK_ECN;
}

int
probe_start(struct probe *pr, const struct service *s, uint64_t deadline_ms)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int fd;

	pr->fd = -1;
	memset(&ss, 0, sizeof(ss));
	if (s->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(s->port);
		memcpy(&sin->sin_addr, s->addr.b, 4);
		sslen = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(s->port);
		memcpy(&sin6->sin6_addr, s->addr.b, 16);
		sslen = sizeof(*sin6);
	}
	fd = socket(s->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, sslen) < 0 &&
	    errno != EINPROGRESS) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	pr->fd = fd;
	pr->deadline_ms = deadline_ms;
	return 0;
}

/* Reads what the handshake negotiated off a connected socket. */
static int
read_profile(int fd, struct profile *p)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return -1;
	memset(p, 0, sizeof(*p));
	p->known = true;
	p->ts = ti.tcpi_options & TCPI_OPT_TIMESTAMPS;
	p->sack = ti.tcpi_options & TCPI_OPT_SACK;
	p->ws = ti.tcpi_options & TCPI_OPT_WSCALE;
	p->wscale = p->ws ? ti.tcpi_snd_wscale : 0;
	p->ecn = ti.tcpi_options & TCPI_OPT_ECN;
	/* mss_cache is the peer's MSS less the timestamp option. */
	p->mss = (uint16_t)(ti.tcpi_snd_mss + (p->ts ? TS_OPTION_SPACE : 0));
	return 0;
}

int
probe_finish(struct probe *pr, uint64_t now_ms, struct profile *p)
{
	struct pollfd pfd = { .fd = pr->fd, .events = POLLOUT };
	socklen_t len;
	int err = 0, rc = -1;

	if (pr->fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (poll(&pfd, 1, 0) < 0)
		err = errno;
	else if (!pfd.revents && now_ms < pr->deadline_ms)
		return 0;
	else if (!pfd.revents)
		err = ETIMEDOUT;
	else {
		len = sizeof(err);
		if (getsockopt(pr->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 ||
		    (!err && read_profile(pr->fd, p) < 0))
			err = errno;
	}
	close(pr->fd);
	pr->fd = -1;
	if (!err)
		rc = 1;
	errno = err;
	return rc;
}

void
probe_cancel(struct probe *pr)
{
	if (pr->fd >= 0)
		close(pr->fd);
	pr->fd = -1;
}
