/* png_write.h — a tiny RGB canvas for ./inspect's pictures: rectangles, lines, a built-in 5×7
 * bitmap font (digits, capital letters — lower case is drawn as capitals — and . , - + : ( ) / = % _ #),
 * a colour map, and a PNG writer on libpng. No other drawing dependency. */
#ifndef VG_PNG_WRITE_H
#define VG_PNG_WRITE_H
#include <stddef.h>
#include <stdint.h>

typedef struct { int w, h; uint8_t *px; } vg_canvas;     /* px: h rows of w RGB triples */
typedef struct { uint8_t r, g, b; } vg_rgb;

#define VG_WHITE ((vg_rgb){255, 255, 255})
#define VG_BLACK ((vg_rgb){0, 0, 0})
#define VG_GRAY  ((vg_rgb){160, 160, 160})

vg_canvas *vg_canvas_new(int w, int h, vg_rgb bg);         /* NULL if too large / out of memory */
void vg_canvas_free(vg_canvas *c);
void vg_canvas_set(vg_canvas *c, int x, int y, vg_rgb col);  /* clipped */
/* alpha-blend col over the pixel, a in [0, 1] */
void vg_canvas_blend(vg_canvas *c, int x, int y, vg_rgb col, double a);
void vg_canvas_fill(vg_canvas *c, int x, int y, int w, int h, vg_rgb col);
void vg_canvas_rect(vg_canvas *c, int x, int y, int w, int h, vg_rgb col);   /* 1-px outline */
void vg_canvas_line(vg_canvas *c, int x0, int y0, int x1, int y1, vg_rgb col);
/* text with its top-left corner at (x, y); each font pixel drawn as scale × scale */
void vg_canvas_text(vg_canvas *c, int x, int y, const char *s, vg_rgb col, int scale);
int  vg_text_width(const char *s, int scale);                /* 6·scale per character − scale */
#define VG_TEXT_HEIGHT(scale) (7 * (scale))
/* Draw a (C, h, w) uint8 image (C = 1 or 3) at (x, y), each pixel as a zoom × zoom block. */
void vg_canvas_image(vg_canvas *c, int x, int y, const uint8_t *chw, int C, int h, int w, int zoom);
/* A perceptual colour map (viridis, 9 control points interpolated), t clamped to [0, 1]. */
vg_rgb vg_colormap(double t);
/* Write the canvas as an 8-bit RGB PNG. 0, or -1 with err naming the file. */
int vg_canvas_write_png(const vg_canvas *c, const char *path, char *err, size_t errlen);
#endif
