/* SPDX-License-Identifier: MIT */
/* Fifos and inboxes (inbox.h). */
#include "inbox.h"

void core_fifo_push(struct probe_fifo *q, struct probe_link *l)
{
    l->next = NULL;
    if (q->tail)
        q->tail->next = l;
    else
        q->head = l;
    q->tail = l;
}

struct probe_link *core_fifo_pop(struct probe_fifo *q)
{
    struct probe_link *l = q->head;
    if (l) {
        q->head = l->next;
        if (!q->head)
            q->tail = NULL;
        l->next = NULL;
    }
    return l;
}

void core_inbox_drain(struct probe_inbox *b)
{
    pthread_mutex_lock(&b->mu);
    struct probe_link *l = b->items.head;
    b->items.head = b->items.tail = NULL;
    pthread_mutex_unlock(&b->mu);
    while (l) {
        struct probe_link *next = l->next;
        b->deliver(l);
        l = next;
    }
}

/* Loop thread: a wake-up delivers everything posted so far, oldest first, unless held. */
static void on_async(uv_async_t *a)
{
    struct probe_inbox *b = a->data;
    if (b->held == 0)
        core_inbox_drain(b);
}

int core_inbox_init(struct probe_inbox *b, uv_loop_t *loop, void (*deliver)(struct probe_link *))
{
    b->deliver = deliver;
    b->async.data = b;
    int rc = uv_async_init(loop, &b->async, on_async);
    if (rc == 0) {
        pthread_mutex_lock(&b->mu);
        b->ready = 1;
        pthread_mutex_unlock(&b->mu);
    }
    return rc;
}

void core_inbox_post(struct probe_inbox *b, struct probe_link *l)
{
    pthread_mutex_lock(&b->mu);
    core_fifo_push(&b->items, l);
    int ready = b->ready;
    pthread_mutex_unlock(&b->mu);
    if (ready)
        uv_async_send(&b->async);
}

void core_inbox_hold(struct probe_inbox *b, int delta)
{
    b->held += delta;
    if (b->held == 0 && b->ready)
        uv_async_send(&b->async);
}

void core_inbox_close(struct probe_inbox *b)
{
    pthread_mutex_lock(&b->mu);
    int ready = b->ready;
    b->ready = 0;
    pthread_mutex_unlock(&b->mu);
    if (ready)
        uv_close((uv_handle_t *)&b->async, NULL);
}

void core_inbox_forget(struct probe_inbox *b)
{
    b->ready = 0;
}
