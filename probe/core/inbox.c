/* SPDX-License-Identifier: MIT */
/* Fifos and inboxes (inbox.h). */
#include "inbox.h"

void probe_fifo_push(struct probe_fifo *q, struct probe_link *l)
{
    l->next = NULL;
    if (q->tail)
        q->tail->next = l;
    else
        q->head = l;
    q->tail = l;
}

struct probe_link *probe_fifo_pop(struct probe_fifo *q)
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

/* Loop thread: everything posted so far, oldest first. */
static void on_async(uv_async_t *a)
{
    struct probe_inbox *b = a->data;
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

int probe_inbox_init(struct probe_inbox *b, uv_loop_t *loop, void (*deliver)(struct probe_link *))
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

int probe_inbox_post(struct probe_inbox *b, struct probe_link *l)
{
    pthread_mutex_lock(&b->mu);
    int ready = b->ready;
    if (ready)
        probe_fifo_push(&b->items, l);
    pthread_mutex_unlock(&b->mu);
    if (!ready)
        return -1;
    uv_async_send(&b->async);
    return 0;
}

void probe_inbox_kick(struct probe_inbox *b)
{
    pthread_mutex_lock(&b->mu);
    int ready = b->ready;
    pthread_mutex_unlock(&b->mu);
    if (ready)
        uv_async_send(&b->async);
}
