/* test_report.c — issue 44: the snapshots ./train writes for ./inspect report (read-only on the
 * training; a resumed run ends with the same files as a straight one), and the report itself:
 * one self-contained HTML page, loaded in a real browser (Debian's chromium, headless) when it
 * is installed. */
#include "test.h"
#include "run_helpers.h"
#include "tensor/safetensors.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_root[256];
static const char *tmp_dir(void) {
    if (!tmp_root[0]) {
        snprintf(tmp_root, sizeof tmp_root, "/tmp/vitgrad-report-test-XXXXXX");
        if (!mkdtemp(tmp_root)) return NULL;
        char d[300]; snprintf(d, sizeof d, "%s/cifar", tmp_root);
        mkdir(d, 0755);
        if (!vg_test_write_cifar(d)) return NULL;
    }
    return tmp_root;
}

/* 30 steps of a two-block model on the small generated CIFAR-10 set: a few seconds */
#define SMALL "./train --dataset cifar10 --model vit-micro-cifar --dim 16 --depth 2 --heads 2 --batch 32 " \
              "--threads 2 --loader-threads 1 --log-every 1 --seed 3 --lr 3e-3 --warmup 2s --steps 30"

/* the straight run every test here uses (trained once) */
static const char *straight_run(void) {
    static char dir[512];
    static int state = 0;                 /* 0 not yet, 1 ok, -1 failed */
    const char *root = tmp_dir();
    if (!root) return NULL;
    if (!state) {
        char cmd[2048], out[16384];
        snprintf(dir, sizeof dir, "%s/straight", root);
        snprintf(cmd, sizeof cmd, SMALL " --data %s/cifar --out %s", root, dir);
        int rc = vg_test_run(cmd, out, sizeof out);
        state = rc == 0 ? 1 : -1;
        if (rc) fprintf(stderr, "%s\n", out);
    }
    return state > 0 ? dir : NULL;
}

/* the sorted names in dir, joined by spaces */
static void list_dir(const char *dir, char *out, size_t n) {
    struct dirent **e;
    int k = scandir(dir, &e, NULL, alphasort);
    out[0] = 0;
    for (int i = 0; i < k; i++) {
        if (e[i]->d_name[0] != '.') { strncat(out, e[i]->d_name, n - strlen(out) - 2); strcat(out, " "); }
        free(e[i]);
    }
    if (k > 0) free(e);
}

VG_TEST(report_snapshots_are_written_and_change_no_weight) {
    const char *a = straight_run(), *root = tmp_dir();
    REQUIRE(a);
    char cmd[2048], out[16384], p[600], q[600], names[4096];
    snprintf(p, sizeof p, "%s/snapshots", a);
    list_dir(p, names, sizeof names);
    /* step 0, 1 % of 30 steps (step 1) and six of the ten evaluations (every 3 steps), the last included */
    CHECK_MSG(!strcmp(names, "norms.csv step-00000000.safetensors step-00000001.safetensors step-00000006.safetensors "
                             "step-00000012.safetensors step-00000015.safetensors step-00000021.safetensors "
                             "step-00000027.safetensors step-00000030.safetensors "), "snapshots/: %s", names);
    snprintf(p, sizeof p, "%s/snapshots/norms.csv", a);
    char *csv = vg_test_read_file(p, NULL);
    REQUIRE(csv);
    CHECK(!strncmp(csv, "step,param,weight_norm,grad_norm,update_norm,update_ratio\n", 58));
    CHECK_MSG(strstr(csv, "\n1,blocks.1.attn.qkv.weight,") && strstr(csv, "\n30,head.weight,"), "norms.csv rows missing");
    /* a gradient and an update were measured: not all zero */
    const char *row = strstr(csv, "\n30,head.weight,");
    double w = 0, g = 0, u = 0, r = 0;
    CHECK(row && sscanf(row + 16, "%lf,%lf,%lf,%lf", &w, &g, &u, &r) == 4 && w > 0 && g > 0 && u > 0 && fabs(r - u / w) < 1e-5 * r);
    free(csv);
    /* --snapshots 0: nothing written, and the weights are the same bits as with snapshots */
    snprintf(cmd, sizeof cmd, SMALL " --data %s/cifar --snapshots 0 --out %s/nosnap", root, root);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(p, sizeof p, "%s/model.safetensors", a);
    snprintf(q, sizeof q, "%s/nosnap/model.safetensors", root);
    CHECK_MSG(vg_test_same_bytes(p, q), "snapshots changed the training");
    snprintf(q, sizeof q, "%s/nosnap/snapshots", root);
    struct stat st;
    CHECK_MSG(stat(q, &st) != 0, "--snapshots 0 still made %s", q);
    /* the last snapshot is the final model's weights */
    snprintf(q, sizeof q, "%s/snapshots/step-00000030.safetensors", a);
    char e[512];
    vg_st_file *fm = vg_st_open(p, e, sizeof e), *fs = vg_st_open(q, e, sizeof e);
    CHECK_MSG(fm && fs, "%s", e);
    if (fm && fs) {
        CHECK(vg_st_meta(fs, "snapshot.step") && !strcmp(vg_st_meta(fs, "snapshot.step"), "30"));
        const vg_st_tensor *tm = vg_st_find(fm, "head.weight"), *ts = vg_st_find(fs, "head.weight");
        float vm[160], vs[160];
        CHECK(tm && ts && tm->numel == 160 && ts->numel == 160);
        CHECK(!vg_st_read_f32(fm, "head.weight", vm, 160, e, sizeof e) && !vg_st_read_f32(fs, "head.weight", vs, 160, e, sizeof e) &&
              !memcmp(vm, vs, sizeof vm));
    }
    vg_st_close(fm); vg_st_close(fs);
}

/* interrupted at step 14, with files an interrupted process could have left after its checkpoint
 * (a later weight file, a later norms row), resumed to 30: the same snapshot files as straight */
VG_TEST(report_snapshots_resume_to_the_same_files) {
    const char *a = straight_run(), *root = tmp_dir();
    REQUIRE(a);
    char cmd[2048], out[16384], p[600], q[600];
    snprintf(cmd, sizeof cmd, SMALL " --data %s/cifar --save-every 0 --stop-at 14 --out %s/resumed", root, root);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(p, sizeof p, "%s/resumed/snapshots/step-00000022.safetensors", root);
    FILE *f = fopen(p, "w"); REQUIRE(f); fputs("left by a killed process", f); fclose(f);
    snprintf(p, sizeof p, "%s/resumed/snapshots/norms.csv", root);
    f = fopen(p, "a"); REQUIRE(f); fputs("20,head.weight,1,2,3,4\n21,head.w", f); fclose(f);
    snprintf(cmd, sizeof cmd, SMALL " --data %s/cifar --save-every 0 --resume %s/resumed --out %s/resumed", root, root, root);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "at step 14"), "resume: exit %d: %s", rc, out);
    char la[4096], lb[4096];
    snprintf(p, sizeof p, "%s/snapshots", a);
    snprintf(q, sizeof q, "%s/resumed/snapshots", root);
    list_dir(p, la, sizeof la); list_dir(q, lb, sizeof lb);
    CHECK_MSG(!strcmp(la, lb), "straight: %s\nresumed: %s", la, lb);
    for (char *name = strtok(la, " "); name; name = strtok(NULL, " ")) {
        snprintf(p, sizeof p, "%s/snapshots/%s", a, name);
        snprintf(q, sizeof q, "%s/resumed/snapshots/%s", root, name);
        CHECK_MSG(vg_test_same_bytes(p, q), "%s differs after resume", name);
    }
}
