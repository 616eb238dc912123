/* make_seeds.c — writes the seed corpora fuzz/corpus/<harness>/seed-* : tiny valid files of every
 * kind each reader accepts, plus a few edge cases. `make fuzz-seeds` builds and runs it; the
 * output is committed (the same bytes every run). Inputs the campaign found are added next to
 * them by `fuzz/run.sh --merge` (named by their SHA-1, as libFuzzer names them). */
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <stb/stb_image_write.h>

static const char *root = "fuzz/corpus";

static void die(const char *what) { fprintf(stderr, "make_seeds: %s\n", what); exit(1); }

static void put(const char *harness, const char *name, const void *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, harness); mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed-%s", root, harness, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) die(path);
}

/* a growable byte buffer */
typedef struct { uint8_t *p; size_t n, cap; } bytes;
static void add(bytes *b, const void *p, size_t n) {
    if (b->n + n > b->cap) { b->cap = (b->n + n) * 2 + 64; b->p = realloc(b->p, b->cap); if (!b->p) die("oom"); }
    memcpy(b->p + b->n, p, n); b->n += n;
}
static void add_u8(bytes *b, int v) { uint8_t c = (uint8_t)v; add(b, &c, 1); }
static void add_u16(bytes *b, size_t v) { add_u8(b, (int)(v & 255)); add_u8(b, (int)(v >> 8)); }
static void add_be32(bytes *b, uint32_t v) { uint8_t c[4] = {v >> 24, v >> 16, v >> 8, v}; add(b, c, 4); }

static bytes slurp(const char *path) {
    bytes b = {0};
    FILE *f = fopen(path, "rb");
    if (!f) die(path);
    uint8_t buf[4096]; size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) add(&b, buf, k);
    fclose(f);
    return b;
}

/* ---- safetensors ---- */
static bytes st_bytes(vg_st_writer *w) {
    char err[512], tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/vitgrad-seed-%d.safetensors", (int)getpid());
    if (vg_st_write(w, tmp, err, sizeof err)) die(err);
    vg_st_writer_free(w);
    bytes b = slurp(tmp);
    remove(tmp);
    return b;
}
static void raw_st(const char *name, const char *json, const void *data, size_t n) {
    bytes b = {0};
    uint64_t h = strlen(json);
    add(&b, &h, 8); add(&b, json, h); add(&b, data, n);
    put("safetensors", name, b.p, b.n); free(b.p);
}
static void safetensors_seeds(void) {
    char err[512];
    vg_st_writer *w = vg_st_writer_new();
    float f32[6] = {1, -2, 3.5f, 0, 1e-3f, -7};
    double f64[2] = {1.0 / 3, -1e300};
    uint16_t f16[3] = {0x3c00, 0x8001, 0x7c00}, bf16[2] = {0x3f80, 0xff80};
    int64_t i64 = 42, shape23[2] = {2, 3}, shape2[1] = {2}, shape3[1] = {3}, shape0[1] = {0};
    int32_t i32[3] = {-1, 0, 7};
    uint8_t u8[2] = {0, 255};
    vg_st_writer_add(w, "weight", VG_ST_F32, 2, shape23, f32, sizeof f32, err, sizeof err);
    vg_st_writer_add(w, "step", VG_ST_I64, 0, NULL, &i64, 8, err, sizeof err);
    vg_st_writer_add(w, "d", VG_ST_F64, 1, shape2, f64, sizeof f64, err, sizeof err);
    vg_st_writer_add(w, "h", VG_ST_F16, 1, shape3, f16, sizeof f16, err, sizeof err);
    vg_st_writer_add(w, "b", VG_ST_BF16, 1, shape2, bf16, sizeof bf16, err, sizeof err);
    vg_st_writer_add(w, "i", VG_ST_I32, 1, shape3, i32, sizeof i32, err, sizeof err);
    vg_st_writer_add(w, "u", VG_ST_U8, 1, shape2, u8, sizeof u8, err, sizeof err);
    vg_st_writer_add(w, "empty", VG_ST_F32, 1, shape0, NULL, 0, err, sizeof err);
    vg_st_writer_meta(w, "format", "pt", err, sizeof err);
    vg_st_writer_meta(w, "note", "caf\xc3\xa9 \"quoted\"\n", err, sizeof err);
    bytes b = st_bytes(w);
    put("safetensors", "all-dtypes", b.p, b.n); free(b.p);
    raw_st("empty-header", "{}", NULL, 0);
    raw_st("escapes", "{\"\\u00e9\\n\\\"x\\\\\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1], "
                      "\"extra\": [1, {\"a\": null}, true, false, -1.5e3]}}  ", "z", 1);
    raw_st("overlap", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", "abc", 3);
    raw_st("bad-length", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", "abcd", 4);
    raw_st("meta-only", "{\"__metadata__\":{\"k\":\"v\",\"k2\":\"\\ud83d\\ude00\"}}", NULL, 0);
    /* checksums (the writer's crc32c.* keys): one that matches, one that does not, one for a
     * tensor that is not there (all-dtypes above has one per tensor, as the writer records them) */
    char json[256];
    snprintf(json, sizeof json, "{\"__metadata__\":{\"crc32c.a\":\"%08x\"},\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}",
             (unsigned)vg_crc32c("abc", 3));
    raw_st("crc-match", json, "abc", 3);
    raw_st("crc-mismatch", "{\"__metadata__\":{\"crc32c.a\":\"364b3fb7\"},\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}", "abd", 3);
    raw_st("crc-no-tensor", "{\"__metadata__\":{\"crc32c.b\":\"00000000\"},\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", "a", 1);
}

/* ---- checkpoint: tiny ViTs written as ./train writes model.safetensors ---- */
static void checkpoint_seed_as(const char *name, vg_vit_config c, bool meta) {
    char err[512];
    vg_vit m;
    vg_rng rng = vg_rng_seed(1);
    if (!vg_vit_init(&m, &c, &rng)) die(vg_error());
    vg_params st = {0};
    vg_vit_state(&m, &st);
    vg_st_writer *w = vg_st_writer_new();
    if ((meta && vg_vit_config_to_meta(&m.cfg, w, err, sizeof err)) || vg_params_to_writer(&st, w, err, sizeof err)) die(err);
    bytes b = st_bytes(w);
    put("checkpoint", name, b.p, b.n); free(b.p);
    vg_params_free(&st);
    vg_vit_free(&m);
}
static void checkpoint_seed(const char *name, vg_vit_config c) { checkpoint_seed_as(name, c, true); }
static void checkpoint_seeds(void) {
    vg_vit_config c = vg_vit_config_default();
    c.img_size = 4; c.patch_size = 2; c.in_chans = 3; c.num_classes = 2;
    c.embed_dim = 4; c.depth = 1; c.num_heads = 2; c.mlp_ratio = 1;
    checkpoint_seed("tiny-cls-learned", c);
    c.in_chans = 1; c.pool = VG_VIT_POOL_MEAN; c.pos_embed = VG_VIT_POS_SINCOS2D; c.qkv_bias = false;
    c.depth = 2; c.num_heads = 1; c.mlp_ratio = 0.5; c.patch_size = 4;
    checkpoint_seed("tiny-mean-sincos", c);
    /* timm's layouts: with vitgrad metadata, and bare state dicts (read from their shapes) */
    c = vg_vit_config_default();
    c.img_size = 4; c.patch_size = 2; c.in_chans = 1; c.num_classes = 0; c.embed_dim = 4; c.depth = 1;
    c.num_heads = 1; c.mlp_ratio = 1; c.class_token = false; c.reg_tokens = 2; c.no_embed_class = true;
    c.fc_norm = true; c.init_values = 0.1; c.pool = VG_VIT_POOL_MEAN;
    checkpoint_seed("timm-gap-reg-layerscale-nohead", c);
    c.class_token = true; c.reg_tokens = 1; c.fc_norm = false; c.num_classes = 2; c.pool = VG_VIT_POOL_CLS;
    checkpoint_seed_as("timm-bare-cls-reg-noembed", c, false);
    c.class_token = false; c.reg_tokens = 2; c.no_embed_class = false; c.fc_norm = true; c.init_values = 0;
    c.qkv_bias = false; c.pool = VG_VIT_POOL_MEAN;
    checkpoint_seed_as("timm-bare-gap", c, false);
}

/* ---- CIFAR-10 ---- */
static void cifar_seeds(void) {
    bytes b = {0};
    add_u8(&b, 0);                                      /* no batches.meta.txt */
    for (int r = 0; r < 2; r++) {
        add_u8(&b, r * 9);
        for (int i = 0; i < 3072; i++) add_u8(&b, (i * 7 + r) & 255);
    }
    put("cifar10", "two-records", b.p, b.n); b.n = 0;
    const char *meta = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    add_u8(&b, (int)strlen(meta)); add(&b, meta, strlen(meta));
    add_u8(&b, 3);
    for (int i = 0; i < 3072; i++) add_u8(&b, i & 255);
    put("cifar10", "with-meta", b.p, b.n); b.n = 0;
    add_u8(&b, 0); add_u8(&b, 10);                       /* label 10: refused */
    for (int i = 0; i < 3072; i++) add_u8(&b, 0);
    put("cifar10", "bad-label", b.p, b.n); b.n = 0;
    add_u8(&b, 0); for (int i = 0; i < 100; i++) add_u8(&b, 1);   /* truncated record */
    put("cifar10", "truncated", b.p, b.n);
    free(b.p);
}

/* ---- IDX: raw and gzip ---- */
static bytes gz(const bytes *in) {
    gzFile g = gzopen("build/seed.gz", "wb9");
    if (!g || gzwrite(g, in->p, (unsigned)in->n) != (int)in->n || gzclose(g) != Z_OK) die("gzip");
    bytes b = slurp("build/seed.gz");
    remove("build/seed.gz");
    return b;
}
static void idx_pair(const char *name, const bytes *img, const bytes *lab) {
    bytes b = {0};
    add_u16(&b, img->n); add(&b, img->p, img->n); add(&b, lab->p, lab->n);
    put("idx", name, b.p, b.n); free(b.p);
}
static void idx_seeds(void) {
    bytes img = {0}, lab = {0};
    add_be32(&img, 0x803); add_be32(&img, 2); add_be32(&img, 3); add_be32(&img, 4);
    for (int i = 0; i < 24; i++) add_u8(&img, i * 10);
    add_be32(&lab, 0x801); add_be32(&lab, 2); add_u8(&lab, 1); add_u8(&lab, 9);
    idx_pair("raw", &img, &lab);
    bytes gi = gz(&img), gl = gz(&lab);
    idx_pair("gzip", &gi, &gl);
    lab.n -= 1;                                          /* a label short: refused */
    idx_pair("short-labels", &img, &lab);
    free(img.p); free(lab.p); free(gi.p); free(gl.p);
}

/* ---- images ---- */
static void png_variant(bytes *out, int w, int h, int color, int depth, int interlace) {
    FILE *f = fopen("build/seed.png", "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (!f || !png || !info || setjmp(png_jmpbuf(png))) die("libpng");
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color, interlace, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
        png_set_PLTE(png, info, pal, 4);
        png_byte trns[1] = {128};
        png_set_tRNS(png, info, trns, 1, NULL);
    }
    png_write_info(png, info);
    int ch = color == PNG_COLOR_TYPE_RGB ? 3 : color == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    size_t rowbytes = ((size_t)w * ch * depth + 7) / 8;
    uint8_t row[256];
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++) {
            for (size_t i = 0; i < rowbytes; i++) row[i] = (uint8_t)(i * 37 + y * 11 + (depth < 8 ? 0x5a : 0));
            png_write_row(png, row);
        }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    *out = slurp("build/seed.png");
    remove("build/seed.png");
}
static bytes stb_file(const char *kind, int w, int h, int comp) {
    uint8_t px[8 * 8 * 4];
    for (int i = 0; i < w * h * comp; i++) px[i] = (uint8_t)(i * 29);
    int ok = !strcmp(kind, "jpg") ? stbi_write_jpg("build/seed.img", w, h, comp, px, 90)
           : !strcmp(kind, "bmp") ? stbi_write_bmp("build/seed.img", w, h, comp, px)
           : !strcmp(kind, "tga") ? stbi_write_tga("build/seed.img", w, h, comp, px)
           : stbi_write_png("build/seed.img", w, h, comp, px, 0);
    if (!ok) die(kind);
    bytes b = slurp("build/seed.img");
    remove("build/seed.img");
    return b;
}
static void image_seeds(void) {
    static const struct { const char *name; int w, h, color, depth, interlace; } pngs[] = {
        {"png-rgb8", 3, 2, PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE},
        {"png-gray1", 9, 3, PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_NONE},
        {"png-palette-trns", 4, 4, PNG_COLOR_TYPE_PALETTE, 2, PNG_INTERLACE_NONE},
        {"png-rgba16-interlaced", 5, 5, PNG_COLOR_TYPE_RGB_ALPHA, 16, PNG_INTERLACE_ADAM7},
        {"png-graya8", 2, 3, PNG_COLOR_TYPE_GRAY_ALPHA, 8, PNG_INTERLACE_NONE},
    };
    for (size_t i = 0; i < sizeof pngs / sizeof *pngs; i++) {
        bytes b; png_variant(&b, pngs[i].w, pngs[i].h, pngs[i].color, pngs[i].depth, pngs[i].interlace);
        put("image_decode", pngs[i].name, b.p, b.n); free(b.p);
    }
    static const struct { const char *kind, *name; int w, h, comp; } stb[] = {
        {"jpg", "jpeg-rgb", 8, 8, 3}, {"jpg", "jpeg-gray", 5, 3, 1}, {"bmp", "bmp-rgba", 3, 2, 4},
        {"tga", "tga-rgb", 2, 2, 3},
    };
    for (size_t i = 0; i < sizeof stb / sizeof *stb; i++) {
        bytes b = stb_file(stb[i].kind, stb[i].w, stb[i].h, stb[i].comp);
        put("image_decode", stb[i].name, b.p, b.n); free(b.p);
    }
    static const uint8_t gif[] = {          /* 1x1 GIF89a, one palette entry */
        'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 255, 0, 0, 0, 0, 0,
        0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0, 0x3b};
    put("image_decode", "gif", gif, sizeof gif);
    static const char pnm[] = "P6\n2 1\n255\n\x01\x02\x03\xfd\xfe\xff";
    put("image_decode", "ppm", pnm, sizeof pnm - 1);
    static const char hdr[] = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 2\n\x80\x80\x80\x81\x40\x40\x40\x80";
    put("image_decode", "hdr", hdr, sizeof hdr - 1);
    static const uint8_t trunc_png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    put("image_decode", "png-truncated", trunc_png, sizeof trunc_png);
}

/* ---- image folders (records as fuzz_imagefolder.c reads them) ---- */
static void rec_name(bytes *b, int op, const char *name) { add_u8(b, op); add_u8(b, (int)strlen(name)); add(b, name, strlen(name)); }
static void rec_content(bytes *b, int op, const bytes *content) { add_u8(b, op); add_u16(b, content->n); add(b, content->p, content->n); }
static void rec_file(bytes *b, int op, const char *name, const bytes *content) {
    rec_name(b, op, name); add_u16(b, content->n); add(b, content->p, content->n);
}
static void imagefolder_seeds(void) {
    bytes png, jpg = stb_file("jpg", 6, 4, 3), b = {0};
    png_variant(&png, 3, 2, PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE);
    /* train/{cat,dog}, val/{cat,dog} */
    rec_name(&b, 0, "cat"); rec_file(&b, 1, "a.png", &png); rec_file(&b, 1, "b.jpg", &jpg);
    rec_name(&b, 0, "dog"); rec_file(&b, 1, "c.png", &png);
    rec_name(&b, 8, "cat"); rec_file(&b, 9, "d.jpg", &jpg);
    rec_name(&b, 8, "dog"); rec_file(&b, 9, "e.png", &png);
    put("imagefolder", "two-classes", b.p, b.n);
    /* with classes.txt (index wnid name), a corrupt file, a directory and a dangling symlink */
    bytes txt = {0};
    const char *t = "0 n01 tench fish\n1 n02 goldfish\n";
    add(&txt, t, strlen(t));
    b.n = 0;
    rec_content(&b, 2, &txt);
    rec_name(&b, 0, "n01"); rec_file(&b, 1, "x.png", &png);
    bytes junk = {0}; add(&junk, "not an image", 12);
    rec_file(&b, 1, "junk.jpg", &junk); rec_name(&b, 3, "subdir"); rec_name(&b, 4, "dangling"); add_u8(&b, 0);
    rec_name(&b, 0, "n02"); rec_file(&b, 1, "y.jpg", &jpg); rec_file(&b, 1, ".hidden", &junk);
    rec_name(&b, 8, "n02"); rec_file(&b, 9, "z.png", &png);
    put("imagefolder", "classes-txt-odd-files", b.p, b.n);
    /* a val folder that is not a class, and a stray file in train/ */
    b.n = 0;
    rec_name(&b, 0, "a"); rec_file(&b, 1, "1.png", &png);
    rec_file(&b, 5, "stray.txt", &junk);
    rec_name(&b, 8, "b"); rec_file(&b, 9, "2.png", &png);
    put("imagefolder", "unknown-val-class", b.p, b.n);
    free(png.p); free(jpg.p); free(b.p); free(txt.p); free(junk.p);
}

int main(void) {
    mkdir(root, 0755);
    safetensors_seeds();
    checkpoint_seeds();
    cifar_seeds();
    idx_seeds();
    image_seeds();
    imagefolder_seeds();
    printf("seed corpora written under %s/\n", root);
    return 0;
}
