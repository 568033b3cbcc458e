/* SPDX-License-Identifier: MIT */
/* The settings registry: a static table of {name, type, default, range or allowed values,
 * description}. To add a setting, add a row (keep them grouped by prefix). Values are set from
 * PROBING_* environment variables at start (core_settings_load), and live by probing/config.
 * Reads and writes take one mutex: settings are read a few times per request, never in a hot
 * loop or a signal handler. */
#include "core.h"
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SET_INT, SET_BOOL, SET_STR };

struct setting {
    const char *name;
    int type;
    long long dflt, min, max;
    const char *description;
    long long value;
};

static struct setting table[] = {
    {"comm.max_records", SET_INT, 4096, 16, 1000000,
     "Most torch.distributed calls perf --comm keeps (about 600 bytes each); the oldest go "
     "first. Read at the recorder's start.",
     0},
    {"crash.path", SET_STR, 0, 0, 0,
     "Crash report file of inject --crash ('%p' is the pid); empty: <rundir>/crash-<pid>.txt.", 0},
    {"debugger.entry_hooks", SET_BOOL, 1, 0, 1,
     "CPython 3.11: serve line breakpoints by hooking the entry of the functions holding them "
     "(their __code__ is a copy with one call more while a breakpoint is set there) instead of "
     "a frame-evaluation function, which slows every Python call by 15-20%. off: always the "
     "latter (pickling such a function by value, as cloudpickle does, then works while "
     "debugging). Read when breakpoints change.",
     0},
    {"eval.timeout_ms", SET_INT, 500, 10, 600000,
     "How long eval/evaluate wait for the GIL (ms); then nothing runs and the GIL holder is named.",
     0},
    {"gil_timeout_ms", SET_INT, 500, 10, 600000,
     "How long a request waits for the GIL (ms) before answering without it or failing.", 0},
    {"history.interval_s", SET_INT, 5, 0, 86400,
     "Seconds between samples of the built-in collector (system.process_history); 0 stops it.", 0},
    {"history.max_age_s", SET_INT, 3600, 1, 30 * 86400,
     "History rows older than this many seconds are deleted.", 0},
    {"history.max_rows", SET_INT, 100000, 10, 10000000,
     "Most rows kept per history table; the oldest go first.", 0},
    /* Limits on who connects (server/listen.c, server/admit.c; docs/security.md). */
    {"net.auth_timeout_ms", SET_INT, 10000, 100, 600000,
     "A TCP connection not past 'attach' (token) this long after it connected is closed.", 0},
    {"net.fd_reserve", SET_INT, 64, 0, 65536,
     "Descriptors always left to the target: no connection is kept that leaves fewer free.", 0},
    {"net.max_connections", SET_INT, 64, 1, 1024,
     "Most connections (Unix socket and TCP) open at once; more are closed at once.", 0},
    {"net.max_unauthenticated", SET_INT, 8, 1, 1024,
     "Most TCP connections not past 'attach' (token) at once; a new one replaces the oldest.", 0},
    {"net.preauth_max_bytes", SET_INT, 8192, 1024, 16 << 20,
     "Largest message (bytes) a TCP client may send before 'attach'; a larger one closes it.", 0},
    {"perf.max_samples", SET_INT, 1000000, 1000, 100000000,
     "Most samples perf --cc keeps (about 24 bytes each); later ones are counted as lost.", 0},
    {"query.max_bytes", SET_INT, 16 << 20, 1024, 256 << 20,
     "Most bytes of text a query result may hold; longer results are cut (and say so).", 0},
    {"query.max_rows", SET_INT, 10000, 1, 10000000,
     "Most rows a query returns; longer results are cut (and say so).", 0},
    {"query.timeout_ms", SET_INT, 5000, 10, 600000,
     "A query running longer than this (ms) is interrupted.", 0},
    {"store.max_memory_bytes", SET_INT, 256 << 20, 16 << 20, 64LL << 30,
     "Most bytes the probe's own SQLite may hold (history tables and a running query together); "
     "a query needing more fails.",
     0},
};
#define NSETTINGS ((int)(sizeof table / sizeof table[0]))
/* SET_STR values, by row (their default is ""). */
static char texts[NSETTINGS][240];

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

static void init_locked(void)
{
    if (loaded)
        return;
    for (int i = 0; i < NSETTINGS; i++)
        table[i].value = table[i].dflt;
    loaded = 1;
}

static void allowed_text(const struct setting *s, char *buf, size_t n)
{
    if (s->type == SET_BOOL)
        snprintf(buf, n, "on|off");
    else if (s->type == SET_STR)
        snprintf(buf, n, "text of up to %zu bytes", sizeof texts[0] - 1);
    else
        snprintf(buf, n, "%lld to %lld", s->min, s->max);
}

static void value_text(const struct setting *s, long long v, char *buf, size_t n)
{
    if (s->type == SET_BOOL)
        snprintf(buf, n, "%s", v ? "on" : "off");
    else
        snprintf(buf, n, "%lld", v);
}

/* Parse text for s (a bare number is in unit when not NULL; sizes and times may carry units,
 * settings_compat.c); 0 and *out, or PB_EBADARG with the allowed values in err. */
static int parse(const struct setting *s, const char *text, const char *unit, long long *out,
                 struct pb_err *err)
{
    char allowed[96];
    allowed_text(s, allowed, sizeof allowed);
    if (s->type == SET_STR) {
        if (strlen(text) >= sizeof texts[0])
            return pb_err_set(err, PB_EBADARG, "%s: too long: expected %s", s->name, allowed);
        return (*out = 0), 0;
    }
    if (s->type == SET_BOOL) {
        static const char *on[] = {"1", "on", "true", "yes"}, *off[] = {"0", "off", "false", "no"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(text, on[i]) == 0)
                return (*out = 1), 0;
            if (strcasecmp(text, off[i]) == 0)
                return (*out = 0), 0;
        }
        return pb_err_set(err, PB_EBADARG, "%s: '%s' is not allowed: expected %s", s->name, text,
                          allowed);
    }
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if ((end == text || *end || errno || unit) && core_setting_units(s->name, text, unit, &v) < 0)
        return pb_err_set(err, PB_EBADARG, "%s: '%s' is not an integer: expected %s%s", s->name,
                          text, allowed, core_setting_unit_hint(s->name));
    if (v < s->min || v > s->max)
        return pb_err_set(err, PB_EBADARG, "%s: %lld is out of range: expected %s", s->name, v,
                          allowed);
    *out = v;
    return 0;
}

void core_settings_load(void)
{
    pthread_mutex_lock(&mu);
    init_locked();
    for (int i = 0; i < NSETTINGS; i++) {
        char env[64] = "PROBING_";
        size_t n = strlen(env);
        for (const char *p = table[i].name; *p && n + 1 < sizeof env; p++)
            env[n++] = *p == '.' ? '_' : (char)toupper((unsigned char)*p);
        env[n] = '\0';
        const char *v = getenv(env);
        long long x;
        struct pb_err err = {0};
        if (v && *v) {
            if (parse(&table[i], v, NULL, &x, &err) < 0)
                PB_LOG(PB_LOG_WARN, "%s ignored: %s", env, err.msg);
            else if (table[i].type == SET_STR)
                pb_strlcpy(texts[i], v, sizeof texts[i]);
            else
                table[i].value = x;
        }
    }
    pthread_mutex_unlock(&mu);
}

int core_settings_count(void)
{
    return NSETTINGS;
}

int core_setting_view_get(int i, struct probe_setting_view *v)
{
    if (i < 0 || i >= NSETTINGS)
        return PB_EBADARG;
    pthread_mutex_lock(&mu);
    init_locked();
    const struct setting *s = &table[i];
    pb_strlcpy(v->name, s->name, sizeof v->name);
    if (s->type == SET_STR) {
        pb_strlcpy(v->value, texts[i], sizeof v->value);
        v->dflt[0] = '\0';
    } else {
        value_text(s, s->value, v->value, sizeof v->value);
        value_text(s, s->dflt, v->dflt, sizeof v->dflt);
    }
    allowed_text(s, v->allowed, sizeof v->allowed);
    pb_strlcpy(v->description, s->description, sizeof v->description);
    pthread_mutex_unlock(&mu);
    return 0;
}

int core_setting_find(const char *name, struct pb_err *err)
{
    char key[64];
    const char *unit;
    core_setting_key(name, key, sizeof key, &unit);
    for (int i = 0; i < NSETTINGS; i++)
        if (strcmp(table[i].name, key) == 0)
            return i;
    const char *names[NSETTINGS];
    for (int i = 0; i < NSETTINGS; i++)
        names[i] = table[i].name;
    return core_setting_unknown(name, names, NSETTINGS, err);
}

int core_setting_set(const char *name, const char *value, struct pb_err *err)
{
    int i = core_setting_find(name, err);
    if (i < 0)
        return i;
    char key[64];
    const char *unit;
    core_setting_key(name, key, sizeof key, &unit);
    long long v;
    int rc = parse(&table[i], value, unit, &v, err);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&mu);
    init_locked();
    if (table[i].type == SET_STR)
        pb_strlcpy(texts[i], value, sizeof texts[i]);
    else
        table[i].value = v;
    pthread_mutex_unlock(&mu);
    PB_LOG(PB_LOG_INFO, "setting %s = %s", name, value);
    return 0;
}

long long core_setting_int(const char *name)
{
    long long v = 0;
    pthread_mutex_lock(&mu);
    init_locked();
    for (int i = 0; i < NSETTINGS; i++)
        if (strcmp(table[i].name, name) == 0)
            v = table[i].value;
    pthread_mutex_unlock(&mu);
    return v;
}

int core_setting_text(const char *name, char *buf, size_t n)
{
    int rc = -1;
    if (n)
        buf[0] = '\0';
    pthread_mutex_lock(&mu);
    init_locked();
    for (int i = 0; i < NSETTINGS; i++)
        if (table[i].type == SET_STR && strcmp(table[i].name, name) == 0) {
            pb_strlcpy(buf, texts[i], n);
            rc = 0;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}

int core_setting_gil_timeout_ms(void)
{
    return (int)core_setting_int("gil_timeout_ms");
}

void core_settings_compat_env(void)
{
    const struct probe_compat_env *vars = probe_compat_envs;
    for (size_t i = 0; i < probe_ncompat_envs; i++) {
        const char *v = getenv(vars[i].env);
        char text[64];
        struct pb_err err = {0};
        if (!v || !*v)
            continue;
        snprintf(text, sizeof text, "%s%s", v, vars[i].unit);
        long long x;
        if (core_setting_units(vars[i].key, text, NULL, &x) < 0) {
            PB_LOG(PB_LOG_WARN, "%s ignored: '%s' is not a number", vars[i].env, v);
            continue;
        }
        /* A time in ms for a setting in s: round up, so that 500 ms is 1 s, not 0 (off). */
        if (strcmp(vars[i].unit, "ms") == 0 && x == 0 && atof(v) > 0)
            x = 1;
        snprintf(text, sizeof text, "%lld", x);
        if (core_setting_set(vars[i].key, text, &err) < 0)
            PB_LOG(PB_LOG_WARN, "%s ignored: %s", vars[i].env, err.msg);
    }
}
