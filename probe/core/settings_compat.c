/* SPDX-License-Identifier: MIT */
/* The original Probing's spellings of settings (docs/migrating.md), for settings.c: the
 * `probing.` prefix, size and time units on sizes (`*_bytes`: 1GB, 64KiB) and times (`*_ms`,
 * `*_s`: 5min, 2h, 7d), its keys that map to ours (retention_days, max_memory), an answer naming our
 * equivalent for those that do not (sample_rate, torch.profiling, rdma.*), close
 * matches for an unknown key, and its environment variables (PROBING_RETENTION_DAYS,
 * PROBING_CPU_SAMPLE_MS). Thread-safe: no state; settings.c's mutex is never held here. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"
#include "settings.h"

/* The original's keys that are ours under another name; a bare number is in `unit`. */
static const struct {
    const char *theirs, *ours, *unit;
} renamed[] = {
    {"retention_days", "history.max_age_s", "d"},
    {"retention", "history.max_age_s", "s"},
    {"cpu.sample.interval", "history.interval_s", "ms"},
    {"max_memory", "store.max_memory_bytes", NULL},
};

/* The original's keys with no setting here, and what to use. */
static const struct {
    const char *theirs, *answer;
} answered[] = {
    {"sample_rate", "the share of traced steps is 'probing -p PID perf --torch --every N' "
                    "(one step in N); native sampling is 'perf --cc --rate HZ'"},
    {"torch.profiling", "torch module tracing is 'probing -p PID perf --torch --every N' (one "
                        "step in N traced)"},
    {"rdma.", "probing does not read RDMA counters"},
};

const char *core_setting_key(const char *name, char *buf, size_t n, const char **unit)
{
    *unit = NULL;
    if (strncmp(name, "probing.", 8) == 0)
        name += 8;
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (strcmp(name, renamed[i].theirs) == 0) {
            *unit = renamed[i].unit;
            name = renamed[i].ours;
        }
    pb_strlcpy(buf, name, n);
    return buf;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Seconds in one unit of time, or 0 when u is not one. */
static double time_unit(const char *u)
{
    static const struct {
        const char *name;
        double s;
    } units[] = {{"ms", 0.001},    {"msec", 0.001}, {"s", 1},        {"sec", 1},
                 {"secs", 1},      {"second", 1},   {"seconds", 1},  {"m", 60},
                 {"min", 60},      {"mins", 60},    {"minute", 60},  {"minutes", 60},
                 {"h", 3600},      {"hour", 3600},  {"hours", 3600}, {"d", 86400},
                 {"day", 86400},   {"days", 86400}, {"w", 604800},   {"week", 604800},
                 {"weeks", 604800}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(u, units[i].name) == 0)
            return units[i].s;
    return 0;
}

/* Bytes in one unit of size (KB and KiB alike are 1024, as memory sizes go), or 0. */
static double size_unit(const char *u)
{
    static const char *const names[] = {"b", "k", "m", "g", "t"};
    if (!*u)
        return 0;
    for (int i = 0; i < 5; i++) {
        size_t l = strlen(names[i]);
        if (strncasecmp(u, names[i], l) != 0)
            continue;
        const char *r = u + l;
        if (!*r || strcasecmp(r, "b") == 0 || strcasecmp(r, "ib") == 0 ||
            (i == 0 && strcasecmp(r, "ytes") == 0)) {
            double b = 1;
            for (int k = 0; k < i; k++)
                b *= 1024;
            return b;
        }
    }
    return 0;
}

int core_setting_units(const char *name, const char *text, const char *unit, long long *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v != v)
        return -1;
    while (*end == ' ')
        end++;
    const char *u = *end ? end : unit;
    if (!u)
        return -1; /* a bare number: settings.c's own parsing */
    double scale = 0, base = 0;
    if (ends_with(name, "_ms") || ends_with(name, "_s")) {
        scale = time_unit(u);
        base = ends_with(name, "_ms") ? 0.001 : 1;
    } else if (ends_with(name, "_bytes")) {
        scale = size_unit(u);
        base = 1;
    }
    if (scale == 0)
        return -1;
    double r = v * scale / base;
    if (r > 9e18 || r < -9e18)
        return -1;
    *out = (long long)(r < 0 ? r - 0.5 : r + 0.5);
    return 0;
}

const char *core_setting_unit_hint(const char *name)
{
    if (ends_with(name, "_ms") || ends_with(name, "_s"))
        return " (or a time: 500ms, 30s, 5min, 2h, 7d)";
    if (ends_with(name, "_bytes"))
        return " (or a size: 64KB, 16MiB, 1GB)";
    return "";
}

/* Edit distance of a and b, capped at 9. */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (n > 63 || strlen(a) > 63)
        return 9;
    int row[64];
    for (size_t j = 0; j <= n; j++)
        row[j] = (int)j;
    for (size_t i = 1; a[i - 1]; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= n; j++) {
            int up = row[j];
            int sub = diag + (a[i - 1] != b[j - 1]);
            int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[n] > 9 ? 9 : row[n];
}

/* The part of a key after its last '.': query.max_rows -> max_rows. */
static const char *leaf(const char *k)
{
    const char *d = strrchr(k, '.');
    return d ? d + 1 : k;
}

int core_setting_unknown(const char *name, const char *const *names, int nnames, struct pb_err *err)
{
    const char *key = strncmp(name, "probing.", 8) == 0 ? name + 8 : name;
    for (size_t i = 0; i < sizeof answered / sizeof answered[0]; i++) {
        size_t l = strlen(answered[i].theirs);
        if (answered[i].theirs[l - 1] == '.' ? strncmp(key, answered[i].theirs, l) == 0
                                             : strcmp(key, answered[i].theirs) == 0)
            return pb_err_set(err, PB_EBADARG, "'%s' is the original Probing's setting: %s", name,
                              answered[i].answer);
    }
    char close[200] = "";
    size_t used = 0;
    for (int i = 0; i < nnames; i++) {
        int d = distance(key, names[i]);
        int dl = distance(leaf(key), leaf(names[i]));
        if (d <= 3 || dl <= 2 || (strlen(leaf(key)) >= 4 && strstr(names[i], leaf(key)))) {
            int w =
                snprintf(close + used, sizeof close - used, "%s'%s'", used ? ", " : "", names[i]);
            if (w < 0 || (size_t)w >= sizeof close - used)
                break;
            used += (size_t)w;
        }
    }
    if (used)
        return pb_err_set(err, PB_EBADARG,
                          "unknown setting '%s': did you mean %s? see 'probing "
                          "config' for the list",
                          name, close);
    return pb_err_set(err, PB_EBADARG, "unknown setting '%s': see 'probing config' for the list",
                      name);
}

const struct probe_compat_env probe_compat_envs[] = {
    {"PROBING_RETENTION_DAYS", "history.max_age_s", "d"},
    {"PROBING_CPU_SAMPLE_MS", "history.interval_s", "ms"},
};
const size_t probe_ncompat_envs = sizeof probe_compat_envs / sizeof probe_compat_envs[0];
