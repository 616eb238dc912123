/* report.h — `./inspect report RUN`: the pieces of the page (tools/inspect_report.c writes the HTML;
 * tools/report_model.c runs the run's models over test images; tools/report_json.c writes the
 * numbers as JSON; tools/report_page.js draws them in the browser). */
#ifndef VG_REPORT_H
#define VG_REPORT_H
#include "inspect_common.h"
#include <stdio.h>

/* ---- JSON (tools/report_json.c): values written straight into f ---- */
void rj_str(FILE *f, const char *s);                      /* a JSON string; '<' escaped (inline in <script>) */
void rj_key(FILE *f, const char *key);                    /* "key": */
void rj_nums(FILE *f, const double *v, int n);            /* [1.5,2,…], %.5g, non-finite as null */
void rj_numsf(FILE *f, const float *v, int n);
void rj_b64(FILE *f, const uint8_t *b, size_t n);         /* a base64 string */

/* ---- one model over test images (tools/report_model.c) ---- */
/* images [i0, i0 + n) of d with the eval transform at the model's size, (n, C, S, S) in the arena */
vg_tensor *rm_batch(const vg_vit *m, const vg_dataset *d, const int *idx, int n);
/* The blocks one by one in eval mode on a batch x (B, C, S, S); each output may be NULL:
 *   att (B, L, H, T, T)    attention probabilities of every block and head
 *   lens (L, B, K)         the head read out after each block (final norm, pooling, head)
 *   pooled (B, D)          the pooled feature after the last block
 *   logits (B, K)          the model's logits
 *   tokens (B, L+1, T)     the L2 norm of every token after the embedding and after each block
 * 0, or -1 with vg_error set. The arena is the caller's to reset. */
int rm_forward(vg_vit *m, vg_tensor *x, float *att, float *lens, float *pooled, float *logits, float *tokens);
/* sequence pooling's weights over the N patch tokens of each image of x (B, N floats into out);
 * 0, or -1 and vg_error() (also for a model without sequence pooling) */
int rm_seq_pool_weights(vg_vit *m, vg_tensor *x, float *out);
/* the first two principal components of x (n, D) (centred; power iteration with deflation), their
 * coordinates into xy (n, 2) and their share of the variance into var2[2] */
void rm_pca2(const float *x, int n, int D, float *xy, double var2[2]);
/* mean attention distance of one (T, T) map, in pixels: for each patch query, Σ_k a_qk · the
 * distance between the centres of patches q and k, averaged over the patch queries (prefix tokens
 * S excluded from both sides; the weights renormalised over the patches) */
double rm_mean_attention_distance(const float *a, int T, int S, int gh, int gw, int patch);
/* cosine similarity of the rows of a pos_embed (1, rows, D) after its `pre` prefix rows: sim (N, N) */
void rm_posembed_similarity(const vg_tensor *pos, int pre, int N, float *sim);
#endif
