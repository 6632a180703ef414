/*
 * The worker's thread (dispatch.c): its queues, its packets handed to the
 * side they come from, its timers.
 */
#ifndef GATEWAY_DISPATCH_H
#define GATEWAY_DISPATCH_H

#include "worker.h"

/* The thread body: runs until gw->stop. */
void *worker_run(void *arg);

/* Handles one queued packet (exposed for tests that drive the logic). */
void worker_packet(struct queue_packet *np, void *arg);

/* Expires timers up to w->now_ms. */
void worker_timers(struct worker *w);

/* Answers a dump request (tcpctl flows, worker.h's struct flow_dump) if
 * one is pending: the thread calls it between two batches. */
void worker_dump_flows(struct worker *w);

#endif
