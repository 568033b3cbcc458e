/* SPDX-License-Identifier: MIT */
/* Runtime settings (probe-internal): one registry (settings.c) of named, typed, validated
 * values. PROBING_<KEY> environment variables of the target set them at start (key upper-cased,
 * '.' -> '_': query.max_rows <- PROBING_QUERY_MAX_ROWS); `probing config KEY=VALUE` changes them
 * live (probing/config); the table probing.settings shows them all. Every function here is
 * thread-safe (one mutex) and needs no GIL. */
#ifndef PROBE_SETTINGS_H
#define PROBE_SETTINGS_H

#include "pb.h"

/* One setting as shown to users; strings are copies, valid until the next call. */
struct probe_setting_view {
    char name[48];
    char value[256];
    char dflt[64];
    char allowed[96]; /* "10 to 600000", "on|off", ... */
    char description[200];
};

/* Number of settings; core_setting_view_get() fills v for index i (0 <= i < count). */
int core_settings_count(void);
int core_setting_view_get(int i, struct probe_setting_view *v);
/* Index of name, or PB_EBADARG with "unknown setting 'x': see 'probing config'" in err. */
int core_setting_find(const char *name, struct pb_err *err);
/* Validate and set; the error names the allowed range or values. */
int core_setting_set(const char *name, const char *value, struct pb_err *err);
/* settings_compat.c: the original Probing's spellings (docs/migrating.md). The key for name
 * (without a "probing." prefix, renamed keys mapped; *unit: the unit of a bare number for a
 * renamed key, else NULL) copied into buf. */
const char *core_setting_key(const char *name, char *buf, size_t n, const char **unit);
/* A size (name ends in _bytes: 1GB, 64KiB) or time (_ms, _s: 500ms, 5min, 7d) in the unit of
 * setting name; a bare number counts in unit (NULL: not understood). Returns 0 and *out or -1. */
int core_setting_units(const char *name, const char *text, const char *unit, long long *out);
/* " (or a size: ...)" for settings that take units, else "". */
const char *core_setting_unit_hint(const char *name);
/* PB_EBADARG for an unknown key: what to use for the original's keys, else the close matches
 * among names. */
int core_setting_unknown(const char *name, const char *const *names, int nnames,
                         struct pb_err *err);
/* The original's environment variables that map to settings (PROBING_RETENTION_DAYS: a number
 * in unit for key). */
struct probe_compat_env {
    const char *env, *key, *unit;
};
extern const struct probe_compat_env probe_compat_envs[];
extern const size_t probe_ncompat_envs;
/* settings.c: apply them, after core_settings_load (entry.c calls both). */
void core_settings_compat_env(void);

/* Read PROBING_<KEY> of every setting (entry.c, at start). */
void core_settings_load(void);

/* The integer value of an int/bool setting (bool: 0/1); 0 for an unknown name. */
long long core_setting_int(const char *name);
/* The value of a text setting copied into buf (always NUL-terminated). Returns 0, or -1 for a
 * name that is not a text setting (buf then ""). */
int core_setting_text(const char *name, char *buf, size_t n);

/* The GIL timeout for requests (setting gil_timeout_ms). */
int core_setting_gil_timeout_ms(void);

#endif
