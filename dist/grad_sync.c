/* grad_sync.c — the gradient bucketer: sums gradients over ranks while backward is still running.
 *
 *   flat buffer (reverse registration order, each parameter 64-byte aligned):
 *     [ head.weight head.bias norm.* blocks.11.* … | … | … patch_embed.* cls_token ]
 *       bucket 0 (finished first by backward)        …           bucket B-1
 *   begin:   every bucket's pending count = its parameters; the engine hook is installed
 *   hook:    a parameter's gradient is final → its bucket's count − 1; buckets whose count is 0
 *            start their vg_dist_isum in bucket order (a later bucket waits for earlier ones, so
 *            every rank issues the same collectives in the same order); started sums are polled
 *            so MPI moves them on while backward computes
 *   finish:  buckets not yet started (parameters the graph did not reach) start; wait for all;
 *            grad := sum / N, the gradient of the mean loss over the global batch
 * With one process the sums are the values themselves and finish only divides by 1 (skipped). */
#include "dist/dist.h"
#include "base/clock.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int64_t start, len;         /* range of the flat buffer, in elements */
    int n_params, pending;
    int handle;                 /* vg_dist_isum handle once started, else -1 */
    bool done;
    double t_done;
} bucket;

struct vg_grad_sync {
    const vg_params *params;
    vg_tensor *flat;
    int *bucket_of;             /* [params->n] */
    bucket *b;
    int nb, next_start, hint;
    double t_begin, t_backward_end;
    vg_grad_sync_stats stats;
};

vg_grad_sync *vg_grad_sync_new(const vg_params *p, size_t bucket_bytes, char *err, size_t errlen) {
    if (!p || p->n < 1) { snprintf(err, errlen, "gradient sync: no parameters"); return NULL; }
    vg_grad_sync *s = calloc(1, sizeof *s);
    if (s) s->bucket_of = calloc((size_t)p->n, sizeof *s->bucket_of);
    if (s) s->b = calloc((size_t)p->n, sizeof *s->b);     /* at most one bucket per parameter */
    if (!s || !s->bucket_of || !s->b) { vg_grad_sync_free(s); snprintf(err, errlen, "gradient sync: out of memory"); return NULL; }
    s->params = p;
    const int64_t align = 64 / (int64_t)sizeof(real);
    const int64_t per_bucket = (int64_t)(bucket_bytes / sizeof(real)) > 0 ? (int64_t)(bucket_bytes / sizeof(real)) : 1;
    int64_t off = 0;
    int k = -1;
    for (int i = p->n - 1; i >= 0; i--) {               /* backward finishes the last layers first */
        if (k < 0 || off - s->b[k].start >= per_bucket) { k++; s->b[k].start = off; }
        s->bucket_of[i] = k;
        s->b[k].n_params++;
        off += (vg_numel(p->items[i].tensor) + align - 1) / align * align;
        s->b[k].len = off - s->b[k].start;
    }
    s->nb = k + 1;
    s->flat = vg_persistent_zeros(1, (int64_t[]){off});
    off = 0;
    for (int i = p->n - 1; i >= 0; i--) {
        vg_tensor *t = p->items[i].tensor;
        vg_tensor_free(t->grad);
        t->grad = vg_persistent_view(s->flat, off, t->ndim, t->shape);
        if (!t->grad) { snprintf(err, errlen, "gradient sync: %s: %s", p->items[i].name, vg_error()); vg_grad_sync_free(s); return NULL; }
        off += (vg_numel(t) + align - 1) / align * align;
    }
    s->stats.buckets = s->nb;
    s->stats.elems = off;
    return s;
}

/* start every bucket, in order, whose gradients are all final */
static void start_ready(vg_grad_sync *s, bool all) {
    while (s->next_start < s->nb && (all || s->b[s->next_start].pending == 0)) {
        bucket *b = &s->b[s->next_start++];
        b->handle = vg_dist_isum(vg_data(s->flat) + b->start, b->len);
    }
}

/* poll the started sums: MPI progresses non-blocking collectives only inside MPI calls */
static void poll(vg_grad_sync *s) {
    for (int k = 0; k < s->next_start; k++)
        if (!s->b[k].done && vg_dist_test(s->b[k].handle)) { s->b[k].done = true; s->b[k].t_done = vg_now_s(); }
}

static void grad_ready(vg_tensor *leaf, void *ctx) {
    vg_grad_sync *s = ctx;
    const vg_params *p = s->params;
    int i = -1;
    for (int probe = 0; probe < p->n; probe++) {        /* from the last hit downwards: usually 1 probe */
        int j = ((s->hint - probe) % p->n + p->n) % p->n;
        if (p->items[j].tensor == leaf) { i = j; break; }
    }
    if (i < 0) return;                                  /* not a trainable parameter */
    s->hint = i - 1;
    bucket *b = &s->b[s->bucket_of[i]];
    if (b->pending > 0 && --b->pending == 0) start_ready(s, false);
    poll(s);
}

void vg_grad_sync_begin(vg_grad_sync *s) {
    for (int k = 0; k < s->nb; k++) {
        s->b[k].pending = s->b[k].n_params;
        s->b[k].handle = -1; s->b[k].done = false;
    }
    s->next_start = 0;
    s->hint = s->params->n - 1;
    vg_dist_requests_clear();
    vg_set_grad_ready_hook(grad_ready, s);
    s->t_begin = vg_now_s();
}

void vg_grad_sync_finish(vg_grad_sync *s) {
    vg_set_grad_ready_hook(NULL, NULL);
    s->t_backward_end = vg_now_s();
    start_ready(s, true);
    for (int k = 0; k < s->nb; k++)
        if (!s->b[k].done) { vg_dist_wait(s->b[k].handle); s->b[k].done = true; s->b[k].t_done = vg_now_s(); }
    double t_end = vg_now_s();
    s->stats.exposed_ms = 1e3 * (t_end - s->t_backward_end);
    s->stats.backward_ms = 1e3 * (s->t_backward_end - s->t_begin);
    const int N = vg_dist_size();
    if (N > 1) {                                        /* the mean over ranks */
        real *g = vg_data(s->flat);
        const real inv = (real)(1.0 / N);
        const int64_t n = vg_numel(s->flat);
        #pragma omp parallel for schedule(static) if (n > (1 << 18))
        for (int64_t i = 0; i < n; i++) g[i] *= inv;
    }
}

vg_grad_sync_stats vg_grad_sync_stats_get(const vg_grad_sync *s) { return s->stats; }

double vg_grad_sync_time_sum(vg_grad_sync *s, int reps) {
    double ms[64];
    if (reps > 64) reps = 64;
    if (reps < 1) reps = 1;
    vg_dist_any(false);                                 /* start together */
    for (int r = 0; r < reps; r++) {
        double t0 = vg_now_s();
        vg_dist_requests_clear();
        vg_dist_wait(vg_dist_isum(vg_data(s->flat), vg_numel(s->flat)));
        ms[r] = 1e3 * (vg_now_s() - t0);
    }
    vg_dist_requests_clear();
    return vg_median(ms, reps);
}

void vg_grad_sync_free(vg_grad_sync *s) {
    if (!s) return;
    vg_tensor_free(s->flat);
    free(s->bucket_of); free(s->b);
    free(s);
}
