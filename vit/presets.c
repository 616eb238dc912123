/* presets.c — named ViT configurations sized for small images on a CPU, the one list of preset
 * names. All use the defaults of vit_fields.h otherwise (timm's: MLP ratio 4, qkv bias, CLS
 * pooling, learned position embedding, LayerNorm eps 1e-6). */
#include "vit.h"
#include <string.h>

/*        name               img patch ch classes dim depth heads */
#define VG_VIT_PRESETS(X) \
    X("vit-tiny-cifar",      32, 4,    3, 10,     192, 6,    3)   /* 2,693,578 parameters */ \
    X("vit-micro-cifar",     32, 4,    3, 10,     128, 4,    4) \
    X("vit-mnist",           28, 7,    1, 10,     64,  4,    4) \
    X("vit-tiny-in64",       64, 8,    3, 10,     192, 6,    3)   /* the 10-class ImageNet subset at 64 px */

typedef struct { const char *name; int img, patch, chans, classes, dim, depth, heads; } preset;
static const preset presets[] = {
#define X(name, img, patch, ch, classes, dim, depth, heads) {name, img, patch, ch, classes, dim, depth, heads},
    VG_VIT_PRESETS(X)
#undef X
};

const char *const vg_vit_preset_names[] = {
#define X(name, ...) name,
    VG_VIT_PRESETS(X)
#undef X
    NULL};

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
    char names[256] = "";
    for (int k = 0; vg_vit_preset_names[k]; k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", vg_vit_preset_names[k]);
    vg_set_error("vit: unknown preset '%s' (%s)", name ? name : "(null)", names);
    return false;
}
