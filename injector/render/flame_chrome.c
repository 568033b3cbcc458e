/* SPDX-License-Identifier: MIT */
/* Chrome trace event JSON (flame.h): a per-thread timeline of the samples, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open. Each frame becomes one complete event ("ph":
 * "X") for as long as consecutive samples of its thread keep it at the same place in the
 * stack: a frame opens at the first sample that has it (under the same callers) and closes at
 * the first sample that does not, so the events of a thread nest exactly as its stacks do.
 * A gap of more than two sampling periods between two samples of a thread (a thread off the
 * CPU, in cpu mode) closes everything one period after the earlier sample. Events are written
 * sorted by thread, start and depth (a caller before a callee that starts with it), times in
 * microseconds from the first sample; thread_name metadata names each thread. */
#include <stdlib.h>
#include <string.h>

#include "flame.h"

struct ev {
    size_t thread;
    double start, end;
    int depth;
    const char *name; /* into a stack's folded string, len bytes */
    size_t len;
};

struct evs {
    struct ev *v;
    size_t n, cap;
};

static int push(struct evs *e, struct ev x)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 256;
        struct ev *v = realloc(e->v, cap * sizeof *v);
        if (!v)
            return -1;
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = x;
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->depth - y->depth;
}

static const char *json_char(unsigned char c, char *buf)
{
    if (c == '"' || c == '\\')
        snprintf(buf, 8, "\\%c", c);
    else if (c < 0x20)
        snprintf(buf, 8, "\\u%04x", c);
    else
        return NULL;
    return buf;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    flame_escape(f, s, json_char, "\\ufffd");
    fputc('"', f);
}

/* Seconds (>= 0) to whole microseconds, rounded to nearest (no libm in the CLI). */
static long long us(double s)
{
    return (long long)(s * 1e6 + 0.5);
}

/* The frames open on one thread: (name, len, start) from the outermost in. */
struct open {
    const char **name;
    size_t *len;
    double *start;
    int n, cap;
};

static int close_from(struct evs *e, struct open *o, size_t thread, int from, double at)
{
    for (int d = o->n - 1; d >= from; d--)
        if (push(e, (struct ev){thread, o->start[d], at, d, o->name[d], o->len[d]}) < 0)
            return -1;
    if (o->n > from)
        o->n = from;
    return 0;
}

static int open_push(struct open *o, const char *name, size_t len, double at)
{
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 64;
        const char **nm = realloc(o->name, (size_t)cap * sizeof *nm);
        if (!nm)
            return -1;
        o->name = nm;
        size_t *ln = realloc(o->len, (size_t)cap * sizeof *ln);
        if (!ln)
            return -1;
        o->len = ln;
        double *st = realloc(o->start, (size_t)cap * sizeof *st);
        if (!st)
            return -1;
        o->start = st;
        o->cap = cap;
    }
    o->name[o->n] = name;
    o->len[o->n] = len;
    o->start[o->n++] = at;
    return 0;
}

/* Turns the ticks (sorted by thread, then time) into events. */
static int build(const struct flame_tree *t, const struct flame_tick *ticks, size_t n,
                 double period, struct evs *e)
{
    struct open o = {0};
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        const struct flame_tick *k = &ticks[i];
        const struct flame_stack *s = &t->stacks[k->stack];
        size_t th = s->thread;
        int new_thread = i == 0 || t->stacks[ticks[i - 1].stack].thread != th;
        if (!new_thread && k->ts - ticks[i - 1].ts > 2 * period &&
            close_from(e, &o, th, 0, ticks[i - 1].ts + period) < 0)
            goto out;
        /* Keep the open frames this stack shares from the outermost in; close the rest. */
        int d = 0;
        const char *p = s->folded;
        while (*p) {
            const char *end = strchr(p, ';');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len) {
                if (d < o.n && (o.len[d] != len || memcmp(o.name[d], p, len) != 0) &&
                    close_from(e, &o, th, d, k->ts) < 0)
                    goto out;
                if (d >= o.n && open_push(&o, p, len, k->ts) < 0)
                    goto out;
                d++;
            }
            if (!end)
                break;
            p = end + 1;
        }
        if (close_from(e, &o, th, d, k->ts) < 0)
            goto out;
        int last_of_thread = i + 1 == n || t->stacks[ticks[i + 1].stack].thread != th;
        if (last_of_thread && close_from(e, &o, th, 0, k->ts + period) < 0)
            goto out;
    }
    rc = 0;
out:
    free(o.name);
    free(o.len);
    free(o.start);
    return rc;
}

int flame_write_chrometrace(const struct flame_tree *t, const struct flame_tick *ticks, size_t n,
                            double period, long long pid, const char *name, FILE *f)
{
    struct evs e = {0};
    if (!(period > 0))
        period = 0.01;
    if (build(t, ticks, n, period, &e) < 0) {
        free(e.v);
        return -1;
    }
    qsort(e.v, e.n, sizeof *e.v, by_time);
    double origin = n ? ticks[0].ts : 0;
    for (size_t i = 1; i < n; i++)
        if (ticks[i].ts < origin)
            origin = ticks[i].ts;
    fputs("{\"displayTimeUnit\": \"ms\",\n \"otherData\": {\"exporter\": \"probing\", "
          "\"name\": ",
          f);
    json_str(f, name ? name : "probing profile");
    fprintf(f,
            ", \"startEpochSeconds\": %.6f, \"samplePeriodSeconds\": %.9g},\n"
            " \"traceEvents\": [\n",
            origin, period);
    fprintf(f,
            "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %lld, \"tid\": 0, "
            "\"args\": {\"name\": ",
            pid);
    json_str(f, name ? name : "probing profile");
    fputs("}}", f);
    for (size_t th = 0; th < t->nthreads; th++) {
        const struct flame_thread *T = &t->threads[th];
        char tn[512];
        if (T->name)
            snprintf(tn, sizeof tn, "%s (%lld)", T->name, T->id);
        else
            snprintf(tn, sizeof tn, "thread %lld", T->id);
        fprintf(f,
                ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %lld, "
                "\"tid\": %lld, \"args\": {\"name\": ",
                pid, T->id);
        json_str(f, tn);
        fputs("}}", f);
    }
    int rc = 0;
    for (size_t i = 0; i < e.n; i++) {
        const struct ev *x = &e.v[i];
        char *nm = strndup(x->name, x->len);
        if (!nm) {
            rc = -1;
            break;
        }
        char func[1024], file[2048];
        int line;
        int py = flame_name_split(nm, func, sizeof func, file, sizeof file, &line) == 0;
        fputs(",\n  {\"ph\": \"X\", \"name\": ", f);
        json_str(f, py ? func : nm);
        /* Whole microseconds, start and end rounded alike: events that share a boundary
         * share it exactly, so callees never stick out of their callers. */
        long long a = us(x->start - origin), b = us(x->end - origin);
        fprintf(f,
                ", \"cat\": \"%s\", \"pid\": %lld, \"tid\": %lld, \"ts\": %lld, "
                "\"dur\": %lld",
                py ? "python" : "native", pid, t->threads[x->thread].id, a, b - a);
        if (py) {
            fputs(", \"args\": {\"file\": ", f);
            json_str(f, file);
            fprintf(f, ", \"line\": %d}", line);
        }
        fputc('}', f);
        free(nm);
    }
    fputs("\n ]}\n", f);
    free(e.v);
    return rc < 0 || ferror(f) ? -1 : 0;
}
