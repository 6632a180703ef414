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

#include "../../gateway/worker.h"

#include <linux/netfilter.h>

#define TGW_OUT_MAX	INJECT_BATCH
#define TGW_NOW_S	864000u		/* a wall clock far from 0 */
#define TGW_BACKEND_WS	7		/* the backend's profile */
#define TGW_BACKEND_MSS	1460

struct tgw_out {
	uint8_t buf[INJECT_BUF];
	struct pkt p;
	struct tcpopt o;
};

struct tgw {
	struct config cfg;
	struct keys_master master;
	struct gateway gw;
	struct worker w;
	struct queue q;
	uint8_t tx[1 << 16];

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

/* Moves the clocks on by ms and runs the timers; fills out. */
void tgw_advance(struct tgw *g, unsigned ms);

/* The first segment of out towards the backend (to_backend) or the
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

/* SYN with MSS, window scale 7, SACK and timestamps; the cookie SYN-ACK;
 * the ACK.  Fills c; fails the test when a step goes wrong.
 * tgw_try_handshake is the same for a client that may be refused at its
 * ACK: whether it has a flow then. */
void tgw_handshake(struct tgw *g, struct tgw_conn *c, uint16_t cport,
		   uint32_t cisn);
bool tgw_try_handshake(struct tgw *g, struct tgw_conn *c, uint16_t cport,
		       uint32_t cisn);

/* The backend answers the SYN it was sent (in out) with a SYN-ACK of ISN
 * bisn; fails the test when out holds no SYN for it. */
void tgw_backend_accept(struct tgw *g, struct tgw_conn *c, uint32_t bisn);

/* Data (or a bare ACK, or a FIN with flags) from one side, with the
 * conn's numbers; advances that side's seq. */
void tgw_client_data(struct tgw *g, struct tgw_conn *c, const uint8_t *b,
		     uint16_t n, uint8_t flags);
void tgw_backend_data(struct tgw *g, struct tgw_conn *c, const uint8_t *b,
		      uint16_t n, uint8_t flags);

/* The flow of conn c, or NULL. */
struct flow *tgw_flow(struct tgw *g, const struct tgw_conn *c);

/* A DNS query of len bytes (header, one question, padding) after its
 * 2-byte length, into b; returns len + 2. */
uint16_t tgw_query(uint8_t *b, uint16_t len, uint16_t id, bool response);

#endif
