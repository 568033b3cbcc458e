/* SPDX-License-Identifier: MIT */
/* Replays fuzz corpus files through a harness without libFuzzer (what `make test` runs):
 * replay FILE... ; prints "fuzz-replay: N passed, 0 failed" (a crash fails the run). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "replay: cannot open %s\n", argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        n++;
    }
    printf("fuzz-replay: %d passed, 0 failed\n", n);
    return 0;
}
