/*
 * A gateway on the test bench: one worker with its tables and keys but no
 * queue or raw socket, driven segment by segment through worker_packet().
 * Verdicts are read back from the worker's verdict buffer and injected
 * segments from its injection batch, so a test sees exactly what the
 * kernel would have been handed.
 */
#ifndef TESTS_UNIT_TESTGW_H
#define TESTS_UNIT_TESTGW_H

#include <stdbool.h>
#include <stdint.h>

#include "../../gateway/dispatch.h"
#include "../../gateway/worker.h"

#include <linux/netfilter.h>

#define TGW_OUT_MAX	INJECT_BATCH
#define TGW_NOW_S	864000u		/* a wall clock far from 0 */
#define TGW_BACKEND_WS	7		/* the backend's profile */
#define TGW_BACKEND_MSS	1460

struct tgw_out {
	uint8_t buf[INJECT_BUF];
	bool udp;			/* a datagram (o is not filled) */
	struct pkt p;
	struct tcpopt o;
};

struct tgw {
	struct config cfg;
	struct keys_master master;
	struct gateway gw;
	struct worker w;
	/* A second worker on the same gateway (id 1, tgw_second_worker),
	 * and the one that tgw_send and tgw_advance drive. */
	struct worker w1;
	bool has_w1;
	struct worker *drive;
	struct queue q;
	uint8_t tx[1 << 16];

	/* The window scale of the test client's SYNs (tgw_handshake): 7
	 * unless set. */
	uint8_t client_ws;
	/* The mark of the packets handed over (NFQA_MARK), 0 unless set. */
	uint32_t mark;
	/* The interface they came in by (NFQA_IFINDEX_INDEV), 0 unless set. */
	uint32_t indev;
	/* The last segment's verdict and, when mangled, the packet. */
	int verdict;			/* NF_DROP or NF_ACCEPT */
	bool mangled;
	struct tgw_out fwd;

	/* What the worker injected since the last tgw_send / tgw_advance. */
	struct tgw_out out[TGW_OUT_MAX];
	unsigned nout;
};

/* A gateway for the options given as name, value pairs, NULL-ended ("protect",
 * "192.0.2.2:53", ...); fails the test when one is refused. */
struct tgw *tgw_new(const char *const *opts);
void tgw_free(struct tgw *g);

/* The same, its worker set up with the kernel shield sh as the daemon's
 * are (its flow table's records and live tuples the shield's, and with
 * kernel-flows its events ring). */
struct tgw *tgw_new_shielded(const char *const *opts, struct shield *sh);

/* A segment as a peer sends it. */
struct tgw_seg {
	bool from_backend;
	uint16_t cport;			/* the client's port */
	uint16_t service;		/* index into cfg.services */
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	bool ts;
	uint32_t tsval, tsecr;
	uint16_t mss;			/* SYNs: 0 for none */
	int8_t wscale;			/* SYNs: -1 for none */
	bool sack_perm;
	const uint8_t *pay;
	uint16_t paylen;
};

/* Hands s to worker_packet; fills verdict, fwd (when mangled) and out. */
void tgw_send(struct tgw *g, const struct tgw_seg *s);

/* The IP packet tgw_send would hand over for s, into buf of cap bytes:
 * its length (the test fails when it does not fit). */
size_t tgw_build(const struct tgw *g, const struct tgw_seg *s, uint8_t *buf,
		 size_t cap);

/* The same for a packet built by the test (len bytes of IP packet). */
void tgw_send_raw(struct tgw *g, const uint8_t *buf, size_t len);

/* Makes worker 1 on the gateway (fails the test when it cannot); then
 * tgw_drive(g, 1) hands it the packets and timers, tgw_drive(g, 0) worker
 * 0 again.  The two share the limits, keys and configuration, as a
 * daemon's workers do; each keeps its own tables. */
void tgw_second_worker(struct tgw *g);
void tgw_drive(struct tgw *g, unsigned worker);

/* Moves the clocks on by ms and runs the timers; fills out. */
void tgw_advance(struct tgw *g, unsigned ms);

/* The first TCP segment of out towards the backend (to_backend) or the
 * client with all of flags set, from index *from on (NULL: 0); NULL when
 * there is none.  *from is left after it. */
const struct tgw_out *tgw_find(const struct tgw *g, bool to_backend,
			       uint8_t flags, unsigned *from);

/* One connection as the tests' peers see it. */
struct tgw_conn {
	uint16_t cport;
	uint16_t service;
	uint32_t cisn, gisn, bisn;
	uint32_t c_tsval;		/* the client's next TSval */
	uint32_t g_tsval;		/* the latest TSval it got */
	uint32_t b_tsval;		/* the backend's next TSval */
	uint32_t c_nxt, b_nxt;		/* each side's next seq, own space */
	uint32_t b_base;		/* client-space seq of bisn + 1 */
	uint32_t b_ack;			/* the backend's latest ACK */
};

/* SYN with MSS, window scale client_ws, SACK and timestamps; the cookie SYN-ACK;
 * the ACK.  Fills c; fails the test when a step goes wrong.
 * tgw_try_handshake is the same for a client that may be refused at its
 * ACK: whether it has a flow then. */
void tgw_handshake(struct tgw *g, struct tgw_conn *c, uint16_t cport,
		   uint32_t cisn);
bool tgw_try_handshake(struct tgw *g, struct tgw_conn *c, uint16_t cport,
		       uint32_t cisn);
/* The same with a client of service (index into cfg.services; the
 * others' is service 0). */
void tgw_handshake_to(struct tgw *g, struct tgw_conn *c, uint16_t service,
		      uint16_t cport, uint32_t cisn);

/* The backend answers the SYN it was sent (in out) with a SYN-ACK of ISN
 * bisn; fails the test when out holds no SYN for it. */
void tgw_backend_accept(struct tgw *g, struct tgw_conn *c, uint32_t bisn);

/* Data (or a bare ACK, or a FIN with flags) from one side, with the
 * conn's numbers; advances that side's seq. */
void tgw_client_data(struct tgw *g, struct tgw_conn *c, const uint8_t *b,
		     uint16_t n, uint8_t flags);
void tgw_backend_data(struct tgw *g, struct tgw_conn *c, const uint8_t *b,
		      uint16_t n, uint8_t flags);

/* A segment with c's tuple from the client's side that an off-path
 * attacker makes: its own seq, ack, flags and TSval (no payload). */
void tgw_blind(struct tgw *g, const struct tgw_conn *c, uint32_t seq,
	       uint32_t ack, uint8_t flags, uint32_t tsval);

/* The flow of conn c, or NULL. */
struct flow *tgw_flow(struct tgw *g, const struct tgw_conn *c);

/* TCPCT (RFC 6013) segments from a client of service 0, at caddr (NULL:
 * the test client of the service's family).  A SYN with MSS 1460, SACK,
 * TSval tsval, window scale 7 and the 8-byte Cookie ci, and pay as its
 * data; another segment with the Cookie-Pair ci, cr (8 bytes each) in a
 * header extension (§3.3), TSval tsval and TSecr tsecr. */
void tgw_tcpct_syn(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
		   uint32_t cisn, uint32_t tsval, const uint8_t *ci,
		   const uint8_t *pay, uint16_t paylen);
void tgw_tcpct_seg(struct tgw *g, const struct inaddr *caddr, uint16_t cport,
		   uint32_t seq, uint32_t ack, uint8_t flags, uint32_t tsval,
		   uint32_t tsecr, const uint8_t *ci, const uint8_t *cr);

/* A Fast Open (RFC 7413) SYN from the test client of service 0: MSS 1460,
 * SACK, TSval tsval, window scale 7, the option with clen bytes of cookie
 * (0: a cookie request) and pay as its data. */
void tgw_tfo_syn(struct tgw *g, uint16_t cport, uint32_t cisn,
		 uint32_t tsval, const uint8_t *cookie, unsigned clen,
		 const uint8_t *pay, uint16_t paylen);

/* A datagram from service 0's backend (its address and port) to
 * caddr:dport. */
void tgw_backend_udp(struct tgw *g, const struct inaddr *caddr,
		     uint16_t dport, const uint8_t *pay, uint16_t paylen);

/* A DNS query of len bytes (header, one question, padding) after its
 * 2-byte length, into b; returns len + 2. */
uint16_t tgw_query(uint8_t *b, uint16_t len, uint16_t id, bool response);

#endif
