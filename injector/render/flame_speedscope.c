/* SPDX-License-Identifier: MIT */
/* speedscope JSON (flame.h): the file format of https://www.speedscope.app (its schema:
 * file-format-schema.json in the speedscope npm package). Frames are shared and deduplicated
 * by name (Python frames split into name, file and line); each thread is one "sampled" profile
 * whose samples are stacks of frame indices, outermost first, weighted by sample counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

static const char *json_char(unsigned char c, char *buf)
{
    if (c == '"' || c == '\\')
        snprintf(buf, 8, "\\%c", c);
    else if (c < 0x20)
        snprintf(buf, 8, "\\u%04x", c);
    else
        return NULL;
    return buf;
}

/* JSON string body: quotes, backslashes and control characters escaped; invalid UTF-8 bytes
 * become U+FFFD so the file always parses. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    flame_escape(f, s, json_char, "\\ufffd");
    fputc('"', f);
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
    struct flame_intern m = {0};
    int rc = -1;
    fputs("{\n  \"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
          "  \"exporter\": \"probing\",\n  \"name\": ",
          f);
    json_str(f, name ? name : "probing profile");
    fputs(",\n  \"activeProfileIndex\": 0,\n  \"shared\": {\"frames\": [", f);
    /* Frames first: every distinct name, in order of first appearance. */
    for (size_t i = 0; i < t->nstacks; i++) {
        for (const char *p = t->stacks[i].folded; *p;) {
            const char *e = strchr(p, ';');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            int added;
            if (len) {
                if (flame_intern_id(&m, p, len, &added) < 0)
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
        fprintf(f,
                ", \"unit\": \"none\", \"startValue\": 0, \"endValue\": %llu,\n"
                "     \"samples\": [",
                total);
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
                    long ix = flame_intern_id(&m, p, len, &added);
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
    flame_intern_free(&m);
    return rc;
}
