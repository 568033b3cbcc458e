/* SPDX-License-Identifier: MIT */
/* `probing perf`: perf.c decides which profiler a command line is for; cc.c is perf --cc
 * (native and Python sampling, docs/perf.md), torch.c perf --torch (PyTorch modules,
 * docs/torch.md); top.c is `probing top`, a live view of perf --cc's samples. What other
 * commands use of them is declared here too: inject -P starts perf --cc, serve reads
 * perf --torch's Chrome trace. */
#ifndef CLI_PERF_H
#define CLI_PERF_H

#include "injector/cli/cli.h"

/* argv is the whole perf command line, the --cc/--torch flag included. A valid --stop returns
 * CLI_PERF_STOP, and perf.c stops that profiler. */
cli_cmd_fn cli_perf_cc, cli_perf_torch, cli_perf_comm;
enum { CLI_PERF_STOP = 100 };
/* For a bare `perf --stop`, on a connected client: stop that profiler if it runs, printing one
 * line saying what was stopped and setting *stopped = 1; nothing printed when it was not
 * running. Return 0, or a negative code with err filled. */
int cli_perf_cc_stop(struct dap_client *dc, int *stopped, struct pb_err *err);
int cli_perf_torch_stop(struct dap_client *dc, int *stopped, struct pb_err *err);
int cli_perf_comm_stop(struct dap_client *dc, int *stopped, struct pb_err *err);
/* perf --comm (comm.c): one probing/comm request ("start", "stop", "status"): the body, a root
 * the caller deletes, or NULL with err. */
cJSON *cli_perf_comm_request(struct dap_client *dc, const char *action, int ddp,
                             struct pb_err *err);
/* The lines saying what a probing/comm start answered (recording, calls, Flight Recorder). */
void cli_perf_comm_print(const cJSON *body, int pid);
/* inject -P: start perf --cc with the defaults on a connected client, printing one line.
 * Returns 0, or a negative code with err filled. */
int cli_perf_cc_start(struct dap_client *dc, struct pb_err *err);
/* One probing/perf request ("start" with rate/mode when > 0/non-NULL, "stop", "status") on a
 * connected client: the body (the sampler's status), a root the caller deletes, or NULL with
 * err filled. */
cJSON *cli_perf_cc_request(struct dap_client *dc, const char *action, int rate, const char *mode,
                           struct pb_err *err);
/* perf --torch's Chrome trace of steps, rows (step, start_time, duration, loss) of
 * python.torch_steps, traced, in order, at least one: a root the caller deletes, with
 * *nevents module calls; or NULL with err filled. */
cJSON *cli_torch_trace(struct dap_client *dc, int pid, const cJSON *steps, int *nevents,
                       struct pb_err *err);

#endif
