/* test_data.c — datasets, decoding, transforms and the loader.
 * Small files in every format are written to a mkdtemp directory by the tests themselves; the real
 * data comes from $CIFAR10_DIR, $IMAGENET_SUBSET_DIR, $FASHION_MNIST_DIR (with fallbacks). */
#include "tests/test.h"
#include "data/data.h"
#include <ftw.h>
#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <stb/stb_image_write.h>

/* ---------- helpers ---------- */
static int is_dir(const char *p) { struct stat st; return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

static const char *data_dir(const char *env, const char *rel, const char *abs_path) {
    const char *e = getenv(env);
    if (e && *e && is_dir(e)) return e;
    if (is_dir(rel)) return rel;
    if (is_dir(abs_path)) return abs_path;
    return NULL;
}
#define CIFAR_DIR()    data_dir("CIFAR10_DIR", "../shared/data/cifar-10-batches-bin", "/work/shared/data/cifar-10-batches-bin")
#define IMAGENET_DIR() data_dir("IMAGENET_SUBSET_DIR", "../shared/data/imagenet-subset", "/work/shared/data/imagenet-subset")
#define FASHION_DIR()  data_dir("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist", "/usr/share/datasets/fashion-mnist")

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) { (void)sb; (void)flag; (void)f; return remove(p); }
static void rm_rf(const char *dir) { nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static char *make_tmp(char *buf, size_t n) {
    const char *t = getenv("TMPDIR");
    snprintf(buf, n, "%s/vg_data_XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(buf);
}
static void pjoin(char *out, size_t n, const char *a, const char *b) {
    if (snprintf(out, n, "%s/%s", a, b) >= (int)n) out[n - 1] = 0;
}
static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}
static int write_gz(const char *path, const void *p, size_t n) {
    gzFile g = gzopen(path, "wb");
    if (!g) return -1;
    int w = gzwrite(g, p, (unsigned)n);
    gzclose(g);
    return w == (int)n ? 0 : -1;
}
static int write_png(const char *path, int w, int h, png_uint_32 format, const void *pix, const void *cmap, int entries) {
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION; im.width = (png_uint_32)w; im.height = (png_uint_32)h;
    im.format = format; im.colormap_entries = (png_uint_32)entries;
    return png_image_write_to_file(&im, path, 0, pix, 0, cmap) ? 0 : -1;
}
static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }
/* the error names the file and says what was wrong */
#define CHECK_ERR(ok_is_null, err, what_file, what_problem)                                        \
    do {                                                                                         \
        CHECK(ok_is_null);                                                                       \
        CHECK_MSG(contains(err, what_file), "error does not name '%s': %s", what_file, err);     \
        CHECK_MSG(contains(err, what_problem), "error does not say '%s': %s", what_problem, err); \
    } while (0)

/* an in-memory dataset: n images (C, h, w) of pseudo-random bytes, label i % 10 */
static vg_dataset *toy_dataset(int n, int C, int h, int w, uint32_t seed) {
    vg_dataset *d = calloc(1, sizeof *d);
    snprintf(d->name, sizeof d->name, "toy"); snprintf(d->path, sizeof d->path, "toy");
    d->n = n; d->channels = C; d->height = h; d->width = w; d->n_classes = 10;
    d->labels = malloc((size_t)n * sizeof *d->labels);
    d->pixels = malloc((size_t)n * C * h * w);
    uint32_t x = seed;
    for (size_t i = 0; i < (size_t)n * C * h * w; i++) { x = x * 1664525u + 1013904223u; d->pixels[i] = (uint8_t)(x >> 24); }
    for (int i = 0; i < n; i++) d->labels[i] = i % 10;
    for (int c = 0; c < 3; c++) { d->mean[c] = 0.5f; d->std[c] = 0.25f; }
    return d;
}

/* all batches of `epochs` epochs into one buffer (x then y per batch), with 0-returns marked */
typedef struct { real *x; int32_t *y; int *n; int nb; size_t xs; } run_t;
static run_t run_loader(vg_loader *L, int max_batches, size_t elems, int bs) {
    run_t r = {malloc((size_t)max_batches * bs * elems * sizeof(real)), malloc((size_t)max_batches * bs * sizeof(int32_t)),
               malloc((size_t)max_batches * sizeof(int)), 0, elems};
    for (int k = 0; k < max_batches; k++) {
        vg_batch b;
        int got = vg_loader_next(L, &b);
        r.n[k] = got ? b.n : -1;
        if (got) {
            memcpy(r.x + (size_t)k * bs * elems, b.x, (size_t)b.n * elems * sizeof(real));
            memcpy(r.y + (size_t)k * bs, b.y, (size_t)b.n * sizeof(int32_t));
        }
        r.nb++;
    }
    return r;
}
static int run_equal(const run_t *a, const run_t *b, int bs) {
    if (a->nb != b->nb) return 0;
    for (int k = 0; k < a->nb; k++) {
        if (a->n[k] != b->n[k]) return 0;
        if (a->n[k] < 0) continue;
        if (memcmp(a->x + (size_t)k * bs * a->xs, b->x + (size_t)k * bs * a->xs, (size_t)a->n[k] * a->xs * sizeof(real))) return 0;
        if (memcmp(a->y + (size_t)k * bs, b->y + (size_t)k * bs, (size_t)a->n[k] * sizeof(int32_t))) return 0;
    }
    return 1;
}
static void run_free(run_t *r) { free(r->x); free(r->y); free(r->n); }

/* ---------- real data ---------- */
VG_TEST(data_cifar10_real) {
    const char *dir = CIFAR_DIR();
    if (!dir) VG_SKIP("no CIFAR-10 (set CIFAR10_DIR; looked in ../shared/data/cifar-10-batches-bin)");
    char err[VG_DATA_ERRLEN] = "";
    vg_dataset *tr = vg_cifar10_open(dir, VG_SPLIT_TRAIN, err, sizeof err);
    vg_dataset *te = vg_cifar10_open(dir, VG_SPLIT_TEST, err, sizeof err);
    CHECK_MSG(tr && te, "%s", err);
    if (!tr || !te) { vg_dataset_free(tr); vg_dataset_free(te); return; }
    CHECK(tr->n == 50000); CHECK(te->n == 10000);
    CHECK(tr->channels == 3 && tr->height == 32 && tr->width == 32 && tr->n_classes == 10);
    int ctr[10], cte[10];
    vg_dataset_class_counts(tr, ctr); vg_dataset_class_counts(te, cte);
    for (int c = 0; c < 10; c++) { CHECK(ctr[c] == 5000); CHECK(cte[c] == 1000); }
    const int first_test[5] = {3, 8, 8, 0, 6}, first_train[5] = {6, 9, 9, 4, 1};
    for (int i = 0; i < 5; i++) { CHECK(te->labels[i] == first_test[i]); CHECK(tr->labels[i] == first_train[i]); }
    CHECK(!strcmp(tr->class_names[3], "cat"));
    double m[3], s[3];
    vg_dataset_channel_stats(tr, m, s);
    for (int c = 0; c < 3; c++) { CHECK_CLOSE(m[c], tr->mean[c], 1e-6); CHECK_CLOSE(s[c], tr->std[c], 1e-6); }

    /* a real training loader: shapes, label range, normalized values sensible */
    vg_loader_config cfg = vg_loader_config_default();
    cfg.batch_size = 256; cfg.n_threads = 2; cfg.seed = 7;
    vg_loader *L = vg_loader_new(tr, &cfg, err, sizeof err);
    CHECK_MSG(L, "%s", err);
    if (L) {
        CHECK(vg_loader_batches_per_epoch(L) == 195);
        double sum = 0; size_t cnt = 0;
        for (int k = 0; k < 8; k++) {
            vg_batch b;
            REQUIRE(vg_loader_next(L, &b) == 1);
            CHECK(b.n == 256 && b.c == 3 && b.h == 32 && b.w == 32);
            for (int i = 0; i < b.n; i++) CHECK(b.y[i] >= 0 && b.y[i] < 10);
            for (size_t i = 0; i < (size_t)b.n * 3072; i++) { sum += b.x[i]; cnt++; }
        }
        /* the zero padding (about 1/8 of the pixels, each at about -1.9) pulls the mean below 0 */
        CHECK_MSG(sum / cnt > -0.45 && sum / cnt < 0.05, "train batch mean %g", sum / cnt);
        CHECK(vg_loader_wait_seconds(L) >= 0 && vg_loader_calls(L) == 8);
        vg_loader_free(L);
    }
    /* eval batches of the test split are normalized to about mean 0, std 1 */
    cfg.train = 0; cfg.batch_size = 1000;
    L = vg_loader_new(te, &cfg, err, sizeof err);
    CHECK_MSG(L, "%s", err);
    if (L) {
        vg_batch b;
        double s1 = 0, s2 = 0; size_t cnt = 0;
        while (vg_loader_next(L, &b))
            for (size_t i = 0; i < (size_t)b.n * 3072; i++) { s1 += b.x[i]; s2 += (double)b.x[i] * b.x[i]; cnt++; }
        CHECK(cnt == (size_t)10000 * 3072);
        CHECK_CLOSE(s1 / cnt, 0, 0.03);
        CHECK_CLOSE(sqrt(s2 / cnt - (s1 / cnt) * (s1 / cnt)), 1, 0.03);
        vg_loader_free(L);
    }
    vg_dataset_free(tr); vg_dataset_free(te);
}

VG_TEST(data_imagefolder_real) {
    const char *dir = IMAGENET_DIR();
    if (!dir) VG_SKIP("no ImageNet subset (set IMAGENET_SUBSET_DIR; looked in ../shared/data/imagenet-subset)");
    char err[VG_DATA_ERRLEN] = "";
    vg_dataset *tr = vg_imagefolder_open(dir, VG_SPLIT_TRAIN, 0, err, sizeof err);
    vg_dataset *va = vg_imagefolder_open(dir, VG_SPLIT_TEST, 0, err, sizeof err);
    CHECK_MSG(tr && va, "%s", err);
    if (!tr || !va) { vg_dataset_free(tr); vg_dataset_free(va); return; }
    CHECK(tr->n_classes == 10 && va->n_classes == 10);
    CHECK(tr->n == 5000); CHECK(va->n == 500);
    CHECK(tr->n_skipped == 0 && va->n_skipped == 0);
    CHECK(tr->height == 64 && tr->width == 64 && tr->channels == 3);
    CHECK(!strcmp(tr->class_names[0], "n01443537") && tr->class_descr && !strcmp(tr->class_descr[0], "goldfish"));
    CHECK(!strcmp(va->class_names[9], "n07873807"));
    int ct[10], cv[10];
    vg_dataset_class_counts(tr, ct); vg_dataset_class_counts(va, cv);
    for (int c = 0; c < 10; c++) { CHECK(ct[c] == 500); CHECK(cv[c] == 50); }
    /* the 33 grayscale JPEGs come out as 3 equal channels, and they are the listed ones */
    char p[2048];
    pjoin(p, sizeof p, dir, "GRAYSCALE.txt");
    FILE *f = fopen(p, "r");
    int gray = 0, listed = 0, listed_found = 0;
    const vg_dataset *ds[2] = {tr, va};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ds[k]->n; i++) {
            if (ds[k]->src_channels[i] != 1) continue;
            gray++;
            int h, w;
            const uint8_t *im = vg_dataset_image(ds[k], i, &h, &w);
            int same = 1;
            for (int j = 0; j < h * w; j++) same &= im[j] == im[h * w + j] && im[j] == im[2 * h * w + j];
            CHECK_MSG(same, "%s: grayscale image with unequal channels", ds[k]->files[i]);
        }
    CHECK(gray == 33);
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        listed++;
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < ds[k]->n; i++)
                if (ds[k]->src_channels[i] == 1 && contains(ds[k]->files[i], line)) { listed_found++; k = 2; break; }
    }
    if (f) fclose(f);
    CHECK(listed == 33 && listed_found == 33);

    /* eval and train loaders at 64 and at 32 (resize path) */
    vg_loader_config cfg = vg_loader_config_default();
    cfg.batch_size = 64; cfg.train = 0; cfg.image_size = 32; cfg.n_threads = 1;
    vg_loader *L = vg_loader_new(va, &cfg, err, sizeof err);
    CHECK_MSG(L, "%s", err);
    if (L) {
        CHECK(vg_loader_batches_per_epoch(L) == 8);
        vg_batch b; int nb = 0, total = 0;
        while (vg_loader_next(L, &b)) { nb++; total += b.n; CHECK(b.h == 32 && b.w == 32 && b.c == 3); }
        CHECK(nb == 8 && total == 500);
        vg_loader_free(L);
    }
    cfg.train = 1; cfg.image_size = 56; cfg.n_threads = 2;
    L = vg_loader_new(tr, &cfg, err, sizeof err);
    CHECK_MSG(L, "%s", err);
    if (L) {
        vg_batch b;
        for (int k = 0; k < 3; k++) { REQUIRE(vg_loader_next(L, &b) == 1); CHECK(b.n == 64 && b.h == 56); }
        vg_loader_free(L);
    }
    vg_dataset_free(tr); vg_dataset_free(va);
}

VG_TEST(data_fashion_mnist_real) {
    const char *dir = FASHION_DIR();
    if (!dir) VG_SKIP("no Fashion-MNIST (set FASHION_MNIST_DIR; looked in /usr/share/datasets/fashion-mnist)");
    char err[VG_DATA_ERRLEN] = "";
    vg_dataset *tr = vg_fashion_mnist_open(dir, VG_SPLIT_TRAIN, err, sizeof err);
    vg_dataset *te = vg_fashion_mnist_open(dir, VG_SPLIT_TEST, err, sizeof err);
    CHECK_MSG(tr && te, "%s", err);
    if (tr && te) {
        CHECK(tr->n == 60000); CHECK(te->n == 10000);
        CHECK(tr->channels == 1 && tr->height == 28 && tr->width == 28);
        int c[10]; vg_dataset_class_counts(tr, c);
        for (int k = 0; k < 10; k++) CHECK(c[k] == 6000);
        CHECK(!strcmp(tr->class_names[9], "Ankle boot"));
        double m[3], s[3];
        vg_dataset_channel_stats(tr, m, s);
        CHECK_CLOSE(m[0], tr->mean[0], 1e-6); CHECK_CLOSE(s[0], tr->std[0], 1e-6);
    }
    vg_dataset_free(tr); vg_dataset_free(te);
}

/* ---------- CIFAR-10 format, small files ---------- */
static void cifar_write(const char *dir, const char *name, int records, int bad_label_at, long trim) {
    size_t n = (size_t)records * 3073;
    uint8_t *b = malloc(n);
    for (int r = 0; r < records; r++) {
        b[(size_t)r * 3073] = (uint8_t)(r == bad_label_at ? 10 : r % 10);
        for (int k = 0; k < 3072; k++) b[(size_t)r * 3073 + 1 + k] = (uint8_t)(r + k);
    }
    char p[1024]; pjoin(p, sizeof p, dir, name);
    write_bytes(p, b, n - (size_t)trim);
    free(b);
}

VG_TEST(data_cifar10_format_and_errors) {
    char tmp[512], err[VG_DATA_ERRLEN];
    REQUIRE(make_tmp(tmp, sizeof tmp));
    const char *names[5] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
    for (int f = 0; f < 5; f++) cifar_write(tmp, names[f], 3 + f, -1, 0);
    /* missing test file */
    err[0] = 0;
    vg_dataset *d = vg_cifar10_open(tmp, VG_SPLIT_TEST, err, sizeof err);
    CHECK_ERR(d == NULL, err, "test_batch.bin", "No such file");
    cifar_write(tmp, "test_batch.bin", 4, -1, 0);
    d = vg_cifar10_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (d) {
        CHECK(d->n == 3 + 4 + 5 + 6 + 7);     /* any whole number of records */
        CHECK(d->labels[3] == 0 && d->labels[4] == 1);   /* file 2 starts again at label 0 */
        int h, w;
        const uint8_t *im = vg_dataset_image(d, 1, &h, &w);
        CHECK(im[0] == 1 && im[1024] == (uint8_t)(1 + 1024) && im[2048 + 5] == (uint8_t)(1 + 2053));
        CHECK(!strcmp(d->class_names[0], "airplane"));   /* defaults without batches.meta.txt */
        vg_dataset_free(d);
    }
    /* truncated file */
    cifar_write(tmp, names[2], 5, -1, 100);
    err[0] = 0;
    d = vg_cifar10_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "data_batch_3.bin", "not a whole number");
    cifar_write(tmp, names[2], 5, -1, 0);
    /* empty file */
    cifar_write(tmp, names[3], 0, -1, 0);
    err[0] = 0;
    d = vg_cifar10_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "data_batch_4.bin", "size 0 bytes");
    cifar_write(tmp, names[3], 6, -1, 0);
    /* label out of range */
    cifar_write(tmp, names[4], 7, 5, 0);
    err[0] = 0;
    d = vg_cifar10_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "data_batch_5.bin", "record 5 has label 10");
    /* missing directory */
    err[0] = 0;
    d = vg_cifar10_open("/nonexistent/cifar", VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "/nonexistent/cifar/data_batch_1.bin", "No such file");
    rm_rf(tmp);
}

/* ---------- IDX format ---------- */
static size_t idx_images(uint8_t *buf, uint32_t magic, int n, int h, int w) {
    uint32_t hd[4] = {magic, (uint32_t)n, (uint32_t)h, (uint32_t)w};
    for (int k = 0; k < 4; k++) for (int j = 0; j < 4; j++) buf[4 * k + j] = (uint8_t)(hd[k] >> (24 - 8 * j));
    for (int i = 0; i < n * h * w; i++) buf[16 + i] = (uint8_t)(i * 7);
    return 16 + (size_t)n * h * w;
}
static size_t idx_labels(uint8_t *buf, uint32_t magic, int n, int bad_at) {
    uint32_t hd[2] = {magic, (uint32_t)n};
    for (int k = 0; k < 2; k++) for (int j = 0; j < 4; j++) buf[4 * k + j] = (uint8_t)(hd[k] >> (24 - 8 * j));
    for (int i = 0; i < n; i++) buf[8 + i] = (uint8_t)(i == bad_at ? 10 : (i * 3) % 10);
    return 8 + (size_t)n;
}

VG_TEST(data_idx_format_and_errors) {
    char tmp[512], ip[1024], lp[1024], err[VG_DATA_ERRLEN];
    REQUIRE(make_tmp(tmp, sizeof tmp));
    uint8_t img[16 + 5 * 6 * 4], lab[8 + 5];
    size_t ni = idx_images(img, 0x803, 5, 6, 4), nl = idx_labels(lab, 0x801, 5, -1);
    pjoin(ip, sizeof ip, tmp, "train-images-idx3-ubyte.gz");
    pjoin(lp, sizeof lp, tmp, "train-labels-idx1-ubyte.gz");
    write_gz(ip, img, ni); write_gz(lp, lab, nl);
    vg_dataset *d = vg_fashion_mnist_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (d) {
        CHECK(d->n == 5 && d->height == 6 && d->width == 4 && d->channels == 1);
        CHECK(d->labels[2] == 6 && d->pixels[25] == (uint8_t)(25 * 7));
        vg_dataset_free(d);
    }
    /* raw (uncompressed) t10k files through the same reader */
    char rip[1024], rlp[1024];
    pjoin(rip, sizeof rip, tmp, "t10k-images-idx3-ubyte"); pjoin(rlp, sizeof rlp, tmp, "t10k-labels-idx1-ubyte");
    write_bytes(rip, img, ni); write_bytes(rlp, lab, nl);
    d = vg_mnist_open(tmp, VG_SPLIT_TEST, err, sizeof err);
    CHECK_MSG(d && d->n == 5, "%s", err);
    vg_dataset_free(d);
    /* wrong magic */
    idx_images(img, 0x801, 5, 6, 4);
    write_gz(ip, img, ni);
    err[0] = 0;
    d = vg_fashion_mnist_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train-images-idx3-ubyte.gz", "wrong IDX magic 0x00000801");
    /* truncated pixel data */
    idx_images(img, 0x803, 5, 6, 4);
    write_gz(ip, img, ni - 10);
    err[0] = 0;
    d = vg_fashion_mnist_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train-images-idx3-ubyte.gz", "truncated");
    write_gz(ip, img, ni);
    /* label out of range */
    idx_labels(lab, 0x801, 5, 3);
    write_gz(lp, lab, nl);
    err[0] = 0;
    d = vg_fashion_mnist_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train-labels-idx1-ubyte.gz", "out of range");
    /* count mismatch */
    nl = idx_labels(lab, 0x801, 4, -1);
    write_gz(lp, lab, nl);
    err[0] = 0;
    d = vg_fashion_mnist_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train-labels-idx1-ubyte.gz", "4 labels");
    /* missing files */
    remove(lp);
    err[0] = 0;
    d = vg_fashion_mnist_open(tmp, VG_SPLIT_TRAIN, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train-labels-idx1-ubyte", "cannot open");
    rm_rf(tmp);
}

/* ---------- image folders, small files ---------- */
static void mkdirs(const char *root, const char *sub) { char p[1024]; pjoin(p, sizeof p, root, sub); mkdir(p, 0755); }

VG_TEST(data_imagefolder_formats_and_errors) {
    char tmp[512], p[1024], err[VG_DATA_ERRLEN];
    REQUIRE(make_tmp(tmp, sizeof tmp));
    mkdirs(tmp, "train"); mkdirs(tmp, "train/bbb"); mkdirs(tmp, "train/aaa");
    mkdirs(tmp, "val"); mkdirs(tmp, "val/aaa"); mkdirs(tmp, "val/bbb");
    /* aaa: a gray PNG (value 77), a palette PNG, an RGBA PNG */
    uint8_t g[6 * 5]; memset(g, 77, sizeof g);
    pjoin(p, sizeof p, tmp, "train/aaa/gray.png");
    CHECK(write_png(p, 5, 6, PNG_FORMAT_GRAY, g, NULL, 0) == 0);
    uint8_t idx[4 * 4], cmap[3 * 2] = {10, 20, 30, 200, 150, 100};
    for (int i = 0; i < 16; i++) idx[i] = (uint8_t)(i % 2);
    pjoin(p, sizeof p, tmp, "train/aaa/palette.png");
    CHECK(write_png(p, 4, 4, PNG_FORMAT_RGB_COLORMAP, idx, cmap, 2) == 0);
    uint8_t rgba[3 * 2 * 4];
    for (int i = 0; i < 6; i++) { rgba[4 * i] = 250; rgba[4 * i + 1] = (uint8_t)(40 + i); rgba[4 * i + 2] = 9; rgba[4 * i + 3] = (uint8_t)(i * 40); }
    pjoin(p, sizeof p, tmp, "train/aaa/rgba.png");
    CHECK(write_png(p, 3, 2, PNG_FORMAT_RGBA, rgba, NULL, 0) == 0);
    /* bbb: an RGB JPEG (constant colour), a corrupt JPEG, a text file */
    uint8_t rgb[8 * 8 * 3];
    for (int i = 0; i < 64; i++) { rgb[3 * i] = 200; rgb[3 * i + 1] = 100; rgb[3 * i + 2] = 50; }
    pjoin(p, sizeof p, tmp, "train/bbb/photo.jpg");
    CHECK(stbi_write_jpg(p, 8, 8, 3, rgb, 95) != 0);
    const uint8_t bad_jpeg[] = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0, 1, 2, 3, 4, 5, 6, 7};
    pjoin(p, sizeof p, tmp, "train/bbb/broken.jpg");
    write_bytes(p, bad_jpeg, sizeof bad_jpeg);
    pjoin(p, sizeof p, tmp, "train/bbb/notes.txt");
    write_bytes(p, "hello\n", 6);
    /* val: one image per class */
    pjoin(p, sizeof p, tmp, "val/aaa/g.png"); write_png(p, 5, 6, PNG_FORMAT_GRAY, g, NULL, 0);
    pjoin(p, sizeof p, tmp, "val/bbb/c.jpg"); stbi_write_jpg(p, 8, 8, 3, rgb, 95);

    vg_dataset *d = vg_imagefolder_open(tmp, VG_SPLIT_TRAIN, 1, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (d) {
        CHECK(d->n == 4 && d->n_classes == 2 && d->height == 0);   /* sizes differ */
        CHECK(!strcmp(d->class_names[0], "aaa") && !strcmp(d->class_names[1], "bbb"));
        CHECK(d->n_skipped == 2);
        int saw_corrupt = 0, saw_text = 0;
        for (int i = 0; i < d->n_skipped; i++) {
            saw_corrupt |= contains(d->skipped[i], "broken.jpg") && contains(d->skipped[i], "corrupt JPEG");
            saw_text |= contains(d->skipped[i], "notes.txt") && contains(d->skipped[i], "not a recognized image");
        }
        CHECK_MSG(saw_corrupt && saw_text, "skip reasons: %s | %s", d->skipped[0], d->n_skipped > 1 ? d->skipped[1] : "");
        for (int i = 0; i < d->n; i++) {
            int h, w;
            const uint8_t *im = vg_dataset_image(d, i, &h, &w);
            size_t hw = (size_t)h * w;
            if (contains(d->files[i], "gray.png")) {
                CHECK(h == 6 && w == 5 && d->src_channels[i] == 1 && d->labels[i] == 0);
                for (size_t k = 0; k < 3 * hw; k++) CHECK(im[k] == 77);
            } else if (contains(d->files[i], "palette.png")) {
                CHECK(h == 4 && w == 4);
                for (size_t k = 0; k < hw; k++)
                    for (int c = 0; c < 3; c++) CHECK(im[c * hw + k] == cmap[3 * (k % 2) + c]);
            } else if (contains(d->files[i], "rgba.png")) {
                CHECK(h == 2 && w == 3 && d->src_channels[i] == 4);
                for (size_t k = 0; k < hw; k++)   /* alpha dropped, colour not composited */
                    CHECK(im[k] == 250 && im[hw + k] == 40 + k && im[2 * hw + k] == 9);
            } else {
                CHECK(contains(d->files[i], "photo.jpg") && d->labels[i] == 1 && h == 8 && w == 8);
                CHECK(abs(im[0] - 200) <= 3 && abs(im[hw] - 100) <= 3 && abs(im[2 * hw] - 50) <= 3);
            }
        }
        /* loaders over mixed sizes need an image_size */
        vg_loader_config cfg = vg_loader_config_default();
        cfg.batch_size = 2;
        vg_loader *L = vg_loader_new(d, &cfg, err, sizeof err);
        CHECK(L == NULL && contains(err, "image_size"));
        cfg.image_size = 4;
        L = vg_loader_new(d, &cfg, err, sizeof err);
        CHECK_MSG(L, "%s", err);
        vg_batch b;
        if (L) { CHECK(vg_loader_next(L, &b) == 1 && b.n == 2 && b.h == 4); vg_loader_free(L); }
        vg_dataset_free(d);
    }
    d = vg_imagefolder_open(tmp, VG_SPLIT_TEST, 1, err, sizeof err);
    CHECK_MSG(d && d->n == 2 && d->labels[0] == 0 && d->labels[1] == 1, "%s", err);
    vg_dataset_free(d);

    /* classes.txt fixes the order: bbb first */
    pjoin(p, sizeof p, tmp, "classes.txt");
    write_bytes(p, "bbb\tthe b things\naaa the a things\n", 34);
    d = vg_imagefolder_open(tmp, VG_SPLIT_TEST, 1, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (d) {
        CHECK(!strcmp(d->class_names[0], "bbb") && !strcmp(d->class_descr[1], "the a things"));
        CHECK(d->labels[0] == 0 && contains(d->files[0], "val/bbb/"));
        vg_dataset_free(d);
    }
    /* classes.txt naming a class without a folder */
    write_bytes(p, "0 aaa x\n1 bbb y\n2 ccc z\n", 24);
    err[0] = 0;
    d = vg_imagefolder_open(tmp, VG_SPLIT_TEST, 1, err, sizeof err);
    CHECK_ERR(d == NULL, err, "val/ccc", "missing class folder");
    remove(p);
    /* an empty class folder */
    mkdirs(tmp, "train/ccc");
    err[0] = 0;
    d = vg_imagefolder_open(tmp, VG_SPLIT_TRAIN, 1, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train/ccc", "empty class folder");
    /* a class folder where nothing decodes */
    pjoin(p, sizeof p, tmp, "train/ccc/x.jpg"); write_bytes(p, bad_jpeg, sizeof bad_jpeg);
    err[0] = 0;
    d = vg_imagefolder_open(tmp, VG_SPLIT_TRAIN, 1, err, sizeof err);
    CHECK_ERR(d == NULL, err, "train/ccc", "no usable image");
    /* a split where nothing decodes */
    err[0] = 0;
    mkdirs(tmp, "val/ccc");
    pjoin(p, sizeof p, tmp, "val/ccc/y.png"); write_bytes(p, "\x89PNG\r\n\x1a\nxxxxxxxxxxxxx", 21);
    pjoin(p, sizeof p, tmp, "val/aaa/g.png"); remove(p);
    pjoin(p, sizeof p, tmp, "val/aaa/g.png"); write_bytes(p, "GIF89a", 6);
    pjoin(p, sizeof p, tmp, "val/bbb/c.jpg"); write_bytes(p, bad_jpeg, 8);
    d = vg_imagefolder_open(tmp, VG_SPLIT_TEST, 1, err, sizeof err);
    CHECK_ERR(d == NULL, err, "val", "nothing usable");
    /* missing split and missing root */
    pjoin(p, sizeof p, tmp, "val"); rm_rf(p);
    err[0] = 0;
    d = vg_imagefolder_open(tmp, VG_SPLIT_TEST, 1, err, sizeof err);
    CHECK_ERR(d == NULL, err, "/val", "missing val split");
    err[0] = 0;
    d = vg_imagefolder_open("/nonexistent/imgs", VG_SPLIT_TRAIN, 1, err, sizeof err);
    CHECK_ERR(d == NULL, err, "/nonexistent/imgs", "No such file");
    /* decoding a corrupt PNG directly */
    uint8_t *chw; int h, w, sc;
    err[0] = 0;
    CHECK(vg_image_decode_memory((const uint8_t *)"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, "mem.png", &chw, &h, &w, &sc, err, sizeof err) == -1);
    CHECK_MSG(contains(err, "mem.png") && contains(err, "corrupt PNG"), "%s", err);
    rm_rf(tmp);
}

/* Decoding outcomes the fuzz work settled (fuzz/corpus, fuzz/regressions): a palette PNG with a
 * tRNS chunk decodes (it was refused as corrupt: the expanded palette carried an alpha channel);
 * a JPEG whose Huffman table declares more than 256 codes is refused before stb_image overruns
 * its tables; a JPEG cut short (no end-of-image marker) is refused, not decoded with gray for the
 * missing part; formats other than JPEG and PNG are refused, not handed to stb_image.
 * decode_file decodes the file without its last `cut` bytes. */
static int decode_file(const char *path, size_t cut, int *h, int *w, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "cannot open %s", path); return -2; }
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint8_t *chw = NULL; int sc;
    int rc = vg_image_decode_memory(buf, n > cut ? n - cut : 0, path, &chw, h, w, &sc, err, errlen);
    free(chw);
    return rc;
}
VG_TEST(data_image_decode_fuzz_outcomes) {
    char err[VG_DATA_ERRLEN] = "";
    int h = 0, w = 0;
    CHECK_MSG(decode_file("fuzz/corpus/image_decode/seed-png-palette-trns", 0, &h, &w, err, sizeof err) == 0 && h == 4 && w == 4,
              "palette PNG with tRNS: %s", err);
    CHECK(decode_file("fuzz/regressions/image_decode/jpeg-dht-over-256-codes", 0, &h, &w, err, sizeof err) == -1);
    CHECK_MSG(contains(err, "jpeg-dht-over-256-codes") && contains(err, "more than 256 codes"), "%s", err);
    CHECK(decode_file("fuzz/corpus/image_decode/seed-bmp-rgba", 0, &h, &w, err, sizeof err) == -1);
    CHECK_MSG(contains(err, "not a recognized image"), "%s", err);
    CHECK_MSG(decode_file("fuzz/corpus/image_decode/seed-jpeg-rgb", 0, &h, &w, err, sizeof err) == 0 && h == 8, "%s", err);
    CHECK(decode_file("fuzz/corpus/image_decode/seed-jpeg-rgb", 40, &h, &w, err, sizeof err) == -1);
    CHECK_MSG(contains(err, "seed-jpeg-rgb") && contains(err, "truncated"), "%s", err);
}

/* ---------- transforms ---------- */
VG_TEST(data_transform_flip_and_pad_crop) {
    /* 1 channel 3x3 image 1..9; no normalization (mean NULL): values are x/255 */
    const uint8_t im[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    real out[9];
    vg_pad_crop_flip(im, 1, 3, 3, 0, 0, 0, 1, out, NULL, NULL);     /* pure flip */
    const int flipped[9] = {3, 2, 1, 6, 5, 4, 9, 8, 7};
    for (int i = 0; i < 9; i++) CHECK_CLOSE(out[i] * 255, flipped[i], 1e-4);
    vg_pad_crop_flip(im, 1, 3, 3, 2, 0, 0, 0, out, NULL, NULL);     /* shift by +2 down/right */
    const int shifted[9] = {0, 0, 0, 0, 0, 0, 0, 0, 1};
    for (int i = 0; i < 9; i++) CHECK_CLOSE(out[i] * 255, shifted[i], 1e-4);
    vg_pad_crop_flip(im, 1, 3, 3, 2, 3, 2, 0, out, NULL, NULL);     /* up 1 row */
    const int up[9] = {4, 5, 6, 7, 8, 9, 0, 0, 0};
    for (int i = 0; i < 9; i++) CHECK_CLOSE(out[i] * 255, up[i], 1e-4);
    vg_pad_crop_flip(im, 1, 3, 3, 1, 1, 2, 1, out, NULL, NULL);     /* left 1 col, then mirrored */
    const int lf[9] = {0, 3, 2, 0, 6, 5, 0, 9, 8};
    for (int i = 0; i < 9; i++) CHECK_CLOSE(out[i] * 255, lf[i], 1e-4);
    /* normalization: zeros of the padding become -mean/std */
    const float mean[1] = {0.5f}, std[1] = {0.25f};
    vg_pad_crop_flip(im, 1, 3, 3, 2, 0, 0, 0, out, mean, std);
    CHECK_CLOSE(out[0], -2.0, 1e-6);
    CHECK_CLOSE(out[8], (1 / 255.0 - 0.5) / 0.25, 1e-6);
}

VG_TEST(data_transform_resize) {
    /* a constant image stays constant, growing or shrinking, any box */
    uint8_t c[3 * 7 * 5];
    memset(c, 123, sizeof c);
    real out[3 * 11 * 13];
    int sizes[4][2] = {{11, 13}, {2, 3}, {7, 5}, {1, 1}};
    for (int s = 0; s < 4; s++) {
        vg_resample_box(c, 3, 7, 5, 0.5, 1.25, 3.5, 4.0, out, sizes[s][0], sizes[s][1], 0, NULL, NULL);
        for (int i = 0; i < 3 * sizes[s][0] * sizes[s][1]; i++) CHECK_CLOSE(out[i] * 255, 123, 1e-3);
    }
    /* enlarging [0, 4] (1 row) to 4: centres at 0.25, 0.75, 1.25, 1.75 -> 0, 1, 3, 4 */
    const uint8_t up[2] = {0, 4};
    real o4[4];
    vg_resample_box(up, 1, 1, 2, 0, 0, 2, 1, o4, 1, 4, 0, NULL, NULL);
    const double e4[4] = {0, 1, 3, 4};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(o4[i] * 255, e4[i], 1e-4);
    /* shrinking [0, 10, 20, 30] to 2, antialiased: support 2, triangle of half-width 2:
     * out0 = (0*.75 + 10*.75 + 20*.25)/1.75, out1 = (10*.25 + 20*.75 + 30*.75)/1.75 */
    const uint8_t dn[4] = {0, 10, 20, 30};
    real o2[2];
    vg_resample_box(dn, 1, 1, 4, 0, 0, 4, 1, o2, 1, 2, 0, NULL, NULL);
    CHECK_CLOSE(o2[0] * 255, 12.5 / 1.75, 1e-4);
    CHECK_CLOSE(o2[1] * 255, 40.0 / 1.75, 1e-4);
    /* 2-D: shrink a 4x4 to 2x2 is separable: outer product of the 1-D weights */
    uint8_t sq[16];
    for (int y = 0; y < 4; y++) for (int x = 0; x < 4; x++) sq[y * 4 + x] = (uint8_t)(10 * x + 40 * y);
    real o22[4];
    vg_resample_box(sq, 1, 4, 4, 0, 0, 4, 4, o22, 2, 2, 1, NULL, NULL);  /* flipped */
    CHECK_CLOSE(o22[1] * 255, 12.5 / 1.75 + 4 * 12.5 / 1.75, 1e-4);       /* (0,0) lands at x=1 */
    CHECK_CLOSE(o22[0] * 255, 40.0 / 1.75 + 4 * 12.5 / 1.75, 1e-4);
    /* same size, integer box: exact copy */
    real id[16];
    vg_resample_box(sq, 1, 4, 4, 0, 0, 4, 4, id, 4, 4, 0, NULL, NULL);
    for (int i = 0; i < 16; i++) CHECK_CLOSE(id[i] * 255, sq[i], 1e-4);
    /* resize shorter side + center crop on a 2x4 image to 2: the middle two columns */
    const uint8_t wide[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    real cc[4];
    vg_resize_center_crop(wide, 1, 2, 4, 2, cc, NULL, NULL);
    const double ecc[4] = {2, 3, 6, 7};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(cc[i] * 255, ecc[i], 1e-4);
    /* random-resized-crop boxes stay inside the image and within the scale range */
    vg_rng r = vg_rng_seed(5);
    for (int t = 0; t < 200; t++) {
        int x0, y0, bw, bh;
        vg_rrc_params(&r, 40, 60, 0.08, 1.0, 3.0 / 4, 4.0 / 3, &x0, &y0, &bw, &bh);
        CHECK(x0 >= 0 && y0 >= 0 && bw >= 1 && bh >= 1 && x0 + bw <= 60 && y0 + bh <= 40);
    }
}

/* ---------- loader ---------- */
VG_TEST(data_loader_partial_batches) {
    char err[VG_DATA_ERRLEN];
    vg_dataset *d = toy_dataset(10, 3, 4, 4, 1);
    vg_loader_config cfg = vg_loader_config_default();
    cfg.batch_size = 4; cfg.train = 0; cfg.n_threads = 2; cfg.prefetch = 2;
    vg_loader *L = vg_loader_new(d, &cfg, err, sizeof err);
    REQUIRE(L);
    CHECK(vg_loader_batches_per_epoch(L) == 3);
    for (int epoch = 0; epoch < 2; epoch++) {
        vg_batch b;
        int sizes[3] = {4, 4, 2};
        for (int k = 0; k < 3; k++) {
            REQUIRE(vg_loader_next(L, &b) == 1);
            CHECK(b.n == sizes[k] && (int)b.epoch == epoch && (int)b.index == 4 * k);
            for (int i = 0; i < b.n; i++) CHECK(b.y[i] == (4 * k + i) % 10);   /* dataset order */
            /* eval transform at native size: plain normalization */
            CHECK_CLOSE(b.x[0], (d->pixels[(size_t)4 * k * 48] / 255.0 - 0.5) / 0.25, 1e-6);
        }
        CHECK(vg_loader_next(L, &b) == 0);
    }
    vg_loader_free(L);
    cfg.train = 1;
    L = vg_loader_new(d, &cfg, err, sizeof err);
    REQUIRE(L);
    CHECK(vg_loader_batches_per_epoch(L) == 2);
    for (int epoch = 0; epoch < 3; epoch++) {
        vg_batch b;
        int seen[10] = {0};
        for (int k = 0; k < 2; k++) {
            REQUIRE(vg_loader_next(L, &b) == 1);
            CHECK(b.n == 4);
            for (int i = 0; i < 4; i++) seen[b.y[i]]++;
        }
        for (int i = 0; i < 10; i++) CHECK(seen[i] <= 1);   /* a permutation, 2 dropped */
        CHECK(vg_loader_next(L, &b) == 0);
    }
    vg_loader_free(L);
    cfg.batch_size = 11;
    err[0] = 0;
    CHECK(vg_loader_new(d, &cfg, err, sizeof err) == NULL && contains(err, "larger than the dataset"));
    vg_dataset_free(d);
}

VG_TEST(data_loader_deterministic_across_threads) {
    char err[VG_DATA_ERRLEN];
    vg_dataset *d = toy_dataset(203, 3, 8, 8, 2);
    /* mode 0: pad-crop-flip; 1: random-resized-crop; 2: pad-crop-flip + RandAugment + erasing */
    for (int mode = 0; mode < 3; mode++) {
        vg_loader_config cfg = vg_loader_config_default();
        cfg.batch_size = 16; cfg.seed = 1234; cfg.prefetch = 3;
        if (mode == 1) { cfg.aug = VG_AUG_RRC; cfg.image_size = 6; }
        if (mode == 2) {
            cfg.randaugment = 1; cfg.reprob = 0.5;
            REQUIRE(vg_randaugment_parse("rand-m9-mstd0.5-inc1", &cfg.ra, err, sizeof err) == 0);
        }
        size_t elems = (size_t)3 * (mode == 1 ? 36 : 64);
        int nb = 2 * 13 + 5;   /* two epochs (12 batches + end marker each) and into the third */
        run_t runs[3];
        int threads[3] = {0, 1, 3};
        for (int t = 0; t < 3; t++) {
            cfg.n_threads = threads[t];
            vg_loader *L = vg_loader_new(d, &cfg, err, sizeof err);
            REQUIRE(L);
            runs[t] = run_loader(L, nb, elems, 16);
            vg_loader_free(L);
        }
        CHECK(runs[0].n[12] == -1 && runs[0].n[25] == -1 && runs[0].n[0] == 16);
        CHECK_MSG(run_equal(&runs[0], &runs[1], 16), "mode %d: 0 vs 1 worker threads differ", mode);
        CHECK_MSG(run_equal(&runs[0], &runs[2], 16), "mode %d: 0 vs 3 worker threads differ", mode);
        /* epochs are shuffled differently, and augmentation really changes pixels */
        CHECK(memcmp(runs[0].y, runs[0].y + 13 * 16, 16 * sizeof(int32_t)) != 0);
        /* another seed gives another order */
        cfg.seed = 99; cfg.n_threads = 1;
        vg_loader *L = vg_loader_new(d, &cfg, err, sizeof err);
        REQUIRE(L);
        run_t other = run_loader(L, 3, elems, 16);
        vg_loader_free(L);
        CHECK(memcmp(other.y, runs[0].y, 16 * sizeof(int32_t)) != 0);
        run_free(&other);
        for (int t = 0; t < 3; t++) run_free(&runs[t]);
    }
    vg_dataset_free(d);
}

VG_TEST(data_loader_resume) {
    char err[VG_DATA_ERRLEN];
    vg_dataset *d = toy_dataset(100, 3, 8, 8, 3);
    vg_loader_config cfg = vg_loader_config_default();
    cfg.batch_size = 16; cfg.seed = 42; cfg.n_threads = 2;
    size_t elems = 3 * 64;
    /* reference run: 5 batches, save, then 10 more (crossing the end of epoch 0 at batch 6) */
    vg_loader *A = vg_loader_new(d, &cfg, err, sizeof err);
    REQUIRE(A);
    run_t head = run_loader(A, 5, elems, 16);
    vg_loader_state saved = vg_loader_state_get(A);
    CHECK(saved.epoch == 0 && saved.index == 80);
    run_t tail = run_loader(A, 10, elems, 16);
    /* a fresh loader with another seed and thread count, restored from a serialized copy */
    unsigned char blob[sizeof saved];
    memcpy(blob, &saved, sizeof saved);
    vg_loader_state back;
    memcpy(&back, blob, sizeof back);
    cfg.seed = 777; cfg.n_threads = 3;
    vg_loader *B = vg_loader_new(d, &cfg, err, sizeof err);
    REQUIRE(B);
    run_t junk = run_loader(B, 2, elems, 16);       /* B has prefetched its own batches */
    CHECK(vg_loader_state_set(B, &back, err, sizeof err) == 0);
    run_t tail2 = run_loader(B, 10, elems, 16);
    CHECK(run_equal(&tail, &tail2, 16));
    CHECK(tail.n[1] == -1);                          /* epoch 0 has 6 batches */
    /* restoring the same loader into the past replays as well */
    CHECK(vg_loader_state_set(A, &back, err, sizeof err) == 0);
    run_t tail3 = run_loader(A, 10, elems, 16);
    CHECK(run_equal(&tail, &tail3, 16));
    /* synchronous loader too */
    cfg.n_threads = 0;
    vg_loader *C = vg_loader_new(d, &cfg, err, sizeof err);
    REQUIRE(C);
    CHECK(vg_loader_state_set(C, &back, err, sizeof err) == 0);
    run_t tail4 = run_loader(C, 10, elems, 16);
    CHECK(run_equal(&tail, &tail4, 16));
    /* a position that does not fit */
    vg_loader_state bad = back; bad.index = 1000;
    err[0] = 0;
    CHECK(vg_loader_state_set(C, &bad, err, sizeof err) == -1 && contains(err, "past the end"));
    vg_loader_free(A); vg_loader_free(B); vg_loader_free(C);
    run_free(&head); run_free(&tail); run_free(&tail2); run_free(&tail3); run_free(&tail4); run_free(&junk);
    vg_dataset_free(d);
}

VG_TEST(data_loader_augmentation_is_pad_crop_flip) {
    /* with train aug on a native-size dataset, every output equals one of the (2p+1)^2 * 2
     * pad-crop-flip candidates of its source image */
    char err[VG_DATA_ERRLEN];
    vg_dataset *d = toy_dataset(8, 3, 6, 6, 4);
    for (int i = 0; i < 8; i++) d->labels[i] = i;
    vg_loader_config cfg = vg_loader_config_default();
    cfg.batch_size = 8; cfg.crop_pad = 2; cfg.n_threads = 1; cfg.seed = 3;
    vg_loader *L = vg_loader_new(d, &cfg, err, sizeof err);
    REQUIRE(L);
    int flips = 0, shifts = 0;
    for (int e = 0; e < 4; e++) {
        vg_batch b;
        REQUIRE(vg_loader_next(L, &b) == 1);
        for (int i = 0; i < 8; i++) {
            const uint8_t *src = d->pixels + (size_t)b.y[i] * 108;
            int match = 0;
            real cand[108];
            for (int oy = 0; oy < 5 && !match; oy++)
                for (int ox = 0; ox < 5 && !match; ox++)
                    for (int f = 0; f < 2 && !match; f++) {
                        vg_pad_crop_flip(src, 3, 6, 6, 2, oy, ox, f, cand, d->mean, d->std);
                        if (!memcmp(cand, b.x + (size_t)i * 108, sizeof cand)) { match = 1; flips += f; shifts += oy != 2 || ox != 2; }
                    }
            CHECK(match);
        }
        CHECK(vg_loader_next(L, &b) == 0);
    }
    CHECK(flips > 4 && flips < 28 && shifts > 16);
    vg_loader_free(L);
    vg_dataset_free(d);
}
