/* step.c — one training step (batch → forward in train mode → cross-entropy with label smoothing
 * → backward → global-norm clip → AdamW at the scheduled lr → arena reset), and --bench: the same
 * step timed on random data. */
#include "run/run.h"
#include "nn/nn.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

double run_now_s(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

long run_peak_rss_mib(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_maxrss / 1024; }

vg_tensor *batch_tensor(const vg_batch *b) {
    return vg_from_array(VG_DIMS(b->n, b->c, b->h, b->w), b->x);
}


double trainer_step(trainer *t, const options *o, const vg_batch *b, double lr, int64_t *correct, double *gnorm) {
    vg_profile_step_begin();                        /* no-op unless --profile */
    vg_tensor *x = batch_tensor(b);
    vg_profile_phase("batch to tensor");
    vg_tensor *logits = vg_vit_forward(&t->model, x, true, &t->dropout_rng);
    vg_tensor *loss = vg_cross_entropy_fn(logits, b->y, o->label_smoothing);
    if (!loss) { fprintf(stderr, "train: step %lld: %s\n", (long long)t->step, vg_error()); exit(1); }
    double lv = (double)vg_item(loss);
    *correct = vg_top1_correct(logits, b->y);
    vg_profile_phase("loss value, top-1");
    /* test hook: VG_TEST_NAN_AT_STEP=N makes the loss of step N (1-based) NaN */
    const char *nan_at = getenv("VG_TEST_NAN_AT_STEP");
    if (nan_at && atoll(nan_at) == t->step + 1) lv = NAN;
    if (!isfinite(lv)) { vg_profile_step_end(); return lv; }
    vg_params_zero_grad(&t->params);
    vg_profile_phase("zero_grad");
    if (!vg_backward(loss, NULL)) { fprintf(stderr, "train: backward: %s\n", vg_error()); exit(1); }
    vg_profile_phase("backward: engine");
    *gnorm = vg_clip_grad_norm(&t->params, o->clip);
    vg_profile_phase("clip grad norm");
    if (!isfinite(*gnorm)) { vg_profile_step_end(); return NAN; }
    vg_adamw_step(t->opt, lr);
    vg_profile_phase("AdamW");
    t->step++;
    vg_arena_reset();
    vg_profile_step_end();
    return lv;
}

/* ------------------------------------------------------------------ --bench */
static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int trainer_bench(trainer *t, const options *o) {
    const vg_vit_config *c = &t->model.cfg;
    vg_rng r = vg_rng_seed(o->seed);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)o->batch);
    real *pix = malloc(sizeof(real) * (size_t)o->batch * (size_t)(c->in_chans * c->img_size * c->img_size));
    for (int i = 0; i < o->batch; i++) labels[i] = (int32_t)vg_rng_below(&r, (uint32_t)c->num_classes);
    for (int64_t i = 0; i < (int64_t)o->batch * c->in_chans * c->img_size * c->img_size; i++) pix[i] = (real)vg_rng_normal(&r);
    vg_batch b = {o->batch, c->in_chans, c->img_size, c->img_size, pix, labels, 0, 0};
    int warm = 2, n = o->bench;
    double *ms = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < warm + n; i++) {
        int64_t correct; double gn;
        if (o->profile && i == warm && !vg_profile_start(n)) { fprintf(stderr, "train: --profile: out of memory\n"); return 1; }
        double t0 = run_now_s();
        trainer_step(t, o, &b, 1e-4, &correct, &gn);
        if (i >= warm) ms[i - warm] = (run_now_s() - t0) * 1e3;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    double med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    double ips = o->batch / (med / 1e3);
    const double flops = 3 * vg_vit_forward_flops_done(&t->model);      /* what a step computes */
    printf("bench: model %s batch %d threads %d%s: median step %.1f ms (min %.1f, max %.1f), %.1f images/s, "
           "%.1f GFLOP/s (%.4f GFLOP per image per step; timm's model %.4f), peak RSS %ld MiB\n",
           o->model, o->batch, omp_get_max_threads(), t->model.full_last_block ? " full last block" : "",
           med, ms[0], ms[n - 1], ips, flops * ips / 1e9, flops / 1e9, vg_vit_train_flops(c) / 1e9,
           run_peak_rss_mib());
    if (o->profile) { vg_profile_report(stdout); vg_profile_stop(); }
    free(ms); free(pix); free(labels);
    return 0;
}

