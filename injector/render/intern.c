/* SPDX-License-Identifier: MIT */
/* flame_intern: strings to dense ids 0, 1, 2... in the order first seen, open addressing over
 * a power-of-two table kept at most half full. speedscope's shared frame table uses it, and
 * the CLI's `cluster stacks` to group ranks by stack. */
#include <stdlib.h>
#include <string.h>

#include "flame.h"

/* FNV-1a of s[0..len). */
static unsigned long hash(const char *s, size_t len)
{
    unsigned long h = 1469598103934665603UL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211UL;
    return h;
}

static int grow(struct flame_intern *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    char **keys = calloc(cap, sizeof *keys);
    size_t *ids = calloc(cap, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->keys[i])
            continue;
        size_t j = hash(t->keys[i], strlen(t->keys[i])) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = t->keys[i];
        ids[j] = t->ids[i];
    }
    free(t->keys);
    free(t->ids);
    t->keys = keys;
    t->ids = ids;
    t->cap = cap;
    return 0;
}

long flame_intern_id(struct flame_intern *t, const char *s, size_t len, int *added)
{
    *added = 0;
    if ((t->n + 1) * 2 > t->cap && grow(t) < 0)
        return -1;
    size_t j = hash(s, len) & (t->cap - 1);
    while (t->keys[j]) {
        if (strncmp(t->keys[j], s, len) == 0 && t->keys[j][len] == '\0')
            return (long)t->ids[j];
        j = (j + 1) & (t->cap - 1);
    }
    if (!(t->keys[j] = strndup(s, len)))
        return -1;
    t->ids[j] = t->n;
    *added = 1;
    return (long)t->n++;
}

void flame_intern_free(struct flame_intern *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->keys[i]);
    free(t->keys);
    free(t->ids);
    memset(t, 0, sizeof *t);
}
