/* SPDX-License-Identifier: MIT */
/* The crash handler (crash.h): async-signal-safe from end to end. It writes the report with
 * open(2)/write(2) and numbers formatted here, the native stack through libunwind from the
 * signal's ucontext (names by unw_get_proc_name, modules and offsets from /proc/self/maps read
 * in the handler), Python stacks through pyrt_sig_* (fault-proof reads, no GIL). Scratch space
 * is static: one thread writes at a time (the first to crash); a thread crashing meanwhile
 * waits briefly, then passes its signal on. Afterwards the previous handlers are put back and
 * the signal is handed to them: a fault re-runs the faulting instruction, a sent signal
 * (kill, abort) is sent again to this thread. docs/crash.md shows a report. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "crash.h"
#include "probe.h"
#include "pyrt_sig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NATIVE 128
#define MAX_PY 256
#define MAX_THREADS 256

/* Scratch for the one writer. */
static struct pyrt_sig_frame pyframes[MAX_PY];
static uintptr_t tstates[MAX_THREADS];
static long tids[MAX_THREADS];
static char maps[1024 * 1024]; /* /proc/self/maps of a large process (torch: thousands of lines) */
static size_t maps_len;
static char func[256], file[1024], sym[512], pathbuf[512];
static unw_cursor_t cursor;
static atomic_long writer;

struct out {
    int fd;
    size_t n;
    char buf[4096];
};
static struct out out;

static void flush(struct out *o)
{
    size_t off = 0;
    while (off < o->n) {
        ssize_t w = write(o->fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    o->n = 0;
}

static void put(struct out *o, const char *s)
{
    for (; *s; s++) {
        if (o->n == sizeof o->buf)
            flush(o);
        o->buf[o->n++] = *s;
    }
}

static void put_ch(struct out *o, char c)
{
    char s[2] = {c, 0};
    put(o, s);
}

static void put_dec(struct out *o, long long v)
{
    char b[24];
    int i = sizeof b - 1;
    unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u && i > 1);
    if (v < 0)
        b[--i] = '-';
    put(o, b + i);
}

static void put_hex(struct out *o, unsigned long long v)
{
    char b[24];
    int i = sizeof b - 1;
    b[i] = '\0';
    do {
        b[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v && i > 2);
    b[--i] = 'x';
    b[--i] = '0';
    put(o, b + i);
}

void probe_crash_path(const char *tmpl, long pid, char *buf, size_t n)
{
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 1 < n; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            char d[24];
            int i = sizeof d - 1;
            d[i] = '\0';
            unsigned long u = (unsigned long)pid;
            do {
                d[--i] = (char)('0' + u % 10);
                u /= 10;
            } while (u && i > 0);
            for (const char *q = d + i; *q && k + 1 < n; q++)
                buf[k++] = *q;
            p++;
        } else {
            buf[k++] = *p;
        }
    }
    buf[k] = '\0';
}

static void read_maps(void)
{
    maps_len = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while (maps_len + 1 < sizeof maps) {
        ssize_t r = read(fd, maps + maps_len, sizeof maps - 1 - maps_len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        maps_len += (size_t)r;
    }
    maps[maps_len] = '\0';
    close(fd);
}

static unsigned long long hex_at(const char **p)
{
    unsigned long long v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (unsigned)d;
    }
}

/* " (module+0xOFF)" for pc from the maps read at the crash: offset in the file, as
 * addr2line/gdb want it. */
static void put_module(struct out *o, unsigned long long pc)
{
    const char *p = maps, *end = maps + maps_len;
    while (p < end) {
        const char *line = p;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        const char *q = line;
        unsigned long long lo = hex_at(&q);
        if (*q++ != '-')
            continue;
        unsigned long long hi = hex_at(&q);
        if (pc < lo || pc >= hi)
            continue;
        q += 6; /* " rwxp " */
        unsigned long long off = hex_at(&q);
        /* Skip device and inode to the path. */
        for (int f = 0; f < 2 && q < p; f++) {
            while (q < p && *q == ' ')
                q++;
            while (q < p && *q != ' ' && *q != '\n')
                q++;
        }
        while (q < p && *q == ' ')
            q++;
        put(o, " (");
        if (q < p && *q != '\n') {
            while (q < p && *q != '\n')
                put_ch(o, *q++);
        } else {
            put(o, "anonymous");
        }
        put(o, "+");
        put_hex(o, pc - lo + off);
        put(o, ")");
        return;
    }
}

static void put_tid_name(struct out *o, long tid)
{
    char path[64] = "/proc/self/task/";
    size_t k = strlen(path);
    char d[24];
    int i = sizeof d - 1;
    d[i] = '\0';
    unsigned long u = (unsigned long)tid;
    do {
        d[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u && i > 0);
    for (const char *q = d + i; *q; q++)
        path[k++] = *q;
    memcpy(path + k, "/comm", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char name[32];
    ssize_t r = read(fd, name, sizeof name - 1);
    close(fd);
    if (r <= 0)
        return;
    name[r] = '\0';
    name[strcspn(name, "\n")] = '\0';
    put(o, " \"");
    put(o, name);
    put(o, "\"");
}

static void native_stack(struct out *o, void *uc)
{
    put(o, "\nNative stack of the crashing thread (innermost first):\n");
    if (unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) != 0) {
        put(o, "  (libunwind could not start from the signal context)\n");
        return;
    }
    int n = 0;
    do {
        unw_word_t ip = 0, off = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        put(o, "  #");
        put_dec(o, n);
        put(o, n < 10 ? "  " : " ");
        put_hex(o, ip);
        put(o, " ");
        /* A stripped library gives the nearest exported symbol, however far: past 64 KiB it
         * names the wrong function, so only the module offset is shown. */
        if (unw_get_proc_name(&cursor, sym, sizeof sym, &off) == 0 && sym[0] && off < 0x10000) {
            put(o, sym);
            put(o, "+");
            put_hex(o, off);
        } else {
            put(o, "??");
        }
        put_module(o, ip);
        put(o, "\n");
    } while (++n < MAX_NATIVE && unw_step(&cursor) > 0);
}

static void python_stack(struct out *o, int n)
{
    if (n <= 0) {
        put(o, "  (no Python frames)\n");
        return;
    }
    for (int i = 0; i < n; i++) {
        int line = 0;
        pyrt_sig_describe(&pyframes[i], func, sizeof func, file, sizeof file, &line);
        put(o, "  #");
        put_dec(o, i);
        put(o, i < 10 ? "  " : " ");
        put(o, func);
        put(o, " (");
        put(o, file);
        put(o, ":");
        put_dec(o, line);
        put(o, ")\n");
    }
}

static void header(struct out *o, int sig, const siginfo_t *si, long tid)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    put(o, "probing crash report\nsignal: ");
    put(o, probe_crash_signame(sig));
    put(o, " (");
    put_dec(o, sig);
    put(o, "), code ");
    put_dec(o, si->si_code);
    if (si->si_code <= 0) {
        put(o, ", sent by pid ");
        put_dec(o, si->si_pid);
    } else if (sig != SIGABRT) {
        put(o, ", fault address ");
        put_hex(o, (unsigned long long)(uintptr_t)si->si_addr);
    }
    put(o, "\npid: ");
    put_dec(o, getpid());
    put(o, "\nthread: ");
    put_dec(o, tid);
    put_tid_name(o, tid);
    put(o, "\ntime: ");
    put_dec(o, (long long)ts.tv_sec);
    put(o, " (epoch seconds)\npython: ");
    put(o, probe_info_get()->python_version);
    put(o, "\n");
}

static void report(int sig, siginfo_t *si, void *uc, long tid)
{
    probe_crash_path(probe_crash_template, (long)getpid(), pathbuf, sizeof pathbuf);
    out.fd = open(pathbuf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out.fd < 0)
        return;
    out.n = 0;
    read_maps();
    header(&out, sig, si, tid);
    flush(&out);
    native_stack(&out, uc);
    flush(&out);
    uintptr_t self = pyrt_sig_tstate_self();
    put(&out, "\nPython stack of the crashing thread (innermost first):\n");
    python_stack(&out, pyrt_sig_frames_self(pyframes, MAX_PY));
    flush(&out);
    int nt = pyrt_sig_threads(tstates, tids, MAX_THREADS);
    put(&out, "\nPython stacks of every thread (");
    put_dec(&out, nt);
    put(&out, nt == 1 ? " thread):\n" : " threads):\n");
    for (int i = 0; i < nt; i++) {
        put(&out, "Thread ");
        if (tids[i] > 0) {
            put_dec(&out, tids[i]);
            put_tid_name(&out, tids[i]);
        } else {
            put(&out, "(native id unknown) state ");
            put_hex(&out, tstates[i]);
        }
        put(&out, tstates[i] == self ? " (crashing thread):\n" : ":\n");
        python_stack(&out, pyrt_sig_frames_tstate(tstates[i], pyframes, MAX_PY));
        flush(&out);
    }
    put(&out, "\nend of report\n");
    flush(&out);
    close(out.fd);
}

static int sig_index(int sig)
{
    for (int i = 0; i < PROBE_CRASH_NSIGS; i++)
        if (probe_crash_signals[i] == sig)
            return i;
    return -1;
}

/* Put back what handled sig before us and make sure it sees this signal: a fault (si_code >
 * 0, not SIGABRT) happens again when the handler returns; a sent one is sent again, pending
 * (blocked) until the handler returns. */
static void pass_on(int sig, const siginfo_t *si, int restore)
{
    int i = sig_index(sig);
    if (restore && i >= 0)
        sigaction(sig, &probe_crash_prev[i], NULL);
    if (si->si_code <= 0 || sig == SIGABRT)
        syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)sig);
}

void probe_crash_on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    long tid = (long)syscall(SYS_gettid);
    if (!atomic_load(&probe_crash_armed)) {
        /* Disarmed, yet still called: a handler installed after ours chains to us. */
        pass_on(sig, si, 1);
        errno = saved;
        return;
    }
    long none = 0;
    if (!atomic_compare_exchange_strong(&writer, &none, tid)) {
        /* Another thread is writing its report (it ends the process): wait for it, at most
         * 2 s, then pass this one on. */
        struct timespec ms10 = {0, 10 * 1000 * 1000};
        for (int i = 0; i < 200 && atomic_load(&writer) != 0; i++)
            nanosleep(&ms10, NULL);
        pass_on(sig, si, 1);
        errno = saved;
        return;
    }
    report(sig, si, uc, tid);
    atomic_store(&probe_crash_fired, 1);
    /* One shot: every previous handler back, then this signal to its own. */
    atomic_store(&probe_crash_armed, 0);
    for (int i = 0; i < PROBE_CRASH_NSIGS; i++) {
        struct sigaction cur;
        if (sigaction(probe_crash_signals[i], NULL, &cur) == 0 &&
            (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == probe_crash_on_signal)
            sigaction(probe_crash_signals[i], &probe_crash_prev[i], NULL);
    }
    pass_on(sig, si, 0);
    atomic_store(&writer, 0);
    errno = saved;
}
