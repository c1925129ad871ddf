/* The .npy reader: magic, version, the header dictionary, dtypes, shapes and
 * their products, truncated data. Every array it accepts is read whole. */
#include "fuzz.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_file("x.npy", data, size);
    clnet_npy a = {0};
    if (!path || clnet_npy_read(path, &a) != CLNET_OK) return 0;
    fuzz_use(a.data, a.count * (size_t)a.size);
    int64_t ints[64];
    for (size_t i = 0; a.kind != 'f' && i < a.count && i < 64; i++) ints[i] = clnet_npy_int(&a, i);
    if (a.kind != 'f') fuzz_use(ints, (a.count < 64 ? a.count : 64) * sizeof *ints);
    char text[256];
    clnet_npy_shape_text(&a, text, sizeof text);
    clnet_npy_free(&a);
    return 0;
}
