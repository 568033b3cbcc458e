/* SPDX-License-Identifier: MIT */
/* The collectives recorder's ring (core/comm.c): one bounded ring of torch.distributed calls
 * (perf --comm), written by the job's threads through torch/comm.c and read by the live table
 * torch.collectives (sql/) without the GIL, so that a rank hung with the GIL held still says
 * which collective it last entered. One mutex guards it, held only to copy a record in or out;
 * any thread, no CPython. Design: docs/torch.md "perf --comm". */
#ifndef PROBE_CORE_COMM_H
#define PROBE_CORE_COMM_H

#include "core/rows.h"
#include "pb.h"

/* What a call records when it starts; strings are copied (cut to the ring's field sizes). */
struct probe_comm_call {
    const char *op;         /* "all_reduce", "send", ... */
    const char *pg;         /* process group name */
    const char *ranks;      /* the group's global ranks, "0,1,2,3" */
    const char *seq_source; /* "torch" or "recorder" */
    const char *sizes;      /* "4x1024", tensors joined by ';' */
    const char *dtype;
    const char *file, *func; /* the calling Python frame */
    long long seq, bytes;
    int rank, group_size, peer, line, async; /* peer: -1 when none */
};

/* Start recording into a ring of max_records records (1 to 10,000,000), emptied. Keeps the
 * ring and its records when it is already that size (a second start). Returns 0 or -ENOMEM. */
int core_comm_open(int max_records, struct pb_err *err);
/* Records a call started now; returns its id (>= 1), 0 when no ring is open. */
unsigned long long core_comm_begin(const struct probe_comm_call *c);
/* The call with this id ended now (ok 1) or raised (ok 0); nothing if the ring has since
 * overwritten it. */
void core_comm_end(unsigned long long id, int ok);
/* Counters: records made since the open, and the ring's size (0 when never opened). */
void core_comm_counts(unsigned long long *made, int *size);
/* The rows of torch.collectives (sql/vtab.c's columns, in that order), oldest first. */
int core_comm_fill(struct probe_rows *r, struct pb_err *err);

#endif
