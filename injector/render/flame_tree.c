/* SPDX-License-Identifier: MIT */
/* The call tree behind every flame graph output (flame.h): folded stacks ("a;b;c 12") merged
 * into one tree of frames with sample counts, plus the per-thread stack list speedscope needs.
 * Frame kinds are told from names (Python frames are "func (file:line)", docs/tables.md). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

void flame_tree_init(struct flame_tree *t)
{
    memset(t, 0, sizeof *t);
    t->root.kind = FLAME_ROOT;
}

static void node_free(struct flame_node *n)
{
    for (size_t i = 0; i < n->nkids; i++) {
        node_free(n->kids[i]);
        free(n->kids[i]);
    }
    free(n->kids);
    free(n->name);
}

void flame_tree_close(struct flame_tree *t)
{
    if (!t)
        return;
    node_free(&t->root);
    for (size_t i = 0; i < t->nstacks; i++)
        free(t->stacks[i].folded);
    free(t->stacks);
    for (size_t i = 0; i < t->nthreads; i++)
        free(t->threads[i].name);
    free(t->threads);
    flame_tree_init(t);
}

enum flame_kind flame_kind_of(const char *name)
{
    int line;
    char f[2], g[2];
    return flame_name_split(name, f, sizeof f, g, sizeof g, &line) == 0 ? FLAME_PYTHON
                                                                        : FLAME_NATIVE;
}

int flame_name_split(const char *name, char *func, size_t funcn, char *file, size_t filen,
                     int *line)
{
    size_t n = strlen(name);
    if (n < 6 || name[n - 1] != ')')
        return -1;
    size_t i = n - 1; /* at ')' */
    size_t digits_end = i;
    while (i > 0 && isdigit((unsigned char)name[i - 1]))
        i--;
    if (i == digits_end || i < 2 || name[i - 1] != ':')
        return -1;
    size_t colon = i - 1;
    /* The " (" that opens the location: the first one (qualified names have no spaces, file
     * names may). */
    const char *o = strstr(name, " (");
    if (!o || o == name || (size_t)(o - name) + 2 >= colon)
        return -1;
    size_t open = (size_t)(o - name) + 1;
    size_t fl = open - 1, pl = colon - open - 1;
    snprintf(func, funcn, "%.*s", (int)fl, name);
    snprintf(file, filen, "%.*s", (int)pl, name + open + 1);
    *line = atoi(name + colon + 1);
    return 0;
}

static struct flame_node *child(struct flame_tree *t, struct flame_node *n, const char *name,
                                size_t len)
{
    /* The last callee added is the likeliest match (stacks arrive grouped). */
    for (size_t k = n->nkids; k > 0; k--) {
        struct flame_node *c = n->kids[k - 1];
        if (strncmp(c->name, name, len) == 0 && c->name[len] == '\0')
            return c;
    }
    if (n->nkids == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 4;
        struct flame_node **k = realloc(n->kids, cap * sizeof *k);
        if (!k)
            return NULL;
        n->kids = k;
        n->cap = cap;
    }
    struct flame_node *c = calloc(1, sizeof *c);
    if (!c || !(c->name = strndup(name, len))) {
        free(c);
        return NULL;
    }
    c->kind = flame_kind_of(c->name);
    n->kids[n->nkids++] = c;
    t->nnodes++;
    return c;
}

static long thread_index(struct flame_tree *t, long long tid, const char *tname)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].id == tid)
            return (long)i;
    struct flame_thread *th = realloc(t->threads, (t->nthreads + 1) * sizeof *th);
    if (!th)
        return -1;
    t->threads = th;
    th[t->nthreads].id = tid;
    th[t->nthreads].name = tname ? strdup(tname) : NULL;
    return (long)t->nthreads++;
}

int flame_tree_add(struct flame_tree *t, long long tid, const char *tname, const char *folded,
                   unsigned long long count)
{
    return flame_tree_add_id(t, tid, tname, -1, folded, count);
}

long flame_tree_find(const struct flame_tree *t, long long tid, long long id)
{
    size_t lo = 0, hi = t->nstacks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct flame_stack *s = &t->stacks[mid];
        long long mt = t->threads[s->thread].id;
        if (mt == tid && s->id == id)
            return (long)mid;
        if (mt < tid || (mt == tid && s->id < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int flame_tree_add_id(struct flame_tree *t, long long tid, const char *tname, long long id,
                      const char *folded, unsigned long long count)
{
    if (!count || !folded || !*folded)
        return 0;
    long ti = thread_index(t, tid, tname);
    if (ti < 0)
        return -ENOMEM;
    if (t->nstacks == t->capstacks) {
        size_t cap = t->capstacks ? t->capstacks * 2 : 64;
        struct flame_stack *s = realloc(t->stacks, cap * sizeof *s);
        if (!s)
            return -ENOMEM;
        t->stacks = s;
        t->capstacks = cap;
    }
    char *copy = strdup(folded);
    if (!copy)
        return -ENOMEM;
    t->stacks[t->nstacks++] = (struct flame_stack){(size_t)ti, copy, count, id};

    struct flame_node *n = &t->root;
    n->total += count;
    int depth = 0;
    for (const char *p = folded; *p;) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len) {
            n = child(t, n, p, len);
            if (!n)
                return -ENOMEM;
            n->total += count;
            depth++;
        }
        if (!e)
            break;
        p = e + 1;
    }
    n->self += count;
    if (depth > t->maxdepth)
        t->maxdepth = depth;
    return 0;
}

int flame_tree_parse(struct flame_tree *t, FILE *in)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int taken = 0;
    while ((n = getline(&line, &cap, in)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
            line[--n] = '\0';
        char *sp = strrchr(line, ' ');
        if (!sp || !sp[1])
            continue;
        char *end;
        unsigned long long c = strtoull(sp + 1, &end, 10);
        if (*end || sp[1] == '-')
            continue;
        *sp = '\0';
        if (flame_tree_add(t, 0, NULL, line, c) < 0) {
            free(line);
            return -ENOMEM;
        }
        taken++;
    }
    free(line);
    return taken;
}

static int by_name(const void *a, const void *b)
{
    const struct flame_node *x = *(struct flame_node *const *)a,
                            *y = *(struct flame_node *const *)b;
    return strcmp(x->name, y->name);
}

static void sort_node(struct flame_node *n)
{
    if (n->nkids > 1)
        qsort(n->kids, n->nkids, sizeof *n->kids, by_name);
    for (size_t i = 0; i < n->nkids; i++)
        sort_node(n->kids[i]);
}

void flame_tree_sort(struct flame_tree *t)
{
    sort_node(&t->root);
}

/* Depth-first, names pushed on a ';'-joined path buffer. */
static int folded_walk(const struct flame_node *n, char **buf, size_t *cap, size_t len, FILE *f)
{
    if (n->kind != FLAME_ROOT) {
        size_t nl = strlen(n->name);
        if (len + nl + 2 > *cap) {
            size_t c = (*cap + nl + 2) * 2;
            char *b = realloc(*buf, c);
            if (!b)
                return -1;
            *buf = b;
            *cap = c;
        }
        if (len)
            (*buf)[len++] = ';';
        memcpy(*buf + len, n->name, nl + 1);
        len += nl;
        if (n->self && fprintf(f, "%s %llu\n", *buf, n->self) < 0)
            return -1;
    }
    for (size_t i = 0; i < n->nkids; i++)
        if (folded_walk(n->kids[i], buf, cap, len, f) < 0)
            return -1;
    return 0;
}

int flame_write_folded(const struct flame_tree *t, FILE *f)
{
    size_t cap = 256;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    buf[0] = '\0';
    int rc = folded_walk(&t->root, &buf, &cap, 0, f);
    free(buf);
    return rc < 0 || ferror(f) ? -1 : 0;
}

void flame_escape(FILE *f, const char *s, const char *(*esc)(unsigned char c, char *buf),
                  const char *bad)
{
    char buf[8];
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        size_t n = c < 0x80 ? 1 : flame_utf8_len(s);
        const char *e = c < 0x80 ? esc(c, buf) : n ? NULL : bad;
        if (e)
            fputs(e, f);
        else
            fwrite(s, 1, n, f);
        if (n > 1)
            s += n - 1;
    }
}

static const char *xml_char(unsigned char c, char *buf)
{
    (void)buf;
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    }
    /* XML 1.0 forbids most control characters even as references, and a browser refuses a
     * whole document over one invalid UTF-8 byte (flame_xml_escape's "?"). */
    return c < 0x20 && c != '\t' ? "?" : NULL;
}

void flame_xml_escape(FILE *f, const char *s)
{
    flame_escape(f, s, xml_char, "?");
}

size_t flame_utf8_len(const char *p)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t n;
    unsigned min;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0)
        n = 2, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0)
        n = 3, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = s[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}
