/* SPDX-License-Identifier: MIT */
/* `probing -p PID backtrace [TID] [--json]`: one thread's stack (the main thread, or the thread
 * with native id TID as `debug --dump` shows it) with each frame's local variables, from
 * probing/dump with locals. Without the GIL the frames still come, and the reason locals do
 * not. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf("usage: probing -p PID backtrace [TID] [--json]\n"
           "\n"
           "The main thread's Python stack (or thread TID's: the native id shown by\n"
           "'debug --dump'), innermost frame first, with each frame's local variables\n"
           "(bounded repr that never runs the target's code). If the GIL cannot be had in\n"
           "time, says so and shows the frames without locals.\n"
           "\n"
           "  --json     print the thread as JSON (a thread of the probing/dump body)\n");
}

static void print_thread(const cJSON *t)
{
    printf("Thread %.0f \"%s\"%s%s\n", cli_json_num(t, "id", 0),
           cli_json_str(t, "name") ? cli_json_text(t, "name") : "",
           cli_json_true(t, "main") ? " (main)" : "",
           cli_json_true(t, "holdsGil") ? " holds the GIL" : "");
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(t, "frames"), *f;
    if (cJSON_GetArraySize(frames) == 0)
        printf("    (no Python frames)\n");
    int i = 0;
    cJSON_ArrayForEach(f, frames)
    {
        printf("  #%d %s (%s:%.0f)\n", i++, cli_json_text(f, "name"), cli_json_text(f, "file"),
               cli_json_num(f, "line", 0));
        cli_print_locals(f, "        ");
    }
}

int cli_cmd_backtrace(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("backtrace", argv);
        }
    }
    long tid = 0;
    if (optind < argc) {
        char *end;
        tid = strtol(argv[optind], &end, 10);
        if (*end || tid <= 0 || optind + 1 < argc) {
            cli_error("backtrace: expected a thread id (a native id from 'debug --dump'), "
                      "got '%s'",
                      argv[optind]);
            return CLI_USAGE;
        }
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddBoolToObject(args, "locals", 1);
    cJSON *body = cli_call_read(o, "backtrace", "probing/dump", args);
    if (!body)
        return CLI_FAIL;
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(body, "threads"), *t, *found = NULL;
    cJSON_ArrayForEach(t, threads)
    {
        if (tid ? cli_json_num(t, "id", 0) == (double)tid : cli_json_true(t, "main"))
            found = t;
    }
    if (!found) {
        char list[512] = "";
        cJSON_ArrayForEach(t, threads)
        {
            size_t n = strlen(list);
            const char *name = cli_json_str(t, "name");
            snprintf(list + n, sizeof list - n, "%s%.0f \"%s\"", n ? ", " : "",
                     cli_json_num(t, "id", 0), name ? name : "");
        }
        if (tid)
            cli_error("backtrace: no Python thread %ld in process %.0f; its threads: %s", tid,
                      cli_json_num(body, "pid", 0), list);
        else
            cli_error("backtrace: process %.0f has no main Python thread; its threads: %s",
                      cli_json_num(body, "pid", 0), list);
        cJSON_Delete(body);
        return CLI_FAIL;
    }
    if (json) {
        char *s = cJSON_Print(found);
        puts(s ? s : "{}");
        cJSON_free(s);
    } else {
        if (cli_json_str(body, "localsError"))
            printf("note: %s\n", cli_json_text(body, "localsError"));
        print_thread(found);
    }
    cJSON_Delete(body);
    return CLI_OK;
}
