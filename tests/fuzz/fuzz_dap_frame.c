/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the DAP framing reader alone (dap_reader_feed/next), on a byte stream from
 * a peer split arbitrarily. Byte 0 picks the body limit (small ones reach the size checks),
 * bytes 1-4 seed the split sizes (the low bit of byte 4 also picks the second split), the
 * rest is the stream. Beyond memory safety it checks that
 * the stream split two ways gives the same messages and the same end (until the feed limit,
 * which depends on how much is buffered at once, stops either run), that every message is a
 * valid envelope, and that encoding a message reads back as the same message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dap/dap.h"

enum { END_MORE, END_PROTO, END_FEED };

struct run {
    char *msgs[256];
    size_t n;
    int end;
};

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_dap_frame: %s\n", what);
        abort();
    }
}

/* The invariants of one message handed out by dap_reader_next. */
static char *check_message(const cJSON *m)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
    check(cJSON_IsObject(m) && cJSON_IsString(type) &&
              cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(m, "seq")),
          "message without type/seq handed out");
    if (strcmp(type->valuestring, "request") == 0)
        check(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "command")),
              "request without command handed out");
    char *text = cJSON_PrintUnformatted(m);
    size_t len = 0;
    char *wire = dap_encode(m, &len);
    if (!text || !wire) { /* out of memory: nothing to compare */
        free(wire);
        return text;
    }
    struct dap_reader r;
    struct pb_err err = {0};
    cJSON *back = NULL;
    dap_reader_init(&r, len + 1);
    check(dap_reader_feed(&r, wire, len, &err) == 0, "encoded message refused by feed");
    check(dap_reader_next(&r, &back, &err) == 1, "encoded message not read back");
    check(r.len == 0, "encoded message not consumed exactly");
    char *again = cJSON_PrintUnformatted(back);
    check(again && strcmp(again, text) == 0, "encoded message read back differently");
    cJSON_free(again);
    cJSON_Delete(back);
    dap_reader_close(&r);
    free(wire);
    return text;
}

/* Feeds data in chunks (fixed size, or pseudo-random from seed), taking every message after
 * each chunk, until the end of data or the first error. */
static void run_split(const uint8_t *data, size_t size, size_t max_body, uint32_t seed,
                      size_t fixed, struct run *out)
{
    struct dap_reader r;
    struct pb_err err = {0};
    dap_reader_init(&r, max_body);
    out->n = 0;
    out->end = END_MORE;
    for (size_t off = 0; off < size;) {
        seed = seed * 1103515245u + 12345u;
        size_t k = fixed ? fixed : 1 + (seed >> 8) % 700;
        if (k > size - off)
            k = size - off;
        if (dap_reader_feed(&r, (const char *)data + off, k, &err) < 0) {
            out->end = END_FEED;
            break;
        }
        off += k;
        for (;;) {
            cJSON *m = NULL;
            int rc = dap_reader_next(&r, &m, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                check(m == NULL && err.msg[0], "error without message, or with a message");
                out->end = END_PROTO;
                goto done;
            }
            char *text = check_message(m);
            cJSON_Delete(m);
            if (out->n < sizeof out->msgs / sizeof out->msgs[0])
                out->msgs[out->n++] = text;
            else
                cJSON_free(text);
        }
    }
done:
    dap_reader_close(&r);
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        cJSON_free(r->msgs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t limits[] = {0 /* the default, 16 MiB */, 16, 200, 4096};
    if (size < 5)
        return 0;
    size_t max_body = limits[data[0] & 3];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
                    (uint32_t)data[4] << 24;
    data += 5;
    size -= 5;

    static struct run a, b;
    run_split(data, size, max_body, seed, 0, &a);
    /* The other split: one byte at a time (short inputs), or everything at once. */
    run_split(data, size, max_body, 0, (data[-1] & 1) && size <= 4096 ? 1 : size, &b);
    size_t common = a.n < b.n ? a.n : b.n;
    for (size_t i = 0; i < common; i++)
        check(strcmp(a.msgs[i], b.msgs[i]) == 0, "the split changed a message");
    if (a.end != END_FEED && b.end != END_FEED)
        check(a.n == b.n && a.end == b.end, "the split changed the messages or the end");
    run_free(&a);
    run_free(&b);
    return 0;
}
