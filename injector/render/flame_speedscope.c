/* SPDX-License-Identifier: MIT */
/* speedscope JSON (flame.h): the file format of https://www.speedscope.app (its schema:
 * file-format-schema.json in the speedscope npm package). Frames are shared and deduplicated
 * by name (Python frames split into name, file and line); each thread is one "sampled" profile
 * whose samples are stacks of frame indices, outermost first, weighted by sample counts. */
#include <stdlib.h>
#include <string.h>

#include "flame.h"

/* JSON string body: quotes, backslashes and control characters escaped; invalid UTF-8 bytes
 * become U+FFFD so the file always parses. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else if (c < 0x80) {
            fputc(c, f);
        } else {
            size_t n = flame_utf8_len(s);
            if (!n) {
                fputs("\\ufffd", f);
            } else {
                fwrite(s, 1, n, f);
                s += n - 1;
            }
        }
    }
    fputc('"', f);
}

/* Frame names to indices: open addressing over a power-of-two table. */
struct names {
    char **keys;
    size_t *vals;
    size_t cap, n;
};

static unsigned long hash(const char *s, size_t len)
{
    unsigned long h = 5381;
    for (size_t i = 0; i < len; i++)
        h = h * 33 + (unsigned char)s[i];
    return h;
}

static int grow(struct names *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    char **k = calloc(cap, sizeof *k);
    size_t *v = calloc(cap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash(m->keys[i], strlen(m->keys[i])) & (cap - 1);
        while (k[j])
            j = (j + 1) & (cap - 1);
        k[j] = m->keys[i];
        v[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = v;
    m->cap = cap;
    return 0;
}

/* Index of name[0..len), added (and *added set) when new. Returns -1 when out of memory. */
static long name_index(struct names *m, const char *name, size_t len, int *added)
{
    *added = 0;
    if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    size_t j = hash(name, len) & (m->cap - 1);
    while (m->keys[j]) {
        if (strncmp(m->keys[j], name, len) == 0 && m->keys[j][len] == '\0')
            return (long)m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!(m->keys[j] = strndup(name, len)))
        return -1;
    m->vals[j] = m->n;
    *added = 1;
    return (long)m->n++;
}

static void names_free(struct names *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
}

static void frame_json(FILE *f, const char *name, int first)
{
    char func[1024], file[2048];
    int line;
    fputs(first ? "\n    " : ",\n    ", f);
    if (flame_name_split(name, func, sizeof func, file, sizeof file, &line) == 0) {
        fputs("{\"name\": ", f);
        json_str(f, func);
        fputs(", \"file\": ", f);
        json_str(f, file);
        fprintf(f, ", \"line\": %d}", line);
    } else {
        /* Native: "symbol" or "module+0xOFFSET"; the module is the best "file" we have. */
        fputs("{\"name\": ", f);
        json_str(f, name);
        const char *plus = strstr(name, "+0x");
        if (plus && plus != name) {
            snprintf(file, sizeof file, "%.*s", (int)(plus - name), name);
            fputs(", \"file\": ", f);
            json_str(f, file);
        }
        fputc('}', f);
    }
}

int flame_write_speedscope(const struct flame_tree *t, const char *name, FILE *f)
{
    struct names m = {0};
    int rc = -1;
    fputs("{\n  \"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
          "  \"exporter\": \"probing\",\n  \"name\": ", f);
    json_str(f, name ? name : "probing profile");
    fputs(",\n  \"activeProfileIndex\": 0,\n  \"shared\": {\"frames\": [", f);
    /* Frames first: every distinct name, in order of first appearance. */
    for (size_t i = 0; i < t->nstacks; i++) {
        for (const char *p = t->stacks[i].folded; *p;) {
            const char *e = strchr(p, ';');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            int added;
            if (len) {
                if (name_index(&m, p, len, &added) < 0)
                    goto out;
                if (added) {
                    char *nm = strndup(p, len);
                    if (!nm)
                        goto out;
                    frame_json(f, nm, m.n == 1);
                    free(nm);
                }
            }
            if (!e)
                break;
            p = e + 1;
        }
    }
    fputs("\n  ]},\n  \"profiles\": [", f);
    for (size_t th = 0; th < t->nthreads; th++) {
        unsigned long long total = 0;
        for (size_t i = 0; i < t->nstacks; i++)
            if (t->stacks[i].thread == th)
                total += t->stacks[i].count;
        char pname[512];
        const struct flame_thread *T = &t->threads[th];
        if (T->name && T->id)
            snprintf(pname, sizeof pname, "Thread %lld \"%s\"", T->id, T->name);
        else if (T->id)
            snprintf(pname, sizeof pname, "Thread %lld", T->id);
        else
            snprintf(pname, sizeof pname, "%s", T->name ? T->name : "all threads");
        fputs(th ? ",\n    {" : "\n    {", f);
        fputs("\"type\": \"sampled\", \"name\": ", f);
        json_str(f, pname);
        fprintf(f, ", \"unit\": \"none\", \"startValue\": 0, \"endValue\": %llu,\n"
                   "     \"samples\": [", total);
        int first = 1;
        for (size_t i = 0; i < t->nstacks; i++) {
            if (t->stacks[i].thread != th)
                continue;
            fputs(first ? "[" : ", [", f);
            first = 0;
            int fi = 1;
            for (const char *p = t->stacks[i].folded; *p;) {
                const char *e = strchr(p, ';');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                int added;
                if (len) {
                    long ix = name_index(&m, p, len, &added);
                    if (ix < 0)
                        goto out;
                    fprintf(f, fi ? "%ld" : ",%ld", ix);
                    fi = 0;
                }
                if (!e)
                    break;
                p = e + 1;
            }
            fputc(']', f);
        }
        fputs("],\n     \"weights\": [", f);
        first = 1;
        for (size_t i = 0; i < t->nstacks; i++) {
            if (t->stacks[i].thread != th)
                continue;
            fprintf(f, first ? "%llu" : ", %llu", t->stacks[i].count);
            first = 0;
        }
        fputs("]}", f);
    }
    fputs("\n  ]\n}\n", f);
    rc = ferror(f) ? -1 : 0;
out:
    names_free(&m);
    return rc;
}
