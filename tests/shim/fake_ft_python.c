/* SPDX-License-Identifier: MIT */
/* A stand-in for a free-threaded CPython (no Debian package builds one): an executable that
 * carries what probing reads to tell the version and the build, and nothing else: Py_Version
 * (3.14.0 final) and _Py_NoneStruct with the free-threaded build's 32-byte object header
 * (ob_tid, flags, mutex, gc bits, ob_ref_local, ob_ref_shared, ob_type). Built with -rdynamic
 * as a python3.14t, it prints the samples' "ready" line and sleeps. tests/e2e/test_errors.py. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((used, visibility("default"))) const unsigned long Py_Version = 0x030E00F0;
__attribute__((used, visibility("default"))) struct {
    uintptr_t ob_tid;
    uint16_t flags;
    uint8_t mutex, gc_bits;
    uint32_t ob_ref_local;
    intptr_t ob_ref_shared;
    void *ob_type;
} _Py_NoneStruct = {0, 0, 0, 0, 1, 0, 0};

int main(void)
{
    printf("ready {\"pid\": %d}\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
