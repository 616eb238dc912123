/* model_meta.h — the ViT configuration as safetensors metadata ("model.img_size" = "32", …), so a
 * model.safetensors written by ./train is self-describing: ./inspect and --init rebuild the model
 * from the file alone. Values are decimal strings; doubles are printed with %.17g (round trip).
 * A timm model.safetensors (no such metadata) is read from its tensor shapes instead
 * (vg_vit_config_from_file). */
#ifndef VG_MODEL_META_H
#define VG_MODEL_META_H
#include <stddef.h>
#include "tensor/safetensors.h"
#include "vit/vit.h"

/* the fields of vit/vit_fields.h as "model.<field>" metadata, in the table's order (fields marked
 * IF_SET only when not the default); 0, or -1 with err set */
int vg_vit_config_to_meta(const vg_vit_config *c, vg_st_writer *w, char *err, size_t errlen);
/* read back what vg_vit_config_to_meta wrote; keys that are missing keep the value in *c. Fails
 * (err names `path`) when the file has no model.embed_dim or the configuration does not check. */
int vg_vit_config_from_meta(const vg_st_file *f, vg_vit_config *c, const char *path, char *err,
                            size_t errlen);
/* The configuration of the ViT a safetensors file holds, from the file alone:
 *  - a file written by vitgrad: its "model.*" metadata (vg_vit_config_from_meta, defaults for
 *    missing keys); a nonzero num_heads_or_0 that differs from the metadata's is an error;
 *  - otherwise a state dict in timm's layout (a timm/HF model.safetensors), read from its shapes:
 *    embed_dim, in_chans, patch size   patch_embed.proj.weight (D, C, P, P) (square patches)
 *    depth                             blocks.0 … blocks.{depth−1} (attn.qkv.weight present)
 *    mlp_ratio                         blocks.0.mlp.fc1.weight rows / D
 *    qkv_bias                          blocks.0.attn.qkv.bias present
 *    class_token, reg_tokens           cls_token present; reg_token (1, R, D)
 *    img_size, no_embed_class          pos_embed (1, rows, D): rows = S + g² → a row per token;
 *                                      else rows = g² → no_embed_class (S = class + reg tokens);
 *                                      img_size = g·P (a square grid; when both readings fit
 *                                      — small grids — models with register tokens take
 *                                      no_embed_class, as every timm reg model does, others a
 *                                      row per token, timm's default)
 *    fc_norm                           fc_norm.weight present and norm.weight absent
 *    init_values (LayerScale)          blocks.0.ls1.gamma present: 1e-5 (the loaded gammas count)
 *    num_classes                       head.weight rows; no head.weight → 0: no head, the model
 *                                      outputs its pooled features (timm's num_classes=0)
 *    pool                              mean without a class token or with fc_norm (timm's
 *                                      global_pool='avg'), else cls — not in the shapes: a
 *                                      caller may override it
 *    num_heads                         not in the shapes: num_heads_or_0, or embed_dim/64 when 0
 *                                      (every published timm ViT — tiny 192/3, small 384/6,
 *                                      base 768/12, large 1024/16 — has head_dim 64); an error
 *                                      when 0 and embed_dim is not a multiple of 64
 *    norm_eps 1e-6, learned pos_embed, no dropout: timm's ViT defaults.
 *  A file without patch_embed.proj.weight and metadata is "not a Vision Transformer" (the message
 *  names the file and its first keys); timm features vitgrad lacks (distillation token, pre-norm,
 *  attention pooling, qk_norm, gated MLP) are named. Returns 0, or -1 with err naming `path`. */
int vg_vit_config_from_file(const vg_st_file *f, vg_vit_config *c, int num_heads_or_0, const char *path,
                            char *err, size_t errlen);
/* Keys of f that are not in m's state dict (out: "a, b, …", cut with "..." at n bytes) and m's
 * state-dict tensors absent from f; each returns how many. */
int vg_vit_unused_keys(vg_vit *m, const vg_st_file *f, char *out, size_t n);
int vg_vit_missing_keys(vg_vit *m, const vg_st_file *f, char *out, size_t n);
/* A model rebuilt from a model.safetensors alone: configuration from vg_vit_config_from_file,
 * every state-dict tensor loaded by name (strict: same shapes; missing tensors and unused keys
 * are an error that lists them). F16 / BF16 / F64 tensors are converted. `path` names the file
 * in messages. On error *m is left empty (nothing to free). */
int vg_vit_from_file(const vg_st_file *f, vg_vit *m, int num_heads_or_0, const char *path, char *err,
                     size_t errlen);
/* vg_vit_from_file with num_heads_or_0 = 0 (./inspect, the fuzz harness) */
int vg_vit_from_checkpoint(const vg_st_file *f, vg_vit *m, const char *path, char *err,
                           size_t errlen);
/* The architecture fields (those that shape parameters or the forward; not img_size, which --init
 * interpolates, nor dropout rates) where f's metadata — or for a bare timm state dict its shapes
 * (then not num_heads nor pool, which shapes do not give) — differs from c, as "embed_dim 16 (this
 * run: 32), depth 1 (this run: 4)" into out; returns how many differ (0 when unreadable). */
int vg_vit_config_diff(const vg_st_file *f, const vg_vit_config *c, char *out, size_t n);
#endif
