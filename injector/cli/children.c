/* SPDX-License-Identifier: MIT */
/* `--subprocesses` of `debug --dump` and `cluster stacks`: the target's descendants (DataLoader
 * workers, multiprocessing children, compile workers), each read from outside with the
 * GIL-free reader (readonly.c, process_vm_readv): nothing is loaded into a child, no child is
 * stopped or traced, so a child that is mid-fork, exiting or gone costs a failed read and no
 * more. Found from /proc/PID/task/TID/children when the kernel has it (CONFIG_PROC_CHILDREN),
 * else by scanning /proc for the parent pid; at most CLI_CHILDREN_MAX, breadth first. A child
 * of another uid than the target's, a zombie, or one that runs no Python is listed (pid, parent,
 * command line), not read. The role is read from what the child's own stack says: a DataLoader
 * worker runs torch.utils.data._utils.worker._worker_loop, whose locals worker_id and
 * num_workers are plain ints the reader takes from memory (torch 1.13 sets no process name;
 * 2.x names the process "pt_data_worker" without the id, and a fork-started worker's command
 * line is its parent's). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "injector/inject/inj.h"

/* /proc/PID/stat: comm, state, ppid. 0 or -1. */
static int proc_stat(pid_t pid, char *comm, size_t ncomm, char *state, pid_t *ppid)
{
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open || close[1] != ' ' || !close[2])
        return -1;
    if (comm)
        snprintf(comm, ncomm, "%.*s", (int)(close - open - 1), open + 1);
    if (state)
        *state = close[2];
    if (ppid)
        *ppid = (pid_t)strtol(close + 3, NULL, 10);
    return 0;
}

/* The real and filesystem uid from /proc/PID/status; -1 unknown. */
static void proc_uids(pid_t pid, long *ruid, long *fsuid)
{
    char p[64], buf[4096];
    *ruid = *fsuid = -1;
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    *ruid = cli_proc_status_value(buf, "Uid", 0);
    *fsuid = cli_proc_status_value(buf, "Uid", 1);
}

/* The command line, arguments joined by spaces, bounded. */
static void proc_cmdline(pid_t pid, char *out, size_t nout)
{
    char p[64];
    out[0] = '\0';
    snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    size_t n = fread(out, 1, nout - 1, f);
    fclose(f);
    out[n] = '\0';
    while (n > 0 && out[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    out[n] = '\0';
}

/* Appends the direct children of pid to out from the kernel's children files; -1 when the
 * kernel has none (then the caller scans /proc). */
static int children_files(pid_t pid, pid_t *out, int *n, int max, int *more)
{
    char p[96];
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    DIR *d = opendir(p);
    if (!d)
        return 0; /* gone: no children */
    struct dirent *e;
    int any = 0;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(p, sizeof p, "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        any = 1;
        long c;
        while (fscanf(f, "%ld", &c) == 1) {
            if (*n < max)
                out[(*n)++] = (pid_t)c;
            else
                (*more)++;
        }
        fclose(f);
    }
    closedir(d);
    return any ? 0 : -1;
}

/* Every process's (pid, ppid), once: the fallback when the kernel has no children files. */
struct ptab {
    pid_t *pid, *ppid;
    int n;
};

static void ptab_load(struct ptab *t)
{
    int cap = 1024;
    t->n = 0;
    t->pid = malloc(sizeof(pid_t) * (size_t)cap);
    t->ppid = malloc(sizeof(pid_t) * (size_t)cap);
    DIR *d = opendir("/proc");
    if (!d || !t->pid || !t->ppid) {
        if (d)
            closedir(d);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && t->n < 1 << 20) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10), ppid = 0;
        if (proc_stat(pid, NULL, 0, NULL, &ppid) < 0)
            continue;
        if (t->n == cap) {
            cap *= 2;
            pid_t *a = realloc(t->pid, sizeof(pid_t) * (size_t)cap);
            if (a)
                t->pid = a;
            pid_t *b = realloc(t->ppid, sizeof(pid_t) * (size_t)cap);
            if (b)
                t->ppid = b;
            if (!a || !b)
                break;
        }
        t->pid[t->n] = pid;
        t->ppid[t->n++] = ppid;
    }
    closedir(d);
}

int cli_children_find(pid_t pid, pid_t *out, pid_t *parent, int max, int *more)
{
    int n = 0, head = 0;
    struct ptab tab = {0};
    int scanned = 0;
    *more = 0;
    pid_t cur = pid;
    for (;;) {
        int before = n;
        if (children_files(cur, out, &n, max, more) < 0) {
            if (!scanned) {
                ptab_load(&tab);
                scanned = 1;
            }
            for (int i = 0; i < tab.n; i++)
                if (tab.ppid[i] == cur && tab.pid[i] != pid) {
                    int seen = 0;
                    for (int j = 0; j < n && !seen; j++)
                        seen = out[j] == tab.pid[i];
                    if (seen)
                        continue;
                    if (n < max)
                        out[n++] = tab.pid[i];
                    else
                        (*more)++;
                }
        }
        for (int i = before; i < n; i++)
            parent[i] = cur;
        if (head >= n)
            break;
        cur = out[head++];
    }
    free(tab.pid);
    free(tab.ppid);
    return n;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char *local_value(const cJSON *frame, const char *name)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(frame, "locals"))
    {
        const char *n = cli_json_str(l, "name");
        if (n && strcmp(n, name) == 0)
            return cli_json_str(l, "value");
    }
    return NULL;
}

/* What the child is, from its frames (locals read) and its command line; adds "role" (null
 * when unknown) and for a DataLoader worker "workerId" and "numWorkers". */
static void add_role(cJSON *c, const char *cmdline)
{
    const cJSON *t, *f;
    const char *role = NULL;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(c, "threads"))
    {
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
        {
            const char *fn = cli_json_str(f, "name"), *file = cli_json_str(f, "file");
            if (!fn || !file)
                continue;
            if (strrchr(fn, '.')) /* a qualified name (3.11+): Class.method */
                fn = strrchr(fn, '.') + 1;
            if (strcmp(fn, "_worker_loop") == 0 &&
                ends_with(file, "torch/utils/data/_utils/worker.py")) {
                const char *id = local_value(f, "worker_id"), *nw = local_value(f, "num_workers");
                char buf[96];
                if (id && isdigit((unsigned char)id[0]))
                    snprintf(buf, sizeof buf, "DataLoader worker %s", id);
                else
                    snprintf(buf, sizeof buf, "DataLoader worker");
                cJSON_AddStringToObject(c, "role", buf);
                if (id && isdigit((unsigned char)id[0]))
                    cJSON_AddNumberToObject(c, "workerId", atof(id));
                if (nw && isdigit((unsigned char)nw[0]))
                    cJSON_AddNumberToObject(c, "numWorkers", atof(nw));
                return;
            }
            if (!role && strcmp(fn, "worker") == 0 && ends_with(file, "multiprocessing/pool.py"))
                role = "multiprocessing pool worker";
            if (!role && strcmp(fn, "_process_worker") == 0 &&
                ends_with(file, "concurrent/futures/process.py"))
                role = "process pool worker";
            if (!role && strcmp(fn, "_bootstrap") == 0 &&
                ends_with(file, "multiprocessing/process.py"))
                role = "multiprocessing child";
        }
    }
    /* the command line only when the frames say nothing: a child forked by the forkserver or
     * by a compile worker has their command line */
    if (role)
        ;
    else if (strstr(cmdline, "compile_worker"))
        role = "torch compile worker";
    else if (strstr(cmdline, "multiprocessing.resource_tracker") ||
             strstr(cmdline, "multiprocessing.semaphore_tracker"))
        role = "multiprocessing resource tracker";
    else if (strstr(cmdline, "multiprocessing.forkserver"))
        role = "multiprocessing forkserver";
    if (role)
        cJSON_AddStringToObject(c, "role", role);
    else
        cJSON_AddNullToObject(c, "role");
}

static void strip_locals(cJSON *c)
{
    cJSON *t, *f;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(c, "threads"))
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
            cJSON_DeleteItemFromObjectCaseSensitive(f, "locals");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "localsVia");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "localsError");
}

/* A child not read: what is known of it and why. */
static cJSON *listed(pid_t pid, pid_t ppid, const char *comm, char state, const char *cmdline,
                     const char *why)
{
    cJSON *c = cJSON_CreateObject();
    char st[2] = {state, '\0'};
    cJSON_AddNumberToObject(c, "pid", pid);
    cJSON_AddNumberToObject(c, "ppid", ppid);
    cJSON_AddStringToObject(c, "comm", comm);
    cJSON_AddStringToObject(c, "state", st);
    cJSON_AddStringToObject(c, "cmdline", cmdline);
    cJSON_AddNullToObject(c, "python");
    cJSON_AddNullToObject(c, "role");
    cJSON_AddStringToObject(c, "note", why);
    return c;
}

cJSON *cli_children_read(pid_t pid, int locals, int max_frames, int *left_out)
{
    pid_t kids[CLI_CHILDREN_MAX], parent[CLI_CHILDREN_MAX];
    int more = 0, n = cli_children_find(pid, kids, parent, CLI_CHILDREN_MAX, &more);
    long ruid = -1, fsuid = -1;
    proc_uids(pid, &ruid, &fsuid);
    cJSON *arr = cJSON_CreateArray();
    *left_out = more;
    for (int i = 0; i < n; i++) {
        char comm[64] = "?", state = '?', cmdline[1024], why[400];
        pid_t ppid = parent[i];
        if (proc_stat(kids[i], comm, sizeof comm, &state, &ppid) < 0)
            continue; /* gone since it was listed */
        proc_cmdline(kids[i], cmdline, sizeof cmdline);
        long cr = -1, cf = -1;
        proc_uids(kids[i], &cr, &cf);
        if (state == 'Z' || state == 'X') {
            cJSON_AddItemToArray(arr, listed(kids[i], ppid, comm, state, cmdline,
                                             "exited (a zombie its parent has not reaped)"));
            continue;
        }
        if (cr != ruid || cf != fsuid) {
            snprintf(why, sizeof why, "uid %ld, not the target's uid %ld: listed, not read", cr,
                     ruid);
            cJSON_AddItemToArray(arr, listed(kids[i], ppid, comm, state, cmdline, why));
            continue;
        }
        struct ptrace_pyver v;
        struct pb_err err = {0};
        if (ptrace_pyver_detect(kids[i], &v, &err) < 0) {
            snprintf(why, sizeof why, "%s", err.code == PB_ENOPYTHON ? "runs no Python" : err.msg);
            cJSON_AddItemToArray(arr, listed(kids[i], ppid, comm, state, cmdline, why));
            continue;
        }
        /* the worker id is a local of _worker_loop: locals are read, then dropped if not asked */
        cJSON *c = cli_read_dump(kids[i], max_frames, 1, &err);
        if (!c) {
            snprintf(why, sizeof why, "CPython %d.%d, not read: %s", v.major, v.minor, err.msg);
            cJSON *l = listed(kids[i], ppid, comm, state, cmdline, why);
            cJSON_ReplaceItemInObjectCaseSensitive(l, "python", cJSON_CreateString("?"));
            cJSON_AddItemToArray(arr, l);
            continue;
        }
        cJSON_AddNumberToObject(c, "ppid", ppid);
        cJSON_AddStringToObject(c, "comm", comm);
        cJSON_AddStringToObject(c, "cmdline", cmdline);
        add_role(c, cmdline);
        if (!locals)
            strip_locals(c);
        cJSON_AddItemToArray(arr, c);
    }
    return arr;
}

void cli_children_add(cJSON *body, pid_t pid, int locals, int max_frames)
{
    int left = 0;
    cJSON *arr = cli_children_read(pid, locals, max_frames, &left);
    cJSON_AddItemToObject(body, "children", arr);
    if (left > 0)
        cJSON_AddNumberToObject(body, "childrenLeftOut", left);
}

void cli_children_print(const cJSON *d)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(d, "children"), *c;
    if (!cJSON_IsArray(arr))
        return;
    int n = cJSON_GetArraySize(arr), left = (int)cli_json_num(d, "childrenLeftOut", 0);
    printf("\n%d child process%s of %d%s\n", n, n == 1 ? "" : "es", (int)cli_json_num(d, "pid", 0),
           left > 0 ? " (more not read: the bound was reached)" : "");
    cJSON_ArrayForEach(c, arr)
    {
        const char *role = cli_json_str(c, "role");
        printf("\n=== child %d (parent %d)", (int)cli_json_num(c, "pid", 0),
               (int)cli_json_num(c, "ppid", 0));
        if (role)
            printf(": %s", cli_tx(role));
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "numWorkers")))
            printf(" of %d", (int)cli_json_num(c, "numWorkers", 0));
        const char *cmd = cli_json_str(c, "cmdline");
        if (cmd && cmd[0]) /* else, as ps: the kernel's name in brackets (a zombie has none) */
            printf(" ===\ncommand: %s\n", cli_tx(cmd));
        else
            printf(" ===\ncommand: [%s]\n", cli_tx(cli_json_str(c, "comm")));
        if (cli_json_str(c, "note")) {
            printf("(%s: %s)\n", cli_tx(cli_json_str(c, "comm")), cli_tx(cli_json_str(c, "note")));
            continue;
        }
        cli_dump_print(c);
    }
}
