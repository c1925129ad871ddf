/* The IDX reader, raw and gzipped (zlib reads either): a data set of an image
 * file and a label file. The input holds both: a 4-byte big-endian length n,
 * n bytes of images, the rest labels. */
#include "fuzz.h"

#include "clnet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    if (size < 4) return 0;
    size_t n = (size_t)data[0] << 24 | (size_t)data[1] << 16 | (size_t)data[2] << 8 | data[3];
    if (n > size - 4) n = size - 4;
    const char *images = fuzz_file("images-idx3-ubyte", data + 4, n);
    const char *labels = fuzz_file("labels-idx1-ubyte", data + 4 + n, size - 4 - n);
    clnet_dataset *ds = NULL;
    if (!images || !labels || clnet_dataset_load_idx(&ds, images, labels) != CLNET_OK) return 0;
    int dims[4];
    (void)clnet_dataset_dims(ds, dims);
    clnet_dataset_free(ds);
    return 0;
}
