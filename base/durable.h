/* durable.h — file writes that survive a crash or a power cut at any moment.
 *
 * A file is replaced atomically: written to "<path>.tmp.<pid>" in the same directory, fsynced,
 * renamed over path, and then the directory is fsynced so the rename itself is on disk. A reader
 * sees the old file or the new one, never a mix. safetensors files (tensor/safetensors.c) and
 * checkpoint pairs (checkpoint/checkpoint.c) are written this way.
 * Every function returns 0, or -1 with errno set (and a message in err where it takes one). */
#ifndef VG_DURABLE_H
#define VG_DURABLE_H
#include <stddef.h>

/* write all n bytes to fd (retrying short writes and EINTR) */
int vg_write_all(int fd, const void *p, size_t n);
/* fsync a directory, so the names created or renamed in it are durable; file systems that cannot
 * fsync a directory (EINVAL, EROFS) count as success */
int vg_fsync_dir(const char *dir);
/* vg_fsync_dir of the directory holding path ("." for a bare name) */
int vg_fsync_parent_dir(const char *path);
/* mkdir -p: path and every missing parent, mode 0755; an existing directory is fine */
int vg_mkdir_p(const char *path, char *err, size_t errlen);

/* One atomic replacement of `path`: vg_atomic_open, any number of vg_atomic_write (a failure is
 * remembered and reported by commit), then vg_atomic_commit, which fsyncs, renames and fsyncs the
 * directory. On any error the temp file is removed and an existing `path` is untouched.
 * Test fault (base/fault.h) "crash_before_rename": commit stops after the temp file is fsynced
 * and closed, before the rename, leaves the temp file and returns -1 ("simulated crash"). */
typedef struct vg_atomic_file { int fd, failed, err_no; char *tmp; const char *path; } vg_atomic_file;
int  vg_atomic_open(vg_atomic_file *a, const char *path, char *err, size_t errlen);
void vg_atomic_write(vg_atomic_file *a, const void *p, size_t n);
int  vg_atomic_commit(vg_atomic_file *a, char *err, size_t errlen);

/* remove the files in dir, then dir (best effort; dir holds no subdirectories: a checkpoint step) */
void vg_remove_flat_dir(const char *dir);

/* make dir/name a symlink to target, atomically (a fresh temporary symlink renamed over it) */
int vg_symlink_replace(const char *dir, const char *name, const char *target, char *err, size_t errlen);
#endif
