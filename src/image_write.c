/* Encoding 8-bit images as PNG or JPEG files (image.h), through libpng and libjpeg-turbo: what
 * `clnet export` writes a data set's images with. Each library's error function longjmps
 * back to the one function that calls it, as in image.c; what those functions change lives
 * in the job their caller owns. */
#include "alloc.h"
#include "error.h"
#include "image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libpng16/png.h> /* by its versioned folder: src/png.h would shadow <png.h> */
#include <jpeglib.h>

/* The encoded bytes, growing. */
typedef struct {
    unsigned char *bytes;
    size_t size, cap;
    int out_of_memory;
} encoded;

static void append(encoded *e, const void *data, size_t n) {
    if (e->out_of_memory) return;
    if (e->size + n > e->cap) {
        size_t cap = e->cap ? e->cap : 4096;
        while (cap < e->size + n) cap *= 2;
        unsigned char *bytes = clnet_realloc(e->bytes, cap);
        if (!bytes) {
            e->out_of_memory = 1;
            return;
        }
        e->bytes = bytes, e->cap = cap;
    }
    memcpy(e->bytes + e->size, data, n);
    e->size += n;
}

/* ---- PNG -------------------------------------------------------------------------------- */

typedef struct {
    const clnet_image *img;
    encoded out;
    jmp_buf jump;
    png_structp png;
    png_infop info;
    char message[256];
} png_writer;

static void png_write_failed(png_structp png, png_const_charp message) {
    png_writer *w = png_get_error_ptr(png);
    snprintf(w->message, sizeof w->message, "%s", message);
    longjmp(w->jump, 1);
}

static void png_write_quiet(png_structp png, png_const_charp message) {
    (void)png, (void)message;
}

static void png_write_bytes(png_structp png, png_bytep data, size_t n) {
    png_writer *w = png_get_io_ptr(png);
    append(&w->out, data, n);
}

static void png_flush_none(png_structp png) {
    (void)png;
}

/* 0 when the whole file is in w->out, 1 after libpng failed (its message in w). */
static int png_encode(png_writer *w) {
    if (setjmp(w->jump)) return 1;
    w->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, w, png_write_failed, png_write_quiet);
    if (w->png) w->info = png_create_info_struct(w->png);
    if (!w->info) {
        snprintf(w->message, sizeof w->message, "out of memory");
        return 1;
    }
    png_set_write_fn(w->png, w, png_write_bytes, png_flush_none);
    const clnet_image *img = w->img;
    png_set_IHDR(w->png, w->info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
                 img->channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(w->png, w->info);
    size_t row = (size_t)img->width * (size_t)img->channels;
    for (int y = 0; y < img->height; y++) png_write_row(w->png, img->pixels + (size_t)y * row);
    png_write_end(w->png, NULL);
    return 0;
}

/* ---- JPEG ------------------------------------------------------------------------------- */

typedef struct {
    struct jpeg_error_mgr errors; /* first: libjpeg's error manager is the job */
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    struct jpeg_compress_struct c;
    int created;
    unsigned char *bytes; /* jpeg_mem_dest's buffer (malloc'ed by libjpeg) */
    unsigned long size;
} jpeg_writer;

static void jpeg_write_failed(j_common_ptr c) {
    jpeg_writer *w = (jpeg_writer *)c->err;
    c->err->format_message(c, w->message);
    longjmp(w->jump, 1);
}

static void jpeg_write_quiet(j_common_ptr c, int level) {
    (void)c, (void)level;
}

static int jpeg_encode(jpeg_writer *w, const clnet_image *img, int quality) {
    if (setjmp(w->jump)) return 1;
    w->c.err = jpeg_std_error(&w->errors);
    w->errors.error_exit = jpeg_write_failed;
    w->errors.emit_message = jpeg_write_quiet;
    jpeg_create_compress(&w->c);
    w->created = 1;
    jpeg_mem_dest(&w->c, &w->bytes, &w->size);
    w->c.image_width = (JDIMENSION)img->width;
    w->c.image_height = (JDIMENSION)img->height;
    w->c.input_components = img->channels;
    w->c.in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&w->c);
    jpeg_set_quality(&w->c, quality, TRUE);
    jpeg_start_compress(&w->c, TRUE);
    size_t row = (size_t)img->width * (size_t)img->channels;
    while (w->c.next_scanline < w->c.image_height) {
        JSAMPROW rows[1] = {img->pixels + (size_t)w->c.next_scanline * row};
        jpeg_write_scanlines(&w->c, rows, 1);
    }
    jpeg_finish_compress(&w->c);
    return 0;
}

/* ---- files ------------------------------------------------------------------------------ */

static clnet_status write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return clnet_fail(CLNET_ERR_IO, "%s: cannot create it: %s", path, strerror(errno));
    size_t wrote = fwrite(bytes, 1, n, f);
    int failed = wrote != n || fflush(f) != 0, error = errno;
    if (fclose(f) != 0 && !failed) failed = 1, error = errno;
    if (failed) {
        remove(path);
        return clnet_fail(CLNET_ERR_IO, "%s: cannot write it: %s", path, strerror(error));
    }
    return CLNET_OK;
}

/* 1 for a name ending in .jpg or .jpeg (any case), 0 for .png, -1 for neither. */
static int jpeg_named(const char *path) {
    const char *dot = strrchr(path, '.');
    if (dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0)) return 1;
    if (dot && strcasecmp(dot, ".png") == 0) return 0;
    return -1;
}

clnet_status clnet_image_write_file(const char *path, const clnet_image *img, int quality) {
    if (!path || !img || !img->pixels || (img->channels != 1 && img->channels != 3) ||
        img->width < 1 || img->height < 1 || img->width > CLNET_IMAGE_MAX_SIDE ||
        img->height > CLNET_IMAGE_MAX_SIDE)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "clnet_image_write_file: want a path and an image of 1 or 3 channels "
                          "and sides from 1 to %d",
                          CLNET_IMAGE_MAX_SIDE);
    int jpeg = jpeg_named(path);
    if (jpeg < 0)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT,
                          "%s: name it .png, .jpg or .jpeg (the format follows the name)", path);
    if (jpeg && (quality < 1 || quality > 100))
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: JPEG quality %d, want 1 to 100", path,
                          quality);
    clnet_status status = CLNET_OK;
    if (!jpeg) {
        png_writer w = {.img = img};
        int failed = png_encode(&w);
        if (failed || w.out.out_of_memory)
            status =
                w.out.out_of_memory
                    ? clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory encoding it", path)
                    : clnet_fail(CLNET_ERR_INTERNAL, "%s: libpng says: %s", path, w.message);
        else
            status = write_bytes(path, w.out.bytes, w.out.size);
        png_destroy_write_struct(w.png ? &w.png : NULL, w.info ? &w.info : NULL);
        free(w.out.bytes);
        return status;
    }
    jpeg_writer *w = clnet_calloc(1, sizeof *w); /* on the heap: setjmp and a large struct */
    if (!w) return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory encoding it", path);
    if (jpeg_encode(w, img, quality))
        status = clnet_fail(CLNET_ERR_INTERNAL, "%s: libjpeg says: %s", path, w->message);
    else
        status = write_bytes(path, w->bytes, (size_t)w->size);
    if (w->created) jpeg_destroy_compress(&w->c);
    free(w->bytes);
    free(w);
    return status;
}
