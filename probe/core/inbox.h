/* SPDX-License-Identifier: MIT */
/* Handing work between the probe's threads. A fifo is a list of intrusive links (no locking:
 * its owner's mutex guards it). An inbox hands items from any thread to the loop thread, in
 * the order they were posted: the poster appends under the inbox's mutex and wakes the loop
 * (uv_async), and the loop takes the whole list at once and delivers each item. The task
 * thread's and the GIL workers' completions and the debugger's events go through inboxes. */
#ifndef PROBE_INBOX_H
#define PROBE_INBOX_H

#include <pthread.h>
#include <stddef.h>
#include <uv.h>

#include "pb.h"

struct probe_link {
    struct probe_link *next;
};

struct probe_fifo {
    struct probe_link *head, *tail;
};

void core_fifo_push(struct probe_fifo *q, struct probe_link *l);
/* The oldest link, or NULL when empty. */
struct probe_link *core_fifo_pop(struct probe_fifo *q);

/* The struct that holds link as its member `member`. */
#define PROBE_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

struct probe_inbox {
    pthread_mutex_t mu;
    struct probe_fifo items;
    uv_async_t async;
    int ready; /* the async handle exists */
    int held;  /* loop only: > 0 while deliveries wait (core_inbox_hold) */
    void (*deliver)(struct probe_link *l); /* loop thread, oldest first */
};

/* Before the loop runs (or on it). Returns 0 or a negative libuv code. */
int core_inbox_init(struct probe_inbox *b, uv_loop_t *loop, void (*deliver)(struct probe_link *));
/* Any thread. The item is queued even before core_inbox_init (delivered once the loop is
 * woken after it); the loop is woken when the inbox is initialised. */
void core_inbox_post(struct probe_inbox *b, struct probe_link *l);
/* Loop thread: deliver everything queued now, held or not. */
void core_inbox_drain(struct probe_inbox *b);
/* Loop thread: +1 holds the deliveries the loop's wake-ups would make, -1 releases (and, at 0,
 * wakes the loop for what waited). core_inbox_drain still delivers. */
void core_inbox_hold(struct probe_inbox *b, int delta);
/* fork() child (async-signal-safe: no lock): the async handle is the parent's loop's; posts
 * from now on only queue. */
void core_inbox_forget(struct probe_inbox *b);
/* Closes the inbox's handle (loop thread, or before the loop runs: undoing a start); what is
 * posted afterwards waits in the fifo, undelivered. */
void core_inbox_close(struct probe_inbox *b);

#endif
