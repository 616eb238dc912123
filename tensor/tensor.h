/* tensor.h — strided tensors, the step arena, and the raw (non-recording) helpers.
 *
 * A tensor is a view: (storage, offset, shape, strides) in elements, PyTorch order (outermost
 * first). Views share storage; `contiguous` materialises. Tensors created by ops live in the step
 * arena and are all released at once by vg_arena_reset(); parameters and other long-lived tensors
 * are "persistent" (heap) and are freed with vg_tensor_free().
 *
 * Errors are values: an op that cannot run (shape mismatch, bad axis…) returns NULL and sets a
 * message readable with vg_error(). Every op given a NULL input returns NULL, so a chain of calls
 * can be checked once at the end. */
#ifndef VG_TENSOR_H
#define VG_TENSOR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "real.h"
#include "rng.h"

#define VG_MAX_DIMS 8

typedef enum { VG_FLOAT32 = 0, VG_FLOAT64 = 1 } vg_dtype;
#ifdef VG_DOUBLE
#define VG_DTYPE VG_FLOAT64
#else
#define VG_DTYPE VG_FLOAT32
#endif

typedef struct vg_storage {
    real   *data;
    int64_t numel;
    bool    persistent;     /* heap-owned (freed with its owner tensor) vs. arena */
    int     consumers;      /* recorded ops that took a tensor over this storage as an input
                               (autograd/engine.c vg_record): vg_add_into writes only where 0 */
} vg_storage;

struct vg_node;

typedef struct vg_tensor {
    vg_storage *storage;
    int64_t  offset;                    /* in elements, into storage->data */
    int      ndim;
    int64_t  shape[VG_MAX_DIMS];
    int64_t  strides[VG_MAX_DIMS];      /* in elements; 0 for an expanded (broadcast) axis */
    vg_dtype dtype;                     /* always the build's element type (VG_DTYPE) */
    bool     requires_grad;
    bool     persistent;                /* the struct itself lives on the heap */
    bool     owns_storage;              /* persistent tensor that frees its storage */
    struct vg_tensor *grad;             /* contiguous, same shape; NULL until backward */
    struct vg_node   *node;             /* the op that produced it (NULL for leaves) */
    const char *name;                   /* optional, for printing and graphs */
    int      grad_pending;              /* engine bookkeeping: backward rules yet to add into .grad */
} vg_tensor;

/* `vg_zeros(VG_DIMS(2, 3))` expands to `vg_zeros(2, (int64_t[]){2, 3})`. */
#define VG_DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* ---- errors ---- */
const char *vg_error(void);                         /* last error message ("" if none) */
void        vg_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void        vg_clear_error(void);

/* ---- the step arena: O(1) release of everything a training step created ---- */
void  *vg_arena_alloc(size_t bytes);                /* 64-byte aligned, uninitialised */
typedef struct { int chunk; size_t used; } vg_arena_mark;
vg_arena_mark vg_arena_get_mark(void);
void   vg_arena_release(vg_arena_mark m);           /* free everything allocated after m */
void   vg_arena_reset(void);                        /* free everything (end of a step) */
/* free everything allocated after m except t's values: returned as a contiguous tensor placed at m
 * (a computation that records no graph drops its intermediates once its result exists) */
vg_tensor *vg_arena_release_keep(vg_arena_mark m, vg_tensor *t);
size_t vg_arena_bytes_reserved(void);               /* memory held by the arena (reused) */
size_t vg_arena_bytes_used(void);
void   vg_arena_free_all(void);                     /* return the arena's memory to the OS */

/* ---- creation (in the arena) ---- */
vg_tensor *vg_empty(int ndim, const int64_t *shape);
vg_tensor *vg_zeros(int ndim, const int64_t *shape);
vg_tensor *vg_ones(int ndim, const int64_t *shape);
vg_tensor *vg_full(int ndim, const int64_t *shape, real value);
vg_tensor *vg_arange(double start, double end, double step);            /* 1-D */
vg_tensor *vg_from_array(int ndim, const int64_t *shape, const real *data);  /* copies */
vg_tensor *vg_randn(vg_rng *rng, int ndim, const int64_t *shape, double mean, double std);
vg_tensor *vg_rand(vg_rng *rng, int ndim, const int64_t *shape, double lo, double hi);
vg_tensor *vg_trunc_normal(vg_rng *rng, int ndim, const int64_t *shape,
                           double mean, double std, double a, double b);
vg_tensor *vg_empty_like(const vg_tensor *t);

/* ---- persistent tensors (parameters, optimizer state, gradcheck inputs) ---- */
vg_tensor *vg_persistent_zeros(int ndim, const int64_t *shape);
vg_tensor *vg_persist(const vg_tensor *t);          /* contiguous heap copy, a leaf */
vg_tensor *vg_param(int ndim, const int64_t *shape); /* persistent zeros, requires_grad */
void       vg_tensor_free(vg_tensor *t);            /* persistent only; NULL is fine */
/* a persistent contiguous tensor of this shape over base's storage from element `offset` (base
 * persistent and contiguous; the view does not own the storage: free base after the view) */
vg_tensor *vg_persistent_view(const vg_tensor *base, int64_t offset, int ndim, const int64_t *shape);

/* ---- queries ---- */
int64_t vg_numel(const vg_tensor *t);
bool    vg_is_contiguous(const vg_tensor *t);
bool    vg_same_shape(const vg_tensor *a, const vg_tensor *b);
static inline real *vg_data(const vg_tensor *t) { return t->storage->data + t->offset; }
real    vg_item(const vg_tensor *t);                /* the value of a 1-element tensor */
real    vg_get(const vg_tensor *t, const int64_t *index);   /* strided element read */
void    vg_set(vg_tensor *t, const int64_t *index, real v); /* strided element write */
void    vg_copy_to_array(const vg_tensor *t, real *out);    /* row-major gather */
int     vg_shape_str(const vg_tensor *t, char *buf, size_t n); /* "(2, 3, 4)" */
void    vg_fprint(FILE *f, const vg_tensor *t, const char *label, int max_values);

/* ---- raw helpers (no graph recorded) ---- */
vg_tensor *vg_view_raw(const vg_tensor *base, int ndim, const int64_t *shape,
                       const int64_t *strides, int64_t offset);
vg_tensor *vg_contiguous_raw(const vg_tensor *t);  /* t itself if already contiguous */
void       vg_copy_raw(vg_tensor *dst, const vg_tensor *src);   /* same shape, any strides */
void       vg_fill_raw(vg_tensor *t, real v);
/* Broadcast shapes a and b (NumPy rules) into out; returns ndim or -1 with an error set. */
int        vg_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out);
/* strides of t seen as broadcast to (ndim, shape); NULL-safe error if incompatible */
bool       vg_broadcast_strides(const vg_tensor *t, int ndim, const int64_t *shape, int64_t *strides);
/* strides a view of `t` with `shape` would have, or false (PyTorch's computeStride) */
bool       vg_view_strides(const vg_tensor *t, int ndim, const int64_t *shape, int64_t *strides);
#endif
