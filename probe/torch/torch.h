/* SPDX-License-Identifier: MIT */
/* perf --torch in the probe: per-module PyTorch timing and memory (torch.c, with its Python half
 * in torch_py.c). Global module hooks and an optimizer post-step callback record the traced
 * steps into the history tables python.torch_trace and python.torch_steps; see docs/torch.md.
 * cJSON items added to out belong to it. */
#ifndef PROBE_TORCH_H
#define PROBE_TORCH_H

#include "pb.h"

struct cJSON;

enum {
    PROBE_TORCH_START = 0,
    PROBE_TORCH_STOP = 1,
    PROBE_TORCH_STATUS = 2,
    PROBE_COMM_FLIGHT_RECORDER = 3, /* probing/comm only: status and torch's flight recorder */
    PROBE_COMM_SEQUENCE = 4         /* probing/comm only: each process group's sequence number */
};

/* Start tracing with one step in every traced (start; already running: every is updated), stop
 * it (every hook and patch removed), or describe it; the answer's members are added to out
 * (docs/protocol.md, probing/torch). Fails with PB_ESTATE when start finds no torch imported.
 * Requires GIL (worker thread). Returns 0 or a negative code with err filled. */
int torch_run(int action, int every, struct cJSON *out, struct pb_err *err);

/* perf --comm (comm.c): start the collectives recorder (a ring of comm.max_records records,
 * wrappers in torch.distributed), stop it (every wrapper replaced by the original; the records
 * stay), or describe it (with PROBE_COMM_FLIGHT_RECORDER also the latest entries of torch's
 * flight recorder; with PROBE_COMM_SEQUENCE each process group's sequence number as torch keeps
 * it, recorder or not: torch, initialized, rank, groups [{pg, ranks, seq, backend, error}],
 * start), like torch_run (docs/protocol.md, probing/comm). Fails with
 * PB_ESTATE when start finds no torch.distributed imported. Requires GIL (worker thread). */
int torch_comm_run(int action, int ddp, struct cJSON *out, struct pb_err *err);

/* The Python sources of the tracer (torch_py.c) and of the recorder (comm_py.c). */
extern const char probe_torch_src[], probe_comm_src[];

#endif
