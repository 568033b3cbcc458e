/* SPDX-License-Identifier: MIT */
/* DAP: ModulesRequest. The objects loaded in the target (prof_modules: dl_iterate_phdr), in
 * the loader's order, with startModule/moduleCount paging and totalModules: id (the moduleId
 * of native frames in stackTrace), name, path, addressRange (the union of its loaded segments)
 * and symbolStatus (whether its file has a symbol table or DWARF: "Symbols loaded", else "No
 * symbols"; a separate debug file is not looked for). No GIL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "prof/prof.h"

int srv_req_modules(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    long long start = 0, count = 0;
    int rc;
    if ((rc = dap_arg_int(args, "startModule", &start, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "moduleCount", &count, &c->err)) < 0)
        return rc;
    if (start < 0 || count < 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.startModule/moduleCount: must be >= 0");
    struct prof_module *mods;
    int n = prof_modules(&mods, 1);
    if (n < 0)
        return pb_err_set(&c->err, -ENOMEM, "out of memory: the modules were not listed");
    long long end = count > 0 && start + count < n ? start + count : n;
    cJSON *arr = cJSON_AddArrayToObject(body, "modules");
    for (long long i = start; i < end; i++) {
        const struct prof_module *m = &mods[i];
        const char *base = strrchr(m->path, '/');
        char range[64];
        snprintf(range, sizeof range, "0x%lx-0x%lx", (unsigned long)m->lo, (unsigned long)m->hi);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", m->id);
        cJSON_AddStringToObject(o, "name", base ? base + 1 : m->path);
        if (m->path[0] == '/')
            cJSON_AddStringToObject(o, "path", m->path);
        cJSON_AddStringToObject(o, "addressRange", range);
        cJSON_AddStringToObject(o, "symbolStatus",
                                m->symbols > 0 ? "Symbols loaded" : "No symbols");
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddNumberToObject(body, "totalModules", n);
    free(mods);
    return 0;
}
