/* test_safetensors.c — the safetensors reader and writer: round trips of every dtype, a file
 * written by tests/reference/safetensors_io.py, one clear error per kind of damage, a fuzz run
 * (no crash on any input; meaningful under `make asan`), and the atomic write under a crash. */
#include "test.h"
#include "tensor/safetensors.h"
#include "base/durable.h"
#include "base/fault.h"
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static char *make_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/vg_st_test_XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(dir);
}
static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t k = n ? fwrite(p, 1, n, f) : 0;
    return (fclose(f) == 0 && k == n) ? 0 : -1;
}
static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); long sz = ftell(f); fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    return b;
}
/* a safetensors file from a literal header (no padding added) and a data section */
static int write_raw(const char *path, const char *json, const void *data, size_t ndata) {
    size_t hn = strlen(json), n = 8 + hn + ndata;
    unsigned char *b = malloc(n);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hn >> (8 * i));
    memcpy(b + 8, json, hn);
    if (ndata) memcpy(b + 8 + hn, data, ndata);
    int rc = write_bytes(path, b, n);
    free(b);
    return rc;
}
/* opening must fail with a message naming the file and containing `what` */
#define EXPECT_OPEN_FAILS(path, what) do {                                                     \
    char _err[512] = "";                                                                      \
    vg_st_file *_f = vg_st_open(path, _err, sizeof _err);                                     \
    CHECK_MSG(_f == NULL, "%s: opened, expected failure with \"%s\"", path, what);             \
    CHECK_MSG(strstr(_err, path) && strstr(_err, what),                                       \
              "error for %s should name the file and say \"%s\"; got: %s", path, what, _err); \
    vg_st_close(_f);                                                                          \
} while (0)

static uint64_t xs_state = 0x9e3779b97f4a7c15ull;
static uint64_t xs_next(void) { xs_state ^= xs_state << 13; xs_state ^= xs_state >> 7; xs_state ^= xs_state << 17; return xs_state; }

static const char META_TRICKY[] = "quote \" backslash \\ slash / newline \n tab \t ctrl \x01 "
                                  "unicode \xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80";

/* a writer holding one tensor of every dtype, odd sizes to exercise alignment */
static double   ex_f64[3]  = {1.0 / 3.0, -1e300, 4.9e-324};
static float    ex_f32[6]  = {1.5f, -2.25f, 3.0e-38f, 0.0f, -0.0f, 1e30f};
static uint16_t ex_f16[3]  = {0x3c00 /* 1 */, 0xc100 /* -2.5 */, 0x0001 /* 2^-24 */};
static uint16_t ex_bf16[2] = {0x3f80 /* 1 */, 0xc040 /* -3 */};
static int64_t  ex_i64[2]  = {-5, INT64_C(1) << 62};
static int32_t  ex_i32[1]  = {-123456};
static uint8_t  ex_u8[5]   = {0, 1, 127, 128, 255};
static float    ex_scalar  = 42.0f;

static vg_st_writer *example_writer(void) {
    vg_st_writer *w = vg_st_writer_new();
    char err[256] = "";
    int rc = 0;
    int64_t s3[] = {3}, s23[] = {2, 3}, s2[] = {2}, s1[] = {1}, s5[] = {1, 5}, s04[] = {0, 4};
    rc |= vg_st_writer_add(w, "u8.odd", VG_ST_U8, 2, s5, ex_u8, sizeof ex_u8, err, sizeof err);
    rc |= vg_st_writer_add(w, "f32", VG_ST_F32, 2, s23, ex_f32, sizeof ex_f32, err, sizeof err);
    rc |= vg_st_writer_add(w, "f16", VG_ST_F16, 1, s3, ex_f16, sizeof ex_f16, err, sizeof err);
    rc |= vg_st_writer_add(w, "f64", VG_ST_F64, 1, s3, ex_f64, sizeof ex_f64, err, sizeof err);
    rc |= vg_st_writer_add(w, "bf16", VG_ST_BF16, 1, s2, ex_bf16, sizeof ex_bf16, err, sizeof err);
    rc |= vg_st_writer_add(w, "i64", VG_ST_I64, 1, s2, ex_i64, sizeof ex_i64, err, sizeof err);
    rc |= vg_st_writer_add(w, "i32", VG_ST_I32, 1, s1, ex_i32, sizeof ex_i32, err, sizeof err);
    rc |= vg_st_writer_add(w, "scalar", VG_ST_F32, 0, NULL, &ex_scalar, sizeof ex_scalar, err, sizeof err);
    rc |= vg_st_writer_add(w, "empty", VG_ST_F32, 2, s04, NULL, 0, err, sizeof err);
    rc |= vg_st_writer_add(w, "na\"me\\with \xc3\xa9", VG_ST_U8, 1, s1, ex_u8, 1, err, sizeof err);
    rc |= vg_st_writer_meta(w, "format", "pt", err, sizeof err);
    rc |= vg_st_writer_meta(w, "tricky \"key\"", META_TRICKY, err, sizeof err);
    rc |= vg_st_writer_meta(w, "empty", "", err, sizeof err);
    if (rc) { fprintf(stderr, "example_writer: %s\n", err); vg_st_writer_free(w); return NULL; }
    return w;
}

/* ---- round trip --------------------------------------------------------------------------- */

VG_TEST(st_roundtrip_all_dtypes_and_metadata) {
    char *dir = make_tmpdir(); REQUIRE(dir);
    char path[600], err[512] = "";
    snprintf(path, sizeof path, "%s/rt.safetensors", dir);
    vg_st_writer *w = example_writer(); REQUIRE(w);
    CHECK_MSG(vg_st_write(w, path, err, sizeof err) == 0, "write: %s", err);
    vg_st_writer_free(w);

    vg_st_file *f = vg_st_open(path, err, sizeof err);
    CHECK_MSG(f, "open: %s", err);
    if (!f) { vg_remove_flat_dir(dir); return; }
    const char *order[] = {"u8.odd", "f32", "f16", "f64", "bf16", "i64", "i32", "scalar", "empty", "na\"me\\with \xc3\xa9"};
    REQUIRE(vg_st_count(f) == 10);
    for (size_t i = 0; i < 10; i++) {                   /* header order = insertion order */
        const vg_st_tensor *t = vg_st_at(f, i);
        CHECK_MSG(!strcmp(t->name, order[i]), "entry %zu is %s, expected %s", i, t->name, order[i]);
        CHECK(vg_st_find(f, order[i]) == t);
        CHECK_MSG((uintptr_t)t->data % vg_st_dtype_size(t->dtype) == 0, "%s misaligned", t->name);
    }
    CHECK(vg_st_at(f, 10) == NULL);
    CHECK(vg_st_find(f, "nope") == NULL);

    const vg_st_tensor *t = vg_st_find(f, "f32");
    CHECK(t->dtype == VG_ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6);
    CHECK(t->nbytes == sizeof ex_f32 && memcmp(t->data, ex_f32, sizeof ex_f32) == 0);
    t = vg_st_find(f, "u8.odd");
    CHECK(t->dtype == VG_ST_U8 && t->ndim == 2 && t->shape[1] == 5 && !memcmp(t->data, ex_u8, 5));
    t = vg_st_find(f, "scalar");
    CHECK(t->ndim == 0 && t->numel == 1);
    t = vg_st_find(f, "empty");
    CHECK(t->ndim == 2 && t->shape[0] == 0 && t->shape[1] == 4 && t->numel == 0 && t->nbytes == 0);

    double d[6]; float x[6]; int64_t q[5];
    CHECK(vg_st_read_f64(f, "f64", d, 3, err, sizeof err) == 0);
    CHECK(d[0] == ex_f64[0] && d[1] == ex_f64[1] && d[2] == ex_f64[2]);
    CHECK(vg_st_read_f64(f, "f32", d, 6, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) CHECK(d[i] == (double)ex_f32[i]);
    CHECK(vg_st_read_f32(f, "f32", x, 6, err, sizeof err) == 0);
    CHECK(!memcmp(x, ex_f32, sizeof x));                /* bit exact, -0.0 included */
    CHECK(vg_st_read_f32(f, "f64", x, 3, err, sizeof err) == 0);
    CHECK(x[0] == (float)ex_f64[0] && x[1] == -INFINITY && x[2] == 0.0f);
    CHECK(vg_st_read_f32(f, "f16", x, 3, err, sizeof err) == 0);
    CHECK(x[0] == 1.0f && x[1] == -2.5f && x[2] == ldexpf(1.0f, -24));
    CHECK(vg_st_read_f64(f, "bf16", d, 2, err, sizeof err) == 0);
    CHECK(d[0] == 1.0 && d[1] == -3.0);
    CHECK(vg_st_read_f64(f, "i64", d, 2, err, sizeof err) == 0);
    CHECK(d[0] == -5.0 && d[1] == ldexp(1.0, 62));
    CHECK(vg_st_read_f32(f, "u8.odd", x, 5, err, sizeof err) == 0);
    CHECK(x[0] == 0 && x[3] == 128 && x[4] == 255);
    CHECK(vg_st_read_f32(f, "i32", x, 1, err, sizeof err) == 0 && x[0] == -123456.0f);
    CHECK(vg_st_read_f32(f, "scalar", x, 1, err, sizeof err) == 0 && x[0] == 42.0f);
    CHECK(vg_st_read_f32(f, "empty", NULL, 0, err, sizeof err) == 0);
    CHECK(vg_st_read_i64(f, "i64", q, 2, err, sizeof err) == 0 && q[0] == -5 && q[1] == (INT64_C(1) << 62));
    CHECK(vg_st_read_i64(f, "i32", q, 1, err, sizeof err) == 0 && q[0] == -123456);
    CHECK(vg_st_read_i64(f, "u8.odd", q, 5, err, sizeof err) == 0 && q[4] == 255);

    CHECK(vg_st_meta_count(f) == 3);
    CHECK(vg_st_meta(f, "format") && !strcmp(vg_st_meta(f, "format"), "pt"));
    CHECK(vg_st_meta(f, "tricky \"key\"") && !strcmp(vg_st_meta(f, "tricky \"key\""), META_TRICKY));
    CHECK(vg_st_meta(f, "empty") && vg_st_meta(f, "empty")[0] == 0);
    CHECK(vg_st_meta(f, "absent") == NULL);
    CHECK(!strcmp(vg_st_meta_key(f, 0), "format") && !strcmp(vg_st_meta_value(f, 0), "pt"));
    CHECK(vg_st_meta_key(f, 3) == NULL);
    vg_st_close(f);

    /* data section starts at a multiple of 8 */
    size_t n; unsigned char *b = read_bytes(path, &n);
    REQUIRE(b && n >= 8);
    uint64_t hl = 0; for (int i = 7; i >= 0; i--) hl = (hl << 8) | b[i];
    CHECK(hl % 8 == 0);
    free(b);
    vg_remove_flat_dir(dir);
}

VG_TEST(st_reads_file_written_by_python) {
    /* written by `/usr/bin/python3 tests/reference/safetensors_io.py` (_write_sample) */
    const char *path = "tests/reference/st_python_sample.safetensors";
    char err[512] = "";
    vg_st_file *f = vg_st_open(path, err, sizeof err);
    CHECK_MSG(f, "%s (tests run from the repository root)", err);
    if (!f) return;
    CHECK(vg_st_count(f) == 7);
    float x[8]; double d[8]; int64_t q[4];
    const vg_st_tensor *t = vg_st_find(f, "weight_f32");
    REQUIRE(t && t->dtype == VG_ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3);
    CHECK(vg_st_read_f32(f, "weight_f32", x, 6, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) CHECK_CLOSE(x[i], i * 0.5 - 1.0, 0);
    CHECK(vg_st_read_f64(f, "bias_f64", d, 4, err, sizeof err) == 0);
    CHECK(d[0] == 0.1 && d[1] == -0.2 && d[2] == 1e-300 && d[3] == 3.5);
    t = vg_st_find(f, "half");
    REQUIRE(t && t->dtype == VG_ST_F16);
    CHECK(vg_st_read_f32(f, "half", x, 6, err, sizeof err) == 0);
    CHECK(x[0] == 1.0f && x[1] == -2.5f && x[2] == 65504.0f && x[3] == ldexpf(1.0f, -24) && x[4] == 0.0f && isinf(x[5]));
    CHECK(vg_st_read_i64(f, "labels_i64", q, 4, err, sizeof err) == 0);
    CHECK(q[0] == 0 && q[1] == 9 && q[2] == -3 && q[3] == (INT64_C(1) << 40));
    t = vg_st_find(f, "count_i32");
    REQUIRE(t && t->dtype == VG_ST_I32 && t->ndim == 0);
    CHECK(vg_st_read_i64(f, "count_i32", q, 1, err, sizeof err) == 0 && q[0] == 7);
    t = vg_st_find(f, "pixels_u8");
    REQUIRE(t && t->dtype == VG_ST_U8 && t->ndim == 3 && t->shape[2] == 3);
    CHECK(vg_st_read_f32(f, "pixels_u8", x, 6, err, sizeof err) == 0 && x[0] == 250 && x[5] == 255);
    t = vg_st_find(f, "empty");
    REQUIRE(t && t->numel == 0 && t->shape[1] == 4);
    CHECK(vg_st_meta(f, "format") && !strcmp(vg_st_meta(f, "format"), "pt"));
    const char *note = vg_st_meta(f, "note");
    CHECK(note && !strcmp(note, "quote \" backslash \\ newline \n unicode \xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"));
    vg_st_close(f);
}

/* ---- checksums: every written tensor carries its CRC-32C; damage is named ------------------ */

VG_TEST(st_checksums_name_the_damaged_tensor) {
    /* the CRC-32C check value (RFC 3720 and every implementation) */
    CHECK(vg_crc32c("123456789", 9) == 0xe3069283u);
    CHECK(vg_crc32c("", 0) == 0);
    static const unsigned char zeros[32];
    CHECK(vg_crc32c(zeros, 32) == 0x8a9136aau);                    /* RFC 3720 B.4: 32 bytes of 0 */

    char *dir = make_tmpdir(); REQUIRE(dir);
    char path[600], err[512] = "";
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    vg_st_writer *w = example_writer(); REQUIRE(w);
    CHECK_MSG(vg_st_writer_meta(w, "crc32c.f32", "00000000", err, sizeof err) != 0 && strstr(err, "reserved"),
              "a caller's crc32c.* key must be refused: %s", err);
    REQUIRE(vg_st_write(w, path, err, sizeof err) == 0);
    vg_st_writer_free(w);
    vg_st_file *f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    for (size_t i = 0; i < vg_st_count(f); i++) {               /* every tensor, with its checksum */
        const vg_st_tensor *t = vg_st_at(f, i);
        CHECK_MSG(t->has_checksum && t->checksum == vg_crc32c(t->data, t->nbytes), "%s", t->name);
    }
    CHECK(vg_st_meta_count(f) == 3);                             /* not listed as the caller's metadata */
    vg_st_close(f);

    /* one bit of "f32"'s data flipped (in its third float): refused, naming the tensor */
    size_t n; unsigned char *b = read_bytes(path, &n);
    REQUIRE(b && n > 16);
    uint64_t hl = 0; for (int i = 7; i >= 0; i--) hl = (hl << 8) | b[i];
    f = vg_st_open_memory(b, n, "x", err, sizeof err);
    REQUIRE(f);
    const unsigned char *data = NULL;                             /* the data section: its lowest tensor */
    for (size_t i = 0; i < vg_st_count(f); i++)
        if (vg_st_at(f, i)->nbytes && (!data || (const unsigned char *)vg_st_at(f, i)->data < data)) data = vg_st_at(f, i)->data;
    size_t off = 8 + (size_t)hl + (size_t)((const unsigned char *)vg_st_find(f, "f32")->data - data);
    vg_st_close(f);
    b[off + 9] ^= 0x10;
    char bad[640]; snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    REQUIRE(write_bytes(bad, b, n) == 0);
    EXPECT_OPEN_FAILS(bad, "tensor \"f32\" is damaged");
    f = vg_st_open_unverified(bad, err, sizeof err);           /* the header is sound: it opens unverified */
    CHECK_MSG(f, "%s", err);
    if (f) {
        int damaged = 0;
        for (size_t i = 0; i < vg_st_count(f); i++) {
            const vg_st_tensor *u = vg_st_at(f, i);
            if (vg_crc32c(u->data, u->nbytes) != u->checksum) { damaged++; CHECK(!strcmp(u->name, "f32")); }
        }
        CHECK(damaged == 1);
        vg_st_close(f);
    }
    b[off + 9] ^= 0x10;                                           /* restored: it loads again */
    REQUIRE(write_bytes(bad, b, n) == 0);
    f = vg_st_open(bad, err, sizeof err);
    CHECK_MSG(f, "%s", err);
    vg_st_close(f);
    free(b);

    /* checksum entries that do not make sense */
    float one = 1.0f;
    char good[600];
    snprintf(good, sizeof good, "{\"__metadata__\":{\"crc32c.a\":\"%08x\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
             (unsigned)vg_crc32c(&one, 4));
    REQUIRE(write_raw(bad, good, &one, 4) == 0);
    f = vg_st_open(bad, err, sizeof err);
    CHECK_MSG(f && vg_st_find(f, "a")->has_checksum && vg_st_meta_count(f) == 0, "%s", err);
    vg_st_close(f);
    write_raw(bad, "{\"__metadata__\":{\"crc32c.b\":\"00000000\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &one, 4);
    EXPECT_OPEN_FAILS(bad, "checksum for tensor \"b\", which the file does not have");
    write_raw(bad, "{\"__metadata__\":{\"crc32c.a\":\"xyz\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &one, 4);
    EXPECT_OPEN_FAILS(bad, "checksum \"xyz\" is not 8 hexadecimal digits");
    write_raw(bad, "{\"__metadata__\":{\"crc32c.a\":\"00000000\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &one, 4);
    EXPECT_OPEN_FAILS(bad, "tensor \"a\" is damaged");
    write_raw(bad, "{\"__metadata__\":{\"crc32c.a\":\"00000000\",\"crc32c.a\":\"00000000\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &one, 4);
    EXPECT_OPEN_FAILS(bad, "checksum given twice");
    /* without checksums (another writer) the file loads as before */
    write_raw(bad, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &one, 4);
    f = vg_st_open(bad, err, sizeof err);
    CHECK_MSG(f && !vg_st_find(f, "a")->has_checksum, "%s", err);
    vg_st_close(f);
    vg_remove_flat_dir(dir);
}

VG_TEST(st_half_and_bfloat16_conversion) {
    CHECK(vg_st_f16_to_f32(0x3c00) == 1.0f);
    CHECK(vg_st_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(vg_st_f16_to_f32(0x0400) == ldexpf(1.0f, -14));       /* smallest normal */
    CHECK(vg_st_f16_to_f32(0x03ff) == ldexpf(1023.0f, -24));    /* largest subnormal */
    CHECK(vg_st_f16_to_f32(0x8001) == -ldexpf(1.0f, -24));
    CHECK(vg_st_f16_to_f32(0x3555) == 0.25f * (1.0f + 0x155 / 1024.0f));          /* ≈ 1/3 */
    CHECK(signbit(vg_st_f16_to_f32(0x8000)) && vg_st_f16_to_f32(0x8000) == 0.0f);
    CHECK(isinf(vg_st_f16_to_f32(0xfc00)) && vg_st_f16_to_f32(0xfc00) < 0);
    CHECK(isnan(vg_st_f16_to_f32(0x7e00)));
    CHECK(vg_st_bf16_to_f32(0x4049) == 3.140625f);
    CHECK(isinf(vg_st_bf16_to_f32(0x7f80)) && isnan(vg_st_bf16_to_f32(0x7fc0)));
}

VG_TEST(st_reader_and_writer_argument_errors) {
    char err[512] = "", *dir = make_tmpdir(); REQUIRE(dir);
    char path[600]; snprintf(path, sizeof path, "%s/a.safetensors", dir);
    vg_st_writer *w = example_writer(); REQUIRE(w);
    REQUIRE(vg_st_write(w, path, err, sizeof err) == 0);

    int64_t s2[] = {2}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, neg[] = {-1};
    float v[2] = {0};
    CHECK(vg_st_writer_add(w, "f32", VG_ST_F32, 1, s2, v, 8, err, sizeof err) < 0 && strstr(err, "duplicate"));
    CHECK(vg_st_writer_add(w, "x", VG_ST_F32, 1, s2, v, 4, err, sizeof err) < 0 && strstr(err, "need 8"));
    CHECK(vg_st_writer_add(w, "x", VG_ST_F32, 9, s9, v, 4, err, sizeof err) < 0 && strstr(err, "ndim"));
    CHECK(vg_st_writer_add(w, "x", VG_ST_F32, 1, neg, v, 0, err, sizeof err) < 0);
    CHECK(vg_st_writer_add(w, "__metadata__", VG_ST_F32, 1, s2, v, 8, err, sizeof err) < 0);
    CHECK(vg_st_writer_add(w, "", VG_ST_F32, 1, s2, v, 8, err, sizeof err) < 0);
    CHECK(vg_st_writer_add(w, "bad\xff", VG_ST_F32, 1, s2, v, 8, err, sizeof err) < 0);
    CHECK(vg_st_writer_add(w, "x", (vg_st_dtype)99, 1, s2, v, 8, err, sizeof err) < 0);
    CHECK(vg_st_writer_add(w, "x", VG_ST_F32, 1, s2, NULL, 8, err, sizeof err) < 0);
    CHECK(vg_st_writer_meta(w, "format", "again", err, sizeof err) < 0 && strstr(err, "duplicate"));
    CHECK(vg_st_writer_meta(w, "k", "\xc0\xaf", err, sizeof err) < 0);   /* overlong '/' */
    vg_st_writer_free(w);

    char bad_path[700]; snprintf(bad_path, sizeof bad_path, "%s/no/such/dir/x.safetensors", dir);
    w = vg_st_writer_new();
    CHECK(vg_st_write(w, bad_path, err, sizeof err) < 0 && strstr(err, bad_path));
    vg_st_writer_free(w);

    vg_st_file *f = vg_st_open(path, err, sizeof err);
    REQUIRE(f);
    float x[8]; int64_t q[8];
    CHECK(vg_st_read_f32(f, "f32", x, 5, err, sizeof err) < 0 && strstr(err, path) && strstr(err, "6 elements, expected 5"));
    CHECK(vg_st_read_f32(f, "missing", x, 1, err, sizeof err) < 0 && strstr(err, "no tensor named \"missing\""));
    CHECK(vg_st_read_i64(f, "f32", q, 6, err, sizeof err) < 0 && strstr(err, "not an integer"));
    vg_st_close(f);
    vg_st_close(NULL);

    CHECK(vg_st_open(dir, err, sizeof err) == NULL && strstr(err, "not a regular file"));
    snprintf(bad_path, sizeof bad_path, "%s/absent.safetensors", dir);
    CHECK(vg_st_open(bad_path, err, sizeof err) == NULL && strstr(err, bad_path) && strstr(err, "cannot open"));
    CHECK(vg_st_open(bad_path, NULL, 0) == NULL);            /* no error buffer is fine */
    vg_remove_flat_dir(dir);
}

/* ---- damaged files: each gives its own clear error ----------------------------------------- */

VG_TEST(st_corrupt_files_give_clear_errors) {
    char *dir = make_tmpdir(); REQUIRE(dir);
    char p[600], err[512];
    float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    snprintf(p, sizeof p, "%s/empty.safetensors", dir);
    write_bytes(p, "", 0);
    EXPECT_OPEN_FAILS(p, "is 0 bytes, too small");

    snprintf(p, sizeof p, "%s/four.safetensors", dir);
    write_bytes(p, "\x10\0\0\0", 4);
    EXPECT_OPEN_FAILS(p, "is 4 bytes, too small");

    snprintf(p, sizeof p, "%s/hlen.safetensors", dir);
    write_bytes(p, "\xe8\x03\0\0\0\0\0\0{}", 10);                 /* claims 1000 header bytes */
    EXPECT_OPEN_FAILS(p, "header length 1000 exceeds");

    snprintf(p, sizeof p, "%s/hlen_huge.safetensors", dir);
    write_bytes(p, "\xff\xff\xff\xff\xff\xff\xff\xff{}", 10);
    EXPECT_OPEN_FAILS(p, "exceeds");

    snprintf(p, sizeof p, "%s/notjson.safetensors", dir);
    write_raw(p, "hello, world", NULL, 0);
    EXPECT_OPEN_FAILS(p, "not a JSON object");

    snprintf(p, sizeof p, "%s/array.safetensors", dir);
    write_raw(p, "[1, 2]", NULL, 0);
    EXPECT_OPEN_FAILS(p, "not a JSON object");

    snprintf(p, sizeof p, "%s/truncjson.safetensors", dir);
    write_raw(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2", NULL, 0);
    EXPECT_OPEN_FAILS(p, "unexpected end of header");

    snprintf(p, sizeof p, "%s/truncstr.safetensors", dir);
    write_raw(p, "{\"a\": {\"dtype\": \"F3", NULL, 0);
    EXPECT_OPEN_FAILS(p, "unterminated string");

    snprintf(p, sizeof p, "%s/dtype.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]}}", data, 8);
    EXPECT_OPEN_FAILS(p, "tensor \"a\": unknown dtype \"F31\"");

    snprintf(p, sizeof p, "%s/mismatch.safetensors", dir);
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", data, 32);
    EXPECT_OPEN_FAILS(p, "tensor \"w\": shape [2, 3] of F32 needs 24 bytes but data_offsets [0, 20] span 20");

    snprintf(p, sizeof p, "%s/range.safetensors", dir);
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}}", data, 16);
    EXPECT_OPEN_FAILS(p, "tensor \"w\": data_offsets [0, 24] out of range");

    snprintf(p, sizeof p, "%s/backwards.safetensors", dir);
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", data, 16);
    EXPECT_OPEN_FAILS(p, "end before they begin");

    snprintf(p, sizeof p, "%s/overlap.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", data, 32);
    EXPECT_OPEN_FAILS(p, "tensors \"a\" [0, 16] and \"b\" [8, 24] overlap");

    snprintf(p, sizeof p, "%s/dup.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", data, 16);
    EXPECT_OPEN_FAILS(p, "duplicate tensor name \"a\"");

    snprintf(p, sizeof p, "%s/dupmeta.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", NULL, 0);
    EXPECT_OPEN_FAILS(p, "duplicate __metadata__ key \"k\"");

    snprintf(p, sizeof p, "%s/metanum.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"epoch\":3}}", NULL, 0);
    EXPECT_OPEN_FAILS(p, "__metadata__ values must be strings");

    snprintf(p, sizeof p, "%s/missing.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", data, 8);
    EXPECT_OPEN_FAILS(p, "tensor \"a\": missing shape");

    snprintf(p, sizeof p, "%s/float_shape.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", data, 8);
    EXPECT_OPEN_FAILS(p, "shape must hold non-negative integers");

    snprintf(p, sizeof p, "%s/neg_shape.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", data, 8);
    EXPECT_OPEN_FAILS(p, "shape must hold non-negative integers");

    snprintf(p, sizeof p, "%s/ninedims.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", data, 8);
    EXPECT_OPEN_FAILS(p, "more than 8 entries");

    snprintf(p, sizeof p, "%s/bigshape.safetensors", dir);
    write_raw(p, "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", data, 8);
    EXPECT_OPEN_FAILS(p, "shape is too large");

    snprintf(p, sizeof p, "%s/trailing.safetensors", dir);
    write_raw(p, "{} x", NULL, 0);
    EXPECT_OPEN_FAILS(p, "unexpected text after the header object");

    snprintf(p, sizeof p, "%s/comma.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"a\":\"b\"},}", NULL, 0);
    EXPECT_OPEN_FAILS(p, "expected a string");

    snprintf(p, sizeof p, "%s/deep.safetensors", dir);
    {
        char deep[600] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"x\":";
        size_t k = strlen(deep);
        for (int i = 0; i < 200; i++) deep[k++] = '[';
        deep[k] = 0;
        write_raw(p, deep, data, 4);
        EXPECT_OPEN_FAILS(p, "nesting deeper than");
    }

    snprintf(p, sizeof p, "%s/escape.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"a\":\"\\q\"}}", NULL, 0);
    EXPECT_OPEN_FAILS(p, "invalid escape");

    snprintf(p, sizeof p, "%s/surrogate.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"a\":\"\\ud83d x\"}}", NULL, 0);
    EXPECT_OPEN_FAILS(p, "unpaired high surrogate");

    snprintf(p, sizeof p, "%s/utf8.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"a\":\"\xed\xa0\x80\"}}", NULL, 0);   /* encoded surrogate */
    EXPECT_OPEN_FAILS(p, "invalid UTF-8");

    snprintf(p, sizeof p, "%s/ctrl.safetensors", dir);
    write_raw(p, "{\"__metadata__\":{\"a\":\"line\nbreak\"}}", NULL, 0);
    EXPECT_OPEN_FAILS(p, "control character");

    /* a good file cut in half: the data section comes up short */
    snprintf(p, sizeof p, "%s/good.safetensors", dir);
    vg_st_writer *w = example_writer(); REQUIRE(w);
    CHECK(vg_st_write(w, p, err, sizeof err) == 0);
    vg_st_writer_free(w);
    size_t n; unsigned char *b = read_bytes(p, &n);
    REQUIRE(b);
    uint64_t hl = 0; for (int i = 7; i >= 0; i--) hl = (hl << 8) | b[i];
    snprintf(p, sizeof p, "%s/half.safetensors", dir);
    size_t cut = 8 + (size_t)hl + (n - 8 - (size_t)hl) / 2;        /* half of the data section */
    write_bytes(p, b, cut);
    EXPECT_OPEN_FAILS(p, "out of range: the data section has only");
    write_bytes(p, b, n / 2);                                         /* half the file */
    EXPECT_OPEN_FAILS(p, "exceeds");
    free(b);
    vg_remove_flat_dir(dir);
}

VG_TEST(st_accepts_valid_json_variations) {
    char *dir = make_tmpdir(); REQUIRE(dir);
    char p[600], err[512] = "";
    float data[2] = {1.5f, -2.0f};
    snprintf(p, sizeof p, "%s/v.safetensors", dir);
    /* whitespace everywhere, escapes (\u00e9, surrogate pair), unknown keys of every kind skipped,
     * key order free, trailing padding spaces, a zero-size tensor sharing an offset, gaps allowed */
    write_raw(p, " { \"__metadata__\" : { \"n\\u00e9\\ud83d\\ude00\\/\" : \"a\\tb\\u0001\" } ,\n"
                 "\t\"x\" : { \"data_offsets\" : [ 0 , 8 ] , \"shape\" : [ 2 ] , \"dtype\" : \"F32\" ,"
                 " \"extra\" : {\"k\": [1.5e3, -0, true, false, null, \"s\", {}, []]} },"
                 " \"z\": {\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,4]} }        ", data, 8);
    vg_st_file *f = vg_st_open(p, err, sizeof err);
    CHECK_MSG(f, "%s", err);
    if (f) {
        CHECK(vg_st_meta(f, "n\xc3\xa9\xf0\x9f\x98\x80/") && !strcmp(vg_st_meta(f, "n\xc3\xa9\xf0\x9f\x98\x80/"), "a\tb\x01"));
        float x[2];
        CHECK(vg_st_read_f32(f, "x", x, 2, err, sizeof err) == 0 && x[0] == 1.5f && x[1] == -2.0f);
        CHECK(vg_st_find(f, "z") && vg_st_find(f, "z")->numel == 0);
        vg_st_close(f);
    }
    write_raw(p, "{}", NULL, 0);                                 /* no tensors at all */
    f = vg_st_open(p, err, sizeof err);
    CHECK_MSG(f && vg_st_count(f) == 0 && vg_st_meta_count(f) == 0, "%s", err);
    vg_st_close(f);
    vg_remove_flat_dir(dir);
}

/* ---- fuzz: damaged bytes never crash; they load or give an error naming the file ------------ */

VG_TEST(st_fuzz_damaged_files_never_crash) {
    char *dir = make_tmpdir(); REQUIRE(dir);
    char p[600], err[512];
    snprintf(p, sizeof p, "%s/base.safetensors", dir);
    vg_st_writer *w = example_writer(); REQUIRE(w);
    REQUIRE(vg_st_write(w, p, err, sizeof err) == 0);
    vg_st_writer_free(w);
    size_t n; unsigned char *base = read_bytes(p, &n);
    REQUIRE(base && n > 16);
    size_t hend = 0; for (int i = 7; i >= 0; i--) hend = (hend << 8) | base[i];
    hend += 8;                                            /* end of the header */
    unsigned char *buf = malloc(n + 16);
    static const char special[] = "\"\\{}[],:0123456789-.eEu \xff\x80\xc3\x00tfn";
    int ok = 0, failed = 0, bad_msg = 0;
    const char *label = "fuzz.safetensors";
    for (int it = 0; it < 6000; it++) {
        size_t len = n;
        memcpy(buf, base, n);
        int mode = (int)(xs_next() % 5);
        int flips = 1 + (int)(xs_next() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (xs_next() % 5 == 0) ? xs_next() % n : xs_next() % hend;  /* mostly the header */
            if (mode == 0) buf[at] ^= (unsigned char)(1u << (xs_next() % 8));
            else if (mode == 1) buf[at] = (unsigned char)special[xs_next() % (sizeof special - 1)];
            else if (mode == 2) buf[at] = (unsigned char)xs_next();
            else if (mode == 3 && at >= 8 && at < len) {                 /* delete a byte, keep the length field */
                memmove(buf + at, buf + at + 1, len - at - 1); len--;
            }
        }
        if (mode == 4) len = xs_next() % (n + 1);            /* truncate anywhere */
        vg_st_file *f = vg_st_open_memory(buf, len, label, err, sizeof err);
        if (f) {
            ok++;
            for (size_t i = 0; i < vg_st_count(f); i++) {   /* touch everything it returned */
                const vg_st_tensor *t = vg_st_at(f, i);
                double *d = malloc((t->numel ? t->numel : 1) * sizeof *d);
                if (d && vg_st_read_f64(f, t->name, d, t->numel, err, sizeof err) != 0) bad_msg++;
                free(d);
                if (vg_st_find(f, t->name) != t) bad_msg++;
            }
            for (size_t i = 0; i < vg_st_meta_count(f); i++) (void)strlen(vg_st_meta_value(f, i));
            vg_st_close(f);
        } else {
            failed++;
            if (!strstr(err, label)) bad_msg++;
        }
    }
    CHECK_MSG(bad_msg == 0, "%d fuzz cases gave an error without the file name or inconsistent data", bad_msg);
    CHECK(ok > 0 && failed > 0);           /* both outcomes happened: the fuzz reached the checks */

    /* every truncation through the file path too */
    int trunc_ok = 0;
    snprintf(p, sizeof p, "%s/trunc.safetensors", dir);
    for (size_t len = 0; len < n; len += 7) {
        write_bytes(p, base, len);
        err[0] = 0;
        vg_st_file *f = vg_st_open(p, err, sizeof err);
        if (f) { trunc_ok++; vg_st_close(f); }
        else CHECK_MSG(strstr(err, p), "truncated at %zu: %s", len, err);
    }
    CHECK(trunc_ok == 0);                  /* the example has data at the very end */
    free(buf); free(base);
    vg_remove_flat_dir(dir);
}

/* ---- atomic write ------------------------------------------------------------------------- */

VG_TEST(st_atomic_write_survives_crash_before_rename) {
    char *dir = make_tmpdir(); REQUIRE(dir);
    char p[600], tmp[700], err[512] = "";
    snprintf(p, sizeof p, "%s/ckpt.safetensors", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p, (long)getpid());

    float v1[4] = {1, 2, 3, 4}, v2[4] = {5, 6, 7, 8};
    int64_t s4[] = {4};
    vg_st_writer *w = vg_st_writer_new();
    REQUIRE(vg_st_writer_add(w, "w", VG_ST_F32, 1, s4, v1, sizeof v1, err, sizeof err) == 0);
    REQUIRE(vg_st_writer_meta(w, "step", "1", err, sizeof err) == 0);
    REQUIRE(vg_st_write(w, p, err, sizeof err) == 0);
    vg_st_writer_free(w);
    size_t n1; unsigned char *before = read_bytes(p, &n1);
    REQUIRE(before);
    CHECK(access(tmp, F_OK) != 0);                            /* no temp file left after success */

    /* a bigger second version, "crashing" after fsync of the temp file, before rename */
    w = vg_st_writer_new();
    REQUIRE(vg_st_writer_add(w, "w", VG_ST_F32, 1, s4, v2, sizeof v2, err, sizeof err) == 0);
    REQUIRE(vg_st_writer_meta(w, "step", "2 with a longer value", err, sizeof err) == 0);
    vg_fault_set("crash_before_rename", 1);
    int rc = vg_st_write(w, p, err, sizeof err);
    vg_fault_set("crash_before_rename", 0);
    CHECK(rc < 0 && strstr(err, "simulated crash") && strstr(err, p));
    CHECK(access(tmp, F_OK) == 0);                            /* the half-done work is left behind */

    size_t n2; unsigned char *after = read_bytes(p, &n2);
    REQUIRE(after);
    CHECK(n1 == n2 && memcmp(before, after, n1) == 0);        /* old file byte-identical */
    vg_st_file *f = vg_st_open(p, err, sizeof err);
    CHECK_MSG(f, "%s", err);
    float x[4] = {0};
    if (f) {
        CHECK(vg_st_read_f32(f, "w", x, 4, err, sizeof err) == 0 && x[0] == 1 && x[3] == 4);
        CHECK(!strcmp(vg_st_meta(f, "step"), "1"));
        vg_st_close(f);
    }
    free(after);

    /* the next save replaces the stale temp file and the checkpoint */
    CHECK(vg_st_write(w, p, err, sizeof err) == 0);
    vg_st_writer_free(w);
    CHECK(access(tmp, F_OK) != 0);
    f = vg_st_open(p, err, sizeof err);
    CHECK_MSG(f, "%s", err);
    if (f) {
        CHECK(vg_st_read_f32(f, "w", x, 4, err, sizeof err) == 0 && x[0] == 5 && x[3] == 8);
        CHECK(!strcmp(vg_st_meta(f, "step"), "2 with a longer value"));
        vg_st_close(f);
    }
    free(before);
    vg_remove_flat_dir(dir);
}
