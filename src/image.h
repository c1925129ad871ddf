/* Decoding PNG and JPEG images into 8-bit pixels, through libpng (1.6) and libjpeg-turbo's
 * libjpeg API; the first step of image-folder data sets, whose loader threads decode at once:
 * every call is reentrant (no globals; each holds its own libpng or libjpeg state).
 *
 * The format is told by the first bytes, never by the file's name: PNG's 8-byte signature or
 * JPEG's FF D8 FF. What comes out, checked pixel for pixel against PIL 9.4's
 * np.asarray(Image.open(path).convert("L" or "RGB")) (tests/fixtures/images/, made by
 * tests/fixtures/make_image_fixtures.py):
 *  - PNG gray (1, 2, 4, 8 bits: the low depths scaled to 0-255 as PIL does, 1 bit to 0 or 255)
 *    and gray + alpha give 1 channel; RGB, RGBA and palette images give 3. Alpha, and a tRNS
 *    chunk's transparency, are dropped, not composited over a background: PIL's
 *    convert("L") of LA and convert("RGB") of RGBA and of P do the same.
 *  - 16-bit PNG samples keep their high byte (v >> 8, libpng's png_set_strip_16). PIL reads
 *    16-bit RGB(A) that way too; 16-bit gray it opens in mode "I", and its convert("L")
 *    clips every value above 255 to 255, which clnet does not copy (the fixture's reference
 *    is v >> 8 of PIL's 16-bit values).
 *  - Adam7-interlaced PNGs are read whole. Gamma, sRGB, ICC profiles and sBIT are ignored,
 *    as PIL ignores them.
 *  - JPEG gray gives 1 channel; YCbCr (any subsampling) and RGB give 3, converted by
 *    libjpeg's defaults (islow DCT, fancy upsampling), as PIL asks the same library;
 *    baseline, progressive and arithmetic-coded files are read. CMYK and YCCK JPEGs are
 *    refused (PIL's naive CMYK -> RGB is no colour management either). EXIF orientation is
 *    not applied (PIL's Image.open does not apply it either).
 *
 * Every failure is CLNET_ERR_FORMAT naming the file (`name` for bytes) and what is wrong:
 * an empty file, first bytes of neither format (shown), a truncated file (a JPEG whose data,
 * or a scan's data, ends early is refused: libjpeg would fill the rest with gray, and PIL
 * accepts a scan cut short by a marker), a side of 0 or over
 * CLNET_IMAGE_MAX_SIDE (refused from the header, before any allocation), an unsupported
 * colour space, more than 500 progressive scans, or libpng's or libjpeg's own message.
 * CLNET_ERR_IO: a file that cannot be opened or read, or is not a regular file.
 * CLNET_ERR_OUT_OF_MEMORY. Neither library's warnings are printed. After a failure *out is
 * empty (no memory held). */
#ifndef CLNET_IMAGE_H
#define CLNET_IMAGE_H

#include "clnet.h"

#include <stddef.h>
#include <stdint.h>

#define CLNET_IMAGE_MAX_SIDE 16384 /* 2^14: larger headers are refused before any allocation */

typedef struct {
    int width, height, channels; /* channels 1 (gray) or 3 (RGB) */
    uint8_t *pixels;             /* (height, width, channels), rows top first; malloc'ed */
} clnet_image;

/* Decodes a PNG or JPEG file into *out. */
clnet_status clnet_image_decode_file(const char *path, clnet_image *out);

/* The same from size bytes in memory; name is what messages call them. */
clnet_status clnet_image_decode_bytes(const char *name, const void *bytes, size_t size,
                                      clnet_image *out);

/* The header alone: the size and channels that decoding would give, without decoding the
 * pixels (it reads up to the first image data: cheap, for listing a folder). It checks what
 * decoding checks of the header; damage after it shows only when the pixels are decoded. */
clnet_status clnet_image_probe_file(const char *path, int *width, int *height, int *channels);

/* Writes img as a PNG (lossless) or a JPEG of `quality` (1 to 100: libjpeg's scale, 4:2:0
 * for colour) file, the format following the name's ending (.png, .jpg, .jpeg), replacing
 * what was there (image_write.c). CLNET_ERR_INVALID_ARGUMENT for another name, quality or
 * an image of 0 or over CLNET_IMAGE_MAX_SIDE pixels a side; CLNET_ERR_IO naming the file. */
clnet_status clnet_image_write_file(const char *path, const clnet_image *img, int quality);

/* Frees the pixels and resets every field; NULL-safe. */
void clnet_image_free(clnet_image *img);

#endif
