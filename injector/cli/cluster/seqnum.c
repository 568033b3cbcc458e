/* SPDX-License-Identifier: MIT */
/* `probing cluster collectives`, section "torch's sequence numbers": what torch itself counts,
 * read on a job on which the recorder never ran (probing/comm "sequence": each process group's
 * _get_sequence_number_for_group() on every rank, under the GIL within a short bound, twice
 * CLUSTER_SEQ_WAIT_MS apart: a group where a number moved is at work, no hang). Per stalled
 * group, the members whose number is lower than the highest are behind: they have not entered
 * the collectives the others did (numbered like the records: a collective's number is the
 * group's sequence number before it). Only numbers of one group are compared, so a random start
 * (torch 1.13's gloo: the same on every member) does not matter. See docs/cluster.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

struct sval {
    int rank, moved; /* moved: its number changed between the two reads */
    double seq;
};

struct sgroup {
    char *key;
    const char *pg, *backend;
    const cJSON *ranks; /* the group's global ranks, as the first member gave them */
    struct sval *v;
    int n, cap;
};

static int cmp_sval(const void *a, const void *b)
{
    const struct sval *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Group names are torch's "0", "1", ...: by length, then text. */
static int cmp_group(const void *a, const void *b)
{
    const struct sgroup *x = a, *y = b;
    size_t lx = strlen(x->pg), ly = strlen(y->pg);
    if (lx != ly)
        return (lx > ly) - (lx < ly);
    int c = strcmp(x->pg, y->pg);
    return c ? c : strcmp(x->key, y->key);
}

static char *group_key(const cJSON *g)
{
    char *ranks = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(g, "ranks"));
    const char *pg = cli_json_str(g, "pg") ? cli_json_str(g, "pg") : "?";
    size_t len = strlen(pg) + (ranks ? strlen(ranks) : 0) + 2;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%s|%s", pg, ranks ? ranks : "");
    free(ranks);
    return k;
}

static struct sgroup *group_of(struct sgroup **gs, int *n, int *cap, const cJSON *g)
{
    char *key = group_key(g);
    if (!key)
        return NULL;
    for (int i = 0; i < *n; i++)
        if (strcmp((*gs)[i].key, key) == 0) {
            free(key);
            return &(*gs)[i];
        }
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        struct sgroup *t = realloc(*gs, sizeof(**gs) * (size_t)nc);
        if (!t) {
            free(key);
            return NULL;
        }
        *gs = t;
        *cap = nc;
    }
    struct sgroup *s = &(*gs)[(*n)++];
    *s = (struct sgroup){.key = key,
                         .pg = cli_json_str(g, "pg") ? cli_json_str(g, "pg") : "?",
                         .backend = cli_json_str(g, "backend") ? cli_json_str(g, "backend") : "?",
                         .ranks = cJSON_GetObjectItemCaseSensitive(g, "ranks")};
    return s;
}

static void push(struct sgroup *s, int rank, double seq, int moved)
{
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 8;
        struct sval *t = realloc(s->v, sizeof(*t) * (size_t)nc);
        if (!t)
            return;
        s->v = t;
        s->cap = nc;
    }
    s->v[s->n++] = (struct sval){.rank = rank, .seq = seq, .moved = moved};
}

static void not_read(cJSON *list, int rank, const char *why)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddStringToObject(o, "error", why);
    cJSON_AddItemToArray(list, o);
}

/* One group: {pg, group_ranks, backend, seqs: [[rank, seq]], max, not_read: [members without a
 * number], moving: [members whose number changed between the two reads]}, and, when none
 * moved (a hang), its behind entries ({pg, group_ranks, behind: [ranks], seq, ahead: [ranks],
 * ahead_seq}, one per lower number) added to behind. */
static cJSON *group_json(struct sgroup *s, cJSON *behind)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pg", s->pg);
    cJSON_AddItemToObject(o, "group_ranks", cJSON_Duplicate(s->ranks, 1));
    cJSON_AddStringToObject(o, "backend", s->backend);
    qsort(s->v, (size_t)s->n, sizeof(*s->v), cmp_sval);
    cJSON *seqs = cJSON_AddArrayToObject(o, "seqs");
    double max = 0;
    for (int i = 0; i < s->n; i++) {
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber(s->v[i].rank));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(s->v[i].seq));
        cJSON_AddItemToArray(seqs, p);
        if (i == 0 || s->v[i].seq > max)
            max = s->v[i].seq;
    }
    cJSON_AddNumberToObject(o, "max", max);
    cJSON *moving = cJSON_AddArrayToObject(o, "moving");
    for (int i = 0; i < s->n; i++)
        if (s->v[i].moved)
            cJSON_AddItemToArray(moving, cJSON_CreateNumber(s->v[i].rank));
    cJSON *missing = cJSON_AddArrayToObject(o, "not_read");
    const cJSON *m;
    cJSON_ArrayForEach(m, s->ranks)
    {
        int found = 0;
        for (int i = 0; i < s->n && !found; i++)
            found = s->v[i].rank == (int)m->valuedouble;
        if (!found)
            cJSON_AddItemToArray(missing, cJSON_CreateNumber(m->valuedouble));
    }
    /* Each lower number, lowest first: the ranks there, behind the ranks at the highest. */
    double last = -1;
    for (; cJSON_GetArraySize(moving) == 0;) {
        double low = max;
        int any = 0;
        for (int i = 0; i < s->n; i++)
            if (s->v[i].seq < max && (last < 0 || s->v[i].seq > last) &&
                (!any || s->v[i].seq < low)) {
                low = s->v[i].seq;
                any = 1;
            }
        if (!any)
            break;
        last = low;
        cJSON *b = cJSON_CreateObject(), *br = cJSON_CreateArray(), *ah = cJSON_CreateArray();
        for (int i = 0; i < s->n; i++) {
            if (s->v[i].seq == low)
                cJSON_AddItemToArray(br, cJSON_CreateNumber(s->v[i].rank));
            else if (s->v[i].seq == max)
                cJSON_AddItemToArray(ah, cJSON_CreateNumber(s->v[i].rank));
        }
        cJSON_AddStringToObject(b, "pg", s->pg);
        cJSON_AddItemToObject(b, "group_ranks", cJSON_Duplicate(s->ranks, 1));
        cJSON_AddItemToObject(b, "behind", br);
        cJSON_AddNumberToObject(b, "seq", low);
        cJSON_AddItemToObject(b, "ahead", ah);
        cJSON_AddNumberToObject(b, "ahead_seq", max);
        cJSON_AddItemToArray(behind, b);
    }
    return o;
}

/* A rank's innermost Python frame and the first frame below it outside torch (its caller in
 * the job's code): {frame: {func, file, line}, from: {...}}, from the rank's "where" (its
 * thread's frames, innermost first); NULL when not read. */
static cJSON *where_of(const cJSON *nodes, const char *job, int rank)
{
    const cJSON *d, *r, *f;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (!j || strcmp(j, job) != 0 || (int)cli_json_num(r, "rank", -1) != rank)
            continue;
        const cJSON *frames = cJSON_GetObjectItemCaseSensitive(r, "where");
        const cJSON *top = cJSON_GetArrayItem(frames, 0);
        if (!top)
            return NULL;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "frame", cJSON_Duplicate(top, 1));
        int i = 0;
        cJSON_ArrayForEach(f, frames)
        {
            const char *file = cli_json_str(f, "file");
            if (i++ > 0 && file && !strstr(file, "/torch/")) {
                cJSON_AddItemToObject(o, "from", cJSON_Duplicate(f, 1));
                break;
            }
        }
        return o;
    }
    return NULL;
}

/* "func (file:line)" with the file's base name (torch's files from "torch/" on). */
static void frame_text(char *buf, size_t len, const cJSON *f)
{
    const char *file = cli_json_str(f, "file") ? cli_json_str(f, "file") : "?";
    const char *t = strstr(file, "/torch/"), *b = strrchr(file, '/');
    file = t ? t + 1 : b ? b + 1 : file;
    const char *func = cli_json_str(f, "func") ? cli_json_str(f, "func") : "?";
    snprintf(buf, len, "%s (%s:%.0f)", cli_tx(func), cli_tx(file), cli_json_num(f, "line", 0));
}

static void where_text(char *buf, size_t len, const cJSON *w)
{
    char a[300], b[300];
    frame_text(a, sizeof a, cJSON_GetObjectItemCaseSensitive(w, "frame"));
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(w, "from");
    if (from)
        frame_text(b, sizeof b, from);
    snprintf(buf, len, "%s%s%s", a, from ? " from " : "", from ? b : "");
}

/* Adds to ws ({ranks, frame, from} per place) where each rank of ranks is, those at the same
 * place together; with behind >= 0 each place also says whether its ranks are behind (a place
 * is then shared only by ranks of the same side). */
static void places(cJSON *ws, const cJSON *ranks, int behind, const cJSON *nodes, const char *job)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, ranks)
    {
        cJSON *w = where_of(nodes, job, (int)x->valuedouble);
        if (!w)
            continue;
        char t1[700], t2[700];
        where_text(t1, sizeof t1, w);
        cJSON *same = NULL, *y;
        cJSON_ArrayForEach(y, ws)
        {
            where_text(t2, sizeof t2, y);
            if (strcmp(t1, t2) == 0 && (behind < 0 || cli_json_true(y, "behind") == behind))
                same = y;
        }
        if (same) {
            cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(same, "ranks"),
                                 cJSON_CreateNumber(x->valuedouble));
            cJSON_Delete(w);
            continue;
        }
        cJSON *rs = cJSON_CreateArray();
        cJSON_AddItemToArray(rs, cJSON_CreateNumber(x->valuedouble));
        cJSON_AddItemToObject(w, "ranks", rs);
        if (behind >= 0)
            cJSON_AddBoolToObject(w, "behind", behind);
        cJSON_AddItemToArray(ws, w);
    }
}

/* Adds where: [{ranks, frame, from, behind}] to a behind entry: its behind and ahead ranks. */
static void add_where(cJSON *b, const cJSON *nodes, const char *job)
{
    cJSON *ws = cJSON_AddArrayToObject(b, "where");
    places(ws, cJSON_GetObjectItemCaseSensitive(b, "behind"), 1, nodes, job);
    places(ws, cJSON_GetObjectItemCaseSensitive(b, "ahead"), 0, nodes, job);
}

/* Whether any process of the job claims rank (answering or not). */
static int claimed(const cJSON *nodes, const char *job, int rank)
{
    const cJSON *d, *r;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (j && strcmp(j, job) == 0 && (int)cli_json_num(r, "rank", -1) == rank)
            return 1;
    }
    return 0;
}

/* A group's members are level (the same number, all read) and none moved: adds places, where
 * each member is, when their stacks were read. Members waiting in different places at the same
 * number entered the same count of the group's collectives: if those are collectives, they are
 * different ones (a mismatch the numbers alone cannot show). */
static void level_places(cJSON *g, const cJSON *nodes, const char *job)
{
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "moving")) > 0)
        return;
    const cJSON *p, *seqs = cJSON_GetObjectItemCaseSensitive(g, "seqs");
    double max = cli_json_num(g, "max", 0);
    cJSON *rs = cJSON_CreateArray();
    cJSON_ArrayForEach(p, seqs)
    {
        if (cJSON_GetArrayItem(p, 1)->valuedouble != max) {
            cJSON_Delete(rs);
            return;
        }
        cJSON_AddItemToArray(rs, cJSON_CreateNumber(cJSON_GetArrayItem(p, 0)->valuedouble));
    }
    cJSON *ws = cJSON_CreateArray();
    places(ws, rs, -1, nodes, job);
    cJSON_Delete(rs);
    if (cJSON_GetArraySize(ws) > 0)
        cJSON_AddItemToObject(g, "places", ws);
    else
        cJSON_Delete(ws);
}

cJSON *cli_cluster_seq_analyse(const cJSON *nodes, const char *job)
{
    cJSON *out = cJSON_CreateObject();
    cJSON *read = cJSON_AddArrayToObject(out, "read");
    cJSON *unread = cJSON_AddArrayToObject(out, "not_read");
    cJSON *groups = cJSON_AddArrayToObject(out, "groups");
    cJSON *behind = cJSON_AddArrayToObject(out, "behind");
    struct sgroup *gs = NULL;
    int ng = 0, cap = 0, random = 0, zero = 0;
    const cJSON *d, *r, *g;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (!j || strcmp(j, job) != 0)
            continue;
        int rank = (int)cli_json_num(r, "rank", -1);
        if (cli_json_str(r, "error")) {
            not_read(unread, rank, cli_json_str(r, "error"));
            continue;
        }
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(r, "seq");
        if (!seq) {
            not_read(unread, rank,
                     cli_json_str(r, "seq_error") ? cli_json_str(r, "seq_error") : "no answer");
            continue;
        }
        if (!cli_json_true(seq, "initialized")) {
            not_read(unread, rank, "its process group is not initialised (init_process_group)");
            continue;
        }
        cJSON_AddItemToArray(read, cJSON_CreateNumber(rank));
        const char *start = cli_json_str(seq, "start");
        random |= start && strcmp(start, "random") == 0;
        zero |= !start || strcmp(start, "random") != 0;
        const cJSON *later = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r, "seq_later"), "groups");
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(seq, "groups"))
        {
            struct sgroup *s = group_of(&gs, &ng, &cap, g);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, "seq"), *l;
            if (!s || !cJSON_IsNumber(v))
                continue;
            double now = v->valuedouble;
            cJSON_ArrayForEach(l, later)
            {
                char *k = group_key(l);
                const cJSON *lv = cJSON_GetObjectItemCaseSensitive(l, "seq");
                if (k && strcmp(k, s->key) == 0 && cJSON_IsNumber(lv))
                    now = lv->valuedouble;
                free(k);
            }
            push(s, rank, now, now != v->valuedouble);
        }
    }
    cJSON_AddStringToObject(out, "start", random && zero ? "mixed" : random ? "random" : "zero");
    qsort(gs, (size_t)ng, sizeof(*gs), cmp_group);
    for (int i = 0; i < ng; i++) {
        cJSON_AddItemToArray(groups, group_json(&gs[i], behind));
        free(gs[i].key);
        free(gs[i].v);
    }
    free(gs);
    cJSON *b;
    cJSON_ArrayForEach(b, behind) add_where(b, nodes, job);
    /* Members that no process claims (exited or killed), once each. */
    cJSON *gone = cJSON_AddArrayToObject(out, "gone");
    cJSON_ArrayForEach(b, groups)
    {
        level_places(b, nodes, job);
        const cJSON *m, *x;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(b, "not_read"))
        {
            int seen = 0;
            cJSON_ArrayForEach(x, gone) seen |= x->valuedouble == m->valuedouble;
            if (!seen && !claimed(nodes, job, (int)m->valuedouble))
                cJSON_AddItemToArray(gone, cJSON_CreateNumber(m->valuedouble));
        }
    }
    cJSON_ArrayForEach(b, unread)
    {
        cJSON *w = where_of(nodes, job, (int)cli_json_num(b, "rank", -1));
        if (w)
            cJSON_AddItemToObject(b, "where", w);
    }
    return out;
}

static char *ranges_of(const cJSON *a, int *count)
{
    int n = cJSON_GetArraySize(a), k = 0;
    int *v = malloc(sizeof(int) * (size_t)(n ? n : 1));
    const cJSON *x;
    if (!v)
        return NULL;
    cJSON_ArrayForEach(x, a) v[k++] =
        (int)(cJSON_IsNumber(x) ? x->valuedouble : cli_json_num(x, "rank", -1));
    qsort(v, (size_t)k, sizeof(int), cmp_int);
    char *s = cli_cluster_ranges(v, k);
    free(v);
    if (count)
        *count = k;
    return s;
}

/* "ranks 0-2 are in f (file:line) from g (file:line)", one line per place of ws. */
static void print_where(const cJSON *ws, const char *indent)
{
    const cJSON *w;
    cJSON_ArrayForEach(w, ws)
    {
        int nw;
        char *wr = ranges_of(cJSON_GetObjectItemCaseSensitive(w, "ranks"), &nw);
        char text[700];
        where_text(text, sizeof text, w);
        printf("%srank%s %s %s in %s\n", indent, nw == 1 ? "" : "s", wr ? wr : "?",
               nw == 1 ? "is" : "are", text);
        free(wr);
    }
}

int cli_cluster_seq_print_behind(const cJSON *s)
{
    int random = strcmp(cli_json_str(s, "start") ? cli_json_str(s, "start") : "", "zero") != 0;
    const cJSON *b;
    int n = 0;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(s, "behind"))
    {
        int nb, na;
        char *br = ranges_of(cJSON_GetObjectItemCaseSensitive(b, "behind"), &nb);
        char *ah = ranges_of(cJSON_GetObjectItemCaseSensitive(b, "ahead"), &na);
        char *gr = ranges_of(cJSON_GetObjectItemCaseSensitive(b, "group_ranks"), NULL);
        double seq = cli_json_num(b, "seq", 0), top = cli_json_num(b, "ahead_seq", 0);
        printf("rank%s %s %s behind in group %s (ranks %s): ", nb == 1 ? "" : "s", br ? br : "?",
               nb == 1 ? "is" : "are", cli_json_text(b, "pg"), gr ? gr : "?");
        if (random)
            printf("%s at sequence number %.0f, rank%s %s at %.0f (%.0f collective%s ahead)\n",
                   nb == 1 ? "it is" : "they are", seq, na == 1 ? "" : "s", ah ? ah : "?", top,
                   top - seq, top - seq == 1 ? "" : "s");
        else
            printf("%s entered %.0f collective%s, rank%s %s entered %.0f\n",
                   nb == 1 ? "it" : "they", seq, seq == 1 ? "" : "s", na == 1 ? "" : "s",
                   ah ? ah : "?", top);
        printf("  %s not entered the group's collective #%.0f (numbered from the group's "
               "sequence number before it)\n",
               nb == 1 ? "it has" : "they have", seq);
        print_where(cJSON_GetObjectItemCaseSensitive(b, "where"), "  ");
        free(br);
        free(ah);
        free(gr);
        n++;
    }
    return n;
}

/* Where the members of a level, still group are; members in different places with none
 * unread: what that means. */
static void print_places(const cJSON *g, int unread)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(g, "places");
    print_where(ws, "    ");
    if (cJSON_GetArraySize(ws) > 1 && !unread)
        printf("    every member entered as many of the group's collectives, none more in %d s, "
               "and they wait in different places: if these are collectives of the group, they "
               "are different ones (a mismatch: 'perf --comm' on every rank names each side's "
               "op, sizes and dtype)\n",
               CLUSTER_SEQ_WAIT_MS / 1000);
}

void cli_cluster_seq_print(const cJSON *s, int recorder_ran)
{
    printf("\ntorch's sequence numbers (per process group, read on every rank under its GIL%s):\n",
           recorder_ran ? "" : "; the recorder was not running");
    cli_cluster_seq_print_behind(s);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(s, "groups"))
    {
        const cJSON *seqs = cJSON_GetObjectItemCaseSensitive(g, "seqs");
        int n = cJSON_GetArraySize(seqs);
        double max = cli_json_num(g, "max", 0);
        int at_max = 0;
        const cJSON *p;
        cJSON_ArrayForEach(p, seqs) at_max += cJSON_GetArrayItem(p, 1)->valuedouble == max;
        char *gr = ranges_of(cJSON_GetObjectItemCaseSensitive(g, "group_ranks"), NULL);
        int nmov;
        char *mov = ranges_of(cJSON_GetObjectItemCaseSensitive(g, "moving"), &nmov);
        if (nmov)
            printf("  group %s (ranks %s, %s): no hang: rank%s %s entered more collectives in "
                   "the %d s between two reads\n",
                   cli_json_text(g, "pg"), gr ? gr : "?", cli_json_text(g, "backend"),
                   nmov == 1 ? "" : "s", mov ? mov : "?", CLUSTER_SEQ_WAIT_MS / 1000);
        free(mov);
        int nm;
        char *miss = ranges_of(cJSON_GetObjectItemCaseSensitive(g, "not_read"), &nm);
        if (!nmov && at_max == n && n > 0) {
            cJSON *rs = cJSON_CreateArray();
            cJSON_ArrayForEach(p, seqs)
                cJSON_AddItemToArray(rs, cJSON_CreateNumber(cJSON_GetArrayItem(p, 0)->valuedouble));
            char *at = ranges_of(rs, NULL);
            /* Level and still: with members unread, those are behind if the others wait in a
             * collective (their stacks say). */
            if (nm)
                printf("  group %s (ranks %s, %s): rank%s %s at %.0f, still %d s later; no "
                       "number from rank%s %s (not read, below): if rank%s %s wait%s in a "
                       "collective, %s behind\n",
                       cli_json_text(g, "pg"), gr ? gr : "?", cli_json_text(g, "backend"),
                       n == 1 ? "" : "s", at ? at : "?", max, CLUSTER_SEQ_WAIT_MS / 1000,
                       nm == 1 ? "" : "s", miss ? miss : "?", n == 1 ? "" : "s", at ? at : "?",
                       n == 1 ? "s" : "", nm == 1 ? "it is" : "they are");
            else
                printf("  group %s (ranks %s, %s): none behind: rank%s %s at %.0f\n",
                       cli_json_text(g, "pg"), gr ? gr : "?", cli_json_text(g, "backend"),
                       n == 1 ? "" : "s", at ? at : "?", max);
            free(at);
            cJSON_Delete(rs);
            print_places(g, nm);
        } else if (nm) {
            printf("  group %s (ranks %s): no number from rank%s %s (not read, below)\n",
                   cli_json_text(g, "pg"), gr ? gr : "?", nm == 1 ? "" : "s", miss ? miss : "?");
        }
        free(miss);
        free(gr);
    }
    const cJSON *u;
    cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(s, "gone"))
        printf("  rank %.0f: no process of the job claims it (exited or killed)\n", u->valuedouble);
    cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(s, "not_read"))
    {
        printf("  rank %.0f: not read: %s\n", cli_json_num(u, "rank", -1),
               cli_json_text(u, "error"));
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(u, "where");
        if (w) {
            char text[700];
            where_text(text, sizeof text, w);
            printf("    it is in %s\n", text);
        }
    }
    if (strcmp(cli_json_str(s, "start") ? cli_json_str(s, "start") : "", "zero") != 0)
        printf("  (torch 1.13's gloo numbers a group's collectives from a random start, the same "
               "on every member: only the differences count)\n");
}
