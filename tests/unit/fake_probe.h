/* SPDX-License-Identifier: MIT */
/* Knobs of the fake probe (fake_probe.c) used by the dap/ unit tests. */
#ifndef FAKE_PROBE_H
#define FAKE_PROBE_H
extern int fake_gil_timeout;
extern int fake_listen_calls;
#endif
