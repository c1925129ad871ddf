/* The one choice policy and the convolution algorithms' names (choose.h). */
#include "choose.h"
#include "error.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char clnet_choice_letters[CLNET_FROM_COUNT + 1] = "epdf";

/* ---- names ---- */

#define NAME_CAP 16

/* The names in use; `used` grows as algorithms register (under `adding`),
 * after their names are written, so readers never lock. */
static char names[CLNET_CONV_MOST][NAME_CAP] = {"auto",     "im2col", "direct",
                                                "implicit", "lanes",  "winograd"};
static atomic_int used = CLNET_CONV_BUILT_IN;
static pthread_mutex_t adding = PTHREAD_MUTEX_INITIALIZER;

int clnet_conv_algo_count(void) {
    return atomic_load(&used);
}

const char *clnet_conv_algo_name(int a) {
    return a >= 0 && a < clnet_conv_algo_count() ? names[a] : "?";
}

/* The algorithm named by text[0, len) (any case), or -1. */
static int algo_named(const char *text, size_t len) {
    int n = clnet_conv_algo_count();
    for (int a = 0; a < n; a++)
        if (strlen(names[a]) == len && strncasecmp(text, names[a], len) == 0) return a;
    return -1;
}

int clnet_conv_algo_id(const char *name) {
    return algo_named(name, strlen(name));
}

static int valid_name(const char *name) {
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= NAME_CAP) return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-') return 0;
    return 1;
}

clnet_status clnet_conv_algo_add(const char *name, int *a) {
    clnet_status status = CLNET_OK;
    pthread_mutex_lock(&adding);
    int n = clnet_conv_algo_count();
    if (!valid_name(name))
        FAIL(CLNET_ERR_INVALID_ARGUMENT,
             "convolution algorithm name '%s': expected 1 to %d letters, digits, '_' or '-'",
             name ? name : "(null)", NAME_CAP - 1);
    if (algo_named(name, strlen(name)) >= 0)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "convolution algorithm '%s' is registered already", name);
    if (n == CLNET_CONV_MOST)
        FAIL(CLNET_ERR_INVALID_ARGUMENT, "convolution algorithm '%s': all %d numbers are in use",
             name, CLNET_CONV_MOST);
    snprintf(names[n], NAME_CAP, "%s", name);
    atomic_store(&used, n + 1);
    *a = n;
cleanup:
    pthread_mutex_unlock(&adding);
    return status;
}

/* ---- plans ---- */

int clnet_conv_plan_parse(const char *text, clnet_conv_plan *plan) {
    clnet_conv_plan got;
    int n = 0;
    for (const char *at = text;; n++) {
        size_t len = strcspn(at, "/");
        int a = algo_named(at, len);
        if (a < 0 || n == CLNET_CONV_PASSES) return 0;
        got.pass[n] = a;
        if (!at[len]) break;
        at += len + 1;
    }
    if (n == 0)
        got = clnet_conv_plan_all(got.pass[0]);
    else if (n != CLNET_CONV_PASSES - 1)
        return 0;
    *plan = got;
    return 1;
}

void clnet_conv_plan_text(const clnet_conv_plan *plan, char *out, size_t cap) {
    const int *a = plan->pass;
    if (a[0] == a[1] && a[1] == a[2])
        snprintf(out, cap, "%s", clnet_conv_algo_name(a[0]));
    else
        snprintf(out, cap, "%s/%s/%s", clnet_conv_algo_name(a[0]), clnet_conv_algo_name(a[1]),
                 clnet_conv_algo_name(a[2]));
}

/* ---- the policy ---- */

const char *clnet_chooser_named(const clnet_chooser *k, clnet_choice_from from, const char *forced,
                                const char *key, int bucket) {
    const clnet_tune_entry *e = NULL;
    switch (from) {
    case CLNET_FROM_ENV:
        return forced && *forced ? forced : NULL;
    case CLNET_FROM_CHECKPOINT:
        e = clnet_tune_table_find(&k->pinned, key, bucket);
        break;
    case CLNET_FROM_DATABASE:
        e = clnet_tune_table_find(&k->tuned, key, bucket);
        break;
    default:
        break;
    }
    return e ? e->choice : NULL;
}

int clnet_chooser_has_entries(const clnet_chooser *k) {
    return k->pinned.count || k->tuned.count;
}

clnet_status clnet_chooser_force_conv(clnet_chooser *k, const char *text, const char *what) {
    clnet_conv_plan plan = clnet_conv_plan_all(CLNET_CONV_AUTO);
    if (text && *text && !clnet_conv_plan_parse(text, &plan)) {
        char known[CLNET_CONV_MOST * NAME_CAP] = "auto";
        for (int a = 1; a < clnet_conv_algo_count(); a++) {
            size_t at = strlen(known);
            snprintf(known + at, sizeof known - at, ", %s", names[a]);
        }
        return clnet_fail(
            CLNET_ERR_INVALID_ARGUMENT,
            "%s='%s': expected one of %s for every pass, or three of them for the "
            "forward/input-gradient/weight-gradient passes (implicit/implicit/im2col)",
            what, text, known);
    }
    k->conv_force = plan;
    return CLNET_OK;
}

int clnet_conv_tile_parse(const char *id, int v[6]) {
    int t[6], end = 0;
    if (!id ||
        sscanf(id, "m%dn%dv%dl%dw%dx%d%n", &t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &end) != 6 ||
        id[end] != '\0')
        return 0;
    int nv = t[2] > 0 ? t[1] / t[2] : 0;
    int vw_ok = t[2] == 1 || t[2] == 2 || t[2] == 4 || t[2] == 8 || t[2] == 16;
    if (t[0] < 1 || t[0] > 16 || !vw_ok || nv < 1 || nv > 4 || nv * t[2] != t[1] || t[3] < 1 ||
        t[3] > 64 || t[4] < 1 || t[4] > 32 || t[5] < 1 || t[5] > 32)
        return 0;
    memcpy(v, t, sizeof t);
    return 1;
}

clnet_status clnet_chooser_force_tile(clnet_chooser *k, const char *text, const char *what) {
    int v[6];
    if (text && *text &&
        (strlen(text) >= sizeof k->conv_tile_force || !clnet_conv_tile_parse(text, v)))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s='%s': expected a tile like m8n8v4l16w16x16 (MR rows by NR columns "
                          "a work-item, vectors of VW, k steps of L, WGM x WGN work-items)",
                          what, text);
    snprintf(k->conv_tile_force, sizeof k->conv_tile_force, "%s", text ? text : "");
    return CLNET_OK;
}

void clnet_chooser_free(clnet_chooser *k) {
    clnet_tune_table_free(&k->tuned);
    clnet_tune_table_free(&k->pinned);
}
