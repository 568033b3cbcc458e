/* SPDX-License-Identifier: MIT */
/* C++ names as C++ (cli.h): the probe demangles with the target's own libstdc++ when it has
 * one loaded (probe/prof/symbols.c); what reaches the CLI still mangled (names the CLI reads
 * from DWARF and symbol tables itself, a target whose C++ carries a private libstdc++) is
 * demangled here with libstdc++'s __cxa_demangle, dlopened only when a mangled name is met, so
 * commands that meet none never load it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static char *(*demangle)(const char *, char *, size_t *, int *);
static int looked;

const char *cli_demangle(const char *name, char *buf, size_t n)
{
    int status = -1;
    char *d;
    if (!name || name[0] != '_' || name[1] != 'Z' || n == 0)
        return name;
    if (!looked) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        looked = 1;
        if (h)
            *(void **)&demangle = dlsym(h, "__cxa_demangle");
    }
    if (!demangle || !(d = demangle(name, NULL, NULL, &status)))
        return name;
    if (status != 0) {
        free(d);
        return name;
    }
    snprintf(buf, n, "%s", d);
    free(d);
    return buf;
}

void cli_demangle_frames(const cJSON *frames)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, frames)
    {
        char buf[1024];
        const char *name = cli_json_str(f, "name"), *kind = cli_json_str(f, "kind");
        const char *d =
            kind && strcmp(kind, "native") == 0 ? cli_demangle(name, buf, sizeof buf) : name;
        if (d && d != name)
            cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)f, "name", cJSON_CreateString(d));
    }
}

char *cli_demangle_folded(const char *folded)
{
    size_t cap = 0, len = 0;
    char *out = NULL;
    int changed = 0;
    if (!folded || !strstr(folded, "_Z"))
        return NULL;
    for (const char *p = folded;;) {
        const char *e = strchr(p, ';');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[1024], buf[2048];
        const char *d = NULL;
        if (n >= 2 && n < sizeof name && p[0] == '_' && p[1] == 'Z') {
            memcpy(name, p, n);
            name[n] = '\0';
            d = cli_demangle(name, buf, sizeof buf);
            if (d == name)
                d = NULL;
        }
        size_t dn = d ? strlen(d) : n;
        if (len + dn + 2 > cap) {
            size_t nc = (len + dn + 2) * 2;
            char *o = realloc(out, nc);
            if (!o) {
                free(out);
                return NULL;
            }
            out = o;
            cap = nc;
        }
        memcpy(out + len, d ? d : p, dn);
        len += dn;
        changed |= d != NULL;
        if (!e)
            break;
        out[len++] = ';';
        p = e + 1;
    }
    out[len] = '\0';
    if (!changed) {
        free(out);
        return NULL;
    }
    return out;
}
