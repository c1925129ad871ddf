/* The safetensors reader and writer (no OpenCL device needed): round trips, the exact byte
 * layout, JSON escaping both ways, atomic saves, and every kind of damage the reader must
 * refuse with CLNET_ERR_FORMAT and a message that names the file and what is wrong. */
#include "harness.h"
#include "safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------ */

/* Every test works in its own folder under one temporary folder that main removes. */

/* A file of the given header (length field = strlen(header)) and data_bytes zero bytes. */
static void write_raw(const char *path, const char *header, size_t data_bytes) {
    size_t n = strlen(header);
    unsigned char *b = calloc(1, 8 + n + data_bytes);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(b + 8, header, n);
    test_write_file(path, b, 8 + n + data_bytes);
    free(b);
}

static int entries_in(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* Loading path must fail with CLNET_ERR_FORMAT and a message naming the file and holding
 * `expect`; reading its header alone the same way (every check is of the header, the data's
 * offsets against the file's size included). */
static void expect_format_error(const char *path, const char *expect, const char *what) {
    for (int header_only = 0; header_only < 2; header_only++) {
        clnet_st_file *f = (clnet_st_file *)&f; /* must be reset to NULL */
        clnet_status s = header_only ? clnet_st_load_header(path, &f) : clnet_st_load(path, &f);
        const char *m = clnet_last_error();
        const char *how = header_only ? "header only" : "whole";
        ck_assert_msg(s == CLNET_ERR_FORMAT, "%s (%s): status %d (%s)", what, how, s, m);
        ck_assert_msg(f == NULL, "%s (%s): *out not NULL after a failure", what, how);
        ck_assert_msg(strstr(m, path), "%s (%s): message does not name the file: %s", what, how, m);
        ck_assert_msg(strstr(m, expect), "%s (%s): message lacks '%s': %s", what, how, expect, m);
    }
}

static const float *get_ok(clnet_st_file *f, const char *name, int ndim, const int64_t *shape) {
    const float *data = NULL;
    int got_ndim = -1;
    const int64_t *got_shape = NULL;
    clnet_status s = clnet_st_get(f, name, ndim, shape, &data, &got_ndim, &got_shape);
    ck_assert_msg(s == CLNET_OK, "get %s: %s", name, clnet_last_error());
    ck_assert_int_eq(got_ndim, ndim);
    for (int d = 0; d < ndim; d++) ck_assert_int_eq(got_shape[d], shape[d]);
    return data;
}

/* ---- writing and reading back ----------------------------------------------------- */

START_TEST(round_trip_keeps_tensors_metadata_and_order) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    float scalar = 3.25f, vec[5], img[2 * 3 * 4 * 5];
    test_random_floats(vec, 5, 1);
    test_random_floats(img, 120, 2);
    clnet_st_tensor t[] = {
        {"conv1.weight", img, 4, {2, 3, 4, 5}, CLNET_ST_F32},
        {"scale", &scalar, 0, {0}, CLNET_ST_F32},
        {"conv1.bias", vec, 1, {5}, CLNET_ST_F32},
        {"empty", NULL, 2, {0, 7}, CLNET_ST_F32},
    };
    clnet_st_meta meta[] = {{"format", "clnet"}, {"epoch", "12"}, {"note", ""}};
    ck_assert_msg(clnet_st_save(path, t, 4, meta, 3) == CLNET_OK, "%s", clnet_last_error());

    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_st_count(f), 4);
    for (int i = 0; i < 4; i++) ck_assert_str_eq(clnet_st_name(f, i), t[i].name);
    ck_assert_ptr_null(clnet_st_name(f, 4));
    ck_assert_ptr_null(clnet_st_name(f, -1));

    const float *d = get_ok(f, "conv1.weight", 4, t[0].shape);
    ck_assert_mem_eq(d, img, sizeof img);
    ck_assert_uint_eq((uintptr_t)d % sizeof(float), 0);
    d = get_ok(f, "conv1.bias", 1, t[2].shape);
    ck_assert_mem_eq(d, vec, sizeof vec);
    int ndim = -1;
    ck_assert_int_eq(clnet_st_get(f, "scale", 0, NULL, &d, &ndim, NULL), CLNET_OK);
    ck_assert_int_eq(ndim, 0);
    ck_assert(d[0] == 3.25f);
    get_ok(f, "empty", 2, t[3].shape);

    ck_assert_str_eq(clnet_st_meta_get(f, "format"), "clnet");
    ck_assert_str_eq(clnet_st_meta_get(f, "epoch"), "12");
    ck_assert_str_eq(clnet_st_meta_get(f, "note"), "");
    ck_assert_ptr_null(clnet_st_meta_get(f, "missing"));
    clnet_st_free(f);

    /* Saving again replaces the file; no metadata and no tensors are fine too. */
    ck_assert_int_eq(clnet_st_save(path, NULL, 0, NULL, 0), CLNET_OK);
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);
    ck_assert_int_eq(clnet_st_count(f), 0);
    ck_assert_ptr_null(clnet_st_meta_get(f, "format"));
    clnet_st_free(f);
    ck_assert_int_eq(entries_in(dir), 1); /* no temporary file left behind */

    clnet_st_free(NULL);
    ck_assert_int_eq(clnet_st_count(NULL), 0);
    ck_assert_ptr_null(clnet_st_name(NULL, 0));
    ck_assert_ptr_null(clnet_st_meta_get(NULL, "x"));
}
END_TEST

START_TEST(file_layout_matches_the_spec) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/layout.safetensors", dir);
    float a[2] = {1.0f, -2.0f}, s = 0.5f;
    clnet_st_tensor t[] = {{"a", a, 1, {2}, CLNET_ST_F32}, {"s", &s, 0, {0}, CLNET_ST_F32}};
    clnet_st_meta meta[] = {{"k", "v"}};
    ck_assert_int_eq(clnet_st_save(path, t, 2, meta, 1), CLNET_OK);

    size_t len;
    unsigned char *b = test_read_file(path, &len);
    const char *json = "{\"__metadata__\":{\"k\":\"v\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]}}";
    size_t jn = strlen(json), n = (jn + 7) / 8 * 8;
    /* 8-byte little-endian header length, a multiple of 8 */
    uint64_t got_n = 0;
    for (int i = 7; i >= 0; i--) got_n = (got_n << 8) | b[i];
    ck_assert_uint_eq(got_n, n);
    ck_assert_uint_eq(got_n % 8, 0);
    ck_assert_uint_eq(len, 8 + n + 12);
    /* the JSON itself, then space padding */
    ck_assert_msg(memcmp(b + 8, json, jn) == 0, "header is '%.*s'", (int)n, (const char *)b + 8);
    for (size_t i = 8 + jn; i < 8 + n; i++) ck_assert_int_eq(b[i], ' ');
    /* little-endian IEEE floats: 1.0 = 3f800000, -2.0 = c0000000, 0.5 = 3f000000 */
    const unsigned char data[12] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f};
    ck_assert_mem_eq(b + 8 + n, data, 12);
    free(b);

    /* A header whose JSON is already a multiple of 8 gets no padding. */
    float one = 1.0f;
    clnet_st_tensor u[] = {{"abcdefghijkl", &one, 0, {0}, CLNET_ST_F32}};
    ck_assert_int_eq(clnet_st_save(path, u, 1, NULL, 0), CLNET_OK);
    b = test_read_file(path, &len);
    json = "{\"abcdefghijkl\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    ck_assert_uint_eq(strlen(json) % 8, 0);
    ck_assert_uint_eq(b[0], strlen(json));
    ck_assert_uint_eq(len, 8 + strlen(json) + 4);
    ck_assert(memcmp(b + 8, json, strlen(json)) == 0);
    free(b);
}
END_TEST

START_TEST(names_are_json_escaped_and_read_back) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/names.safetensors", dir);
    float x[3] = {1, 2, 3};
    const char *names[] = {
        "say \"hi\"", "back\\slash", "tab\tnew\nline\x01",
        "\xc3\xbc\x6e\xc3\xaf\x63\xc3\xb8\x64\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"};
    clnet_st_tensor t[4];
    for (int i = 0; i < 4; i++) t[i] = (clnet_st_tensor){names[i], x + i % 3, 1, {1}, CLNET_ST_F32};
    clnet_st_meta meta[] = {{"quote\"key", "value with \\ and \" and \xc3\xa9"}};
    ck_assert_msg(clnet_st_save(path, t, 4, meta, 1) == CLNET_OK, "%s", clnet_last_error());

    size_t len;
    unsigned char *b = test_read_file(path, &len);
    char *header = strndup((const char *)b + 8, (size_t)b[0] | (size_t)b[1] << 8);
    ck_assert_msg(strstr(header, "\"say \\\"hi\\\"\""), "%s", header);
    ck_assert_msg(strstr(header, "\"back\\\\slash\""), "%s", header);
    ck_assert_msg(strstr(header, "\"tab\\tnew\\nline\\u0001\""), "%s", header);
    ck_assert_msg(strstr(header, names[3]), "UTF-8 is written as it is: %s", header);
    ck_assert_msg(strstr(header, "\"quote\\\"key\":\"value with \\\\ and \\\" and \xc3\xa9\""),
                  "%s", header);
    free(header);
    free(b);

    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(clnet_st_name(f, i), names[i]);
        int64_t one = 1;
        ck_assert(get_ok(f, names[i], 1, &one)[0] == x[i % 3]);
    }
    ck_assert_str_eq(clnet_st_meta_get(f, "quote\"key"), meta[0].value);
    clnet_st_free(f);

    /* Names that are not UTF-8 cannot be written as JSON. */
    t[0].name = "bad\xff";
    ck_assert_int_eq(clnet_st_save(path, t, 1, NULL, 0), CLNET_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(reader_decodes_every_json_escape) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/escapes.safetensors", dir);
    /* \u00e9 = é, \u2713 = ✓, \ud83d\ude00 = 😀 (a surrogate pair), \/ = / */
    write_raw(path,
              " {\n\t\"__metadata__\" : { \"k\\u00e9y\" : \"a\\/b\\\\c\\\"d\\be\\ff\\ng\\rh\\ti\" "
              "},\r\n \"w\\u00E9\\u2713\\ud83d\\ude00\":{\"shape\":[ 1 ],\"data_offsets\":[0,4],"
              "\"dtype\":\"F32\"} } ",
              4);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_str_eq(clnet_st_name(f, 0), "w\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80");
    ck_assert_str_eq(clnet_st_meta_get(f, "k\xc3\xa9y"), "a/b\\c\"d\be\ff\ng\rh\ti");
    clnet_st_free(f);
    /* The smallest file: "{}" and no data. */
    write_raw(path, "{}", 0);
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);
    ck_assert_int_eq(clnet_st_count(f), 0);
    clnet_st_free(f);
}
END_TEST

/* ---- atomic saves ------------------------------------------------------------------ */

START_TEST(failed_saves_leave_the_previous_file_intact) {
    char dir[64], path[128], bad[192];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/keep.safetensors", dir);
    float small[4] = {1, 2, 3, 4};
    clnet_st_tensor t[] = {{"w", small, 1, {4}, CLNET_ST_F32}};
    ck_assert_int_eq(clnet_st_save(path, t, 1, NULL, 0), CLNET_OK);
    size_t before_len;
    unsigned char *before = test_read_file(path, &before_len);

    /* Into a folder that does not exist, and under a path whose parent is a regular file
     * (fails even for root). */
    snprintf(bad, sizeof bad, "%s/no/such/folder/x.safetensors", dir);
    ck_assert_int_eq(clnet_st_save(bad, t, 1, NULL, 0), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), bad), "%s", clnet_last_error());
    snprintf(bad, sizeof bad, "%s/x.safetensors", path);
    ck_assert_int_eq(clnet_st_save(bad, t, 1, NULL, 0), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), bad), "%s", clnet_last_error());

    /* A read-only folder stops everyone but root. */
    if (geteuid() != 0) {
        ck_assert_int_eq(chmod(dir, 0555), 0);
        clnet_status s = clnet_st_save(path, t, 1, NULL, 0);
        ck_assert_int_eq(chmod(dir, 0755), 0);
        ck_assert_int_eq(s, CLNET_ERR_IO);
    }

    /* A write that fails half-way (a file size limit; root is bound by it too) over the
     * same path: the old file stays and the temporary one is removed. */
    float *big = calloc(100000, sizeof *big);
    clnet_st_tensor large[] = {{"w", big, 2, {1000, 100}, CLNET_ST_F32}};
    struct rlimit old_limit, limit;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    limit = old_limit;
    limit.rlim_cur = 64 * 1024;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &limit), 0);
    clnet_status s = clnet_st_save(path, large, 1, NULL, 0);
    setrlimit(RLIMIT_FSIZE, &old_limit);
    signal(SIGXFSZ, old_handler);
    free(big);
    ck_assert_int_eq(s, CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), "writing"), "%s", clnet_last_error());

    size_t after_len;
    unsigned char *after = test_read_file(path, &after_len);
    ck_assert_uint_eq(after_len, before_len);
    ck_assert_mem_eq(after, before, before_len);
    ck_assert_int_eq(entries_in(dir), 1);
    free(before);
    free(after);
}
END_TEST

START_TEST(save_rejects_bad_arguments) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/args.safetensors", dir);
    float x[4] = {0};
    clnet_st_meta m[] = {{"k", "1"}, {"k", "2"}};
    struct {
        clnet_st_tensor t[2];
        int count;
        const char *what;
    } cases[] = {
        {{{"a", x, CLNET_ST_MAX_DIMS + 1, {1}, CLNET_ST_F32}}, 1, "9 dimensions"},
        {{{"a", x, 1, {1}, (clnet_st_dtype)2}}, 1, "an unknown dtype"},
        {{{"a", x, 1, {1}, (clnet_st_dtype)-1}}, 1, "a negative dtype"},
        {{{"a", x, -1, {0}, CLNET_ST_F32}}, 1, "negative ndim"},
        {{{"a", x, 2, {2, -2}, CLNET_ST_F32}}, 1, "negative shape"},
        {{{"a", x, 2, {INT64_MAX / 2, 4}, CLNET_ST_F32}}, 1, "shape too large"},
        {{{"a", NULL, 1, {4}, CLNET_ST_F32}}, 1, "NULL data"},
        {{{NULL, x, 1, {4}, CLNET_ST_F32}}, 1, "NULL name"},
        {{{"__metadata__", x, 1, {4}, CLNET_ST_F32}}, 1, "reserved name"},
        {{{"a", x, 1, {1}, CLNET_ST_F32}, {"a", x, 1, {1}, CLNET_ST_F32}}, 2, "duplicate name"},
        {{{"a", x, 1, {1}, CLNET_ST_F32}}, -1, "negative count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(clnet_st_save(path, cases[i].t, cases[i].count, NULL, 0) ==
                          CLNET_ERR_INVALID_ARGUMENT,
                      "%s accepted", cases[i].what);
    ck_assert_int_eq(clnet_st_save(path, NULL, 1, NULL, 0), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_save(NULL, NULL, 0, NULL, 0), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_save(path, NULL, 0, m, 2), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_save(path, NULL, 0, NULL, 1), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(entries_in(dir), 0); /* nothing was written */
}
END_TEST

/* ---- damaged files ---------------------------------------------------------------- */

/* The header alone: names, shapes, dtypes and metadata as the whole file gives them, no data. */
START_TEST(header_only_gives_names_shapes_and_metadata) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    float w[6];
    int64_t steps[2] = {7, -3};
    test_random_floats(w, 6, 4);
    clnet_st_tensor t[] = {{"w", w, 2, {2, 3}, CLNET_ST_F32},
                           {"steps", steps, 1, {2}, CLNET_ST_I64}};
    clnet_st_meta meta[] = {{"format", "clnet"}, {"run", "lr=0.1"}};
    ck_assert_int_eq(clnet_st_save(path, t, 2, meta, 2), CLNET_OK);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load_header(path, &f) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_st_count(f), 2);
    ck_assert_str_eq(clnet_st_name(f, 1), "steps");
    ck_assert_str_eq(clnet_st_meta_get(f, "run"), "lr=0.1");
    clnet_st_dtype dtype;
    int ndim = 0;
    const int64_t *shape = NULL;
    ck_assert_int_eq(clnet_st_info(f, "w", &dtype, &ndim, &shape), CLNET_OK);
    ck_assert(dtype == CLNET_ST_F32 && ndim == 2 && shape[0] == 2 && shape[1] == 3);
    ck_assert_int_eq(clnet_st_info(f, "steps", &dtype, NULL, NULL), CLNET_OK);
    ck_assert(dtype == CLNET_ST_I64);
    const float *data = w;
    ck_assert_int_eq(clnet_st_get(f, "w", 0, NULL, &data, NULL, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clnet_last_error(), "only the header"), "%s", clnet_last_error());
    const int64_t *ints = NULL;
    ck_assert_int_eq(clnet_st_get_i64(f, "steps", 0, NULL, &ints, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    clnet_st_free(f);
    ck_assert_int_eq(clnet_st_load_header(NULL, &f), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_load_header(dir, &f), CLNET_ERR_IO);
}
END_TEST

START_TEST(truncated_files_are_refused) {
    char dir[64], path[128], cut[160];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/whole.safetensors", dir);
    snprintf(cut, sizeof cut, "%s/cut.safetensors", dir);
    float w[20 * 9];
    test_random_floats(w, 180, 3);
    clnet_st_tensor t[] = {{"conv1.weight", w, 4, {20, 1, 3, 3}, CLNET_ST_F32},
                           {"conv1.bias", w, 1, {20}, CLNET_ST_F32}};
    clnet_st_meta meta[] = {{"k", "v"}};
    ck_assert_int_eq(clnet_st_save(path, t, 2, meta, 1), CLNET_OK);
    size_t len;
    unsigned char *b = test_read_file(path, &len);
    size_t n = b[0] | (size_t)b[1] << 8;
    struct {
        size_t at;
        const char *expect;
    } cuts[] = {
        {0, "fewer than the 8"},  {5, "fewer than the 8"},     {8, "truncated"},
        {8 + n / 2, "truncated"}, {8 + n - 1, "truncated"},    {8 + n, "truncated"},
        {8 + n + 4, "truncated"}, {len - 80 * 4, "truncated"}, {len - 1, "truncated"},
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "cut at %zu of %zu", cuts[i].at, len);
        test_write_file(cut, b, cuts[i].at);
        expect_format_error(cut, cuts[i].expect, what);
    }
    free(b);
}
END_TEST

START_TEST(bad_header_lengths_are_refused) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/len.safetensors", dir);
    const char *json = "{}      ";
    struct {
        uint64_t n;
        const char *expect;
    } cases[] = {
        {0, "too small"},
        {1, "too small"},
        {9, "larger than the 8 bytes"},
        {(uint64_t)1 << 40, "over the limit"},
        {UINT64_MAX, "over the limit"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char b[16];
        for (int k = 0; k < 8; k++) b[k] = (unsigned char)(cases[i].n >> (8 * k));
        memcpy(b + 8, json, 8);
        test_write_file(path, b, 16);
        expect_format_error(path, cases[i].expect, cases[i].expect);
    }
}
END_TEST

/* Each header, with data_bytes zero bytes after it, must be refused with `expect`. */
typedef struct {
    const char *header;
    size_t data_bytes;
    const char *expect;
} bad_header;

static void expect_all_refused(const bad_header *cases, size_t count) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    for (size_t i = 0; i < count; i++) {
        write_raw(path, cases[i].header, cases[i].data_bytes);
        expect_format_error(path, cases[i].expect, cases[i].header);
    }
}

#define A_OK "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

START_TEST(bad_json_is_refused) {
    static const bad_header cases[] = {
        {"{" A_OK, 8, "header: bad JSON at byte 53: expected ',' or '}'"},
        {"{" A_OK ",}", 8, "trailing comma"},
        {"{" A_OK "}}", 8, "unexpected text after the value"},
        {"{" A_OK "} x", 8, "unexpected text after the value"},
        {"{'a':{}}", 0, "expected a string key"},
        {"{\"a\" {}}", 0, "expected ':'"},
        {"{\"a\":}", 0, "expected a value"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, "only integers"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1e1],\"data_offsets\":[0,40]}}", 40,
         "only integers"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", 8, "leading zeros"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-],\"data_offsets\":[0,8]}}", 8, "expected a digit"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8,
         "integer out of range"},
        {"{\"a\nb\":{}}", 0, "control character"},
        {"{\"a\\x\":{}}", 0, "unknown escape"},
        {"{\"a\\u12\":{}}", 0, "four hex digits"},
        {"{\"a\\ud800\":{}}", 0, "high surrogate without its low"},
        {"{\"a\\ud800\\u0041\":{}}", 0, "high surrogate without its low"},
        {"{\"a\\udc00\":{}}", 0, "lone low surrogate"},
        {"{\"a\\u0000\":{}}", 0, "NUL"},
        {"{\"a\xff\":{}}", 0, "invalid UTF-8"},
        {"{\"a\xc0\xaf\":{}}", 0, "invalid UTF-8"},     /* overlong '/' */
        {"{\"a\xed\xa0\x80\":{}}", 0, "invalid UTF-8"}, /* encoded surrogate */
        {"{\"a\":{\"dtype\":\"F32", 0, "string not closed"},
        {"{\"a\":[[[[[[[[[[]]]]]]]]]]}", 0, "nested deeper than 8"},
        {"{\"a\":tru}", 0, "expected a value"},
        {"  ", 0, "unexpected end"},
    };
    expect_all_refused(cases, sizeof cases / sizeof cases[0]);
}
END_TEST

START_TEST(bad_tensor_entries_are_refused) {
    static const bad_header cases[] = {
        {"[]", 0, "the header must be a JSON object, not array"},
        {"{\"a\":[]}", 0, "tensor 'a' must be a JSON object, not array"},
        {"{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
         "tensor 'w' has dtype F16; clnet reads only F32 and I64"},
        {"{\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype I32"},
        {"{\"w\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16, "dtype F64"},
        {"{\"w\":{\"dtype\":\"U64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16, "dtype U64"},
        {"{\"w\":{\"dtype\":\"i64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
         "dtype i64"}, /* names are case sensitive */
        {"{\"w\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "dtype BF16"},
        {"{\"w\":{\"dtype\":3,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
         "tensor 'w' has a dtype that is integer"},
        {"{\"conv1.weight\":{\"dtype\":\"F32\",\"shape\":[20,1,3,3],\"data_offsets\":[0,100]}}",
         100,
         "tensor 'conv1.weight' has data_offsets [0, 100] but shape [20,1,3,3] of F32 needs 720 "
         "bytes"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", 0,
         "tensor 'w' has a negative shape entry -1"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
         "tensor 'w' has 9 dimensions"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8,
         "shape entry that is string"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8,
         "shape that is integer"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
         "too large"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 0, "tensor 'w' has no 'data_offsets'"},
        {"{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'w' has no 'dtype'"},
        {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor 'w' has no 'shape'"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8,
         "tensor 'w' has an unknown field 'x'"},
        {"{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
         "tensor 'w' has the field 'dtype' twice"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}}", 8,
         "tensor 'w' must have data_offsets [begin, end]"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
         "0 <= begin <= end"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
         "0 <= begin <= end"},
        {"{" A_OK "," A_OK "}", 8, "names 'a' twice (duplicate tensor name)"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "the header has __metadata__ twice"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "metadata value of 'k' is integer"},
        {"{\"__metadata__\":{\"k\":null}}", 0, "metadata value of 'k' is null"},
        {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "metadata key 'k' occurs twice"},
        {"{\"__metadata__\":[]}", 0, "__metadata__ must be a JSON object"},
    };
    expect_all_refused(cases, sizeof cases / sizeof cases[0]);
}
END_TEST

#define B_AT(begin, end)                                                                           \
    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" #begin "," #end "]}"

START_TEST(data_that_does_not_tile_is_refused) {
    static const bad_header cases[] = {
        /* a gap between two tensors, before the first, and at the end */
        {"{" A_OK "," B_AT(12, 20) "}", 20,
         "a gap in the data: bytes [8, 12) belong to no "
         "tensor (tensor 'b' begins at 12)"},
        {"{" B_AT(4, 12) "}", 12, "a gap in the data: bytes [0, 4)"},
        {"{" A_OK "," B_AT(4, 12) "}", 12,
         "tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a' (data_offsets [0, 8])"},
        {"{" A_OK "," B_AT(0, 8) "}", 8, "overlaps"},
        {"{" A_OK "}", 12, "4 trailing bytes after the data of the last tensor"},
        {"{" A_OK "," B_AT(8, 16) "}", 12,
         "truncated: the tensors need 16 bytes of data but the file has 12"},
    };
    expect_all_refused(cases, sizeof cases / sizeof cases[0]);

    /* Tensors listed out of data order are fine: the file order is the data order. */
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/order.safetensors", dir);
    write_raw(path, "{" B_AT(8, 16) "," A_OK "}", 16);
    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_str_eq(clnet_st_name(f, 0), "a");
    ck_assert_str_eq(clnet_st_name(f, 1), "b");
    clnet_st_free(f);
}
END_TEST

/* ---- int64 tensors and more dimensions ---------------------------------------------- */

static const int64_t *get_i64_ok(clnet_st_file *f, const char *name, int ndim,
                                 const int64_t *shape) {
    const int64_t *data = NULL;
    int got_ndim = -1;
    const int64_t *got_shape = NULL;
    clnet_status s = clnet_st_get_i64(f, name, ndim, shape, &data, &got_ndim, &got_shape);
    ck_assert_msg(s == CLNET_OK, "get_i64 %s: %s", name, clnet_last_error());
    ck_assert_int_eq(got_ndim, ndim);
    for (int d = 0; d < ndim; d++) ck_assert_int_eq(got_shape[d], shape[d]);
    return data;
}

static clnet_st_dtype dtype_of(clnet_st_file *f, const char *name) {
    clnet_st_dtype t = (clnet_st_dtype)-1;
    ck_assert_msg(clnet_st_info(f, name, &t, NULL, NULL) == CLNET_OK, "%s", clnet_last_error());
    return t;
}

/* A checkpoint as a model with BatchNorm and a 3-d convolution makes it: float parameters,
 * PyTorch's shape-() int64 num_batches_tracked, and 5-dimensional conv3d weights. The odd
 * float tensor puts the next int64 tensor at 4 mod 8 in the data area. */
START_TEST(round_trip_of_mixed_f32_and_i64_tensors) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/mixed.safetensors", dir);
    float odd[3] = {1.5f, -2.25f, 1e-30f}, conv3d[4 * 2 * 3 * 3 * 3], eight[2 * 2 * 2];
    test_random_floats(conv3d, sizeof conv3d / sizeof conv3d[0], 5);
    test_random_floats(eight, 8, 6);
    int64_t tracked = 1234567890123LL;
    int64_t extremes[5] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    clnet_st_tensor t[] = {
        {.name = "bn1.weight", .data = odd, .ndim = 1, .shape = {3}},
        {.name = "bn1.num_batches_tracked", .data = &tracked, .ndim = 0, .dtype = CLNET_ST_I64},
        {.name = "conv3d.weight", .data = conv3d, .ndim = 5, .shape = {4, 2, 3, 3, 3}},
        {.name = "extremes", .data = extremes, .ndim = 2, .shape = {1, 5}, .dtype = CLNET_ST_I64},
        {.name = "none", .data = NULL, .ndim = 2, .shape = {0, 3}, .dtype = CLNET_ST_I64},
        {.name = "eight", .data = eight, .ndim = 8, .shape = {1, 2, 1, 2, 1, 2, 1, 1}},
    };
    enum { COUNT = sizeof t / sizeof t[0] };
    clnet_st_meta meta[] = {{"format", "pt"}};
    ck_assert_msg(clnet_st_save(path, t, COUNT, meta, 1) == CLNET_OK, "%s", clnet_last_error());

    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(path, &f) == CLNET_OK, "%s", clnet_last_error());
    ck_assert_int_eq(clnet_st_count(f), COUNT);
    for (int i = 0; i < COUNT; i++) {
        ck_assert_str_eq(clnet_st_name(f, i), t[i].name);
        ck_assert_int_eq(dtype_of(f, t[i].name), t[i].dtype);
        int ndim = -1;
        const int64_t *shape = NULL;
        ck_assert_int_eq(clnet_st_info(f, t[i].name, NULL, &ndim, &shape), CLNET_OK);
        ck_assert_int_eq(ndim, t[i].ndim);
        for (int d = 0; d < ndim; d++) ck_assert_int_eq(shape[d], t[i].shape[d]);
    }
    ck_assert_mem_eq(get_ok(f, "bn1.weight", 1, t[0].shape), odd, sizeof odd);
    const int64_t *v = NULL;
    int ndim = -1;
    ck_assert_int_eq(clnet_st_get_i64(f, "bn1.num_batches_tracked", 0, NULL, &v, &ndim, NULL),
                     CLNET_OK);
    ck_assert_int_eq(ndim, 0);
    ck_assert_int_eq(v[0], tracked);
    ck_assert_uint_eq((uintptr_t)v % _Alignof(int64_t), 0);
    ck_assert_mem_eq(get_ok(f, "conv3d.weight", 5, t[2].shape), conv3d, sizeof conv3d);
    v = get_i64_ok(f, "extremes", 2, t[3].shape);
    ck_assert_uint_eq((uintptr_t)v % _Alignof(int64_t), 0);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(v[i], extremes[i]);
    get_i64_ok(f, "none", 2, t[4].shape);
    ck_assert_mem_eq(get_ok(f, "eight", 8, t[5].shape), eight, sizeof eight);
    clnet_st_free(f);

    /* The int64 data lies little endian where the header says: bn1.weight takes [0, 12), so
     * the counter is at [12, 20), 4 mod 8 (safetensors does not align). */
    size_t len;
    unsigned char *b = test_read_file(path, &len);
    size_t n = b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16;
    char *header = strndup((const char *)b + 8, n);
    ck_assert_msg(strstr(header, "\"bn1.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],"
                                 "\"data_offsets\":[12,20]}"),
                  "%s", header);
    ck_assert_msg(strstr(header, "\"conv3d.weight\":{\"dtype\":\"F32\",\"shape\":[4,2,3,3,3],"
                                 "\"data_offsets\":[20,884]}"),
                  "%s", header);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(b[8 + n + 12 + i], (unsigned char)((uint64_t)tracked >> (8 * i)));
    free(header);
    free(b);
}
END_TEST

/* The bytes Python's safetensors writes for save_file({"n": int64 scalar 7, "v": int64 [-1,
 * 0x0102030405060708], "w": float32 [1.0]}, metadata={"format": "pt"}), which orders the
 * tensors by alignment, then name (so int64 first). clnet given the same order writes the
 * same bytes, and reads them. */
START_TEST(i64_layout_matches_python) {
    char dir[64], path[128], hand[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/clnet.safetensors", dir);
    snprintf(hand, sizeof hand, "%s/python.safetensors", dir);
    const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"n\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
                       "\"v\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[8,24]},"
                       "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[24,28]}}";
    const unsigned char data[28] = {
        7,    0,    0,    0,    0,    0,    0,    0,    /* n = 7 */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* v[0] = -1 */
        8,    7,    6,    5,    4,    3,    2,    1,    /* v[1] = 0x0102030405060708 */
        0,    0,    0x80, 0x3f,                         /* w[0] = 1.0f */
    };
    size_t jn = strlen(json), n = (jn + 7) / 8 * 8;
    unsigned char *want = malloc(8 + n + sizeof data);
    for (int i = 0; i < 8; i++) want[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(want + 8, json, jn);
    memset(want + 8 + jn, ' ', n - jn);
    memcpy(want + 8 + n, data, sizeof data);
    test_write_file(hand, want, 8 + n + sizeof data);

    int64_t seven = 7, vec[2] = {-1, 0x0102030405060708LL};
    float one = 1.0f;
    clnet_st_tensor t[] = {
        {.name = "n", .data = &seven, .ndim = 0, .dtype = CLNET_ST_I64},
        {.name = "v", .data = vec, .ndim = 1, .shape = {2}, .dtype = CLNET_ST_I64},
        {.name = "w", .data = &one, .ndim = 1, .shape = {1}, .dtype = CLNET_ST_F32},
    };
    clnet_st_meta meta[] = {{"format", "pt"}};
    ck_assert_int_eq(clnet_st_save(path, t, 3, meta, 1), CLNET_OK);
    size_t len;
    unsigned char *b = test_read_file(path, &len);
    ck_assert_uint_eq(len, 8 + n + sizeof data);
    ck_assert_msg(memcmp(b, want, len) == 0, "header is '%.*s'", (int)n, (const char *)b + 8);
    free(b);
    free(want);

    clnet_st_file *f = NULL;
    ck_assert_msg(clnet_st_load(hand, &f) == CLNET_OK, "%s", clnet_last_error());
    const int64_t one_dim[1] = {2};
    ck_assert_int_eq(get_i64_ok(f, "n", 0, NULL)[0], 7);
    const int64_t *v = get_i64_ok(f, "v", 1, one_dim);
    ck_assert_int_eq(v[0], -1);
    ck_assert_int_eq(v[1], 0x0102030405060708LL);
    const int64_t w_shape[1] = {1};
    ck_assert(get_ok(f, "w", 1, w_shape)[0] == 1.0f);
    clnet_st_free(f);
}
END_TEST

START_TEST(wrong_dtype_access_is_refused) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/dtypes.safetensors", dir);
    float w[2] = {1, 2};
    int64_t count = 5;
    clnet_st_tensor t[] = {
        {.name = "w", .data = w, .ndim = 1, .shape = {2}},
        {.name = "count", .data = &count, .ndim = 0, .dtype = CLNET_ST_I64},
    };
    ck_assert_int_eq(clnet_st_save(path, t, 2, NULL, 0), CLNET_OK);
    clnet_st_file *f = NULL;
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);

    const float *fd = NULL;
    ck_assert_int_eq(clnet_st_get(f, "count", 0, NULL, &fd, NULL, NULL), CLNET_ERR_FORMAT);
    const char *m = clnet_last_error();
    ck_assert_msg(strstr(m, path) && strstr(m, "tensor 'count' has dtype I64 but F32 was expected"),
                  "%s", m);
    ck_assert_ptr_null(fd);
    const int64_t *id = NULL;
    ck_assert_int_eq(clnet_st_get_i64(f, "w", 0, NULL, &id, NULL, NULL), CLNET_ERR_FORMAT);
    m = clnet_last_error();
    ck_assert_msg(strstr(m, path) && strstr(m, "tensor 'w' has dtype F32 but I64 was expected"),
                  "%s", m);
    ck_assert_ptr_null(id);

    /* clnet_st_get_i64 keeps clnet_st_get's contract: missing tensors, shapes, arguments. */
    ck_assert_int_eq(clnet_st_get_i64(f, "steps", 0, NULL, &id, NULL, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "has no tensor named 'steps'"), "%s",
                  clnet_last_error());
    const int64_t one[1] = {1};
    ck_assert_int_eq(clnet_st_get_i64(f, "count", 1, one, &id, NULL, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "tensor 'count' has shape [] but [1] was expected"),
                  "%s", clnet_last_error());
    ck_assert_ptr_null(id);
    ck_assert_int_eq(clnet_st_get_i64(NULL, "count", 0, NULL, NULL, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_get_i64(f, NULL, 0, NULL, NULL, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_get_i64(f, "count", 1, NULL, NULL, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);

    /* clnet_st_info finds a tensor of either dtype. */
    clnet_st_dtype dt = CLNET_ST_F32;
    ck_assert_int_eq(clnet_st_info(f, "count", &dt, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(dt, CLNET_ST_I64);
    ck_assert_str_eq(clnet_st_dtype_name(dt), "I64");
    ck_assert_int_eq(clnet_st_info(f, "w", &dt, NULL, NULL), CLNET_OK);
    ck_assert_int_eq(dt, CLNET_ST_F32);
    ck_assert_str_eq(clnet_st_dtype_name(dt), "F32");
    ck_assert_str_eq(clnet_st_dtype_name((clnet_st_dtype)7), "?");
    ck_assert_int_eq(clnet_st_info(f, "steps", &dt, NULL, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), path), "%s", clnet_last_error());
    ck_assert_int_eq(clnet_st_info(NULL, "w", NULL, NULL, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_info(f, NULL, NULL, NULL, NULL), CLNET_ERR_INVALID_ARGUMENT);
    clnet_st_free(f);
}
END_TEST

START_TEST(i64_with_the_wrong_byte_length_is_refused) {
    static const bad_header cases[] = {
        /* a scalar claims 4 bytes, as if it were F32 */
        {"{\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
         "tensor 'step' has data_offsets [0, 4] but shape [] of I64 needs 8 bytes"},
        {"{\"c\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,12]}}", 12,
         "tensor 'c' has data_offsets [0, 12] but shape [3] of I64 needs 24 bytes"},
        {"{\"c\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16,
         "shape [1] of I64 needs 8 bytes"},
        {"{\"c\":{\"dtype\":\"I64\",\"shape\":[2,2147483648,2147483648],\"data_offsets\":[0,8]}}",
         8, "too large"},
        /* right length, but the file is cut short or runs on */
        {"{\"c\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 12, "truncated"},
        {"{\"c\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 20,
         "4 trailing bytes"},
    };
    expect_all_refused(cases, sizeof cases / sizeof cases[0]);
}
END_TEST

START_TEST(get_names_missing_tensors_and_wrong_shapes) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    float w[20 * 9] = {0};
    clnet_st_tensor t[] = {{"conv1.weight", w, 4, {20, 1, 3, 3}, CLNET_ST_F32}};
    ck_assert_int_eq(clnet_st_save(path, t, 1, NULL, 0), CLNET_OK);
    clnet_st_file *f = NULL;
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_OK);
    const float *data = NULL;

    ck_assert_int_eq(clnet_st_get(f, "conv2.weight", 0, NULL, &data, NULL, NULL), CLNET_ERR_FORMAT);
    const char *m = clnet_last_error();
    ck_assert_msg(strstr(m, path) && strstr(m, "has no tensor named 'conv2.weight'"), "%s", m);
    ck_assert_ptr_null(data);

    int64_t want[4] = {20, 1, 5, 5};
    ck_assert_int_eq(clnet_st_get(f, "conv1.weight", 4, want, &data, NULL, NULL), CLNET_ERR_FORMAT);
    m = clnet_last_error();
    ck_assert_msg(strstr(m, path) && strstr(m, "tensor 'conv1.weight' has shape [20,1,3,3] but "
                                               "[20,1,5,5] was expected"),
                  "%s", m);
    int64_t flat[1] = {180};
    ck_assert_int_eq(clnet_st_get(f, "conv1.weight", 1, flat, &data, NULL, NULL), CLNET_ERR_FORMAT);
    ck_assert_msg(strstr(clnet_last_error(), "but [180] was expected"), "%s", clnet_last_error());

    /* want_ndim 0 skips the shape check. */
    ck_assert_int_eq(clnet_st_get(f, "conv1.weight", 0, NULL, &data, NULL, NULL), CLNET_OK);
    ck_assert_ptr_nonnull(data);
    ck_assert_int_eq(clnet_st_get(NULL, "x", 0, NULL, NULL, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_get(f, NULL, 0, NULL, NULL, NULL, NULL), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_get(f, "conv1.weight", 2, NULL, NULL, NULL, NULL),
                     CLNET_ERR_INVALID_ARGUMENT);
    clnet_st_free(f);
}
END_TEST

START_TEST(unreadable_files_are_io_errors) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    clnet_st_file *f = NULL;
    ck_assert_int_eq(clnet_st_load(path, &f), CLNET_ERR_IO);
    ck_assert_msg(strstr(clnet_last_error(), path), "%s", clnet_last_error());
    ck_assert_ptr_null(f);
    ck_assert_int_eq(clnet_st_load(dir, &f), CLNET_ERR_IO); /* a folder */
    ck_assert_msg(strstr(clnet_last_error(), "not a regular file"), "%s", clnet_last_error());
    ck_assert_int_eq(clnet_st_load(NULL, &f), CLNET_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clnet_st_load(path, NULL), CLNET_ERR_INVALID_ARGUMENT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("safetensors");
    TCase *t = tcase_create("safetensors");
    tcase_add_test(t, round_trip_keeps_tensors_metadata_and_order);
    tcase_add_test(t, file_layout_matches_the_spec);
    tcase_add_test(t, names_are_json_escaped_and_read_back);
    tcase_add_test(t, reader_decodes_every_json_escape);
    tcase_add_test(t, failed_saves_leave_the_previous_file_intact);
    tcase_add_test(t, save_rejects_bad_arguments);
    tcase_add_test(t, header_only_gives_names_shapes_and_metadata);
    tcase_add_test(t, truncated_files_are_refused);
    tcase_add_test(t, bad_header_lengths_are_refused);
    tcase_add_test(t, bad_json_is_refused);
    tcase_add_test(t, bad_tensor_entries_are_refused);
    tcase_add_test(t, data_that_does_not_tile_is_refused);
    tcase_add_test(t, get_names_missing_tensors_and_wrong_shapes);
    tcase_add_test(t, round_trip_of_mixed_f32_and_i64_tensors);
    tcase_add_test(t, i64_layout_matches_python);
    tcase_add_test(t, wrong_dtype_access_is_refused);
    tcase_add_test(t, i64_with_the_wrong_byte_length_is_refused);
    tcase_add_test(t, unreadable_files_are_io_errors);
    suite_add_tcase(s, t);
    int failed = test_run_suite(s);
    return failed ? 1 : 0;
}
