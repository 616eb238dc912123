/* image_decode.c — JPEG via stb_image, PNG via libpng, recognised by their signatures.
 * Output is always RGB, (3, h, w) uint8: gray and palette images are expanded, alpha is dropped
 * (not composited), 16-bit PNG samples are scaled to 8 bits.
 * stb_image would also read BMP, GIF, TGA, PSD, HDR, PIC and PNM; we hand it JPEGs only, so that
 * a file in an image folder reaches no more decoder code than a JPEG/PNG dataset needs (fuzz/). */
#include "data/internal.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stb/stb_image.h>

#define MAX_SIDE 65536
#define MAX_PIXELS ((size_t)1 << 28)
/* How many pixels a file of n bytes can code at most; a header claiming more means a truncated
 * or damaged file, refused before the decoder allocates the image (stb_image would decode the
 * missing part as zeros: a 100-byte file declaring 60000x60000 cost 10 GB and a minute).
 * PNG: deflate expands at most 1032:1 and a 1-bit pixel takes 1/8 byte → 8256 per byte.
 * JPEG: every 8x8 block of the full-resolution component costs at least one bit → 512 per byte.
 * Both bounds with a margin of 2. */
#define PNG_MAX_PIXELS_PER_BYTE  16512
#define JPEG_MAX_PIXELS_PER_BYTE 1024

/* HWC interleaved (n channels) -> CHW RGB */
static uint8_t *to_chw_rgb(const uint8_t *hwc, int h, int w, int n) {
    size_t hw = (size_t)h * w;
    uint8_t *out = malloc(3 * hw);
    if (!out) return NULL;
    for (size_t k = 0; k < hw; k++)
        for (int c = 0; c < 3; c++) out[c * hw + k] = hwc[k * n + (n >= 3 ? c : 0)];
    return out;
}

/* ---- PNG through libpng, reading from memory ---- */
typedef struct { const uint8_t *p; size_t len, at; char *msg; size_t msglen; } png_src;

static void png_read_mem(png_structp png, png_bytep out, size_t n) {
    png_src *s = png_get_io_ptr(png);
    if (s->len - s->at < n) png_error(png, "unexpected end of data (truncated PNG)");
    memcpy(out, s->p + s->at, n);
    s->at += n;
}
static void png_on_error(png_structp png, png_const_charp msg) {
    png_src *s = png_get_error_ptr(png);
    snprintf(s->msg, s->msglen, "%s", msg);
    png_longjmp(png, 1);
}
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

static int decode_png(const uint8_t *buf, size_t len, const char *name, uint8_t **chw, int *h, int *w,
                      int *src_channels, char *err, size_t errlen) {
    char msg[256] = "unknown libpng error";
    png_src src = {buf, len, 0, msg, sizeof msg};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) { png_destroy_read_struct(&png, &info, NULL); return vg__err(err, errlen, "%s: out of memory in libpng", name); }
    uint8_t *volatile pix = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(pix); free(rows);
        return vg__err(err, errlen, "%s: corrupt PNG: %s", name, msg);
    }
    png_set_read_fn(png, &src, png_read_mem);
    png_read_info(png, info);
    png_uint_32 pw = png_get_image_width(png, info), ph = png_get_image_height(png, info);
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (pw == 0 || ph == 0 || pw > MAX_SIDE || ph > MAX_SIDE || (size_t)pw * ph > MAX_PIXELS)
        png_error(png, "implausible image size");
    if ((size_t)pw * ph / PNG_MAX_PIXELS_PER_BYTE > len) png_error(png, "image size too large for the file (truncated PNG)");
    *src_channels = color == PNG_COLOR_TYPE_GRAY ? 1 : color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                  : color == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 3;
    if (depth == 16) png_set_scale_16(png);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    /* a palette's tRNS chunk becomes an alpha channel when the palette is expanded: drop it too */
    if ((color & PNG_COLOR_MASK_ALPHA) || (color == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS)))
        png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)pw * 3) png_error(png, "unexpected row layout after conversion to RGB");
    pix = malloc((size_t)pw * ph * 3);
    rows = malloc(ph * sizeof(png_bytep));
    if (!pix || !rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < ph; y++) rows[y] = pix + (size_t)y * pw * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    *chw = to_chw_rgb(pix, (int)ph, (int)pw, 3);
    free(pix);
    if (!*chw) return vg__err(err, errlen, "%s: out of memory", name);
    *h = (int)ph; *w = (int)pw;
    return 0;
}

/* Walk the marker segments as stb_image reads them, entropy-coded data included (progressive
 * JPEGs define tables between scans), and refuse two things stb_image does not:
 *  - a DHT segment declaring more than 256 codes: stb_image 2.27 (Debian 12's libstb) writes past
 *    its Huffman tables (fuzz/regressions/image_decode/jpeg-dht-over-256-codes; upstream checks
 *    this since 2.28);
 *  - no end-of-image marker: a truncated file, whose missing part stb_image decodes as gray
 *    (PIL, hence torchvision's ImageFolder, refuses truncated JPEGs too).
 * NULL if the file is fine, else what is wrong. */
static const char *jpeg_structure_check(const uint8_t *b, size_t n) {
    size_t at = 2;                                      /* after SOI */
    while (at + 1 < n) {
        if (b[at] != 0xff) { at++; continue; }          /* entropy-coded data */
        uint8_t m = b[at + 1];
        if (m == 0xff) { at++; continue; }              /* fill byte */
        if (m == 0x00 || m == 0x01 || (m >= 0xd0 && m <= 0xd8)) { at += 2; continue; }  /* no length */
        if (m == 0xd9) return NULL;                     /* EOI */
        if (at + 4 > n) break;
        size_t len = (size_t)b[at + 2] << 8 | b[at + 3];
        if (len < 2) return "marker segment shorter than its length field";
        if (m == 0xc4) {                                /* DHT: tables of 1 + 16 + (sum of counts) bytes */
            long left = (long)len - 2;
            for (size_t p = at + 4; left > 0;) {
                size_t codes = 0;
                for (size_t i = 1; i <= 16; i++) codes += p + i < n ? b[p + i] : 0;
                if (codes > 256) return "Huffman table with more than 256 codes";
                left -= 17 + (long)codes;
                p += 17 + codes;
            }
        }
        at += 2 + len;
    }
    return "truncated (no end-of-image marker)";
}

int vg_image_decode_memory(const uint8_t *buf, size_t len, const char *name, uint8_t **chw, int *h,
                           int *w, int *src_channels, char *err, size_t errlen) {
    *chw = NULL; *h = *w = 0; *src_channels = 0;
    if (len == 0) return vg__err(err, errlen, "%s: empty file, not an image", name);
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len >= 8 && !memcmp(buf, png_sig, 8))
        return decode_png(buf, len, name, chw, h, w, src_channels, err, errlen);
    int is_jpeg = len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff;
    if (!is_jpeg)
        return vg__err(err, errlen, "%s: not a recognized image (first bytes %02x %02x %02x %02x; expected JPEG or PNG)",
                       name, buf[0], len > 1 ? buf[1] : 0, len > 2 ? buf[2] : 0, len > 3 ? buf[3] : 0);
    if (len > (size_t)0x7fffffff) return vg__err(err, errlen, "%s: file too large", name);
    const char *why = jpeg_structure_check(buf, len);
    if (why) return vg__err(err, errlen, "%s: corrupt JPEG: %s", name, why);
    int iw, ih, n;
    if (!stbi_info_from_memory(buf, (int)len, &iw, &ih, &n))
        return vg__err(err, errlen, "%s: corrupt JPEG header (%s)", name, stbi_failure_reason());
    if (iw <= 0 || ih <= 0 || iw > MAX_SIDE || ih > MAX_SIDE || (size_t)iw * ih > MAX_PIXELS)
        return vg__err(err, errlen, "%s: implausible image size %dx%d", name, iw, ih);
    if ((size_t)iw * ih / JPEG_MAX_PIXELS_PER_BYTE > len)
        return vg__err(err, errlen, "%s: truncated JPEG: %dx%d pixels cannot be coded in %zu bytes", name, iw, ih, len);
    uint8_t *hwc = stbi_load_from_memory(buf, (int)len, &iw, &ih, &n, 3);
    if (!hwc) return vg__err(err, errlen, "%s: corrupt JPEG (%s)", name, stbi_failure_reason());
    *src_channels = n;
    *chw = to_chw_rgb(hwc, ih, iw, 3);
    stbi_image_free(hwc);
    if (!*chw) return vg__err(err, errlen, "%s: out of memory", name);
    *h = ih; *w = iw;
    return 0;
}

int vg_image_decode_file(const char *path, uint8_t **chw, int *h, int *w, int *src_channels,
                         char *err, size_t errlen) {
    uint8_t *buf; size_t len;
    *chw = NULL;
    if (vg__read_file(path, &buf, &len, err, errlen)) return -1;
    int r = vg_image_decode_memory(buf, len, path, chw, h, w, src_channels, err, errlen);
    free(buf);
    return r;
}
