/* SPDX-License-Identifier: MIT */
/* `probing -p PID eval CODE`: run statements or an expression in the target's __main__
 * (probing/eval) and print what the code printed, the result's repr, or the traceback on
 * stderr (exit 1). Ctrl-C interrupts the evaluation in the target (probing/interrupt), never
 * the target itself. The repl (repl.c) uses the same functions. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* While waiting for the evaluation: turn a Ctrl-C into probing/interrupt. */
static void on_wait(void *arg)
{
    struct dap_client *dc = arg;
    if (!interrupted)
        return;
    interrupted = 0;
    struct pb_err err = {0};
    dap_client_send(dc, "probing/interrupt", NULL, &err);
}

/* One probing/eval request without a deadline, Ctrl-C forwarded as an interrupt. */
static int eval_request(struct dap_client *dc, const char *code, const char *mode, cJSON **body,
                        struct pb_err *err)
{
    struct sigaction sa = {0}, old;
    sa.sa_handler = on_sigint; /* no SA_RESTART: the wait wakes up at once */
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old);
    int saved_timeout = dc->timeout_ms;
    dc->timeout_ms = 0;
    dc->on_wait = on_wait;
    dc->wait_arg = dc;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "code", code);
    cJSON_AddStringToObject(args, "mode", mode);
    int rc = dap_client_request(dc, "probing/eval", args, body, err);
    dc->on_wait = NULL;
    dc->timeout_ms = saved_timeout;
    sigaction(SIGINT, &old, NULL);
    return rc;
}

int cli_eval_complete(struct dap_client *dc, const char *code, int *complete, struct pb_err *err)
{
    cJSON *body = NULL;
    int rc = eval_request(dc, code, "complete", &body, err);
    if (rc == 0)
        *complete = cli_json_true(body, "complete");
    cJSON_Delete(body);
    return rc;
}

int cli_eval_run(struct dap_client *dc, const char *code, struct pb_err *err)
{
    cJSON *body = NULL;
    int rc = eval_request(dc, code, "statements", &body, err);
    if (rc < 0)
        return rc;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(body, "output"), *o;
    cJSON_ArrayForEach(o, out)
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(o, "category");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "output");
        if (!cJSON_IsString(text))
            continue;
        FILE *f = cJSON_IsString(cat) && strcmp(cat->valuestring, "stderr") == 0 ? stderr : stdout;
        fflush(f == stdout ? stderr : stdout);
        fputs(text->valuestring, f);
        fflush(f);
    }
    if (cli_json_true(body, "outputTruncated"))
        fputs("probing: output cut at 1 MiB\n", stderr);
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(body, "result");
    const cJSON *exc = cJSON_GetObjectItemCaseSensitive(body, "exception");
    int ret = CLI_OK;
    if (cJSON_IsObject(exc)) {
        const cJSON *tb = cJSON_GetObjectItemCaseSensitive(exc, "traceback");
        fputs(cJSON_IsString(tb) ? tb->valuestring : "exception\n", stderr);
        ret = CLI_FAIL;
    } else if (cJSON_IsString(result)) {
        printf("%s\n", result->valuestring);
    }
    fflush(stdout);
    fflush(stderr);
    cJSON_Delete(body);
    return ret;
}

/* `eval --interrupt`: probing/interrupt from a client of its own. */
static int interrupt_running(const struct cli_opts *o)
{
    cJSON *body = cli_call(o, "eval --interrupt", "probing/interrupt", cJSON_CreateObject());
    if (!body)
        return CLI_FAIL;
    const cJSON *nw = cJSON_GetObjectItemCaseSensitive(body, "nativeWait");
    if (cli_json_true(body, "interrupted") && cJSON_IsNumber(nw))
        printf("not interrupted yet: the evaluation waits in native code (system call %d); "
               "KeyboardInterrupt is pending and takes effect only if that call returns to "
               "Python code\n",
               (int)nw->valuedouble);
    else if (cli_json_true(body, "interrupted"))
        printf("interrupted the running evaluation (KeyboardInterrupt when it next runs Python "
               "code)\n");
    else
        printf("no evaluation was running\n");
    cJSON_Delete(body);
    return CLI_OK;
}

static void help(void)
{
    printf("usage: probing -p PID eval CODE\n"
           "       probing -p PID eval --interrupt\n"
           "\n"
           "Run CODE (statements or an expression) in the target's __main__ module and print\n"
           "what it printed (captured in the target: the target's own output is untouched),\n"
           "then the repr of the value of a last expression (None is not shown). An exception\n"
           "prints its traceback on stderr and exits 1. CODE '-' reads the code from stdin.\n"
           "Ctrl-C interrupts the evaluation (KeyboardInterrupt), never the target.\n"
           "If the GIL cannot be had within eval.timeout_ms, nothing runs and the thread\n"
           "holding it is named, with where it is.\n"
           "--interrupt raises KeyboardInterrupt in the evaluations running now (another\n"
           "client's too), when they next run Python code: for code started elsewhere.\n");
}

int cli_cmd_eval(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, 0, 'h'}, {"interrupt", no_argument, 0, 'i'}, {0, 0, 0, 0}};
    int c, interrupt = 0;
    /* "+": code such as "-1" is an argument, not an option. */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return CLI_OK;
        }
        if (c == 'i') {
            interrupt = 1;
            continue;
        }
        return cli_bad_option("eval", argv);
    }
    if (interrupt) {
        if (optind != argc) {
            cli_error("eval: --interrupt takes no code: see 'probing eval --help'");
            return CLI_USAGE;
        }
        return interrupt_running(o);
    }
    if (optind + 1 != argc) {
        cli_error("eval: expected one argument, the code (quote it): see 'probing eval --help'");
        return CLI_USAGE;
    }
    char *code = NULL;
    if (strcmp(argv[optind], "-") == 0) {
        size_t cap = 0, len = 0, n;
        char buf[4096];
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
            if (len + n + 1 > cap) {
                cap = (len + n + 1) * 2;
                char *p = realloc(code, cap);
                if (!p) {
                    free(code);
                    cli_error("eval: out of memory");
                    return CLI_FAIL;
                }
                code = p;
            }
            memcpy(code + len, buf, n);
            len += n;
        }
        if (!code)
            code = calloc(1, 1);
        else
            code[len] = 0;
    } else {
        code = strdup(argv[optind]);
    }
    struct pb_err err = {0};
    struct dap_client dc;
    int rc = cli_connect(o, &dc, &err);
    if (rc < 0) {
        free(code);
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    rc = cli_eval_run(&dc, code ? code : "", &err);
    cli_disconnect(&dc);
    free(code);
    if (rc < 0) {
        cli_error("eval: %s", err.msg);
        return CLI_FAIL;
    }
    return rc;
}
