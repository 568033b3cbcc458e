/* SPDX-License-Identifier: MIT */
/* The crash handler (crash/crash.h): async-signal-safe from end to end. It writes the report
 * with open(2)/write(2) and numbers formatted here; the native stack through the sampler's
 * unwinder (unwind.h) from the signal's ucontext, with modules, offsets and ELF images found
 * through /proc/self/maps read in the handler (unwind_maps.c), never through the dynamic
 * loader, whose lock the crashing thread may hold; names from each file's symbol table read
 * with pread; Python stacks through pyrt_sig_* (fault-proof reads, no GIL). Scratch space is
 * static: one thread writes at a time (the first to crash); a thread crashing meanwhile waits
 * briefly, then passes its signal on. Afterwards the previous handlers are put back and the
 * signal is handed to them: a fault re-runs the faulting instruction, a sent signal (kill,
 * abort) is sent again to this thread. The state the handler runs on is defined here and
 * filled by crash/crash.c while disarmed. docs/crash.md shows a report. */
#include "crash_sig.h"
#include "pyrt_sig.h"
#include "unwind.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NATIVE 128
#define MAX_PY 256
#define MAX_THREADS 256

const int probe_crash_signals[PROBE_CRASH_NSIGS] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction probe_crash_prev[PROBE_CRASH_NSIGS];
atomic_int probe_crash_armed, probe_crash_fired;
char probe_crash_template[256];
char probe_crash_python[32];

const char *sig_crash_signame(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

/* Scratch for the one writer. */
static struct pyrt_sig_frame pyframes[MAX_PY];
static uintptr_t tstates[MAX_THREADS];
static long tids[MAX_THREADS];
static long long interps[MAX_THREADS];
/* /proc/self/maps of a large process (torch: thousands of lines). */
static char mapsbuf[1024 * 1024];
static struct unwind_maps maps = {mapsbuf, sizeof mapsbuf, 0};
static char func[256], file[1024], sym[512], pathbuf[512], modpath[1024];
static struct unwind_cache ucache;
static uintptr_t pcs[MAX_NATIVE];
static ElfW(Shdr) shdrs[128];
static ElfW(Sym) syms[256];
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

/* v in decimal, written backwards from the end of b[24]; returns where it starts.
 * Async-signal-safe. */
static const char *decimal(char b[24], long long v)
{
    int i = 23;
    unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u && i > 1);
    if (v < 0)
        b[--i] = '-';
    return b + i;
}

static void put_dec(struct out *o, long long v)
{
    char b[24];
    put(o, decimal(b, v));
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

void sig_crash_path(const char *tmpl, long pid, char *buf, size_t n)
{
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 1 < n; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            char d[24];
            for (const char *q = decimal(d, pid); *q && k + 1 < n; q++)
                buf[k++] = *q;
            p++;
        } else {
            buf[k++] = *p;
        }
    }
    buf[k] = '\0';
}

static ssize_t pread_all(int fd, void *buf, size_t n, off_t off)
{
    ssize_t r;
    do {
        r = pread(fd, buf, n, off);
    } while (r < 0 && errno == EINTR);
    return r;
}

/* The function symbol of file fd holding (or nearest below) vaddr, from .symtab, else
 * .dynsym: its name into out and vaddr's offset from it. 0, or -1. */
static int elf_sym(int fd, uintptr_t vaddr, char *name, size_t n, uintptr_t *offp)
{
    ElfW(Ehdr) eh;
    if (pread_all(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_shentsize != sizeof shdrs[0] ||
        eh.e_shnum == 0 || eh.e_shnum > 128)
        return -1;
    size_t shbytes = eh.e_shnum * sizeof shdrs[0];
    if (pread_all(fd, shdrs, shbytes, (off_t)eh.e_shoff) != (ssize_t)shbytes)
        return -1;
    static const unsigned kinds[2] = {SHT_SYMTAB, SHT_DYNSYM};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < eh.e_shnum; i++) {
            const ElfW(Shdr) *sh = &shdrs[i];
            if (sh->sh_type != kinds[k] || sh->sh_entsize != sizeof syms[0] ||
                sh->sh_link >= eh.e_shnum)
                continue;
            size_t total = sh->sh_size / sizeof syms[0];
            uintptr_t best = 0;
            ElfW(Word) best_name = 0;
            int found = 0, inside = 0;
            for (size_t at = 0; at < total && at < 2000000; at += 256) {
                size_t cnt = total - at < 256 ? total - at : 256;
                ssize_t r = pread_all(fd, syms, cnt * sizeof syms[0],
                                      (off_t)(sh->sh_offset + at * sizeof syms[0]));
                if (r != (ssize_t)(cnt * sizeof syms[0]))
                    break;
                for (size_t j = 0; j < cnt; j++) {
                    const ElfW(Sym) *y = &syms[j];
                    int type = ELF64_ST_TYPE(y->st_info);
                    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || y->st_shndx == SHN_UNDEF ||
                        y->st_value > vaddr || y->st_name == 0)
                        continue;
                    int in = y->st_size && vaddr < y->st_value + y->st_size;
                    if (!found || (in && !inside) || (in == inside && y->st_value > best)) {
                        best = y->st_value, best_name = y->st_name, found = 1, inside = in;
                    }
                }
            }
            if (!found)
                continue;
            const ElfW(Shdr) *str = &shdrs[sh->sh_link];
            if (best_name >= str->sh_size)
                continue;
            ssize_t r = pread_all(fd, name, n - 1, (off_t)(str->sh_offset + best_name));
            if (r <= 0)
                continue;
            name[r] = '\0';
            *offp = vaddr - best;
            return 0;
        }
    }
    return -1;
}

/* The function name for pc, and pc's offset into it. 0, or -1. */
static int sym_name(uintptr_t pc, char *name, size_t n, uintptr_t *off)
{
    struct unwind_mapline ml;
    struct unwind_mod m;
    uintptr_t base, bias;
    size_t len;
    name[0] = '\0';
    if (sig_unwind_maps_line(&maps, pc, &ml) != 0 || sig_unwind_maps_base(&maps, &ml, &base) != 0 ||
        ml.path[0] != '/' || sig_unwind_mod_from_image(base, &m, &bias) != 0)
        return -1;
    len = (size_t)(ml.path_end - ml.path);
    if (len >= sizeof modpath)
        return -1;
    memcpy(modpath, ml.path, len);
    modpath[len] = '\0';
    int fd = open(modpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = elf_sym(fd, pc - bias, name, n, off);
    close(fd);
    return rc;
}

/* " (module+0xOFF)" for pc from the maps read at the crash: offset in the file, as
 * addr2line/gdb want it. */
static void put_module(struct out *o, unsigned long long pc)
{
    struct unwind_mapline ml;
    if (sig_unwind_maps_line(&maps, pc, &ml) != 0)
        return;
    put(o, " (");
    if (ml.path < ml.path_end) {
        for (const char *q = ml.path; q < ml.path_end; q++)
            put_ch(o, *q);
    } else {
        put(o, "anonymous");
    }
    put(o, "+");
    put_hex(o, pc - ml.lo + ml.off);
    put(o, ")");
}

static void put_tid_name(struct out *o, long tid)
{
    char path[64] = "/proc/self/task/";
    size_t k = strlen(path);
    char d[24];
    for (const char *q = decimal(d, tid); *q; q++)
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
    int n = sig_unwind_native((const ucontext_t *)uc, pcs, MAX_NATIVE, sig_unwind_maps_find, &maps,
                              &ucache);
    if (n <= 0) {
        put(o, "  (no native frames: the signal context has no pc)\n");
        return;
    }
    for (int i = 0; i < n; i++) {
        uintptr_t ip = pcs[i], off = 0;
        put(o, "  #");
        put_dec(o, i);
        put(o, i < 10 ? "  " : " ");
        put_hex(o, ip);
        put(o, " ");
        /* Names from the symbol table of the pc itself for the crashing frame, of the call
         * (pc - 1) for the others. A stripped library gives the nearest symbol, however
         * far: past 64 KiB it names the wrong function, so only the module offset is shown. */
        uintptr_t look = i == 0 ? ip : ip - 1;
        if (sym_name(look, sym, sizeof sym, &off) == 0 && sym[0] && off < 0x10000) {
            put(o, sym);
            put(o, "+");
            put_hex(o, off + (ip - look));
        } else {
            put(o, "??");
        }
        put_module(o, ip);
        put(o, "\n");
    }
}

static void python_stack(struct out *o, int n)
{
    if (n <= 0) {
        put(o, "  (no Python frames)\n");
        return;
    }
    for (int i = 0; i < n; i++) {
        int line = 0;
        sig_pyrt_describe(&pyframes[i], func, sizeof func, file, sizeof file, &line);
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
    put(o, sig_crash_signame(sig));
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
    put(o, probe_crash_python);
    put(o, "\n");
}

static void report(int sig, siginfo_t *si, void *uc, long tid)
{
    sig_crash_path(probe_crash_template, (long)getpid(), pathbuf, sizeof pathbuf);
    out.fd = open(pathbuf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out.fd < 0)
        return;
    out.n = 0;
    sig_unwind_maps_read(&maps);
    header(&out, sig, si, tid);
    flush(&out);
    native_stack(&out, uc);
    flush(&out);
    uintptr_t self = sig_pyrt_tstate_self();
    put(&out, "\nPython stack of the crashing thread (innermost first):\n");
    python_stack(&out, sig_pyrt_frames_self(pyframes, MAX_PY));
    flush(&out);
    int nt = sig_pyrt_threads(tstates, tids, interps, MAX_THREADS);
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
        if (interps[i] != 0) { /* a subinterpreter's thread state */
            put(&out, " interp ");
            put_dec(&out, interps[i]);
        }
        put(&out, tstates[i] == self ? " (crashing thread):\n" : ":\n");
        python_stack(&out, sig_pyrt_frames_tstate(tstates[i], pyframes, MAX_PY));
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

void sig_crash_on_signal(int sig, siginfo_t *si, void *uc)
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
        if (sigaction(probe_crash_signals[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == sig_crash_on_signal)
            sigaction(probe_crash_signals[i], &probe_crash_prev[i], NULL);
    }
    pass_on(sig, si, 0);
    atomic_store(&writer, 0);
    errno = saved;
}
