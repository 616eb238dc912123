/* inspect_report.c — `./inspect report RUN [--out FILE.html]`: one self-contained HTML page of a
 * training run. The numbers are computed here — from the run directory (metrics.csv, command.txt,
 * train_state, snapshots/ written by ./train: run/snapshot.c) and by running the run's models
 * over its test images (tools/report_model.c) — and carried inline as JSON; a little plain
 * JavaScript (tools/report_page.js, compiled in) draws them. The page loads nothing: a Content-
 * Security-Policy of default-src 'none' forbids every request, and it contains no URL.
 * Views: header card, one test image end to end, training curves, attention explorer with mean
 * attention distance, position embeddings and patch filters, predictions and logit lens, layer
 * health (norms), PCA of pooled features; a slider moves the per-snapshot views through training. */
#include "report.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_meta.h"
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int inspect_report_main(int argc, char **argv);
extern const char report_page_js[];                 /* tools/report_page.js (built into the program) */

#define ATT_BUDGET (1500 * 1024)                     /* bytes of attention maps in the page, at most */
#define PCA_IMAGES 500                               /* test images of the PCA and the logit lens */
#define MAD_IMAGES 32                                /* test images of the mean attention distance */
#define MAX_SNAPS 64

static void usage(FILE *f) {
    fprintf(f, "usage: inspect report RUN [--out FILE.html] [--data DIR] [--limit N]\n"
               "  RUN:     a run directory written by ./train (model.safetensors, metrics.csv, snapshots/)\n"
               "  --out:   the page (default RUN/report.html): one self-contained HTML file, no network\n"
               "  --data:  the dataset folder (default: the run's --data from command.txt, else the default)\n"
               "  --limit: test images for the predictions view (default 10000)\n"
               "Views: the model; one test image end to end; training curves; attention per layer and head\n"
               "(click a patch) with mean attention distance; position-embedding similarity and patch\n"
               "filters; per-class accuracy, confusion matrix, worst mistakes, logit lens; weight/gradient/\n"
               "update norms; PCA of pooled features. A slider moves through the run's snapshots.\n");
}

/* ------------------------------------------------------------------ the run directory */
typedef struct { int64_t step; double loss, lr, acc, test_loss, test_acc, wall; } metric_row;
typedef struct {
    metric_row *rows; int n;
    char command[4096];
    char data_dir[2048];
} run_files;

/* the last entry of command.txt and the --data it names */
static void read_command(const char *run, run_files *r) {
    char p[4200], line[8192];
    snprintf(p, sizeof p, "%s/command.txt", run);
    FILE *f = fopen(p, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        snprintf(r->command, sizeof r->command, "%.4000s", line);
    }
    fclose(f);
    char *d = strstr(r->command, " --data ");
    if (d) {
        d += 8;
        int q = *d == '\'';
        size_t n = strcspn(d + q, q ? "'" : " ");
        snprintf(r->data_dir, sizeof r->data_dir, "%.*s", (int)n, d + q);
    }
}

static double field(char **s) {                       /* the next CSV field; NaN when empty */
    char *p = *s, *e = strchr(p, ',');
    if (e) { *e = 0; *s = e + 1; } else *s = p + strlen(p);
    p[strcspn(p, "\r\n")] = 0;
    return *p ? strtod(p, NULL) : NAN;
}

static void read_metrics(const char *run, run_files *r) {
    char p[4200], line[1024];
    snprintf(p, sizeof p, "%s/metrics.csv", run);
    FILE *f = fopen(p, "r");
    if (!f) return;
    int cap = 0;
    for (bool header = true; fgets(line, sizeof line, f); header = false) {
        if (header) continue;
        if (r->n == cap) { cap = cap ? 2 * cap : 256; metric_row *nr = realloc(r->rows, sizeof *nr * cap); if (!nr) break; r->rows = nr; }
        char *s = line;
        metric_row m;
        m.step = (int64_t)field(&s); field(&s);
        m.loss = field(&s); m.lr = field(&s); m.acc = field(&s); m.test_loss = field(&s); m.test_acc = field(&s);
        field(&s); m.wall = field(&s);
        r->rows[r->n++] = m;
    }
    fclose(f);
}

/* snapshots/step-*.safetensors, ascending */
static int list_snapshots(const char *run, int64_t *steps) {
    char p[4200];
    snprintf(p, sizeof p, "%s/snapshots", run);
    DIR *d = opendir(p);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long long s; char tail[32];
        if (n < MAX_SNAPS && sscanf(e->d_name, "step-%lld.safetensor%31s", &s, tail) == 2 && !strcmp(tail, "s")) steps[n++] = s;
    }
    if (d) closedir(d);
    for (int i = 1; i < n; i++) for (int j = i; j > 0 && steps[j] < steps[j - 1]; j--) { int64_t t = steps[j]; steps[j] = steps[j - 1]; steps[j - 1] = t; }
    return n;
}

/* snapshots/norms.csv → {"steps":[…],"params":[…],"w":[[…]…],"g":…,"u":…}; *n_rows rows read */
typedef struct { double last_ratio_max, last_ratio_min, first_ratio_med, last_ratio_med; char max_name[128], min_name[128]; int n_steps, n_params; } norms_summary;

static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static void write_norms(FILE *j, const char *run, norms_summary *ns) {
    char p[4200], line[512];
    memset(ns, 0, sizeof *ns);
    snprintf(p, sizeof p, "%s/snapshots/norms.csv", run);
    FILE *f = fopen(p, "r");
    rj_key(j, "norms");
    if (!f) { fputs("null", j); return; }
    /* long rows (step, param, w, g, u, ratio) → per parameter series over the steps */
    enum { MAXP = 1024, MAXS = 4096 };
    static char names[MAXP][128];
    static int64_t steps[MAXS];
    double *vals = calloc((size_t)MAXP * MAXS * 3, sizeof *vals);
    int np = 0, ns_ = 0;
    for (bool header = true; vals && fgets(line, sizeof line, f); header = false) {
        if (header) continue;
        char name[128]; long long st; double w, g, u, r;
        if (sscanf(line, "%lld,%127[^,],%lf,%lf,%lf,%lf", &st, name, &w, &g, &u, &r) != 6) continue;
        if (!ns_ || steps[ns_ - 1] != st) { if (ns_ == MAXS) break; steps[ns_++] = st; }
        int k = 0;
        while (k < np && strcmp(names[k], name)) k++;
        if (k == np) { if (np == MAXP) continue; snprintf(names[np++], 128, "%s", name); }
        double *v = vals + ((size_t)k * MAXS + (ns_ - 1)) * 3;
        v[0] = w; v[1] = g; v[2] = u;
    }
    fclose(f);
    fputc('{', j);
    rj_key(j, "steps"); fputc('[', j);
    for (int s = 0; s < ns_; s++) fprintf(j, "%s%lld", s ? "," : "", (long long)steps[s]);
    fputs("],", j);
    rj_key(j, "params"); fputc('[', j);
    for (int k = 0; k < np; k++) { if (k) fputc(',', j); rj_str(j, names[k]); }
    fputc(']', j);
    const char *keys[3] = {"w", "g", "u"};
    double *series = malloc(sizeof *series * (ns_ ? ns_ : 1));
    for (int q = 0; q < 3 && series; q++) {
        fputc(',', j); rj_key(j, keys[q]); fputc('[', j);
        for (int k = 0; k < np; k++) {
            for (int s = 0; s < ns_; s++) series[s] = vals[((size_t)k * MAXS + s) * 3 + q];
            if (k) fputc(',', j);
            rj_nums(j, series, ns_);
        }
        fputc(']', j);
    }
    fputc('}', j);
    /* the summary: update/weight ratios at the first and last norm step */
    ns->n_steps = ns_; ns->n_params = np;
    if (ns_ && np && series) {
        double *r0 = malloc(sizeof *r0 * np), *r1 = malloc(sizeof *r1 * np);
        ns->last_ratio_max = -1; ns->last_ratio_min = INFINITY;
        for (int k = 0; k < np; k++) {
            const double *a = vals + (size_t)k * MAXS * 3, *b = vals + ((size_t)k * MAXS + ns_ - 1) * 3;
            r0[k] = a[0] > 0 ? a[2] / a[0] : 0; r1[k] = b[0] > 0 ? b[2] / b[0] : 0;
            if (r1[k] > ns->last_ratio_max) { ns->last_ratio_max = r1[k]; snprintf(ns->max_name, 128, "%.127s", names[k]); }
            if (r1[k] < ns->last_ratio_min) { ns->last_ratio_min = r1[k]; snprintf(ns->min_name, 128, "%.127s", names[k]); }
        }
        qsort(r0, np, sizeof *r0, cmp_double); qsort(r1, np, sizeof *r1, cmp_double);
        ns->first_ratio_med = r0[np / 2]; ns->last_ratio_med = r1[np / 2];
        free(r0); free(r1);
    }
    free(series); free(vals);
}

/* ------------------------------------------------------------------ numbers for the sentences */
typedef struct {
    double acc, best_acc; int64_t best_step;          /* test accuracy: last, best and its step */
    double train_loss, test_loss;                     /* last */
    double mad_first[2], mad_last[2];                 /* mean attention distance: first and last block, first and last snapshot */
    double mad_min, mad_max; int mad_min_l, mad_min_h, mad_max_l, mad_max_h;   /* last snapshot */
    double mad_spread[2][2];                          /* last snapshot: heads' min and max in the first and last block */
    double pos_adj[2], pos_far[2];                    /* pos_embed similarity: adjacent vs. far patches, first/last snapshot */
    double lens_first, lens_last;                     /* logit lens accuracy after block 0 and the last block (last snapshot) */
    double pca_var[2], pca_sep[2];                    /* PCA: variance of 2 PCs; nearest-centroid accuracy in the plane */
    int best_class, worst_class, conf_a, conf_b; double best_class_acc, worst_class_acc; int64_t conf_n;
    int e2e_pred, e2e_label; double e2e_prob;
} summary;

static void softmax(const float *z, int K, double *p) {
    double mx = z[0], s = 0;
    for (int k = 1; k < K; k++) if (z[k] > mx) mx = z[k];
    for (int k = 0; k < K; k++) { p[k] = exp(z[k] - mx); s += p[k]; }
    for (int k = 0; k < K; k++) p[k] /= s;
}
static int argmax(const float *z, int K) { int b = 0; for (int k = 1; k < K; k++) if (z[k] > z[b]) b = k; return b; }

/* the image as uint8 (C, S, S) after the eval crop, for drawing */
static uint8_t *crop_u8(const vg_dataset *d, int idx, int S) {
    ic_image im = {0};
    int h, w;
    im.chw = (uint8_t *)vg_dataset_image(d, idx, &h, &w);
    im.c = d->channels; im.h = h; im.w = w;
    return ic_image_crop_u8(&im, S);
}

/* per snapshot: attention of the explorer's images, mean attention distance, pos_embed similarity,
 * the image-space filters, PCA of pooled features and the logit lens on PCA_IMAGES test images */
static int write_snapshots(FILE *j, const char *run, const int64_t *steps, int ns, const vg_vit *final_model,
                           const vg_dataset *test, summary *sm, char *err) {
    const vg_vit_config *c = &final_model->cfg;
    const int L = c->depth, H = c->num_heads, S = vg_vit_num_prefix_tokens(c), N = vg_vit_num_patches(c), T = N + S, K = c->num_classes;
    const size_t per = (size_t)L * H * T * T;
    int n_att = test->n < 3 ? test->n : 3;
    while (n_att > 1 && per * n_att * ns > ATT_BUDGET) n_att--;
    /* snapshots whose maps fit the budget: spread evenly, the last always */
    int keep_every = 1;
    while (per * n_att * ((ns + keep_every - 1) / keep_every) > ATT_BUDGET && keep_every < ns) keep_every++;
    const int M = test->n < PCA_IMAGES ? test->n : PCA_IMAGES;
    int *idx = malloc(sizeof *idx * M);
    float *att = malloc(sizeof *att * per * (n_att ? n_att : 1));
    float *pooled = malloc(sizeof *pooled * (size_t)M * c->embed_dim), *xy = malloc(sizeof *xy * 2 * M), *sim = malloc(sizeof *sim * (size_t)N * N);
    uint8_t *q = malloc(per > (size_t)N * N ? per : (size_t)N * N);
    if (!idx || !att || !pooled || !xy || !sim || !q) { snprintf(err, IC_ERRLEN, "out of memory"); return -1; }
    for (int i = 0; i < M; i++) idx[i] = i;
    /* the explorer's images */
    rj_key(j, "att_images"); fputc('[', j);
    for (int i = 0; i < n_att; i++) {
        uint8_t *px = crop_u8(test, i, c->img_size);
        fprintf(j, "%s{", i ? "," : "");
        rj_key(j, "label"); fprintf(j, "%d,", test->labels[i]);
        rj_key(j, "px"); if (px) rj_b64(j, px, (size_t)c->in_chans * c->img_size * c->img_size); else fputs("null", j);
        fputc('}', j);
        free(px);
    }
    fputs("],", j);
    rj_key(j, "snaps"); fputc('[', j);
    int rc = 0;
    for (int s = 0; s < ns && !rc; s++) {
        char path[4300];
        vg_vit mm, *m = &mm;
        if (steps[s] >= 0) {
            snprintf(path, sizeof path, "%s/snapshots/step-%08lld.safetensors", run, (long long)steps[s]);
            vg_st_file *f = vg_st_open(path, err, IC_ERRLEN);
            if (!f || vg_vit_from_checkpoint(f, m, path, err, IC_ERRLEN)) { vg_st_close(f); rc = -1; break; }
            vg_st_close(f);
        } else m = (vg_vit *)final_model;
        printf("report: snapshot %d/%d (step %lld)\n", s + 1, ns, (long long)steps[s]);
        fprintf(j, "%s{", s ? "," : "");
        rj_key(j, "step"); fprintf(j, "%lld,", (long long)(steps[s] >= 0 ? steps[s] : -1));
        /* attention and its mean distance */
        bool keep = (ns - 1 - s) % keep_every == 0;
        if (rm_forward(m, rm_batch(m, test, idx, n_att), att, NULL, NULL, NULL, NULL)) { snprintf(err, IC_ERRLEN, "forward: %s", vg_error()); rc = -1; }
        vg_arena_reset();
        /* mean attention distance over MAD_IMAGES test images, one at a time (the maps of the first
         * n_att, above, are the explorer's) */
        double mad[1024] = {0};
        const int n_mad = test->n < MAD_IMAGES ? test->n : MAD_IMAGES;
        float *a1 = malloc(sizeof *a1 * per);
        for (int i = 0; i < n_mad && !rc && a1; i++) {
            if (rm_forward(m, rm_batch(m, test, idx + i, 1), a1, NULL, NULL, NULL, NULL)) { snprintf(err, IC_ERRLEN, "forward: %s", vg_error()); rc = -1; }
            vg_arena_reset();
            for (int lh = 0; lh < L * H && lh < 1024 && !rc; lh++)
                mad[lh] += rm_mean_attention_distance(a1 + (size_t)lh * T * T, T, S, m->grid_h, m->grid_w, c->patch_size) / n_mad;
        }
        free(a1);
        rj_key(j, "mad"); rj_nums(j, mad, L * H < 1024 ? L * H : 1024); fputc(',', j);
        for (int e = 0; e < 2; e++) {
            int l = e ? L - 1 : 0;
            double a = 0; for (int h = 0; h < H; h++) a += mad[l * H + h] / H;
            if (s == 0) (e ? sm->mad_last : sm->mad_first)[0] = a;
            if (s == ns - 1) (e ? sm->mad_last : sm->mad_first)[1] = a;
        }
        if (s == ns - 1) {
            for (int e = 0; e < 2; e++) {
                int l = e ? L - 1 : 0;
                sm->mad_spread[e][0] = INFINITY; sm->mad_spread[e][1] = -1;
                for (int h = 0; h < H; h++) { sm->mad_spread[e][0] = fmin(sm->mad_spread[e][0], mad[l * H + h]); sm->mad_spread[e][1] = fmax(sm->mad_spread[e][1], mad[l * H + h]); }
            }
            sm->mad_min = INFINITY; sm->mad_max = -1;
            for (int lh = 0; lh < L * H; lh++) {
                if (mad[lh] < sm->mad_min) { sm->mad_min = mad[lh]; sm->mad_min_l = lh / H; sm->mad_min_h = lh % H; }
                if (mad[lh] > sm->mad_max) { sm->mad_max = mad[lh]; sm->mad_max_l = lh / H; sm->mad_max_h = lh % H; }
            }
        }
        if (c->pool == VG_VIT_POOL_SEQ) {                  /* what the head reads: Σ a_n x_n */
            float *pw = malloc(sizeof *pw * (size_t)N * (n_att ? n_att : 1));
            if (!pw || rm_seq_pool_weights(m, rm_batch(m, test, idx, n_att), pw)) { snprintf(err, IC_ERRLEN, "pooling weights: %s", pw ? vg_error() : "out of memory"); rc = -1; }
            vg_arena_reset();
            rj_key(j, "pw"); fputc('[', j);
            for (int i = 0; i < n_att && !rc; i++) { if (i) fputc(',', j); rj_numsf(j, pw + (size_t)i * N, N); }
            fputs("],", j);
            free(pw);
        }
        rj_key(j, "att"); fputc('[', j);
        for (int i = 0; i < n_att && keep; i++) {          /* sqrt-coded bytes: small weights keep their detail */
            for (size_t k = 0; k < per; k++) { double v = sqrt(fmax(0, att[(size_t)i * per + k])) * 255 + 0.5; q[k] = (uint8_t)(v > 255 ? 255 : v); }
            if (i) fputc(',', j);
            rj_b64(j, q, per);
        }
        fputs("],", j);
        /* position embeddings */
        const int pre = vg_vit_pos_prefix_rows(c);
        rm_posembed_similarity(m->pos_embed, pre, N, sim);
        for (size_t k = 0; k < (size_t)N * N; k++) { double v = (sim[k] + 1) / 2 * 255 + 0.5; q[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
        rj_key(j, "pos"); rj_b64(j, q, (size_t)N * N); fputc(',', j);
        double adj = 0, far = 0; int na = 0, nf = 0;
        for (int a = 0; a < N; a++)
            for (int b = 0; b < N; b++) {
                int d = abs(a / m->grid_w - b / m->grid_w) + abs(a % m->grid_w - b % m->grid_w);
                if (d == 1) { adj += sim[(size_t)a * N + b]; na++; }
                else if (d >= (m->grid_w + 1) / 2) { far += sim[(size_t)a * N + b]; nf++; }
            }
        if (s == 0) { sm->pos_adj[0] = na ? adj / na : 0; sm->pos_far[0] = nf ? far / nf : 0; }
        if (s == ns - 1) { sm->pos_adj[1] = na ? adj / na : 0; sm->pos_far[1] = nf ? far / nf : 0; }
        /* filters: the first convolution that sees pixels (the stem's first layer, else the patch conv) */
        const vg_tensor *w = vg_vit_stem_depth(c) ? m->stem[0].weight : m->patch_embed.weight;   /* (F, C, k, k) */
        const int F = (int)w->shape[0], Cin = (int)w->shape[1], kk = (int)w->shape[2], fs = Cin * kk * kk;
        real *wv = malloc(sizeof *wv * (size_t)F * fs);
        uint8_t *fq = malloc((size_t)F * fs);
        if (wv && fq) {
            vg_copy_to_array(w, wv);
            for (int fi = 0; fi < F; fi++) {                  /* each filter to 0..255 around its own zero */
                double mx = 1e-12;
                for (int k = 0; k < fs; k++) { const double a = fabs(wv[(size_t)fi * fs + k]); if (a > mx) mx = a; }   /* no fmax reduction: gcc 12 aarch64 ICE */
                for (int k = 0; k < fs; k++) fq[(size_t)fi * fs + k] = (uint8_t)lrint(127.5 + 127.5 * wv[(size_t)fi * fs + k] / mx);
            }
            rj_key(j, "filters"); fprintf(j, "{\"n\":%d,\"c\":%d,\"k\":%d,\"px\":", F, Cin, kk); rj_b64(j, fq, (size_t)F * fs); fputs("},", j);
        }
        free(wv); free(fq);
        /* PCA and the logit lens */
        int correct[64] = {0};
        for (int b0 = 0; b0 < M && !rc; b0 += 100) {
            int B = M - b0 < 100 ? M - b0 : 100;
            float *lb = malloc(sizeof *lb * (size_t)L * B * K);
            if (!lb || rm_forward(m, rm_batch(m, test, idx + b0, B), NULL, lb, pooled + (size_t)b0 * c->embed_dim, NULL, NULL)) {
                snprintf(err, IC_ERRLEN, "forward: %s", vg_error()); rc = -1;
            }
            for (int l = 0; l < L && l < 64 && !rc; l++)
                for (int i = 0; i < B; i++) correct[l] += argmax(lb + ((size_t)l * B + i) * K, K) == test->labels[b0 + i];
            free(lb);
            vg_arena_reset();
        }
        double la[64];
        for (int l = 0; l < L && l < 64; l++) la[l] = (double)correct[l] / M;
        rj_key(j, "lens"); rj_nums(j, la, L < 64 ? L : 64); fputc(',', j);
        if (s == ns - 1 && L > 0) { sm->lens_first = la[0]; sm->lens_last = la[(L < 64 ? L : 64) - 1]; }
        double var2[2];
        rm_pca2(pooled, M, c->embed_dim, xy, var2);
        /* how well classes separate in the plane: nearest class centre */
        double cx[1024] = {0}, cy[1024] = {0}; int cn[1024] = {0}, hit = 0;
        for (int i = 0; i < M; i++) { int y = test->labels[i] % 1024; cx[y] += xy[2 * i]; cy[y] += xy[2 * i + 1]; cn[y]++; }
        for (int k = 0; k < 1024; k++) if (cn[k]) { cx[k] /= cn[k]; cy[k] /= cn[k]; }
        for (int i = 0; i < M; i++) {
            int best = -1; double bd = INFINITY;
            for (int k = 0; k < 1024 && k < K; k++) {
                if (!cn[k]) continue;
                double d = (xy[2 * i] - cx[k]) * (xy[2 * i] - cx[k]) + (xy[2 * i + 1] - cy[k]) * (xy[2 * i + 1] - cy[k]);
                if (d < bd) { bd = d; best = k; }
            }
            hit += best == test->labels[i];
        }
        int e = s == 0 ? 0 : 1;
        if (s == 0 || s == ns - 1) { sm->pca_var[e] = var2[0] + var2[1]; sm->pca_sep[e] = (double)hit / M; }
        rj_key(j, "pca"); rj_numsf(j, xy, 2 * M); fputc(',', j);
        rj_key(j, "pca_var"); rj_nums(j, var2, 2);
        fputc('}', j);
        if (m != final_model) vg_vit_free(m);
    }
    fputs("],", j);
    rj_key(j, "pca_labels"); fputc('[', j);
    for (int i = 0; i < M; i++) fprintf(j, "%s%d", i ? "," : "", test->labels[i]);
    fputs("],", j);
    free(idx); free(att); free(pooled); free(xy); free(sim); free(q);
    return rc;
}

/* the final model over the test split: per-class accuracy, confusion, the worst mistakes */
static int write_predictions(FILE *j, vg_vit *m, const vg_dataset *test, int limit, summary *sm, char *err) {
    const int K = m->cfg.num_classes, n = test->n < limit ? test->n : limit;
    int64_t *conf = calloc((size_t)K * K, sizeof *conf);
    float *logits = malloc(sizeof *logits * 128 * K);
    int *idx = malloc(sizeof *idx * 128);
    enum { WORST = 8 };
    int worst[WORST]; double worst_p[WORST]; int nw = 0;
    if (!conf || !logits || !idx) { snprintf(err, IC_ERRLEN, "out of memory"); free(conf); free(logits); free(idx); return -1; }
    double *p = malloc(sizeof *p * K);
    for (int b0 = 0; b0 < n; b0 += 128) {
        int B = n - b0 < 128 ? n - b0 : 128;
        for (int i = 0; i < B; i++) idx[i] = b0 + i;
        if (rm_forward(m, rm_batch(m, test, idx, B), NULL, NULL, NULL, logits, NULL)) { snprintf(err, IC_ERRLEN, "forward: %s", vg_error()); free(conf); free(logits); free(idx); free(p); return -1; }
        vg_arena_reset();
        for (int i = 0; i < B; i++) {
            int y = test->labels[b0 + i], pr = argmax(logits + (size_t)i * K, K);
            conf[(size_t)y * K + pr]++;
            if (pr == y) continue;
            softmax(logits + (size_t)i * K, K, p);
            int at = nw < WORST ? nw++ : WORST - 1;          /* keep the WORST most confident mistakes */
            if (at == WORST - 1 && nw == WORST && p[pr] <= worst_p[at]) continue;
            while (at > 0 && worst_p[at - 1] < p[pr]) { worst[at] = worst[at - 1]; worst_p[at] = worst_p[at - 1]; at--; }
            worst[at] = b0 + i; worst_p[at] = p[pr];
        }
        if (b0 % 2048 == 0) printf("report: predictions %d/%d\n", b0, n);
    }
    rj_key(j, "pred"); fputc('{', j);
    rj_key(j, "n"); fprintf(j, "%d,", n);
    /* the confusion matrix in the page up to 100 classes (K² numbers); per-class accuracy always */
    int64_t right = 0;
    double *class_acc = malloc(sizeof *class_acc * K);
    sm->best_class_acc = -1; sm->worst_class_acc = 2; sm->conf_n = 0;
    for (int y = 0; y < K; y++) {
        int64_t row = 0;
        for (int k = 0; k < K; k++) {
            row += conf[(size_t)y * K + k];
            if (k != y && conf[(size_t)y * K + k] > sm->conf_n) { sm->conf_n = conf[(size_t)y * K + k]; sm->conf_a = y; sm->conf_b = k; }
        }
        right += conf[(size_t)y * K + y];
        double a = row ? (double)conf[(size_t)y * K + y] / row : NAN;
        if (class_acc) class_acc[y] = a;
        if (row && a > sm->best_class_acc) { sm->best_class_acc = a; sm->best_class = y; }
        if (row && a < sm->worst_class_acc) { sm->worst_class_acc = a; sm->worst_class = y; }
    }
    rj_key(j, "class_acc"); if (class_acc) rj_nums(j, class_acc, K); else fputs("[]", j);
    free(class_acc);
    fputc(',', j);
    rj_key(j, "confusion");
    if (K > 100) fputs("null", j);
    for (int y = 0; y < K && K <= 100; y++) {
        fputs(y ? ",[" : "[[", j);
        for (int k = 0; k < K; k++) fprintf(j, "%s%lld", k ? "," : "", (long long)conf[(size_t)y * K + k]);
        fputc(']', j);
        if (y == K - 1) fputc(']', j);
    }
    fputc(',', j);
    sm->acc = n ? (double)right / n : 0;
    rj_key(j, "worst"); fputc('[', j);
    for (int w = 0; w < nw; w++) {
        idx[0] = worst[w];
        if (rm_forward(m, rm_batch(m, test, idx, 1), NULL, NULL, NULL, logits, NULL)) break;
        vg_arena_reset();
        softmax(logits, K, p);
        uint8_t *px = crop_u8(test, worst[w], m->cfg.img_size);
        fprintf(j, "%s{\"index\":%d,\"label\":%d,\"px\":", w ? "," : "", worst[w], test->labels[worst[w]]);
        if (px) rj_b64(j, px, (size_t)m->cfg.in_chans * m->cfg.img_size * m->cfg.img_size); else fputs("null", j);
        free(px);
        fputs(",\"top\":[", j);
        bool used[4096] = {false};
        for (int t = 0; t < 5 && t < K; t++) {
            int b = -1;
            for (int k = 0; k < K && k < 4096; k++) if (!used[k] && (b < 0 || p[k] > p[b])) b = k;
            used[b] = true;
            fprintf(j, "%s[%d,%.4f]", t ? "," : "", b, p[b]);
        }
        fputs("]}", j);
    }
    fputs("]},", j);
    free(conf); free(logits); free(idx); free(p);
    return 0;
}

/* one test image through every stage: shapes and what each stage holds */
static int write_end_to_end(FILE *j, vg_vit *m, const vg_dataset *test, summary *sm, char *err) {
    const vg_vit_config *c = &m->cfg;
    const int L = c->depth, S = vg_vit_num_prefix_tokens(c), N = vg_vit_num_patches(c), T = N + S, K = c->num_classes, D = c->embed_dim;
    int idx = 0;
    float *tokens = malloc(sizeof *tokens * (L + 1) * T), *logits = malloc(sizeof *logits * K), *pooled = malloc(sizeof *pooled * D);
    double *p = malloc(sizeof *p * K);
    if (!tokens || !logits || !pooled || !p) { snprintf(err, IC_ERRLEN, "out of memory"); return -1; }
    int rc = rm_forward(m, rm_batch(m, test, &idx, 1), NULL, NULL, pooled, logits, tokens);
    vg_arena_reset();
    if (rc) { snprintf(err, IC_ERRLEN, "forward: %s", vg_error()); free(tokens); free(logits); free(pooled); free(p); return -1; }
    softmax(logits, K, p);
    sm->e2e_label = test->labels[0]; sm->e2e_pred = argmax(logits, K); sm->e2e_prob = p[sm->e2e_pred];
    uint8_t *px = crop_u8(test, 0, c->img_size);
    rj_key(j, "e2e"); fputc('{', j);
    rj_key(j, "label"); fprintf(j, "%d,", test->labels[0]);
    rj_key(j, "px"); if (px) rj_b64(j, px, (size_t)c->in_chans * c->img_size * c->img_size); else fputs("null", j);
    fputc(',', j);
    rj_key(j, "tokens"); rj_numsf(j, tokens, (L + 1) * T); fputc(',', j);
    rj_key(j, "pooled"); rj_numsf(j, pooled, D); fputc(',', j);
    rj_key(j, "logits"); rj_numsf(j, logits, K); fputc(',', j);
    rj_key(j, "probs"); rj_nums(j, p, K);
    fputs("},", j);
    free(px); free(tokens); free(logits); free(pooled); free(p);
    return 0;
}

/* ------------------------------------------------------------------ the page */
static void html_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f); else if (*s == '>') fputs("&gt;", f); else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

static const char *CSS =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f6f6f3;color:#222}"
    "main{max-width:1100px;margin:0 auto;padding:0 16px 40px}"
    "section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:14px 0}"
    "h1{font-size:22px;margin:14px 0 4px}h2{font-size:17px;margin:2px 0 6px}"
    "p.say{background:#f1f5fb;border-left:3px solid #6a8fd0;padding:6px 10px;margin:6px 0}"
    "table.kv td{padding:1px 10px 1px 0;vertical-align:top}table.kv td:first-child{color:#666}"
    "code{font-size:12px;word-break:break-all}"
    "#bar{position:sticky;top:0;z-index:5;background:#23324d;color:#fff;padding:6px 16px}"
    "#bar input{vertical-align:middle;width:300px}"
    ".row{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start}"
    ".cap{font-size:12px;color:#555;text-align:center}"
    ".tip{position:fixed;pointer-events:none;background:#222;color:#fff;font-size:12px;padding:3px 6px;border-radius:3px;display:none;z-index:9}"
    "canvas{image-rendering:pixelated}button{margin:2px}.sel{background:#23324d;color:#fff}"
    ".none{color:#a33}";

static void section(FILE *f, const char *id, const char *title) {
    fprintf(f, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
}

int inspect_report_main(int argc, char **argv) {
    const char *run = NULL, *out = NULL, *data = NULL;
    int limit = 10000;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_take("report", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("report", argc, argv, &i, "--data", &data))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("report", argc, argv, &i, "--limit", &v))) { if (r < 0 || !ic_int("report", "--limit", v, 1, INT_MAX, &limit)) return IC_USAGE; continue; }
        if (argv[i][0] == '-' || run) { fprintf(stderr, "inspect report: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE; }
        run = argv[i];
    }
    if (!run) { fprintf(stderr, "inspect report: give the run directory\n"); usage(stderr); return IC_USAGE; }
    char err[IC_ERRLEN], outbuf[4200];
    if (!out) { snprintf(outbuf, sizeof outbuf, "%s/report.html", run); out = outbuf; }
    ic_model mm;
    if (ic_model_load(run, &mm, err, sizeof err)) { fprintf(stderr, "inspect report: %s\n", err); return IC_FAIL; }
    vg_vit *m = &mm.m;
    const vg_vit_config *c = &m->cfg;
    run_files rf = {0};
    read_command(run, &rf);
    read_metrics(run, &rf);
    const char *dataset = mm.dataset[0] ? mm.dataset : c->in_chans == 1 ? "fashion-mnist" : "cifar10";
    if (!data && rf.data_dir[0]) data = rf.data_dir;
    if (!data) data = ic_default_data_dir(dataset);
    vg_dataset *test = vg_dataset_open(dataset, data, VG_SPLIT_TEST, err, sizeof err);
    if (!test) { fprintf(stderr, "inspect report: the run's test images: %s (give the folder with --data DIR)\n", err); ic_model_free(&mm); free(rf.rows); return IC_FAIL; }
    if (test->n_classes != c->num_classes || test->channels != c->in_chans) {
        fprintf(stderr, "inspect report: %s has %d classes of %d-channel images, the model %d and %d\n", data, test->n_classes, test->channels, c->num_classes, c->in_chans);
        vg_dataset_free(test); ic_model_free(&mm); free(rf.rows); return IC_FAIL;
    }
    /* the train state: seed, images seen, wall time */
    char mp[4096], sp[4096], seed[32] = "?";
    double wall = NAN; int64_t images = 0;
    if (!vg_checkpoint_resolve(run, mp, sp, sizeof mp, err, sizeof err) && sp[0]) {
        vg_st_file *s = vg_st_open(sp, err, sizeof err);
        if (s) {
            if (vg_st_meta(s, "seed")) snprintf(seed, sizeof seed, "%s", vg_st_meta(s, "seed"));
            if (vg_st_meta(s, "wall_time")) wall = atof(vg_st_meta(s, "wall_time"));
            if (vg_st_find(s, "state.images")) vg_st_read_i64(s, "state.images", &images, 1, err, sizeof err);
            vg_st_close(s);
        }
    }
    int64_t steps[MAX_SNAPS + 1];
    int ns = list_snapshots(run, steps);
    const bool have_snaps = ns > 0;
    if (!have_snaps) { steps[0] = -1; ns = 1; }          /* the final model stands in for them */

    /* ---- the numbers, as JSON into memory ---- */
    char *json = NULL; size_t json_n = 0;
    FILE *j = open_memstream(&json, &json_n);
    summary sm = {0};
    norms_summary nsum;
    int rc = j ? 0 : -1;
    fputc('{', j);
    rj_key(j, "cfg");
    char stem[64]; vg_vit_stem_str(c, stem, sizeof stem);
    fprintf(j, "{\"img\":%d,\"patch\":%d,\"chans\":%d,\"classes\":%d,\"dim\":%d,\"depth\":%d,\"heads\":%d,\"mlp\":%d,"
               "\"prefix\":%d,\"gh\":%d,\"gw\":%d,\"pool\":\"%s\",\"cls\":%s,\"reg\":%d,\"stem\":",
            c->img_size, c->patch_size, c->in_chans, c->num_classes, c->embed_dim, c->depth, c->num_heads, vg_vit_hidden_dim(c),
            vg_vit_num_prefix_tokens(c), m->grid_h, m->grid_w, c->pool == VG_VIT_POOL_CLS ? "cls" : c->pool == VG_VIT_POOL_SEQ ? "seq" : "mean", c->class_token ? "true" : "false", c->reg_tokens);
    rj_str(j, stem);
    fprintf(j, ",\"sincos\":%s,\"fixed_pos\":%s},", c->pos_embed == VG_VIT_POS_SINCOS2D ? "true" : "false",
            c->pos_embed == VG_VIT_POS_SINCOS2D ? "true" : "false");
    rj_key(j, "class_names"); fputc('[', j);
    for (int k = 0; k < test->n_classes; k++) {
        char nm[160];
        if (test->class_names && test->class_descr && test->class_descr[k] && test->class_descr[k][0]) snprintf(nm, sizeof nm, "%s", test->class_descr[k]);
        else if (test->class_names && test->class_names[k]) snprintf(nm, sizeof nm, "%s", test->class_names[k]);
        else snprintf(nm, sizeof nm, "class %d", k);
        if (k) fputc(',', j);
        rj_str(j, nm);
    }
    fputs("],", j);
    rj_key(j, "has_snaps"); fputs(have_snaps ? "true," : "false,", j);
    /* metrics */
    rj_key(j, "train"); fputc('[', j);
    int nt = 0;
    sm.best_acc = -1;
    for (int i = 0; i < rf.n; i++) {
        const metric_row *r = &rf.rows[i];
        if (isfinite(r->loss)) { fprintf(j, "%s[%lld,%.5g,%.5g,%.5g]", nt++ ? "," : "", (long long)r->step, r->loss, r->lr, r->acc); sm.train_loss = r->loss; }
    }
    fputs("],", j);
    rj_key(j, "eval"); fputc('[', j);
    int ne = 0;
    for (int i = 0; i < rf.n; i++) {
        const metric_row *r = &rf.rows[i];
        if (!isfinite(r->test_acc)) continue;
        fprintf(j, "%s[%lld,%.5g,%.5g]", ne++ ? "," : "", (long long)r->step, r->test_loss, r->test_acc);
        sm.test_loss = r->test_loss;
        if (r->test_acc > sm.best_acc) { sm.best_acc = r->test_acc; sm.best_step = r->step; }
    }
    fputs("],", j);
    if (!isfinite(wall) && rf.n) wall = rf.rows[rf.n - 1].wall;
    write_norms(j, run, &nsum);
    fputc(',', j);
    if (!rc) rc = write_end_to_end(j, m, test, &sm, err);
    if (!rc) rc = write_predictions(j, m, test, limit, &sm, err);
    if (!rc) rc = write_snapshots(j, run, steps, ns, m, test, &sm, err);
    rj_key(j, "end"); fputs("0}", j);
    if (j) fclose(j);
    if (rc) { fprintf(stderr, "inspect report: %s\n", err); free(json); vg_dataset_free(test); ic_model_free(&mm); free(rf.rows); return IC_FAIL; }

    /* ---- the page ---- */
    FILE *f = fopen(out, "w");
    if (!f) { fprintf(stderr, "inspect report: %s: cannot write\n", out); free(json); vg_dataset_free(test); ic_model_free(&mm); free(rf.rows); return IC_FAIL; }
    const char *const *names = (const char *const *)test->class_names;
    char nb[4][160];
    #define CNAME(i, k) (snprintf(nb[i], sizeof nb[i], "%s", names && names[k] ? (test->class_descr && test->class_descr[k] && test->class_descr[k][0] ? test->class_descr[k] : names[k]) : "class"), nb[i])
    const double gflop = vg_vit_forward_flops(c) / 1e9;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
               "<title>vitgrad report: ");
    html_text(f, run);
    fprintf(f, "</title><style>%s</style></head><body>\n", CSS);
    fprintf(f, "<div id=\"bar\">snapshot <input type=\"range\" id=\"snap\" min=\"0\" max=\"%d\" value=\"%d\"> <span id=\"snaplabel\"></span>%s</div><main>\n",
            ns - 1, ns - 1, have_snaps ? "" : " <span>(this run has no snapshots: the final model only)</span>");
    fprintf(f, "<h1>How this ViT learned</h1>\n");
    /* 1. header card */
    section(f, "header", "1. The run");
    fprintf(f, "<table class=\"kv\">");
    fprintf(f, "<tr><td>run</td><td><code>"); html_text(f, run); fprintf(f, "</code></td></tr>");
    fprintf(f, "<tr><td>model</td><td>ViT: %dx%d images (%d channel%s), patch %d &rarr; %dx%d = %d patches, dim %d, depth %d, %d heads, MLP %d, "
               "%s pooling, %s position embedding, stem %s%s; %lld parameters, %.4f GFLOP per image (forward)</td></tr>",
            c->img_size, c->img_size, c->in_chans, c->in_chans > 1 ? "s" : "", c->patch_size, m->grid_h, m->grid_w, m->grid_h * m->grid_w, c->embed_dim, c->depth,
            c->num_heads, vg_vit_hidden_dim(c), c->pool == VG_VIT_POOL_CLS ? "class-token" : c->pool == VG_VIT_POOL_SEQ ? "sequence" : "mean", c->pos_embed == VG_VIT_POS_SINCOS2D ? "fixed 2-D sin-cos" : "learned",
            stem, c->reg_tokens ? ", register tokens" : "", (long long)vg_vit_param_count(c), gflop);
    fprintf(f, "<tr><td>data</td><td>%s: %d test images, %d classes (<code>", dataset, test->n, test->n_classes);
    html_text(f, data);
    fprintf(f, "</code>)</td></tr><tr><td>seed</td><td>%s</td></tr>", seed);
    fprintf(f, "<tr><td>command</td><td><code>"); html_text(f, rf.command[0] ? rf.command : "(no command.txt)"); fprintf(f, "</code></td></tr>");
    /* the compute as ./train counts it: images × the training FLOPs per image per step (patch
     * dropout's fewer tokens, the class-token-only last block) */
    const double train_gflop = vg_vit_train_flops_done(m) / 1e9;
    fprintf(f, "<tr><td>training</td><td>%lld steps, %lld images, %.0f s wall time, %.1f TFLOP (images &times; %.4f GFLOP per image per step, as ./train counts)</td></tr>",
            rf.n ? (long long)rf.rows[rf.n - 1].step : 0LL, (long long)images, isfinite(wall) ? wall : 0.0, (double)images * train_gflop / 1e3, train_gflop);
    fprintf(f, "<tr><td>result</td><td>test top-1 %.2f%% on %d images (this page's evaluation of model.safetensors)</td></tr></table>\n", 100 * sm.acc,
            test->n < limit ? test->n : limit);
    fprintf(f, "<p class=\"say\">This model turns a %dx%d image into %d tokens of %d numbers and reaches %.2f%% on the test set",
            c->img_size, c->img_size, m->grid_h * m->grid_w, c->embed_dim, 100 * sm.acc);
    if (sm.best_acc >= 0) fprintf(f, "; its best evaluation during training was %.2f%% at step %lld", 100 * sm.best_acc, (long long)sm.best_step);
    fprintf(f, ". Each image costs %.4f GFLOP forward. ", gflop);
    if (have_snaps) fprintf(f, "%d snapshots of the weights, taken during training, let the views below replay it: move the slider at the top.</p></section>\n", ns);
    else fprintf(f, "<span class=\"none\">This run has no snapshots (trained before they existed, or with --snapshots 0): the views below show the final model only.</span></p></section>\n");
    /* 2. end to end */
    section(f, "e2e", "2. One test image, end to end");
    fprintf(f, "<div id=\"e2e-view\"></div><p class=\"say\">Test image #0 is a <b>%s</b>; the model says <b>%s</b> with probability %.2f. "
               "The picture is cut into %d patches of %dx%d pixels; each becomes a %d-number token%s, %d blocks of attention and MLP rewrite them, "
               "and %s gives the %d-number feature the head turns into %d logits. The bright cells show the tokens whose vectors grew longest in each block.</p></section>\n",
            CNAME(0, sm.e2e_label), CNAME(1, sm.e2e_pred), sm.e2e_prob, m->grid_h * m->grid_w, c->patch_size, c->patch_size, c->embed_dim,
            vg_vit_num_prefix_tokens(c) ? " (plus the class/register tokens in front)" : "", c->depth,
            c->pool == VG_VIT_POOL_CLS ? "the class token" : c->pool == VG_VIT_POOL_SEQ ? "a learned weighting of the patch tokens (sequence pooling)" : "the mean over the patch tokens", c->embed_dim, c->num_classes);
    /* 3. curves */
    section(f, "curves", "3. Training curves");
    fprintf(f, "<div id=\"curves-view\" class=\"row\"></div><p class=\"say\">");
    if (ne) fprintf(f, "The last training loss (with label smoothing and augmentation) is %.3f and the last test loss %.3f; test accuracy peaked at %.2f%% (step %lld). "
                       "A test loss that rises while the training loss falls would mean overfitting. Dashed lines mark the snapshots the other views replay.",
                    sm.train_loss, sm.test_loss, 100 * sm.best_acc, (long long)sm.best_step);
    else fprintf(f, "metrics.csv has no evaluations.");
    fprintf(f, "</p></section>\n");
    /* 4. attention */
    section(f, "attention", "4. Attention explorer");
    fprintf(f, "<div id=\"att-view\"></div><p class=\"say\">Each small map shows, for one layer (row) and head (column), %s. "
               "Click a patch of the large image to see where that patch looks instead. The mean attention distance of the first block goes from %.1f to %.1f pixels "
               "between the first and last snapshot, of the last block from %.1f to %.1f; in the last snapshot the most local head is layer %d head %d (%.1f px), "
               "the most global layer %d head %d (%.1f px). The heads of the first block span %.1f to %.1f px, those of the last %.1f to %.1f px "
               "(the ViT paper found early layers mixing local and global heads, later ones all global). Distances are averaged over %d test images.</p></section>\n",
            c->pool == VG_VIT_POOL_CLS ? "where the class token (the token the classifier reads) attends"
            : c->pool == VG_VIT_POOL_SEQ ? "the attention of the patch queries weighted as sequence pooling weighs them for that image (the classifier reads that weighted sum of the patch tokens)"
                                         : "the attention averaged over all patch queries (the classifier reads the mean of the patch tokens)",
            sm.mad_first[0], sm.mad_first[1], sm.mad_last[0], sm.mad_last[1], sm.mad_min_l, sm.mad_min_h, sm.mad_min, sm.mad_max_l, sm.mad_max_h, sm.mad_max,
            sm.mad_spread[0][0], sm.mad_spread[0][1], sm.mad_spread[1][0], sm.mad_spread[1][1], test->n < MAD_IMAGES ? test->n : MAD_IMAGES);
    /* 5. embeddings */
    section(f, "embeddings", "5. What the embeddings learned");
    fprintf(f, "<div id=\"emb-view\" class=\"row\"></div><p class=\"say\">");
    if (c->pos_embed == VG_VIT_POS_SINCOS2D)
        fprintf(f, "This run uses fixed 2-D sin-cos positions, so the similarity maps do not change: neighbours have cosine %.2f, far patches %.2f. ", sm.pos_adj[1], sm.pos_far[1]);
    else
        fprintf(f, "The learned position embeddings of neighbouring patches have cosine similarity %.2f at the first snapshot and %.2f at the last "
                   "(far patches: %.2f and %.2f): the 2-D grid %s. ", sm.pos_adj[0], sm.pos_adj[1], sm.pos_far[0], sm.pos_far[1],
                sm.pos_adj[1] - sm.pos_far[1] > sm.pos_adj[0] - sm.pos_far[0] + 0.05 ? "appears during training" : "is barely visible yet");
    fprintf(f, "The filters are the %s's weights shown as images: trained filters look like edges, colour blobs and stripes, random ones like noise.</p></section>\n",
            vg_vit_stem_depth(c) ? "first stem convolution" : "patch embedding");
    /* 6. predictions */
    section(f, "predictions", "6. Predictions");
    fprintf(f, "<div id=\"pred-view\"></div><p class=\"say\">The easiest class is <b>%s</b> (%.1f%%), the hardest <b>%s</b> (%.1f%%); the most frequent mistake is "
               "<b>%s</b> taken for <b>%s</b> (%lld times). Reading the class out after each block (the logit lens, on %d test images) gives %.1f%% after block 0 "
               "and %.1f%% after the last: %s.</p></section>\n",
            CNAME(0, sm.best_class), 100 * sm.best_class_acc, CNAME(1, sm.worst_class), 100 * sm.worst_class_acc, CNAME(2, sm.conf_a), CNAME(3, sm.conf_b),
            (long long)sm.conf_n, test->n < PCA_IMAGES ? test->n : PCA_IMAGES, 100 * sm.lens_first, 100 * sm.lens_last,
            sm.lens_last > sm.lens_first + 0.05 ? "the class is decided in the later blocks" : "the early blocks already carry much of the answer");
    /* 7. layer health */
    section(f, "health", "7. Layer health");
    fprintf(f, "<div id=\"health-view\"></div><p class=\"say\">");
    if (nsum.n_steps)
        fprintf(f, "The median update-to-weight ratio (how much one step changes a tensor, relative to its size) goes from %.2g at step 1 to %.2g at the end; "
                   "a ratio near 1e-3 is the usual healthy range. At the end <code>%s</code> moves fastest (%.2g) and <code>%s</code> slowest (%.2g).",
                nsum.first_ratio_med, nsum.last_ratio_med, nsum.max_name, nsum.last_ratio_max, nsum.min_name, nsum.last_ratio_min);
    else fprintf(f, "<span class=\"none\">This run has no snapshots/norms.csv (trained before snapshots existed, or with --snapshots 0): no norms to show.</span>");
    fprintf(f, "</p></section>\n");
    /* 8. PCA */
    section(f, "pca", "8. A map of the representations");
    fprintf(f, "<div id=\"pca-view\"></div><p class=\"say\">Each dot is a test image's pooled feature projected on its two principal components, coloured by class. "
               "The two components hold %.0f%% of the variance at the first snapshot and %.0f%% at the last; assigning each dot to the nearest class centre in this plane "
               "is right for %.0f%% and then %.0f%% of the images: %s.</p></section>\n",
            100 * sm.pca_var[0], 100 * sm.pca_var[1], 100 * sm.pca_sep[0], 100 * sm.pca_sep[1],
            sm.pca_sep[1] > sm.pca_sep[0] + 0.05 ? "classes pull apart as the model learns" : "the classes overlap in two dimensions; the head uses all of them");
    fprintf(f, "<div id=\"tip\" class=\"tip\"></div><pre id=\"test-result\"></pre></main>\n<script type=\"application/json\" id=\"data\">");
    fwrite(json, 1, json_n, f);
    fprintf(f, "</script>\n<script>\n%s</script>\n</body></html>\n", report_page_js);
    rc = fclose(f);
    struct stat st;
    if (!rc && stat(out, &st) == 0) printf("wrote %s (%.1f MiB): %d snapshot%s%s\n", out, st.st_size / 1048576.0, have_snaps ? ns : 0, ns == 1 ? "" : "s",
                                           have_snaps ? "" : " (the run has none: the per-snapshot views show the final model)");
    free(json); vg_dataset_free(test); ic_model_free(&mm); free(rf.rows);
    return rc ? IC_FAIL : 0;
}
