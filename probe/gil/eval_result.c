/* SPDX-License-Identifier: MIT */
/* Releasing an evaluation's result (struct probe_eval_result, probe.h). Plain C with no CPython
 * dependency, so the dap/ unit tests and the fuzz harness link it next to a fake evaluator. */
#include <stdlib.h>
#include <string.h>
#include "gil.h"

void gil_eval_result_free(struct probe_eval_result *r)
{
    if (!r)
        return;
    free(r->value);
    free(r->type);
    free(r->exc_type);
    free(r->traceback);
    for (int i = 0; i < r->nchunks; i++)
        free(r->chunks[i].text);
    free(r->chunks);
    memset(r, 0, sizeof *r);
}
