/* inspect_common.h — what the ./inspect subcommands share: argument helpers, loading a model
 * (a checkpoint written by ./train, whose "model.*" metadata rebuilds the config, or a freshly
 * initialised preset), loading one image (a JPEG/PNG file or a dataset entry), and turning it
 * into the model's input with the eval transform.
 * Exit codes of every subcommand: 0 ok, 1 runtime error (missing file, bad data), 2 usage. */
#ifndef VG_INSPECT_COMMON_H
#define VG_INSPECT_COMMON_H
#include <stdbool.h>
#include <stdint.h>
#include "data/data.h"
#include "vit/vit.h"

#define IC_ERRLEN 1200
#define IC_USAGE 2
#define IC_FAIL 1

/* argv[*i] == flag: take the value argv[*i + 1] into *val and advance. Returns 1 if it matched,
 * 0 if not, -1 (message printed, "inspect CMD: FLAG needs a value") if the value is missing. */
int  ic_take(const char *cmd, int argc, char **argv, int *i, const char *flag, const char **val);
bool ic_is_help(const char *a);
/* "  PRESET: vit-tiny-cifar | … \n": the presets of vit/presets.c, for a usage text */
void ic_print_presets(FILE *f);
/* strict integer parse in [lo, hi]; prints "inspect CMD: FLAG: …" and returns false otherwise */
bool ic_int(const char *cmd, const char *flag, const char *s, int lo, int hi, int *out);
/* "ROW,COL" */
bool ic_int_pair(const char *cmd, const char *flag, const char *s, int *a, int *b);

/* A model and where it came from. */
typedef struct {
    vg_vit m;
    char   source[4200];     /* the file it was loaded from, or "fresh PRESET (seed N)" */
    char   dataset[32];      /* the dataset it was trained on (train_state's metadata), or "" */
    bool   has_norm;         /* the checkpoint stores its input normalisation (data.mean, data.std) */
    float  mean[3], std[3];
} ic_model;
/* ckpt: a model.safetensors, a step directory or a run directory (see vg_checkpoint_resolve). */
int  ic_model_load(const char *ckpt, ic_model *out, char *err, size_t errlen);
int  ic_model_fresh(const char *preset, uint64_t seed, ic_model *out, char *err, size_t errlen);
void ic_model_free(ic_model *m);

/* One image, uint8 (C, H, W) at its native size. */
typedef struct {
    uint8_t *chw;
    int c, h, w;
    int label;                /* dataset label, or -1 */
    char label_name[64];
    char what[1200];          /* "cifar10 test #7 (horse)" or the file name */
    float mean[3], std[3];    /* normalisation of its dataset (files: from the model's dataset) */
} ic_image;
/* Exactly one source: file != NULL, or kind + dir (dir NULL: $CIFAR10_DIR etc.) + index. */
int  ic_image_load(const char *file, const char *kind, const char *dir, int index, vg_split split,
                   ic_image *out, char *err, size_t errlen);
void ic_image_free(ic_image *im);
/* normalisation constants of a dataset name ("cifar10", "imagefolder", "fashion-mnist", "mnist");
 * unknown: CIFAR-10's for 3 channels, Fashion-MNIST's for 1 */
/* a dataset's folder when none is given: $CIFAR10_DIR / $IMAGENET_SUBSET_DIR / $FASHION_MNIST_DIR, else
 * ../shared/data/… or /usr/share/datasets/fashion-mnist */
const char *ic_default_data_dir(const char *kind);
void ic_norm_for(const char *dataset, int channels, float mean[3], float std[3]);
/* the normalisation of a model's input: the checkpoint's stored one, else its dataset's constants */
void ic_model_norm(const ic_model *m, float mean[3], float std[3]);
/* the eval transform as the loader's (vg_eval_transform: resize shorter side, centre crop) to size × size with the image's
 * normalisation → (1, channels, size, size) in the arena; RGB ↔ gray converted when needed */
vg_tensor *ic_image_input(const ic_image *im, int channels, int size);
/* the same crop as plain uint8 (channels, size, size) for drawing; malloc'ed */
uint8_t *ic_image_crop_u8(const ic_image *im, int size);

/* The model/image options most subcommands accept, parsed in one place. */
typedef struct {
    const char *ckpt, *preset, *image, *dataset, *data;
    int index, seed;
    vg_split split;
} ic_source_opts;
/* Returns 1 if argv[*i] was one of --ckpt --model --seed --image --dataset --data --index --split
 * (value taken), 0 if not, -1 on a bad value (message printed). */
int  ic_source_arg(const char *cmd, int argc, char **argv, int *i, ic_source_opts *o);
/* load the model named by --ckpt or --model; message printed on error */
int  ic_source_model(const char *cmd, const ic_source_opts *o, ic_model *m);
int  ic_source_image(const char *cmd, const ic_source_opts *o, const ic_model *m, ic_image *im);
#endif
