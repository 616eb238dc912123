/* tensor.c — tensor structs, creation, element access, printing, strided copy and views. */
#include "tensor.h"
#include "strided.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- errors */
static _Thread_local char error_buf[1024];

const char *vg_error(void) { return error_buf; }
void vg_clear_error(void) { error_buf[0] = 0; }
void vg_set_error(const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    vsnprintf(error_buf, sizeof error_buf, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- creation */
static void set_contiguous_strides(vg_tensor *t) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) { t->strides[d] = s; s *= t->shape[d]; }
}

static bool check_shape(int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > VG_MAX_DIMS) { vg_set_error("tensor: %d dimensions (at most %d)", ndim, VG_MAX_DIMS); return false; }
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0) { vg_set_error("tensor: negative size %lld in dimension %d", (long long)shape[d], d); return false; }
    return true;
}

static int64_t shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* A contiguous arena tensor of n elements: struct, storage, then the data (allocated here unless
 * given: data already in the arena). */
static vg_tensor *arena_tensor(int ndim, const int64_t *shape, int64_t n, real *data) {
    vg_tensor *t = vg_arena_alloc(sizeof *t);
    memset(t, 0, sizeof *t);
    vg_storage *s = vg_arena_alloc(sizeof *s);
    s->data = data ? data : vg_arena_alloc(sizeof(real) * (size_t)(n ? n : 1));
    s->numel = n;
    s->persistent = false;
    s->consumers = 0;
    t->storage = s;
    t->ndim = ndim;
    t->dtype = VG_DTYPE;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    set_contiguous_strides(t);
    return t;
}

vg_tensor *vg_empty(int ndim, const int64_t *shape) {
    if (!check_shape(ndim, shape)) return NULL;
    return arena_tensor(ndim, shape, shape_numel(ndim, shape), NULL);
}

/* Everything allocated after m is dead except t's values, which may lie anywhere (after m, before
 * it, on the heap). Their contiguous copy is made first, then the arena goes back to m and the
 * values move down to m with memmove (the two ranges may overlap; nothing else after m is read
 * again), and only then are the new struct and storage allocated after them. */
vg_tensor *vg_arena_release_keep(vg_arena_mark m, vg_tensor *t) {
    if (!t) { vg_arena_release(m); return NULL; }
    t = vg_contiguous_raw(t);
    const int ndim = t->ndim;
    int64_t shape[VG_MAX_DIMS];
    if (ndim) memcpy(shape, t->shape, sizeof(int64_t) * (size_t)ndim);
    const int64_t n = vg_numel(t);
    const real *src = vg_data(t);
    vg_arena_release(m);
    real *dst = vg_arena_alloc(sizeof(real) * (size_t)(n ? n : 1));
    if (n && dst != src) memmove(dst, src, sizeof(real) * (size_t)n);
    return arena_tensor(ndim, shape, n, dst);
}

vg_tensor *vg_full(int ndim, const int64_t *shape, real value) {
    vg_tensor *t = vg_empty(ndim, shape);
    if (t) vg_fill_raw(t, value);
    return t;
}
vg_tensor *vg_zeros(int ndim, const int64_t *shape) { return vg_full(ndim, shape, 0); }
vg_tensor *vg_ones(int ndim, const int64_t *shape) { return vg_full(ndim, shape, 1); }
vg_tensor *vg_empty_like(const vg_tensor *t) { return t ? vg_empty(t->ndim, t->shape) : NULL; }

vg_tensor *vg_arange(double start, double end, double step) {
    if (step == 0 || (end - start) / step < 0) { vg_set_error("arange: empty or infinite range (%g, %g, %g)", start, end, step); return NULL; }
    int64_t n = (int64_t)ceil((end - start) / step);
    vg_tensor *t = vg_empty(1, &n);
    real *p = vg_data(t);
    for (int64_t i = 0; i < n; i++) p[i] = (real)(start + (double)i * step);
    return t;
}

vg_tensor *vg_from_array(int ndim, const int64_t *shape, const real *data) {
    vg_tensor *t = vg_empty(ndim, shape);
    if (t) memcpy(vg_data(t), data, sizeof(real) * (size_t)vg_numel(t));
    return t;
}

vg_tensor *vg_randn(vg_rng *rng, int ndim, const int64_t *shape, double mean, double std) {
    vg_tensor *t = vg_empty(ndim, shape);
    if (!t) return NULL;
    real *p = vg_data(t);
    for (int64_t i = 0; i < vg_numel(t); i++) p[i] = (real)(mean + std * vg_rng_normal(rng));
    return t;
}

vg_tensor *vg_rand(vg_rng *rng, int ndim, const int64_t *shape, double lo, double hi) {
    vg_tensor *t = vg_empty(ndim, shape);
    if (!t) return NULL;
    real *p = vg_data(t);
    for (int64_t i = 0; i < vg_numel(t); i++) p[i] = (real)(lo + (hi - lo) * vg_rng_uniform(rng));
    return t;
}

vg_tensor *vg_trunc_normal(vg_rng *rng, int ndim, const int64_t *shape,
                           double mean, double std, double a, double b) {
    vg_tensor *t = vg_empty(ndim, shape);
    if (!t) return NULL;
    real *p = vg_data(t);
    for (int64_t i = 0; i < vg_numel(t); i++) p[i] = (real)vg_rng_trunc_normal(rng, mean, std, a, b);
    return t;
}

/* ---------------------------------------------------------------- persistent tensors */
vg_tensor *vg_persistent_zeros(int ndim, const int64_t *shape) {
    if (!check_shape(ndim, shape)) return NULL;
    int64_t n = shape_numel(ndim, shape);
    vg_tensor *t = calloc(1, sizeof *t);
    vg_storage *s = calloc(1, sizeof *s);
    size_t bytes = (sizeof(real) * (size_t)(n ? n : 1) + 63) & ~(size_t)63;
    s->data = aligned_alloc(64, bytes);
    if (!t || !s || !s->data) { fprintf(stderr, "vitgrad: out of memory\n"); abort(); }
    memset(s->data, 0, bytes);
    s->numel = n;
    s->persistent = true;
    t->storage = s;
    t->ndim = ndim;
    t->dtype = VG_DTYPE;
    t->persistent = true;
    t->owns_storage = true;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    set_contiguous_strides(t);
    return t;
}

vg_tensor *vg_persist(const vg_tensor *src) {
    if (!src) return NULL;
    vg_tensor *t = vg_persistent_zeros(src->ndim, src->shape);
    vg_copy_raw(t, src);
    t->name = src->name;
    return t;
}

vg_tensor *vg_persistent_view(const vg_tensor *base, int64_t offset, int ndim, const int64_t *shape) {
    if (!base || !check_shape(ndim, shape)) return NULL;
    if (!base->persistent || !vg_is_contiguous(base) || offset < 0 || offset + shape_numel(ndim, shape) > vg_numel(base)) {
        vg_set_error("persistent view: out of the base tensor's range or base not persistent and contiguous");
        return NULL;
    }
    vg_tensor *t = calloc(1, sizeof *t);
    if (!t) { fprintf(stderr, "vitgrad: out of memory\n"); abort(); }
    t->storage = base->storage;
    t->offset = base->offset + offset;
    t->ndim = ndim;
    t->dtype = VG_DTYPE;
    t->persistent = true;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    set_contiguous_strides(t);
    return t;
}

vg_tensor *vg_param(int ndim, const int64_t *shape) {
    vg_tensor *t = vg_persistent_zeros(ndim, shape);
    if (t) t->requires_grad = true;
    return t;
}

void vg_tensor_free(vg_tensor *t) {
    if (!t || !t->persistent) return;
    if (t->grad && t->grad->persistent) vg_tensor_free(t->grad);
    if (t->owns_storage) { free(t->storage->data); free(t->storage); }
    free(t);
}

/* ---------------------------------------------------------------- queries */
int64_t vg_numel(const vg_tensor *t) { return shape_numel(t->ndim, t->shape); }

bool vg_is_contiguous(const vg_tensor *t) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != s) return false;
        s *= t->shape[d];
    }
    return true;
}

bool vg_same_shape(const vg_tensor *a, const vg_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++) if (a->shape[d] != b->shape[d]) return false;
    return true;
}

static int64_t index_offset(const vg_tensor *t, const int64_t *index) {
    int64_t o = t->offset;
    for (int d = 0; d < t->ndim; d++) o += index[d] * t->strides[d];
    return o;
}
real vg_get(const vg_tensor *t, const int64_t *index) { return t->storage->data[index_offset(t, index)]; }
void vg_set(vg_tensor *t, const int64_t *index, real v) { t->storage->data[index_offset(t, index)] = v; }

real vg_item(const vg_tensor *t) { return t->storage->data[t->offset]; }

int vg_shape_str(const vg_tensor *t, char *buf, size_t n) {
    int len = snprintf(buf, n, "(");
    for (int d = 0; d < t->ndim; d++)
        len += snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    len += snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, t->ndim == 1 ? ",)" : ")");
    return len;
}

/* ---------------------------------------------------------------- strided iteration */
void vg_copy_raw(vg_tensor *dst, const vg_tensor *src) {
    if (vg_is_contiguous(dst) && vg_is_contiguous(src)) {
        real *d = vg_data(dst);
        const real *s = vg_data(src);
        const int64_t n = vg_numel(dst), CH = 1 << 16;
        if (n <= (1 << 18) || (d < s + n && s < d + n)) {   /* small, or overlapping: one memmove */
            memmove(d, s, sizeof(real) * (size_t)n);
            return;
        }
        #pragma omp parallel for schedule(static)             /* big gradient copies: both cores */
        for (int64_t c = 0; c < (n + CH - 1) / CH; c++)
            memcpy(d + c * CH, s + c * CH, sizeof(real) * (size_t)(n - c * CH < CH ? n - c * CH : CH));
        return;
    }
    if (dst->ndim == 0) { *vg_data(dst) = *vg_data(src); return; }
    strided_iter it = {dst->ndim, dst->shape, {dst->strides, src->strides, NULL},
                       {dst->offset, src->offset, 0}, 2};
    real *d = dst->storage->data; const real *s = src->storage->data;
    int64_t n = dst->shape[dst->ndim - 1], sd = dst->strides[dst->ndim - 1], ss = src->strides[src->ndim - 1];
    FOR_EACH_ROW_PARALLEL(it, vg_numel(dst) > 65536 && dst->storage != src->storage, {
        real *dp = d + o_[0]; const real *sp = s + o_[1];
        for (int64_t j = 0; j < n; j++) dp[j * sd] = sp[j * ss];
    });
}

void vg_copy_to_array(const vg_tensor *t, real *out) {
    vg_tensor tmp;
    memset(&tmp, 0, sizeof tmp);
    vg_storage st = {out, vg_numel(t), false};
    tmp.storage = &st; tmp.ndim = t->ndim;
    memcpy(tmp.shape, t->shape, sizeof tmp.shape);
    set_contiguous_strides(&tmp);
    vg_copy_raw(&tmp, t);
}

void vg_fill_raw(vg_tensor *t, real v) {
    if (vg_is_contiguous(t)) {
        real *p = vg_data(t);
        for (int64_t i = 0, n = vg_numel(t); i < n; i++) p[i] = v;
        return;
    }
    if (t->ndim == 0) { *vg_data(t) = v; return; }
    strided_iter it = {t->ndim, t->shape, {t->strides, NULL, NULL}, {t->offset, 0, 0}, 1};
    int64_t n = t->shape[t->ndim - 1], s = t->strides[t->ndim - 1];
    real *d = t->storage->data;
    FOR_EACH_ROW(it, { for (int64_t j = 0; j < n; j++) d[o_[0] + j * s] = v; });
}

vg_tensor *vg_view_raw(const vg_tensor *base, int ndim, const int64_t *shape,
                       const int64_t *strides, int64_t offset) {
    vg_tensor *t = vg_arena_alloc(sizeof *t);
    memset(t, 0, sizeof *t);
    t->storage = base->storage;
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = base->dtype;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (ndim) memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    return t;
}

vg_tensor *vg_contiguous_raw(const vg_tensor *t) {
    if (vg_is_contiguous(t)) return (vg_tensor *)t;
    vg_tensor *c = vg_empty(t->ndim, t->shape);
    vg_copy_raw(c, t);
    return c;
}

/* ---------------------------------------------------------------- broadcasting and views */
int vg_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) {
            vg_set_error("cannot broadcast: size %lld vs %lld at dimension %d of the broadcast shape",
                         (long long)da, (long long)db, i);
            return -1;
        }
        out[i] = da == 1 ? db : da;
    }
    return n;
}

bool vg_broadcast_strides(const vg_tensor *t, int ndim, const int64_t *shape, int64_t *strides) {
    if (t->ndim > ndim) { vg_set_error("cannot broadcast a %d-d tensor to %d dimensions", t->ndim, ndim); return false; }
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        if (i < lead) { strides[i] = 0; continue; }
        int64_t s = t->shape[i - lead];
        if (s == shape[i]) strides[i] = t->strides[i - lead];
        else if (s == 1) strides[i] = 0;
        else { vg_set_error("cannot broadcast size %lld to %lld at dimension %d", (long long)s, (long long)shape[i], i); return false; }
    }
    return true;
}

/* PyTorch's computeStride: a view is possible when each run of new dimensions maps onto a run of
 * old dimensions that is contiguous in memory ("chunks" of the old shape). */
bool vg_view_strides(const vg_tensor *t, int ndim, const int64_t *shape, int64_t *strides) {
    int64_t numel = vg_numel(t);
    if (numel == 0 || t->ndim == 0) {
        int64_t s = 1;
        for (int d = ndim - 1; d >= 0; d--) { strides[d] = s; s *= shape[d] ? shape[d] : 1; }
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base_stride = t->strides[t->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tensor_numel *= t->shape[td];
        if (td == 0 || (t->shape[td - 1] != 1 && t->strides[td - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) { chunk_base_stride = t->strides[td - 1]; tensor_numel = 1; view_numel = 1; }
        }
    }
    return view_d == -1;
}

/* ---------------------------------------------------------------- printing */
void vg_fprint(FILE *f, const vg_tensor *t, const char *label, int max_values) {
    if (!t) { fprintf(f, "%s: NULL (%s)\n", label ? label : "tensor", vg_error()); return; }
    char sh[128], st[128];
    vg_shape_str(t, sh, sizeof sh);
    int len = snprintf(st, sizeof st, "(");
    for (int d = 0; d < t->ndim; d++) len += snprintf(st + len, sizeof st - (size_t)len, "%s%lld", d ? ", " : "", (long long)t->strides[d]);
    snprintf(st + len, sizeof st - (size_t)len, ")");
    fprintf(f, "%s: shape %s strides %s offset %lld %s%s%s\n", label ? label : (t->name ? t->name : "tensor"),
            sh, st, (long long)t->offset, VG_REAL_NAME, t->requires_grad ? " requires_grad" : "",
            t->node ? "" : " leaf");
    int64_t n = vg_numel(t), idx[VG_MAX_DIMS] = {0};
    int64_t show = max_values < 0 || n <= max_values ? n : max_values;
    for (int64_t i = 0; i < show; i++) {
        int opens = 0;   /* dimensions whose index just wrapped to 0 open a new bracket */
        for (int d = t->ndim - 1; d >= 0 && idx[d] == 0; d--) opens++;
        if (i > 0) {
            if (opens) fprintf(f, ",\n%*s", t->ndim - opens, "");
            else fputs(", ", f);
        }
        for (int k = 0; k < opens; k++) fputc('[', f);
        fprintf(f, "%.6g", (double)vg_get(t, idx));
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
            fputc(']', f);
        }
    }
    if (show < n) fprintf(f, " ... (%lld more)", (long long)(n - show));
    fputc('\n', f);
}

