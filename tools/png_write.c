/* png_write.c — see png_write.h. */
#include "png_write.h"
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vg_canvas *vg_canvas_new(int w, int h, vg_rgb bg) {
    if (w <= 0 || h <= 0 || w > 20000 || h > 20000) return NULL;
    vg_canvas *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->w = w; c->h = h;
    c->px = malloc((size_t)w * h * 3);
    if (!c->px) { free(c); return NULL; }
    for (size_t i = 0; i < (size_t)w * h; i++) { c->px[3 * i] = bg.r; c->px[3 * i + 1] = bg.g; c->px[3 * i + 2] = bg.b; }
    return c;
}
void vg_canvas_free(vg_canvas *c) { if (c) { free(c->px); free(c); } }

void vg_canvas_set(vg_canvas *c, int x, int y, vg_rgb col) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->px + 3 * ((size_t)y * c->w + x);
    p[0] = col.r; p[1] = col.g; p[2] = col.b;
}
void vg_canvas_blend(vg_canvas *c, int x, int y, vg_rgb col, double a) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    if (a < 0) a = 0;
    if (a > 1) a = 1;
    uint8_t *p = c->px + 3 * ((size_t)y * c->w + x);
    p[0] = (uint8_t)(p[0] * (1 - a) + col.r * a + .5);
    p[1] = (uint8_t)(p[1] * (1 - a) + col.g * a + .5);
    p[2] = (uint8_t)(p[2] * (1 - a) + col.b * a + .5);
}
void vg_canvas_fill(vg_canvas *c, int x, int y, int w, int h, vg_rgb col) {
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++) vg_canvas_set(c, i, j, col);
}
void vg_canvas_rect(vg_canvas *c, int x, int y, int w, int h, vg_rgb col) {
    vg_canvas_fill(c, x, y, w, 1, col); vg_canvas_fill(c, x, y + h - 1, w, 1, col);
    vg_canvas_fill(c, x, y, 1, h, col); vg_canvas_fill(c, x + w - 1, y, 1, h, col);
}
void vg_canvas_line(vg_canvas *c, int x0, int y0, int x1, int y1, vg_rgb col) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1, dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1, e = dx + dy;
    for (;;) {                                               /* Bresenham */
        vg_canvas_set(c, x0, y0, col);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) { e += dy; x0 += sx; }
        if (e2 <= dx) { e += dx; y0 += sy; }
    }
}

/* 5×7 glyphs, one byte per row, bit 4 = leftmost column */
typedef struct { char ch; uint8_t rows[7]; } glyph;
static const glyph font[] = {
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},   {'2', {14, 17, 1, 2, 4, 8, 31}},
    {'3', {31, 2, 4, 2, 1, 17, 14}},     {'4', {2, 6, 10, 18, 31, 2, 2}},  {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},    {'8', {14, 17, 17, 14, 17, 17, 14}},
    {'9', {14, 17, 17, 15, 1, 2, 12}},   {'A', {14, 17, 17, 31, 17, 17, 17}}, {'B', {30, 17, 17, 30, 17, 17, 30}},
    {'C', {14, 17, 16, 16, 16, 17, 14}}, {'D', {28, 18, 17, 17, 17, 18, 28}}, {'E', {31, 16, 16, 30, 16, 16, 31}},
    {'F', {31, 16, 16, 30, 16, 16, 16}}, {'G', {14, 17, 16, 23, 17, 17, 15}}, {'H', {17, 17, 17, 31, 17, 17, 17}},
    {'I', {14, 4, 4, 4, 4, 4, 14}},      {'J', {7, 2, 2, 2, 2, 18, 12}},   {'K', {17, 18, 20, 24, 20, 18, 17}},
    {'L', {16, 16, 16, 16, 16, 16, 31}}, {'M', {17, 27, 21, 21, 17, 17, 17}}, {'N', {17, 17, 25, 21, 19, 17, 17}},
    {'O', {14, 17, 17, 17, 17, 17, 14}}, {'P', {30, 17, 17, 30, 16, 16, 16}}, {'Q', {14, 17, 17, 17, 21, 18, 13}},
    {'R', {30, 17, 17, 30, 20, 18, 17}}, {'S', {15, 16, 16, 14, 1, 1, 30}}, {'T', {31, 4, 4, 4, 4, 4, 4}},
    {'U', {17, 17, 17, 17, 17, 17, 14}}, {'V', {17, 17, 17, 17, 17, 10, 4}}, {'W', {17, 17, 17, 21, 21, 21, 10}},
    {'X', {17, 17, 10, 4, 10, 17, 17}},  {'Y', {17, 17, 17, 10, 4, 4, 4}},  {'Z', {31, 1, 2, 4, 8, 16, 31}},
    {' ', {0, 0, 0, 0, 0, 0, 0}},        {'.', {0, 0, 0, 0, 0, 12, 12}},   {',', {0, 0, 0, 0, 12, 4, 8}},
    {'-', {0, 0, 0, 31, 0, 0, 0}},       {'+', {0, 4, 4, 31, 4, 4, 0}},    {':', {0, 12, 12, 0, 12, 12, 0}},
    {'(', {2, 4, 8, 8, 8, 4, 2}},        {')', {8, 4, 2, 2, 2, 4, 8}},     {'/', {0, 1, 2, 4, 8, 16, 0}},
    {'=', {0, 0, 31, 0, 31, 0, 0}},      {'%', {24, 25, 2, 4, 8, 19, 3}},  {'_', {0, 0, 0, 0, 0, 0, 31}},
    {'#', {10, 10, 31, 10, 31, 10, 10}}, {'?', {14, 17, 1, 2, 4, 0, 4}},   {'[', {14, 8, 8, 8, 8, 8, 14}},
    {']', {14, 2, 2, 2, 2, 2, 14}},      {'*', {0, 4, 21, 14, 21, 4, 0}},  {'>', {8, 4, 2, 1, 2, 4, 8}},
    {'<', {2, 4, 8, 16, 8, 4, 2}},
};
static const uint8_t *glyph_rows(char ch) {
    if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
    for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
        if (font[i].ch == ch) return font[i].rows;
    return glyph_rows('?');
}
int vg_text_width(const char *s, int scale) { int n = (int)strlen(s); return n ? (6 * n - 1) * scale : 0; }
void vg_canvas_text(vg_canvas *c, int x, int y, const char *s, vg_rgb col, int scale) {
    for (; *s; s++, x += 6 * scale) {
        const uint8_t *r = glyph_rows(*s);
        for (int j = 0; j < 7; j++)
            for (int i = 0; i < 5; i++)
                if (r[j] & (16 >> i)) vg_canvas_fill(c, x + i * scale, y + j * scale, scale, scale, col);
    }
}

void vg_canvas_image(vg_canvas *c, int x, int y, const uint8_t *chw, int C, int h, int w, int zoom) {
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            size_t o = (size_t)j * w + i, hw = (size_t)h * w;
            vg_rgb p = C >= 3 ? (vg_rgb){chw[o], chw[hw + o], chw[2 * hw + o]} : (vg_rgb){chw[o], chw[o], chw[o]};
            vg_canvas_fill(c, x + i * zoom, y + j * zoom, zoom, zoom, p);
        }
}

vg_rgb vg_colormap(double t) {
    static const double v[9][3] = {   /* viridis at 0, 1/8, …, 1 */
        {68, 1, 84}, {71, 44, 122}, {59, 81, 139}, {44, 113, 142}, {33, 144, 141},
        {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37}};
    if (!(t > 0)) t = 0;                                     /* also NaN */
    if (t > 1) t = 1;
    double f = t * 8; int k = (int)f; if (k > 7) k = 7;
    f -= k;
    return (vg_rgb){(uint8_t)(v[k][0] + f * (v[k + 1][0] - v[k][0]) + .5),
                    (uint8_t)(v[k][1] + f * (v[k + 1][1] - v[k][1]) + .5),
                    (uint8_t)(v[k][2] + f * (v[k + 1][2] - v[k][2]) + .5)};
}

int vg_canvas_write_png(const vg_canvas *c, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) { snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno)); return -1; }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) { png_destroy_write_struct(&png, &info); fclose(f); snprintf(err, errlen, "%s: out of memory", path); return -1; }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info); fclose(f);
        snprintf(err, errlen, "%s: libpng failed while writing", path);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 9);
    png_write_info(png, info);
    for (int y = 0; y < c->h; y++) png_write_row(png, c->px + (size_t)y * c->w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f)) { snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno)); return -1; }
    return 0;
}
