/* The PNG and JPEG decoder: the format told by the first bytes, the header's sides, libpng's and
 * libjpeg's errors through longjmp, truncation, the scan limit. Every image it accepts is read
 * whole; what it refuses must leave nothing allocated. */
#include "fuzz.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    clnet_image img = {0};
    if (clnet_image_decode_bytes("fuzz", data, size, &img) != CLNET_OK) {
        if (img.pixels || img.width || img.height || img.channels) __builtin_trap();
        return 0;
    }
    fuzz_use(img.pixels, (size_t)img.width * (size_t)img.height * (size_t)img.channels);
    clnet_image_free(&img);
    return 0;
}
