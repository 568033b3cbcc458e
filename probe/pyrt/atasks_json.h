/* SPDX-License-Identifier: MIT */
/* The asyncio tasks of a snapshot as JSON (atasks_json.c). */
#ifndef PROBE_PYRT_ATASKS_JSON_H
#define PROBE_PYRT_ATASKS_JSON_H

#include <cJSON.h>

#include "pyrt.h"

/* The asyncio tasks of a snapshot taken with PROBE_SNAP_TASKS, or read from memory
 * (pyrt_asyncio_tasks_mem) (docs/protocol.md, probing/dump "asyncio"). */
cJSON *pyrt_atasks_json(const struct probe_atasks *a);

#endif
