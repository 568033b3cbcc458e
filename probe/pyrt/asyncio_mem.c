/* SPDX-License-Identifier: MIT */
/* The asyncio tasks of CPython 3.14+ read without the GIL (pyrt.h, pyrt_asyncio_tasks_mem), for
 * when a thread holds it in C and the tasks cannot be read with it (asyncio.c): the loop thread
 * blocked in C still answers.
 *
 * 3.14 keeps every pending C task (asyncio.Task and subclasses) on a list of the thread state
 * that created it (and, once that thread is gone, of the interpreter), for `python -m asyncio
 * ps`. Where the list heads and the task's fields are is published by the _asyncio module in its
 * ELF section ".AsyncioDebug" (13 64-bit offsets: the task object's size, name, awaited_by,
 * is_task, awaited_by_is_set, coro and list node; the interpreter's size and list head; the
 * thread state's size, running loop, running task and list head), found here in the loaded
 * _asyncio module's file (or the executable's or libpython's, where it is built in). Every read
 * is a fault-proof one (safe.c), every loop bounded.
 *
 * For each task: its name (a str, or the number 3.13+ keeps until get_name() makes "Task-N" of
 * it), the coroutine chain (each suspended coroutine's frame, then the object its frame awaits:
 * the top of its value stack while suspended in an await), running (its thread's running task),
 * the thread of the list it is on and that thread's running loop, and who awaits it
 * (task_awaited_by: one object or a set), turned into the tasks each awaits. Not known here: the
 * future a task waits on (no offset is published), so a task awaiting a future shows no
 * "awaits"; finished tasks (they leave the list). No GIL needed.
 *
 * Built a second time with PYRT_REMOTE into the out-of-process reader (libprobing-read-3.X.so,
 * probe/reader/reader.c: `debug --dump --no-inject --tasks`, `dump --core --tasks`): there
 * every read goes through the reader's (pyrt_read: the target's memory or a core's), the
 * types compared with are the target's (pyrt_remote), and the offsets are the caller's, which
 * read ".AsyncioDebug" from the target's module file; strs and code objects are read by the
 * reader's functions (pyrt_asyncio_mem_remote_set: sig/ sits above this folder). */
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if PY_VERSION_HEX >= 0x030E0000

#define MAX_TASKS 10000
#define MAX_CHAIN 64
#define MAX_SET 4096 /* slots of an awaited_by set looked at */
#define CODE_SLOTS 64

#ifdef PYRT_REMOTE
#define AREAD pyrt_read
#else
#define AREAD pyrt_mem_read_at
#endif

struct aoffs {
    uint64_t t_size, t_name, t_awaited_by, t_is_task, t_awaited_by_is_set, t_coro, t_node;
    uint64_t i_size, i_head;
    uint64_t ts_size, ts_loop, ts_task, ts_head;
};

struct find {
    struct aoffs o;
    int found;
};

#ifdef PYRT_REMOTE
static struct find remote_offs;
static struct pyrt_asyncio_mem_remote remote_fns;

static int offsets_ok(const struct aoffs *o);
int pyrt_asyncio_mem_remote_set(const struct pyrt_asyncio_mem_remote *r)
{
    memset(&remote_offs, 0, sizeof remote_offs);
    remote_fns = *r;
    if (!r->offs || r->noffs < (int)(sizeof remote_offs.o / sizeof(uint64_t)) || !r->str ||
        !r->code)
        return -1;
    memcpy(&remote_offs.o, r->offs, sizeof remote_offs.o);
    remote_offs.found = offsets_ok(&remote_offs.o);
    return remote_offs.found ? 0 : -1;
}

static const struct aoffs *offsets(void)
{
    return remote_offs.found ? &remote_offs.o : NULL;
}

static int offsets_ok(const struct aoffs *o)
{
    return o->t_node && o->t_node < o->t_size && o->t_name < o->t_size && o->t_coro < o->t_size &&
           o->ts_head && o->ts_head < o->ts_size && o->i_head && o->i_head < o->i_size;
}
#else
/* The runtime address of section name of the loaded object at base, from its file. 0 none. */
static uintptr_t section_addr(const char *path, uintptr_t base, const char *name, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uintptr_t r = 0;
    Elf64_Ehdr eh;
    if (fd < 0)
        return 0;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shnum == 0 || eh.e_shnum > 4096 || eh.e_shstrndx >= eh.e_shnum)
        goto out;
    Elf64_Shdr *sh = calloc(eh.e_shnum, sizeof *sh);
    if (!sh)
        goto out;
    size_t len = (size_t)eh.e_shnum * sizeof *sh;
    if (pread(fd, sh, len, (off_t)eh.e_shoff) == (ssize_t)len) {
        const Elf64_Shdr *st = &sh[eh.e_shstrndx];
        size_t nlen = strlen(name) + 1;
        char buf[64];
        for (int i = 0; i < eh.e_shnum && !r && nlen <= sizeof buf; i++) {
            if (sh[i].sh_name >= st->sh_size - nlen + 1 || !sh[i].sh_addr)
                continue;
            if (pread(fd, buf, nlen, (off_t)(st->sh_offset + sh[i].sh_name)) == (ssize_t)nlen &&
                memcmp(buf, name, nlen) == 0) {
                r = base + (uintptr_t)sh[i].sh_addr;
                *size = (size_t)sh[i].sh_size;
            }
        }
    }
    free(sh);
out:
    close(fd);
    return r;
}

static int offsets_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
    (void)sz;
    struct find *f = arg;
    const char *n = info->dlpi_name ? info->dlpi_name : "";
    /* _asyncio's own .so, or where it is built in: the executable or libpython */
    if (!*n)
        n = "/proc/self/exe";
    else if (!strstr(n, "/_asyncio.") && !strstr(n, "libpython"))
        return 0;
    size_t size = 0;
    uintptr_t a = section_addr(n, (uintptr_t)info->dlpi_addr, ".AsyncioDebug", &size);
    if (a && size >= sizeof f->o && pyrt_mem_read_at(a, &f->o, sizeof f->o) == 0 && f->o.t_node &&
        f->o.t_node < f->o.t_size && f->o.t_name < f->o.t_size && f->o.t_coro < f->o.t_size &&
        f->o.ts_head && f->o.ts_head < f->o.ts_size && f->o.i_head && f->o.i_head < f->o.i_size) {
        f->found = 1;
        return 1;
    }
    return 0;
}

/* The offsets, found once (again at each call until _asyncio is loaded). */
static const struct aoffs *offsets(void)
{
    static struct find f;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    if (!f.found)
        dl_iterate_phdr(offsets_cb, &f);
    pthread_mutex_unlock(&mu);
    return f.found ? &f.o : NULL;
}

#endif

static uintptr_t rd_ptr(uintptr_t a)
{
    uintptr_t v = 0;
    return a && AREAD(a, &v, sizeof v) == 0 ? v : 0;
}

static uintptr_t type_of(uintptr_t o)
{
    return o ? rd_ptr(o + offsetof(PyObject, ob_type)) : 0;
}

/* The str at o (at most max bytes of UTF-8) in a new string; NULL when it is none. */
static char *str_read(uintptr_t o, size_t max)
{
#ifdef PYRT_REMOTE
    char buf[1024];
    if (max >= sizeof buf)
        max = sizeof buf - 1;
    return o && remote_fns.str(o, buf, max + 1) == 0 ? strdup(buf) : NULL;
#else
    return pyrt_str_read((const void *)o, max);
#endif
}

/* A copied int's value when it is compact (one digit): what _PyLong_IsCompact and
 * _PyLong_CompactValue say, without their asserts, which read the type through the copy's
 * ob_type: another process's pointer (or a core's) in the reader. */
static int long_compact(const PyLongObject *l, long long *v)
{
    uintptr_t tag = l->long_value.lv_tag;
    if (tag >= ((uintptr_t)2 << _PyLong_NON_SIZE_BITS))
        return 0;
    *v = (1 - (long long)(tag & _PyLong_SIGN_MASK)) * (long long)l->long_value.ob_digit[0];
    return 1;
}

/* A task's name: a str, or its number (3.13+ names "Task-N" lazily). */
static char *name_read(uintptr_t o)
{
    uintptr_t tp = type_of(o);
    if (tp && tp == (uintptr_t)PYRT_UNICODE_TYPE)
        return str_read(o, 200);
    if (tp && tp == (uintptr_t)PYRT_LONG_TYPE) {
        PyLongObject l;
        long long v;
        char buf[32];
        if (AREAD(o, &l, sizeof l) == 0 && long_compact(&l, &v)) {
            snprintf(buf, sizeof buf, "Task-%lld", v);
            return strdup(buf);
        }
    }
    return strdup("?");
}

struct code_slot {
    uintptr_t addr;
    char *func, *file;
    unsigned char *table;
    size_t tablen;
    int firstlineno, ok;
};

struct reader {
    const struct aoffs *o;
    struct code_slot code[CODE_SLOTS];
    struct pyrt_code_memo memo[CODE_SLOTS];
    struct pyrt_sig_frame pos;
    struct pyrt_frame_ext ext;
};

static const struct code_slot *code_get(struct reader *r, uintptr_t addr)
{
    struct code_slot *c = &r->code[(addr >> 4) & (CODE_SLOTS - 1)];
    if (c->addr == addr)
        return c->ok ? c : NULL;
    free(c->func);
    free(c->file);
    free(c->table);
    memset(c, 0, sizeof *c);
    c->addr = addr;
#ifdef PYRT_REMOTE
    (void)r;
    if (remote_fns.code(addr, &c->func, &c->file, &c->table, &c->tablen, &c->firstlineno) != 0)
        return NULL;
#else
    struct pyrt_code co;
    if (pyrt_code_read(addr, &co, pyrt_mem_read_at) != 0)
        return NULL;
    c->func = pyrt_str_read((const void *)co.name, PYRT_MAX_STR);
    c->file = pyrt_str_read((const void *)co.file, PYRT_MAX_STR);
    c->table = pyrt_bytes_read((const void *)co.table, PYRT_MAX_TABLE, &c->tablen);
    c->firstlineno = co.firstlineno;
#endif
    c->ok = c->func && c->file;
    return c->ok ? c : NULL;
}

static int is_gen(uintptr_t tp)
{
    return tp && (tp == (uintptr_t)PYRT_CORO_TYPE || tp == (uintptr_t)PYRT_GEN_TYPE ||
                  tp == (uintptr_t)PYRT_ASYNCGEN_TYPE);
}

/* The chain from coroutine c, innermost first, into a (frames, nframes, truncated, coro). */
static int chain_read(struct reader *r, struct probe_atask *a, uintptr_t c)
{
    struct probe_aframe fr[MAX_CHAIN];
    int n = 0;
    if (c && is_gen(type_of(c)))
        a->coro = str_read(rd_ptr(c + offsetof(PyGenObject, gi_qualname)), 200);
    while (c && is_gen(type_of(c))) {
        int8_t state = 0;
        if (n == MAX_CHAIN) {
            a->truncated = 1;
            break;
        }
        if (AREAD(c + offsetof(PyGenObject, gi_frame_state), &state, 1) != 0 ||
            FRAME_STATE_FINISHED(state))
            break;
        uintptr_t fp = c + offsetof(PyGenObject, gi_iframe);
        struct pyrt_walk w = {.rd = AREAD,
                              .flags = PYRT_WALK_CHECK,
                              .max = 1,
                              .out = &r->pos,
                              .ext = &r->ext,
                              .memo = r->memo,
                              .nmemo = CODE_SLOTS};
        const struct code_slot *cs;
        if (pyrt_frames_walk(&w, fp) != 1 || !(cs = code_get(r, r->pos.code)))
            break;
        fr[n].func = strdup(cs->func);
        fr[n].file = strdup(cs->file);
        fr[n].line = r->ext.line != PYRT_NO_LINE
                         ? r->ext.line
                         : pyrt_code_line(cs->table, cs->tablen, cs->firstlineno, r->pos.lasti);
        if (!fr[n].func || !fr[n].file) {
            free(fr[n].func);
            free(fr[n].file);
            break;
        }
        n++;
        if (state == FRAME_EXECUTING) {
            a->running = 1;
            break;
        }
        if (state != FRAME_SUSPENDED_YIELD_FROM)
            break;
        /* suspended in an await: what it awaits is the top of its value stack (3.14); 3.15
         * keeps the value sent above it, so the awaitable is the one under the top there */
        uintptr_t sp = rd_ptr(fp + offsetof(_PyInterpreterFrame, stackpointer));
        _PyStackRef top[2];
        if (!sp || AREAD(sp - sizeof top, top, sizeof top) != 0)
            break;
        c = pyrt_ref_addr(top[1]);
#if PY_VERSION_HEX >= 0x030F0000
        if (!is_gen(type_of(c)))
            c = pyrt_ref_addr(top[0]);
#endif
    }
    return pyrt_atask_take_frames(a, fr, n);
}

static long tid_of(unsigned long ident)
{
#ifdef PYRT_REMOTE
    (void)ident; /* 3.14 keeps every thread's native id */
    return 0;
#else
    return pyrt_tid_from_pthread(ident);
#endif
}

struct list {
    uintptr_t head;
    long tid; /* the thread whose list it is, 0 the interpreter's */
    unsigned long ident;
    uintptr_t loop, running;
};

static int addr_index(const struct probe_atasks *a, uintptr_t addr)
{
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].addr == addr)
            return i;
    return -1;
}

static int await_add(struct probe_atask *w, int idx)
{
    for (int i = 0; i < w->nawaits; i++)
        if (w->awaits[i] == idx)
            return 0;
    int *v = realloc(w->awaits, (size_t)(w->nawaits + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    w->awaits = v;
    w->awaits[w->nawaits++] = idx;
    return 0;
}

/* Task i is awaited by what its awaited_by holds: each such task awaits i. */
static int awaited_by_read(const struct aoffs *o, struct probe_atasks *a, int i, uintptr_t t)
{
    uintptr_t by = rd_ptr(t + o->t_awaited_by);
    uint8_t is_set = 0;
    if (!by)
        return 0;
    if (AREAD(t + o->t_awaited_by_is_set, &is_set, 1) != 0)
        return 0;
    if (!is_set) {
        int w = addr_index(a, by);
        return w >= 0 && w != i ? await_add(&a->tasks[w], i) : 0;
    }
    PySetObject s;
    uintptr_t set_type = (uintptr_t)PYRT_SET_TYPE; /* 0: the target's is not known */
    if (!set_type || type_of(by) != set_type || AREAD(by, &s, sizeof s) != 0 || s.mask < 0 ||
        s.mask >= MAX_SET || !s.table)
        return 0;
    for (Py_ssize_t k = 0; k <= s.mask; k++) {
        setentry e;
        if (AREAD((uintptr_t)&s.table[k], &e, sizeof e) != 0)
            break;
        if (!e.key || e.hash == -1)
            continue; /* empty or a removed key */
        int w = addr_index(a, (uintptr_t)e.key);
        if (w >= 0 && w != i && await_add(&a->tasks[w], i) < 0)
            return -ENOMEM;
    }
    return 0;
}

int pyrt_asyncio_tasks_mem(struct probe_atasks *out, struct pb_err *err)
{
    memset(out, 0, sizeof *out);
    const struct aoffs *o = offsets();
    if (!o)
        return pb_err_set(err, PB_ESTATE, "asyncio is not loaded or publishes no task offsets");
    struct pyrt_interp_iter it;
    struct pyrt_interp in;
    if (pyrt_interp_first(&it, AREAD) < 0 || pyrt_interp_next(&it, &in, AREAD) != 1)
        return pb_err_set(err, -EFAULT, "unreadable main interpreter state");
    /* The lists: each thread state's, then the interpreter's. */
    struct list *lists = calloc(PYRT_MAX_THREADS + 1, sizeof *lists);
    int nl = 0;
    if (!lists)
        return pb_err_set(err, -ENOMEM, "out of memory");
    uintptr_t ts_addr = in.head;
    while (ts_addr && nl < PYRT_MAX_THREADS) {
        struct pyrt_tstate ts;
        if (pyrt_tstate_read(ts_addr, &ts, AREAD) != 0 || ts.interp != in.addr)
            break;
        lists[nl] = (struct list){.head = ts_addr + o->ts_head,
                                  .tid = ts.native_id > 0 ? ts.native_id : tid_of(ts.ident),
                                  .ident = ts.ident,
                                  .loop = rd_ptr(ts_addr + o->ts_loop),
                                  .running = rd_ptr(ts_addr + o->ts_task)};
        nl++;
        ts_addr = ts.next;
        if (ts_addr == in.head)
            break;
    }
    lists[nl++] = (struct list){.head = in.addr + o->i_head};
    struct reader *r = calloc(1, sizeof *r);
    out->tasks = calloc(MAX_TASKS, sizeof *out->tasks);
    if (!r || !out->tasks) {
        free(lists);
        free(r);
        free(out->tasks);
        out->tasks = NULL;
        return pb_err_set(err, -ENOMEM, "out of memory");
    }
    r->o = o;
    int rc = 0;
    for (int l = 0; l < nl && rc == 0; l++) {
        uintptr_t head = lists[l].head, node = rd_ptr(head);
        int steps = 0;
        while (node && node != head && rc == 0) {
            if (out->ntasks == MAX_TASKS || steps++ >= MAX_TASKS) {
                out->truncated = 1;
                break;
            }
            uintptr_t t = node - o->t_node;
            struct probe_atask *a = &out->tasks[out->ntasks++];
            a->addr = t;
            a->name = name_read(rd_ptr(t + o->t_name));
            a->state = "pending";
            a->thread_id = lists[l].tid;
            a->ident = lists[l].ident;
            a->loop = lists[l].loop;
            if (!a->name || chain_read(r, a, rd_ptr(t + o->t_coro)) < 0)
                rc = pb_err_set(err, -ENOMEM, "out of memory");
            if (lists[l].running == t)
                a->running = 1;
            node = rd_ptr(node);
        }
    }
    for (int i = 0; rc == 0 && i < out->ntasks; i++)
        if (awaited_by_read(o, out, i, out->tasks[i].addr) < 0)
            rc = pb_err_set(err, -ENOMEM, "out of memory");
    for (int i = 0; i < CODE_SLOTS; i++) {
        free(r->code[i].func);
        free(r->code[i].file);
        free(r->code[i].table);
    }
    free(r);
    free(lists);
    if (rc == 0 && pyrt_atasks_link(out) < 0)
        rc = pb_err_set(err, -ENOMEM, "out of memory");
    if (rc < 0) {
        pyrt_atasks_free(out);
        return rc;
    }
    out->read = 1;
    out->via_memory = 1;
    return 0;
}

#else

int pyrt_asyncio_tasks_mem(struct probe_atasks *out, struct pb_err *err)
{
    memset(out, 0, sizeof *out);
    return pb_err_set(err, PB_ESTATE,
                      "CPython before 3.14 keeps no task lists to read without the GIL");
}

#ifdef PYRT_REMOTE
int pyrt_asyncio_mem_remote_set(const struct pyrt_asyncio_mem_remote *r)
{
    (void)r;
    return -1;
}
#endif

#endif
