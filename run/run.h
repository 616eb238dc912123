/* run/ — the pieces of a training run that ./train wires together: the flags (one table that also
 * prints --help), the trainer's state, one training step and --bench, evaluation, and the
 * checkpoint pair (model.safetensors + train_state.safetensors) it saves and resumes from.
 *
 * train.c owns the loop, logging and the order of things; everything here is callable from a
 * test. Functions that can fail return 0 / a value and write a one-line message naming the file
 * and the problem into `err` (RUN_ERRLEN bytes). The exception is vg_options_parse, the program's
 * command line: a usage error prints the flag and the problem and exits with status 2. */
#ifndef VG_RUN_H
#define VG_RUN_H

#include "base/clock.h"   /* vg_now_s */
#include "checkpoint/data_meta.h"
#include "data/data.h"
#include "dist/dist.h"
#include "optim/optim.h"
#include "tensor/safetensors.h"
#include "vit/vit.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RUN_ERRLEN 1024

/* ------------------------------------------------------------------ options (run/options.c) */
typedef enum { UNIT_DEFAULT, UNIT_STEPS, UNIT_EPOCHS } run_unit;

typedef struct {
    const char *dataset, *data, *model, *out, *resume, *init;
    vg_vit_config vit;           /* the preset with the model overrides applied */
    int epochs; int64_t steps;
    int batch;
    double lr, wd, min_lr, label_smoothing, clip;
    double warmup;               /* < 0: default (10% of training) */
    run_unit warmup_unit;        /* (right after its double: the parser relies on it) */
    double patch_drop_until;     /* --patch-drop-until: patch dropout up to here, then every patch; < 0: off */
    run_unit patch_drop_until_unit;
    int64_t patch_drop_until_step; /* the same in steps (run_patch_drop_schedule); -1: never */
    int64_t eval_every, save_every, log_every; bool every_in_steps;
    uint64_t seed;
    int threads, loader_threads;
    double bucket_mb, comm_timeout;  /* several processes: gradient bucket size, collective timeout */
    bool eval_only, trace_shapes, profile, full_last_block;
    bool amp;                    /* --amp: bf16 autocast (autograd/autocast.c) */
    const char *amp_dtype;       /* --amp-dtype: bfloat16 (float16 refused) */
    const char *amp_kernel;      /* --amp-kernel: auto|amx|vdpbf16ps|rounded|fp32 (gemm/gemm.h) */
    int eval_batch;              /* 0 until parsed: then --batch unless given */
    const char *tta;             /* --tta: none|flip (test-time augmentation at every evaluation) */
    bool overwrite, continue_run;
    int bench;
    int64_t stop_at;
    vg_interp_mode interp;
    const char *aug;
    /* timm's regularisation (docs/data.md, docs/layers.md); names and meaning as timm's train.py */
    double mixup, cutmix, mixup_prob, mixup_switch_prob;   /* Mixup/CutMix alphas (0 = off) */
    const char *aa;              /* RandAugment config string, NULL = off */
    double reprob;               /* random erasing probability */
    bool model_ema; double model_ema_decay;
    int grad_accum_steps;        /* micro-batches of --batch per optimizer step */
    /* the model flags as given, by field (VG_VIT_F_*; NULL: not given); applied to the preset
     * after parsing, or to an --init file's model */
    const char *ov[VG_VIT_NFIELDS];
    bool model_given;            /* --model was given (else the dataset's preset, or the --init file's model) */
    double layer_decay;          /* --layer-decay: per-block lr scale (0 = off) */
    bool muon;                   /* --muon: the blocks' matrices by Muon (optim/muon.c) */
    double muon_lr, muon_momentum;   /* muon_lr 0: --lr */
    const char *muon_adjust;     /* match_rms_adamw | original */
    const char *interp_name;
    int snapshots;               /* --snapshots: weight copies in OUT/snapshots (run/snapshot.c); 0 = none */
} options;

options vg_options_parse(int argc, char **argv);     /* exits 2 on a usage error, 0 after --help */
void    vg_options_usage(FILE *f);                    /* --help: generated from the flag table */
/* the model flags (--img-size, --patch, --num-classes, dropout rates, …) applied to c, e.g. to the
 * configuration read from an --init file; exits 2 on a bad value or an invalid result */
void    vg_options_apply_model_flags(const options *o, vg_vit_config *c);

/* ------------------------------------------------------------------ the trainer */
typedef struct run_snapshots run_snapshots;
typedef struct {
    vg_vit model;
    vg_params params;           /* trainable (optimizer order) */
    vg_params state_dict;       /* every tensor saved in model.safetensors */
    vg_adamw *opt;
    vg_grad_sync *sync;         /* sums gradients over processes (dist/); free it after the model */
    vg_rng dropout_rng;
    int64_t step;
    double wall_offset;         /* training seconds before this process (resume) */
    int64_t images;             /* training images processed so far (the TFLOP count; resume) */
    bool has_ema;               /* --model-ema: ema_model is the weight average (optim/ema.c) */
    vg_vit ema_model;
    vg_params ema_state;        /* its state dict, in the order of state_dict */
    run_snapshots *snap;        /* OUT/snapshots/ being written (rank 0, --snapshots > 0), or NULL */
    vg_data_meta data;          /* class names, normalisation, input size: every checkpoint's data.* */
} trainer;

long   run_peak_rss_mib(void);
/* --amp's matrix products as start-up lines and --bench show them: "bf16 GEMM vdpbf16ps (avx512_bf16
 * vdpbf16ps 12x32; auto: …)" or "FP32 GEMMs: … (auto: …)"; a static buffer */
const char *run_amp_describe(void);

/* ------------------------------------------------------------------ checkpoints (run/train_state.c) */
/* write OUT/checkpoints/step-N/{model,train_state}.safetensors and switch `latest` atomically */
int trainer_save_checkpoint(trainer *t, const options *o, const vg_lr_schedule *sched, vg_loader *loader,
                            double wall, char *err);
/* --resume: the model configuration saved in a train_state file into o->vit; an error when the
 * state was saved by a run on another --dataset */
int trainer_config_from_state(const char *path, options *o, char *err);
/* restore optimizer moments, step, dropout RNG and the loader position from a train_state file */
int trainer_load_state(trainer *t, const char *path, vg_loader_state *ls, int batch, char *err);
/* load weights from a model.safetensors; resize pos_embed when its grid differs from the model's */
int trainer_load_weights(trainer *t, const char *path, vg_interp_mode interp, bool strict, char *err);

/* ------------------------------------------------------------------ the model (run/model_setup.c) */
/* The configuration into o->vit before the model is built: the checkpoint's (--resume), the --init
 * file's (without --model), else the preset's; model flags on top; the head's class count from
 * --num-classes, else data_classes (the data's; 0 = unknown, e.g. --bench). model_path and
 * state_path (pathlen bytes each) get the --resume/--init checkpoint's files, else stay empty.
 * Prints where the model came from when it is the file's. */
int run_model_config(options *o, char *model_path, char *state_path, size_t pathlen, int data_classes, char *err);
/* --init: fit the file's weights to the model before they load: a head of another class count is
 * skipped (the model's new head stays), a patch kernel of another size is resampled into the model
 * (FlexiViT). Appends the names it handled to skip[*nskip] (room for 3 more); prints each change. */
int run_fit_init_weights(trainer *t, const vg_st_file *f, const char *path, vg_interp_mode interp, const char **skip,
                         int *nskip, char *err);

/* --layer-decay: the optimizer's per-parameter lr scales (vg_layer_decay_scale), printed */
void run_layer_decay(trainer *t, double decay);
/* --muon: Muon for the blocks' 2-d weights (their names blocks.*, 2-d), printed; -1 with err */
int run_muon(trainer *t, const options *o, char *err);

/* ------------------------------------------------------------------ the data (run/data_setup.c) */
/* With the model built, before anything is evaluated or trained: refuses a dataset of fewer than 2
 * classes; reads the data metadata of the checkpoint (model_path; "" for none); with --eval-only
 * or --resume refuses a checkpoint whose class names are not the data's; sets test's
 * normalisation (--eval-only, --resume: the checkpoint's) and fills t->data. Returns 0, -1 and
 * err (an error), or 2 and err (a refusal: usage, exit status 2). */
int run_data_setup(trainer *t, const options *o, vg_dataset *test, const char *dir, const char *model_path, char *err);
/* Training: the normalisation of the run onto train and test — a resumed run keeps the one it was
 * started with (the checkpoint's; OUT/normalization.txt; the dataset's old constants), a new run
 * takes the train split's (an image folder's own statistics) — into t->data and, when write (rank
 * 0), OUT/normalization.txt. Call before the loader is made. */
int run_data_train_split(trainer *t, const options *o, vg_dataset *train, vg_dataset *test, bool write, char *err);

/* ------------------------------------------------------------------ evaluation (run/evaluate.c) */
/* interrupted: a stop signal (run/stop.c) ended it after a batch, on every process together: the
 * numbers cover only part of the split */
/* tta_loss, tta_acc: with flip test-time augmentation, the figures of the logits averaged over
 * each image and its mirror (NaN without); loss, acc and the confusion matrix are the plain ones */
typedef struct { double loss, acc, tta_loss, tta_acc; int64_t n; int64_t *confusion; int classes; bool interrupted; } eval_result;

/* the model in eval mode over a whole split, each process its slice of every batch, the sums
 * taken over processes (collective); tta_flip: also the mirrored images (2x the forward passes);
 * *ok false (and err set) on failure. Free .confusion. */
eval_result trainer_evaluate(trainer *t, const vg_dataset *test, int batch, int loader_threads, bool tta_flip, char *err, bool *ok);
/* the same for any model (e.g. the EMA weights) */
eval_result model_evaluate(vg_vit *m, const vg_dataset *test, int batch, int loader_threads, bool tta_flip, char *err, bool *ok);
/* x (B, C, H, W) mirrored left to right, a new arena tensor (no graph) */
vg_tensor  *eval_hflip(vg_tensor *x);
void        eval_report_print(const eval_result *r, const vg_dataset *d, FILE *f);
/* --eval-only: evaluate the model on test, print the time, memory and the report; 0 or -1 and err */
int         run_eval_only(trainer *t, const options *o, const vg_dataset *test, char *err);

/* ------------------------------------------------------------------ the output directory (run/run_dir.c) */
/* Before a run: refuse an --out that already holds a run unless --resume points into it or
 * --overwrite is given (then its checkpoints and metrics are removed, when may_write: rank 0);
 * --continue sets o->resume when --out has a checkpoint. Prints what it does; -1 and err when the
 * run must not start. */
int  run_dir_prepare(options *o, bool may_write, char *err);
/* drop metrics.csv rows of steps after `step` (logged by a process that died after its last checkpoint) */
int  run_dir_trim_metrics(const char *out, int64_t step, char *err);
/* whether metrics.csv at path has the column name in its header (false: no file, or no such column) */
bool run_dir_metrics_has(const char *path, const char *column);
/* a resumed run that is already at its last step: say so, with its final evaluation */
void run_dir_report_finished(const char *out, int64_t step, int64_t total);
/* append to OUT/command.txt how this process was started: UTC time, host, CPU model, processes x
 * threads, and the command line (every start and resume of a run adds one entry) */
void run_dir_log_command(const char *out, int argc, char **argv, int processes, int threads);

/* ------------------------------------------------------------------ snapshots (run/snapshot.c) */
/* OUT/snapshots/ for ./inspect report: per-parameter weight/gradient/update norms (norms.csv) and
 * the weights at --snapshots moments; read-only on the training. start: after a resume drops what
 * was written after the checkpoint's step, saves step 0's weights on a fresh run; before_step /
 * after_step around every trainer_step (they do nothing off their moments or without snapshots) */
int  run_snapshots_start(trainer *t, const options *o, int64_t total, int64_t unit, char *err);
void run_snapshots_before_step(trainer *t);
int  run_snapshots_after_step(trainer *t, char *err);
void run_snapshots_free(trainer *t);
/* the steps ./train evaluates at: every --eval-every units (unit: 1 step or an epoch's steps), and the last */
static inline bool run_eval_due(const options *o, int64_t step, int64_t total, int64_t unit) {
    return step == total || (o->eval_every > 0 && step % unit == 0 && (step / unit) % o->eval_every == 0);
}

/* ------------------------------------------------------------------ graceful stop (run/stop.c) */
/* SIGINT / SIGTERM handlers: the first only records the signal (the loop finishes the step, saves a
 * checkpoint, exits 128 + signal); a second exits at once, leaving the last complete checkpoint. */
void run_stop_install(void);
int  run_stop_signal(void);                           /* the signal received, 0 if none */
/* did any process receive one? (vg_dist_any: collective, every process gets the same answer) */
bool run_stop_requested(void);
/* the exact command that continues this run: argv without --resume/--init/--stop-at/--overwrite/
 * --continue, then --resume OUT; words shell-quoted where needed */
void run_resume_command(int argc, char **argv, const char *out, char *buf, size_t n);
/* the whole command line, each word quoted for a POSIX shell where it needs it */
void run_command_line(int argc, char **argv, char *buf, size_t n);

/* ------------------------------------------------------------------ one step, --bench (run/step.c) */
vg_tensor *batch_tensor(const vg_batch *b);           /* the batch's pixels as an arena tensor */
/* One optimizer step on the loader batch b, this process's slice of the global batch
 * (--grad-accum-steps K: K micro-batches of --batch/N each): per micro-batch Mixup/CutMix (from
 * (seed, step, micro)), forward, loss (soft targets with mixing), backward weighted 1/K into the
 * gradients, which are summed over processes during the last micro-batch's backward (t->sync);
 * then clip, AdamW at lr, the weight EMA. Returns the global batch's mean loss (NaN/Inf: no update
 * was made; every process returns the same); *correct gets the global batch's top-1 hits against
 * the images' own labels, *gnorm the gradient norm before clipping. Collective. */
double trainer_step(trainer *t, const options *o, const vg_batch *b, double lr, int64_t *correct, double *gnorm);
int    trainer_bench(trainer *t, const options *o);  /* --bench N: time N steps on random data (collective) */
/* GFLOP one training image costs in a step (3 × the forward FLOPs the model performs, as --bench
 * prints); × images processed = the run's compute */
double trainer_gflop_per_image(const trainer *t);
/* A length given as N, Ns or Ne (--warmup, --patch-drop-until): in epochs when its suffix says so,
 * or without a suffix on an --epochs run; in steps otherwise */
static inline bool run_counts_epochs(run_unit u, const options *o) {
    return u == UNIT_EPOCHS || (u == UNIT_DEFAULT && o->steps == 0);
}
static inline int64_t run_length_steps(double n, run_unit u, const options *o, int64_t per_epoch) {
    return llround(run_counts_epochs(u, o) ? n * (double)per_epoch : n);
}
/* --patch-drop-until in steps (o->patch_drop_until_step, -1 when off), from the epoch length;
 * -1 and a message when it lies past the end of the run (total steps) */
int    run_patch_drop_schedule(options *o, int64_t per_epoch, int64_t total, char *err);
static inline bool run_patch_drop_ended(const options *o, int64_t step) {
    return o->patch_drop_until_step >= 0 && step >= o->patch_drop_until_step;
}
/* the run's compute so far in TFLOP: *images_dropped images at *gflop_dropped GFLOP each (the
 * model's patch dropout; all of them without --patch-drop-until), the rest at *gflop_full */
double trainer_compute_tflop(const trainer *t, const options *o, int64_t *images_dropped, double *gflop_dropped,
                             double *gflop_full);
/* the generator dropout, drop-path and patch dropout draw from, as a run with this seed starts it
 * (./inspect augment replays it) */
static inline vg_rng trainer_dropout_rng(uint64_t seed) { return vg_rng_seed(seed ^ 0x5eedd120u); }
/* --model-ema: a second model holding the average, started at the model's current weights */
int    trainer_ema_init(trainer *t, char *err);

#endif
