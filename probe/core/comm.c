/* SPDX-License-Identifier: MIT */
/* The collectives recorder's ring (comm.h): fixed-size records in one array allocated at the
 * recorder's start, overwritten oldest first; a record's id (1, 2, ...) names its slot (id - 1
 * modulo the size), so an end for a record already overwritten is recognised and dropped. The
 * ring stays after perf --stop (the table keeps answering) until the next start. Any thread. */
#include "comm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { ST_RUNNING, ST_DONE, ST_FAILED };

struct rec {
    unsigned long long id;
    long long seq, bytes, tid;
    double start, end;
    int rank, group_size, peer, line, async, state;
    char op[28], pg[32], ranks[96], seq_source[12], sizes[96], dtype[16], file[200], func[64];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct rec *ring; /* guarded by mu */
static int size;
static unsigned long long next_id = 1;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int core_comm_open(int max_records, struct pb_err *err)
{
    if (max_records < 1 || max_records > 10000000)
        return pb_err_set(err, PB_EBADARG, "comm.max_records: expected 1 to 10000000");
    pthread_mutex_lock(&mu);
    int rc = 0;
    if (!ring || size != max_records) {
        struct rec *r = calloc((size_t)max_records, sizeof *r);
        if (!r) {
            rc = pb_err_set(err, -ENOMEM,
                            "out of memory for %d collective records (%zu bytes "
                            "each): lower comm.max_records",
                            max_records, sizeof *r);
        } else {
            free(ring);
            ring = r;
            size = max_records;
            next_id = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static __thread long cached_tid;

unsigned long long core_comm_begin(const struct probe_comm_call *c)
{
    if (!cached_tid)
        cached_tid = (long)syscall(SYS_gettid);
    struct rec r = {0};
    r.seq = c->seq;
    r.bytes = c->bytes;
    r.tid = cached_tid;
    r.rank = c->rank;
    r.group_size = c->group_size;
    r.peer = c->peer;
    r.line = c->line;
    r.async = c->async;
    r.state = ST_RUNNING;
    pb_strlcpy(r.op, c->op ? c->op : "?", sizeof r.op);
    pb_strlcpy(r.pg, c->pg ? c->pg : "", sizeof r.pg);
    pb_strlcpy(r.ranks, c->ranks ? c->ranks : "", sizeof r.ranks);
    pb_strlcpy(r.seq_source, c->seq_source ? c->seq_source : "", sizeof r.seq_source);
    pb_strlcpy(r.sizes, c->sizes ? c->sizes : "", sizeof r.sizes);
    pb_strlcpy(r.dtype, c->dtype ? c->dtype : "", sizeof r.dtype);
    pb_strlcpy(r.file, c->file ? c->file : "", sizeof r.file);
    pb_strlcpy(r.func, c->func ? c->func : "", sizeof r.func);
    r.start = now();
    pthread_mutex_lock(&mu);
    if (!ring) {
        pthread_mutex_unlock(&mu);
        return 0;
    }
    r.id = next_id++;
    ring[(r.id - 1) % (unsigned long long)size] = r;
    pthread_mutex_unlock(&mu);
    return r.id;
}

void core_comm_end(unsigned long long id, int ok)
{
    double t = now();
    pthread_mutex_lock(&mu);
    if (ring && id > 0) {
        struct rec *r = &ring[(id - 1) % (unsigned long long)size];
        if (r->id == id && r->state == ST_RUNNING) {
            r->end = t;
            r->state = ok ? ST_DONE : ST_FAILED;
        }
    }
    pthread_mutex_unlock(&mu);
}

void core_comm_counts(unsigned long long *made, int *sz)
{
    pthread_mutex_lock(&mu);
    *made = next_id - 1;
    *sz = ring ? size : 0;
    pthread_mutex_unlock(&mu);
}

static int add_row(struct probe_rows *r, const struct rec *x, double t)
{
    static const char *const states[] = {"running", "done", "failed"};
    core_rows_add_int(r, (long long)x->id);
    core_rows_add_int(r, x->rank);
    core_rows_add_text(r, x->pg);
    core_rows_add_text(r, x->ranks);
    core_rows_add_int(r, x->group_size);
    core_rows_add_int(r, x->seq);
    core_rows_add_text(r, x->seq_source);
    core_rows_add_text(r, x->op);
    x->peer >= 0 ? core_rows_add_int(r, x->peer) : core_rows_add_null(r);
    core_rows_add_text(r, x->sizes);
    core_rows_add_text(r, x->dtype);
    core_rows_add_int(r, x->bytes);
    core_rows_add_int(r, x->async);
    core_rows_add_text(r, states[x->state]);
    core_rows_add_real(r, x->start);
    x->state == ST_RUNNING ? core_rows_add_null(r) : core_rows_add_real(r, x->end);
    core_rows_add_real(r, ((x->state == ST_RUNNING ? t : x->end) - x->start) * 1e3);
    core_rows_add_int(r, x->tid);
    core_rows_add_text(r, x->file);
    core_rows_add_int(r, x->line);
    core_rows_add_text(r, x->func);
    return core_rows_error(r);
}

int core_comm_fill(struct probe_rows *r, struct pb_err *err)
{
    /* Copy out under the mutex in chunks, build rows outside it: the job's threads wait on
     * this mutex at every collective. */
    enum { CHUNK = 32 }; /* about 20 KB of stack */
    struct rec buf[CHUNK];
    double t = now();
    unsigned long long from = 0;
    for (;;) {
        int n = 0;
        pthread_mutex_lock(&mu);
        if (ring) {
            unsigned long long last = next_id - 1;
            unsigned long long first =
                last > (unsigned long long)size ? last - (unsigned long long)size + 1 : 1;
            if (from < first)
                from = first;
            for (; from <= last && n < CHUNK; from++)
                buf[n++] = ring[(from - 1) % (unsigned long long)size];
        }
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < n; i++)
            if (add_row(r, &buf[i], t) < 0)
                return pb_err_set(err, -ENOMEM, "torch.collectives: out of memory");
        if (n < CHUNK)
            return 0;
    }
}
