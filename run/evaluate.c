/* evaluate.c — the model in eval mode (no dropout, no graph) over a whole split: mean loss, top-1
 * and the confusion matrix; the report ./train prints and writes to confusion.txt; --eval-only. */
#include "run/run.h"
#include "base/fault.h"
#include "nn/nn.h"
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN RUN_ERRLEN

/* a class's name in reports: its description (classes.txt), else its folder name, else "" */
static const char *class_label(const vg_dataset *d, int c) {
    if (d->class_descr && d->class_descr[c] && d->class_descr[c][0]) return d->class_descr[c];
    return d->class_names && d->class_names[c] ? d->class_names[c] : "";
}

/* Test fault "sigint_in_eval=K" (base/fault.h): SIGINT after the K-th evaluation batch of the
 * process (counted over all its evaluations), as a Ctrl-C landing in the middle of one would
 * (tests/test_reliability.c). */
static void signal_hook(void) {
    static long count;
    long k = vg_fault("sigint_in_eval");
    if (k && ++count == k) raise(SIGINT);
}

eval_result trainer_evaluate(trainer *t, const vg_dataset *test, int batch, int loader_threads, bool tta_flip, char *err, bool *ok) {
    return model_evaluate(&t->model, test, batch, loader_threads, tta_flip, err, ok);
}

vg_tensor *eval_hflip(vg_tensor *x) {
    vg_tensor *c = x ? vg_contiguous(x) : NULL;
    vg_tensor *y = c ? vg_empty(c->ndim, c->shape) : NULL;
    if (!y) return NULL;
    const int64_t W = c->shape[c->ndim - 1], rows = vg_numel(c) / W;
    const real *s = vg_data(c);
    real *d = vg_data(y);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < W; j++) d[r * W + j] = s[r * W + W - 1 - j];
    return y;
}

/* the class with the largest logit (the first on ties) */
static int argmax_row(const real *l, int K) {
    int best = 0;
    for (int c = 1; c < K; c++) if (l[c] > l[best]) best = c;
    return best;
}

eval_result model_evaluate(vg_vit *m, const vg_dataset *test, int batch, int loader_threads, bool tta_flip, char *err, bool *ok) {
    eval_result r = {0};
    r.tta_loss = r.tta_acc = NAN;
    r.classes = m->cfg.num_classes;
    r.confusion = calloc((size_t)r.classes * (size_t)r.classes, sizeof(int64_t));
    vg_loader_config lc = vg_loader_config_default();
    lc.train = 0; lc.batch_size = batch; lc.image_size = m->cfg.img_size; lc.n_threads = loader_threads;
    lc.shard = vg_dist_rank(); lc.n_shards = vg_dist_size();    /* each process its slice of every batch */
    vg_loader *L = vg_loader_new(test, &lc, err, ERRLEN);
    *ok = L != NULL;
    if (!L) return r;
    vg_batch b;
    double loss_sum = 0, tta_loss_sum = 0; int64_t correct = 0, tta_correct = 0;
    vg_no_grad_begin();
    while (vg_loader_next(L, &b) == 1) {
        /* Ctrl-C / SIGTERM during training: stop between batches, every process at the same one */
        if (run_stop_requested()) { r.interrupted = true; break; }
        if (b.n == 0) continue;                     /* a last batch smaller than the process count */
        vg_tensor *x = batch_tensor(&b);
        vg_tensor *logits = vg_vit_forward(m, x, false, NULL);
        vg_tensor *loss = vg_cross_entropy_fn(logits, b.y, 0.0);
        /* flip TTA: the logits of the image and of its mirror, averaged */
        vg_tensor *tta = tta_flip && loss ? vg_mul_scalar(vg_add(logits, vg_vit_forward(m, eval_hflip(x), false, NULL)), 0.5) : NULL;
        vg_tensor *tta_loss = tta ? vg_cross_entropy_fn(tta, b.y, 0.0) : NULL;
        if (!loss || (tta_flip && !tta_loss)) { snprintf(err, ERRLEN, "evaluation: %.900s", vg_error()); *ok = false; break; }
        loss_sum += (double)vg_item(loss) * b.n;
        const real *lp = vg_data(logits);
        for (int i = 0; i < b.n; i++) {
            int best = argmax_row(lp + (size_t)i * r.classes, r.classes);
            r.confusion[b.y[i] * r.classes + best]++;
            correct += best == b.y[i];
        }
        if (tta) {
            tta_loss_sum += (double)vg_item(tta_loss) * b.n;
            for (int i = 0; i < b.n; i++) tta_correct += argmax_row(vg_data(tta) + (size_t)i * r.classes, r.classes) == b.y[i];
        }
        r.n += b.n;
        vg_arena_reset();
        signal_hook();
    }
    vg_no_grad_end();
    vg_loader_free(L);
    /* the sums over processes: every process reports the whole split */
    vg_dist_sum_f64(&loss_sum, 1);
    vg_dist_sum_i64(&correct, 1);
    if (tta_flip) { vg_dist_sum_f64(&tta_loss_sum, 1); vg_dist_sum_i64(&tta_correct, 1); }
    vg_dist_sum_i64(&r.n, 1);
    vg_dist_sum_i64(r.confusion, r.classes * r.classes);
    r.loss = r.n ? loss_sum / (double)r.n : NAN;
    r.acc = r.n ? (double)correct / (double)r.n : NAN;
    if (tta_flip) { r.tta_loss = r.n ? tta_loss_sum / (double)r.n : NAN; r.tta_acc = r.n ? (double)tta_correct / (double)r.n : NAN; }
    return r;
}

int run_eval_only(trainer *t, const options *o, const vg_dataset *test, char *err) {
    double t0 = vg_now_s();
    bool ok;
    eval_result r = trainer_evaluate(t, test, o->eval_batch, o->loader_threads, !strcmp(o->tta, "flip"), err, &ok);
    if (ok) {       /* the time and memory first: the report (from "test top-1:" on) is the same every run */
        printf("evaluated in %.1f s (batch %d); peak RSS %ld MiB\n", vg_now_s() - t0, o->eval_batch, run_peak_rss_mib());
        eval_report_print(&r, test, stdout);
    }
    free(r.confusion);
    return ok ? 0 : -1;
}

/* Per-class accuracy and the confusion matrix, for any class count (columns as wide as the largest
 * count needs); with more than 10 classes also the ten largest confusions, which a wide matrix hides. */
void eval_report_print(const eval_result *r, const vg_dataset *d, FILE *f) {
    const int K = r->classes;
    int64_t most = 0;
    for (int i = 0; i < K * K; i++) if (r->confusion[i] > most) most = r->confusion[i];
    int idx = 2, col = 6;                                   /* widths: class index, matrix column */
    for (int k = 100; k <= K - 1; k *= 10) idx++;
    for (int64_t v = 100000; v <= most; v *= 10) col++;
    if (col < idx + 1) col = idx + 1;
    fprintf(f, "test top-1: %.2f%% (%lld images), test loss %.4f\n", 100 * r->acc, (long long)r->n, r->loss);
    if (isfinite(r->tta_acc))
        fprintf(f, "with flip TTA (logits of the image and its mirror averaged): test top-1 %.2f%%, test loss %.4f\n"
                   "(the per-class figures and the matrix below are without TTA)\n", 100 * r->tta_acc, r->tta_loss);
    fprintf(f, "per-class accuracy:\n");
    for (int c = 0; c < K; c++) {
        int64_t tot = 0;
        for (int k = 0; k < K; k++) tot += r->confusion[c * K + k];
        fprintf(f, "  %*d %-20.20s %6.2f%%  (%lld)\n", idx, c, class_label(d, c),
                tot ? 100.0 * (double)r->confusion[c * K + c] / (double)tot : 0.0, (long long)tot);
    }
    fprintf(f, "confusion matrix (rows: true class, columns: predicted):\n  %*s", idx + 1, "");
    for (int k = 0; k < K; k++) fprintf(f, "%*d", col, k);
    fputc('\n', f);
    for (int c = 0; c < K; c++) {
        fprintf(f, "  %*d ", idx, c);
        for (int k = 0; k < K; k++) fprintf(f, "%*lld", col, (long long)r->confusion[c * K + k]);
        fputc('\n', f);
    }
    if (K <= 10) return;
    fprintf(f, "largest confusions (true -> predicted: images):\n");
    int64_t prev = INT64_MAX; int prev_at = -1;
    for (int shown = 0; shown < 10; shown++) {      /* the next largest off-diagonal cell, ties in index order */
        int best = -1;
        for (int i = 0; i < K * K; i++) {
            int64_t v = r->confusion[i];
            if (i / K == i % K || v == 0 || v > prev || (v == prev && i <= prev_at)) continue;
            if (best < 0 || v > r->confusion[best]) best = i;
        }
        if (best < 0) break;
        fprintf(f, "  %s -> %s: %lld\n", class_label(d, best / K), class_label(d, best % K), (long long)r->confusion[best]);
        prev = r->confusion[best]; prev_at = best;
    }
}
