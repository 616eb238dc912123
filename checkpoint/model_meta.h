/* model_meta.h — the ViT configuration as safetensors metadata ("model.img_size" = "32", …), so a
 * model.safetensors written by ./train is self-describing: ./inspect and --init rebuild the model
 * from the file alone. Values are decimal strings; doubles are printed with %.17g (round trip). */
#ifndef VG_MODEL_META_H
#define VG_MODEL_META_H
#include <stddef.h>
#include "tensor/safetensors.h"
#include "vit/vit.h"

/* every field of c as "model.<field>" metadata; 0, or -1 with err set */
int vg_vit_config_to_meta(const vg_vit_config *c, vg_st_writer *w, char *err, size_t errlen);
/* read back what vg_vit_config_to_meta wrote; keys that are missing keep the value in *c. Fails
 * (err names `path`) when the file has no model.embed_dim or the configuration does not check. */
int vg_vit_config_from_meta(const vg_st_file *f, vg_vit_config *c, const char *path, char *err,
                            size_t errlen);
/* A model rebuilt from a model.safetensors alone: configuration from its metadata (defaults for
 * missing keys), every state-dict tensor loaded by name (strict: same shapes, no extra tensors).
 * `path` names the file in messages. On error *m is left empty (nothing to free). */
int vg_vit_from_checkpoint(const vg_st_file *f, vg_vit *m, const char *path, char *err,
                           size_t errlen);
/* The architecture fields (those that shape parameters or the forward; not img_size, which --init
 * interpolates, nor dropout rates) where f's metadata differs from c, as "embed_dim 16 (this
 * run: 32), depth 1 (this run: 4)" into out; returns how many differ (0 also without metadata). */
int vg_vit_config_diff(const vg_st_file *f, const vg_vit_config *c, char *out, size_t n);
#endif
