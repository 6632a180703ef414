/*
 * One TCP connection in user space, over raw sockets: the project's TCPCT
 * initiator (RFC 6013), since no kernel ships one.
 *
 * Segments go out through an IPPROTO_RAW socket and come in through an
 * AF_PACKET socket (both families, whole IP packets).  The kernel, which
 * knows nothing of the connection, would answer the peer's segments with
 * RSTs; a rule that drops RSTs from our port is installed for the life of
 * the connection, and a bound TCP socket keeps the port ours.
 *
 * With TCPCT the SYN carries a Cookie option; a SYN-ACK with a responder
 * cookie makes the connection a TCPCT one (third packet with TSX, the pair
 * and the SYN's options repeated; FIN, RST and the last ACK guarded by the
 * pair, and the peer's checked against it).  A SYN-ACK without a cookie
 * means a server that ignores TCPCT: the connection goes on as plain TCP.
 *
 * The receiver reassembles in its ring (out-of-order ranges are kept where
 * they belong and SACKed); the sender retransmits on timeout (go-back-N)
 * and on three duplicate ACKs.  In every state after the handshake, our FIN
 * sent or not, a segment is taken only under RFC 9293 §3.10.7.4 and RFC
 * 5961 (its sequence number in our window, a RST at exactly rcv_nxt, an
 * ACK of nothing we did not send); the rest is answered with an ACK or
 * dropped.  Our FIN rides on the last data segment when both are queued,
 * as Linux sends it.  Enough for a DNS exchange or a bulk copy in a lab,
 * not a general stack.
 */
#ifndef CLIENT_UTCP_H
#define CLIENT_UTCP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nfq/pkt.h"
#include "../nfq/tcpct.h"

#define UTCP_RBUF	(1u << 20)	/* receive ring; the window */
#define UTCP_SBUF	(1u << 20)	/* send ring */
#define UTCP_RANGES	32		/* out-of-order ranges kept */
#define UTCP_WSCALE	5		/* our shift: 2^20 >> 5 fits 16 bits */

enum utcp_state {
	UTCP_CLOSED = 0,
	UTCP_SYN_SENT,
	UTCP_ESTABLISHED,
	UTCP_FIN_WAIT1,		/* our FIN sent, not acked */
	UTCP_FIN_WAIT2,		/* our FIN acked, theirs awaited */
	UTCP_CLOSE_WAIT,	/* their FIN in, ours not sent */
	UTCP_LAST_ACK,		/* their FIN in, ours sent */
	UTCP_CLOSING,		/* both FINs sent, ours not acked */
	UTCP_TIME_WAIT,
	UTCP_RESET,
};

struct utcp_opts {
	bool tcpct;		/* offer TCPCT (a Cookie option) */
	unsigned clen;		/* initiator cookie size, 8..16 */
	bool syn_data;		/* send the first write's bytes in the SYN */
	bool sack, ts, ws;	/* options to offer */
	unsigned timeout_ms;	/* give up on a silent peer after this */
	unsigned syn_tries;	/* SYNs sent before giving up */
	int verbose;
	const char *iptables, *ip6tables;
	bool no_rule;		/* the caller holds a broad rule */
	int rx_fd;		/* > 0: a shared packet socket (utcp_shared_rx) */
	const char *laddr;	/* our address (numeric); NULL: the routed one */
	uint16_t lport;		/* our port; 0: the kernel picks */
	/* Tests: every segment as built, before it is sent (if there is a
	 * socket: utcp_init has none). */
	void (*tap)(void *arg, const uint8_t *pkt, size_t len);
	void *tap_arg;
};

struct utcp_range {
	uint32_t start, end;	/* [start, end) beyond rcv_nxt */
};

struct utcp_stats {
	unsigned long segs_out, segs_in, retrans, dup_acks, bad_csum,
		ooo, unguarded, syn_sent;
	bool syn_data_acked;	/* the server took the SYN's data */
	bool synack_fin;	/* the SYN-ACK carried a FIN */
	unsigned long synack_data;	/* bytes in the SYN-ACK */
};

struct utcp {
	struct utcp_opts o;
	uint8_t family;
	struct inaddr laddr, raddr;
	uint16_t lport, rport;
	int tx, rx, portsock;
	bool rule;		/* our RST-drop rule is installed */
	char rulespec[160];

	enum utcp_state state;
	bool tcpct;		/* negotiated */
	bool verified;		/* the peer has sent since its SYN-ACK */
	bool ts, sack;		/* negotiated */
	uint8_t snd_ws, rcv_ws;	/* shifts: theirs, ours */
	uint16_t mss;		/* theirs */
	unsigned clen;
	uint8_t ci[TCPCT_COOKIE_MAX], cr[TCPCT_COOKIE_MAX];

	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wnd;
	uint32_t snd_wl1, snd_wl2;	/* seq and ack of the last window taken */
	uint32_t max_snd_wnd;	/* RFC 5961 §5.2: the largest window seen */
	uint32_t irs, rcv_nxt;
	uint32_t ts_recent, ts_base;
	uint64_t t0_ms;

	uint8_t *sbuf;		/* bytes from snd_una on */
	size_t slen;
	bool fin_queued, fin_sent, fin_acked;
	uint32_t fin_seq;
	uint32_t syn_len;	/* data bytes sent in the SYN */
	uint8_t *rbuf;		/* ring; bytes from rcv_nxt − rlen on */
	size_t rhead, rlen;	/* readable bytes start at rhead */
	struct utcp_range ranges[UTCP_RANGES];
	unsigned nranges;
	bool peer_fin, peer_fin_pending;
	uint32_t peer_fin_seq;

	uint64_t rto_at;	/* ms; 0: no timer */
	unsigned rto_ms;
	unsigned dupacks;
	uint64_t last_rx_ms;
	struct utcp_stats st;
};

/*
 * Resolves host:port, picks our address and a port, opens the sockets and
 * installs the RST-drop rule.  family is AF_INET, AF_INET6 or AF_UNSPEC.
 * Returns 0, or -1 with a message in err.
 */
int utcp_open(struct utcp *u, const char *host, const char *port, int family,
	      const struct utcp_opts *o, char *err, size_t errlen);

/*
 * Many connections in a row to one server (the tools' -n): one packet
 * socket for all of them (closing one costs an RCU grace period) and, per
 * local address, one broad RST rule (every RST from it to the server's
 * port).  Each connection takes the next local port of the range in turn,
 * then the next address, so that no 4-tuple repeats before the range is
 * used up on every address: a peer's TIME-WAIT for one is never reopened.
 */
#define UTCP_BATCH_ADDRS	8u

struct utcp_batch {
	const char *host, *port;
	int family;
	struct utcp_opts o;		/* each connection's */
	struct utcp rule[UTCP_BATCH_ADDRS];	/* addresses of each rule */
	const char *laddrs[UTCP_BATCH_ADDRS];
	unsigned naddrs, addr;
	uint16_t port_lo, port_hi;
	unsigned long wrapped;		/* times every tuple was used */
};

/*
 * Opens the shared socket and installs the rules, for laddrs (naddrs of
 * them; none: the routed address).  Ports come from port_lo..port_hi.
 * Returns 0, or -1 with a message in err and nothing left installed.
 */
int utcp_batch_begin(struct utcp_batch *b, const char *host, const char *port,
		     int family, const struct utcp_opts *o,
		     const char *const *laddrs, unsigned naddrs,
		     uint16_t port_lo, uint16_t port_hi, char *err,
		     size_t errlen);

/* utcp_open for the batch's next tuple (a port in use is skipped). */
int utcp_batch_open(struct utcp_batch *b, struct utcp *u, char *err,
		    size_t errlen);

/* Removes the rules and closes the shared socket. */
void utcp_batch_end(struct utcp_batch *b);

/* The kernel's ephemeral port range here (ip_local_port_range). */
void utcp_port_range(uint16_t *lo, uint16_t *hi);

/* Set by SIGINT or SIGTERM once utcp_catch_signals() ran: utcp_run then
 * gives up, and the caller's utcp_close() removes the rule. */
extern volatile sig_atomic_t utcp_stop;
void utcp_catch_signals(void);

/*
 * What utcp_open does but the sockets, the rule and the randomness, for
 * tests and fuzz_utcp: a connection from laddr:lport to raddr:rport
 * (family's addresses) with o; iss, ts_base and ci are 0 until the caller
 * sets them.  Segments go to o->tap; what arrives is handed over with
 * utcp_input.  u is zeroed, or what an earlier utcp_init left (its rings
 * are taken again: 2 MiB not allocated anew for each connection).
 * Returns 0, or -1 (out of memory).
 */
int utcp_init(struct utcp *u, uint8_t family, const struct inaddr *laddr,
	      uint16_t lport, const struct inaddr *raddr, uint16_t rport,
	      const struct utcp_opts *o);

/* One IP packet that arrived (its TCP checksum already checked when
 * csum_known): parsed, and taken if it is the connection's. */
void utcp_input(struct utcp *u, uint8_t *buf, size_t len, bool csum_known);

/* Removes the rule and closes everything.  Safe to call twice. */
void utcp_close(struct utcp *u);

/* Queues bytes to send (before utcp_connect: they go in the SYN with
 * syn_data, or in the third packet).  Returns the bytes taken. */
size_t utcp_write(struct utcp *u, const void *buf, size_t len);

/* Queues our FIN after the queued bytes. */
void utcp_shutdown(struct utcp *u);

/*
 * Sends the SYN and runs until the connection is established.  Returns 0,
 * or -1 with a message in err (refused, timed out).
 */
int utcp_connect(struct utcp *u, char *err, size_t errlen);

/* Only sends the SYN: the connection is in SYN-SENT, and utcp_run or
 * utcp_input move it on. */
void utcp_start(struct utcp *u);

/*
 * Handles what arrived and what is due for up to wait_ms.  Returns 0, or -1
 * when the peer reset the connection or went silent for timeout_ms.
 */
int utcp_run(struct utcp *u, int wait_ms);

/* Takes up to len received bytes.  Returns the count (0: none yet). */
size_t utcp_read(struct utcp *u, void *buf, size_t len);

/* True once the peer's FIN has arrived and every byte before it is read. */
bool utcp_eof(const struct utcp *u);

/*
 * True when the connection needs nothing more from the caller: both
 * directions closed (TIME-WAIT or beyond) and every byte received read, or
 * reset (what came before the RST is still there to read; utcp_eof says
 * whether the peer's FIN came first).  A caller that loops until done
 * reads the whole answer, also when it came with the peer's FIN after ours.
 */
bool utcp_done(const struct utcp *u);

/* A pollable descriptor that becomes readable when a packet arrives. */
int utcp_fd(const struct utcp *u);

const char *utcp_state_name(enum utcp_state s);

/* The monotonic clock in microseconds. */
uint64_t utcp_now_us(void);

#endif
