/* SPDX-License-Identifier: MIT */
/* `probing -p PID memory [--top N] [--trace start|stop] [--snapshot FILE] [--json]`: the
 * process's memory (from /proc), Python objects by type, gc, tracemalloc's top allocations when
 * tracing, and torch's CUDA caching allocator per device when torch.cuda is initialised
 * (probing/memory); --snapshot has the target pickle torch.cuda.memory._snapshot() to FILE. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf(
        "usage: probing -p PID memory [--top N] [--trace start|stop] [--snapshot FILE] [--json]\n"
        "\n"
        "The target's memory: resident and virtual size with their peaks, anonymous/file/\n"
        "shared resident memory and swap (from /proc/PID/status); Python objects by type\n"
        "(the N largest types by total size over gc-tracked objects, shallow sizes from\n"
        "sys.getsizeof); gc counts, thresholds and collections; tracemalloc's N largest\n"
        "allocation sites when it is tracing; torch's CUDA caching allocator per device\n"
        "(allocated, reserved, peaks, inactive split, allocation retries, OOMs) when\n"
        "torch.cuda is initialised in the target (probing never initialises CUDA).\n"
        "\n"
        "  --top N              how many types and allocation sites (default 10)\n"
        "  --trace start|stop   start or stop tracemalloc in the target first\n"
        "  --snapshot FILE      the target writes torch.cuda.memory._snapshot() to FILE as a\n"
        "                       pickle for PyTorch's memory viewer (pytorch.org/memory_viz);\n"
        "                       the path is the target's (made absolute here)\n"
        "  --json               print the probing/memory body as JSON\n");
}

static const char *human(double b, char *buf, size_t n)
{
    if (b < 0)
        snprintf(buf, n, "?");
    else if (b < 1024 * 1024)
        snprintf(buf, n, "%.1f KiB", b / 1024);
    else if (b < 1024.0 * 1024 * 1024)
        snprintf(buf, n, "%.1f MiB", b / (1024 * 1024));
    else
        snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    return buf;
}

static void triple(const cJSON *o, const char *k, char *buf, size_t n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
    buf[0] = 0;
    for (int i = 0; i < cJSON_GetArraySize(a); i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%.0f", i ? "/" : "", cJSON_GetArrayItem(a, i)->valuedouble);
    }
}

static void print_text(const cJSON *d)
{
    char a[32], b[32], c[32], e[32], f[32];
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(d, "process");
    printf("Process memory (/proc/PID/status):\n");
    printf("  rss    %10.0f kB  %-10s  peak %s\n", cli_json_num(p, "rss", -1) / 1024,
           human(cli_json_num(p, "rss", -1), a, sizeof a),
           human(cli_json_num(p, "peakRss", -1), b, sizeof b));
    printf("  vms    %10.0f kB  %-10s  peak %s\n", cli_json_num(p, "vms", -1) / 1024,
           human(cli_json_num(p, "vms", -1), a, sizeof a),
           human(cli_json_num(p, "peakVms", -1), b, sizeof b));
    printf("  rss anon %s, file %s, shared %s; data %s; swap %s\n",
           human(cli_json_num(p, "rssAnon", -1), a, sizeof a),
           human(cli_json_num(p, "rssFile", -1), b, sizeof b),
           human(cli_json_num(p, "rssShmem", -1), c, sizeof c),
           human(cli_json_num(p, "data", -1), e, sizeof e),
           human(cli_json_num(p, "swap", -1), f, sizeof f));
    if (cli_json_str(d, "pythonError")) {
        printf("\nPython: %s\n", cli_json_str(d, "pythonError"));
        return;
    }
    const cJSON *ob = cJSON_GetObjectItemCaseSensitive(d, "objects");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(ob, "types"), *t;
    printf("\nPython objects by type (top %d by total size; %s): %.0f objects, %s%s\n",
           cJSON_GetArraySize(types),
           cli_json_str(ob, "measure") ? cli_json_str(ob, "measure") : "?",
           cli_json_num(ob, "scanned", -1), human(cli_json_num(ob, "totalBytes", -1), a, sizeof a),
           cli_json_true(ob, "truncated") ? " (census cut)" : "");
    printf("  %-40s %10s %12s\n", "type", "count", "bytes");
    cJSON_ArrayForEach(t, types) printf("  %-40s %10.0f %12.0f\n", cli_json_str(t, "type"),
                                        cli_json_num(t, "count", -1), cli_json_num(t, "bytes", -1));
    const cJSON *gc = cJSON_GetObjectItemCaseSensitive(d, "gc");
    char cnt[64], thr[64], col[96];
    triple(gc, "counts", cnt, sizeof cnt);
    triple(gc, "thresholds", thr, sizeof thr);
    triple(gc, "collections", col, sizeof col);
    printf("\ngc: %s; counts %s, thresholds %s, collections %s",
           cli_json_true(gc, "enabled") ? "enabled" : "disabled", cnt, thr, col);
    triple(gc, "collected", cnt, sizeof cnt);
    triple(gc, "uncollectable", thr, sizeof thr);
    printf(" (collected %s, uncollectable %s)\n", cnt, thr);
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(d, "tracemalloc");
    if (cli_json_true(tm, "stopped"))
        printf("\ntracemalloc: stopped\n");
    if (!cli_json_true(tm, "tracing")) {
        if (!cli_json_true(tm, "stopped"))
            printf("\ntracemalloc: not tracing (start it with --trace start)\n");
    } else {
        const cJSON *top = cJSON_GetObjectItemCaseSensitive(tm, "top"), *s;
        printf("\ntracemalloc: %stracing; traced %s, peak %s; top allocation sites:\n",
               cli_json_true(tm, "started") ? "started, " : "",
               human(cli_json_num(tm, "current", -1), a, sizeof a),
               human(cli_json_num(tm, "peak", -1), b, sizeof b));
        printf("  %12s %8s  %s\n", "bytes", "count", "file:line");
        cJSON_ArrayForEach(s, top) printf("  %12.0f %8.0f  %s:%.0f\n", cli_json_num(s, "size", -1),
                                          cli_json_num(s, "count", -1), cli_json_str(s, "file"),
                                          cli_json_num(s, "line", -1));
        if (cJSON_GetArraySize(top) == 0)
            printf("  (nothing allocated since tracing started)\n");
    }
    const cJSON *cu = cJSON_GetObjectItemCaseSensitive(d, "cuda"), *dev;
    if (cli_json_str(cu, "error"))
        printf("\nCUDA: error: %s\n", cli_json_str(cu, "error"));
    else if (!cli_json_true(cu, "available"))
        printf("\nCUDA: none: %s\n",
               cli_json_str(cu, "why") ? cli_json_str(cu, "why") : "torch is not imported");
    else
        cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(cu, "devices"))
        {
            printf("\nCUDA %.0f (%s), torch's caching allocator:\n", cli_json_num(dev, "index", -1),
                   cli_json_str(dev, "name"));
            printf("  allocated %s (peak %s), reserved %s (peak %s), active %s\n",
                   human(cli_json_num(dev, "allocated", -1), a, sizeof a),
                   human(cli_json_num(dev, "maxAllocated", -1), b, sizeof b),
                   human(cli_json_num(dev, "reserved", -1), c, sizeof c),
                   human(cli_json_num(dev, "maxReserved", -1), e, sizeof e),
                   human(cli_json_num(dev, "active", -1), f, sizeof f));
            printf("  inactive split %s in %.0f blocks; allocation retries %.0f, OOMs %.0f\n",
                   human(cli_json_num(dev, "inactiveSplit", -1), a, sizeof a),
                   cli_json_num(dev, "inactiveSplitBlocks", -1),
                   cli_json_num(dev, "allocRetries", -1), cli_json_num(dev, "ooms", -1));
        }
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(cu, "snapshot");
    if (sn && !cli_json_str(sn, "error")) /* else the command's error line says why */
        printf("\nCUDA snapshot: %s written (%s, %.0f segments, %.0f trace entries); open it at "
               "https://pytorch.org/memory_viz\n",
               cli_json_str(sn, "path"), human(cli_json_num(sn, "bytes", -1), a, sizeof a),
               cli_json_num(sn, "segments", -1), cli_json_num(sn, "traceEntries", -1));
}

int cli_cmd_memory(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"top", required_argument, 0, 'n'},      {"trace", required_argument, 0, 't'},
        {"json", no_argument, 0, 'j'},           {"help", no_argument, 0, 'h'},
        {"snapshot", required_argument, 0, 's'}, {0, 0, 0, 0}};
    int json = 0, c;
    long top = 10;
    const char *trace = NULL, *snapshot = NULL;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n': {
            char *end;
            top = strtol(optarg, &end, 10);
            if (*end || top < 1 || top > 1000) {
                cli_error("memory: --top takes a number from 1 to 1000");
                return CLI_USAGE;
            }
            break;
        }
        case 't':
            if (strcmp(optarg, "start") != 0 && strcmp(optarg, "stop") != 0) {
                cli_error("memory: --trace takes 'start' or 'stop'");
                return CLI_USAGE;
            }
            trace = optarg;
            break;
        case 's': snapshot = optarg; break;
        case 'j': json = 1; break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("memory", argv);
        }
    }
    if (optind < argc)
        return cli_unexpected_arg("memory", argv);
    cJSON *args = cJSON_CreateObject();
    cJSON_AddNumberToObject(args, "top", (double)top);
    if (trace)
        cJSON_AddStringToObject(args, "trace", trace);
    if (snapshot) {
        /* The target writes it: an absolute path, its folder resolved here. */
        char abs[PATH_MAX], dir[PATH_MAX];
        const char *slash = strrchr(snapshot, '/');
        const char *base = slash ? slash + 1 : snapshot;
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - snapshot) + (slash == snapshot) : 1,
                 slash ? snapshot : ".");
        char *real = realpath(dir, NULL);
        if (!*base || !real ||
            snprintf(abs, sizeof abs, "%s/%s", strcmp(real, "/") ? real : "", base) >=
                (int)sizeof abs) {
            cli_error("memory: --snapshot %s: %s", snapshot,
                      !*base ? "a file name is needed" : "its folder does not exist");
            free(real);
            cJSON_Delete(args);
            return CLI_USAGE;
        }
        free(real);
        cJSON_AddStringToObject(args, "snapshot", abs);
    }
    cJSON *body = cli_call(o, "memory", "probing/memory", args);
    if (!body)
        return CLI_FAIL;
    /* --snapshot that wrote nothing fails (after the figures), with its one line. */
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(body, "cuda"), "snapshot");
    char why[512] = "";
    if (snapshot && (!sn || cli_json_str(sn, "error")))
        snprintf(why, sizeof why, "%s",
                 cli_json_str(sn, "error")
                     ? cli_json_str(sn, "error")
                     : "the target's answer has no snapshot (its Python part failed)");
    int rc = cli_print_body(body, json, print_text);
    if (why[0] && rc == CLI_OK) {
        cli_error("memory --snapshot: %s", why);
        return CLI_FAIL;
    }
    return rc;
}
