/* Decoding PNG and JPEG images (see image.h) through libpng and libjpeg(-turbo).
 *
 * Both libraries report errors by calling a function that must not return. Each decode makes
 * its own job (the library's state, where its data comes from, what went wrong) and sets a
 * jmp_buf in it; the error functions write the library's message into the job and longjmp
 * back to the one function of each format that calls the library (png_run, jpeg_run). Those
 * keep nothing in their own locals across the longjmp: all they change lives in the job, which
 * their caller owns, so after the jump the caller frees what the job holds and reports. */
#include "image.h"
#include "alloc.h"
#include "error.h"
#include "fileio.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* libpng's header by its versioned folder: src/ is on the library's include path, and its
 * png.h (clnet's PNG writer for SVG pictures) would shadow <png.h>. */
#include <libpng16/png.h>
/* jpeglib.h needs stdio.h's FILE and size_t before it */
#include <jpeglib.h>
#include <jerror.h> /* its message codes: JWRN_JPEG_EOF */

/* A progressive JPEG may hold any number of scans, each a pass over the whole coefficient
 * buffer: a small file of thousands of tiny scans takes minutes. libjpeg-turbo's own tools
 * stop at 500 (TJFLAG_LIMITSCANS); so does clnet. */
#define MAX_SCANS 500

static const unsigned char PNG_SIGNATURE[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
static const unsigned char JPEG_START[3] = {0xff, 0xd8, 0xff}; /* SOI, then a marker's FF */

/* Where the encoded bytes come from: memory (bytes, size) or, to probe, a file. */
typedef struct {
    const char *name;
    const unsigned char *bytes; /* NULL: read from file */
    size_t size;
    size_t at; /* bytes handed to libpng so far (memory) */
    FILE *file;
} source;

/* What ended a decode early, beyond the library's own errors. */
typedef enum {
    FAULT_NONE,
    FAULT_LIBRARY,   /* libpng's or libjpeg's message is in the job */
    FAULT_TRUNCATED, /* the data ends before the image does */
    FAULT_SIDE,      /* a side of 0 or over CLNET_IMAGE_MAX_SIDE */
    FAULT_COLOUR,    /* a colour space clnet does not decode */
    FAULT_LAYOUT,    /* the library's rows are not what was asked (a bug, never expected) */
    FAULT_READ,      /* reading the file failed (errno kept) */
    FAULT_MEMORY,
} fault;

/* The header's facts, and the pixels when asked for (out NULL: the header alone). */
typedef struct {
    clnet_image *out;
    int width, height, channels;
    fault fault;
    int error; /* errno of FAULT_READ */
    char message[JMSG_LENGTH_MAX > 256 ? JMSG_LENGTH_MAX : 256];
} result;

static clnet_status report(const source *s, const char *format, const char *library,
                           const result *r) {
    switch (r->fault) {
    case FAULT_NONE:
        return CLNET_OK;
    case FAULT_TRUNCATED:
        return clnet_fail(CLNET_ERR_FORMAT, "%s: truncated %s: its data ends before the image does",
                          s->name, format);
    case FAULT_SIDE:
        if (r->width == 0 || r->height == 0)
            return clnet_fail(CLNET_ERR_FORMAT, "%s: a %s of %d x %d pixels: a side of 0", s->name,
                              format, r->width, r->height);
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: a %s of %d x %d pixels: a side over %d (CLNET_IMAGE_MAX_SIDE)",
                          s->name, format, r->width, r->height, CLNET_IMAGE_MAX_SIDE);
    case FAULT_COLOUR:
        return clnet_fail(CLNET_ERR_FORMAT, "%s: %s", s->name, r->message);
    case FAULT_LAYOUT:
        return clnet_fail(CLNET_ERR_FORMAT, "%s: %s: %s", s->name, format, r->message);
    case FAULT_READ:
        return clnet_fail(CLNET_ERR_IO, "%s: read failed: %s", s->name, strerror(r->error));
    case FAULT_MEMORY:
        return clnet_fail(CLNET_ERR_OUT_OF_MEMORY, "%s: out of memory decoding a %d x %d %s",
                          s->name, r->width, r->height, format);
    case FAULT_LIBRARY:
        break;
    }
    return clnet_fail(CLNET_ERR_FORMAT, "%s: a damaged %s: %s says: %s", s->name, format, library,
                      r->message);
}

/* Room for the pixels of r's header, or FAULT_MEMORY. */
static int allocate_pixels(result *r) {
    size_t bytes = (size_t)r->width * (size_t)r->height * (size_t)r->channels;
    r->out->pixels = clnet_malloc(bytes);
    if (!r->out->pixels) {
        r->fault = FAULT_MEMORY;
        return 1;
    }
    r->out->width = r->width;
    r->out->height = r->height;
    r->out->channels = r->channels;
    return 0;
}

static int side_ok(long long side) {
    return side >= 1 && side <= CLNET_IMAGE_MAX_SIDE;
}

/* ---- PNG -------------------------------------------------------------------------------- */

typedef struct {
    source *src;
    result *r;
    jmp_buf jump;
    png_structp png;
    png_infop info;
    png_bytep *rows;
} png_job;

static void png_failed(png_structp png, png_const_charp message) {
    png_job *j = png_get_error_ptr(png);
    if (j->r->fault == FAULT_NONE) {
        j->r->fault = FAULT_LIBRARY;
        snprintf(j->r->message, sizeof j->r->message, "%s", message);
    }
    longjmp(j->jump, 1);
}

static void png_warned(png_structp png, png_const_charp message) {
    (void)png; /* warnings (a damaged ancillary chunk, skipped) are not printed */
    (void)message;
}

static void png_read_bytes(png_structp png, png_bytep to, size_t n) {
    png_job *j = png_get_io_ptr(png);
    source *s = j->src;
    if (s->bytes) {
        if (n > s->size - s->at) {
            j->r->fault = FAULT_TRUNCATED;
            png_error(png, "truncated");
        }
        memcpy(to, s->bytes + s->at, n);
        s->at += n;
        return;
    }
    if (fread(to, 1, n, s->file) != n) {
        j->r->fault = ferror(s->file) ? FAULT_READ : FAULT_TRUNCATED;
        j->r->error = errno;
        png_error(png, "read failed");
    }
}

/* Everything that calls libpng: 0 when done, 1 after a failure (j->r->fault says which). */
static int png_run(png_job *j) {
    if (setjmp(j->jump)) return 1;
    j->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, png_failed, png_warned);
    if (j->png) j->info = png_create_info_struct(j->png);
    if (!j->info) {
        j->r->fault = FAULT_MEMORY;
        return 1;
    }
    /* the IHDR check of png_sides already refused these; libpng checks them again */
    png_set_user_limits(j->png, CLNET_IMAGE_MAX_SIDE, CLNET_IMAGE_MAX_SIDE);
    png_set_read_fn(j->png, j, png_read_bytes);
    png_read_info(j->png, j->info);
    png_uint_32 width = 0, height = 0;
    int depth = 0, type = 0;
    png_get_IHDR(j->png, j->info, &width, &height, &depth, &type, NULL, NULL, NULL);
    result *r = j->r;
    r->width = (int)width;
    r->height = (int)height;
    r->channels = type & PNG_COLOR_MASK_COLOR ? 3 : 1; /* palette types have the colour bit */
    if (!r->out) return 0;

    if (depth == 16) png_set_strip_16(j->png); /* the high byte */
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(j->png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(j->png);
    /* alpha, and the alpha a tRNS chunk would expand to, is dropped whatever the type */
    png_set_strip_alpha(j->png);
    png_set_interlace_handling(j->png);
    png_read_update_info(j->png, j->info);
    size_t row = (size_t)r->width * (size_t)r->channels;
    if (png_get_rowbytes(j->png, j->info) != row ||
        png_get_channels(j->png, j->info) != r->channels) {
        r->fault = FAULT_LAYOUT;
        snprintf(r->message, sizeof r->message,
                 "libpng gives rows of %zu bytes in %d channels, not %zu in %d",
                 (size_t)png_get_rowbytes(j->png, j->info), png_get_channels(j->png, j->info), row,
                 r->channels);
        return 1;
    }
    j->rows = clnet_malloc((size_t)r->height * sizeof *j->rows);
    if (!j->rows || allocate_pixels(r)) {
        r->fault = FAULT_MEMORY;
        return 1;
    }
    for (int y = 0; y < r->height; y++) j->rows[y] = r->out->pixels + (size_t)y * row;
    png_read_image(j->png, j->rows);
    png_read_end(j->png, NULL); /* the chunks after the image, to IEND: a cut file fails */
    return 0;
}

/* The IHDR's sides from the file's first bytes, refused before libpng is called (a header
 * may claim up to 2^32 - 1); CLNET_OK too when there is no IHDR where it belongs (libpng will
 * say what is wrong). */
static clnet_status png_sides(const char *name, const unsigned char *head, size_t n) {
    if (n < 24 || memcmp(head + 12, "IHDR", 4) != 0) return CLNET_OK;
    unsigned long side[2];
    for (int k = 0; k < 2; k++) {
        const unsigned char *p = head + 16 + 4 * k; /* big-endian */
        side[k] =
            (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
    }
    if (side[0] == 0 || side[1] == 0)
        return clnet_fail(CLNET_ERR_FORMAT, "%s: a PNG of %lu x %lu pixels: a side of 0", name,
                          side[0], side[1]);
    if (side[0] > CLNET_IMAGE_MAX_SIDE || side[1] > CLNET_IMAGE_MAX_SIDE)
        return clnet_fail(CLNET_ERR_FORMAT,
                          "%s: a PNG of %lu x %lu pixels: a side over %d (CLNET_IMAGE_MAX_SIDE)",
                          name, side[0], side[1], CLNET_IMAGE_MAX_SIDE);
    return CLNET_OK;
}

static clnet_status decode_png(source *s, const unsigned char *head, size_t n, result *r) {
    clnet_status status = png_sides(s->name, head, n);
    if (status != CLNET_OK) return status;
    png_job j = {.src = s, .r = r};
    png_run(&j);
    png_destroy_read_struct(&j.png, &j.info, NULL);
    free(j.rows);
    return report(s, "PNG", "libpng", r);
}

/* ---- JPEG ------------------------------------------------------------------------------- */

typedef struct {
    struct jpeg_error_mgr err;
    struct jpeg_progress_mgr progress;
    struct jpeg_decompress_struct cinfo;
    int made; /* cinfo was created: destroy it */
    source *src;
    result *r;
    jmp_buf jump;
} jpeg_job;

static void jpeg_failed(j_common_ptr c) {
    jpeg_job *j = c->client_data;
    if (j->r->fault == FAULT_NONE) {
        j->r->fault = FAULT_LIBRARY;
        c->err->format_message(c, j->r->message);
    }
    longjmp(j->jump, 1);
}

/* libjpeg's warnings: not printed. Two are failures: the data ending early (JWRN_JPEG_EOF) and a
 * scan's data ending at a marker before its blocks do (JWRN_HIT_MARKER), after which libjpeg
 * would go on and fill the rest of the image with gray (so that a file of a few bytes could
 * claim, and cost, a whole 16384 x 16384 decode). The others (extraneous bytes before a marker,
 * say) leave the picture whole, and PIL accepts them too. */
static void jpeg_message(j_common_ptr c, int level) {
    int code = c->err->msg_code;
    if (level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER)) {
        jpeg_job *j = c->client_data;
        j->r->fault = FAULT_TRUNCATED;
        longjmp(j->jump, 1);
    }
}

static void jpeg_quiet(j_common_ptr c) {
    (void)c;
}

static void jpeg_progress(j_common_ptr c) {
    j_decompress_ptr d = (j_decompress_ptr)c;
    if (d->input_scan_number > MAX_SCANS) {
        jpeg_job *j = c->client_data;
        j->r->fault = FAULT_LIBRARY;
        snprintf(j->r->message, sizeof j->r->message, "more than %d scans (clnet's limit)",
                 MAX_SCANS);
        longjmp(j->jump, 1);
    }
}

/* Everything that calls libjpeg: 0 when done, 1 after a failure (j->r->fault says which). */
static int jpeg_run(jpeg_job *j) {
    if (setjmp(j->jump)) return 1;
    j_decompress_ptr c = &j->cinfo;
    c->err = jpeg_std_error(&j->err);
    j->err.error_exit = jpeg_failed;
    j->err.emit_message = jpeg_message;
    j->err.output_message = jpeg_quiet;
    c->client_data = j; /* jpeg_create_decompress keeps err and client_data */
    jpeg_create_decompress(c);
    j->made = 1;
    j->progress.progress_monitor = jpeg_progress;
    c->progress = &j->progress;
    if (j->src->bytes)
        jpeg_mem_src(c, j->src->bytes, (unsigned long)j->src->size);
    else
        jpeg_stdio_src(c, j->src->file);
    jpeg_read_header(c, TRUE);
    result *r = j->r;
    r->width = (int)c->image_width;
    r->height = (int)c->image_height;
    if (!side_ok(r->width) || !side_ok(r->height)) {
        r->fault = FAULT_SIDE;
        return 1;
    }
    switch (c->jpeg_color_space) {
    case JCS_GRAYSCALE:
        r->channels = 1;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        r->channels = 3;
        break;
    default:
        r->fault = FAULT_COLOUR;
        snprintf(r->message, sizeof r->message,
                 "a JPEG in %s: clnet decodes gray, YCbCr and RGB JPEGs only (convert it to RGB)",
                 c->jpeg_color_space == JCS_CMYK   ? "CMYK"
                 : c->jpeg_color_space == JCS_YCCK ? "YCCK"
                                                   : "an unknown colour space");
        return 1;
    }
    if (!r->out) return 0;

    c->out_color_space = r->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(c);
    if ((int)c->output_width != r->width || (int)c->output_height != r->height ||
        c->output_components != r->channels) {
        r->fault = FAULT_LAYOUT;
        snprintf(r->message, sizeof r->message, "libjpeg gives %u x %u pixels of %d channels",
                 c->output_width, c->output_height, c->output_components);
        return 1;
    }
    if (allocate_pixels(r)) return 1;
    size_t row = (size_t)r->width * (size_t)r->channels;
    while (c->output_scanline < c->output_height) {
        JSAMPROW at = r->out->pixels + (size_t)c->output_scanline * row;
        if (jpeg_read_scanlines(c, &at, 1) != 1) { /* only a suspending source returns 0 */
            r->fault = FAULT_TRUNCATED;
            return 1;
        }
    }
    jpeg_finish_decompress(c); /* reads on to the end marker: a cut file fails */
    return 0;
}

static clnet_status decode_jpeg(source *s, result *r) {
    jpeg_job j = {.src = s, .r = r};
    jpeg_run(&j);
    if (j.made) jpeg_destroy_decompress(&j.cinfo);
    return report(s, "JPEG", "libjpeg", r);
}

/* ---- telling the formats apart ---------------------------------------------------------- */

/* "not a PNG or JPEG: it begins with 3c 68 74 6d 6c 3e ("<html>")". */
static clnet_status neither(const char *name, const unsigned char *head, size_t n) {
    char hex[3 * 8 + 1] = "", text[8 + 1] = "";
    size_t shown = n < 8 ? n : 8, used = 0;
    for (size_t i = 0; i < shown; i++) {
        used += (size_t)snprintf(hex + used, sizeof hex - used, "%s%02x", i ? " " : "", head[i]);
        text[i] = head[i] >= 0x20 && head[i] < 0x7f ? (char)head[i] : '.';
        text[i + 1] = '\0';
    }
    return clnet_fail(CLNET_ERR_FORMAT,
                      "%s: not a PNG or JPEG file: it begins with %s (\"%s\"); a PNG begins "
                      "with 89 50 4e 47 0d 0a 1a 0a, a JPEG with ff d8 ff",
                      name, hex, text);
}

/* 1 when the n bytes of head are the start of `magic`, all of it or cut short. */
static int begins(const unsigned char *head, size_t n, const unsigned char *magic, size_t len) {
    return memcmp(head, magic, n < len ? n : len) == 0;
}

/* head: the first n bytes (all of them, or at least 33); s says where the rest is. */
static clnet_status decode(source *s, const unsigned char *head, size_t n, result *r) {
    if (n == 0) return clnet_fail(CLNET_ERR_FORMAT, "%s: an empty file (0 bytes)", s->name);
    int png = begins(head, n, PNG_SIGNATURE, sizeof PNG_SIGNATURE);
    int jpeg = begins(head, n, JPEG_START, sizeof JPEG_START);
    if (!png && !jpeg) return neither(s->name, head, n);
    if (n < (png ? sizeof PNG_SIGNATURE : sizeof JPEG_START))
        return clnet_fail(CLNET_ERR_FORMAT, "%s: truncated %s: %zu bytes, not even its signature",
                          s->name, png ? "PNG" : "JPEG", n);
    return png ? decode_png(s, head, n, r) : decode_jpeg(s, r);
}

/* ---- the API ---------------------------------------------------------------------------- */

clnet_status clnet_image_decode_bytes(const char *name, const void *bytes, size_t size,
                                      clnet_image *out) {
    if (!out)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_image_decode_bytes: out is NULL");
    memset(out, 0, sizeof *out);
    if (!name) name = "(image in memory)";
    if (!bytes && size)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "%s: %zu bytes at NULL", name, size);
    source s = {.name = name, .bytes = bytes ? bytes : (const void *)"", .size = size};
    result r = {.out = out};
    clnet_status status = decode(&s, s.bytes, size, &r);
    if (status != CLNET_OK) clnet_image_free(out);
    return status;
}

clnet_status clnet_image_decode_file(const char *path, clnet_image *out) {
    if (!out) return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_image_decode_file: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_image_decode_file: path is NULL");
    unsigned char *bytes = NULL;
    size_t size = 0;
    clnet_status status = clnet_read_file(path, &bytes, &size);
    if (status == CLNET_OK) status = clnet_image_decode_bytes(path, bytes, size, out);
    free(bytes);
    return status;
}

clnet_status clnet_image_probe_file(const char *path, int *width, int *height, int *channels) {
    clnet_status status = CLNET_OK;
    FILE *f = NULL;
    if (!path || !width || !height || !channels)
        return clnet_fail(CLNET_ERR_INVALID_ARGUMENT, "clnet_image_probe_file: a NULL argument");
    *width = *height = *channels = 0;
    f = fopen(path, "rb");
    if (!f) FAIL(CLNET_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        FAIL(CLNET_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) FAIL(CLNET_ERR_IO, "%s: not a regular file", path);
    unsigned char head[33]; /* PNG's signature and IHDR chunk */
    size_t n = fread(head, 1, sizeof head, f);
    if (ferror(f)) FAIL(CLNET_ERR_IO, "%s: read failed: %s", path, strerror(errno));
    rewind(f);
    source s = {.name = path, .file = f};
    result r = {0};
    TRY(decode(&s, head, n, &r));
    *width = r.width;
    *height = r.height;
    *channels = r.channels;
cleanup:
    if (f) fclose(f);
    return status;
}

void clnet_image_free(clnet_image *img) {
    if (!img) return;
    free(img->pixels);
    memset(img, 0, sizeof *img);
}
