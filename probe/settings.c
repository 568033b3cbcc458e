/* SPDX-License-Identifier: MIT */
/* Runtime settings read from PROBING_* environment variables of the target at start. */
#include "internal.h"

#include <stdlib.h>

static int gil_timeout_ms = 500;

void probe_settings_load(void)
{
    const char *v = getenv("PROBING_GIL_TIMEOUT_MS");
    if (v && *v) {
        long t = strtol(v, NULL, 10);
        if (t >= 10 && t <= 600000)
            gil_timeout_ms = (int)t;
    }
}

int probe_setting_gil_timeout_ms(void)
{
    return gil_timeout_ms;
}
