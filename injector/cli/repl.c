/* SPDX-License-Identifier: MIT */
/* `probing -p PID repl`: an interactive Python prompt running in the target's __main__, on
 * probing/eval. Line editing and history come from libedit (~/.probing_history), through the
 * CLI's private library (ext/lineedit.c), loaded only for a terminal; whether the input is
 * complete (">>> " or "... ") is decided in the target by codeop, as Python's REPL does. Ctrl-C
 * interrupts a running evaluation (probing/interrupt) or drops the line being typed; Ctrl-D
 * exits. Without a terminal, lines are read from stdin with no prompts. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig)
{
    (void)sig;
    got_sigint = 1;
}

/* The next line (malloc'd, no newline), or NULL at end of input; *ctrl_c tells a Ctrl-C. */
static char *read_line(const struct cli_ext *tty, const char *prompt, int *ctrl_c)
{
    *ctrl_c = 0;
    if (tty) {
        struct sigaction sa = {0}, old;
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        got_sigint = 0;
        sigaction(SIGINT, &sa, &old);
        char *line = tty->readline(prompt);
        sigaction(SIGINT, &old, NULL);
        if (got_sigint) {
            free(line);
            *ctrl_c = 1;
            return NULL;
        }
        return line;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n')
        line[n - 1] = 0;
    return line;
}

static char *append_line(char *buf, const char *line)
{
    size_t a = buf ? strlen(buf) : 0, b = strlen(line);
    char *p = realloc(buf, a + b + 2);
    if (!p)
        return buf;
    if (a)
        p[a++] = '\n';
    memcpy(p + a, line, b + 1);
    return p;
}

static int blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == 0;
}

static void help(void)
{
    printf("usage: probing -p PID repl\n"
           "\n"
           "An interactive Python prompt inside the target: code runs in its __main__ module,\n"
           "output printed by the code is shown here (not on the target's stdout), and the\n"
           "value of an expression is printed as in Python's own REPL. Multi-line input\n"
           "continues with '...' until the statement is complete. Ctrl-C interrupts a running\n"
           "evaluation (never the target), Ctrl-D exits. History: ~/.probing_history.\n"
           "Without a terminal, statements are read from stdin.\n");
}

int cli_cmd_repl(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return CLI_OK;
        }
        return cli_bad_option("repl", argv);
    }
    if (optind < argc)
        return cli_unexpected_arg("repl", argv);
    struct pb_err err = {0};
    struct dap_client dc;
    /* line editing on a terminal: the private library, before the target is touched */
    const struct cli_ext *tty = NULL;
    if (isatty(STDIN_FILENO) && !(tty = cli_ext_load(&err))) {
        cli_error("repl: %s", err.msg);
        return CLI_FAIL;
    }
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    char hist[4096] = "";
    if (tty) {
        const char *home = getenv("HOME");
        if (home)
            snprintf(hist, sizeof hist, "%s/.probing_history", home);
        tty->history_load(hist);
        cJSON *info = NULL;
        if (dap_client_request(&dc, "probing/info", NULL, &info, &err) == 0) {
            const cJSON *py = cJSON_GetObjectItemCaseSensitive(info, "python");
            const cJSON *pid = cJSON_GetObjectItemCaseSensitive(info, "pid");
            printf("probing repl: CPython %s, process %d, in __main__. Ctrl-C interrupts, "
                   "Ctrl-D exits.\n",
                   cJSON_IsString(py) ? py->valuestring : "?",
                   cJSON_IsNumber(pid) ? pid->valueint : 0);
        }
        cJSON_Delete(info);
    }
    char *buf = NULL;
    int ret = CLI_OK;
    for (;;) {
        int ctrl_c;
        char *line = read_line(tty, buf ? "... " : ">>> ", &ctrl_c);
        if (ctrl_c) {
            printf("\nKeyboardInterrupt\n");
            free(buf);
            buf = NULL;
            continue;
        }
        if (!line) {
            if (tty)
                printf("\n");
            else if (buf && !blank(buf) && cli_eval_run(&dc, buf, &err) < 0)
                ret = CLI_FAIL;
            break;
        }
        buf = append_line(buf, line);
        free(line);
        if (blank(buf)) {
            free(buf);
            buf = NULL;
            continue;
        }
        int complete = 1;
        int rc = cli_eval_complete(&dc, buf, &complete, &err);
        if (rc == 0 && !complete)
            continue;
        if (tty)
            tty->history_add(buf);
        if (rc == 0)
            rc = cli_eval_run(&dc, buf, &err);
        free(buf);
        buf = NULL;
        if (rc < 0) {
            cli_error("%s", err.msg);
            /* A GIL timeout leaves the session usable; a lost connection does not. */
            if (err.code != PB_EREFUSED) {
                ret = CLI_FAIL;
                break;
            }
        }
    }
    free(buf);
    if (tty)
        tty->history_save(hist);
    cli_disconnect(&dc);
    return ret;
}
