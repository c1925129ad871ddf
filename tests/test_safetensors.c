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
static unsigned char *read_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* A file of the given header (length field = strlen(header)) and data_bytes zero bytes. */
static void write_raw(const char *path, const char *header, size_t data_bytes) {
    size_t n = strlen(header);
    unsigned char *b = calloc(1, 8 + n + data_bytes);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(b + 8, header, n);
    write_bytes(path, b, 8 + n + data_bytes);
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
 * `expect`. */
static void expect_format_error(const char *path, const char *expect, const char *what) {
    clnet_st_file *f = (clnet_st_file *)&f; /* must be reset to NULL */
    clnet_status s = clnet_st_load(path, &f);
    const char *m = clnet_last_error();
    ck_assert_msg(s == CLNET_ERR_FORMAT, "%s: status %d (%s)", what, s, m);
    ck_assert_msg(f == NULL, "%s: *out not NULL after a failure", what);
    ck_assert_msg(strstr(m, path), "%s: message does not name the file: %s", what, m);
    ck_assert_msg(strstr(m, expect), "%s: message lacks '%s': %s", what, expect, m);
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
        {"conv1.weight", img, 4, {2, 3, 4, 5}},
        {"scale", &scalar, 0, {0}},
        {"conv1.bias", vec, 1, {5}},
        {"empty", NULL, 2, {0, 7}},
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
    clnet_st_tensor t[] = {{"a", a, 1, {2}}, {"s", &s, 0, {0}}};
    clnet_st_meta meta[] = {{"k", "v"}};
    ck_assert_int_eq(clnet_st_save(path, t, 2, meta, 1), CLNET_OK);

    size_t len;
    unsigned char *b = read_bytes(path, &len);
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
    clnet_st_tensor u[] = {{"abcdefghijkl", &one, 0, {0}}};
    ck_assert_int_eq(clnet_st_save(path, u, 1, NULL, 0), CLNET_OK);
    b = read_bytes(path, &len);
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
    for (int i = 0; i < 4; i++) t[i] = (clnet_st_tensor){names[i], x + i % 3, 1, {1}};
    clnet_st_meta meta[] = {{"quote\"key", "value with \\ and \" and \xc3\xa9"}};
    ck_assert_msg(clnet_st_save(path, t, 4, meta, 1) == CLNET_OK, "%s", clnet_last_error());

    size_t len;
    unsigned char *b = read_bytes(path, &len);
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
    clnet_st_tensor t[] = {{"w", small, 1, {4}}};
    ck_assert_int_eq(clnet_st_save(path, t, 1, NULL, 0), CLNET_OK);
    size_t before_len;
    unsigned char *before = read_bytes(path, &before_len);

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
    clnet_st_tensor large[] = {{"w", big, 2, {1000, 100}}};
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
    unsigned char *after = read_bytes(path, &after_len);
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
        {{{"a", x, 5, {1, 1, 1, 1}}}, 1, "5 dimensions"},
        {{{"a", x, -1, {0}}}, 1, "negative ndim"},
        {{{"a", x, 2, {2, -2}}}, 1, "negative shape"},
        {{{"a", x, 2, {INT64_MAX / 2, 4}}}, 1, "shape too large"},
        {{{"a", NULL, 1, {4}}}, 1, "NULL data"},
        {{{NULL, x, 1, {4}}}, 1, "NULL name"},
        {{{"__metadata__", x, 1, {4}}}, 1, "reserved name"},
        {{{"a", x, 1, {1}}, {"a", x, 1, {1}}}, 2, "duplicate name"},
        {{{"a", x, 1, {1}}}, -1, "negative count"},
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

START_TEST(truncated_files_are_refused) {
    char dir[64], path[128], cut[160];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/whole.safetensors", dir);
    snprintf(cut, sizeof cut, "%s/cut.safetensors", dir);
    float w[20 * 9];
    test_random_floats(w, 180, 3);
    clnet_st_tensor t[] = {{"conv1.weight", w, 4, {20, 1, 3, 3}}, {"conv1.bias", w, 1, {20}}};
    clnet_st_meta meta[] = {{"k", "v"}};
    ck_assert_int_eq(clnet_st_save(path, t, 2, meta, 1), CLNET_OK);
    size_t len;
    unsigned char *b = read_bytes(path, &len);
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
        write_bytes(cut, b, cuts[i].at);
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
        write_bytes(path, b, 16);
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
         "tensor 'w' has dtype F16; clnet reads only F32"},
        {"{\"w\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "dtype BF16"},
        {"{\"w\":{\"dtype\":3,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
         "tensor 'w' has a dtype that is integer"},
        {"{\"conv1.weight\":{\"dtype\":\"F32\",\"shape\":[20,1,3,3],\"data_offsets\":[0,100]}}",
         100,
         "tensor 'conv1.weight' has data_offsets [0, 100] but shape [20,1,3,3] needs 720 "
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

START_TEST(get_names_missing_tensors_and_wrong_shapes) {
    char dir[64], path[128];
    test_make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    float w[20 * 9] = {0};
    clnet_st_tensor t[] = {{"conv1.weight", w, 4, {20, 1, 3, 3}}};
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
    tcase_add_test(t, truncated_files_are_refused);
    tcase_add_test(t, bad_header_lengths_are_refused);
    tcase_add_test(t, bad_json_is_refused);
    tcase_add_test(t, bad_tensor_entries_are_refused);
    tcase_add_test(t, data_that_does_not_tile_is_refused);
    tcase_add_test(t, get_names_missing_tensors_and_wrong_shapes);
    tcase_add_test(t, unreadable_files_are_io_errors);
    suite_add_tcase(s, t);
    return test_run_suite(s);
}
