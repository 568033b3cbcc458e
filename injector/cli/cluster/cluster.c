/* SPDX-License-Identifier: MIT */
/* `probing cluster list|stacks|query|dump|hosts`: every rank of a distributed job at once.
 * Parses the options, then either asks this node's ranks (local.c) or runs
 * `probing cluster CMD --local --json` on every node through the --exec template (hosts.c)
 * and merges the node documents (stacks.c, list.c, query.c). No daemon, no protocol of our own: the launcher's environment says who is who, and
 * ssh/srun/kubectl reach the nodes. See docs/cluster.md. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"

static void help(const char *sub)
{
    if (!sub) {
        printf("usage: probing cluster list|stacks|collectives|query|dump|hosts [OPTIONS]\n"
               "\n"
               "Every process of a distributed job (torchrun, torch.distributed, Open MPI, PMI,\n"
               "SLURM), found from what the launcher set in its environment. Without host\n"
               "options, the ranks on this node; with them, every node, each reached by one\n"
               "command (--exec, default 'ssh -- {host}') that runs probing there.\n"
               "\n"
               "  list     the jobs and their ranks: rank, local rank, node, pid, Python, probe\n"
               "  stacks   every rank's Python stack, grouped: who is stuck where\n"
               "  collectives  the ranks' torch.distributed calls lined up (perf --comm): who\n"
               "           has not entered which collective, and who the others wait for\n"
               "  query    one SQL query on every rank, unioned (and --reduce'd)\n"
               "  dump     every rank's stacks and locals into a directory, with an index\n"
               "  hosts    print the nodes the host options name (a check of --nodelist...)\n"
               "\n"
               "'probing cluster COMMAND --help' for each command's options.\n");
        return;
    }
    if (strcmp(sub, "stacks") == 0)
        printf("usage: probing cluster stacks [--tree] [--thread auto|main|all] [--samples N\n"
               "                              [--interval S]] [--native | --no-inject] [--tasks]\n"
               "                              [--subprocesses] [--json]\n"
               "                              [HOST OPTIONS]\n"
               "\n"
               "Read every rank's Python stacks without the GIL (a rank hung in C with the GIL\n"
               "held answers like the others; the probe is injected where it is not loaded),\n"
               "all ranks at once, and group them: ranks with the same stack form a group.\n"
               "Groups print smallest first with compact rank ranges (0-16,18-63); a group of\n"
               "one names its node and pid; frames that differ from the largest group are\n"
               "marked '>' (and red on a terminal). Ranks that WORLD_SIZE expects but that were\n"
               "not found or did not answer are listed as missing.\n"
               "\n"
               "  --tree          the merged prefix tree instead, [ranks] on every frame,\n"
               "                  indented where the stacks diverge\n"
               "  --thread T      auto (default): the thread whose stack runs torch.distributed\n"
               "                  code (the main thread first if several), else the main\n"
               "                  thread; main; all (every Python thread of every rank)\n"
               "  --samples N     read N times (default 1); a group whose ranks kept the same\n"
               "                  stack in all N samples is marked STUCK, others moving\n"
               "  --interval S    seconds between samples (default 1)\n"
               "  --native        each rank's native (C/C++) and Python frames merged, as\n"
               "                  debug --dump --native reads them (C++ names demangled), so\n"
               "                  ranks waiting in C++ (c10d::Reducer, a collective) group by\n"
               "                  where they wait; with --thread all, also every thread that\n"
               "                  runs no Python\n"
               "  --no-inject     read the stacks from outside (process_vm_readv), loading\n"
               "                  nothing into any rank (debug --dump --no-inject)\n"
               "  --tasks         also every rank's asyncio tasks (debug --dump --tasks, read\n"
               "                  with the GIL at the last sample), grouped across ranks by\n"
               "                  state and where they wait: each group's task count, ranks,\n"
               "                  a few names, and the coroutine chain innermost first\n"
               "  --subprocesses  also every rank's child processes (DataLoader workers,\n"
               "                  multiprocessing children; at most 64 per rank), read from\n"
               "                  outside as --no-inject does (nothing loaded into them, never\n"
               "                  stopped), grouped like ranks: \"2 ranks: 0-1 in 4 child\n"
               "                  processes (DataLoader worker)\"; children that run no\n"
               "                  Python listed by command line\n"
               "  --json          {job, world_size, samples, groups: [{ranks, stuck, nodes,\n"
               "                  pid (groups of one), frames: [{func, file, line}] innermost\n"
               "                  first}], missing: [ranks], errors: [...]; with --tasks\n"
               "                  tasks: [{ranks, count, state, names, frames}], taskErrors;\n"
               "                  with --subprocesses each group has children: true and\n"
               "                  processes: [{rank, pid, ppid, role}], and\n"
               "                  otherChildren: [{rank, pid, ppid, cmdline, note}])\n");
    else if (strcmp(sub, "collectives") == 0)
        printf("usage: probing cluster collectives [--json] [HOST OPTIONS]\n"
               "\n"
               "Line up every rank's latest torch.distributed calls (torch.collectives, recorded\n"
               "by 'probing -p PID perf --comm' or 'perf --torch' on each rank; read without the\n"
               "GIL) by process group and sequence number, and print:\n"
               "  - the first collective that some members of a group wait in and others never\n"
               "    entered: \"rank 2 has not entered all_reduce #1234 of group 0; ranks 0,1,3\n"
               "    wait in it since 41 s\", with the missing rank's last collective;\n"
               "  - ranks that entered different collectives (op, sizes, dtype) at the same\n"
               "    number: \"mismatch in group 0: ranks 0-2 and rank 3 entered different\n"
               "    collectives as #1234\", then each side and where it was called;\n"
               "  - a collective that failed on ranks whose peer is gone: \"all_reduce #1234 of\n"
               "    group 0 failed on ranks 0,2; rank 3 has no process (exited or killed)\";\n"
               "  - a send/recv waited in whose peer posted no matching recv/send: \"rank 1 has\n"
               "    not posted the recv matching send #7 of rank 0 in group 0\";\n"
               "  - stragglers: per rank, the median (and max) of how long the others waited for\n"
               "    it to enter, over the collectives every member entered (start times: the\n"
               "    nodes' clocks must agree); a median of 1 ms or more over 3 collectives or\n"
               "    more is marked STRAGGLER;\n"
               "  - torch's flight recorder per rank (torch 2.x with TORCH_FR_BUFFER_SIZE=N in\n"
               "    the job: read under the GIL) and where its entries agree with the records;\n"
               "  - torch's own sequence numbers per process group, read twice 1 s apart under\n"
               "    each rank's GIL, recorder or not (a job already hung, collectives from\n"
               "    C++ the recorder does not see): \"rank 3 is behind in group 0 (ranks 0-3): it "
               "entered 6\n"
               "    collectives, ranks 0-2 entered 7\", with where each rank is.\n"
               "  --json          {job, world_size, recording, no_records, hangs: [{pg,\n"
               "                  group_ranks, seq, op, not_entered, waiting, waiting_s, last,\n"
               "                  (point-to-point) kind, expected, file, line, func}],\n"
               "                  mismatches: [{pg, group_ranks, seq, later, sides: [{ranks,\n"
               "                  op, sizes, dtype, state, file, line, func}]}], failures:\n"
               "                  [{pg, group_ranks, seq, op, failed, gone, not_read}],\n"
               "                  compared, ranks: [{rank, node, pid, median_wait_ms,\n"
               "                  max_wait_ms, collectives, straggler}], flight_recorder:\n"
               "                  [{rank, state, entries, agree, differ_count, differ,\n"
               "                  only_ours, only_torch}], sequence: {read, not_read,\n"
               "                  start, gone, groups: [{pg, group_ranks, backend, seqs, max,\n"
               "                  not_read, moving, places}], behind: [{pg, group_ranks,\n"
               "                  behind, seq, ahead, ahead_seq, where}]}, errors}\n");
    else if (strcmp(sub, "list") == 0)
        printf("usage: probing cluster list [--json] [HOST OPTIONS]\n"
               "\n"
               "The distributed jobs found, each with its ranks: rank, local rank, node, pid,\n"
               "CPython version and whether the probe is loaded (nothing is injected), and the\n"
               "ranks WORLD_SIZE expects that were not found.\n");
    else if (strcmp(sub, "query") == 0)
        printf("usage: probing cluster query \"SQL\" [--reduce \"SQL\"] [-f table|json|csv]\n"
               "                             [HOST OPTIONS]\n"
               "\n"
               "Run one read-only SQL statement (see 'probing query --help') on every rank and\n"
               "print the union of the results with 'rank' and 'host' columns first. With\n"
               "--reduce, a second statement runs over that union, table r, in the CLI's own\n"
               "SQLite, e.g. --reduce \"SELECT func, count(*) FROM r GROUP BY func\".\n"
               "A rank whose query failed is named on stderr.\n");
    else if (strcmp(sub, "dump") == 0)
        printf("usage: probing cluster dump -o DIR [--subprocesses] [HOST OPTIONS]\n"
               "\n"
               "Write every rank's stacks, with local variables where the GIL could be had, to\n"
               "DIR/rank-N.json (the probing/dump body) and DIR/rank-N.txt, with DIR/index.json\n"
               "and DIR/index.txt: job, world size, each rank's node, pid, files, errors, and\n"
               "the missing ranks. For attaching to a bug report. --subprocesses: each rank's\n"
               "child processes too (\"children\" in rank-N.json, after the rank in\n"
               "rank-N.txt), read from outside with their locals from memory.\n");
    else
        printf("usage: probing cluster hosts [HOST OPTIONS]\n"
               "\n"
               "Print the nodes the host options name, one a line (a check of --nodelist and\n"
               "--hostfile before asking them).\n");
    printf("\n"
           "Host options (default: this node only):\n"
           "  --hosts a,b,c       these nodes (SLURM's node[1-3,5] syntax works)\n"
           "  --hostfile F        one node a line ('#' comments; 'host slots=N' accepted)\n"
           "  --nodelist L        a SLURM node list, e.g. gpu[001-016]\n"
           "  --slurm             the nodes of SLURM job $SLURM_JOB_ID (asked of squeue),\n"
           "                      else $SLURM_JOB_NODELIST\n"
           "  --exec T            how to run a command on a node: T with {host} replaced\n"
           "                      (default 'ssh -- {host}'; 'srun --overlap -N1 -n1 -w {host}',\n"
           "                      'kubectl exec {host} --'); the probing command is appended,\n"
           "                      or put where {cmd} is; sh -c runs T only when it needs a\n"
           "                      shell. A host name starting with '-' or holding anything\n"
           "                      but letters, digits and ._-:@%%/ is refused\n"
           "  --probing PATH      probing on the nodes (default: this binary's own path)\n"
           "  --node-timeout MS   per node, for the whole remote command (default: the rank\n"
           "                      timeout plus the sampling time plus 10000)\n"
           "  --parallel N        nodes asked at once (default 256)\n"
           "Other options:\n"
           "  --job ID            the job to show when several run (see 'cluster list')\n"
           "  --rank-timeout MS   per rank: inject, connect and answer (default: the global\n"
           "                      --timeout, 10000)\n"
           "  --any-uid           also ask (inject into) ranks run by another user than the\n"
           "                      job's (the uid of most of its processes on the node): by\n"
           "                      default they are skipped with a note, since anyone can set\n"
           "                      RANK and MASTER_ADDR in their own process\n"
           "  --local             this node only, printing its machine-readable document\n"
           "                      (what each node runs: probing cluster CMD --local --json)\n");
}

static char *hex(const char *s)
{
    size_t n = strlen(s);
    char *h = malloc(n * 2 + 1);
    for (size_t i = 0; h && i < n; i++)
        snprintf(h + i * 2, 3, "%02x", (unsigned char)s[i]);
    if (h)
        h[n * 2] = '\0';
    return h;
}

/* The text hex-encoded in h, into *owned (freeing what it held), or NULL when h is not hex. */
static const char *unhex(const char *h, char **owned)
{
    free(*owned);
    *owned = NULL;
    size_t n = strlen(h);
    if (n % 2)
        return NULL;
    char *s = malloc(n / 2 + 1);
    for (size_t i = 0; s && i < n / 2; i++) {
        unsigned v;
        if (sscanf(h + i * 2, "%2x", &v) != 1) {
            free(s);
            return NULL;
        }
        s[i] = (char)v;
    }
    if (s)
        s[n / 2] = '\0';
    return *owned = s;
}

/* The subcommands: each its op and the report that prints what the nodes answered (hosts prints
 * the resolved node list itself and asks no node). */
static const struct cli_cluster_sub {
    const char *name;
    int op;
    int (*report)(const struct cli_cluster_opts *o, cJSON *nodes);
} subs[] = {
    {.name = "list", .op = CLUSTER_OP_LIST, .report = cli_cluster_list_report},
    {.name = "stacks", .op = CLUSTER_OP_STACKS, .report = cli_cluster_stacks_report},
    {.name = "query", .op = CLUSTER_OP_QUERY, .report = cli_cluster_query_report},
    {.name = "dump", .op = CLUSTER_OP_DUMP, .report = cli_cluster_dump_report},
    {.name = "hosts", .op = CLUSTER_OP_HOSTS, .report = NULL},
    {.name = "collectives", .op = CLUSTER_OP_COMM, .report = cli_cluster_collectives_report},
};

/* The remote argv for the same command on one node (its local form, machine-readable). */
static int remote_argv(const struct cli_cluster_opts *o, const char *sub, char **argv, char *bufs,
                       size_t bn)
{
    int n = 0;
    size_t used = 0;
#define ARG(s) (argv[n++] = (char *)(s))
#define FMT(...)                                                           \
    do {                                                                   \
        argv[n++] = bufs + used;                                           \
        used += (size_t)snprintf(bufs + used, bn - used, __VA_ARGS__) + 1; \
    } while (0)
    ARG(o->remote_cli);
    ARG("cluster");
    ARG(sub);
    ARG("--local");
    ARG("--json");
    FMT("--rank-timeout=%d", o->rank_timeout_ms);
    if (o->any_uid)
        ARG("--any-uid");
    if (o->op == CLUSTER_OP_STACKS) {
        ARG(o->thread == CLUSTER_THREAD_ALL    ? "--thread=all"
            : o->thread == CLUSTER_THREAD_MAIN ? "--thread=main"
                                               : "--thread=auto");
        FMT("--samples=%d", o->samples);
        FMT("--interval=%g", o->interval);
        if (o->no_inject)
            ARG("--no-inject");
        if (o->native)
            ARG("--native");
        if (o->tasks)
            ARG("--tasks");
    }
    if (o->subprocesses)
        ARG("--subprocesses");
    return n;
#undef ARG
#undef FMT
}

static int usage_err(const char *sub, const char *what)
{
    cli_error("cluster %s: %s: see 'probing cluster %s --help'", sub, what, sub);
    return CLI_USAGE;
}

static const struct option longopts[] = {{"json", no_argument, 0, 'j'},
                                         {"local", no_argument, 0, 'L'},
                                         {"tree", no_argument, 0, 'T'},
                                         {"thread", required_argument, 0, 't'},
                                         {"samples", required_argument, 0, 'n'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"no-inject", no_argument, 0, 'I'},
                                         {"native", no_argument, 0, 'V'},
                                         {"tasks", no_argument, 0, 'K'},
                                         {"subprocesses", no_argument, 0, 'B'},
                                         {"any-uid", no_argument, 0, 'U'},
                                         {"hosts", required_argument, 0, 'H'},
                                         {"hostfile", required_argument, 0, 'F'},
                                         {"nodelist", required_argument, 0, 'N'},
                                         {"slurm", no_argument, 0, 'S'},
                                         {"exec", required_argument, 0, 'e'},
                                         {"probing", required_argument, 0, 'P'},
                                         {"node-timeout", required_argument, 0, 'W'},
                                         {"rank-timeout", required_argument, 0, 'R'},
                                         {"parallel", required_argument, 0, 'p'},
                                         {"job", required_argument, 0, 'J'},
                                         {"job-hex", required_argument, 0, 'X'},
                                         {"reduce", required_argument, 0, 'r'},
                                         {"sql-hex", required_argument, 0, 'Q'},
                                         {"format", required_argument, 0, 'f'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};

/* One option c (with optarg) into cmd: 0, or CLI_USAGE after printing why. */
static int parse_option(struct cli_cluster_cmd *cmd, int c, char **argv)
{
    struct cli_cluster_opts *o = &cmd->o;
    const char *sub = cmd->sub;
    char *end = NULL;
    switch (c) {
    case 'j': o->json = 1; break;
    case 'L': o->local = 1; break;
    case 'T': o->tree = 1; break;
    case 'I': o->no_inject = 1; break;
    case 'V': o->native = 1; break;
    case 'K': o->tasks = 1; break;
    case 'B': o->subprocesses = 1; break;
    case 'U': o->any_uid = 1; break;
    case 't':
        if (strcmp(optarg, "auto") == 0)
            o->thread = CLUSTER_THREAD_AUTO;
        else if (strcmp(optarg, "main") == 0)
            o->thread = CLUSTER_THREAD_MAIN;
        else if (strcmp(optarg, "all") == 0)
            o->thread = CLUSTER_THREAD_ALL;
        else
            return usage_err(sub, "--thread takes auto, main or all");
        break;
    case 'n':
        o->samples = (int)strtol(optarg, &end, 10);
        if (*end || o->samples < 1 || o->samples > 1000)
            return usage_err(sub, "--samples takes 1 to 1000");
        break;
    case 'i':
        o->interval = strtod(optarg, &end);
        if (*end || !(o->interval >= 0 && o->interval <= 3600))
            return usage_err(sub, "--interval takes seconds, 0 to 3600");
        break;
    case 'H': o->hosts = optarg; break;
    case 'F': o->hostfile = optarg; break;
    case 'N': o->nodelist = optarg; break;
    case 'S': o->slurm = 1; break;
    case 'e': o->exec = optarg; break;
    case 'P': o->remote_cli = optarg; break;
    case 'W':
        o->node_timeout_ms = (int)strtol(optarg, &end, 10);
        if (*end || o->node_timeout_ms <= 0)
            return usage_err(sub, "--node-timeout takes a positive number of milliseconds");
        break;
    case 'R':
        o->rank_timeout_ms = (int)strtol(optarg, &end, 10);
        if (*end || o->rank_timeout_ms <= 0)
            return usage_err(sub, "--rank-timeout takes a positive number of milliseconds");
        break;
    case 'p':
        o->parallel = (int)strtol(optarg, &end, 10);
        if (*end || o->parallel <= 0 || o->parallel > 4096)
            return usage_err(sub, "--parallel takes 1 to 4096");
        break;
    case 'J': o->job = optarg; break;
    case 'X':
        if (!(o->job = unhex(optarg, &cmd->owned_job)))
            return usage_err(sub, "--job-hex: not hex");
        break;
    case 'r': o->reduce = optarg; break;
    case 'Q':
        if (!(o->sql = unhex(optarg, &cmd->owned_sql)))
            return usage_err(sub, "--sql-hex: not hex");
        break;
    case 'f':
        if (strcmp(optarg, "table") && strcmp(optarg, "json") && strcmp(optarg, "csv"))
            return usage_err(sub, "--format takes table, json or csv");
        o->format = optarg;
        break;
    case 'o': o->outdir = optarg; break;
    case 'h': cmd->help = 1; break;
    default: {
        char name[32];
        snprintf(name, sizeof name, "cluster %s", sub);
        return cli_bad_option(name, argv);
    }
    }
    return 0;
}

/* The options that do not go together, once all are read: 0, or CLI_USAGE after printing why. */
static int check_options(const struct cli_cluster_cmd *cmd)
{
    const struct cli_cluster_opts *o = &cmd->o;
    const char *sub = cmd->sub;
    /* Options that belong to one command only. */
    if ((o->tree || o->samples != 1 || o->thread != CLUSTER_THREAD_AUTO || o->no_inject ||
         o->native || o->tasks) &&
        o->op != CLUSTER_OP_STACKS)
        return usage_err(sub, o->no_inject ? "--no-inject only goes with 'cluster stacks'"
                              : o->native  ? "--native only goes with 'cluster stacks'"
                                           : "--tree, --thread, --samples, --tasks only go with "
                                             "'cluster stacks'");
    if (o->subprocesses && o->op != CLUSTER_OP_STACKS && o->op != CLUSTER_OP_DUMP)
        return usage_err(sub, "--subprocesses only goes with 'cluster stacks' and 'cluster dump'");
    if (o->tasks && o->no_inject)
        return usage_err(sub, "--tasks needs the probe loaded in each rank (asyncio tasks are read "
                              "with the GIL): leave out --no-inject");
    if (o->native && o->no_inject)
        return usage_err(sub, "--native needs the probe loaded: drop --no-inject");
    if ((o->reduce || strcmp(o->format, "table") != 0) && o->op != CLUSTER_OP_QUERY)
        return usage_err(sub, "--reduce and --format only go with 'cluster query'");
    if (o->op == CLUSTER_OP_QUERY && (!o->sql || !*o->sql))
        return usage_err(sub, "missing SQL: probing cluster query \"SELECT ...\"");
    if (o->op == CLUSTER_OP_DUMP && !o->outdir && !o->local)
        return usage_err(sub, "missing -o DIR");
    if (!!o->hosts + !!o->hostfile + !!o->nodelist + o->slurm > 1)
        return usage_err(sub, "give one of --hosts, --hostfile, --nodelist, --slurm");
    const char *w = getenv("PROBING_RANK_WORKERS"); /* read by local.c's pool_workers */
    char *end;
    long nw = w && *w ? strtol(w, &end, 10) : 1;
    if (w && (!*w || *end || nw < 1 || nw > 256))
        return usage_err(sub, "PROBING_RANK_WORKERS takes 1 to 256 (or leave it unset)");
    return 0;
}

int cli_cluster_parse(const struct cli_opts *g, int argc, char **argv, struct cli_cluster_cmd *cmd)
{
    *cmd = (struct cli_cluster_cmd){.o = {.samples = 1,
                                          .interval = 1.0,
                                          .rank_timeout_ms = g->timeout_ms,
                                          .parallel = 256,
                                          .exec = "ssh -- {host}",
                                          .format = "table"}};
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        cmd->help = 1;
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    cmd->sub = argv[1];
    for (size_t i = 0; i < sizeof subs / sizeof subs[0] && !cmd->sc; i++)
        if (strcmp(cmd->sub, subs[i].name) == 0)
            cmd->sc = &subs[i];
    if (!cmd->sc) {
        cli_error("cluster: unknown command '%s': expected list, stacks, collectives, query, dump "
                  "or hosts "
                  "(see 'probing cluster --help')",
                  cmd->sub);
        return CLI_USAGE;
    }
    cmd->o.op = cmd->sc->op;
    int c, rc;
    argc--;
    argv++;
    optind = 0;
    while ((c = getopt_long(argc, argv, "jhf:o:", longopts, NULL)) != -1) {
        if ((rc = parse_option(cmd, c, argv)) != 0)
            return rc;
        if (cmd->help)
            return CLI_OK;
    }
    for (; optind < argc; optind++) {
        if (cmd->o.op == CLUSTER_OP_QUERY && !cmd->o.sql) {
            cmd->o.sql = argv[optind];
        } else {
            char what[300];
            snprintf(what, sizeof what, "unexpected argument '%s'%s", argv[optind],
                     cmd->o.op == CLUSTER_OP_QUERY ? " (quote the SQL as one argument)" : "");
            return usage_err(cmd->sub, what);
        }
    }
    return check_options(cmd);
}

void cli_cluster_cmd_close(struct cli_cluster_cmd *cmd)
{
    free(cmd->owned_sql);
    free(cmd->owned_job);
    cmd->owned_sql = cmd->owned_job = NULL;
}

/* Runs a parsed command: asks the nodes (or this node) and prints the report. */
static int act(struct cli_cluster_cmd *cmd)
{
    struct cli_cluster_opts *o = &cmd->o;
    const char *sub = cmd->sub;
    char self[PATH_MAX];
    int rc;
    cJSON *nodes = NULL, *hosts = NULL;
    if (o->reduce) { /* the private library it needs, before any rank is asked */
        struct pb_err xerr = {0};
        if (!cli_ext_load(&xerr)) {
            cli_error("cluster query --reduce: %s", xerr.msg);
            return CLI_FAIL;
        }
    }
    o->color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    if (!o->remote_cli) {
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        self[len > 0 ? len : 0] = '\0';
        o->remote_cli = len > 0 ? self : "probing";
    }
    if (!o->node_timeout_ms)
        o->node_timeout_ms =
            o->rank_timeout_ms + (int)((o->samples - 1) * o->interval * 1000) + 10000;
    struct pb_err err = {0};
    hosts = o->local ? cJSON_CreateArray() : cli_cluster_hosts_resolve(o, &err);
    if (!hosts) {
        cli_error("cluster %s: %s", sub, err.msg);
        return CLI_USAGE;
    }
    if (!cmd->sc->report) { /* hosts */
        const cJSON *h;
        if (cJSON_GetArraySize(hosts) == 0)
            printf("%s\n", cli_tx(cli_cluster_node_name()));
        cJSON_ArrayForEach(h, hosts) printf("%s\n", cli_tx(h->valuestring));
        rc = CLI_OK;
        goto out;
    }
    if (o->local) {
        cJSON *doc = cli_cluster_local_collect(o);
        char *s = cJSON_PrintUnformatted(doc);
        puts(s ? s : "{}");
        cJSON_free(s);
        cJSON_Delete(doc);
        rc = CLI_OK;
        goto out;
    }
    if (cJSON_GetArraySize(hosts) == 0) {
        nodes = cJSON_CreateArray();
        cJSON *doc = cli_cluster_local_collect(o);
        cJSON_AddStringToObject(doc, "host", cli_cluster_node_name());
        cJSON_AddItemToArray(nodes, doc);
    } else {
        char *rargv[24], bufs[1024];
        int rn = remote_argv(o, sub, rargv, bufs, sizeof bufs);
        char *hs = o->sql ? hex(o->sql) : NULL, *hj = o->job ? hex(o->job) : NULL;
        char sqlarg[16] = "--sql-hex", jobarg[16] = "--job-hex";
        if (hs) {
            rargv[rn++] = sqlarg;
            rargv[rn++] = hs;
        }
        if (hj) {
            rargv[rn++] = jobarg;
            rargv[rn++] = hj;
        }
        nodes = cli_cluster_nodes_collect(o, hosts, rargv, rn);
        free(hs);
        free(hj);
    }
    rc = cmd->sc->report(o, nodes);
out:
    cJSON_Delete(nodes);
    cJSON_Delete(hosts);
    return rc;
}

int cli_cmd_cluster(const struct cli_opts *g, int argc, char **argv)
{
    struct cli_cluster_cmd cmd;
    int rc = cli_cluster_parse(g, argc, argv, &cmd);
    if (cmd.help)
        help(cmd.sub);
    else if (rc == CLI_OK)
        rc = act(&cmd);
    cli_cluster_cmd_close(&cmd);
    return rc;
}
