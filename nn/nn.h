/* nn.h — the layers a ViT is made of, PyTorch conventions (NCHW, (B, N, D), Linear weight (out, in)).
 *
 * Each layer has two faces:
 *  - a differentiable functional op (vg_linear_fn, vg_layernorm_fn, …): one fused node with a
 *    hand-written backward, in nn/<layer>.c next to its forward;
 *  - a module struct holding persistent parameters (see "modules" below), whose _forward the ViT
 *    runs.
 * Parameters live outside the step arena (vg_param) together with their gradients. */
#ifndef VG_NN_H
#define VG_NN_H
#include "autograd/autograd.h"

/* ------------------------------------------------------------------ parameters */
typedef struct {
    char       name[128];       /* dotted, timm state-dict key: "blocks.0.attn.qkv.weight" */
    vg_tensor *tensor;          /* persistent, requires_grad */
    bool       weight_decay;    /* false for biases, norms, pos_embed, cls_token */
} vg_param_entry;

typedef struct {
    vg_param_entry *items;
    int n, cap;
} vg_params;

void       vg_params_add(vg_params *p, const char *prefix, const char *name, vg_tensor *t, bool weight_decay);
vg_tensor *vg_params_find(const vg_params *p, const char *name);
int64_t    vg_params_count(const vg_params *p);     /* total number of scalars */
void       vg_params_zero_grad(const vg_params *p);
void       vg_params_free(vg_params *p);            /* frees the list, not the tensors */

/* ------------------------------------------------------------------ init (seeded) */
void vg_init_trunc_normal(vg_tensor *t, vg_rng *rng, double std);   /* timm: bounds ±2 absolute */
void vg_init_normal(vg_tensor *t, vg_rng *rng, double std);
void vg_init_uniform(vg_tensor *t, vg_rng *rng, double lo, double hi);
void vg_init_xavier_uniform(vg_tensor *t, vg_rng *rng);             /* fan_in/fan_out as PyTorch */
void vg_init_kaiming_uniform(vg_tensor *t, vg_rng *rng, double a);  /* PyTorch default for Linear/Conv: a = √5 */
void vg_init_constant(vg_tensor *t, double v);
int64_t vg_fan_in(const vg_tensor *w);                               /* shape[1] × receptive field */

/* ------------------------------------------------------------------ functional ops */
/* y = x Wᵀ + b. x (…, in), W (out, in), b (out) or NULL → (…, out) */
vg_tensor *vg_linear_fn(vg_tensor *x, vg_tensor *w, vg_tensor *b);
/* x (B, C, H, W), w (O, C, kH, kW), b (O) or NULL, zero padding → (B, O, H', W') */
vg_tensor *vg_conv2d_fn(vg_tensor *x, vg_tensor *w, vg_tensor *b, int stride, int padding);
/* over the last dim: (x − mean) · rstd · w + b, w/b (D) may be NULL (no affine) */
vg_tensor *vg_layernorm_fn(vg_tensor *x, vg_tensor *w, vg_tensor *b, double eps);
/* gelu(x + b), exact erf form; b (D) broadcast over the last dim, may be NULL */
vg_tensor *vg_bias_gelu_fn(vg_tensor *x, vg_tensor *b);
/* inverted dropout: zero with probability p, scale kept values by 1/(1−p); identity if !train or p == 0.
 * The mask is drawn per sample (dim 0; a 1-D x is one sample) as vg_dropout_mask says. */
vg_tensor *vg_dropout_fn(vg_tensor *x, double p, bool train, vg_rng *rng);
/* The attention core, timm layout. qkv (B, N, 3·D) laid out (3, heads, head_dim) on the last dim →
 * softmax(Q Kᵀ / √head_dim) V, heads merged back → (B, N, D). attn_drop applies dropout to the
 * attention weights (train only). If attn_out is not NULL it receives the (B, heads, N, N)
 * attention weights (after softmax, before dropout) for visualisation. */
vg_tensor *vg_attention_fn(vg_tensor *qkv, int heads, double attn_drop, bool train, vg_rng *rng,
                           vg_tensor **attn_out);
/* Cross-attention: R queries q (B, R, D) over N tokens kv (B, N, 2·D), kv's last dim laid out
 * (2, heads, head_dim) as keys then values (qkv's K and V parts) → (B, R, D); weights
 * (B, heads, R, N). A ViT's last block uses it for the class token's query alone. */
vg_tensor *vg_attention_cross_fn(vg_tensor *q, vg_tensor *kv, int heads, double attn_drop, bool train,
                                 vg_rng *rng, vg_tensor **attn_out);
/* Locality self-attention (Lee et al. 2021, "Vision Transformer for Small-Size Datasets"): the same
 * two cores with (a) a learned temperature: the scores are Q Kᵀ · exp(s) for a learned log-scale s
 * (log_scale, shape (1); NULL: the fixed 1/√head_dim), and (b) diag_mask: each query row i ignores
 * key i, its own token (weight exactly 0; rows with a single key are left unmasked). The cross form's
 * R queries are tokens 0..R−1 of the same sequence (a ViT's last block). ds = Σ_i ⟨Q_i, dQ_i⟩. */
vg_tensor *vg_attention_lsa_fn(vg_tensor *qkv, vg_tensor *log_scale, bool diag_mask, int heads, double attn_drop,
                               bool train, vg_rng *rng, vg_tensor **attn_out);
vg_tensor *vg_attention_cross_lsa_fn(vg_tensor *q, vg_tensor *kv, vg_tensor *log_scale, bool diag_mask, int heads,
                                     double attn_drop, bool train, vg_rng *rng, vg_tensor **attn_out);
/* mean over the batch of −Σ_c q_c log softmax(logits)_c, q = (1−ε)·onehot + ε/C.
 * logits (B, C), labels[B] in [0, C). Returns a scalar; error if a label is out of range. */
vg_tensor *vg_cross_entropy_fn(vg_tensor *logits, const int32_t *labels, double label_smoothing);
/* timm's SoftTargetCrossEntropy: mean over the batch of −Σ_c t_c log softmax(logits)_c.
 * logits (B, C), targets (B·C values, row-major; e.g. Mixup's mixed, smoothed one-hots). */
vg_tensor *vg_soft_cross_entropy_fn(vg_tensor *logits, const real *targets);
/* Stochastic depth (timm's drop_path): each sample b of x (B, …) is zeroed with probability p,
 * kept ones scaled by 1/(1−p); identity if !train or p == 0. The B draws come from rng. */
vg_tensor *vg_drop_path_fn(vg_tensor *x, double p, bool train, vg_rng *rng);
/* the same with a given per-sample mask (B,) of multipliers (0 or 1/keep): y[b] = x[b]·mask[b] */
vg_tensor *vg_drop_path_masked_fn(vg_tensor *x, vg_tensor *mask);
/* Patch dropout (timm's PatchDropout, ordered): in training each sample b of x (B, T, D) keeps its
 * `prefix` leading tokens and K = vg_patch_dropout_keep(T − prefix, p) of its patch tokens, chosen
 * uniformly and kept in order → (B, prefix + K, D); identity if !train or p == 0. */
vg_tensor *vg_patch_dropout_fn(vg_tensor *x, double p, int prefix, bool train, vg_rng *rng);
/* K = max(1, ⌊patches·(1 − p)⌋), timm's num_keep */
int64_t    vg_patch_dropout_keep(int64_t patches, double p);
/* the rows patch dropout keeps, as reals: idx (B, prefix + K), row b from vg_dropout_sample_rng */
void       vg_patch_dropout_indices(real *idx, int64_t B, int64_t T, int prefix, double p, vg_rng *rng);
/* y[b, r, :] = x[b, idx[b, r], :]: x (B, T, D), idx (B, R) of whole numbers in [0, T) → (B, R, D);
 * backward scatters dy back to the rows it came from (repeated rows add up) */
vg_tensor *vg_token_gather_fn(vg_tensor *x, vg_tensor *idx);
/* 2-D pooling (nn/pool.c), as torch.nn.functional.max_pool2d / avg_pool2d with ceil_mode=False:
 * x (B, C, H, W), square kernel, stride (0 = the kernel, PyTorch's default), zero padding at most
 * kernel/2 → (B, C, Ho, Wo), Ho = (H + 2·padding − kernel) / stride + 1. Max: padding never wins,
 * ties go to the first maximum in row-major order (as PyTorch), the gradient to that tap alone.
 * Average: count_include_pad=True (the divisor is always kernel²). */
vg_tensor *vg_max_pool2d_fn(vg_tensor *x, int kernel, int stride, int padding);
vg_tensor *vg_avg_pool2d_fn(vg_tensor *x, int kernel, int stride, int padding);
/* mean over H and W: x (B, C, H, W) → (B, C) */
vg_tensor *vg_global_avg_pool2d_fn(vg_tensor *x);
/* number of rows whose argmax equals the label */
int64_t    vg_top1_correct(const vg_tensor *logits, const int32_t *labels);

/* ------------------------------------------------------------------ helpers shared by the layers */
/* Column sums over rows in fixed chunks of VG_ROW_CHUNK rows: each chunk's partial sums (double)
 * go to their own slot, and the slots are added in chunk order. Row passes stay sequential in
 * memory and can be fused with the pass that produces the rows (bias-GELU and LayerNorm backward
 * do), and the result has the same bits for any thread count.
 *   vg_chunk_partials(rows, cols, k): arena buffer of k zeroed (n_chunks × cols) double blocks;
 *   vg_combine_chunks(part, rows, cols, out, accumulate): out[c] (+)= Σ_chunk part[chunk][c]. */
enum { VG_ROW_CHUNK = 64 };
static inline int64_t vg_row_chunks(int64_t rows) { return (rows + VG_ROW_CHUNK - 1) / VG_ROW_CHUNK; }
/* one past the last row of chunk ch */
static inline int64_t vg_chunk_end(int64_t ch, int64_t rows) { return (ch + 1) * VG_ROW_CHUNK < rows ? (ch + 1) * VG_ROW_CHUNK : rows; }
double *vg_chunk_partials(int64_t rows, int64_t cols, int k);
void vg_combine_chunks(const double *part, int64_t rows, int64_t cols, real *out, bool accumulate);
/* out[c] = Σ_r x[r, c] (or += when accumulate) for a contiguous (rows, cols) matrix, by row chunks
 * as above. Used for bias gradients. */
void vg_column_sums(const real *x, int64_t rows, int64_t cols, real *out, bool accumulate);
/* t.grad += G where G = alpha·op(A)·op(B) (M×N = t's shape flattened to 2-D), computed by
 * vg_gemm (bf16: vg_gemm_bf16, autocast) with beta = 1 straight into an existing gradient buffer,
 * or into a fresh one. */
void vg_accumulate_grad_gemm(vg_tensor *t, bool bf16, int transA, int transB, int M, int N, int K, real alpha,
                             const real *A, int lda, const real *B, int ldb);
/* Inverted-dropout mask over `rows` samples of row_len elements each: mask = 1/(1−p) with
 * probability 1−p, else 0 (all 0 when p = 1). rng gives one 64-bit key per call (the same draw on
 * every process of a data-parallel job); sample r's mask comes from a generator seeded by (key,
 * vg_dropout_first_sample + r) alone, so a sample's mask does not depend on which process holds
 * it, on the batch split, or on the thread count. */
void vg_dropout_mask(real *mask, int64_t rows, int64_t row_len, double p, vg_rng *rng);
/* The index, within the global batch, of row 0 of the batches that follow (default 0): a
 * data-parallel rank that holds samples [lo, hi) of the global batch sets lo. */
void vg_dropout_first_sample(int64_t index);
/* the generator of row r of the current batch for a per-call key: seeded by (key,
 * vg_dropout_first_sample + r) alone (dropout, drop-path and patch dropout draw from it) */
vg_rng vg_dropout_sample_rng(uint64_t key, int64_t r);

/* ------------------------------------------------------------------ modules */
/* A module holds one layer's persistent tensors and what its forward reads besides them; its
 * _forward is the layer as the ViT runs it (vit/vit.c builds every layer from these structs, so
 * editing a _forward changes training). _init allocates with PyTorch's default init (the ViT draws
 * timm's init instead), _params registers the tensors under "prefix.weight"/"prefix.bias", _free
 * frees them. */
typedef struct { vg_tensor *weight, *bias; } vg_linear;             /* W (out, in), b (out) or NULL */
void       vg_linear_init(vg_linear *m, int in, int out, bool bias, vg_rng *rng);  /* W, b ~ U(±1/√in) */
void       vg_linear_params(vg_linear *m, vg_params *p, const char *prefix);
vg_tensor *vg_linear_forward(vg_linear *m, vg_tensor *x);            /* x Wᵀ + b */
/* gelu(x Wᵀ + b), the bias added inside the fused bias-GELU (an MLP's first layer) */
vg_tensor *vg_linear_gelu_forward(vg_linear *m, vg_tensor *x);
void       vg_linear_free(vg_linear *m);

/* W (O, C, k, k), b (O) or NULL; stride and zero padding as the forward uses them */
typedef struct { vg_tensor *weight, *bias; int stride, padding; } vg_conv2d;
void       vg_conv2d_init(vg_conv2d *m, int in_ch, int out_ch, int kernel, int stride, int padding, bool bias, vg_rng *rng);
void       vg_conv2d_params(vg_conv2d *m, vg_params *p, const char *prefix);
vg_tensor *vg_conv2d_forward(vg_conv2d *m, vg_tensor *x);
void       vg_conv2d_free(vg_conv2d *m);

typedef struct { vg_tensor *weight, *bias; double eps; } vg_layernorm;   /* w, b (D) */
void       vg_layernorm_init(vg_layernorm *m, int dim, double eps);                 /* ones / zeros */
void       vg_layernorm_params(vg_layernorm *m, vg_params *p, const char *prefix);
vg_tensor *vg_layernorm_forward(vg_layernorm *m, vg_tensor *x);
void       vg_layernorm_free(vg_layernorm *m);

/* timm's Attention: qkv Linear (3D, D) + attention core (dropout attn_drop on its weights) + proj
 * Linear (D, D) + dropout proj_drop */
typedef struct {
    vg_linear qkv, proj; int heads; double attn_drop, proj_drop;
    vg_tensor *log_scale;   /* LSA's learned log-temperature (1), or NULL: scale 1/√head_dim */
    bool diag_mask;         /* LSA's diagonal mask: no token attends to itself */
} vg_mhsa;
void       vg_mhsa_init(vg_mhsa *m, int dim, int heads, bool qkv_bias, double attn_drop, double proj_drop, vg_rng *rng);
void       vg_mhsa_params(vg_mhsa *m, vg_params *p, const char *prefix);        /* prefix.qkv.*, prefix.proj.* */
/* x (B, T, D) → (B, T, D); with rows > 0 only the first `rows` tokens' outputs (B, rows, D): every
 * token still gives its keys and values (rows D..3D of qkv), the queries, attention (as
 * cross-attention, vg_attention_cross_fn), proj and dropout run on those rows alone — what a
 * ViT's last block needs when only the class token is read. The rng feeds attn_drop first, then
 * proj_drop. attn_out as vg_attention_fn's. */
vg_tensor *vg_mhsa_forward(vg_mhsa *m, vg_tensor *x, int64_t rows, bool train, vg_rng *rng, vg_tensor **attn_out);
void       vg_mhsa_free(vg_mhsa *m);
#endif
