/* SPDX-License-Identifier: MIT */
/* `probing cluster collectives`, section "torch's flight recorder": per rank, what torch's own
 * flight recorder is there (torch 2.x with TORCH_FR_BUFFER_SIZE: every backend's collectives;
 * older 2.x: NCCL's only; torch 1.13: none), and where its entries agree with the recorder's
 * records of the same rank: the same group and sequence number (its op_id is torch's sequence
 * number after the call, the recorder's seq the one before: one apart) and the same op. Entries
 * of one side only are counted (calls made from C++ are in torch's only; point-to-point calls
 * in ours only when torch's backend does not record them). See docs/cluster.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

/* Columns of a rank's records (cli_cluster_comm_sql) and of its flight recorder's entries
 * (comm_py.c fr_entries). */
enum { R_PG = 1, R_SEQ = 3, R_SRC = 4, R_OP = 5, R_STATE = 6 };
enum { F_PG, F_CSEQ, F_P2PSEQ, F_OPID, F_NAME, F_STATE, F_RETIRED, F_TIME };

#define MAX_DIFFER 5

static const char *cell(const cJSON *row, int i)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static long long num(const cJSON *row, int i)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

/* torch's name for an op ("gloo:all_reduce", "nccl:_allgather_base") without the backend. */
static const char *fr_op(const char *name)
{
    const char *c = strchr(name, ':');
    return c ? c + 1 : name;
}

static int same_op(const char *ours, const char *theirs)
{
    return strcmp(ours, fr_op(theirs)) == 0;
}

/* Our collective records with torch's sequence numbers: matched with torch's entries when
 * op_id == seq + offset. */
static int is_ours(const cJSON *row)
{
    return strcmp(cell(row, R_SRC), "torch") == 0 && strcmp(cell(row, R_STATE), "failed") != 0;
}

static const cJSON *find_entry(const cJSON *entries, const char *pg, long long op_id)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, entries) if (num(e, F_OPID) == op_id &&
                                       strcmp(cell(e, F_PG), pg) == 0) return e;
    return NULL;
}

static int matches(const cJSON *rows, const cJSON *entries, long long offset)
{
    int n = 0;
    const cJSON *r, *e;
    cJSON_ArrayForEach(r, rows)
    {
        if (is_ours(r) && (e = find_entry(entries, cell(r, R_PG), num(r, R_SEQ) + offset)) &&
            same_op(cell(r, R_OP), cell(e, F_NAME)))
            n++;
    }
    return n;
}

/* One rank's comparison: {rank, state, entries, offset, agree, differ_count, differ: [{pg,
 * seq, op, torch_op}] (the first MAX_DIFFER), only_ours, only_torch}. */
static cJSON *compare(int rank, const cJSON *rows, const cJSON *fr)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(fr, "flightRecorderEntries");
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddStringToObject(
        o, "state", cli_json_str(fr, "flightRecorder") ? cli_json_str(fr, "flightRecorder") : "?");
    int n = cJSON_GetArraySize(entries);
    cJSON_AddNumberToObject(o, "entries", n);
    if (n == 0)
        return o;
    /* torch's op_id is its sequence number after the call on torch 2.x (seq + 1); taken from
     * the data: the offset that lines up more. */
    long long offset = matches(rows, entries, 0) > matches(rows, entries, 1) ? 0 : 1;
    long long lo = -1, hi = -1;
    const cJSON *e, *r;
    cJSON_ArrayForEach(e, entries)
    {
        long long id = num(e, F_OPID);
        lo = lo < 0 || id < lo ? id : lo;
        hi = id > hi ? id : hi;
    }
    int agree = 0, ndiffer = 0, only_ours = 0, only_torch = 0;
    long long our_lo = -1, our_hi = -1;
    cJSON *differ = cJSON_CreateArray();
    cJSON_ArrayForEach(r, rows)
    {
        if (!is_ours(r))
            continue;
        long long id = num(r, R_SEQ) + offset;
        our_lo = our_lo < 0 || id < our_lo ? id : our_lo;
        our_hi = id > our_hi ? id : our_hi;
        if (id < lo || id > hi)
            continue;
        e = find_entry(entries, cell(r, R_PG), id);
        if (!e) {
            only_ours++;
        } else if (same_op(cell(r, R_OP), cell(e, F_NAME))) {
            agree++;
        } else if (ndiffer++ < MAX_DIFFER) {
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "pg", cell(r, R_PG));
            cJSON_AddNumberToObject(d, "seq", (double)num(r, R_SEQ));
            cJSON_AddStringToObject(d, "op", cell(r, R_OP));
            cJSON_AddStringToObject(d, "torch_op", cell(e, F_NAME));
            cJSON_AddItemToArray(differ, d);
        }
    }
    cJSON_ArrayForEach(e, entries)
    {
        long long id = num(e, F_OPID);
        if (id < our_lo || id > our_hi)
            continue;
        int found = 0;
        cJSON_ArrayForEach(r, rows) if (is_ours(r) && num(r, R_SEQ) + offset == id &&
                                        strcmp(cell(r, R_PG), cell(e, F_PG)) == 0) found = 1;
        only_torch += !found;
    }
    cJSON_AddNumberToObject(o, "offset", (double)offset);
    cJSON_AddNumberToObject(o, "agree", agree);
    cJSON_AddNumberToObject(o, "differ_count", ndiffer);
    cJSON_AddItemToObject(o, "differ", differ);
    cJSON_AddNumberToObject(o, "only_ours", only_ours);
    cJSON_AddNumberToObject(o, "only_torch", only_torch);
    return o;
}

cJSON *cli_cluster_fr_analyse(const cJSON *nodes, const char *job)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *d, *r;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        const cJSON *rows =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "comm"), "rows");
        if (!j || strcmp(j, job) != 0 || cli_json_str(r, "error") || !rows)
            continue;
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(r, "fr");
        int rank = (int)cli_json_num(r, "rank", -1);
        if (fr && cli_json_true(fr, "running")) {
            cJSON_AddItemToArray(out, compare(rank, rows, fr));
        } else if (cJSON_GetArraySize(rows) > 0) {
            /* Records but no answer under the GIL (a rank holding it). */
            cJSON *o = cJSON_CreateObject();
            char msg[600];
            snprintf(msg, sizeof msg, "not read: %s",
                     cli_json_str(r, "fr_error") ? cli_json_str(r, "fr_error")
                                                 : "the recorder is not running");
            cJSON_AddNumberToObject(o, "rank", rank);
            cJSON_AddStringToObject(o, "state", msg);
            cJSON_AddNumberToObject(o, "entries", 0);
            cJSON_AddItemToArray(out, o);
        }
    }
    return out;
}

void cli_cluster_fr_print(const cJSON *fr)
{
    const cJSON *o, *x;
    printf("\ntorch's flight recorder (per rank: what torch itself recorded, lined up with the "
           "records above by group, sequence number and op):\n");
    cJSON_ArrayForEach(o, fr)
    {
        /* Ranks saying the same thing without entries: one line. */
        if (cli_json_num(o, "entries", 0) == 0) {
            int seen = 0, n = 0, cap = cJSON_GetArraySize(fr),
                *v = malloc(sizeof(int) * (size_t)cap);
            cJSON_ArrayForEach(x, fr)
            {
                if (x == o)
                    break;
                seen |= cli_json_num(x, "entries", 0) == 0 &&
                        strcmp(cli_json_str(x, "state"), cli_json_str(o, "state")) == 0;
            }
            cJSON_ArrayForEach(
                x, fr) if (v && cli_json_num(x, "entries", 0) == 0 &&
                           strcmp(cli_json_str(x, "state"), cli_json_str(o, "state")) == 0) v[n++] =
                (int)cli_json_num(x, "rank", -1);
            char *ranks = v && !seen ? cli_cluster_ranges(v, n) : NULL;
            if (ranks)
                printf("  rank%s %s: %s\n", n == 1 ? "" : "s", ranks, cli_json_text(o, "state"));
            free(ranks);
            free(v);
            continue;
        }
        printf("  rank %.0f: %s\n    %.0f agree (same group, op_id = seq + %.0f, same op), %.0f "
               "differ, %.0f only in probing's records, %.0f only in torch's\n",
               cli_json_num(o, "rank", -1), cli_json_text(o, "state"), cli_json_num(o, "agree", 0),
               cli_json_num(o, "offset", 0), cli_json_num(o, "differ_count", 0),
               cli_json_num(o, "only_ours", 0), cli_json_num(o, "only_torch", 0));
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(o, "differ"))
            printf("    group %s #%.0f: %s here, %s in torch's\n", cli_json_text(x, "pg"),
                   cli_json_num(x, "seq", 0), cli_json_text(x, "op"), cli_json_text(x, "torch_op"));
    }
}
