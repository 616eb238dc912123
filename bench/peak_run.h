/* peak_run.h — what bench/fma_peak.c and bench/bf16_peak.c share: timing a register-only loop on
 * 1..max_threads threads and printing its best rate. Not a test.
 *
 * peak_main runs loop(iters, seed) on T threads at once (T = 1 .. argv[1], default 2), RUNS times
 * each (argv[2], default 5), and prints "NAME_peak threads T GFLOP/s X (NOTE)" with the best run:
 * the ceiling, not the typical. With RUNS ≥ 10 also "NAME_spread …": the median, 10th percentile
 * and worst run, i.e. how much of the ceiling a run of ~0.2 s typically gets on this machine
 * (docs/benchmarks.md, ninth round). flop_per_iter: FLOPs one thread does per iteration. */
#ifndef VG_BENCH_PEAK_RUN_H
#define VG_BENCH_PEAK_RUN_H
#include "../base/clock.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>



/* argv[1], argv[2] as above; 0 when they are valid, else the usage is printed and 2 returned */
static inline int peak_args(int argc, char **argv, int *maxt, int *reps) {
    *maxt = argc > 1 ? atoi(argv[1]) : 2;
    *reps = argc > 2 ? atoi(argv[2]) : 5;
    if (*maxt < 1 || *reps < 1 || *reps > 1000) {
        fprintf(stderr, "usage: %s [max_threads ≥ 1] [runs 1..1000, default 5]\n", argv[0]);
        return 2;
    }
    return 0;
}

static inline int peak_main(int maxt, int reps, const char *name, const char *note,
                            float (*loop)(long iters, float seed), long iters, double flop_per_iter) {
    volatile float sink = 0;
    double *all = malloc(sizeof(double) * (size_t)reps);
    if (!all) return 1;
    for (int t = 1; t <= maxt; t++) {
        double best = 0;
        for (int rep = 0; rep < reps; rep++) {
            double t0 = vg_now_s();
            float s = 0;
            #pragma omp parallel num_threads(t) reduction(+ : s)
            s += loop(iters, (float)omp_get_thread_num());
            double dt = vg_now_s() - t0;
            sink += s;
            all[rep] = (double)t * iters * flop_per_iter / dt * 1e-9;
            if (all[rep] > best) best = all[rep];
        }
        printf("%s_peak threads %d GFLOP/s %.1f (%s)\n", name, t, best, note);
        if (reps >= 10) {
            qsort(all, (size_t)reps, sizeof *all, vg_cmp_double);
            printf("%s_spread threads %d over %d runs of ~%.2f s: median %.1f, 10th percentile %.1f, worst %.1f GFLOP/s\n",
                   name, t, reps, (double)t * iters * flop_per_iter / best * 1e-9, all[reps / 2],
                   all[reps / 10], all[0]);
        }
    }
    free(all);
    return sink == 12345.f;
}
#endif
