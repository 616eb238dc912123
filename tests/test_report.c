/* test_report.c — issue 44: the snapshots ./train writes for ./inspect report (read-only on the
 * training; a resumed run ends with the same files as a straight one), and the report itself:
 * one self-contained HTML page, loaded in a real browser (Debian's chromium, headless) when it
 * is installed. */
#include "test.h"
#include "run_helpers.h"
#include "tensor/safetensors.h"
#include "data/data.h"
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

/* the same run with --snapshots 0 */
static const char *nosnap_run(void) {
    static char dir[512];
    static int state = 0;
    const char *root = tmp_dir();
    if (!root) return NULL;
    if (!state) {
        char cmd[2048], out[16384];
        snprintf(dir, sizeof dir, "%s/nosnap", root);
        snprintf(cmd, sizeof cmd, SMALL " --data %s/cifar --snapshots 0 --out %s", root, dir);
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
    const char *a = straight_run();
    REQUIRE(a);
    char p[600], q[600], names[4096];
    snprintf(p, sizeof p, "%s/snapshots", a);
    list_dir(p, names, sizeof names);
    /* step 0, 1 % of 30 steps (step 1) and six of the ten evaluations (every 3 steps), spaced
     * geometrically (evaluation round(10^(k/6)): 1, 2, 3, 5, 7, 10), the last included */
    CHECK_MSG(!strcmp(names, "norms.csv step-00000000.safetensors step-00000001.safetensors step-00000003.safetensors "
                             "step-00000006.safetensors step-00000009.safetensors step-00000015.safetensors "
                             "step-00000021.safetensors step-00000030.safetensors "), "snapshots/: %s", names);
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
    const char *b = nosnap_run();
    REQUIRE(b);
    snprintf(p, sizeof p, "%s/model.safetensors", a);
    snprintf(q, sizeof q, "%s/model.safetensors", b);
    CHECK_MSG(vg_test_same_bytes(p, q), "snapshots changed the training");
    snprintf(q, sizeof q, "%s/snapshots", b);
    struct stat st;
    CHECK_MSG(stat(q, &st) != 0, "--snapshots 0 still made %s", q);
    /* the last snapshot is the final model's weights */
    snprintf(q, sizeof q, "%s/snapshots/step-00000030.safetensors", a);
    char e[512];
    vg_st_file *fm = vg_st_open(p, e, sizeof e), *fs = vg_st_open(q, e, sizeof e);
    CHECK_MSG(fm && fs, "%s", e);
    if (fm && fs) {
        CHECK(vg_st_meta(fs, "snapshot.step") && !strcmp(vg_st_meta(fs, "snapshot.step"), "30"));
        /* the model file's data metadata too: ./inspect and ./predict name the classes of a snapshot */
        const char *keys[] = {"data.class_names", "data.mean", "data.std", "data.dataset"};
        for (int k = 0; k < 4; k++)
            CHECK_MSG(vg_st_meta(fm, keys[k]) && vg_st_meta(fs, keys[k]) && !strcmp(vg_st_meta(fm, keys[k]), vg_st_meta(fs, keys[k])),
                      "%s: model %s, snapshot %s", keys[k], vg_st_meta(fm, keys[k]) ? "set" : "missing", vg_st_meta(fs, keys[k]) ? "set" : "missing");
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

/* ------------------------------------------------------------------ ./inspect report */
/* the page of run dir `run` into `html`; its output into out */
static int report(const char *run, const char *html, char *out, size_t n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "./inspect report %s --out %s", run, html);
    return vg_test_run(cmd, out, n);
}

/* what every page must be: one file that asks for nothing (a CSP that forbids every request, no URL
 * but the SVG namespace, which is a name and never fetched), a few MB at most, every view there */
static void check_page(const char *html) {
    size_t n = 0;
    char *p = vg_test_read_file(html, &n);
    REQUIRE(p);
    CHECK_MSG(n > 10000 && n < 5u << 20, "%s: %zu bytes", html, n);
    CHECK(strstr(p, "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\""));
    int urls = 0;
    for (const char *s = p; (s = strstr(s, "http")); s++)
        if (!strncmp(s, "http:", 5) || !strncmp(s, "https:", 6)) urls += strncmp(s, "http://www.w3.org/2000/svg'", 27) != 0;
    CHECK_MSG(urls == 0, "%s names %d URL(s)", html, urls);
    CHECK(!strstr(p, "<link") && !strstr(p, " src=") && !strstr(p, "@import") && !strstr(p, "url("));
    const char *ids[] = {"header", "e2e", "curves", "attention", "embeddings", "predictions", "health", "pca"};
    for (int i = 0; i < 8; i++) {
        char id[64]; snprintf(id, sizeof id, "<section id=\"%s\">", ids[i]);
        CHECK_MSG(strstr(p, id), "%s: no view %s", html, ids[i]);
    }
    free(p);
}

VG_TEST(report_page_is_one_self_contained_file) {
    if (!vg_test_have_program("inspect")) VG_SKIP("./inspect not built (run make first)");
    const char *a = straight_run(), *root = tmp_dir();
    REQUIRE(a);
    char html[600], out[16384];
    snprintf(html, sizeof html, "%s/straight.html", root);
    int rc = report(a, html, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "8 snapshots"), "exit %d: %s", rc, out);
    check_page(html);
    char *p = vg_test_read_file(html, NULL);
    REQUIRE(p);
    /* the sentences are this run's: its accuracy as the page's evaluation found it */
    char *acc = strstr(p, "test top-1 ");
    double v = -1;
    CHECK(acc && sscanf(acc, "test top-1 %lf%%", &v) == 1 && v >= 0 && v <= 100);
    char want[64]; snprintf(want, sizeof want, "reaches %.2f%% on the test set", v);
    CHECK_MSG(strstr(p, want), "the header's sentence does not say %s", want);
    CHECK(strstr(p, "8 snapshots of the weights"));
    free(p);
    /* a run without snapshots: the page still comes, and says what is missing */
    const char *dir = nosnap_run();
    REQUIRE(dir);
    snprintf(html, sizeof html, "%s/nosnap.html", root);
    rc = report(dir, html, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "the run has none"), "exit %d: %s", rc, out);
    check_page(html);
    p = vg_test_read_file(html, NULL);
    CHECK(p && strstr(p, "This run has no snapshots") && strstr(p, "no norms to show"));
    free(p);
    /* errors name the problem */
    rc = vg_test_run("./inspect report /nonexistent/run", out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "/nonexistent/run"), "exit %d: %s", rc, out);
    rc = vg_test_run("./inspect report", out, sizeof out);
    CHECK(rc == 2);
}

/* chromium headless loads `html`#test: the page's test mode drives the slider and a patch click
 * and writes checksums of what it drew; console messages (errors, CSP refusals) go to the log */
static bool have_chromium(void) { return vg_test_run("command -v chromium >/dev/null", NULL, 0) == 0; }

static void browse(const char *html, const char *tag, char *result, size_t n) {
    const char *root = tmp_dir();
    char cmd[4096], dom[600], log[600];
    snprintf(dom, sizeof dom, "%s/%s.dom", root, tag);
    snprintf(log, sizeof log, "%s/%s.log", root, tag);
    snprintf(cmd, sizeof cmd, "{ timeout 60 chromium --headless --no-sandbox --disable-gpu --user-data-dir=%s/chrome-%s "
             "--enable-logging=stderr --v=0 --virtual-time-budget=10000 --dump-dom 'file://%s#test' > %s 2> %s; }",
             root, tag, html, dom, log);
    int rc = vg_test_run(cmd, NULL, 0);
    CHECK_MSG(rc == 0, "chromium exited %d (log %s)", rc, log);
    char *d = vg_test_read_file(dom, NULL), *l = vg_test_read_file(log, NULL);
    result[0] = 0;
    const char *r = d ? strstr(d, "TEST-RESULT {") : NULL;
    if (r) snprintf(result, n, "%.*s", (int)strcspn(r, "<"), r);
    CHECK_MSG(r, "%s: the page's test mode wrote no result", html);
    /* every console message is a failure: a script error, or a request the CSP refused */
    const char *c = l ? strstr(l, ":CONSOLE") : NULL;
    CHECK_MSG(l && !c, "%s: console: %.300s", html, c ? c : "(no log)");
    CHECK_MSG(strstr(result, "\"errors\":[]"), "%s: %s", html, result);
    free(d); free(l);
}

/* the value of "key":"…" in the test result */
static void value(const char *result, const char *key, char *out, size_t n) {
    char k[64]; snprintf(k, sizeof k, "\"%s\":\"", key);
    const char *p = strstr(result, k);
    out[0] = 0;
    if (p) snprintf(out, n, "%.*s", (int)strcspn(p + strlen(k), "\""), p + strlen(k));
}

VG_TEST(report_page_works_in_chromium) {
    if (!vg_test_have_program("inspect")) VG_SKIP("./inspect not built (run make first)");
    if (!have_chromium()) VG_SKIP("chromium is not installed (apt-get install chromium): the page is not loaded in a browser");
    const char *a = straight_run(), *root = tmp_dir();
    REQUIRE(a);
    char html[600], out[16384], res[2048];
    snprintf(html, sizeof html, "%s/browse.html", root);
    REQUIRE(report(a, html, out, sizeof out) == 0);
    browse(html, "straight", res, sizeof res);
    CHECK_MSG(strstr(res, "\"views\":7") && strstr(res, "\"snapshots\":8"), "%s", res);
    /* the slider moves the attention maps and the PCA; a patch click changes the maps, and going
     * back draws the first picture again */
    char f[64], l[64], c[64], b[64], p0[64], p1[64];
    value(res, "att_first", f, sizeof f); value(res, "att_last", l, sizeof l);
    value(res, "att_click", c, sizeof c); value(res, "att_back", b, sizeof b);
    value(res, "pca_first", p0, sizeof p0); value(res, "pca_last", p1, sizeof p1);
    CHECK_MSG(l[0] && strcmp(l, "none") && strcmp(f, l) && strcmp(c, l) && !strcmp(b, l) && p0[0] && strcmp(p0, p1),
              "the interactive views did not change: %s", res);
    /* every map has lit pixels (the part after '/': pixels unlike the first one) */
    CHECK_MSG(strchr(l, '/') && atoi(strchr(l, '/') + 1) > 1000, "attention grid %s", l);
    /* a screenshot is not blank */
    char cmd[4096], png[600];
    snprintf(png, sizeof png, "%s/shot.png", root);
    snprintf(cmd, sizeof cmd, "{ timeout 60 chromium --headless --no-sandbox --disable-gpu --user-data-dir=%s/chrome-shot --hide-scrollbars "
             "--window-size=1200,2400 --virtual-time-budget=10000 --screenshot=%s 'file://%s' > /dev/null 2>&1; }", root, png, html);
    CHECK(vg_test_run(cmd, NULL, 0) == 0);
    uint8_t *chw = NULL; int h = 0, w = 0, src = 0; char e[512];
    CHECK_MSG(vg_image_decode_file(png, &chw, &h, &w, &src, e, sizeof e) == 0, "%s", e);
    if (chw) {
        long colours = 0, bright = 0;
        static bool seen[1 << 15];
        memset(seen, 0, sizeof seen);
        const size_t hw = (size_t)h * w;
        for (size_t k = 0; k < hw; k++) {
            int r = chw[k], g = chw[hw + k], bl = chw[2 * hw + k];
            int key = (r >> 3) << 10 | (g >> 3) << 5 | (bl >> 3);
            if (!seen[key]) { seen[key] = true; colours++; }
            bright += r > 240 && g > 240 && bl > 240;
        }
        CHECK_MSG(w == 1200 && h == 2400 && colours > 200 && bright < (long)(hw * 0.9), "screenshot %dx%d: %ld colours, %ld of %zu pixels white", w, h, colours, bright, hw);
        free(chw);
    }
}

/* other runs: image folders (any class count) with mean pooling, sin-cos positions, a conv stem,
 * register tokens and LayerScale; Fashion-MNIST (1 channel) with the class token */
VG_TEST(report_covers_other_datasets_and_model_options) {
    if (!vg_test_have_program("inspect")) VG_SKIP("./inspect not built (run make first)");
    const char *root = tmp_dir();
    REQUIRE(root);
    char cmd[4096], out[16384], dir[600], html[600], res[2048];
    snprintf(dir, sizeof dir, "%s/folder", root);
    REQUIRE(vg_test_write_imagefolder(dir, 3, 24, 8, 32));
    snprintf(cmd, sizeof cmd, "./train --dataset imagefolder --data %s --model vit-micro-cifar --img-size 32 --dim 16 --depth 2 --heads 2 "
             "--batch 16 --threads 2 --steps 12 --pool mean --pos sincos2d --conv-stem 8 --reg-tokens 2 --layer-scale 1e-4 --snapshots 3 "
             "--out %s/run-folder", dir, root);
    int rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    snprintf(dir, sizeof dir, "%s/run-folder", root);
    snprintf(html, sizeof html, "%s/folder.html", root);
    rc = report(dir, html, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "3 snapshots"), "exit %d: %s", rc, out);
    check_page(html);
    char *p = vg_test_read_file(html, NULL);
    CHECK(p && strstr(p, "fixed 2-D sin-cos") && strstr(p, "first stem convolution") && strstr(p, "\"c00\"") &&
          strstr(p, "the attention averaged over all patch queries"));
    free(p);
    if (have_chromium()) { browse(html, "folder", res, sizeof res); CHECK_MSG(strstr(res, "\"views\":7"), "%s", res); }
    const char *fm = getenv("FASHION_MNIST_DIR");
    if (!fm || !*fm) fm = "/usr/share/datasets/fashion-mnist";
    char probe[700]; snprintf(probe, sizeof probe, "%s/t10k-labels-idx1-ubyte.gz", fm);
    struct stat st;
    if (stat(probe, &st) != 0) { printf("    (Fashion-MNIST not at %s: that part skipped)\n", fm); return; }
    /* class-token pooling, and sequence pooling: the explorer weights the patch queries by each
     * image's pooling weights ("pw") */
    const struct { const char *pool, *name, *expect[3]; } runs[] = {
        {"cls", "fashion", {"Ankle boot", "where the class token (the token the classifier reads) attends", "\"pool\":\"cls\""}},
        {"seq", "seq", {"\"pool\":\"seq\"", "\"pw\":[[", "sequence pooling"}},
    };
    for (int r = 0; r < 2; r++) {
        snprintf(cmd, sizeof cmd, "./train --dataset fashion-mnist --data %s --dim 16 --depth 1 --heads 2 --batch 64 --threads 2 --steps 6 "
                 "--pool %s --snapshots 2 --out %s/run-%s", fm, runs[r].pool, root, runs[r].name);
        REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
        snprintf(dir, sizeof dir, "%s/run-%s", root, runs[r].name);
        snprintf(html, sizeof html, "%s/%s.html", root, runs[r].name);
        snprintf(cmd, sizeof cmd, "./inspect report %s --out %s --limit 500", dir, html);
        rc = vg_test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
        check_page(html);
        p = vg_test_read_file(html, NULL);
        for (int e = 0; e < 3; e++) CHECK_MSG(p && strstr(p, runs[r].expect[e]), "%s: no \"%s\" in the page", runs[r].name, runs[r].expect[e]);
        free(p);
        if (have_chromium()) { browse(html, runs[r].name, res, sizeof res); CHECK_MSG(strstr(res, "\"views\":7"), "%s", res); }
    }
}
