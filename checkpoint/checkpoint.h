/* checkpoint.h — model weights and training state as a safetensors pair, switched atomically.
 *
 * Layout of an output directory:
 *   OUT/checkpoints/step-00000500/model.safetensors        weights only, timm state-dict keys
 *   OUT/checkpoints/step-00000500/train_state.safetensors  AdamW moments, step, RNG, loader, config
 *   OUT/latest -> checkpoints/step-00000500                the current pair (a symlink)
 *   OUT/model.safetensors -> latest/model.safetensors      what users load (also train_state)
 *   (with --model-ema also model_ema.safetensors: the weight average, same keys as model)
 * Both files of a new step are written (temp file, fsync, rename) into a fresh directory, which is
 * fsynced; then `latest` is replaced by one rename(2) and OUT is fsynced. A crash at any moment
 * leaves `latest` on a complete, matching pair: the old one or the new one. */
#ifndef VG_CHECKPOINT_H
#define VG_CHECKPOINT_H
#include "nn/nn.h"
#include "tensor/safetensors.h"

/* Write the pair for `step`, switch `latest` to it, and delete step directories older than the
 * previous one. Test faults (base/fault.h): "crash_before_switch" returns an error just before the
 * switch, as a crash there would; "kill_in_checkpoint=K" kills the process (SIGKILL) at the K-th of
 * its kill points (after each file, after the switch, after the stable names). */
int vg_checkpoint_save(const char *out_dir, int64_t step, const vg_st_writer *model,
                       const vg_st_writer *state, char *err, size_t errlen);
/* The same for any set of files written together (e.g. model, train_state and model_ema): each
 * OUT/checkpoints/step-N/<name> is written before the one `latest` switch, and OUT/<name> is a
 * symlink to latest/<name>. names are plain file names. */
int vg_checkpoint_save_files(const char *out_dir, int64_t step, int n, const char *const *names,
                             const vg_st_writer *const *writers, char *err, size_t errlen);

/* Remove the checkpoints of OUT (checkpoints/step-*, `latest` and the symlinks through it), for a
 * run started over in the same directory (./train --overwrite). Other files are left alone. */
int vg_checkpoint_clear(const char *out_dir, char *err, size_t errlen);

/* --resume / --init argument → the two file paths. `path` may be an OUT directory (uses latest/),
 * a step directory holding the two files, or a model/train_state .safetensors file (its sibling is
 * the other). state_path may come back empty when only a model file exists. */
int vg_checkpoint_resolve(const char *path, char *model_path, char *state_path, size_t n,
                          char *err, size_t errlen);

/* Every parameter into a writer under its dotted name (F32 in the normal build). The writer keeps
 * pointers to the parameter data: write before changing them. */
int vg_params_to_writer(const vg_params *p, vg_st_writer *w, char *err, size_t errlen);

/* Read tensor `name` of f into the contiguous tensor t, converting to `real`; an error names the
 * tensor when it is missing, has another element count or an unreadable dtype. */
int vg_st_read_tensor(const vg_st_file *f, const char *name, vg_tensor *t, char *err, size_t errlen);

/* Copy tensors named `prefix + param name` from f into the parameters. Every parameter must be
 * present with the same shape (else an error naming it); when strict, keys of f that start with
 * prefix but match no parameter are an error too. Parameters listed in `skip` (NULL-terminated,
 * may be NULL) are left alone (e.g. pos_embed when it is resized separately). */
int vg_params_load(const vg_params *p, const vg_st_file *f, const char *prefix, bool strict,
                   const char *const *skip, char *err, size_t errlen);
#endif
