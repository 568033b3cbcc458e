/* SPDX-License-Identifier: MIT */
/* DAP base protocol framing: "Content-Length: N\r\n\r\n" + N bytes of JSON. An incremental
 * reader that tolerates any split of the byte stream, rejects oversized or malformed input
 * without allocating for it, and an encoder producing header and body in one buffer. */
#include "dap.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void dap_reader_init(struct dap_reader *r, size_t max_body)
{
    r->buf = NULL;
    r->len = r->cap = 0;
    r->max_body = max_body ? max_body : DAP_DEFAULT_MAX_BODY;
}

void dap_reader_close(struct dap_reader *r)
{
    if (!r)
        return;
    free(r->buf);
    r->buf = NULL;
    r->len = r->cap = 0;
}

int dap_reader_feed(struct dap_reader *r, const char *data, size_t n, struct pb_err *err)
{
    if (n == 0)
        return 0;
    if (r->len + n > r->max_body + DAP_MAX_HEADER)
        return pb_err_set(err, PB_EPROTO, "message larger than %zu bytes", r->max_body);
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *nb = realloc(r->buf, cap);
        if (!nb)
            return pb_err_set(err, -ENOMEM, "out of memory reading a message");
        r->buf = nb;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return 0;
}

/* Find the end of the header block; returns its length including the blank line, 0 if not
 * complete yet, or -1 when it can never be valid. */
static long header_end(const char *buf, size_t len)
{
    size_t lim = len < DAP_MAX_HEADER ? len : DAP_MAX_HEADER;
    for (size_t i = 0; i + 3 < lim; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return (long)(i + 4);
    return len >= DAP_MAX_HEADER ? -1 : 0;
}

/* Parse the Content-Length header out of hdr[0..n). Returns the length or -1. */
static long long content_length(const char *hdr, size_t n, size_t max)
{
    static const char key[] = "content-length:";
    long long val = -1;
    size_t i = 0;
    while (i < n) {
        size_t eol = i;
        while (eol < n && hdr[eol] != '\r')
            eol++;
        size_t klen = sizeof key - 1;
        if (eol - i > klen && strncasecmp(hdr + i, key, klen) == 0) {
            size_t j = i + klen;
            while (j < eol && hdr[j] == ' ')
                j++;
            if (j == eol)
                return -1;
            long long v = 0;
            for (; j < eol; j++) {
                if (hdr[j] < '0' || hdr[j] > '9')
                    return -1;
                v = v * 10 + (hdr[j] - '0');
                if ((unsigned long long)v > max)
                    return -2;
            }
            val = v;
        }
        i = eol + 2;
    }
    return val;
}

static int envelope_ok(const cJSON *m, struct pb_err *err)
{
    if (!cJSON_IsObject(m))
        return pb_err_set(err, PB_EPROTO, "message is not a JSON object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(m, "seq");
    if (!cJSON_IsString(type))
        return pb_err_set(err, PB_EPROTO, "message.type: expected string");
    /* In int range: seq is echoed back as request_seq through an int. */
    if (!cJSON_IsNumber(seq) || !(seq->valuedouble >= INT_MIN && seq->valuedouble <= INT_MAX))
        return pb_err_set(err, PB_EPROTO, "message.seq: expected integer");
    if (strcmp(type->valuestring, "request") == 0 &&
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "command")))
        return pb_err_set(err, PB_EPROTO, "request.command: expected string");
    return 0;
}

int dap_reader_next(struct dap_reader *r, cJSON **msg, struct pb_err *err)
{
    *msg = NULL;
    long hl = header_end(r->buf ? r->buf : "", r->len);
    if (hl < 0)
        return pb_err_set(err, PB_EPROTO, "header longer than %d bytes", DAP_MAX_HEADER);
    if (hl == 0)
        return 0;
    long long cl = content_length(r->buf, (size_t)hl - 4, r->max_body);
    if (cl == -2)
        return pb_err_set(err, PB_EPROTO, "Content-Length over the limit of %zu bytes",
                          r->max_body);
    if (cl < 0)
        return pb_err_set(err, PB_EPROTO, "missing or invalid Content-Length header");
    if (r->len - (size_t)hl < (size_t)cl)
        return 0;
    const char *end = NULL;
    cJSON *m = cJSON_ParseWithLengthOpts(r->buf + hl, (size_t)cl, &end, 0);
    size_t used = (size_t)hl + (size_t)cl;
    memmove(r->buf, r->buf + used, r->len - used);
    r->len -= used;
    r->buf[r->len] = '\0';
    if (!m)
        return pb_err_set(err, PB_EPROTO, "body is not valid JSON");
    int rc = envelope_ok(m, err);
    if (rc < 0) {
        cJSON_Delete(m);
        return rc;
    }
    *msg = m;
    return 1;
}

/* cJSON (1.7.15) prints every number with printf's "%1.15g" and reads it back with sscanf to
 * check it: most of what printing an answer of many frames (lines, columns, ids) costs. The
 * integers below 2^53 (almost every number DAP carries) are printed here, into one pool, and
 * given to cJSON as raw text for the print (the digits it would print); they are numbers
 * again after it. INT_TEXT: room for one ("-9007199254740992" and its NUL). */
#define INT_TEXT 24
#define INT_MAX_EXACT 9007199254740992.0 /* 2^53 */

static int exact_int(const cJSON *v)
{
    double d = v->valuedouble;
    return v->type == cJSON_Number && d > -INT_MAX_EXACT && d < INT_MAX_EXACT &&
           d == (double)(long long)d && (d != 0 || !signbit(d)); /* cJSON prints -0 */
}

static size_t ints_count(const cJSON *v)
{
    size_t n = 0;
    for (; v; v = v->next)
        n += exact_int(v) + (v->child ? ints_count(v->child) : 0);
    return n;
}

static void ints_to_text(cJSON *v, char *pool, size_t *at)
{
    for (; v; v = v->next) {
        if (v->child)
            ints_to_text(v->child, pool, at);
        if (!exact_int(v))
            continue;
        char digits[INT_TEXT], *t = pool + *at, *d = digits + sizeof digits;
        long long i = (long long)v->valuedouble;
        unsigned long long u = i < 0 ? 0 - (unsigned long long)i : (unsigned long long)i;
        *--d = '\0';
        do
            *--d = (char)('0' + u % 10);
        while ((u /= 10) != 0);
        if (i < 0)
            *--d = '-';
        memcpy(t, d, (size_t)(digits + sizeof digits - d));
        *at += INT_TEXT;
        v->type = cJSON_Raw;
        v->valuestring = t;
    }
}

static void ints_back(cJSON *v, const char *pool, size_t cap)
{
    for (; v; v = v->next) {
        if (v->child)
            ints_back(v->child, pool, cap);
        if (v->type == cJSON_Raw && v->valuestring >= pool && v->valuestring < pool + cap) {
            v->type = cJSON_Number;
            v->valuestring = NULL;
        }
    }
}

char *dap_json_print(const cJSON *v, int formatted)
{
    cJSON *m = (cJSON *)v; /* changed for the print only, as it was after it */
    size_t n = m && m->child ? ints_count(m->child) : 0, at = 0; /* v alone, not its siblings */
    char *pool = n ? malloc(n * INT_TEXT) : NULL;                /* without it, cJSON prints them */
    if (pool)
        ints_to_text(m->child, pool, &at);
    char *text = formatted ? cJSON_Print(m) : cJSON_PrintUnformatted(m);
    if (pool) {
        ints_back(m->child, pool, n * INT_TEXT);
        free(pool);
    }
    return text;
}

char *dap_encode(const cJSON *msg, size_t *len)
{
    char *body = dap_json_print(msg, 0);
    if (!body)
        return NULL;
    size_t bl = strlen(body);
    char hdr[64];
    int hn = snprintf(hdr, sizeof hdr, "Content-Length: %zu\r\n\r\n", bl);
    char *out = malloc((size_t)hn + bl + 1);
    if (out) {
        memcpy(out, hdr, (size_t)hn);
        memcpy(out + hn, body, bl + 1);
        *len = (size_t)hn + bl;
    }
    cJSON_free(body);
    return out;
}
