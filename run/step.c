/* step.c — one training step (per micro-batch: Mixup/CutMix → forward in train mode →
 * cross-entropy with label smoothing or soft targets → backward; then global-norm clip → AdamW at
 * the scheduled lr → the weight EMA → arena reset), and --bench: the same step timed on random
 * data. */
#include "run/run.h"
#include "base/fault.h"
#include "base/clock.h"
#include "base/fault.h"
#include "base/clock.h"
#include "base/fault.h"
#include "dist/dist.h"
#include "gemm/gemm.h"
#include "nn/nn.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

long run_peak_rss_mib(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_maxrss / 1024; }

vg_tensor *batch_tensor(const vg_batch *b) {
    return vg_from_array(VG_DIMS(b->n, b->c, b->h, b->w), b->x);
}


/* forward and loss of one micro-batch (B images at x, labels y) with Mixup/CutMix when on; the
 * loss (arena), *correct += top-1 hits against the images' own labels */
static vg_tensor *micro_loss(trainer *t, const options *o, real *x, const int32_t *y, int B, const vg_batch *b,
                             int micro, int64_t *correct) {
    const int K = t->model.cfg.num_classes;
    vg_mixup_config mc = {o->mixup, o->cutmix, o->mixup_prob, o->mixup_switch_prob, o->label_smoothing, K};
    real *targets = NULL;
    if (vg_mixup_enabled(&mc)) {            /* in place in the loader's buffer: it is ours until the next batch */
        vg_rng r = vg_mixup_rng(o->seed, t->step, micro);
        vg_mixup_params p = vg_mixup_draw(&mc, &r, b->h, b->w);
        /* sample b of the global micro-batch pairs with sample G−1−b: with N processes the
         * partners of this rank's slice are rank N−1−r's slice, reversed */
        const real *partner = x; const int32_t *partner_y = y;
        const int N = vg_dist_size(), peer = N - 1 - vg_dist_rank();
        if (N > 1 && p.lam != 1.0) {
            const size_t xbytes = sizeof(real) * (size_t)B * (size_t)b->c * (size_t)b->h * (size_t)b->w;
            real *px = vg_arena_alloc(xbytes);
            int32_t *py = vg_arena_alloc(sizeof(int32_t) * (size_t)B);
            vg_dist_exchange(x, px, xbytes, peer);
            vg_dist_exchange(y, py, sizeof(int32_t) * (size_t)B, peer);
            partner = px; partner_y = py;
        }
        vg_mixup_apply_with(&p, x, partner, B, b->c, b->h, b->w);
        targets = vg_arena_alloc(sizeof(real) * (size_t)B * (size_t)K);
        vg_mixup_targets_with(y, partner_y, B, K, p.lam, o->label_smoothing, targets);
    }
    vg_tensor *xt = vg_from_array(VG_DIMS(B, b->c, b->h, b->w), x);
    vg_profile_phase("batch to tensor, mixup");
    vg_tensor *logits = vg_vit_forward(&t->model, xt, true, &t->dropout_rng);
    vg_tensor *loss = targets ? vg_soft_cross_entropy_fn(logits, targets) : vg_cross_entropy_fn(logits, y, o->label_smoothing);
    if (loss) *correct += vg_top1_correct(logits, y);
    return loss;
}

static double step_body(trainer *t, const options *o, const vg_batch *b, double lr, int64_t *correct, double *gnorm) {
    vg_profile_step_begin();                        /* no-op unless --profile */
    const int A = o->grad_accum_steps > 1 ? o->grad_accum_steps : 1, B = b->n / A;
    const size_t img = (size_t)b->c * b->h * b->w;
    double lv = 0;
    *correct = 0;
    for (int m = 0; m < A; m++) {
        /* micro-batch m: this process's samples [m·B, (m+1)·B) of its slice */
        vg_dropout_first_sample(b->offset + m * B);  /* masks follow the sample, not the process */
        int64_t hits = 0;
        vg_tensor *loss = micro_loss(t, o, b->x + (size_t)m * B * img, b->y + (size_t)m * B, B, b, m, &hits);
        if (!loss) { fprintf(stderr, "train: step %lld: %s\n", (long long)t->step, vg_error()); vg_dist_abort(1); }
        double l = (double)vg_item(loss);
        vg_profile_phase("loss value, top-1");
        /* test fault "nan_at_step=N" (base/fault.h): the loss of step N (1-based) is NaN */
        if (vg_fault("nan_at_step") == t->step + 1) l = NAN;
        /* the global micro-batch's mean loss and hits: every process takes the same decisions */
        double sums[2] = {l, (double)hits};
        vg_dist_sum_f64(sums, 2);
        l = sums[0] / vg_dist_size(); *correct += (int64_t)sums[1];
        vg_profile_phase("loss and hits over processes");
        if (!isfinite(l)) { vg_arena_reset(); vg_profile_step_end(); return l; }
        lv += l / A;
        if (m == 0) { vg_params_zero_grad(&t->params); vg_profile_phase("zero_grad"); }
        /* the mean over the K micro-batches: each one's mean loss enters with weight 1/K */
        vg_tensor *seed = NULL;
        if (A > 1) { seed = vg_empty(0, (int64_t[1]){0}); vg_data(seed)[0] = (real)(1.0 / A); }
        const bool last = m + 1 == A;
        if (last) vg_grad_sync_begin(t->sync);      /* buckets of the summed gradients go out during this backward */
        if (!vg_backward(loss, seed)) { fprintf(stderr, "train: backward: %s\n", vg_error()); vg_dist_abort(1); }
        vg_profile_phase("backward: engine");
        if (!last) { vg_arena_reset(); continue; }  /* the gradients are persistent; the graph is not */
        vg_grad_sync_finish(t->sync);               /* the mean gradient over the global batch */
        vg_profile_phase("gradient sum over processes (wait)");
    }
    *gnorm = vg_clip_grad_norm(&t->params, o->clip);
    vg_profile_phase("clip grad norm");
    if (!isfinite(*gnorm)) { vg_arena_reset(); vg_profile_step_end(); return NAN; }
    vg_adamw_step(t->opt, lr);
    vg_profile_phase("AdamW");
    if (t->has_ema) { vg_ema_update(&t->ema_state, &t->state_dict, o->model_ema_decay); vg_profile_phase("model EMA"); }
    t->step++;
    t->images += b->global_n;
    vg_arena_reset();
    vg_profile_step_end();
    return lv;
}

/* --patch-drop-until: from that step on every patch, for the step only (the model's configuration,
 * which checkpoints record, keeps its rate) */
double trainer_step(trainer *t, const options *o, const vg_batch *b, double lr, int64_t *correct, double *gnorm) {
    const double rate = t->model.cfg.patch_drop_rate;
    if (run_patch_drop_ended(o, t->step)) t->model.cfg.patch_drop_rate = 0;
    const double loss = step_body(t, o, b, lr, correct, gnorm);
    t->model.cfg.patch_drop_rate = rate;
    return loss;
}

double trainer_gflop_per_image(const trainer *t) { return vg_vit_train_flops_done(&t->model) / 1e9; }

int run_patch_drop_schedule(options *o, int64_t per_epoch, int64_t total, char *err) {
    o->patch_drop_until_step = -1;
    if (o->patch_drop_until < 0) return 0;
    const bool epochs = run_counts_epochs(o->patch_drop_until_unit, o);
    const int64_t step = run_length_steps(o->patch_drop_until, o->patch_drop_until_unit, o, per_epoch);
    if (step > total) {
        snprintf(err, RUN_ERRLEN, "--patch-drop-until %g%s is step %lld, past the end of the run (%lld steps)",
                 o->patch_drop_until, epochs ? " epochs" : " steps", (long long)step, (long long)total);
        return -1;
    }
    o->patch_drop_until_step = step;
    return 0;
}

double trainer_compute_tflop(const trainer *t, const options *o, int64_t *images_dropped, double *gflop_dropped,
                             double *gflop_full) {
    vg_vit m = t->model;                                      /* a copy of the struct: its FLOP count only */
    *gflop_dropped = vg_vit_train_flops_done(&m) / 1e9;
    m.cfg.patch_drop_rate = 0;
    *gflop_full = vg_vit_train_flops_done(&m) / 1e9;
    /* every step trains the same number of images (the global batch) */
    const int64_t until = o->patch_drop_until_step;
    *images_dropped = until < 0 || t->step <= until ? t->images : t->step ? t->images / t->step * until : 0;
    return ((double)*images_dropped * *gflop_dropped + (double)(t->images - *images_dropped) * *gflop_full) / 1e3 +
           (double)t->step * vg_muon_flops(t->opt) / 1e12;     /* --muon: its Newton–Schulz, per step */
}

int trainer_ema_init(trainer *t, char *err) {
    vg_rng unused = vg_rng_seed(0);
    if (!vg_vit_init(&t->ema_model, &t->model.cfg, &unused)) { snprintf(err, RUN_ERRLEN, "model EMA: %.900s", vg_error()); return -1; }
    t->ema_model.full_last_block = t->model.full_last_block;
    vg_vit_state(&t->ema_model, &t->ema_state);
    t->has_ema = true;
    if (!vg_ema_copy(&t->ema_state, &t->state_dict)) { snprintf(err, RUN_ERRLEN, "model EMA: %.900s", vg_error()); return -1; }
    return 0;
}

/* ------------------------------------------------------------------ --bench */
int trainer_bench(trainer *t, const options *o) {
    const vg_vit_config *c = &t->model.cfg;
    vg_rng r = vg_rng_seed(o->seed);
    const int local = o->batch / vg_dist_size();   /* this process's share of the global batch */
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)local);
    real *pix = malloc(sizeof(real) * (size_t)local * (size_t)(c->in_chans * c->img_size * c->img_size));
    for (int i = 0; i < local; i++) labels[i] = (int32_t)vg_rng_below(&r, (uint32_t)c->num_classes);
    for (int64_t i = 0; i < (int64_t)local * c->in_chans * c->img_size * c->img_size; i++) pix[i] = (real)vg_rng_normal(&r);
    vg_batch b = {local, c->in_chans, c->img_size, c->img_size, pix, labels, 0, 0, local * vg_dist_rank(), o->batch};
    options one = *o;
    one.grad_accum_steps = 1;                  /* --bench times one micro-batch of --batch */
    o = &one;
    int warm = 2, n = o->bench;
    const int N = vg_dist_size();
    double *ms = malloc(sizeof(double) * (size_t)n), *waits = malloc(sizeof(double) * (size_t)N);
    double wait_min = 0, wait_max = 0, backward_ms = 0;
    for (int i = 0; i < warm + n; i++) {
        int64_t correct; double gn;
        if (o->profile && i == warm && !vg_profile_start(n)) { fprintf(stderr, "train: --profile: out of memory\n"); return 1; }
        double t0 = vg_now_s();
        trainer_step(t, o, &b, 1e-4, &correct, &gn);
        if (i >= warm) {
            ms[i - warm] = (vg_now_s() - t0) * 1e3;
            /* every rank's wait after its backward: the rank that finished backward last waits
             * only for what the sum did not hide; the others also wait for it (collective) */
            vg_grad_sync_stats st = vg_grad_sync_stats_get(t->sync);
            for (int k = 0; k < N; k++) waits[k] = k == vg_dist_rank() ? st.exposed_ms : 0;
            vg_dist_sum_f64(waits, N);
            double lo = waits[0], hi = waits[0];
            for (int k = 1; k < N; k++) { lo = waits[k] < lo ? waits[k] : lo; hi = waits[k] > hi ? waits[k] : hi; }
            wait_min += lo / n; wait_max += hi / n; backward_ms += st.backward_ms / n;
        }
    }
    double med = vg_median(ms, n);
    double ips = o->batch / (med / 1e3);
    const double flops = trainer_gflop_per_image(t) * 1e9 + vg_muon_flops(t->opt) / o->batch;   /* what a step computes */
    char amp[600] = "";
    if (o->amp) snprintf(amp, sizeof amp, " --amp (%s)", run_amp_describe());
    printf("bench: model %s batch %d threads %d%s%s: median step %.1f ms (min %.1f, max %.1f), %.1f images/s, "
           "%.1f GFLOP/s (%.4f GFLOP per image per step; timm's model %.4f), peak RSS %ld MiB\n",
           o->model, o->batch, omp_get_max_threads(), t->model.full_last_block ? " full last block" : "", amp,
           med, ms[0], ms[n - 1], ips, flops * ips / 1e9, flops / 1e9, vg_vit_train_flops(c) / 1e9,
           run_peak_rss_mib());
    {   /* the gradient sum: its cost alone (blocking) against the wait it left after backward */
        vg_grad_sync_stats st = vg_grad_sync_stats_get(t->sync);
        double sum_ms = vg_grad_sync_time_sum(t->sync, 5);
        double hidden = sum_ms > 0 ? 100 * (1 - wait_min / sum_ms) : 100;
        if (N == 1) printf("bench: 1 process: backward %.1f ms\n", backward_ms);
        else printf("bench: %d processes: backward %.1f ms; gradient sum of %.1f MB (%d buckets): %.1f ms when run alone, "
               "%.1f ms of waiting after backward per step on the rank that finished backward last (%.0f %% hidden "
               "behind backward), %.1f ms on the first\n",
               N, backward_ms, st.elems * sizeof(real) / 1e6, st.buckets, sum_ms, wait_min, hidden < 0 ? 0.0 : hidden, wait_max);
    }
    if (o->profile) { vg_profile_report(stdout); vg_profile_stop(); }
    free(ms); free(waits); free(pix); free(labels);
    return 0;
}


const char *run_amp_describe(void) {
    static char d[512];
    if (!strcmp(vg_gemm_bf16_backend(), "fp32"))
        snprintf(d, sizeof d, "FP32 GEMMs: %s; %s", vg_gemm_bf16_kernel(), vg_gemm_bf16_reason());
    else snprintf(d, sizeof d, "bf16 GEMM %s: %s; %s", vg_gemm_bf16_backend(), vg_gemm_bf16_kernel(), vg_gemm_bf16_reason());
    return d;
}
