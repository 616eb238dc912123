/* data_meta.h — what the data was, as safetensors metadata next to the model's "model.*" keys, so
 * a checkpoint carries what inference needs (./predict, --eval-only, --resume, ./inspect):
 *   data.dataset      "cifar10", "imagefolder", "fashion-mnist" or "mnist"
 *   data.class_names  the class names in label order, one per line (an image folder's folder
 *                     names; CIFAR-10's and Fashion-MNIST's standard names); a newline inside a
 *                     name is written as a space
 *   data.class_descr  image folders with a classes.txt that describes them: the descriptions,
 *                     one per line ("" where there is none)
 *   data.mean         the input normalisation, per channel on the 0..1 scale: "0.491262,0.482095,0.446518"
 *   data.std          (%.6f each: a value read back is the float ./train used, bit for bit)
 *   data.img_size     the side of the square input; data.channels: 3 or 1
 * Every file ./train writes has them (model, train_state, model_ema). A checkpoint written before
 * has none: readers fall back (vg_data_meta_fallback). In Python: meta["data.class_names"].split("\n"). */
#ifndef VG_DATA_META_H
#define VG_DATA_META_H
#include <stdbool.h>
#include <stddef.h>
#include "data/data.h"
#include "tensor/safetensors.h"

typedef struct {
    char dataset[32];       /* "" when unknown */
    int n_classes;          /* entries of class_names; 0 when the file names no classes */
    char **class_names;     /* [n_classes] or NULL */
    char **class_descr;     /* [n_classes] or NULL (no descriptions) */
    bool has_norm;          /* mean and std are set */
    float mean[3], std[3];
    int img_size, channels; /* 0 when unknown */
} vg_data_meta;

/* d's class names, descriptions, kind, channels and normalisation (d->mean, d->std), and img_size */
int  vg_data_meta_from_dataset(vg_data_meta *m, const vg_dataset *d, int img_size, char *err, size_t errlen);
/* the "data.*" keys of m (only those m has) into w */
int  vg_data_meta_write(const vg_data_meta *m, vg_st_writer *w, char *err, size_t errlen);
/* the "data.*" keys of f into *m (zeroed first; absent keys stay empty). A value that is not what
 * was written (a mean that is not three finite numbers, a std <= 0, class names whose count is
 * not the file's model.num_classes) is an error naming path and key. */
int  vg_data_meta_read(const vg_st_file *f, vg_data_meta *m, const char *path, char *err, size_t errlen);
/* What a file without them implies, for the fields m lacks: class names (the dataset kind's
 * standard names when it has n_classes of them, else "class 0", "class 1", …), normalisation
 * (the kind's constants, vg_dataset_default_norm; for a file of no known dataset — a timm state
 * dict — timm's ImageNet mean and std). `note` (n bytes) gets what was assumed, "" when nothing. */
int  vg_data_meta_fallback(vg_data_meta *m, const char *dataset, int n_classes, char *note, size_t n);
/* class c as reports show it: its description when there is one, else its name */
const char *vg_data_meta_label(const vg_data_meta *m, int c);
void vg_data_meta_free(vg_data_meta *m);
#endif
