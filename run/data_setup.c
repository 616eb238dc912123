/* data_setup.c — what a run knows about its data, and what it refuses.
 *
 *   - a dataset of fewer than 2 classes is refused (a one-class "classifier" reaches 100 %);
 *   - --eval-only and --resume evaluate or continue the checkpoint's own head: its class names
 *     (data.class_names, checkpoint/data_meta.h) must be the data's, in the same order; a
 *     checkpoint written before they were stored is checked by its class count alone;
 *   - the normalisation: CIFAR-10 and Fashion-MNIST their constants; an image folder the mean and
 *     std of its own training split (data/imagefolder.c), cached in OUT/normalization.txt; a
 *     resumed run or --eval-only the checkpoint's stored values (a checkpoint without them was
 *     trained with the dataset's old constants, vg_dataset_default_norm).
 * What was decided goes into t->data, which every checkpoint of the run stores. */
#include "run/run.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ERRLEN RUN_ERRLEN

/* the first difference between the checkpoint's class names and the data's, into why; false when none */
static bool classes_differ(const vg_data_meta *ck, const vg_dataset *d, char *why, size_t n) {
    if (ck->n_classes != d->n_classes) {
        snprintf(why, n, "%d classes in the checkpoint, %d in the data", ck->n_classes, d->n_classes);
        return true;
    }
    for (int c = 0; c < d->n_classes; c++) {
        const char *a = ck->class_names[c], *b = d->class_names ? d->class_names[c] : "";
        if (strcmp(a, b)) {
            snprintf(why, n, "class %d is \"%.100s\" in the checkpoint, \"%.100s\" in the data", c, a, b);
            return true;
        }
    }
    return false;
}

/* OUT/normalization.txt: "mean a b c" and "std a b c" lines; 0 when both were read */
static int read_cache(const char *out, float mean[3], float std[3]) {
    char path[2100], line[256];
    snprintf(path, sizeof path, "%s/normalization.txt", out);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int got = 0;
    while (fgets(line, sizeof line, f)) {
        float *v = !strncmp(line, "mean ", 5) ? mean : !strncmp(line, "std ", 4) ? std : NULL;
        if (v && sscanf(strchr(line, ' '), "%f %f %f", &v[0], &v[1], &v[2]) == 3) got |= v == mean ? 1 : 2;
    }
    fclose(f);
    return got == 3 ? 0 : -1;
}

static int mkdir_p(const char *path) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(buf, 0755); *p = '/'; }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int write_cache(const options *o, const vg_dataset *train, const vg_data_meta *m, char *err) {
    char path[2100];
    snprintf(path, sizeof path, "%s/normalization.txt", o->out);
    FILE *f = mkdir_p(o->out) ? NULL : fopen(path, "w");
    if (!f) { snprintf(err, ERRLEN, "%.1000s: cannot write: %s", path, strerror(errno)); return -1; }
    fprintf(f, "# the input normalisation of this run, per channel on the 0..1 scale (stored in every checkpoint as data.mean, data.std):\n"
               "# %s\n", o->resume ? "the resumed checkpoint's"
               : !strcmp(train->name, "imagefolder") ? "mean and std of pixel/255 over the training split" : "the dataset's constants");
    fprintf(f, "# %s, %d training images\n", train->path, train->n);
    fprintf(f, "mean %.6f %.6f %.6f\nstd %.6f %.6f %.6f\n", m->mean[0], m->mean[1], m->mean[2], m->std[0], m->std[1], m->std[2]);
    return fclose(f) ? -1 : 0;
}

int run_data_setup(trainer *t, const options *o, vg_dataset *test, const char *dir, const char *model_path, char *err) {
    if (test->n_classes < 2) {
        snprintf(err, ERRLEN, "%.500s: %d class%s (%.100s): a classifier needs at least 2 classes", dir, test->n_classes,
                 test->n_classes == 1 ? "" : "es", test->n_classes == 1 && test->class_names ? test->class_names[0] : "none");
        return -1;
    }
    vg_data_meta_free(&t->data);
    if (vg_data_meta_from_dataset(&t->data, test, t->model.cfg.img_size, err, ERRLEN)) return -1;
    vg_data_meta ck = {0};
    if (model_path[0]) {
        vg_st_file *f = vg_st_open(model_path, err, ERRLEN);
        if (!f) return -1;
        int rc = vg_data_meta_read(f, &ck, model_path, err, ERRLEN);
        vg_st_close(f);
        if (rc) return -1;
    }
    const bool own_head = o->eval_only || o->resume;   /* the checkpoint's head, not a new one */
    const char *flag = o->resume ? "--resume" : "--eval-only";
    if (own_head && ck.class_names) {
        char why[300];
        if (classes_differ(&ck, test, why, sizeof why)) {
            snprintf(err, ERRLEN, "%s: %.300s was trained on other classes than %.200s (%.250s); its head would name the wrong "
                     "ones (to train a new head from its weights: --init without %s)", flag, model_path, dir, why, flag);
            vg_data_meta_free(&ck);
            return 2;
        }
    } else if (own_head && model_path[0]) {
        printf("%s: %s stores no class names (written before checkpoints kept them): only the class count (%d) is checked\n",
               flag, model_path, test->n_classes);
    }
    if (own_head) {      /* the checkpoint's normalisation, else what a run without stored values used */
        if (ck.has_norm) { memcpy(t->data.mean, ck.mean, sizeof ck.mean); memcpy(t->data.std, ck.std, sizeof ck.std); }
        else if (!(o->resume && read_cache(o->out, t->data.mean, t->data.std) == 0) &&
                 vg_dataset_default_norm(test->name, t->data.mean, t->data.std) == 0 && o->eval_only)
            printf("--eval-only: %s stores no normalisation: the %s constants (what ./train used then)\n", model_path,
                   !strcmp(test->name, "imagefolder") ? "ImageNet-subset" : test->name);
        memcpy(test->mean, t->data.mean, sizeof test->mean); memcpy(test->std, t->data.std, sizeof test->std);
    }
    vg_data_meta_free(&ck);
    return 0;
}

int run_data_train_split(trainer *t, const options *o, vg_dataset *train, vg_dataset *test, bool write, char *err) {
    vg_dataset *to = o->resume ? train : test, *from = o->resume ? test : train;   /* resume: test has the run's */
    memcpy(to->mean, from->mean, sizeof to->mean); memcpy(to->std, from->std, sizeof to->std);
    memcpy(t->data.mean, train->mean, sizeof t->data.mean); memcpy(t->data.std, train->std, sizeof t->data.std);
    t->data.has_norm = true;
    return write ? write_cache(o, train, &t->data, err) : 0;
}
