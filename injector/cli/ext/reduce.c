/* SPDX-License-Identifier: MIT */
/* cluster query --reduce's second statement (injector/cli/cluster/query.c): the ranks' union
 * loaded as table r into a fresh in-memory SQLite database, then the statement run over it. */
#include <sqlite3.h>
#include <stdio.h>

#include "ext.h"

cJSON *ext_reduce(const cJSON *u, const char *sql, struct pb_err *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cJSON *body = NULL;
    const cJSON *cols = cJSON_GetObjectItem(u, "columns"), *rows = cJSON_GetObjectItem(u, "rows"),
                *c, *row;
    int nc = cJSON_GetArraySize(cols);
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        goto fail;
    char *ddl = sqlite3_mprintf("CREATE TABLE r(");
    int i = 0;
    cJSON_ArrayForEach(c, cols)
    {
        char *x = sqlite3_mprintf("%s%s\"%w\"", ddl, i++ ? ", " : "", c->valuestring);
        sqlite3_free(ddl);
        ddl = x;
    }
    char *x = sqlite3_mprintf("%s)", ddl);
    sqlite3_free(ddl);
    int rc = sqlite3_exec(db, x, NULL, NULL, NULL);
    sqlite3_free(x);
    if (rc != SQLITE_OK)
        goto fail;
    char *ins = sqlite3_mprintf("INSERT INTO r VALUES (?");
    for (i = 1; i < nc; i++) {
        char *y = sqlite3_mprintf("%s, ?", ins);
        sqlite3_free(ins);
        ins = y;
    }
    char *y = sqlite3_mprintf("%s)", ins);
    sqlite3_free(ins);
    rc = sqlite3_prepare_v2(db, y, -1, &st, NULL);
    sqlite3_free(y);
    if (rc != SQLITE_OK)
        goto fail;
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    cJSON_ArrayForEach(row, rows)
    {
        sqlite3_reset(st);
        for (i = 0; i < nc; i++) {
            const cJSON *v = cJSON_GetArrayItem(row, i);
            if (cJSON_IsNumber(v) && v->valuedouble == (double)(sqlite3_int64)v->valuedouble)
                sqlite3_bind_int64(st, i + 1, (sqlite3_int64)v->valuedouble);
            else if (cJSON_IsNumber(v))
                sqlite3_bind_double(st, i + 1, v->valuedouble);
            else if (cJSON_IsString(v))
                sqlite3_bind_text(st, i + 1, v->valuestring, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, i + 1);
        }
        if (sqlite3_step(st) != SQLITE_DONE)
            goto fail;
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    body = cJSON_CreateObject();
    cJSON *oc = cJSON_AddArrayToObject(body, "columns"),
          *orows = cJSON_AddArrayToObject(body, "rows");
    int n = sqlite3_column_count(st);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(oc, cJSON_CreateString(sqlite3_column_name(st, i)));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON * or = cJSON_CreateArray();
        for (i = 0; i < n; i++) {
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER:
                cJSON_AddItemToArray(or, cJSON_CreateNumber((double)sqlite3_column_int64(st, i)));
                break;
            case SQLITE_FLOAT:
                cJSON_AddItemToArray(or, cJSON_CreateNumber(sqlite3_column_double(st, i)));
                break;
            case SQLITE_NULL: cJSON_AddItemToArray(or, cJSON_CreateNull()); break;
            default:
                cJSON_AddItemToArray(or,
                                     cJSON_CreateString((const char *)sqlite3_column_text(st, i)));
            }
        }
        cJSON_AddItemToArray(orows, or);
    }
    if (rc != SQLITE_DONE) {
        cJSON_Delete(body);
        body = NULL;
        goto fail;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return body;
fail:
    err->code = PB_EUSAGE;
    snprintf(err->msg, sizeof err->msg, "%s",
             db ? sqlite3_errmsg(db) : "cannot open an in-memory database");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return NULL;
}
