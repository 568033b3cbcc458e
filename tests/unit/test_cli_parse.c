/* SPDX-License-Identifier: MIT */
/* The parse halves of `probing cluster`, `serve` and `inject` (cli_cluster_parse,
 * cli_serve_parse, cli_inject_parse): each command line of the end-to-end tests
 * (tests/e2e/test_cluster*.py, test_serve.py, test_inject.py) parsed into its struct without a
 * process, a node or a socket, and each usage error's one line, word for word as the CLI prints
 * it (and as those tests grep it). */
#include <getopt.h>
#include <unistd.h>

#include "injector/cli/cluster/cluster.h"
#include "injector/cli/serve/serve.h"
#include "unit.h"

/* argv from words (copies: getopt permutes them). */
static char **mkargv(int *argc, const char *const *w)
{
    int n = 0;
    while (w[n])
        n++;
    char **v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = strdup(w[i]);
    *argc = n;
    optind = 0;
    opterr = 0;
    return v;
}
#define ARGV(...) mkargv(&argc, (const char *const[]){__VA_ARGS__, NULL})

/* stderr, captured around one parse. */
static char err_text[4096];
static void cap_begin(void)
{
    unit_capture_begin(2);
}
static const char *cap_end(void)
{
    unit_capture_end(err_text, sizeof err_text);
    return err_text;
}

static const struct cli_opts g = {.timeout_ms = 10000};

/* cli_cluster_parse with stderr captured in err_text. */
static int cluster(struct cli_cluster_cmd *cmd, int argc, char **argv)
{
    cap_begin();
    int rc = cli_cluster_parse(&g, argc, argv, cmd);
    cap_end();
    return rc;
}

TEST(cluster_parse_stacks_options)
{
    /* test_cluster.py: cluster stacks --samples 3 --interval 0.3 --json, and --thread all
     * --native across nodes */
    struct cli_cluster_cmd c;
    int argc;
    char **argv = ARGV("cluster", "stacks", "--thread", "all", "--samples", "3", "--interval",
                       "0.3", "--native", "--json", "--hosts", "n1,n2", "--exec", "sh -c {cmd}",
                       "--rank-timeout", "20000", "--any-uid");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_STR_EQ(err_text, "");
    ASSERT_EQ(c.o.op, CLUSTER_OP_STACKS);
    ASSERT_EQ(c.o.thread, CLUSTER_THREAD_ALL);
    ASSERT_EQ(c.o.samples, 3);
    ASSERT(c.o.interval == 0.3);
    ASSERT_EQ(c.o.native, 1);
    ASSERT_EQ(c.o.json, 1);
    ASSERT_EQ(c.o.any_uid, 1);
    ASSERT_EQ(c.o.rank_timeout_ms, 20000);
    ASSERT_STR_EQ(c.o.hosts, "n1,n2");
    ASSERT_STR_EQ(c.o.exec, "sh -c {cmd}");
    ASSERT_STR_EQ(c.o.format, "table");
    ASSERT_EQ(c.o.parallel, 256);
    ASSERT_EQ(c.o.node_timeout_ms, 0); /* computed when run, from the sampling time */
    ASSERT(c.o.remote_cli == NULL);    /* this binary's path, read when run */
    cli_cluster_cmd_close(&c);
}

TEST(cluster_parse_defaults_and_help)
{
    struct cli_cluster_cmd c;
    int argc;
    char **argv = ARGV("cluster", "list");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.o.op, CLUSTER_OP_LIST);
    ASSERT_EQ(c.o.samples, 1);
    ASSERT(c.o.interval == 1.0);
    ASSERT_EQ(c.o.rank_timeout_ms, 10000); /* the global --timeout */
    ASSERT_STR_EQ(c.o.exec, "ssh -- {host}");
    ASSERT_EQ(c.help, 0);
    cli_cluster_cmd_close(&c);
    argv = ARGV("cluster");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_USAGE); /* no subcommand: the help, exit 2 */
    ASSERT_EQ(c.help, 1);
    argv = ARGV("cluster", "--help");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.help, 1);
    ASSERT(c.sub == NULL);
    argv = ARGV("cluster", "stacks", "--help");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.help, 1);
    ASSERT_STR_EQ(c.sub, "stacks");
    argv = ARGV("cluster", "collectives");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.o.op, CLUSTER_OP_COMM);
}

TEST(cluster_parse_query_hex_and_reduce)
{
    /* what the CLI runs on each node for cluster query "SELECT 1" --job j: the SQL and job
     * hex-encoded (cluster.c remote_argv) */
    struct cli_cluster_cmd c;
    int argc;
    char **argv = ARGV("cluster", "query", "--local", "--json", "--rank-timeout=5000", "--sql-hex",
                       "53454c4543542031", "--job-hex", "6a6f622d31");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_STR_EQ(c.o.sql, "SELECT 1");
    ASSERT_STR_EQ(c.o.job, "job-1");
    ASSERT_EQ(c.o.local, 1);
    ASSERT_EQ(c.o.rank_timeout_ms, 5000);
    cli_cluster_cmd_close(&c);
    ASSERT(c.owned_sql == NULL && c.owned_job == NULL);
    argv = ARGV("cluster", "query", "SELECT func FROM python.stack", "--reduce",
                "SELECT func, count(*) FROM r GROUP BY func", "-f", "csv");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_OK);
    ASSERT_STR_EQ(c.o.sql, "SELECT func FROM python.stack");
    ASSERT_STR_EQ(c.o.reduce, "SELECT func, count(*) FROM r GROUP BY func");
    ASSERT_STR_EQ(c.o.format, "csv");
    cli_cluster_cmd_close(&c);
}

TEST(cluster_parse_frees_what_a_failed_parse_held)
{
    /* The option loop used to return past the frees: what --sql-hex decoded is now the
     * command's, released by cli_cluster_cmd_close on the error path too. */
    struct cli_cluster_cmd c;
    int argc;
    char **argv = ARGV("cluster", "query", "--sql-hex", "41", "--job-hex", "42", "--parallel", "0");
    ASSERT_EQ(cluster(&c, argc, argv), CLI_USAGE);
    ASSERT_STR_EQ(err_text, "probing: error: cluster query: --parallel takes 1 to 4096: see "
                            "'probing cluster query --help'\n");
    ASSERT_STR_EQ(c.owned_sql, "A");
    ASSERT_STR_EQ(c.owned_job, "B");
    cli_cluster_cmd_close(&c);
    ASSERT(c.owned_sql == NULL && c.owned_job == NULL);
}

/* Each usage error, the line it prints, exit 2. */
TEST(cluster_parse_usage_errors)
{
    static const struct {
        const char *argv[8];
        const char *msg;
    } cases[] = {
        {{"cluster", "bogus"},
         "cluster: unknown command 'bogus': expected list, stacks, collectives, query, dump or "
         "hosts (see 'probing cluster --help')"},
        {{"cluster", "stacks", "--thread", "some"},
         "cluster stacks: --thread takes auto, main or all: see 'probing cluster stacks --help'"},
        {{"cluster", "stacks", "--samples", "0"},
         "cluster stacks: --samples takes 1 to 1000: see 'probing cluster stacks --help'"},
        {{"cluster", "stacks", "--interval", "-1"},
         "cluster stacks: --interval takes seconds, 0 to 3600: see 'probing cluster stacks "
         "--help'"},
        {{"cluster", "list", "--node-timeout", "x"},
         "cluster list: --node-timeout takes a positive number of milliseconds: see 'probing "
         "cluster list --help'"},
        {{"cluster", "list", "--rank-timeout", "0"},
         "cluster list: --rank-timeout takes a positive number of milliseconds: see 'probing "
         "cluster list --help'"},
        {{"cluster", "query", "--sql-hex", "zz"},
         "cluster query: --sql-hex: not hex: see 'probing cluster query --help'"},
        {{"cluster", "list", "--job-hex", "123"},
         "cluster list: --job-hex: not hex: see 'probing cluster list --help'"},
        {{"cluster", "query", "-f", "xml", "SELECT 1"},
         "cluster query: --format takes table, json or csv: see 'probing cluster query --help'"},
        {{"cluster", "stacks", "--bogus"},
         "cluster stacks: unknown option '--bogus': see 'probing cluster stacks --help'"},
        {{"cluster", "stacks", "extra"},
         "cluster stacks: unexpected argument 'extra': see 'probing cluster stacks --help'"},
        {{"cluster", "query", "SELECT", "1"},
         "cluster query: unexpected argument '1' (quote the SQL as one argument): see 'probing "
         "cluster query --help'"},
        {{"cluster", "list", "--tree"},
         "cluster list: --tree, --thread, --samples, --tasks only go with 'cluster stacks': see "
         "'probing cluster list --help'"},
        {{"cluster", "dump", "--no-inject", "-o", "d"},
         "cluster dump: --no-inject only goes with 'cluster stacks': see 'probing cluster dump "
         "--help'"},
        {{"cluster", "query", "--native", "SELECT 1"},
         "cluster query: --native only goes with 'cluster stacks': see 'probing cluster query "
         "--help'"},
        {{"cluster", "list", "--subprocesses"},
         "cluster list: --subprocesses only goes with 'cluster stacks' and 'cluster dump': see "
         "'probing cluster list --help'"},
        {{"cluster", "stacks", "--tasks", "--no-inject"},
         "cluster stacks: --tasks needs the probe loaded in each rank (asyncio tasks are read "
         "with the GIL): leave out --no-inject: see 'probing cluster stacks --help'"},
        {{"cluster", "stacks", "--native", "--no-inject"},
         "cluster stacks: --native needs the probe loaded: drop --no-inject: see 'probing "
         "cluster stacks --help'"},
        {{"cluster", "stacks", "--reduce", "SELECT 1"},
         "cluster stacks: --reduce and --format only go with 'cluster query': see 'probing "
         "cluster stacks --help'"},
        {{"cluster", "query"},
         "cluster query: missing SQL: probing cluster query \"SELECT ...\": see 'probing cluster "
         "query --help'"},
        {{"cluster", "dump"}, "cluster dump: missing -o DIR: see 'probing cluster dump --help'"},
        {{"cluster", "hosts", "--hosts", "a", "--slurm"},
         "cluster hosts: give one of --hosts, --hostfile, --nodelist, --slurm: see 'probing "
         "cluster hosts --help'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct cli_cluster_cmd c;
        int argc;
        char **argv = mkargv(&argc, cases[i].argv);
        char want[600];
        snprintf(want, sizeof want, "probing: error: %s\n", cases[i].msg);
        ASSERT_EQ(cluster(&c, argc, argv), CLI_USAGE);
        ASSERT_STR_EQ(err_text, want);
        cli_cluster_cmd_close(&c);
    }
}

static int serve(struct cli_serve_cmd *cmd, int argc, char **argv)
{
    cap_begin();
    int rc = cli_serve_parse(argc, argv, cmd);
    cap_end();
    return rc;
}

TEST(serve_parse_options)
{
    static struct cli_serve_cmd c;
    int argc;
    unsetenv("PROBING_SERVE_TOKEN");
    unsetenv("PROBING_TOKEN");
    char **argv = ARGV("serve");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_STR_EQ(c.listen, "127.0.0.1:8080");
    ASSERT_STR_EQ(c.host, "127.0.0.1");
    ASSERT_EQ(c.port, 8080);
    ASSERT_EQ(c.loopback, 1);
    ASSERT_EQ(c.token_auto, 0);
    ASSERT_STR_EQ(c.token, "");
    /* test_serve.py: a v6 loopback, port 0, a token made at start */
    argv = ARGV("serve", "--listen", "[::1]:0", "--token", "auto");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_STR_EQ(c.host, "::1");
    ASSERT_EQ(c.loopback, 1);
    ASSERT_EQ(c.port, 0);
    ASSERT_EQ(c.token_auto, 1);
    /* not loopback: allowed with a token */
    argv = ARGV("serve", "--listen", "0.0.0.0:0", "--token", "auto");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.loopback, 0);
    /* the host options, handed on to `probing cluster` as words */
    argv = ARGV("serve", "--hosts", "n1,n2", "--slurm", "--exec", "sh -c {cmd}", "--node-timeout",
                "9000");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.ncluster_args, 7);
    const char *want[] = {"--hosts",     "n1,n2",          "--slurm", "--exec",
                          "sh -c {cmd}", "--node-timeout", "9000"};
    for (int i = 0; i < 7; i++)
        ASSERT_STR_EQ(c.cluster_args[i], want[i]);
    /* --target HOST:PORT with the probes' token */
    setenv("PROBING_TOKEN", "0123456789abcdef0123", 1);
    argv = ARGV("serve", "--target", "127.0.0.1:4567", "--target", "[::1]:4568");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.ntargets, 2);
    ASSERT_STR_EQ(c.targets[0].name, "127.0.0.1:4567");
    ASSERT_EQ(c.targets[0].target.port, 4567);
    ASSERT_STR_EQ(c.targets[1].name, "[::1]:4568");
    /* $PROBING_SERVE_TOKEN chooses the token */
    setenv("PROBING_SERVE_TOKEN", "abcdefghijklmnop", 1);
    argv = ARGV("serve", "--listen", "0.0.0.0:0");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_STR_EQ(c.token, "abcdefghijklmnop");
    ASSERT_EQ(c.token_from_env, 1);
    ASSERT_EQ(c.token_auto, 0);
    argv = ARGV("serve", "-h");
    ASSERT_EQ(serve(&c, argc, argv), CLI_OK);
    ASSERT_EQ(c.help, 1);
}

TEST(serve_parse_usage_errors)
{
    static const struct {
        const char *argv[20];
        const char *probing_token, *serve_token;
        const char *msg;
    } cases[] = {
        {{"serve", "--target", "1234"},
         "0123456789abcdef",
         NULL,
         "serve: --target '1234': expected HOST:PORT of a probe listening on TCP"},
        {{"serve", "--target", "127.0.0.1:4567"},
         NULL,
         NULL,
         "serve: --target needs $PROBING_TOKEN: export the token printed by 'probing -p PID "
         "inject --listen HOST:PORT'"},
        {{"serve", "--listen", "nope"},
         NULL,
         NULL,
         "serve: --listen 'nope': expected IP:PORT (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080)"},
        {{"serve", "--listen", "127.0.0.1:70000"},
         NULL,
         NULL,
         "serve: --listen '127.0.0.1:70000': expected IP:PORT (127.0.0.1:8080, [::1]:8080, "
         "0.0.0.0:8080)"},
        {{"serve", "--token", "secret"},
         NULL,
         NULL,
         "serve: --token takes 'auto' (a token on the command line would show in ps): set "
         "$PROBING_SERVE_TOKEN to choose it"},
        {{"serve"}, NULL, "short", "serve: $PROBING_SERVE_TOKEN must be 16 to 79 characters"},
        {{"serve"},
         NULL,
         "abcdefgh;ijklmnop",
         "serve: $PROBING_SERVE_TOKEN holds a character a cookie cannot"},
        {{"serve", "--listen", "0.0.0.0:0"},
         NULL,
         NULL,
         "serve: 0.0.0.0 is not a loopback address: anyone who reaches it could read your "
         "processes: add --token auto (or set $PROBING_SERVE_TOKEN)"},
        {{"serve", "extra"},
         NULL,
         NULL,
         "serve: unexpected argument 'extra': see 'probing serve --help'"},
        {{"serve", "--bogus"},
         NULL,
         NULL,
         "serve: unknown option '--bogus': see 'probing serve --help'"},
        {{"serve", "--hosts", "a", "--hostfile", "f", "--nodelist", "n[1-2]", "--slurm", "--exec",
          "ssh {host}", "--probing", "/p", "--node-timeout", "1", "--hosts", "b"},
         NULL,
         NULL,
         "serve: too many host options: give each at most once"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static struct cli_serve_cmd c;
        int argc;
        char **argv = mkargv(&argc, cases[i].argv);
        char want[600];
        if (cases[i].probing_token)
            setenv("PROBING_TOKEN", cases[i].probing_token, 1);
        else
            unsetenv("PROBING_TOKEN");
        if (cases[i].serve_token)
            setenv("PROBING_SERVE_TOKEN", cases[i].serve_token, 1);
        else
            unsetenv("PROBING_SERVE_TOKEN");
        snprintf(want, sizeof want, "probing: error: %s\n", cases[i].msg);
        ASSERT_EQ(serve(&c, argc, argv), CLI_USAGE);
        ASSERT_STR_EQ(err_text, want);
    }
}

static int inject(struct cli_inject_cmd *cmd, pid_t pid, int argc, char **argv)
{
    struct cli_opts o = {.timeout_ms = 10000, .target = {.pid = pid}};
    cap_begin();
    int rc = cli_inject_parse(&o, argc, argv, cmd);
    cap_end();
    return rc;
}

TEST(inject_parse)
{
    struct cli_inject_cmd c;
    int argc;
    char **argv = ARGV("inject");
    ASSERT_EQ(inject(&c, 1234, argc, argv), CLI_OK);
    ASSERT_EQ(c.pid, 1234);
    ASSERT_EQ(c.crash, -1);
    ASSERT(c.listen == NULL && !c.pprof && !c.json && !c.help);
    /* test_inject.py: inject --listen 127.0.0.1:0 --json */
    argv = ARGV("inject", "--listen", "127.0.0.1:0", "--json");
    ASSERT_EQ(inject(&c, 1234, argc, argv), CLI_OK);
    ASSERT_STR_EQ(c.listen, "127.0.0.1:0");
    ASSERT_EQ(c.json, 1);
    argv = ARGV("inject", "-c", "-P");
    ASSERT_EQ(inject(&c, 1234, argc, argv), CLI_OK);
    ASSERT_EQ(c.crash, 1);
    ASSERT_EQ(c.pprof, 1);
    argv = ARGV("inject", "--crash", "--no-crash"); /* the last one wins */
    ASSERT_EQ(inject(&c, 1234, argc, argv), CLI_OK);
    ASSERT_EQ(c.crash, 0);
    argv = ARGV("inject", "--help");
    ASSERT_EQ(inject(&c, 0, argc, argv), CLI_OK); /* help needs no process */
    ASSERT_EQ(c.help, 1);
    static const struct {
        const char *argv[4];
        pid_t pid;
        const char *msg;
    } cases[] = {
        {{"inject", "--json", "--crash"},
         1234,
         "inject: --json goes with --listen only: run --crash or --pprof separately"},
        {{"inject", "--json", "-P"},
         1234,
         "inject: --json goes with --listen only: run --crash or --pprof separately"},
        {{"inject"}, 0, "inject needs a local process: probing -p PID inject"},
        {{"inject", "extra"}, 1234, "inject: unexpected argument 'extra'"},
        {{"inject", "--bogus"},
         1234,
         "inject: unknown option '--bogus': see 'probing inject --help'"},
        {{"inject", "-l"},
         1234,
         "inject: unknown option or missing value for '-l': see 'probing inject --help'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char want[300];
        argv = mkargv(&argc, cases[i].argv);
        snprintf(want, sizeof want, "probing: error: %s\n", cases[i].msg);
        ASSERT_EQ(inject(&c, cases[i].pid, argc, argv), CLI_USAGE);
        ASSERT_STR_EQ(err_text, want);
    }
}
