/* vit_logits.c — for tests/reference/check_checkpoint_in_pytorch.py: the logits vitgrad computes
 * for a checkpoint and an input batch.   vit_logits MODEL.safetensors IN.safetensors OUT.safetensors
 * IN holds "x" (B, C, H, W) float32; OUT receives "logits" (B, classes) float32. */
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    char err[1024];
    if (argc != 4) { fprintf(stderr, "usage: vit_logits MODEL.safetensors IN.safetensors OUT.safetensors\n"); return 2; }
    vg_st_file *mf = vg_st_open(argv[1], err, sizeof err), *in = mf ? vg_st_open(argv[2], err, sizeof err) : NULL;
    if (!mf || !in) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
    vg_vit_config cfg = vg_vit_config_default();
    if (vg_vit_config_from_meta(mf, &cfg, argv[1], err, sizeof err)) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
    vg_rng rng = vg_rng_seed(0);
    vg_vit m;
    if (!vg_vit_init(&m, &cfg, &rng)) { fprintf(stderr, "vit_logits: %s\n", vg_error()); return 1; }
    vg_params state = {0};
    vg_vit_state(&m, &state);
    if (vg_params_load(&state, mf, "", true, NULL, err, sizeof err)) { fprintf(stderr, "vit_logits: %s: %s\n", argv[1], err); return 1; }
    const vg_st_tensor *xt = vg_st_find(in, "x");
    if (!xt || xt->ndim != 4) { fprintf(stderr, "vit_logits: %s: no 4-d tensor \"x\"\n", argv[2]); return 1; }
    vg_tensor *x = vg_empty(4, xt->shape);
    if (vg_st_read_f32(in, "x", vg_data(x), (size_t)vg_numel(x), err, sizeof err)) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
    vg_no_grad_begin();
    vg_tensor *logits = vg_vit_forward(&m, x, false, NULL);
    vg_no_grad_end();
    if (!logits) { fprintf(stderr, "vit_logits: forward: %s\n", vg_error()); return 1; }
    vg_st_writer *w = vg_st_writer_new();
    if (vg_st_writer_add(w, "logits", VG_ST_F32, logits->ndim, logits->shape, vg_data(logits),
                         sizeof(float) * (size_t)vg_numel(logits), err, sizeof err) ||
        vg_st_write(w, argv[3], err, sizeof err)) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
    vg_st_writer_free(w);
    return 0;
}
