/* SPDX-License-Identifier: MIT */
/* probing-cli.so's one exported symbol (ext.h): the table of its functions. */
#include "ext.h"

__attribute__((visibility("default"))) extern const struct cli_ext probing_cli_ext_v2;
const struct cli_ext probing_cli_ext_v2 = {
    .srcline = ext_srcline,
    .eval_part = ext_eval_part,
    .history_load = ext_history_load,
    .readline = ext_readline,
    .history_add = ext_history_add,
    .history_save = ext_history_save,
    .reduce = ext_reduce,
    .pprof = ext_pprof,
};
