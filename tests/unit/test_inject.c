/* SPDX-License-Identifier: MIT */
/* Injector tests against real processes: pyenv CPythons and Debian's python3 sleeping, blocked in
 * read(2) or nanosleep(2), a non-Python `sleep`, stopped and strace'd targets, and failure paths
 * through the ptrace fault shim (tests/shim/ptrace_fault.c). A fixture library is built at run
 * time with cc; its constructor writes a marker file named after the target's pid. Needs root or
 * ptrace rights over own children, cc, strace, and pyenv pythons (a missing one fails the test). */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "injector/ptrace/ptrace.h"

struct target {
    pid_t pid;
    int in;  /* write end of its stdin, or -1 */
    int out; /* read end of its stdout */
};

static char tmpdir[PATH_MAX];
static char markdir[PATH_MAX]; /* where fixtures write markers; tmpdir unless set */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st != 0)
        UNIT_FAIL_("command failed (%d): %s", st, cmd);
}

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/inj-test-XXXXXX");
    ASSERT(mkdtemp(tmpdir) != NULL);
    ASSERT(chmod(tmpdir, 0755) == 0);
    if (!markdir[0])
        pb_strlcpy(markdir, tmpdir, sizeof markdir);
}

/* Build a fixture library; extra is appended to its source. Returns its path (static). */
static const char *fixture(const char *name, const char *extra)
{
    static char lib[PATH_MAX + 64];
    char src[PATH_MAX + 64];
    if (!tmpdir[0])
        make_tmpdir();
    snprintf(src, sizeof src, "%s/%s.c", tmpdir, name);
    FILE *f = fopen(src, "w");
    ASSERT(f != NULL);
    fprintf(f,
            "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n"
            "__attribute__((constructor)) static void probe_ctor(void) {\n"
            "  char p[512]; snprintf(p, sizeof p, \"%s/marker-%%d\", (int)getpid());\n"
            "  int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);\n"
            "  if (fd >= 0) { if (write(fd, \"x\", 1) < 0) {} close(fd); }\n}\n%s\n",
            markdir, extra ? extra : "");
    fclose(f);
    snprintf(lib, sizeof lib, "%s/%s.so", tmpdir, name);
    sh("cc -shared -fPIC -o %s %s", lib, src);
    return lib;
}

static int marker_count(pid_t pid)
{
    char p[PATH_MAX + 64];
    struct stat sb;
    snprintf(p, sizeof p, "%s/marker-%d", markdir, (int)pid);
    return stat(p, &sb) == 0 ? (int)sb.st_size : 0;
}

static const char *pyenv_python(const char *minor)
{
    static char path[PATH_MAX];
    const char *root = getenv("PYENV_ROOT");
    char pat[PATH_MAX];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/versions/%s.*/bin/python%s", root ? root : "/root/.pyenv", minor,
             minor);
    if (glob(pat, 0, NULL, &g) != 0 || g.gl_pathc == 0)
        UNIT_FAIL_("no pyenv python %s (%s)", minor, pat);
    pb_strlcpy(path, g.gl_pathv[g.gl_pathc - 1], sizeof path);
    globfree(&g);
    return path;
}

/* The minors 3.6-3.13 that pyenv has here (a machine may lack some), in order; fails if none. */
static int pyenv_minors(const char *out[], int max)
{
    static const char *const all[] = {"3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"};
    const char *root = getenv("PYENV_ROOT");
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) {
        char pat[PATH_MAX];
        glob_t g;
        snprintf(pat, sizeof pat, "%s/versions/%s.*/bin/python%s", root ? root : "/root/.pyenv",
                 all[i], all[i]);
        if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0)
            out[n++] = all[i];
        globfree(&g);
    }
    if (n == 0)
        UNIT_FAIL_("no pyenv CPython 3.6-3.13 under %s", root ? root : "/root/.pyenv");
    return n;
}

static struct target start(const char *exe, const char *code)
{
    int in[2], out[2];
    ASSERT(pipe(in) == 0 && pipe(out) == 0);
    struct target t = {0, in[1], out[0]};
    t.pid = fork();
    ASSERT(t.pid >= 0);
    if (t.pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        if (code)
            execl(exe, exe, "-u", "-c", code, (char *)NULL);
        else
            execl(exe, exe, "100", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    return t;
}

/* Read one line from fd within timeout_ms; returns 1, or 0 on timeout/EOF. */
static int read_line(int fd, char *buf, size_t n, int timeout_ms)
{
    size_t got = 0;
    long long end = now_ms() + timeout_ms;
    while (got + 1 < n) {
        struct pollfd p = {fd, POLLIN, 0};
        long long left = end - now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return 0;
        if (read(fd, buf + got, 1) != 1)
            return 0;
        if (buf[got] == '\n')
            break;
        got++;
    }
    buf[got] = '\0';
    return 1;
}

static void expect_line(struct target *t, const char *prefix, char *buf, size_t n, int ms)
{
    if (!read_line(t->out, buf, n, ms))
        UNIT_FAIL_("no line starting with '%s' from pid %d within %d ms", prefix, (int)t->pid, ms);
    if (strncmp(buf, prefix, strlen(prefix)) != 0)
        UNIT_FAIL_("expected '%s...', got '%s'", prefix, buf);
}

/* Kill the target and remove this test's temp dir (a failed test leaves it for a look). */
static void stop_target(struct target *t)
{
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    if (tmpdir[0])
        sh("rm -rf %s", tmpdir);
    tmpdir[0] = '\0';
}

static int alive(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == 0;
}

/* First number of /proc/PID/syscall: the syscall the process is blocked in, or -1. */
static long blocked_syscall(pid_t pid)
{
    char p[64], buf[256];
    snprintf(p, sizeof p, "/proc/%d/syscall", (int)pid);
    if (pb_read_file(p, buf, sizeof buf) <= 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    return atol(buf);
}

static void wait_blocked(pid_t pid, long nr1, long nr2)
{
    long long end = now_ms() + 5000;
    long nr = -1;
    while (now_ms() < end) {
        nr = blocked_syscall(pid);
        if (nr == nr1 || nr == nr2)
            return;
        usleep(10000);
    }
    UNIT_FAIL_("pid %d not blocked in syscall %ld/%ld (last %ld)", (int)pid, nr1, nr2, nr);
}

static const char heartbeat_py[] =
    "import time\nwhile True:\n    print('hb', flush=True)\n    time.sleep(0.05)\n";

static void inject_into_sleeper(const char *exe)
{
    char line[256], found[PATH_MAX];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start(exe, heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    ASSERT_EQ(ptrace_maps_find(t.pid, "libprobing-", NULL, 0), 0);
    int rc = ptrace_inject(t.pid, lib, NULL, &err);
    if (rc != 0)
        UNIT_FAIL_("ptrace_inject: %d %s", rc, err.msg);
    ASSERT_EQ(marker_count(t.pid), 1);
    ASSERT_EQ(ptrace_maps_find(t.pid, "libprobing-", found, sizeof found), 1);
    ASSERT_STR_EQ(found, lib);
    /* Still alive and still beating: drain what piled up, then see fresh beats. */
    for (int i = 0; i < 5; i++)
        expect_line(&t, "hb", line, sizeof line, 2000);
    ASSERT(alive(t.pid));
    stop_target(&t);
}

TEST(inject_pyenv_311_sleeping)
{
    inject_into_sleeper(pyenv_python("3.11"));
}

/* pyenv's oldest and newest CPython that the probe fixture supports (3.8 and 3.13 on a machine
 * of this kind). */
TEST(inject_pyenv_oldest_sleeping)
{
    const char *m[8];
    int n = pyenv_minors(m, 8), i = 0;
    while (i < n - 1 && (strcmp(m[i], "3.6") == 0 || strcmp(m[i], "3.7") == 0))
        i++;
    inject_into_sleeper(pyenv_python(m[i]));
}

TEST(inject_pyenv_newest_sleeping)
{
    const char *m[8];
    int n = pyenv_minors(m, 8);
    inject_into_sleeper(pyenv_python(m[n - 1]));
}

TEST(inject_debian_python3_sleeping)
{
    inject_into_sleeper("/usr/bin/python3");
}

/* A busy, allocating target (threads too): the safe-point search must land outside malloc and
 * the loader, and the target must keep running. */
TEST(inject_busy_allocating_threads)
{
    char line[256];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t =
        start(pyenv_python("3.12"), "import threading, time\n"
                                    "def churn():\n"
                                    "    while True:\n"
                                    "        x = [str(i) * 3 for i in range(2000)]\n"
                                    "for _ in range(2):\n"
                                    "    threading.Thread(target=churn, daemon=True).start()\n"
                                    "n = 0\n"
                                    "while True:\n"
                                    "    n += 1\n"
                                    "    d = {i: bytearray(64) for i in range(500)}\n"
                                    "    if n % 50 == 0:\n"
                                    "        print('hb', flush=True)\n");
    expect_line(&t, "hb", line, sizeof line, 10000);
    for (int i = 0; i < 5; i++) {
        int rc = ptrace_inject(t.pid, lib, NULL, &err);
        if (rc != 0)
            UNIT_FAIL_("injection %d: %d %s", i, rc, err.msg);
    }
    ASSERT_EQ(marker_count(t.pid), 1);
    for (int i = 0; i < 3; i++)
        expect_line(&t, "hb", line, sizeof line, 5000);
    ASSERT(alive(t.pid));
    stop_target(&t);
}

/* A raw read(2) (ctypes: no EINTR retry in Python) must keep waiting and return the bytes
 * written after the injection, as if nothing happened. */
TEST(inject_blocked_read_resumes)
{
    char line[256];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t =
        start(pyenv_python("3.11"),
              "import ctypes\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "buf = ctypes.create_string_buffer(100)\n"
              "print('ready', flush=True)\n"
              "n = libc.read(0, buf, 100)\n"
              "print('got', n, ctypes.get_errno(), buf.raw[:max(n, 0)].decode().strip(),"
              " flush=True)\n");
    expect_line(&t, "ready", line, sizeof line, 10000);
    wait_blocked(t.pid, 0 /* read */, 0);
    int rc = ptrace_inject(t.pid, lib, NULL, &err);
    if (rc != 0)
        UNIT_FAIL_("ptrace_inject: %d %s", rc, err.msg);
    ASSERT_EQ(marker_count(t.pid), 1);
    usleep(100000);
    ASSERT_EQ(blocked_syscall(t.pid), 0); /* still waiting in read */
    ASSERT(write(t.in, "hello\n", 6) == 6);
    expect_line(&t, "got", line, sizeof line, 5000);
    ASSERT_STR_EQ(line, "got 6 0 hello");
    stop_target(&t);
}

/* nanosleep(2) interrupted by the injection restarts and sleeps the full time. */
TEST(inject_nanosleep_keeps_time)
{
    char line[256];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t =
        start(pyenv_python("3.11"),
              "import ctypes, time\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "class TS(ctypes.Structure):\n"
              "    _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]\n"
              "print('ready', flush=True)\n"
              "t0 = time.monotonic()\n"
              "rc = libc.nanosleep(ctypes.byref(TS(1, 500000000)), None)\n"
              "print('slept', rc, ctypes.get_errno(), round(time.monotonic() - t0, 2),"
              " flush=True)\n");
    expect_line(&t, "ready", line, sizeof line, 10000);
    wait_blocked(t.pid, 35 /* nanosleep */, 230 /* clock_nanosleep */);
    int rc = ptrace_inject(t.pid, lib, NULL, &err);
    if (rc != 0)
        UNIT_FAIL_("ptrace_inject: %d %s", rc, err.msg);
    expect_line(&t, "slept", line, sizeof line, 5000);
    int src = -9, e = -9;
    double secs = 0;
    ASSERT(sscanf(line, "slept %d %d %lf", &src, &e, &secs) == 3);
    ASSERT_EQ(src, 0);
    if (secs < 1.45 || secs > 2.5)
        UNIT_FAIL_("slept %.2f s instead of 1.5: %s", secs, line);
    stop_target(&t);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* 20 injections in a row into the same sleeping python: all succeed, it never dies. */
TEST(inject_twenty_times)
{
    char line[256];
    long long ms[20];
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start(pyenv_python("3.12"), heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    for (int i = 0; i < 20; i++) {
        struct pb_err err = {0};
        long long t0 = now_ms();
        int rc = ptrace_inject(t.pid, lib, NULL, &err);
        ms[i] = now_ms() - t0;
        if (rc != 0)
            UNIT_FAIL_("injection %d: %d %s", i, rc, err.msg);
        ASSERT(alive(t.pid));
    }
    ASSERT_EQ(marker_count(t.pid), 1); /* dlopen of a loaded library does not rerun it */
    for (int i = 0; i < 3; i++)
        expect_line(&t, "hb", line, sizeof line, 2000);
    qsort(ms, 20, sizeof ms[0], cmp_ll);
    fprintf(stderr, "  injection time: median %lld ms, max %lld ms\n", ms[10], ms[19]);
    stop_target(&t);
}

TEST(inject_missing_library_reports_dlerror)
{
    char line[256], want[128];
    struct pb_err err = {0};
    struct target t = start(pyenv_python("3.11"), heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    int rc = ptrace_inject(t.pid, "/nonexistent/libprobing-nope.so", NULL, &err);
    ASSERT_EQ(rc, PB_EDLOPEN);
    ASSERT_EQ(err.code, PB_EDLOPEN);
    snprintf(want, sizeof want,
             "dlopen of /nonexistent/libprobing-nope.so failed in %d: ", (int)t.pid);
    if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, "No such file"))
        UNIT_FAIL_("unexpected message: %s", err.msg);
    ASSERT_EQ(ptrace_maps_find(t.pid, "libprobing-", NULL, 0), 0);
    for (int i = 0; i < 5; i++)
        expect_line(&t, "hb", line, sizeof line, 2000);
    stop_target(&t);
}

TEST(inject_unresolved_symbol_reports_dlerror)
{
    char line[256];
    struct pb_err err = {0};
    const char *lib =
        fixture("libprobing-bad", "extern int no_such_function_anywhere(void);\n"
                                  "int use_it(void) { return no_such_function_anywhere(); }\n");
    struct target t = start("/usr/bin/python3", heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    int rc = ptrace_inject(t.pid, lib, NULL, &err);
    ASSERT_EQ(rc, PB_EDLOPEN);
    if (!strstr(err.msg, "undefined symbol: no_such_function_anywhere"))
        UNIT_FAIL_("unexpected message: %s", err.msg);
    ASSERT_EQ(marker_count(t.pid), 0);
    expect_line(&t, "hb", line, sizeof line, 2000);
    ASSERT(alive(t.pid));
    stop_target(&t);
}

TEST(inject_non_python_refused)
{
    char want[128];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start("/bin/sleep", NULL);
    usleep(200000);
    ASSERT_EQ(ptrace_inject(t.pid, lib, NULL, &err), PB_ENOPYTHON);
    snprintf(want, sizeof want, "process %d (sleep) is not a Python process", (int)t.pid);
    if (strncmp(err.msg, want, strlen(want)) != 0)
        UNIT_FAIL_("unexpected message: %s", err.msg);
    struct ptrace_pyver v;
    ASSERT_EQ(ptrace_pyver_detect(t.pid, &v, &err), PB_ENOPYTHON);
    ASSERT_EQ(marker_count(t.pid), 0);
    stop_target(&t);
}

TEST(inject_no_such_pid)
{
    char want[64];
    struct pb_err err = {0};
    pid_t p = fork();
    ASSERT(p >= 0);
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0); /* p is now free */
    ASSERT_EQ(ptrace_inject(p, "/tmp/libprobing-x.so", NULL, &err), -ESRCH);
    snprintf(want, sizeof want, "no process %d: check the pid", (int)p);
    ASSERT_STR_EQ(err.msg, want);
    struct ptrace_pyver v;
    ASSERT_EQ(ptrace_pyver_detect(p, &v, &err), -ESRCH);
    ASSERT(ptrace_maps_find(p, "libprobing-", NULL, 0) < 0);
    if (tmpdir[0])
        sh("rm -rf %s", tmpdir);
}

static char proc_state(pid_t pid)
{
    char p[64], buf[2048];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    if (pb_read_file(p, buf, sizeof buf) <= 0)
        return '?';
    const char *s = strstr(buf, "State:");
    return s ? s[7] : '?';
}

TEST(inject_stopped_process_left_stopped)
{
    char line[256], want[160];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start(pyenv_python("3.11"), heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    kill(t.pid, SIGSTOP);
    int st;
    ASSERT_EQ(waitpid(t.pid, &st, WUNTRACED), t.pid);
    ASSERT(WIFSTOPPED(st));
    ASSERT_EQ(ptrace_inject(t.pid, lib, NULL, &err), PB_ESTOPPED);
    snprintf(want, sizeof want,
             "process %d is stopped (SIGSTOP): resume it with 'kill -CONT %d'"
             " and retry",
             (int)t.pid, (int)t.pid);
    ASSERT_STR_EQ(err.msg, want);
    usleep(100000);
    ASSERT_EQ(proc_state(t.pid), 'T');
    ASSERT_EQ(marker_count(t.pid), 0);
    kill(t.pid, SIGCONT);
    stop_target(&t);
}

TEST(inject_traced_by_strace)
{
    char line[256], cmd[128], want[128];
    struct pb_err err = {0};
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start(pyenv_python("3.11"), heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    pid_t s = fork();
    ASSERT(s >= 0);
    if (s == 0) {
        snprintf(cmd, sizeof cmd, "%d", (int)t.pid);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execlp("strace", "strace", "-o", "/dev/null", "-p", cmd, (char *)NULL);
        _exit(127);
    }
    /* Wait for strace to attach (TracerPid set) before trying, so as not to race it. */
    char sp[64], buf[2048];
    snprintf(sp, sizeof sp, "/proc/%d/status", (int)t.pid);
    long long end = now_ms() + 5000;
    while (now_ms() < end) {
        const char *tp = pb_read_file(sp, buf, sizeof buf) > 0 ? strstr(buf, "TracerPid:") : NULL;
        if (tp && atoi(tp + 10) == (int)s)
            break;
        usleep(10000);
    }
    int rc = ptrace_inject(t.pid, lib, NULL, &err);
    ASSERT_EQ(rc, PB_ETRACED);
    snprintf(want, sizeof want, "process %d is already traced by %d (strace): detach it first",
             (int)t.pid, (int)s);
    ASSERT_STR_EQ(err.msg, want);
    kill(s, SIGTERM);
    waitpid(s, NULL, 0);
    /* Once strace is gone the same target can be injected. */
    end = now_ms() + 5000;
    do {
        rc = ptrace_inject(t.pid, lib, NULL, &err);
    } while (rc == PB_ETRACED && now_ms() < end && usleep(20000) == 0);
    if (rc != 0)
        UNIT_FAIL_("after strace detached: %d %s", rc, err.msg);
    expect_line(&t, "hb", line, sizeof line, 2000);
    stop_target(&t);
}

static void check_pyver(const char *exe, int minor, int micro)
{
    char line[256];
    struct pb_err err = {0};
    struct ptrace_pyver v;
    struct target t = start(exe, "import time\nprint('hb', flush=True)\ntime.sleep(30)\n");
    expect_line(&t, "hb", line, sizeof line, 10000);
    int rc = ptrace_pyver_detect(t.pid, &v, &err);
    if (rc != 0)
        UNIT_FAIL_("%s: %d %s", exe, rc, err.msg);
    ASSERT_EQ(v.major, 3);
    ASSERT_EQ(v.minor, minor);
    if (micro >= 0)
        ASSERT_EQ(v.micro, micro);
    ASSERT(v.source[0] == '/');
    stop_target(&t);
}

/* The micro version from pyenv's directory name (versions/3.X.Y). */
static void check_pyenv(const char *minor_s, int minor)
{
    const char *exe = pyenv_python(minor_s);
    const char *d = strstr(exe, "/versions/");
    int a, b, c = -1;
    ASSERT(d && sscanf(d, "/versions/%d.%d.%d", &a, &b, &c) == 3);
    check_pyver(exe, minor, c);
}

TEST(pyver_pyenv_each)
{
    const char *m[8];
    int n = pyenv_minors(m, 8);
    for (int i = 0; i < n; i++)
        check_pyenv(m[i], atoi(m[i] + 2));
}

TEST(pyver_debian_python3)
{
    check_pyver("/usr/bin/python3", 11, 2);
}

/* ---- the ptrace fault shim: PTRACE_SEIZE denied, target killed mid-injection ---- */

static const char *shim(void)
{
    static char so[PATH_MAX + 64];
    const char *src = "tests/shim/ptrace_fault.c";
    struct stat sb;
    if (stat(src, &sb) < 0)
        UNIT_FAIL_("%s not found: run the unit tests from the repository root", src);
    if (!tmpdir[0])
        make_tmpdir();
    snprintf(so, sizeof so, "%s/ptrace_fault.so", tmpdir);
    sh("cc -shared -fPIC -o %s %s -ldl", so, src);
    return so;
}

/* Helper mode: the unit-test binary re-executed with INJ_TEST_INJECT=pid:lib injects and prints
 * "rc<TAB>message" on stdout, under whatever LD_PRELOAD it was given. */
__attribute__((constructor)) static void inject_helper(void)
{
    const char *spec = getenv("INJ_TEST_INJECT");
    if (!spec)
        return;
    struct pb_err err = {0};
    int pid = atoi(spec);
    const char *lib = strchr(spec, ':');
    int rc = ptrace_inject(pid, lib ? lib + 1 : "", NULL, &err);
    printf("%d\t%s\n", rc, err.msg);
    fflush(stdout);
    _exit(0);
}

static int run_helper(pid_t pid, const char *lib, const char *env1, const char *env2, char *msg,
                      size_t n)
{
    char spec[PATH_MAX + 32], out[512];
    snprintf(spec, sizeof spec, "%d:%s", (int)pid, lib);
    int fds[2];
    ASSERT(pipe(fds) == 0);
    pid_t h = fork();
    ASSERT(h >= 0);
    if (h == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        setenv("INJ_TEST_INJECT", spec, 1);
        setenv("LD_PRELOAD", shim(), 1);
        putenv((char *)env1);
        if (env2)
            putenv((char *)env2);
        /* /proc/self/exe: this very binary, even if a rebuild replaced the file meanwhile. */
        execl("/proc/self/exe", "unit-tests", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    struct target r = {h, -1, fds[0]};
    if (!read_line(r.out, out, sizeof out, 20000))
        UNIT_FAIL_("helper gave no answer");
    close(fds[0]);
    waitpid(h, NULL, 0);
    char *tab = strchr(out, '\t');
    ASSERT(tab != NULL);
    pb_strlcpy(msg, tab + 1, n);
    return atoi(out);
}

TEST(shim_seize_denied)
{
    char line[256], msg[256], want[128];
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start(pyenv_python("3.11"), heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    int rc = run_helper(t.pid, lib, "PTRACE_FAULT_SEIZE_ERRNO=1", NULL, msg, sizeof msg);
    ASSERT_EQ(rc, -EPERM);
    snprintf(want, sizeof want, "ptrace attach to %d denied: run as the same user or root",
             (int)t.pid);
    ASSERT_STR_EQ(msg, want); /* no Yama on this kernel: no ptrace_scope advice */
    ASSERT_EQ(marker_count(t.pid), 0);
    expect_line(&t, "hb", line, sizeof line, 2000);
    stop_target(&t);
}

static void killed_at(int n)
{
    char line[256], msg[256], want[128], env[64];
    const char *lib = fixture("libprobing-fixture", NULL);
    struct target t = start(pyenv_python("3.11"), heartbeat_py);
    expect_line(&t, "hb", line, sizeof line, 10000);
    snprintf(env, sizeof env, "PTRACE_FAULT_KILL_AT_SETREGS=%d", n);
    int rc = run_helper(t.pid, lib, env, NULL, msg, sizeof msg);
    ASSERT_EQ(rc, PB_EGONE);
    snprintf(want, sizeof want, "process %d exited during injection", (int)t.pid);
    ASSERT_STR_EQ(msg, want);
    int st;
    ASSERT_EQ(waitpid(t.pid, &st, 0), t.pid);
    ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    stop_target(&t);
}

TEST(shim_killed_before_call)
{
    killed_at(1); /* the SETREGS that starts dlopen */
}

TEST(shim_killed_while_restoring)
{
    killed_at(2); /* the SETREGS that restores the thread */
}

/* The target cannot see our library (it has its own /tmp): a copy under its /tmp is loaded. */
TEST(inject_other_mount_namespace)
{
    char line[256], found[PATH_MAX], code[1024];
    struct pb_err err = {0};
    /* Markers go outside /tmp so that the target still sees them. */
    snprintf(markdir, sizeof markdir, "/var/tmp/inj-mark-XXXXXX");
    ASSERT(mkdtemp(markdir) != NULL);
    ASSERT(chmod(markdir, 0755) == 0);
    const char *lib = fixture("libprobing-ns", NULL);
    snprintf(code, sizeof code, "mount -t tmpfs none /tmp && exec %s -u -c \"%s\"",
             pyenv_python("3.11"),
             "import time\nwhile True:\n    print('hb', flush=True)\n    time.sleep(0.05)\n");
    int out[2];
    ASSERT(pipe(out) == 0);
    struct target t = {0, -1, out[0]};
    t.pid = fork();
    ASSERT(t.pid >= 0);
    if (t.pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        execlp("unshare", "unshare", "--mount", "--propagation", "private", "sh", "-c", code,
               (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    expect_line(&t, "hb", line, sizeof line, 10000);
    int rc = ptrace_inject(t.pid, lib, NULL, &err);
    if (rc != 0)
        UNIT_FAIL_("ptrace_inject: %d %s", rc, err.msg);
    ASSERT_EQ(ptrace_maps_find(t.pid, "libprobing-ns", found, sizeof found), 1);
    if (strncmp(found, "/tmp/probing-", 13) != 0 || strcmp(found, lib) == 0)
        UNIT_FAIL_("expected a copy under the target's /tmp, got %s", found);
    ASSERT_EQ(marker_count(t.pid), 1);
    expect_line(&t, "hb", line, sizeof line, 2000);
    stop_target(&t);
    sh("rm -rf %s", markdir);
}

/* ptrace_maps_hold: reads of the held pid's maps in the scope are its first one (a file mapped
 * since is not seen), fresh again after the release; another pid's are read as usual. The file
 * is mapped executable: where the kernel has PROCMAP_QUERY the reads list files with code only. */
TEST(maps_hold_reuses_one_read)
{
    char path[PATH_MAX + 64], base[64];
    make_tmpdir();
    snprintf(base, sizeof base, "heldmaps-%d", (int)getpid());
    snprintf(path, sizeof path, "%s/%s", tmpdir, base);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT(fd >= 0);
    ASSERT(ftruncate(fd, 4096) == 0);
    ptrace_maps_hold(getpid());
    ASSERT_EQ(ptrace_maps_find(getpid(), base, NULL, 0), 0);
    void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
    ASSERT(p != MAP_FAILED);
    ASSERT_EQ(ptrace_maps_find(getpid(), base, NULL, 0), 0);  /* the scope's first read */
    ASSERT_EQ(ptrace_maps_find(getppid(), base, NULL, 0), 0); /* not held: read, not there */
    ptrace_maps_release();
    ASSERT_EQ(ptrace_maps_find(getpid(), base, NULL, 0), 1);
    munmap(p, 4096);
    close(fd);
    unlink(path);
    rmdir(tmpdir);
}
