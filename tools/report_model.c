/* report_model.c — a run's model over test images for the report: the blocks one at a time with
 * their attention and a read-out of the class after each (logit lens), PCA of pooled features,
 * mean attention distance, position-embedding similarity (see report.h). */
#include "report.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

vg_tensor *rm_batch(const vg_vit *m, const vg_dataset *d, const int *idx, int n) {
    const int C = m->cfg.in_chans, S = m->cfg.img_size;
    vg_tensor *x = vg_empty(VG_DIMS(n, C, S, S));
    for (int i = 0; x && i < n; i++) {
        ic_image im = {0};
        int h, w;
        im.chw = (uint8_t *)vg_dataset_image(d, idx[i], &h, &w);
        im.c = d->channels; im.h = h; im.w = w;
        memcpy(im.mean, d->mean, sizeof im.mean); memcpy(im.std, d->std, sizeof im.std);
        vg_tensor *one = ic_image_input(&im, C, S);            /* RGB ↔ gray as the model needs */
        if (!one) return NULL;
        memcpy(vg_data(x) + (size_t)i * C * S * S, vg_data(one), sizeof(real) * (size_t)C * S * S);
    }
    return x;
}

static void copy_out(vg_tensor *t, float *out) {
    vg_tensor *c = vg_contiguous(t);
    const int64_t n = vg_numel(c);
    for (int64_t k = 0; k < n; k++) out[k] = (float)vg_data(c)[k];
}

/* final norm (or none with fc_norm), pooling (then fc_norm), head: (B, T, D) → (B, K) */
static vg_tensor *read_out(vg_vit *m, vg_tensor *x) {
    if (m->norm.weight) x = vg_layernorm_fn(x, m->norm.weight, m->norm.bias, m->cfg.norm_eps);
    x = vg_vit_pool_tokens(m, x);
    return m->head.weight ? vg_linear_fn(x, m->head.weight, m->head.bias) : x;
}

/* the L2 norm of every token: (B, T, D) → out (B, T) at stride `stride` per image */
static void token_norms(vg_tensor *x, float *out, int stride) {
    vg_tensor *c = vg_contiguous(x);
    const int64_t B = c->shape[0], T = c->shape[1], D = c->shape[2];
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            double s = 0;
            const real *r = vg_data(c) + (b * T + t) * D;
            for (int64_t k = 0; k < D; k++) s += (double)r[k] * r[k];
            out[b * stride + t] = (float)sqrt(s);
        }
}

int rm_forward(vg_vit *m, vg_tensor *x, float *att, float *lens, float *pooled, float *logits, float *tokens) {
    const int L = m->cfg.depth, H = m->cfg.num_heads, K = m->cfg.num_classes;
    if (!x) return -1;
    const int64_t B = x->shape[0];
    const int T = vg_vit_num_patches(&m->cfg) + vg_vit_num_prefix_tokens(&m->cfg);
    vg_no_grad_begin();
    int rc = 0;
    x = vg_vit_pos_embed(m, vg_vit_patch_embed(m, x));                   /* (B, T, D) */
    if (x && tokens) token_norms(x, tokens, (L + 1) * T);
    for (int l = 0; l < L && x; l++) {
        vg_tensor *a = NULL;
        x = vg_vit_block_forward(m, l, x, false, NULL, att ? &a : NULL);
        if (!x || (att && !a)) { x = NULL; break; }
        if (att) {                                                       /* (B, H, T, T) → image b's block l */
            vg_tensor *ac = vg_contiguous(a);
            const size_t per = (size_t)H * T * T;
            for (int64_t b = 0; b < B; b++)
                for (size_t k = 0; k < per; k++) att[((size_t)b * L + l) * per + k] = (float)vg_data(ac)[b * per + k];
        }
        if (tokens) token_norms(x, tokens + (size_t)(l + 1) * T, (L + 1) * T);
        if (lens && m->head.weight) {
            vg_tensor *o = read_out(m, x);
            if (!o) { x = NULL; break; }
            copy_out(o, lens + (size_t)l * B * K);
        }
    }
    if (!x) rc = -1;
    if (!rc && pooled) {
        vg_tensor *p = vg_vit_pool_tokens(m, m->norm.weight ? vg_layernorm_fn(x, m->norm.weight, m->norm.bias, m->cfg.norm_eps) : x);
        if (p) copy_out(p, pooled); else rc = -1;
    }
    if (!rc && logits) {
        vg_tensor *o = read_out(m, x);
        if (o) copy_out(o, logits); else rc = -1;
    }
    vg_no_grad_end();
    return rc;
}

int rm_seq_pool_weights(vg_vit *m, vg_tensor *x, float *out) {
    if (!x) return -1;
    vg_no_grad_begin();
    const int S = vg_vit_num_prefix_tokens(&m->cfg), N = vg_vit_num_patches(&m->cfg);
    vg_tensor *f = vg_vit_forward_features(m, x, false, NULL);          /* (B, T, D), after the final norm */
    vg_tensor *a = f ? vg_vit_seq_pool_weights(m, vg_narrow(f, 1, S, N)) : NULL;   /* (B, 1, N) */
    if (a) copy_out(a, out);
    vg_no_grad_end();
    return a ? 0 : -1;
}

void rm_pca2(const float *x, int n, int D, float *xy, double var2[2]) {
    double *mean = calloc((size_t)D, sizeof *mean), *c = calloc((size_t)D * D, sizeof *c), *v = malloc(sizeof *v * D * 2);
    var2[0] = var2[1] = 0;
    if (!mean || !c || !v || n < 2) { free(mean); free(c); free(v); memset(xy, 0, sizeof *xy * 2 * (size_t)n); return; }
    for (int i = 0; i < n; i++) for (int k = 0; k < D; k++) mean[k] += x[(size_t)i * D + k] / (double)n;
    for (int i = 0; i < n; i++)                                            /* covariance (D, D) */
        for (int a = 0; a < D; a++) {
            double da = x[(size_t)i * D + a] - mean[a];
            for (int b = a; b < D; b++) c[a * D + b] += da * (x[(size_t)i * D + b] - mean[b]);
        }
    double trace = 0;
    for (int a = 0; a < D; a++) { for (int b = 0; b < a; b++) c[a * D + b] = c[b * D + a]; trace += c[a * D + a]; }
    for (int p = 0; p < 2; p++) {
        double *e = v + p * D, lambda = 0;
        for (int k = 0; k < D; k++) e[k] = 1.0 + 0.01 * k;                    /* fixed start: same result every time */
        for (int it = 0; it < 300; it++) {
            double *t = malloc(sizeof *t * D), s = 0;
            for (int a = 0; a < D; a++) { t[a] = 0; for (int b = 0; b < D; b++) t[a] += c[a * D + b] * e[b]; }
            if (p) { double d = 0; for (int k = 0; k < D; k++) d += t[k] * v[k]; for (int k = 0; k < D; k++) t[k] -= d * v[k]; }
            for (int k = 0; k < D; k++) s += t[k] * t[k];
            s = sqrt(s);
            lambda = s;
            for (int k = 0; k < D; k++) e[k] = s > 0 ? t[k] / s : 0;
            free(t);
        }
        /* a sign that does not flip between snapshots: the largest component positive */
        int big = 0;
        for (int k = 1; k < D; k++) if (fabs(e[k]) > fabs(e[big])) big = k;
        if (e[big] < 0) for (int k = 0; k < D; k++) e[k] = -e[k];
        var2[p] = trace > 0 ? lambda / trace : 0;
    }
    for (int i = 0; i < n; i++)
        for (int p = 0; p < 2; p++) {
            double s = 0;
            for (int k = 0; k < D; k++) s += (x[(size_t)i * D + k] - mean[k]) * v[p * D + k];
            xy[i * 2 + p] = (float)s;
        }
    free(mean); free(c); free(v);
}

double rm_mean_attention_distance(const float *a, int T, int S, int gh, int gw, int patch) {
    double total = 0;
    int nq = 0;
    for (int q = S; q < T; q++) {
        const float *row = a + (size_t)q * T;
        double s = 0, w = 0;
        int qi = (q - S) / gw, qj = (q - S) % gw;
        for (int k = S; k < T; k++) {
            int ki = (k - S) / gw, kj = (k - S) % gw;
            s += row[k] * patch * sqrt((double)(qi - ki) * (qi - ki) + (double)(qj - kj) * (qj - kj));
            w += row[k];
        }
        if (w > 0) { total += s / w; nq++; }
    }
    (void)gh;
    return nq ? total / nq : 0;
}

void rm_posembed_similarity(const vg_tensor *pos, int pre, int N, float *sim) {
    const int D = (int)pos->shape[2];
    real *raw = malloc(sizeof *raw * (size_t)(pre + N) * D);
    double *nrm = malloc(sizeof *nrm * N);
    if (!raw || !nrm) { free(raw); free(nrm); memset(sim, 0, sizeof *sim * (size_t)N * N); return; }
    vg_copy_to_array(pos, raw);
    const real *t = raw + (size_t)pre * D;
    for (int i = 0; i < N; i++) { double s = 0; for (int k = 0; k < D; k++) s += (double)t[i * D + k] * t[i * D + k]; nrm[i] = sqrt(s) + 1e-30; }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < D; k++) s += (double)t[i * D + k] * t[j * D + k];
            sim[(size_t)i * N + j] = (float)(s / (nrm[i] * nrm[j]));
        }
    free(raw); free(nrm);
}
