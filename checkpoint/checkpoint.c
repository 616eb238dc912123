/* checkpoint.c — writing and switching checkpoint pairs; loading parameters by name. */
#include "checkpoint.h"
#include "base/durable.h"
#include "base/fault.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef VG_DOUBLE
#define REAL_ST VG_ST_F64
#else
#define REAL_ST VG_ST_F32
#endif

/* Test fault "kill_in_checkpoint=K" (base/fault.h): this process sends itself SIGKILL at the K-th
 * kill point of its checkpoint writes (counted from 1 over the whole process): after each file of a
 * pair is written, after `latest` is switched, and after the stable names are set. Each is a moment
 * a crash can happen; tests/test_reliability.c resumes from whatever it leaves. */
static void kill_point(void) {
    static long count;
    long k = vg_fault("kill_in_checkpoint");
    if (k && ++count == k) raise(SIGKILL);
}

int vg_checkpoint_save(const char *out_dir, int64_t step, const vg_st_writer *model,
                       const vg_st_writer *state, char *err, size_t errlen) {
    const char *names[2] = {"model.safetensors", "train_state.safetensors"};
    const vg_st_writer *writers[2] = {model, state};
    return vg_checkpoint_save_files(out_dir, step, 2, names, writers, err, errlen);
}

int vg_checkpoint_save_files(const char *out_dir, int64_t step, int n, const char *const *names,
                             const vg_st_writer *const *writers, char *err, size_t errlen) {
    char ckdir[2048], stepdir[2400], rel[256], path[4096], prev_rel[256] = "";
    if (strlen(out_dir) > 2000) { snprintf(err, errlen, "%.100s…: output directory path too long", out_dir); return -1; }
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", out_dir);
    if (vg_mkdir_p(ckdir, err, errlen)) return -1;
    snprintf(rel, sizeof rel, "checkpoints/step-%08lld", (long long)step);
    snprintf(stepdir, sizeof stepdir, "%s/%s", out_dir, rel);
    if (vg_mkdir_p(stepdir, err, errlen)) return -1;
    for (int i = 0; i < n; i++) {
        if (strlen(names[i]) > 200 || strchr(names[i], '/')) { snprintf(err, errlen, "checkpoint file name '%.200s' is not a plain name", names[i]); return -1; }
        snprintf(path, sizeof path, "%s/%s", stepdir, names[i]);
        if (vg_st_write(writers[i], path, err, errlen)) return -1;
        kill_point();
    }
    if (vg_fsync_dir(stepdir) || vg_fsync_dir(ckdir)) { snprintf(err, errlen, "%s: fsync failed: %s", stepdir, strerror(errno)); return -1; }
    if (vg_fault("crash_before_switch")) {
        snprintf(err, errlen, "%s: simulated crash before switching %s/latest", stepdir, out_dir);
        return -1;
    }
    /* remember the pair being replaced, then switch */
    snprintf(path, sizeof path, "%s/latest", out_dir);
    ssize_t len = readlink(path, prev_rel, sizeof prev_rel - 1);
    prev_rel[len > 0 ? len : 0] = 0;
    if (vg_symlink_replace(out_dir, "latest", rel, err, errlen)) return -1;
    kill_point();
    /* the stable names users load: created once, they follow `latest` */
    for (int i = 0; i < n; i++) {
        char target[256];
        snprintf(path, sizeof path, "%s/%s", out_dir, names[i]);
        snprintf(target, sizeof target, "latest/%s", names[i]);
        char cur[256]; ssize_t l = readlink(path, cur, sizeof cur - 1);
        if (l < 0 || (size_t)l != strlen(target) || strncmp(cur, target, (size_t)l))
            if (vg_symlink_replace(out_dir, names[i], target, err, errlen)) return -1;
    }
    if (vg_fsync_dir(out_dir)) { snprintf(err, errlen, "%s: fsync failed: %s", out_dir, strerror(errno)); return -1; }
    kill_point();
    /* keep the new pair and the one before it; drop older step directories */
    DIR *d = opendir(ckdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "step-", 5)) continue;
            char r[300]; snprintf(r, sizeof r, "checkpoints/%s", e->d_name);
            if (!strcmp(r, rel) || !strcmp(r, prev_rel)) continue;
            char full[2048 + 300]; snprintf(full, sizeof full, "%s/%s", ckdir, e->d_name);
            vg_remove_flat_dir(full);
        }
        closedir(d);
    }
    return 0;
}

int vg_checkpoint_clear(const char *out_dir, char *err, size_t errlen) {
    char path[4096 + 300], ckdir[4096];
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", out_dir);
    DIR *d = opendir(ckdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "step-", 5)) continue;
            snprintf(path, sizeof path, "%s/%s", ckdir, e->d_name);
            vg_remove_flat_dir(path);
        }
        closedir(d);
        if (rmdir(ckdir) != 0 && errno != ENOENT) { snprintf(err, errlen, "%s: cannot remove: %s", ckdir, strerror(errno)); return -1; }
    }
    /* `latest` and the stable names: symlinks into latest/ */
    d = opendir(out_dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char target[64];
        snprintf(path, sizeof path, "%s/%s", out_dir, e->d_name);
        ssize_t l = readlink(path, target, sizeof target - 1);
        if (l < 0) continue;
        target[l] = 0;
        if (!strcmp(e->d_name, "latest") || !strncmp(target, "latest/", 7)) unlink(path);
    }
    closedir(d);
    return 0;
}

static bool is_file(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISREG(st.st_mode); }
static bool is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

int vg_checkpoint_resolve(const char *path, char *model_path, char *state_path, size_t n,
                          char *err, size_t errlen) {
    model_path[0] = state_path[0] = 0;
    if (is_dir(path)) {
        char base[4096];
        snprintf(base, sizeof base, "%s/latest", path);
        if (!is_dir(base)) snprintf(base, sizeof base, "%s", path);
        snprintf(model_path, n, "%s/model.safetensors", base);
        snprintf(state_path, n, "%s/train_state.safetensors", base);
        if (!is_file(model_path)) { snprintf(err, errlen, "%s: no model.safetensors here (nor a latest/ checkpoint)", path); return -1; }
        if (!is_file(state_path)) state_path[0] = 0;
        return 0;
    }
    if (!is_file(path)) { snprintf(err, errlen, "%s: no such file or directory", path); return -1; }
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)dirlen, slash ? path : ".");
    if (!strcmp(base, "train_state.safetensors")) {
        snprintf(state_path, n, "%s", path);
        snprintf(model_path, n, "%s/model.safetensors", dir);
        if (!is_file(model_path)) { snprintf(err, errlen, "%s: its model.safetensors is missing", path); return -1; }
    } else {
        snprintf(model_path, n, "%s", path);
        snprintf(state_path, n, "%s/train_state.safetensors", dir);
        if (!is_file(state_path)) state_path[0] = 0;
    }
    return 0;
}

int vg_params_to_writer(const vg_params *p, vg_st_writer *w, char *err, size_t errlen) {
    for (int i = 0; i < p->n; i++) {
        const vg_tensor *t = p->items[i].tensor;
        if (vg_st_writer_add(w, p->items[i].name, REAL_ST, t->ndim, t->shape, vg_data(t),
                             sizeof(real) * (size_t)vg_numel(t), err, errlen)) return -1;
    }
    return 0;
}

int vg_st_read_tensor(const vg_st_file *f, const char *name, vg_tensor *t, char *err, size_t errlen) {
#ifdef VG_DOUBLE
    return vg_st_read_f64(f, name, vg_data(t), (size_t)vg_numel(t), err, errlen);
#else
    return vg_st_read_f32(f, name, vg_data(t), (size_t)vg_numel(t), err, errlen);
#endif
}

int vg_params_load(const vg_params *p, const vg_st_file *f, const char *prefix, bool strict,
                   const char *const *skip, char *err, size_t errlen) {
    char name[300];
    size_t plen = strlen(prefix);
    for (int i = 0; i < p->n; i++) {
        bool skipped = false;
        for (int s = 0; skip && skip[s]; s++) if (!strcmp(skip[s], p->items[i].name)) skipped = true;
        if (skipped) continue;
        vg_tensor *t = p->items[i].tensor;
        snprintf(name, sizeof name, "%s%s", prefix, p->items[i].name);
        const vg_st_tensor *e = vg_st_find(f, name);
        if (!e) { snprintf(err, errlen, "missing tensor \"%s\"", name); return -1; }
        bool same = e->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->shape[d];
        if (!same) {
            char want[96], got[96] = "(";
            vg_shape_str(t, want, sizeof want);
            for (int d = 0; d < e->ndim; d++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)e->shape[d]);
            strncat(got, ")", sizeof got - strlen(got) - 1);
            snprintf(err, errlen, "tensor \"%s\" has shape %s, the model expects %s", name, got, want);
            return -1;
        }
        if (vg_st_read_tensor(f, name, t, err, errlen)) return -1;
    }
    if (strict) {
        for (size_t k = 0; k < vg_st_count(f); k++) {
            const char *key = vg_st_at(f, k)->name;
            if (strncmp(key, prefix, plen)) continue;
            if (!vg_params_find(p, key + plen)) { snprintf(err, errlen, "unexpected tensor \"%s\" (not a parameter of this model)", key); return -1; }
        }
    }
    return 0;
}
