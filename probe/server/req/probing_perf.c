/* SPDX-License-Identifier: MIT */
/* probing/perf (custom; docs/protocol.md): the native and Python CPU sampler (prof/prof.h).
 * Arguments: action (string: "start", "stop" or "status"; required); with start: rate
 * (integer samples per second per thread, 1 to 1000, default 100), mode ("cpu", default,
 * or "wall") and clock (cpu mode: "auto", default, "events" or "timers"). Body: the sampler's
 * status {running, mode, rate, samples, threads, missed, lost, stacks, armed, probeCpuSeconds,
 * handlerCpuSeconds, drainCpuSeconds, started, stopped, forked}, with clock ("events" or
 * "timers"), clockUserOnly and clockWhy once cpu mode has started; stop adds wasRunning. The
 * samples
 * themselves are the tables perf.samples / perf.stacks / perf.frames (probing/query). */
#include <string.h>

#include "server/server.h"
#include "prof/prof.h"

static void status_json(cJSON *body, const struct prof_status *st)
{
    cJSON_AddBoolToObject(body, "running", st->running);
    cJSON_AddStringToObject(body, "mode", st->mode == PROF_WALL ? "wall" : "cpu");
    cJSON_AddNumberToObject(body, "rate", st->rate);
    cJSON_AddNumberToObject(body, "samples", (double)st->samples);
    cJSON_AddNumberToObject(body, "threads", st->threads);
    cJSON_AddNumberToObject(body, "missed", (double)st->missed);
    cJSON_AddNumberToObject(body, "lost", (double)st->lost);
    cJSON_AddNumberToObject(body, "stacks", (double)st->stacks);
    cJSON_AddNumberToObject(body, "armed", st->armed);
    cJSON_AddNumberToObject(body, "probeCpuSeconds", st->probe_cpu_s);
    cJSON_AddNumberToObject(body, "handlerCpuSeconds", st->handler_cpu_s);
    cJSON_AddNumberToObject(body, "drainCpuSeconds", st->drain_cpu_s);
    cJSON_AddNumberToObject(body, "started", st->started);
    cJSON_AddNumberToObject(body, "stopped", st->stopped);
    cJSON_AddBoolToObject(body, "forked", st->forked);
    if (st->started > 0 && st->mode == PROF_CPU && st->clock) {
        cJSON_AddStringToObject(body, "clock",
                                st->clock == PROF_CLOCK_EVENTS ? "events" : "timers");
        cJSON_AddBoolToObject(body, "clockUserOnly", st->clock_user_only);
        if (st->clock_why[0])
            cJSON_AddStringToObject(body, "clockWhy", st->clock_why);
    }
}

int srv_req_probing_perf(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    const char *action = NULL, *mode = NULL, *clock = NULL;
    long long rate = PROF_RATE_DEFAULT;
    struct prof_status st;
    int rc;
    if ((rc = dap_arg_str(args, "action", &action, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "mode", &mode, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "clock", &clock, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "rate", &rate, &c->err)) < 0)
        return rc;
    if (!action)
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.action: expected \"start\", \"stop\" "
                          "or \"status\"");
    if (strcmp(action, "start") == 0) {
        struct prof_opts o = {PROF_RATE_DEFAULT, PROF_CPU, PROF_CLOCK_AUTO};
        if (rate < PROF_RATE_MIN || rate > PROF_RATE_MAX)
            return pb_err_set(&c->err, PB_EBADARG,
                              "arguments.rate: %lld is out of range (%d "
                              "to %d samples per second)",
                              rate, PROF_RATE_MIN, PROF_RATE_MAX);
        o.rate = (int)rate;
        if (mode && strcmp(mode, "wall") == 0)
            o.mode = PROF_WALL;
        else if (mode && strcmp(mode, "cpu") != 0)
            return pb_err_set(&c->err, PB_EBADARG,
                              "arguments.mode: expected \"cpu\" or "
                              "\"wall\"");
        if (clock && strcmp(clock, "events") == 0)
            o.clock = PROF_CLOCK_EVENTS;
        else if (clock && strcmp(clock, "timers") == 0)
            o.clock = PROF_CLOCK_TIMERS;
        else if (clock && strcmp(clock, "auto") != 0)
            return pb_err_set(&c->err, PB_EBADARG,
                              "arguments.clock: expected \"auto\", \"events\" or \"timers\"");
        if ((rc = prof_start(&o, &c->err)) < 0)
            return rc;
        prof_status_get(&st);
    } else if (strcmp(action, "stop") == 0 || strcmp(action, "status") == 0) {
        if (mode || clock || (args && cJSON_GetObjectItemCaseSensitive(args, "rate")))
            return pb_err_set(&c->err, PB_EBADARG,
                              "arguments.rate/mode/clock: only with action "
                              "\"start\"");
        if (action[1] == 't' && action[2] == 'o') /* stop */
            cJSON_AddBoolToObject(body, "wasRunning", prof_stop(&st));
        else
            prof_status_get(&st);
    } else {
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.action: '%.40s' is not one of "
                          "\"start\", \"stop\", \"status\"",
                          action);
    }
    status_json(body, &st);
    return 0;
}
