/* safetensors.h — reading and writing the safetensors format, independent of any tensor struct.
 *
 * File layout (https://github.com/huggingface/safetensors):
 *   u64 little-endian N | N bytes of UTF-8 JSON header (may end in spaces) | raw little-endian data
 *   header: {"__metadata__": {"key": "value", ...},
 *            "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
 *   offsets are relative to the start of the data section (byte 8 + N).
 *
 * Checksums: the writer records the CRC-32C of every tensor's bytes in __metadata__, under the key
 * "crc32c.<tensor name>" (8 lowercase hex digits), and vg_st_open checks each one it finds, so a
 * file damaged after it was written (bit rot, a bad copy) is refused with an error naming the
 * tensor. Readers that do not know the keys (the safetensors library, PyTorch) ignore them as any
 * metadata. Files without checksums (written elsewhere, or before vitgrad kept them) load as before.
 *
 * Errors are values: functions return NULL / -1 and write a message naming the file and what was
 * wrong into the caller's `err` buffer (may be NULL when errlen is 0). Nothing exits or aborts,
 * and no input file, however damaged, makes the reader crash. */
#ifndef VG_SAFETENSORS_H
#define VG_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>
#include "base/crc32c.h"   /* vg_crc32c: the checksum each tensor carries */

#define VG_ST_MAX_DIMS 8

typedef enum vg_st_dtype {
    VG_ST_F64, VG_ST_F32, VG_ST_F16, VG_ST_BF16, VG_ST_I64, VG_ST_I32, VG_ST_U8,
    VG_ST_NUM_DTYPES
} vg_st_dtype;

size_t      vg_st_dtype_size(vg_st_dtype dt);              /* bytes per element, 0 if unknown */
const char *vg_st_dtype_name(vg_st_dtype dt);              /* "F32", ...; "?" if unknown */
int         vg_st_dtype_parse(const char *s, vg_st_dtype *out);   /* 0, or -1 if unknown */

/* ---- writing -------------------------------------------------------------------------------
 * Build a list of entries, then write it. The writer copies names and metadata strings but only
 * keeps the data POINTER: the data must stay alive until vg_st_write returns.
 * Any dtype can be written (the bytes are written as given; F16/BF16 are not converted).
 * The header lists entries in the order they were added. In the data section tensors are laid
 * out by element size, largest first (stable), with no gaps; the header is padded with spaces so
 * the data section starts at a multiple of 8 — together every tensor is aligned to its element
 * size, and the file loads with the official safetensors library (which forbids gaps). */
typedef struct vg_st_writer vg_st_writer;

vg_st_writer *vg_st_writer_new(void);                      /* NULL only if out of memory */
void          vg_st_writer_free(vg_st_writer *w);
/* nbytes must equal product(shape) * dtype size; ndim 0..VG_ST_MAX_DIMS (0 = scalar);
 * name must be non-empty valid UTF-8, not "__metadata__", and not already added. */
int vg_st_writer_add(vg_st_writer *w, const char *name, vg_st_dtype dtype,
                     int ndim, const int64_t *shape, const void *data, size_t nbytes,
                     char *err, size_t errlen);
/* a metadata string pair (valid UTF-8; a key may be set once; "crc32c.*" keys are the writer's own) */
int vg_st_writer_meta(vg_st_writer *w, const char *key, const char *value,
                      char *err, size_t errlen);
/* Writes atomically (base/durable.h): to "<path>.tmp.<pid>" in the same directory, fsync, rename
 * over path, fsync the directory. On error the temp file is removed and an existing `path` is
 * untouched. Test fault "crash_before_rename" (base/fault.h): the write stops after the temp file
 * is fsynced and before the rename, returns -1 and leaves the temp file, as a crash there would. */
int vg_st_write(const vg_st_writer *w, const char *path, char *err, size_t errlen);

/* ---- reading -------------------------------------------------------------------------------
 * vg_st_open reads the whole file into memory and validates all of it before returning:
 * header length inside the file and < 100 MB; strict JSON; every entry has a known dtype,
 * a shape of ≤ 8 non-negative integers, data_offsets [b, e] with b ≤ e ≤ data size and
 * e − b == product(shape) × dtype size; entries do not overlap; names are unique;
 * metadata values are strings; every "crc32c.<name>" key names a tensor of the file, once, as 8
 * hex digits, and that tensor's bytes have that CRC-32C (else the error names the damaged tensor).
 * Unknown keys inside an entry are skipped. The checksum keys are not listed as metadata
 * (vg_st_meta*): they are in each tensor's has_checksum / checksum. */
typedef struct vg_st_file vg_st_file;

typedef struct vg_st_tensor {
    const char  *name;
    vg_st_dtype  dtype;
    int          ndim;
    int64_t      shape[VG_ST_MAX_DIMS];   /* PyTorch order, outermost first */
    size_t       numel;                   /* product(shape); 1 for a scalar */
    const void  *data;                    /* little-endian, aligned only if the writer aligned it */
    size_t       nbytes;
    int          has_checksum;            /* the file records a CRC-32C for it: */
    uint32_t     checksum;                /*   that value (vg_st_open checked it) */
} vg_st_tensor;

vg_st_file *vg_st_open(const char *path, char *err, size_t errlen);
/* the same without comparing checksums (the header is checked as always): for a tool that lists
 * every damaged tensor of a file (./inspect verify) rather than stopping at the first */
vg_st_file *vg_st_open_unverified(const char *path, char *err, size_t errlen);
/* the same from bytes in memory (copied); `label` stands in for the file name in messages */
vg_st_file *vg_st_open_memory(const void *bytes, size_t n, const char *label,
                              char *err, size_t errlen);
void        vg_st_close(vg_st_file *f);                    /* NULL is fine */

size_t              vg_st_count(const vg_st_file *f);      /* tensors, in header order */
const vg_st_tensor *vg_st_at(const vg_st_file *f, size_t i);            /* NULL if out of range */
const vg_st_tensor *vg_st_find(const vg_st_file *f, const char *name);  /* NULL if absent */

/* Copy tensor `name` into out[0..n), converting from any dtype (F64/F32/F16/BF16/I64/I32/U8).
 * Fails if the tensor is absent or does not have exactly n elements. */
int vg_st_read_f32(const vg_st_file *f, const char *name, float *out, size_t n,
                   char *err, size_t errlen);
int vg_st_read_f64(const vg_st_file *f, const char *name, double *out, size_t n,
                   char *err, size_t errlen);
/* integer dtypes only (I64/I32/U8) — e.g. labels, step counters */
int vg_st_read_i64(const vg_st_file *f, const char *name, int64_t *out, size_t n,
                   char *err, size_t errlen);

const char *vg_st_meta(const vg_st_file *f, const char *key);  /* NULL if absent */
size_t      vg_st_meta_count(const vg_st_file *f);
const char *vg_st_meta_key(const vg_st_file *f, size_t i);     /* header order; NULL if out of range */
const char *vg_st_meta_value(const vg_st_file *f, size_t i);

/* half / bfloat16 bit patterns to float (exact, including subnormals, inf and NaN) */
float vg_st_f16_to_f32(uint16_t h);
float vg_st_bf16_to_f32(uint16_t b);
#endif
