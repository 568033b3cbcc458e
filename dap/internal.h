/* SPDX-License-Identifier: MIT */
/* dap/ internals shared by the dispatcher and the request handlers. */
#ifndef DAP_INTERNAL_H
#define DAP_INTERNAL_H

#include "dap.h"

enum {
    DAP_F_PREAUTH = 1,        /* answered before a TCP client authenticated */
    DAP_F_NEEDS_ATTACHED = 2, /* only after `attach` */
    DAP_F_UNIX_ONLY = 4,      /* refused on TCP connections (changes what the probe serves) */
};

struct dap_command {
    const char *name;
    dap_handler handler;
    int flags;
    /* Runs after the response was sent (events that must follow it). May be NULL. */
    void (*post)(struct dap_session *s);
};

/* The sorted table (dispatch.c). */
const struct dap_command *dap_command_find(const char *name);
extern const struct dap_command dap_commands[];
extern const size_t dap_ncommands;

/* Handlers: one file each (req_<command>.c). */
int dap_req_attach(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_configurationDone(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_disconnect(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_initialize(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_dump(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_info(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_listen(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_stackTrace(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_threads(struct dap_ctx *c, const cJSON *args, cJSON *body);

void dap_post_initialize(struct dap_session *s);

/* Authentication state (attach sets it). */
void dap_session_set_authed(struct dap_session *s);

#endif
