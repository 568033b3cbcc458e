/* SPDX-License-Identifier: MIT */
/* Allocation failures on demand in the unit tests (fail_alloc.c). */
#ifndef FAIL_ALLOC_H
#define FAIL_ALLOC_H

/* The nth calloc from now (n >= 1) returns NULL; 0 disarms. */
void unit_fail_calloc(int nth);
/* The same for realloc and strdup, each with its own count. */
void unit_fail_realloc(int nth);
void unit_fail_strdup(int nth);
/* 1 if the armed failure happened. */
int unit_calloc_failed(void);

#endif
