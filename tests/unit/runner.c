/* SPDX-License-Identifier: MIT */
/* Runs every registered TEST in a child process with a timeout; prints one line per test and
 * a closing "N passed, N failed" line. Usage: unit-tests [substring-filter]. */
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024
static struct {
    const char *name, *file;
    unit_fn fn;
} tests[MAX_TESTS];
static int ntests;

void unit_register(const char *name, const char *file, unit_fn fn)
{
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].file = file;
        tests[ntests].fn = fn;
        ntests++;
    }
}

static int run_one(int i, int timeout_s)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        alarm((unsigned)timeout_s);
        tests[i].fn();
        fflush(NULL);
        _exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    kill(-pid, SIGKILL);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "  (killed by signal %d%s)\n", WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? ": timeout" : "");
    return 1;
}

static struct {
    int fd, saved;
    FILE *file;
} cap = {.saved = -1};

void unit_capture_begin(int fd)
{
    fflush(fd == 1 ? stdout : stderr);
    cap.fd = fd;
    cap.file = tmpfile();
    cap.saved = dup(fd);
    if (cap.file)
        dup2(fileno(cap.file), fd);
}

size_t unit_capture_end(char *buf, size_t n)
{
    size_t k = 0;
    fflush(cap.fd == 1 ? stdout : stderr);
    dup2(cap.saved, cap.fd);
    close(cap.saved);
    cap.saved = -1;
    if (cap.file) {
        rewind(cap.file);
        k = fread(buf, 1, n - 1, cap.file);
        fclose(cap.file);
        cap.file = NULL;
    }
    buf[k] = '\0';
    return k;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    const char *t = getenv("UNIT_TIMEOUT");
    int timeout_s = t ? atoi(t) : 30;
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (filter && !strstr(tests[i].name, filter))
            continue;
        int r = run_one(i, timeout_s);
        printf("%s %s (%s)\n", r == 0 ? "ok  " : "FAIL", tests[i].name, tests[i].file);
        fflush(stdout);
        if (r == 0)
            passed++;
        else
            failed++;
    }
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
