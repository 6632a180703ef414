/*
 * The service's policy applied to its connections (HACKING.md §4): how long
 * one may sit idle, stall in a DNS message or live, and what a DNS client
 * may send.  A connection that breaks a limit is reset on both sides, so
 * that the backend's slot is free at once, and ends with the reason.  Who
 * may have a connection at all is admit.c's.
 */
#include <string.h>

#include "admit.h"
#include "conn.h"
#include "guard.h"
#include "overload.h"

/*
 * What reaches a DNS backend is what was framed.  A client may send bytes
 * again (the backend dropped them: a stale timestamp, past its window, a
 * loss), and other bytes: a second version of a message's judged bytes
 * would put past the framer what it never judged (an answer, another
 * opcode, other boundaries, so more messages than max-queries).  So the
 * judged bytes of the messages the backend has not acknowledged are kept
 * (struct flow_dnssent, 60 bytes a flow), and bytes sent again must match
 * them; below the backend's ACK nothing matters, it keeps what it has.
 *
 * The record holds the latest FLOW_DNS_SENT messages.  Past that many
 * unacknowledged, the oldest fall out, and bytes sent again over their
 * judged bytes are dropped too.  That never holds up a pipelining client
 * whose segments reach the backend: new messages are framed however many
 * are in flight, and a needless repeat of old ones (a tail loss probe, an
 * early timeout) is dropped while the backend's ACK is on its way.  Only
 * a segment lost after tcpctd with FLOW_DNS_SENT messages framed after it
 * cannot be sent again, and its flow ends by its clocks.  Anything
 * tighter is unbounded: a record of every message in flight grows with
 * the window, and holding back new messages while the record is full
 * would stall for good a client whose segment carries more than it holds.
 * A question's QTYPE is not kept (its place follows from the labels before
 * it): it only tells a zone transfer, whose flow is never released
 * (release.c), and a client that hides one harms only its own transfer.
 */
enum sent_check { SENT_SAME, SENT_CHANGED, SENT_UNKNOWN };

static unsigned
sent_index(const struct flow_dnssent *s, unsigned k)
{
	return (s->head + k) % FLOW_DNS_SENT;
}

/* The oldest message leaves the record. */
static void
sent_shift(struct flow_dnssent *s)
{
	s->start += DNSMSG_LEN_PREFIX + s->len[s->head];
	s->head = (uint8_t)sent_index(s, 1);
	s->n--;
}

/* What the backend acknowledged is no longer looked at. */
static void
sent_forget(struct flow *f, uint32_t ack)
{
	struct flow_dnssent *s = &f->sent;

	if (s->gap && SEQ_GEQ(ack, s->lost))
		s->gap = false;
	/* The message being framed stays: its length may be unknown. */
	while (s->n > dnsframe_mid(&f->dns) &&
	       SEQ_GEQ(ack, s->start + DNSFRAME_JUDGED))
		sent_shift(s);
}

/* A message begins at seq. */
static void
sent_begin(struct flow_dnssent *s, uint32_t seq)
{
	unsigned i;

	if (s->n == FLOW_DNS_SENT) {
		s->gap = true;
		s->lost = s->start + DNSFRAME_JUDGED;
		sent_shift(s);
	}
	if (!s->n)
		s->start = seq;
	i = sent_index(s, s->n++);
	s->len[i] = 0;
	memset(s->hdr[i], 0, sizeof(s->hdr[i]));
}

/* The judged bytes among n at offset pos of the newest message. */
static void
sent_note(struct flow_dnssent *s, uint32_t pos, const uint8_t *b, uint32_t n)
{
	unsigned i = sent_index(s, s->n - 1u);

	for (; n && pos < DNSFRAME_JUDGED; n--, pos++, b++) {
		if (pos == 0)
			s->len[i] = (uint16_t)(*b << 8);
		else if (pos == 1)
			s->len[i] |= *b;
		else if (pos >= DNSMSG_LEN_PREFIX + 2)	/* not the ID */
			s->hdr[i][pos - DNSMSG_LEN_PREFIX - 2] = *b;
	}
}

/* The judged byte at offset off of entry i into *c; false for the ID's. */
static bool
sent_byte(const struct flow_dnssent *s, unsigned i, uint32_t off, uint8_t *c)
{
	if (off < DNSMSG_LEN_PREFIX)
		*c = (uint8_t)(s->len[i] >> (off ? 0 : 8));
	else if (off >= DNSMSG_LEN_PREFIX + 2)
		*c = s->hdr[i][off - DNSMSG_LEN_PREFIX - 2];
	else
		return false;
	return true;
}

/* Bytes at seq, all framed before: the same where the backend may still
 * take them? */
static enum sent_check
sent_check(const struct flow *f, uint32_t ack, uint32_t seq,
	   const uint8_t *b, uint32_t n)
{
	const struct flow_dnssent *s = &f->sent;
	uint32_t from = SEQ_GT(ack, seq) ? ack : seq, end = seq + n;
	uint32_t at = s->start;
	unsigned k;

	if (!SEQ_LT(from, end))
		return SENT_SAME;
	if (s->gap && SEQ_LT(from, s->lost))
		return SENT_UNKNOWN;
	for (k = 0; k < s->n && SEQ_LT(at, end); k++) {
		unsigned i = sent_index(s, k);
		uint32_t off;

		for (off = 0; off < DNSFRAME_JUDGED; off++) {
			uint32_t q = at + off;
			uint8_t c;

			if (SEQ_GEQ(q, from) && SEQ_LT(q, end) &&
			    sent_byte(s, i, off, &c) && b[q - seq] != c)
				return SENT_CHANGED;
		}
		at += DNSMSG_LEN_PREFIX + s->len[i];
	}
	return SENT_SAME;
}

/* New bytes at seq through the framer, message by message so that each
 * one's judged bytes are kept. */
static enum dnsframe_verdict
guard_frame(struct flow *f, uint32_t seq, const uint8_t *b, uint32_t n)
{
	struct dnsframe *d = &f->dns;
	enum dnsframe_verdict v = DNSFRAME_OK;

	while (n && v == DNSFRAME_OK) {
		uint32_t pos = d->pos;
		uint32_t step = pos < DNSFRAME_JUDGED ?
				DNSFRAME_JUDGED - pos :
				DNSMSG_LEN_PREFIX + d->len - pos;

		if (step > n)
			step = n;
		if (!pos)
			sent_begin(&f->sent, seq);
		sent_note(&f->sent, pos, b, step);
		v = dnsframe_feed(d, b, step);
		b += step;
		seq += step;
		n -= step;
	}
	return v;
}

enum guard_verdict
guard_data(struct worker *w, struct flow *f, uint32_t seq, const uint8_t *b,
	   uint32_t len)
{
	const struct service *svc = &w->cfg->services[f->service];
	uint32_t skip = f->dns_nxt - seq, ack;
	enum dnsframe_verdict v;

	if (svc->kind != SERVICE_DNS || !len)
		return GUARD_PASS;
	/* Only bytes in order can be framed: a segment past a hole waits
	 * for the client to send the hole (we drop it; it comes again). */
	if (SEQ_GT(seq, f->dns_nxt)) {
		STAT_INC(w, dns_out_of_order);
		return GUARD_DROP;
	}
	/* Until its backend is up (backend_open), a binding's backend
	 * has none of its bytes. */
	ack = f->state <= FLOW_SYN_SENT ? f->c_base + 1 : f->b_ack;
	sent_forget(f, ack);
	if (skip) {
		switch (sent_check(f, ack, seq, b, skip < len ? skip : len)) {
		case SENT_SAME:
			break;
		case SENT_CHANGED:
			STAT_INC(w, dns_resent_changed);
			return GUARD_DROP;
		case SENT_UNKNOWN:
			STAT_INC(w, dns_resent_unknown);
			return GUARD_DROP;
		}
	}
	if (skip >= len)
		return GUARD_PASS;	/* all of it framed before */
	v = guard_frame(f, f->dns_nxt, b + skip, len - skip);
	f->dns_nxt = seq + len;
	if (v != DNSFRAME_OK) {
		if (v == DNSFRAME_SHORT)
			STAT_INC(w, dns_short);
		else
			STAT_INC(w, dns_not_request);
		conn_reset(w, f, FLOW_FRAMING);
		return GUARD_CLOSED;
	}
	/* Each message counted once: bytes sent again were framed before,
	 * and match what was (above). */
	if (svc->pol.max_queries && f->dns.started > svc->pol.max_queries) {
		STAT_INC(w, dns_max_queries);
		conn_reset(w, f, FLOW_MAX_QUERIES);
		return GUARD_CLOSED;
	}
	if (!f->asked && dnsframe_whole(&f->dns))
		admit_asked(w, f);
	return GUARD_PASS;
}

bool
guard_too_old(struct worker *w, struct flow *f)
{
	const struct service *svc = &w->cfg->services[f->service];

	if (!svc->pol.max_lifetime ||
	    w->now_ms - f->born < (uint64_t)svc->pol.max_lifetime * 1000)
		return false;
	STAT_INC(w, lifetime_closed);
	conn_reset(w, f, FLOW_LIFETIME);
	return true;
}

void
guard_touch(struct worker *w, struct flow *f, bool progress)
{
	const struct service *svc = &w->cfg->services[f->service];

	if (worker_awaits_ack(f))
		return;
	if (svc->kind == SERVICE_DNS && dnsframe_mid(&f->dns)) {
		/* The message's clock runs from its start, whatever else
		 * comes meanwhile. */
		if (f->timer != FLOW_TIMER_MSG)
			flow_timer_set(&w->ft, f, FLOW_TIMER_MSG, w->now_ms);
		return;
	}
	/* RFC 7766 §6.2.3: idle is no DNS activity, so a DNS connection's
	 * clock is reset only by progress; anything resets a generic one's
	 * (keepalives included). */
	if (progress || svc->kind != SERVICE_DNS || f->timer != FLOW_TIMER_IDLE)
		flow_timer_set(&w->ft, f, FLOW_TIMER_IDLE, w->now_ms);
}

unsigned
guard_timers(struct worker *w, unsigned budget)
{
	const struct config *cfg = w->cfg;

	for (unsigned s = 0; s < cfg->nservices; s++) {
		const struct policy *pol = &cfg->services[s].pol;
		struct flow *f;
		uint64_t idle = flow_timer_cutoff(w->now_ms,
						  overload_idle_ms(w, s));
		uint64_t msg = flow_timer_cutoff(w->now_ms, pol->msg_timeout);

		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_MSG, msg))) {
			budget--;
			STAT_INC(w, dns_msg_timeout);
			conn_reset(w, f, FLOW_MSG_TIMEOUT);
		}
		while (budget && (f = flow_timer_expired(&w->ft, s,
							 FLOW_TIMER_IDLE,
							 idle))) {
			budget--;
			conn_reset(w, f, FLOW_IDLE);
		}
	}
	return budget;
}
