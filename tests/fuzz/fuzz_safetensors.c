/* The safetensors reader: header length, JSON, dtypes, shapes, offsets. Every
 * tensor it accepts is read whole (a sanitizer sees any byte past the file). */
#include "fuzz.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    clnet_st_file *f = NULL;
    if (clnet_st_load_bytes("fuzz.safetensors", data, size, &f) != CLNET_OK) return 0;
    for (int i = 0; i < clnet_st_count(f); i++) {
        const char *name = clnet_st_name(f, i);
        clnet_st_dtype dtype;
        int ndim;
        const int64_t *shape;
        if (clnet_st_info(f, name, &dtype, &ndim, &shape) != CLNET_OK) continue;
        size_t count = 1;
        for (int d = 0; d < ndim; d++) count *= (size_t)shape[d];
        const float *x = NULL;
        const int64_t *k = NULL;
        if (clnet_st_get(f, name, 0, NULL, &x, NULL, NULL) == CLNET_OK)
            fuzz_use(x, count * sizeof *x);
        if (clnet_st_get_i64(f, name, 0, NULL, &k, NULL, NULL) == CLNET_OK)
            fuzz_use(k, count * sizeof *k);
    }
    (void)clnet_st_meta_get(f, "format");
    clnet_st_free(f);
    return 0;
}
