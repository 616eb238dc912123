/* data.h — datasets (CIFAR-10 binary, image folders, MNIST/Fashion-MNIST IDX), transforms and a
 * background-threaded, seeded, resumable batch loader.
 *
 * Errors are values: every function that can fail returns NULL or a negative number and writes
 * a one-line message into the caller's `err` buffer (VG_DATA_ERRLEN bytes are enough), naming the
 * file and what was wrong. Nothing here calls exit().
 *
 * Images are kept in memory as uint8, channel-major (C, H, W) at their native size; the loader
 * turns them into normalized `real` batches (B, C, H, W) on worker threads. */
#ifndef VG_DATA_H
#define VG_DATA_H
#include <stddef.h>
#include <stdint.h>
#include "tensor/real.h"
#include "tensor/rng.h"
#include "data/augment.h"

#define VG_DATA_ERRLEN 512

typedef enum { VG_SPLIT_TRAIN = 0, VG_SPLIT_TEST = 1 } vg_split; /* image folders: TEST = val/ */

/* Normalization constants, per channel on the 0..1 scale, computed by this code from the
 * training split (see docs/data.md for how and the exact values). */
#define VG_CIFAR10_MEAN        {0.491262f, 0.482095f, 0.446518f}
#define VG_CIFAR10_STD         {0.245381f, 0.242839f, 0.260709f}
#define VG_IMAGENET_SUBSET_MEAN {0.486595f, 0.432932f, 0.360698f}
#define VG_IMAGENET_SUBSET_STD  {0.269433f, 0.256504f, 0.266576f}
#define VG_FASHION_MNIST_MEAN  {0.286041f, 0.286041f, 0.286041f}
#define VG_FASHION_MNIST_STD   {0.353024f, 0.353024f, 0.353024f}
/* Image folders normalise with their own training split's statistics (vg_dataset_norm_stats);
 * the ImageNet-subset values above are what ./train used for every image folder before, so a
 * checkpoint that stores no normalisation (data.mean, checkpoint/data_meta.h) was trained with
 * them. */

/* the standard class names of a dataset kind with n_classes classes ("cifar10", "fashion-mnist",
 * "mnist": 10), NULL when the kind has none (image folders: their folder names) */
const char *const *vg_dataset_default_names(const char *kind, int n_classes);
/* the normalisation a dataset kind uses without data-specific statistics: CIFAR-10's,
 * Fashion-MNIST's, MNIST's; image folders the ImageNet-subset constants (see above). -1 (and
 * nothing written) for an unknown kind. */
int vg_dataset_default_norm(const char *kind, float mean[3], float std[3]);

typedef struct vg_dataset {
    char name[32];          /* "cifar10", "imagefolder", "fashion-mnist", "mnist" */
    char path[1024];        /* directory it was read from */
    int n;                  /* number of images */
    int channels;           /* 3 (RGB) or 1 (IDX data) */
    int height, width;      /* common image size, or 0 when sizes differ (see heights/widths) */
    int n_classes;
    char **class_names;     /* [n_classes]; for image folders the folder (wnid) names */
    char **class_descr;     /* [n_classes] or NULL: names after the wnid in classes.txt */
    int32_t *labels;        /* [n], each in 0..n_classes-1 */
    uint8_t *pixels;        /* all images, each (channels, h, w), back to back */
    size_t *offsets;        /* [n] byte offset of each image in pixels; NULL when fixed-size */
    int *heights, *widths;  /* [n] per-image sizes; NULL when fixed-size */
    uint8_t *src_channels;  /* [n] channels in the file before RGB conversion; NULL if n/a */
    char **files;           /* [n] source file of each image (image folders), else NULL */
    float mean[3], std[3];  /* normalization used by the loader, 0..1 scale: CIFAR-10, (Fashion-)
                               MNIST: their constants; an image folder's train split: its own
                               statistics (vg_dataset_norm_stats); its val split: the ImageNet-
                               subset constants until the caller copies the train split's */
    int n_skipped;          /* image folders: files skipped (corrupt, not an image, ...) */
    char **skipped;         /* [n_skipped] "path: reason" */
} vg_dataset;

/* dir holds data_batch_1..5.bin and test_batch.bin (+ optional batches.meta.txt). Each file must
 * be a whole, non-zero number of 3073-byte records with labels 0..9. */
vg_dataset *vg_cifar10_open(const char *dir, vg_split split, char *err, size_t errlen);
/* root/train/<class>/<files>, root/val/<class>/<files>. Class order: root/classes.txt if present (one wnid per
 * line, optionally "index<ws>wnid<ws>name" or "wnid<ws>name"), else sorted train/ folder names.
 * JPEG (stb_image) and PNG (libpng) are decoded at open; gray/palette become RGB, alpha dropped.
 * Unreadable files are skipped with a warning on stderr and listed in d->skipped.
 * Warnings are not printed when quiet != 0 (they are still listed). */
vg_dataset *vg_imagefolder_open(const char *root, vg_split split, int quiet, char *err, size_t errlen);
/* IDX pair: images (magic 0x803, uint8 N x H x W) and labels (magic 0x801, uint8 N), gzip or raw. */
vg_dataset *vg_idx_open(const char *images_path, const char *labels_path, char *err, size_t errlen);
/* dir with train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-* */
vg_dataset *vg_fashion_mnist_open(const char *dir, vg_split split, char *err, size_t errlen);
vg_dataset *vg_mnist_open(const char *dir, vg_split split, char *err, size_t errlen);
/* kind: "cifar10", "imagefolder", "fashion-mnist" or "mnist" */
vg_dataset *vg_dataset_open(const char *kind, const char *dir, vg_split split, char *err, size_t errlen);
void vg_dataset_free(vg_dataset *d);

/* pixels of image i, (channels, h, w) uint8 */
const uint8_t *vg_dataset_image(const vg_dataset *d, int i, int *h, int *w);
/* per-channel mean and std of pixel/255 over every pixel of every image (population std) */
void vg_dataset_channel_stats(const vg_dataset *d, double mean[3], double std[3]);
/* the normalisation an image folder's train split gets: vg_dataset_channel_stats rounded to 6
 * decimals (the precision checkpoints store them in, so a stored value reads back bit for bit;
 * for the ImageNet subset these are exactly VG_IMAGENET_SUBSET_MEAN / _STD). Channels beyond
 * d->channels repeat channel 0. */
void vg_dataset_norm_stats(const vg_dataset *d, float mean[3], float std[3]);
/* counts[c] = images of class c; counts has n_classes entries */
void vg_dataset_class_counts(const vg_dataset *d, int *counts);

/* ---- image decoding (image_decode.c) ---- */
/* Decode a JPEG or PNG (by signature; other formats are refused) to RGB (3, h, w) uint8, malloc'ed.
 * *src_channels receives the channel count stored in the file. Returns 0 or -1 with err set. */
int vg_image_decode_file(const char *path, uint8_t **chw, int *h, int *w, int *src_channels,
                         char *err, size_t errlen);
int vg_image_decode_memory(const uint8_t *buf, size_t len, const char *name, uint8_t **chw,
                           int *h, int *w, int *src_channels, char *err, size_t errlen);

/* ---- transforms (transforms.c); all write normalized values y = (x/255 - mean[c]) / std[c] ---- */
/* Resample the box (x0, y0, bw, bh) of src (C, H, W) to (C, oh, ow): separable triangle filter,
 * antialiased when shrinking (support grows with the shrink factor), same as PIL's BILINEAR and
 * torchvision's antialias=True, computed in float without intermediate rounding. When flip != 0
 * the output is mirrored left-right. */
void vg_resample_box(const uint8_t *src, int C, int H, int W, double x0, double y0, double bw,
                     double bh, real *dst, int oh, int ow, int flip, const float *mean,
                     const float *std);
/* Eval transform: resize the shorter side to `size` (torchvision Resize(size)), center-crop
 * size x size. */
void vg_resize_center_crop(const uint8_t *src, int C, int H, int W, int size, real *dst,
                           const float *mean, const float *std);
/* The evaluation transform, as the loader applies it in eval mode: an image already size x size
 * is only normalised, any other is resized and centre-cropped (vg_resize_center_crop). */
void vg_eval_transform(const uint8_t *src, int C, int H, int W, int size, real *dst,
                       const float *mean, const float *std);
/* Random crop of an image zero-padded by `pad` on each side: output (y, x) = src(y + oy - pad,
 * x + ox - pad), 0 outside, then mirrored if flip. oy, ox in 0..2*pad. Output size = input size. */
void vg_pad_crop_flip(const uint8_t *src, int C, int H, int W, int pad, int oy, int ox, int flip,
                      real *dst, const float *mean, const float *std);
/* torchvision RandomResizedCrop.get_params: box (x0, y0, bw, bh) in pixels drawn from r */
void vg_rrc_params(vg_rng *r, int H, int W, double scale_min, double scale_max, double ratio_min,
                   double ratio_max, int *x0, int *y0, int *bw, int *bh);

/* ---- loader (loader.c) ---- */
typedef enum {
    VG_AUG_AUTO = 0,  /* PAD_CROP when every image already is image_size x image_size, else RRC */
    VG_AUG_NONE,      /* train batches use the eval transform (still shuffled) */
    VG_AUG_PAD_CROP,  /* zero-pad by crop_pad, random crop back (needs image_size = native size) */
    VG_AUG_RRC,       /* random-resized-crop to image_size */
} vg_aug;

typedef struct vg_loader_config {
    int batch_size;
    int train;           /* 1: shuffle per epoch, augment, drop the last partial batch;
                            0: dataset order, eval transform, keep the last partial batch */
    int image_size;      /* output H = W; 0 = the dataset's common native size */
    int n_threads;       /* worker threads; 0 = build batches in the caller's thread */
    int prefetch;        /* batches prepared ahead of the consumer (>= 1) */
    uint64_t seed;
    vg_aug aug;
    int crop_pad;        /* PAD_CROP padding in pixels (default 4) */
    int hflip;           /* random horizontal flip with p = 0.5 in train mode (default 1) */
    double scale_min, scale_max, ratio_min, ratio_max;  /* RRC, default 0.08, 1, 3/4, 4/3 */
    int normalize;       /* 1: (x/255 - dataset mean)/std (default); 0: x/255 */
    int shard, n_shards; /* data-parallel slice (default 0 of 1): batch_size stays the global
                            batch, and this loader builds only samples [lo, hi) of each one,
                            lo = n·shard/n_shards, hi = n·(shard+1)/n_shards for a batch of n.
                            Order, augmentation and position are global: the same sample gets
                            the same pixels for any n_shards. Training needs n_shards | batch. */
    /* train mode, after the crop and flip (timm's order; data/augment.h): */
    int randaugment;     /* 1: RandAugment `ra` on the uint8 crop (fill: the dataset mean) */
    vg_randaugment_config ra;
    double reprob;       /* random erasing probability on the normalised image (0 = off) */
} vg_loader_config;
vg_loader_config vg_loader_config_default(void); /* batch 128, train, 2 threads, prefetch 3 */

/* A batch handed out by vg_loader_next. x and y belong to the loader and stay valid until the
 * next vg_loader_next / vg_loader_state_set / vg_loader_free call. */
typedef struct vg_batch {
    int n, c, h, w;      /* x is (n, c, h, w): this shard's samples (all of them with one shard);
                            n < batch_size / n_shards only for an eval loader's last batch, where
                            a shard may get none (n = 0) */
    real *x;
    int32_t *y;          /* [n] */
    uint64_t epoch;      /* epoch the batch belongs to */
    uint64_t index;      /* position of the global batch's first sample in that epoch's order */
    int offset;          /* this shard's first sample within the global batch */
    int global_n;        /* samples in the global batch (every shard's together) */
} vg_batch;

/* The loader position: everything needed to continue with exactly the next batch. A plain value:
 * write it to a checkpoint as is (fixed-width fields, no pointers). */
typedef struct vg_loader_state {
    uint64_t epoch;      /* current epoch (0-based) */
    uint64_t index;      /* position in the epoch's order of the next batch's first sample */
    vg_rng rng;          /* root generator: epoch orders and per-sample augmentations derive
                            from (rng, epoch, sample) by hashing, never by a shared stream */
} vg_loader_state;

/* The loader reads d but does not own it: free d after the loader. */
typedef struct vg_loader vg_loader;
vg_loader *vg_loader_new(const vg_dataset *d, const vg_loader_config *cfg, char *err, size_t errlen);
/* Returns 1 with *b filled, or 0 at the end of an epoch (once; the following call starts the
 * next epoch). */
int  vg_loader_next(vg_loader *L, vg_batch *b);
vg_loader_state vg_loader_state_get(const vg_loader *L);
/* Continue from a saved position. Returns 0, or -1 (err set) if it does not fit this dataset. */
int  vg_loader_state_set(vg_loader *L, const vg_loader_state *s, char *err, size_t errlen);
int  vg_loader_batches_per_epoch(const vg_loader *L);
/* total seconds the caller spent blocked inside vg_loader_next, and the number of calls */
double vg_loader_wait_seconds(const vg_loader *L);
uint64_t vg_loader_calls(const vg_loader *L);
void vg_loader_free(vg_loader *L);
#endif
