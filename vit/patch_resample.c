/* patch_resample.c — FlexiViT's pseudo-inverse resize of a patch-embedding kernel (see the header).
 * Everything in double; the matrices are at most patch × patch. */
#include "vit/patch_resample.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* PyTorch's antialiased filters (aten UpSampleKernel.cpp, after PIL): the triangle, and the cubic
 * convolution with a = −0.5 (not the −0.75 of plain bicubic) */
static double filter_aa(double x, vg_interp_mode mode) {
    x = fabs(x);
    if (mode == VG_INTERP_BILINEAR) return x < 1 ? 1 - x : 0;
    const double a = -0.5;
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
    return 0;
}

/* Output i (align_corners=False) is centred at scale·(i + ½) in the input, scale = in/out; the
 * filter is stretched by the scale when shrinking, so every input pixel contributes, and its
 * weights are normalised to sum to 1. */
void vg_resize_matrix_aa(int in, int out, vg_interp_mode mode, double *R) {
    const double scale = (double)in / out;
    const double half = mode == VG_INTERP_BILINEAR ? 1.0 : 2.0;          /* the filter's support */
    const double support = scale >= 1 ? half * scale : half, inv = scale >= 1 ? 1 / scale : 1;
    memset(R, 0, sizeof(double) * (size_t)in * (size_t)out);
    for (int i = 0; i < out; i++) {
        double center = scale * (i + 0.5), total = 0;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        for (int j = lo; j < hi; j++) total += R[(size_t)i * in + j] = filter_aa((j - center + 0.5) * inv, mode);
        if (total != 0) for (int j = lo; j < hi; j++) R[(size_t)i * in + j] /= total;
    }
}

/* eigenvalues w and eigenvectors (columns of V) of the symmetric n×n matrix S (destroyed): cyclic
 * Jacobi rotations until the off-diagonal part vanishes */
static void jacobi_eigen(double *S, int n, double *w, double *V) {
    for (int i = 0; i < n * n; i++) V[i] = 0;
    for (int i = 0; i < n; i++) V[i * n + i] = 1;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, diag = 0;
        for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
            if (i == j) diag += S[i * n + j] * S[i * n + j]; else off += S[i * n + j] * S[i * n + j];
        }
        if (off <= 1e-30 * diag || off == 0) break;
        for (int p = 0; p < n; p++) for (int q = p + 1; q < n; q++) {
            double apq = S[p * n + q];
            if (apq == 0) continue;
            double theta = (S[q * n + q] - S[p * n + p]) / (2 * apq);
            double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
            double c = 1 / sqrt(t * t + 1), s = t * c;
            for (int k = 0; k < n; k++) {                          /* S ← S·J */
                double skp = S[k * n + p], skq = S[k * n + q];
                S[k * n + p] = c * skp - s * skq; S[k * n + q] = s * skp + c * skq;
            }
            for (int k = 0; k < n; k++) {                          /* S ← Jᵀ·S */
                double spk = S[p * n + k], sqk = S[q * n + k];
                S[p * n + k] = c * spk - s * sqk; S[q * n + k] = s * spk + c * sqk;
            }
            for (int k = 0; k < n; k++) {                          /* V ← V·J */
                double vkp = V[k * n + p], vkq = V[k * n + q];
                V[k * n + p] = c * vkp - s * vkq; V[k * n + q] = s * vkp + c * vkq;
            }
        }
    }
    for (int i = 0; i < n; i++) w[i] = S[i * n + i];
}

/* A = pinv(R₁ᵀ) = (R₁R₁ᵀ)⁺ R₁, (P, p): the Gram matrix's pseudo-inverse from its eigenvectors,
 * eigenvalues below 1e-12 of the largest taken as zero (singular values below 1e-6 of the largest) */
static bool pinv_transpose(const double *R, int P, int p, double *A) {
    double *G = calloc((size_t)P * P, sizeof *G), *V = calloc((size_t)P * P, sizeof *V), *w = calloc((size_t)P, sizeof *w);
    bool ok = G && V && w;
    if (ok) {
        for (int i = 0; i < P; i++) for (int j = 0; j < P; j++) {
            double s = 0;
            for (int k = 0; k < p; k++) s += R[i * p + k] * R[j * p + k];
            G[i * P + j] = s;
        }
        jacobi_eigen(G, P, w, V);
        double wmax = 0;
        for (int i = 0; i < P; i++) if (w[i] > wmax) wmax = w[i];
        ok = wmax > 0;
        for (int i = 0; ok && i < P; i++) for (int k = 0; k < p; k++) {      /* A = V Λ⁺ Vᵀ R₁ */
            double s = 0;
            for (int e = 0; e < P; e++) {
                if (w[e] <= 1e-12 * wmax) continue;
                double vr = 0;
                for (int j = 0; j < P; j++) vr += V[j * P + e] * R[j * p + k];
                s += V[i * P + e] * vr / w[e];
            }
            A[i * p + k] = s;
        }
    }
    free(G); free(V); free(w);
    return ok;
}

bool vg_resample_patch_kernels(const real *src, int64_t n, int p, real *dst, int P, vg_interp_mode mode) {
    if (p < 1 || P < 1 || p > 1024 || P > 1024) { vg_set_error("resample patch kernels: sizes %d -> %d", p, P); return false; }
    double *R = malloc(sizeof(double) * (size_t)P * p), *A = malloc(sizeof(double) * (size_t)P * p);
    double *tmp = malloc(sizeof(double) * (size_t)P * p);
    bool ok = R && A && tmp;
    if (ok) {
        vg_resize_matrix_aa(p, P, mode, R);
        ok = pinv_transpose(R, P, p, A);
        if (!ok) vg_set_error("resample patch kernels %dx%d -> %dx%d: the resize has no pseudo-inverse", p, p, P, P);
    }
    for (int64_t k = 0; ok && k < n; k++) {                 /* W' = A W Aᵀ per kernel */
        const real *w = src + k * p * p;
        real *o = dst + k * P * P;
        for (int i = 0; i < P; i++) for (int b = 0; b < p; b++) {       /* tmp = A W, (P, p) */
            double s = 0;
            for (int a = 0; a < p; a++) s += A[i * p + a] * (double)w[a * p + b];
            tmp[i * p + b] = s;
        }
        for (int i = 0; i < P; i++) for (int j = 0; j < P; j++) {       /* tmp Aᵀ, (P, P) */
            double s = 0;
            for (int b = 0; b < p; b++) s += tmp[i * p + b] * A[j * p + b];
            o[i * P + j] = (real)s;
        }
    }
    free(R); free(A); free(tmp);
    return ok;
}
