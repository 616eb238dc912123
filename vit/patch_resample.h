/* patch_resample.h — a patch-embedding kernel at another patch size, as FlexiViT (Beyer et al. 2023)
 * and timm's resample_patch_embed do it.
 *
 * Resizing a p×p patch x to P×P is linear: x' = R x, R (P², p²). The kernel w' at the new size is
 * the one whose token for the resized patch is the old token for the patch, ⟨R x, w'⟩ = ⟨x, w⟩ for
 * every x, solved in the least-squares sense: w' = pinv(Rᵀ) w. When P ≥ p this holds exactly; when
 * P < p it is the best fit. R is separable (rows ⊗ columns), so pinv(Rᵀ) = pinv(R₁ᵀ) ⊗ pinv(R₁ᵀ)
 * with R₁ (P, p) the 1-D resize, and the new kernel is A w Aᵀ, A = pinv(R₁ᵀ) (P, p).
 * The resize is PyTorch's F.interpolate(mode, antialias=True, align_corners=False), timm's default
 * (bicubic with antialias uses PIL's cubic, a = −0.5). */
#ifndef VG_PATCH_RESAMPLE_H
#define VG_PATCH_RESAMPLE_H
#include "vit/vit.h"

/* the 1-D resize matrix R₁ (out, in), row-major, of F.interpolate(antialias=True) for `mode` */
void vg_resize_matrix_aa(int in, int out, vg_interp_mode mode, double *R);
/* n kernels of p×p (e.g. a conv weight (D, C, p, p): n = D·C) → n kernels of P×P. false (and
 * vg_error()) when the resize has no usable pseudo-inverse. */
bool vg_resample_patch_kernels(const real *src, int64_t n, int p, real *dst, int P, vg_interp_mode mode);
#endif
