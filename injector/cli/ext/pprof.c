/* SPDX-License-Identifier: MIT */
/* `--format pprof` (ext.h): a flame tree's stacks as pprof's profile.proto (profile.proto
 * here, compiled by protoc-c at build time), gzip-compressed, as `go tool pprof`, Pyroscope
 * and Parca read it. One Sample per (thread, stack) with two values, the sample count and the
 * time it stands for (count x period, in nanoseconds), labelled with the thread's id and
 * name; one Location per distinct frame name (innermost first in a sample), each with one
 * Line; one Function per (function, file): a Python frame "func (file:line)" is function func
 * of file at that line, a native one its symbol ("module+0xOFFSET" of file module). Native
 * frames have no Mapping: the stacks hold names, not addresses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ext.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__ValueType ValueType;

struct enc {
    struct flame_intern strings, funcs, locs;
    Function *fn;
    Function **fnp;
    size_t nfn, capfn;
    Location *loc;
    Location **locp;
    Line *line;
    Line **linep;
    size_t nloc, caploc;
};

/* The string table index of s (added when new), or -1. */
static long str_id(struct enc *e, const char *s)
{
    int added;
    return flame_intern_id(&e->strings, s, strlen(s), &added);
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The Function id (1-based) of (func, file), added when new; 0 when out of memory. */
static uint64_t func_id(struct enc *e, const char *func, const char *file)
{
    char key[4096];
    int added;
    int k = snprintf(key, sizeof key, "%s%c%s", func, 0x1f, file);
    long id = flame_intern_id(&e->funcs, key, (size_t)k < sizeof key ? (size_t)k : sizeof key - 1,
                              &added);
    if (id < 0)
        return 0;
    if (added) {
        size_t cap = e->capfn;
        if (grow((void **)&e->fn, &cap, e->nfn, sizeof *e->fn) < 0)
            return 0;
        e->capfn = cap;
        long nm = str_id(e, func), fl = str_id(e, file);
        if (nm < 0 || fl < 0)
            return 0;
        Function f = PERFTOOLS__PROFILES__FUNCTION__INIT;
        f.id = (uint64_t)id + 1;
        f.name = nm;
        f.system_name = nm;
        f.filename = fl;
        e->fn[e->nfn++] = f;
    }
    return (uint64_t)id + 1;
}

/* The Location id (1-based) of the frame name[0..len), added when new; 0 when out of memory. */
static uint64_t loc_id(struct enc *e, const char *name, size_t len)
{
    int added;
    long id = flame_intern_id(&e->locs, name, len, &added);
    if (id < 0 || !added)
        return id < 0 ? 0 : (uint64_t)id + 1;
    size_t cap = e->caploc;
    if (grow((void **)&e->loc, &cap, e->nloc, sizeof *e->loc) < 0)
        return 0;
    cap = e->caploc;
    if (grow((void **)&e->line, &cap, e->nloc, sizeof *e->line) < 0)
        return 0;
    e->caploc = cap;
    char nm[2048], func[2048], file[2048];
    int line = 0;
    snprintf(nm, sizeof nm, "%.*s", (int)len, name);
    if (flame_name_split(nm, func, sizeof func, file, sizeof file, &line) < 0) {
        const char *plus = strstr(nm, "+0x");
        snprintf(func, sizeof func, "%s", nm);
        snprintf(file, sizeof file, "%.*s", plus && plus != nm ? (int)(plus - nm) : 0, nm);
        line = 0;
    }
    uint64_t fid = func_id(e, func, file);
    if (!fid)
        return 0;
    Line l = PERFTOOLS__PROFILES__LINE__INIT;
    l.function_id = fid;
    l.line = line;
    Location L = PERFTOOLS__PROFILES__LOCATION__INIT;
    L.id = (uint64_t)id + 1;
    e->line[e->nloc] = l;
    e->loc[e->nloc++] = L;
    return (uint64_t)id + 1;
}

/* buf[0..n) gzip-compressed to f. 0, or -1. */
static int gzip_write(const uint8_t *buf, size_t n, FILE *f)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    unsigned char out[65536];
    z.next_in = (Bytef *)buf;
    z.avail_in = (uInt)n;
    int zr;
    do {
        z.next_out = out;
        z.avail_out = sizeof out;
        zr = deflate(&z, Z_FINISH);
        if (zr == Z_STREAM_ERROR ||
            fwrite(out, 1, sizeof out - z.avail_out, f) != sizeof out - z.avail_out) {
            deflateEnd(&z);
            return -1;
        }
    } while (zr != Z_STREAM_END);
    deflateEnd(&z);
    return ferror(f) ? -1 : 0;
}

int ext_pprof(const struct flame_tree *t, const struct cli_pprof_info *info, FILE *f,
              struct pb_err *err)
{
    struct enc e = {0};
    Sample *smp = calloc(t->nstacks ? t->nstacks : 1, sizeof *smp);
    Sample **smpp = calloc(t->nstacks ? t->nstacks : 1, sizeof *smpp);
    Label *lab = calloc(t->nstacks ? 2 * t->nstacks : 1, sizeof *lab);
    Label **labp = calloc(t->nstacks ? 2 * t->nstacks : 1, sizeof *labp);
    int64_t *vals = calloc(t->nstacks ? 2 * t->nstacks : 1, sizeof *vals);
    uint64_t *ids = NULL;
    size_t nids = 0, capids = 0;
    uint8_t *buf = NULL;
    char **strs = NULL;
    int rc = -1;
    if (!smp || !smpp || !lab || !labp || !vals || str_id(&e, "") != 0)
        goto oom;
    int64_t period = (int64_t)(info->period_s * 1e9 + 0.5);
    const char *kind = info->mode && strcmp(info->mode, "wall") == 0 ? "wall" : "cpu";
    long s_samples = str_id(&e, "samples"), s_count = str_id(&e, "count");
    long s_kind = str_id(&e, kind), s_ns = str_id(&e, "nanoseconds");
    long s_tid = str_id(&e, "thread_id"), s_tname = str_id(&e, "thread_name");
    long s_comment = str_id(&e, info->comment ? info->comment : "probing");
    if (s_samples < 0 || s_count < 0 || s_kind < 0 || s_ns < 0 || s_tid < 0 || s_tname < 0 ||
        s_comment < 0)
        goto oom;
    /* Location ids of every stack, innermost first, one array; offsets per sample. */
    size_t *off = calloc(t->nstacks + 1, sizeof *off);
    if (!off)
        goto oom;
    for (size_t i = 0; i < t->nstacks; i++) {
        const struct flame_stack *s = &t->stacks[i];
        size_t first = nids;
        for (const char *p = s->folded; *p;) {
            const char *end = strchr(p, ';');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len) {
                uint64_t id = loc_id(&e, p, len);
                if (!id || grow((void **)&ids, &capids, nids, sizeof *ids) < 0) {
                    free(off);
                    goto oom;
                }
                ids[nids++] = id;
            }
            if (!end)
                break;
            p = end + 1;
        }
        for (size_t a = first, b = nids; a + 1 < b; a++, b--) { /* outermost first -> last */
            uint64_t x = ids[a];
            ids[a] = ids[b - 1];
            ids[b - 1] = x;
        }
        off[i + 1] = nids;
        const struct flame_thread *T = &t->threads[s->thread];
        long tn = str_id(&e, T->name ? T->name : "");
        if (tn < 0) {
            free(off);
            goto oom;
        }
        Label a = PERFTOOLS__PROFILES__LABEL__INIT, b = PERFTOOLS__PROFILES__LABEL__INIT;
        a.key = s_tid;
        a.num = T->id;
        b.key = s_tname;
        b.str = tn;
        lab[2 * i] = a;
        lab[2 * i + 1] = b;
        vals[2 * i] = (int64_t)s->count;
        vals[2 * i + 1] = (int64_t)s->count * period;
    }
    for (size_t i = 0; i < t->nstacks; i++) {
        Sample x = PERFTOOLS__PROFILES__SAMPLE__INIT;
        x.n_location_id = off[i + 1] - off[i];
        x.location_id = ids + off[i];
        x.n_value = 2;
        x.value = vals + 2 * i;
        x.n_label = 2;
        labp[2 * i] = &lab[2 * i];
        labp[2 * i + 1] = &lab[2 * i + 1];
        x.label = labp + 2 * i;
        smp[i] = x;
        smpp[i] = &smp[i];
    }
    free(off);
    /* Pointer arrays, now that the arrays of structs no longer move. */
    e.fnp = calloc(e.nfn ? e.nfn : 1, sizeof *e.fnp);
    e.locp = calloc(e.nloc ? e.nloc : 1, sizeof *e.locp);
    e.linep = calloc(e.nloc ? e.nloc : 1, sizeof *e.linep);
    strs = calloc(e.strings.n ? e.strings.n : 1, sizeof *strs);
    if (!e.fnp || !e.locp || !e.linep || !strs)
        goto oom;
    for (size_t i = 0; i < e.nfn; i++)
        e.fnp[i] = &e.fn[i];
    for (size_t i = 0; i < e.nloc; i++) {
        e.linep[i] = &e.line[i];
        e.loc[i].n_line = 1;
        e.loc[i].line = &e.linep[i];
        e.locp[i] = &e.loc[i];
    }
    for (size_t i = 0; i < e.strings.cap; i++)
        if (e.strings.keys[i])
            strs[e.strings.ids[i]] = e.strings.keys[i];
    ValueType vt[2] = {PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
                       PERFTOOLS__PROFILES__VALUE_TYPE__INIT};
    vt[0].type = s_samples;
    vt[0].unit = s_count;
    vt[1].type = s_kind;
    vt[1].unit = s_ns;
    ValueType *vtp[2] = {&vt[0], &vt[1]};
    ValueType pt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    pt.type = s_kind;
    pt.unit = s_ns;
    int64_t comment = s_comment;
    Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
    p.n_sample_type = 2;
    p.sample_type = vtp;
    p.n_sample = t->nstacks;
    p.sample = smpp;
    p.n_location = e.nloc;
    p.location = e.locp;
    p.n_function = e.nfn;
    p.function = e.fnp;
    p.n_string_table = e.strings.n;
    p.string_table = strs;
    p.time_nanos = (int64_t)(info->start_ts * 1e9);
    p.duration_nanos = (int64_t)(info->duration_s * 1e9);
    p.period_type = &pt;
    p.period = period;
    p.n_comment = 1;
    p.comment = &comment;
    p.default_sample_type = s_kind; /* the time, as go tool pprof shows it first */
    size_t n = perftools__profiles__profile__get_packed_size(&p);
    buf = malloc(n ? n : 1);
    if (!buf)
        goto oom;
    perftools__profiles__profile__pack(&p, buf);
    if (gzip_write(buf, n, f) < 0) {
        err->code = -EIO;
        snprintf(err->msg, sizeof err->msg, "%s", strerror(errno));
    } else {
        rc = 0;
    }
    goto out;
oom:
    err->code = -ENOMEM; /* pb_err_set is the CLI's: this library calls nothing of it */
    snprintf(err->msg, sizeof err->msg, "out of memory");
out:
    free(buf);
    free(strs);
    free(e.fnp);
    free(e.locp);
    free(e.linep);
    free(e.fn);
    free(e.loc);
    free(e.line);
    flame_intern_free(&e.strings);
    flame_intern_free(&e.funcs);
    flame_intern_free(&e.locs);
    free(ids);
    free(vals);
    free(labp);
    free(lab);
    free(smpp);
    free(smp);
    return rc;
}
