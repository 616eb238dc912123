/* vit_logits.c — for tests/reference/check_checkpoint_in_pytorch.py and check_timm.py.
 *
 *   vit_logits MODEL.safetensors IN.safetensors OUT.safetensors [NUM_HEADS]
 *       the logits vitgrad computes (eval mode) for a model file — one written by ./train (its
 *       metadata) or a timm state dict (read from its shapes; NUM_HEADS, else embed_dim/64) — and
 *       the input batch "x" (B, C, H, W) of IN; OUT receives "logits" (B, classes) float32 (the
 *       pooled features (B, D) for a model without a head).
 *   vit_logits --write-from LAYOUT.safetensors OUT.safetensors [NUM_HEADS]
 *       a model of LAYOUT's configuration with vitgrad's own seeded init (biases, norms, tokens and
 *       LayerScale perturbed so each matters), written as ./train writes model.safetensors: the
 *       state dict in timm's key names and order, the configuration as metadata, format "pt". */
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include <stdlib.h>
#include <string.h>

static int write_from(const char *layout, const char *out, int heads) {
    char err[2048];
    vg_st_file *f = vg_st_open(layout, err, sizeof err);
    vg_vit_config cfg;
    if (!f || vg_vit_config_from_file(f, &cfg, heads, layout, err, sizeof err)) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
    vg_st_close(f);
    vg_rng rng = vg_rng_seed(42);
    vg_vit m;
    if (!vg_vit_init(&m, &cfg, &rng)) { fprintf(stderr, "vit_logits: %s\n", vg_error()); return 1; }
    vg_params st = {0};
    vg_vit_state(&m, &st);
    for (int i = 0; i < st.n; i++) {
        const char *n = st.items[i].name;
        vg_tensor *t = st.items[i].tensor;
        bool small = strstr(n, "bias") || strstr(n, "norm") || strstr(n, "_token") || strstr(n, "gamma");
        for (int64_t k = 0; small && k < vg_numel(t); k++) vg_data(t)[k] += (real)(0.1 * vg_rng_normal(&rng));
    }
    vg_st_writer *w = vg_st_writer_new();
    if (vg_params_to_writer(&st, w, err, sizeof err) || vg_vit_config_to_meta(&m.cfg, w, err, sizeof err) ||
        vg_st_writer_meta(w, "format", "pt", err, sizeof err) || vg_st_write(w, out, err, sizeof err)) {
        fprintf(stderr, "vit_logits: %s\n", err);
        return 1;
    }
    vg_st_writer_free(w);
    vg_params_free(&st);
    vg_vit_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    char err[2048];
    if (argc >= 4 && argc <= 5 && !strcmp(argv[1], "--write-from")) return write_from(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 0);
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: vit_logits MODEL.safetensors IN.safetensors OUT.safetensors [NUM_HEADS]\n"
                        "       vit_logits --write-from LAYOUT.safetensors OUT.safetensors [NUM_HEADS]\n");
        return 2;
    }
    vg_st_file *mf = vg_st_open(argv[1], err, sizeof err), *in = mf ? vg_st_open(argv[2], err, sizeof err) : NULL;
    if (!mf || !in) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
    vg_vit m;
    if (vg_vit_from_file(mf, &m, argc == 5 ? atoi(argv[4]) : 0, argv[1], err, sizeof err)) { fprintf(stderr, "vit_logits: %s\n", err); return 1; }
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
    vg_vit_free(&m);
    vg_st_close(mf);
    vg_st_close(in);
    return 0;
}
