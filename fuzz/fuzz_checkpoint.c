/* fuzz_checkpoint.c — a model.safetensors into a model: the ViT configuration from its
 * metadata (checkpoint/model_meta.c) or, for a bare timm state dict, from its shapes, then every
 * state-dict tensor by name, shape and dtype (vg_vit_from_checkpoint, what --init and ./inspect
 * do), and its data.* metadata (class names, normalisation: checkpoint/data_meta.c, what ./predict
 * reads). A rejected file gets an error naming it; an accepted one gives a model whose parameter
 * count is what its configuration says. */
#include "fuzz/common.h"
#include "checkpoint/data_meta.h"
#include "checkpoint/model_meta.h"
#include <stdlib.h>

#define NAME "fuzz-model.safetensors"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024] = "";
    vg_st_file *f = vg_st_open_memory(data, size, NAME, err, sizeof err);
    if (!f) { fuzz_expect_error(err, NAME); return 0; }
    vg_vit m;
    int rc = vg_vit_from_checkpoint(f, &m, NAME, err, sizeof err);
    /* a bare timm state dict narrower than 64 has no default head count: one head always divides */
    if (rc && !vg_st_meta(f, "model.embed_dim")) {
        fuzz_expect_error(err, NAME);
        rc = vg_vit_from_file(f, &m, 1, NAME, err, sizeof err);
    }
    if (rc) fuzz_expect_error(err, NAME);
    vg_data_meta dm;                    /* the data.* keys (checkpoint/data_meta.c), as ./predict reads them */
    if (vg_data_meta_read(f, &dm, NAME, err, sizeof err)) fuzz_expect_error(err, NAME);
    else {
        for (int c = 0; c < dm.n_classes; c++) fuzz_require(vg_data_meta_label(&dm, c) != NULL, "every class has a label");
        vg_data_meta_free(&dm);
    }
    if (!rc) {
        fuzz_note("accepted: a model of %lld parameters", (long long)vg_vit_param_count(&m.cfg));
        vg_params st = {0};
        vg_vit_state(&m, &st);
        fuzz_require(vg_params_count(&st) == vg_vit_param_count(&m.cfg), "parameter count matches the configuration");
        vg_params_free(&st);
        vg_vit_free(&m);
    }
    vg_st_close(f);
    vg_arena_reset();
    vg_clear_error();
    return 0;
}
