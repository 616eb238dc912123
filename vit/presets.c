/* presets.c — named ViT configurations sized for small images on a CPU. All use timm's defaults
 * otherwise: MLP ratio 4, qkv bias, CLS pooling, learned position embedding, LayerNorm eps 1e-6. */
#include "vit.h"
#include <string.h>

typedef struct { const char *name; int img, patch, chans, classes, dim, depth, heads; } preset;
static const preset presets[] = {
    /* name              img patch ch classes dim depth heads */
    {"vit-tiny-cifar",   32, 4,    3, 10,     192, 6,    3},   /* 2,693,578 parameters */
    {"vit-micro-cifar",  32, 4,    3, 10,     128, 4,    4},
    {"vit-mnist",        28, 7,    1, 10,     64,  4,    4},
    {"vit-tiny-in64",    64, 8,    3, 10,     192, 6,    3},   /* the 10-class ImageNet subset at 64 px */
};

const char *const vg_vit_preset_names[] = {"vit-tiny-cifar", "vit-micro-cifar", "vit-mnist", "vit-tiny-in64", NULL};

bool vg_vit_preset(const char *name, vg_vit_config *out) {
    for (size_t i = 0; name && i < sizeof presets / sizeof presets[0]; i++) {
        const preset *p = &presets[i];
        if (strcmp(name, p->name)) continue;
        vg_vit_config c = vg_vit_config_default();
        c.img_size = p->img; c.patch_size = p->patch; c.in_chans = p->chans; c.num_classes = p->classes;
        c.embed_dim = p->dim; c.depth = p->depth; c.num_heads = p->heads;
        *out = c;
        return true;
    }
    vg_set_error("vit: unknown preset '%s' (vit-tiny-cifar, vit-micro-cifar, vit-mnist, vit-tiny-in64)",
                 name ? name : "(null)");
    return false;
}
