/* SPDX-License-Identifier: MIT */
/* `probing cluster query "SQL" [--reduce "SQL"]`: every rank's probing/query result unioned with
 * `rank` and `host` columns first; --reduce runs a second statement over that union, loaded as
 * table r into an in-memory SQLite database of the CLI's own (in its private library:
 * ext/reduce.c). `probing cluster dump -o DIR`: every rank's probing/dump (locals where the GIL
 * could be had) written to DIR with an index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cluster.h"

static int fmt_of(const char *f)
{
    return strcmp(f, "json") == 0  ? CLI_FMT_JSON
           : strcmp(f, "csv") == 0 ? CLI_FMT_CSV
                                   : CLI_FMT_TABLE;
}

/* Ranks of the chosen job that answered, in rank order, as borrowed pointers. */
static int job_ranks(const struct cli_cluster_opts *o, const cJSON *nodes, const char *job,
                     const cJSON ***out)
{
    int n = 0, cap = 64;
    const cJSON **v = malloc(sizeof *v * (size_t)cap), *d, *r;
    cJSON_ArrayForEach(d,
                       nodes){cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks")){
        if (strcmp(cli_json_str(r, "job"), job) != 0) continue;
    if (n == cap) {
        cap *= 2;
        v = realloc(v, sizeof *v * (size_t)cap);
    }
    v[n++] = r;
}
}
(void)o;
for (int i = 1; i < n; i++) /* insertion sort by rank: n is the ranks of one job */
    for (int k = i; k > 0 && cli_json_num(v[k - 1], "rank", 0) > cli_json_num(v[k], "rank", 0);
         k--) {
        const cJSON *t = v[k];
        v[k] = v[k - 1];
        v[k - 1] = t;
    }
*out = v;
return n;
}

/* Names the nodes that failed and the ranks that did not answer, on stderr. Returns how many
 * ranks answered out of the world size, through *answered and *world. */
static void report_gaps(const cJSON *nodes, const cJSON **ranks, int n, int *answered, int *world)
{
    const cJSON *d;
    *answered = 0;
    *world = 0;
    cJSON_ArrayForEach(d, nodes) if (cli_json_text(d, "error"))
        fprintf(stderr, "probing: warning: node %s: %s\n", cli_json_text(d, "node"),
                cli_json_text(d, "error"));
    for (int i = 0; i < n; i++)
        if (cli_json_num(ranks[i], "world_size", 0) > *world)
            *world = (int)cli_json_num(ranks[i], "world_size", 0);
    int *ok = malloc(sizeof(int) * ((size_t)n + 1)), k = 0;
    for (int i = 0; ok && i < n; i++) {
        int rk = (int)cli_json_num(ranks[i], "rank", -1);
        if (cli_json_text(ranks[i], "error"))
            fprintf(stderr, "probing: warning: rank %d (node %s, pid %d): %s\n", rk,
                    cli_json_text(ranks[i], "node"), (int)cli_json_num(ranks[i], "pid", 0),
                    cli_json_text(ranks[i], "error"));
        else if (rk >= 0 && rk < *world && (k == 0 || ok[k - 1] != rk)) /* ranks are sorted */
            ok[k++] = rk;
    }
    *answered = k;
    struct cli_cluster_gaps g;
    cli_cluster_gaps(ok, ok ? k : 0, *world, &g);
    if (g.count)
        fprintf(stderr, "probing: warning: %ld rank%s missing: %s\n", g.count,
                g.count == 1 ? "" : "s", g.ranges ? g.ranges : "");
    cli_cluster_gaps_free(&g);
    free(ok);
}

int cli_cluster_query_report(const struct cli_cluster_opts *o, cJSON *nodes)
{
    const char *job = cli_cluster_pick_job(o, nodes);
    if (!job)
        return CLI_FAIL;
    const cJSON **ranks;
    int n = job_ranks(o, nodes, job, &ranks), answered, world;
    report_gaps(nodes, ranks, n, &answered, &world);
    cJSON *u = cJSON_CreateObject();
    cJSON *cols = cJSON_AddArrayToObject(u, "columns"), *rows = cJSON_AddArrayToObject(u, "rows");
    cJSON_AddItemToArray(cols, cJSON_CreateString("rank"));
    cJSON_AddItemToArray(cols, cJSON_CreateString("host"));
    int have_cols = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *res = cJSON_GetObjectItem(ranks[i], "result"), *c, *row, *v;
        if (!res)
            continue;
        if (!have_cols) {
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(res, "columns"))
                cJSON_AddItemToArray(cols, cJSON_Duplicate(c, 1));
            have_cols = 1;
        }
        if (cJSON_IsTrue(cJSON_GetObjectItem(res, "truncated")))
            fprintf(stderr, "probing: note: rank %d: %s\n", (int)cli_json_num(ranks[i], "rank", -1),
                    cli_json_text(res, "note") ? cli_json_text(res, "note") : "result truncated");
        cJSON_ArrayForEach(row, cJSON_GetObjectItem(res, "rows"))
        {
            cJSON *r = cJSON_CreateArray();
            cJSON_AddItemToArray(r, cJSON_CreateNumber(cli_json_num(ranks[i], "rank", -1)));
            cJSON_AddItemToArray(r, cJSON_CreateString(cli_json_str(ranks[i], "node")));
            cJSON_ArrayForEach(v, row) cJSON_AddItemToArray(r, cJSON_Duplicate(v, 1));
            cJSON_AddItemToArray(rows, r);
        }
    }
    free(ranks);
    int rc = CLI_FAIL;
    struct pb_err err = {0};
    if (!have_cols) {
        cli_error("cluster query: no rank answered the query (%d of %d ranks): see the warnings "
                  "above",
                  answered, world);
    } else if (o->reduce) {
        const struct cli_ext *x = cli_ext_load(&err);
        cJSON *body = x ? x->reduce(u, o->reduce, &err) : NULL;
        if (!x)
            cli_error("cluster query --reduce: %s", err.msg);
        else if (!body)
            cli_error("cluster query --reduce: SQL error: %s: the union is table r(%s)", err.msg,
                      "rank, host, ...");
        if (body)
            rc = cli_query_print(body, fmt_of(o->format)) < 0 ? CLI_FAIL : CLI_OK;
        cJSON_Delete(body);
    } else {
        rc = cli_query_print(u, fmt_of(o->format)) < 0 ? CLI_FAIL : CLI_OK;
    }
    cJSON_Delete(u);
    return rc;
}

/* ---- dump ---- */
static int write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "we");
    if (!f)
        return -errno;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -errno;
}

static void dump_threads(FILE *f, const cJSON *d)
{
    const cJSON *t, *fr, *l;
    if (cli_json_text(d, "localsError"))
        fprintf(f, "note: %s\n", cli_json_text(d, "localsError"));
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(d, "threads"))
    {
        fprintf(f, "\nThread %d \"%s\"%s%s\n", (int)cli_json_num(t, "id", 0),
                cli_json_text(t, "name") ? cli_json_text(t, "name") : "",
                cli_json_true(t, "main") ? " (main)" : "",
                cli_json_true(t, "holdsGil") ? " holds the GIL" : "");
        cJSON_ArrayForEach(fr, cJSON_GetObjectItem(t, "frames"))
        {
            fprintf(f, "    %s (%s:%d)\n", cli_json_text(fr, "name"), cli_json_text(fr, "file"),
                    (int)cli_json_num(fr, "line", 0));
            cJSON_ArrayForEach(l, cJSON_GetObjectItem(fr, "locals"))
                fprintf(f, "        %s = %s  (%s)\n", cli_json_text(l, "name"),
                        cli_json_text(l, "value") ? cli_json_text(l, "value") : "<not read>",
                        cli_json_text(l, "type") ? cli_json_text(l, "type") : "?");
        }
    }
}

static void dump_text(FILE *f, const cJSON *r, const cJSON *d)
{
    const cJSON *c;
    fprintf(f, "rank %d, node %s, pid %d, CPython %s\n", (int)cli_json_num(r, "rank", -1),
            cli_json_text(r, "node"), (int)cli_json_num(r, "pid", 0),
            cli_json_text(d, "python") ? cli_json_text(d, "python") : "?");
    dump_threads(f, d);
    /* --subprocesses: each child after the rank (children.c) */
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(d, "children"))
    {
        fprintf(f, "\n=== child %d (parent %d) of rank %d%s%s ===\ncommand: %s\n",
                (int)cli_json_num(c, "pid", 0), (int)cli_json_num(c, "ppid", 0),
                (int)cli_json_num(r, "rank", -1), cli_json_str(c, "role") ? ": " : "",
                cli_json_str(c, "role") ? cli_json_text(c, "role") : "",
                cli_json_text(c, "cmdline") ? cli_json_text(c, "cmdline") : "");
        if (cli_json_str(c, "note"))
            fprintf(f, "(%s)\n", cli_json_text(c, "note"));
        else
            dump_threads(f, c);
    }
}

int cli_cluster_dump_report(const struct cli_cluster_opts *o, cJSON *nodes)
{
    const char *job = cli_cluster_pick_job(o, nodes);
    if (!job)
        return CLI_FAIL;
    if (mkdir(o->outdir, 0755) < 0 && errno != EEXIST) {
        cli_error("cluster dump: cannot create %s: %s", o->outdir, strerror(errno));
        return CLI_FAIL;
    }
    const cJSON **ranks;
    int n = job_ranks(o, nodes, job, &ranks), answered, world, written = 0;
    report_gaps(nodes, ranks, n, &answered, &world);
    cJSON *index = cJSON_CreateObject();
    cJSON_AddStringToObject(index, "job", job);
    cJSON_AddNumberToObject(index, "world_size", world);
    cJSON_AddNumberToObject(index, "created", (double)time(NULL));
    cJSON *ir = cJSON_AddArrayToObject(index, "ranks");
    int *seen = malloc(sizeof(int) * ((size_t)n + 1)), nseen = 0;
    size_t tcap = 4096, tlen = 0;
    char *txt = NULL;
    FILE *it = open_memstream(&txt, &tlen);
    (void)tcap;
    fprintf(it, "probing cluster dump: job %s, world size %d\n\n", cli_tx(job), world);
    for (int i = 0; i < n; i++) {
        const cJSON *r = ranks[i], *d = cJSON_GetObjectItem(r, "dump");
        int rk = (int)cli_json_num(r, "rank", -1);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", rk);
        cJSON_AddStringToObject(e, "node", cli_json_str(r, "node"));
        cJSON_AddNumberToObject(e, "pid", cli_json_num(r, "pid", 0));
        if (d) {
            char name[64], tname[64];
            snprintf(name, sizeof name, "rank-%d.json", rk);
            snprintf(tname, sizeof tname, "rank-%d.txt", rk);
            char *s = cJSON_Print(d), *t = NULL;
            size_t tl = 0;
            FILE *tf = open_memstream(&t, &tl);
            dump_text(tf, r, d);
            fclose(tf);
            int wrc = write_file(o->outdir, name, s ? s : "{}");
            if (wrc == 0)
                wrc = write_file(o->outdir, tname, t ? t : "");
            cJSON_free(s);
            free(t);
            if (wrc < 0) {
                cli_error("cluster dump: cannot write %s/%s: %s", o->outdir, name, strerror(-wrc));
                cJSON_Delete(e);
                break;
            }
            cJSON_AddStringToObject(e, "file", name);
            cJSON_AddStringToObject(e, "text", tname);
            if (cli_json_str(d, "localsError"))
                cJSON_AddStringToObject(e, "localsError", cli_json_str(d, "localsError"));
            fprintf(it, "rank %d  node %s  pid %d  %s%s%s\n", rk, cli_json_text(r, "node"),
                    (int)cli_json_num(r, "pid", 0), cli_tx(name),
                    cli_json_text(d, "localsError") ? "  (no locals: " : "",
                    cli_json_text(d, "localsError") ? "the GIL could not be had)" : "");
            if (seen)
                seen[nseen++] = rk;
            written++;
        } else {
            cJSON_AddStringToObject(
                e, "error", cli_json_str(r, "error") ? cli_json_str(r, "error") : "no answer");
            fprintf(it, "rank %d  node %s  pid %d  error: %s\n", rk, cli_json_text(r, "node"),
                    (int)cli_json_num(r, "pid", 0), cli_json_text(e, "error"));
        }
        cJSON_AddItemToArray(ir, e);
    }
    struct cli_cluster_gaps g;
    cli_cluster_gaps(seen, nseen, world, &g);
    if (g.count == 1)
        fprintf(it, "rank %s  missing\n", g.ranges ? g.ranges : "");
    else if (g.count > 1)
        fprintf(it, "ranks %s  missing (%ld)\n", g.ranges ? g.ranges : "", g.count);
    cli_cluster_gaps_to_json(index, &g);
    cli_cluster_gaps_free(&g);
    cJSON *ne = cJSON_AddArrayToObject(index, "node_errors");
    const cJSON *d;
    cJSON_ArrayForEach(d, nodes) if (cli_json_str(d, "error"))
    {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "node", cli_json_str(d, "node"));
        cJSON_AddStringToObject(e, "error", cli_json_str(d, "error"));
        cJSON_AddItemToArray(ne, e);
        fprintf(it, "node %s: %s\n", cli_json_text(d, "node"), cli_json_text(d, "error"));
    }
    fclose(it);
    char *s = cJSON_Print(index);
    int rc = write_file(o->outdir, "index.json", s ? s : "{}");
    if (rc == 0)
        rc = write_file(o->outdir, "index.txt", txt ? txt : "");
    cJSON_free(s);
    free(txt);
    free(seen);
    free(ranks);
    cJSON_Delete(index);
    if (rc < 0) {
        cli_error("cluster dump: cannot write the index in %s: %s", o->outdir, strerror(-rc));
        return CLI_FAIL;
    }
    printf("wrote %s: %d of %d ranks (index.json, index.txt, rank-N.json, rank-N.txt)\n", o->outdir,
           written, world);
    return written > 0 ? CLI_OK : CLI_FAIL;
}
