/* evaluate.c — the model in eval mode (no dropout, no graph) over a whole split: mean loss, top-1
 * and the confusion matrix; and the report ./train prints and writes to confusion.txt. */
#include "run/run.h"
#include "nn/nn.h"
#include <math.h>
#include <stdlib.h>

#define ERRLEN RUN_ERRLEN

eval_result trainer_evaluate(trainer *t, const vg_dataset *test, int batch, int loader_threads, char *err, bool *ok) {
    return model_evaluate(&t->model, test, batch, loader_threads, err, ok);
}

eval_result model_evaluate(vg_vit *m, const vg_dataset *test, int batch, int loader_threads, char *err, bool *ok) {
    eval_result r = {0};
    r.classes = m->cfg.num_classes;
    r.confusion = calloc((size_t)r.classes * (size_t)r.classes, sizeof(int64_t));
    vg_loader_config lc = vg_loader_config_default();
    lc.train = 0; lc.batch_size = batch; lc.image_size = m->cfg.img_size; lc.n_threads = loader_threads;
    lc.shard = vg_dist_rank(); lc.n_shards = vg_dist_size();    /* each process its slice of every batch */
    vg_loader *L = vg_loader_new(test, &lc, err, ERRLEN);
    *ok = L != NULL;
    if (!L) return r;
    vg_batch b;
    double loss_sum = 0; int64_t correct = 0;
    vg_no_grad_begin();
    while (vg_loader_next(L, &b) == 1) {
        if (b.n == 0) continue;                     /* a last batch smaller than the process count */
        vg_tensor *logits = vg_vit_forward(m, batch_tensor(&b), false, NULL);
        vg_tensor *loss = vg_cross_entropy_fn(logits, b.y, 0.0);
        if (!loss) { snprintf(err, ERRLEN, "evaluation: %.900s", vg_error()); *ok = false; break; }
        loss_sum += (double)vg_item(loss) * b.n;
        const real *lp = vg_data(logits);
        for (int i = 0; i < b.n; i++) {
            int best = 0;
            for (int c = 1; c < r.classes; c++) if (lp[i * r.classes + c] > lp[i * r.classes + best]) best = c;
            r.confusion[b.y[i] * r.classes + best]++;
            correct += best == b.y[i];
        }
        r.n += b.n;
        vg_arena_reset();
    }
    vg_no_grad_end();
    vg_loader_free(L);
    /* the sums over processes: every process reports the whole split */
    vg_dist_sum_f64(&loss_sum, 1);
    vg_dist_sum_i64(&correct, 1);
    vg_dist_sum_i64(&r.n, 1);
    vg_dist_sum_i64(r.confusion, r.classes * r.classes);
    r.loss = r.n ? loss_sum / (double)r.n : NAN;
    r.acc = r.n ? (double)correct / (double)r.n : NAN;
    return r;
}

void eval_report_print(const eval_result *r, const vg_dataset *d, FILE *f) {
    fprintf(f, "test top-1: %.2f%% (%lld images), test loss %.4f\n", 100 * r->acc, (long long)r->n, r->loss);
    fprintf(f, "per-class accuracy:\n");
    for (int c = 0; c < r->classes; c++) {
        int64_t tot = 0;
        for (int k = 0; k < r->classes; k++) tot += r->confusion[c * r->classes + k];
        const char *name = d->class_descr && d->class_descr[c] && d->class_descr[c][0] ? d->class_descr[c]
                         : d->class_names ? d->class_names[c] : "";
        fprintf(f, "  %2d %-20.20s %6.2f%%  (%lld)\n", c, name, tot ? 100.0 * (double)r->confusion[c * r->classes + c] / (double)tot : 0.0, (long long)tot);
    }
    fprintf(f, "confusion matrix (rows: true class, columns: predicted):\n     ");
    for (int k = 0; k < r->classes; k++) fprintf(f, "%6d", k);
    fputc('\n', f);
    for (int c = 0; c < r->classes; c++) {
        fprintf(f, "  %2d ", c);
        for (int k = 0; k < r->classes; k++) fprintf(f, "%6lld", (long long)r->confusion[c * r->classes + k]);
        fputc('\n', f);
    }
}
