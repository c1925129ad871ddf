/* PNG files in memory, as base64 text: filter type 0 on every row, one IDAT chunk. */
#include "png.h"
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_u32(unsigned char *p, uint32_t v) { /* PNG's integers are big-endian */
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* One PNG chunk (length, type, data, CRC over type and data) at out; returns its size. */
static size_t png_chunk(unsigned char *out, const char *type, const unsigned char *data,
                        size_t len) {
    put_u32(out, (uint32_t)len);
    memcpy(out + 4, type, 4);
    if (len) memmove(out + 8, data, len); /* IDAT's data is compressed in place */
    put_u32(out + 8 + len, (uint32_t)crc32(0, out + 4, (uInt)(len + 4)));
    return len + 12;
}

static void put_base64(clnet_text *t, const unsigned char *b, size_t len) {
    static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < len ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < len ? b[i + 2] : 0);
        clnet_text_printf(t, "%c%c%c%c", B64[v >> 18 & 63], B64[v >> 12 & 63],
                          i + 1 < len ? B64[v >> 6 & 63] : '=', i + 2 < len ? B64[v & 63] : '=');
    }
}

void clnet_png_base64(clnet_text *t, const unsigned char *pixels, int w, int h, int colours) {
    size_t row = 1 + (size_t)w * colours, raw_len = row * (size_t)h;
    uLongf packed_len = compressBound((uLong)raw_len);
    unsigned char *raw = clnet_malloc(raw_len), *png = clnet_malloc(packed_len + 64);
    if (!raw || !png) {
        t->failed = 1;
        goto done;
    }
    for (int y = 0; y < h; y++) { /* filter type 0 (none) before each row */
        raw[(size_t)y * row] = 0;
        memcpy(raw + (size_t)y * row + 1, pixels + (size_t)y * w * colours, row - 1);
    }
    static const unsigned char SIGNATURE[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char ihdr[13] = {0};
    put_u32(ihdr, (uint32_t)w);
    put_u32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;                              /* bits per sample */
    ihdr[9] = colours == 3 ? 2 : 0;           /* truecolour or greyscale */
    unsigned char *packed = png + 8 + 25 + 8; /* where IDAT's data goes */
    if (compress2(packed, &packed_len, raw, (uLong)raw_len, 9) != Z_OK) {
        t->failed = 1;
        goto done;
    }
    memcpy(png, SIGNATURE, 8);
    size_t len = 8 + png_chunk(png + 8, "IHDR", ihdr, 13);
    len += png_chunk(png + len, "IDAT", packed, packed_len);
    len += png_chunk(png + len, "IEND", NULL, 0);
    put_base64(t, png, len);
done:
    free(raw);
    free(png);
}
