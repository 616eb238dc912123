/* fuzz_safetensors.c — the safetensors reader (tensor/safetensors.c) on arbitrary bytes.
 * Properties: a rejected file gets an error naming it; an accepted file's every tensor converts
 * through all three readers (F32, F64, I64) without touching memory outside the file; and what
 * the reader accepts, the writer writes back so that the reader reads the same names, dtypes,
 * shapes, bytes and metadata (or the writer refuses with a message); the written file records a
 * checksum for every tensor, and one flipped bit in its data is refused, naming that tensor. */
#include "fuzz/common.h"
#include "tensor/safetensors.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "fuzz.safetensors"

static void read_all_ways(const vg_st_file *f) {
    char err[512];
    for (size_t i = 0; i < vg_st_count(f); i++) {
        const vg_st_tensor *t = vg_st_at(f, i);
        fuzz_require(vg_st_find(f, t->name) != NULL, "every tensor is found by its name");
        size_t n = t->numel;                    /* ≤ bytes of the file: numel · size == nbytes */
        float *a = malloc((n ? n : 1) * sizeof *a);
        double *b = malloc((n ? n : 1) * sizeof *b);
        int64_t *c = malloc((n ? n : 1) * sizeof *c);
        if (!a || !b || !c) abort();
        fuzz_require(vg_st_read_f32(f, t->name, a, n, err, sizeof err) == 0, "F32 read of an accepted tensor");
        fuzz_require(vg_st_read_f64(f, t->name, b, n, err, sizeof err) == 0, "F64 read of an accepted tensor");
        int ri = vg_st_read_i64(f, t->name, c, n, err, sizeof err);
        int is_int = t->dtype == VG_ST_I64 || t->dtype == VG_ST_I32 || t->dtype == VG_ST_U8;
        fuzz_require(ri == 0 ? is_int : !is_int && err[0], "I64 read only of integer tensors");
        if (n) fuzz_require(vg_st_read_f32(f, t->name, a, n - 1, err, sizeof err) != 0 && err[0],
                            "a wrong element count is refused");
        free(a); free(b); free(c);
    }
    for (size_t i = 0; i < vg_st_meta_count(f); i++)
        fuzz_require(vg_st_meta(f, vg_st_meta_key(f, i)) != NULL, "every metadata key is found");
}

/* write f back with the writer and compare what the reader makes of the result */
static void round_trip(const vg_st_file *f) {
    char err[512] = "", path[4200];
    vg_st_writer *w = vg_st_writer_new();
    if (!w) abort();
    int ok = 1;
    for (size_t i = 0; ok && i < vg_st_count(f); i++) {
        const vg_st_tensor *t = vg_st_at(f, i);
        if (vg_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, err, sizeof err)) ok = 0;
    }
    for (size_t i = 0; ok && i < vg_st_meta_count(f); i++)
        if (vg_st_writer_meta(w, vg_st_meta_key(f, i), vg_st_meta_value(f, i), err, sizeof err)) ok = 0;
    if (!ok) { fuzz_require(err[0] != 0, "the writer says why it refuses"); vg_st_writer_free(w); return; }
    snprintf(path, sizeof path, "%s/rt.safetensors", fuzz_scratch());
    fuzz_require(vg_st_write(w, path, err, sizeof err) == 0, "the writer writes what it accepted");
    vg_st_writer_free(w);
    vg_st_file *g = vg_st_open(path, err, sizeof err);
    if (!g) { fprintf(stderr, "fuzz: re-reading the written file: %s\n", err); abort(); }
    fuzz_require(vg_st_count(g) == vg_st_count(f) && vg_st_meta_count(g) == vg_st_meta_count(f),
                 "round trip keeps the tensor and metadata counts");
    for (size_t i = 0; i < vg_st_count(f); i++) {
        const vg_st_tensor *a = vg_st_at(f, i), *b = vg_st_at(g, i);
        fuzz_require(!strcmp(a->name, b->name) && a->dtype == b->dtype && a->ndim == b->ndim &&
                     !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) && a->nbytes == b->nbytes &&
                     (a->nbytes == 0 || !memcmp(a->data, b->data, a->nbytes)),
                     "round trip keeps every tensor");
    }
    for (size_t i = 0; i < vg_st_meta_count(f); i++) {
        const char *v = vg_st_meta(g, vg_st_meta_key(f, i));
        fuzz_require(v && !strcmp(v, vg_st_meta_value(f, i)), "round trip keeps the metadata");
    }
    /* every tensor written carries its checksum; damage to the last data byte is named */
    const vg_st_tensor *last = NULL;
    for (size_t i = 0; i < vg_st_count(g); i++) {
        const vg_st_tensor *t = vg_st_at(g, i);
        fuzz_require(t->has_checksum && t->checksum == vg_crc32c(t->data, t->nbytes), "the writer records every checksum");
        if (t->nbytes && (!last || (const unsigned char *)t->data > (const unsigned char *)last->data)) last = t;
    }
    if (last) {
        FILE *fp = fopen(path, "rb");
        if (!fp) abort();
        fseek(fp, 0, SEEK_END);
        long n = ftell(fp);
        fseek(fp, 0, SEEK_SET);
        unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
        if (!b || n <= 0 || fread(b, 1, (size_t)n, fp) != (size_t)n) abort();
        fclose(fp);
        b[n - 1] ^= 0x01;                       /* the data section ends the file, without gaps */
        vg_st_file *h = vg_st_open_memory(b, (size_t)n, NAME, err, sizeof err);
        fuzz_require(h == NULL && strstr(err, NAME) && strstr(err, "is damaged") &&
                     (strlen(last->name) > 100 || strstr(err, last->name)), "a flipped data bit is named by its tensor");
        vg_st_close(h);
        free(b);
    }
    vg_st_close(g);
    remove(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512] = "";
    vg_st_file *f = vg_st_open_memory(data, size, NAME, err, sizeof err);
    if (!f) { fuzz_expect_error(err, NAME); return 0; }
    fuzz_note("accepted: %zu tensors, %zu metadata keys", vg_st_count(f), vg_st_meta_count(f));
    read_all_ways(f);
    round_trip(f);
    vg_st_close(f);
    return 0;
}
