/* test_predict.c — ./predict after a short ./train on a generated 3-class image folder (names,
 * probabilities, agreement with the run's own evaluation, --json, a corrupt image), the data a
 * checkpoint carries (class names, the train split's own normalisation), and the refusals that
 * keep ./train from reporting a number for a model it made up. */
#include "test.h"
#include "run_helpers.h"
#include "checkpoint/data_meta.h"
#include "data/data.h"
#include "checkpoint/model_meta.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];
static char train_out[1 << 16];
static bool trained;

#define SMALL "--model vit-micro-cifar --img-size 16 --patch 4 --dim 16 --depth 1 --heads 2 --batch 20 --threads 2 " \
              "--eval-every 0 --save-every 0 --lr 3e-3 --warmup 2s --seed 1"

/* ROOT/three: 3 classes (c00 c01 c02), 30 training and 1 validation image each, 16 px; ROOT/run:
 * 30 steps of a tiny model on it (its output in train_out) */
static const char *setup(void) {
    if (root[0]) return trained ? root : NULL;
    snprintf(root, sizeof root, "/tmp/vitgrad-predict-test-XXXXXX");
    if (!mkdtemp(root)) return NULL;
    char d[400], cmd[2048];
    snprintf(d, sizeof d, "%s/three", root);
    if (!vg_test_write_imagefolder(d, 3, 30, 1, 16)) return NULL;
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three " SMALL " --steps 30 --out %s/run", root, root);
    int rc = vg_test_run(cmd, train_out, sizeof train_out);
    if (rc) { printf("    ./train exit %d: %s\n", rc, train_out); return NULL; }
    trained = true;
    return root;
}

/* the class each row of the last confusion matrix in out predicts for its single image */
static bool predicted_from_confusion(const char *out, int pred[3]) {
    const char *s = strstr(out, "confusion matrix (rows: true class, columns: predicted):");
    if (!s || !(s = strchr(s, '\n')) || !(s = strchr(s + 1, '\n'))) return false;   /* skip the column header */
    for (int r = 0; r < 3; r++) {
        int row; long long a, b, c;
        if (sscanf(s + 1, "%d %lld %lld %lld", &row, &a, &b, &c) != 4 || row != r || a + b + c != 1) return false;
        pred[r] = a ? 0 : b ? 1 : 2;
        if (!(s = strchr(s + 1, '\n'))) return false;
    }
    return true;
}

/* brackets and braces balanced outside strings, strings closed */
static bool json_balanced(const char *s) {
    int depth = 0;
    bool in_str = false;
    for (; *s; s++) {
        if (in_str) { if (*s == '\\' && s[1]) s++; else if (*s == '"') in_str = false; continue; }
        if (*s == '"') in_str = true;
        else if (*s == '{' || *s == '[') depth++;
        else if (*s == '}' || *s == ']') { if (--depth < 0) return false; }
    }
    return depth == 0 && !in_str;
}

/* the JSON line of ./predict's output whose "file" contains `part` */
static const char *json_line(const char *out, const char *part, char *line, size_t n) {
    for (const char *s = out; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len >= n || strncmp(s, "{\"file\": ", 9)) continue;
        memcpy(line, s, len); line[len] = 0;
        if (strstr(line, part)) return line;
    }
    return NULL;
}

VG_TEST(predict_names_probabilities_and_the_evaluation_agree) {
    if (!vg_test_have_program("predict")) VG_SKIP("./predict is not built");
    const char *r = setup();
    REQUIRE(r);
    int pred[3];
    REQUIRE(predicted_from_confusion(train_out, pred));
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s/run --json --top 3 --threads 2 %s/three/val", r, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    for (int c = 0; c < 3; c++) {
        char part[32], line[4096], want[64];
        snprintf(part, sizeof part, "/val/c%02d/img000.png", c);
        const char *l = json_line(out, part, line, sizeof line);
        CHECK_MSG(l, "no JSON line for %s in: %s", part, out);
        if (!l) continue;
        CHECK_MSG(json_balanced(l) && strstr(l, "\"top\": [") && strstr(l, "\"index\": ") && strstr(l, "\"prob\": "),
                  "not the expected JSON: %s", l);
        /* the three classes by name, probabilities that sum to 1 */
        double sum = 0;
        int seen = 0;
        for (const char *p = strstr(l, "\"prob\": "); p; p = strstr(p + 1, "\"prob\": ")) { sum += atof(p + 8); seen++; }
        CHECK_MSG(seen == 3 && fabs(sum - 1) <= 1e-5, "%d probabilities summing to %.9f: %s", seen, sum, l);
        CHECK_MSG(strstr(l, "\"class\": \"c00\"") && strstr(l, "\"class\": \"c01\"") && strstr(l, "\"class\": \"c02\""), "%s", l);
        /* top-1 is what the run's own evaluation predicted for that image */
        snprintf(want, sizeof want, "\"top\": [{\"index\": %d, \"class\": \"c%02d\"", pred[c], pred[c]);
        CHECK_MSG(strstr(l, want), "class %d: the evaluation predicted %d, ./predict: %s", c, pred[c], l);
    }
    /* text: a header, then per image the top-K classes by name with percentages */
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s/run/model.safetensors --top 2 %s/three/val/c01/img000.png", r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "%%  c%02d\n", pred[1]);
    CHECK_MSG(rc == 0 && strstr(out, "3 classes, 16 px") && strstr(out, "c01/img000.png\n") && strstr(out, want), "exit %d: %s", rc, out);
}

VG_TEST(predict_reports_a_corrupt_image_by_name_and_goes_on) {
    if (!vg_test_have_program("predict")) VG_SKIP("./predict is not built");
    const char *r = setup();
    REQUIRE(r);
    char dir[400], p[600], cmd[2048];
    static char out[1 << 16];
    snprintf(dir, sizeof dir, "%s/mixed", r);
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/broken.png", dir);
    FILE *f = fopen(p, "wb");
    REQUIRE(f);
    fputs("\x89PNG\r\n\x1a\n but not really a PNG", f);
    fclose(f);
    /* a larger image (24 px): resized and centre-cropped to the model's 16 */
    snprintf(p, sizeof p, "%s/big", r);
    REQUIRE(vg_test_write_imagefolder(p, 2, 1, 1, 24));
    snprintf(cmd, sizeof cmd, "cp %s/big/train/c00/img000.png %s/good.png", r, dir);
    REQUIRE(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s/run --json %s %s/missing.jpg", r, dir, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    char line[4096];
    CHECK_MSG(rc == 1, "exit %d (want 1: some images failed): %s", rc, out);
    CHECK_MSG(strstr(out, "predict: ") && strstr(out, "broken.png") && strstr(out, "missing.jpg"), "%s", out);
    const char *g = json_line(out, "good.png", line, sizeof line);
    CHECK_MSG(g && strstr(g, "\"top\": ["), "the good image was not predicted: %s", out);
    const char *b = json_line(out, "broken.png", line, sizeof line);
    CHECK_MSG(b && strstr(b, "\"error\": ") && json_balanced(b), "%s", out);
    /* bad flags: 2 */
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s/run --top 0 %s", r, dir);
    CHECK(vg_test_run(cmd, out, sizeof out) == 2);
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s/run --top 4 %s", r, dir);
    CHECK_MSG(vg_test_run(cmd, out, sizeof out) == 2 && strstr(out, "3 classes"), "%s", out);
    CHECK(vg_test_run("./predict --frobnicate x.png", out, sizeof out) == 2);
    CHECK(vg_test_run("./predict x.png", out, sizeof out) == 2);
    CHECK(vg_test_run("./predict --help", out, sizeof out) == 0 && strstr(out, "--classes FILE"));
    /* --classes FILE: the names a file gives (here in place of the stored ones), one per line */
    snprintf(p, sizeof p, "%s/names.txt", r);
    f = fopen(p, "w");
    REQUIRE(f);
    fputs("red\ngreen\nblue\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s/run --classes %s --top 3 %s/good.png", r, p, dir);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "%  red") && strstr(out, "%  green") && strstr(out, "%  blue"), "exit %d: %s", rc, out);
    f = fopen(p, "w");
    fputs("red\ngreen\n", f);
    fclose(f);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "2 names, the model has 3 classes"), "exit %d: %s", rc, out);
}

/* the "data.*" metadata: class names, and the train split's own mean and std, equal to what this
 * test computes from the same images (and cached in the run directory) */
VG_TEST(predict_checkpoint_stores_names_and_the_train_split_normalisation) {
    const char *r = setup();
    REQUIRE(r);
    char p[600], err[1024], want[128];
    snprintf(p, sizeof p, "%s/three", r);
    vg_dataset *d = vg_imagefolder_open(p, VG_SPLIT_TRAIN, 1, err, sizeof err);
    REQUIRE(d);
    double m[3], s[3];
    vg_dataset_channel_stats(d, m, s);
    vg_dataset_free(d);
    CHECK_MSG(fabs(m[0] - 0.486595) > 1e-3, "the generated folder's mean is the ImageNet subset's: nothing would be tested");
    const char *files[3] = {"model.safetensors", "train_state.safetensors", NULL};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/run/%s", r, files[k]);
        vg_st_file *f = vg_st_open(p, err, sizeof err);
        REQUIRE(f);
        snprintf(want, sizeof want, "%.6f,%.6f,%.6f", m[0], m[1], m[2]);
        CHECK_MSG(vg_st_meta(f, "data.mean") && !strcmp(vg_st_meta(f, "data.mean"), want), "%s: data.mean %s, computed %s", files[k],
                  vg_st_meta(f, "data.mean") ? vg_st_meta(f, "data.mean") : "(none)", want);
        snprintf(want, sizeof want, "%.6f,%.6f,%.6f", s[0], s[1], s[2]);
        CHECK_MSG(vg_st_meta(f, "data.std") && !strcmp(vg_st_meta(f, "data.std"), want), "%s: data.std %s, computed %s", files[k],
                  vg_st_meta(f, "data.std") ? vg_st_meta(f, "data.std") : "(none)", want);
        const char *names = vg_st_meta(f, "data.class_names"), *ds = vg_st_meta(f, "data.dataset"), *sz = vg_st_meta(f, "data.img_size");
        CHECK_MSG(names && !strcmp(names, "c00\nc01\nc02"), "%s: data.class_names %s", files[k], names ? names : "(none)");
        CHECK(ds && !strcmp(ds, "imagefolder"));
        CHECK(sz && !strcmp(sz, "16"));
        vg_data_meta dm;
        CHECK_MSG(vg_data_meta_read(f, &dm, p, err, sizeof err) == 0 && dm.n_classes == 3 && dm.has_norm &&
                  fabs(dm.mean[2] - m[2]) < 6e-7 && fabs(dm.std[1] - s[1]) < 6e-7, "%s", err);
        vg_data_meta_free(&dm);
        vg_st_close(f);
    }
    /* the cache in the run directory */
    snprintf(p, sizeof p, "%s/run/normalization.txt", r);
    char *cache = vg_test_read_file(p, NULL);
    snprintf(want, sizeof want, "mean %.6f %.6f %.6f\nstd %.6f %.6f %.6f\n", m[0], m[1], m[2], s[0], s[1], s[2]);
    CHECK_MSG(cache && strstr(cache, want), "%s: %s", p, cache ? cache : "(missing)");
    free(cache);
    /* --eval-only reads them back: the same accuracy as the run's last evaluation */
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --init %s/run --eval-only --threads 2 --batch 20", r, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    const char *a = strstr(train_out, "test top-1: "), *b = strstr(out, "test top-1: ");
    CHECK_MSG(rc == 0 && a && b && atof(a + 12) == atof(b + 12), "exit %d: %s", rc, out);
}

/* a resumed image-folder run normalises with the values it started with (the checkpoint's) and
 * ends with the same bits as the straight run */
VG_TEST(predict_imagefolder_resume_is_bit_exact) {
    const char *r = setup();
    REQUIRE(r);
    static char out[1 << 16];
    char cmd[2048], a[600], b[600];
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three " SMALL " --steps 30 --stop-at 15 --out %s/half", r, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three " SMALL " --steps 30 --resume %s/half --out %s/half", r, r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "resumed from"), "exit %d: %s", rc, out);
    snprintf(a, sizeof a, "%s/run/model.safetensors", r);
    snprintf(b, sizeof b, "%s/half/model.safetensors", r);
    CHECK(vg_test_same_bytes(a, b));
}

/* --eval-only evaluates a trained model's own head, or nothing */
VG_TEST(predict_eval_only_refuses_a_model_it_would_make_up) {
    const char *r = setup();
    REQUIRE(r);
    static char out[1 << 16];
    char cmd[2048], a[600], b[700];
    /* no --init / --resume: refused, not a random model */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three " SMALL " --eval-only", r);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--eval-only: no model to evaluate") && !strstr(out, "test top-1"), "exit %d: %s", rc, out);
    /* a head of 3 classes on 4-class data: refused, not a new random head */
    snprintf(a, sizeof a, "%s/four", r);
    REQUIRE(vg_test_write_imagefolder(a, 4, 2, 1, 16));
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/four --init %s/run --eval-only --threads 2", r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "head of 3 classes, the data has 4") && !strstr(out, "a new head") && !strstr(out, "test top-1"),
              "exit %d: %s", rc, out);
    /* --num-classes cannot make one either */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --init %s/run --eval-only --num-classes 5 --threads 2", r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--num-classes says 5") && !strstr(out, "test top-1"), "exit %d: %s", rc, out);
    /* the same count, other names (c01 is d01 here: sorted, class 1 is c02): refused, naming the first difference */
    snprintf(a, sizeof a, "%s/renamed", r);
    REQUIRE(vg_test_write_imagefolder(a, 3, 2, 1, 16));
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s/%s/c01", a, k ? "val" : "train");
        snprintf(b, sizeof b, "%s/%s/d01", a, k ? "val" : "train");
        REQUIRE(rename(cmd, b) == 0);
    }
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s --init %s/run --eval-only --threads 2", a, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "other classes") && strstr(out, "class 1 is \"c01\" in the checkpoint, \"c02\" in the data") &&
              !strstr(out, "test top-1"), "exit %d: %s", rc, out);
    /* resuming the run on those other classes: refused as well */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s " SMALL " --steps 40 --resume %s/run --out %s/run", a, r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--resume: ") && strstr(out, "other classes"), "exit %d: %s", rc, out);
    /* a fine-tuning run (--init and training) may still start a new head */
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/four --init %s/run --steps 2 --batch 4 --threads 2 "
             "--eval-every 0 --save-every 0 --out %s/ft4", r, r, r);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "has 3 classes, this run 4: a new head"), "exit %d: %s", rc, out);
}

VG_TEST(predict_one_class_dataset_is_refused) {
    char dir[300], cmd[2048];
    static char out[1 << 16];
    snprintf(dir, sizeof dir, "/tmp/vitgrad-oneclass-XXXXXX");
    REQUIRE(mkdtemp(dir));
    char d[400];
    snprintf(d, sizeof d, "%s/one", dir);
    REQUIRE(vg_test_write_imagefolder(d, 1, 8, 2, 16));
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s " SMALL " --steps 4 --batch 4 --out %s/run", d, dir);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc != 0 && strstr(out, d) && strstr(out, "1 class (c00): a classifier needs at least 2 classes") &&
              !strstr(out, "test top-1"), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* a checkpoint written before the data.* keys (here: the run's model file with them removed)
 * still loads: the class count is checked, the names fall back to "class N", the normalisation
 * to the ImageNet-subset constants image folders used then */
VG_TEST(predict_old_checkpoint_without_data_keys_still_loads) {
    if (!vg_test_have_program("predict")) VG_SKIP("./predict is not built");
    const char *r = setup();
    REQUIRE(r);
    char p[600], q[600], err[1024], cmd[2048];
    static char out[1 << 16];
    snprintf(q, sizeof q, "%s/old", r);
    mkdir(q, 0755);
    const char *files[2] = {"model.safetensors", "train_state.safetensors"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/run/%s", r, files[k]);
        snprintf(q, sizeof q, "%s/old/%s", r, files[k]);
        vg_st_file *f = vg_st_open(p, err, sizeof err);
        REQUIRE(f);
        vg_st_writer *w = vg_st_writer_new();
        for (size_t i = 0; i < vg_st_count(f); i++) {
            const vg_st_tensor *t = vg_st_at(f, i);
            REQUIRE(vg_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, t->numel * (t->dtype == VG_ST_I64 ? 8 : 4),
                                     err, sizeof err) == 0);
        }
        for (size_t i = 0; vg_st_meta_key(f, i); i++)
            if (strncmp(vg_st_meta_key(f, i), "data.", 5))
                REQUIRE(vg_st_writer_meta(w, vg_st_meta_key(f, i), vg_st_meta_value(f, i), err, sizeof err) == 0);
        REQUIRE(vg_st_write(w, q, err, sizeof err) == 0);
        vg_st_writer_free(w);
        vg_st_close(f);
    }
    snprintf(q, sizeof q, "%s/old", r);
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s --top 1 %s/three/val/c00/img000.png", q, r);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "\"class N\"") && strstr(out, "ImageNet-subset") && strstr(out, "%  class "), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s/three --init %s --eval-only --threads 2", r, q);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "stores no class names") && strstr(out, "test top-1"), "exit %d: %s", rc, out);
}

/* a timm state dict (no class names, no normalisation stored) with --classes FILE and --heads: the
 * probabilities are the softmax of the model's logits on the evaluation transform of the image
 * with timm's ImageNet mean and std, as computed here */
VG_TEST(predict_timm_state_dict_with_a_classes_file) {
    if (!vg_test_have_program("predict")) VG_SKIP("./predict is not built");
    const char *model = "tests/reference/timm/deit3.safetensors";
    char dir[300], img[400], names[400], cmd[2048], err[1024];
    static char out[1 << 16];
    snprintf(dir, sizeof dir, "/tmp/vitgrad-predict-timm-XXXXXX");
    REQUIRE(mkdtemp(dir));
    char d[400];
    snprintf(d, sizeof d, "%s/f", dir);
    REQUIRE(vg_test_write_imagefolder(d, 2, 1, 1, 24));
    snprintf(img, sizeof img, "%s/f/train/c01/img000.png", dir);
    snprintf(names, sizeof names, "%s/names.txt", dir);
    FILE *f = fopen(names, "w");
    REQUIRE(f);
    fputs("zero\none\ntwo\nthree\nfour\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "./predict --ckpt %s --heads 2 --classes %s --json --top 5 %s", model, names, img);
    int rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    /* the same in-process */
    vg_st_file *sf = vg_st_open(model, err, sizeof err);
    REQUIRE(sf);
    vg_vit m;
    REQUIRE(vg_vit_from_file(sf, &m, 2, model, err, sizeof err) == 0);
    vg_st_close(sf);
    uint8_t *chw; int h, w, sc;
    REQUIRE(vg_image_decode_file(img, &chw, &h, &w, &sc, err, sizeof err) == 0);
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    const int S = m.cfg.img_size;
    vg_tensor *x = vg_empty(VG_DIMS(1, 3, S, S));
    vg_eval_transform(chw, 3, h, w, S, vg_data(x), mean, std);
    free(chw);
    vg_no_grad_begin();
    vg_tensor *logits = vg_vit_forward(&m, x, false, NULL);
    vg_no_grad_end();
    REQUIRE(logits);
    double mx = -1e300, p[5], sum = 0;
    for (int c = 0; c < 5; c++) if (vg_data(logits)[c] > mx) mx = vg_data(logits)[c];
    for (int c = 0; c < 5; c++) sum += p[c] = exp(vg_data(logits)[c] - mx);
    const char *word[5] = {"zero", "one", "two", "three", "four"};
    for (int c = 0; c < 5; c++) {
        char key[64];
        snprintf(key, sizeof key, "\"index\": %d, \"class\": \"%s\", \"prob\": ", c, word[c]);
        const char *at = strstr(out, key);
        CHECK_MSG(at && fabs(atof(at + strlen(key)) - p[c] / sum) < 1e-6, "class %d: want %.9f in %s", c, p[c] / sum, out);
    }
    vg_vit_free(&m);
    vg_arena_reset();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
