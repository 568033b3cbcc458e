/* SPDX-License-Identifier: MIT */
/* `probing dump --core FILE [--exe PATH] [--sysroot DIR] [--json]`: every thread's Python stack from a core file
 * (gdb's gcore or the kernel's), read with the probe's own frame walker for the core's CPython
 * (core.c); as text or as the probing/dump body with "core". No process is involved. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf(
        "usage: probing dump --core FILE [--exe PATH] [--sysroot DIR] [--native[=all]] [--locals]\n"
        "                    [--json]\n"
        "\n"
        "Print every Python thread's stack from a core file (gdb's gcore, or the kernel's),\n"
        "innermost frame first, as debug --dump does for a live process: the core's memory\n"
        "is read with the probe's own frame walker for the core's CPython (3.8-3.15).\n"
        "\n"
        "  -c, --core FILE  the core file\n"
        "  -e, --exe PATH   the interpreter (libpython3.X or the python executable), when the\n"
        "                   core's file mappings do not name one\n"
        "      --sysroot DIR  look for the files the core maps (the interpreter, its\n"
        "                   libraries) under DIR first: the root of the container the\n"
        "                   process ran in (e.g. /proc/PID/root of a live one, or the\n"
        "                   image's unpacked root), as gdb's 'set sysroot'\n"
        "      --native     each thread's native frames too, from its registers in the\n"
        "                   core, merged with its Python frames as debug --dump --native\n"
        "                   does (--native=all keeps CPython's internals); x86-64\n"
        "      --locals     each frame's local variables, read from the core's memory:\n"
        "                   int, float, bool, None, str, bytes and tuples, lists and dicts\n"
        "                   of those by value, anything else as <TYPE object at 0x...>\n"
        "      --json       print one JSON document instead of text\n");
}

int cli_cmd_dump(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"core", required_argument, 0, 'c'},    {"exe", required_argument, 0, 'e'},
        {"sysroot", required_argument, 0, 'r'}, {"json", no_argument, 0, 'j'},
        {"native", optional_argument, 0, 'N'},  {"locals", no_argument, 0, 'L'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *corefile = NULL, *exe = NULL, *sysroot = NULL;
    int json = 0, native = 0, locals = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "hc:e:", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': corefile = optarg; break;
        case 'e': exe = optarg; break;
        case 'r': sysroot = optarg; break;
        case 'j': json = 1; break;
        case 'L': locals = 1; break;
        case 'N':
            if (optarg && strcmp(optarg, "all") != 0 && strcmp(optarg, "merged") != 0) {
                cli_error("dump: --native=%s: use --native or --native=all", optarg);
                return CLI_USAGE;
            }
            native = optarg && strcmp(optarg, "all") == 0 ? 2 : 1;
            break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("dump", argv);
        }
    }
    if (optind < argc)
        return cli_unexpected_arg("dump", argv);
    if (!corefile || o->have_target) {
        cli_error("dump: %s", corefile ? "--core reads a file: no -p/-t target"
                                       : "give a core file: probing dump --core FILE");
        return CLI_USAGE;
    }
    struct pb_err err = {0};
    cJSON *body = cli_core_dump(corefile, exe, sysroot, 256, native, locals, &err);
    if (!body)
        cli_error("dump --core: %s", err.msg);
    return body ? cli_print_body(body, json, cli_dump_print) : CLI_FAIL;
}
