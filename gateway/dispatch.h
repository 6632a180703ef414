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

#endif
