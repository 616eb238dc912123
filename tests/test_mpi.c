/* test_mpi.c — ./train as 2 MPI ranks over TCP: the same numbers as one process on the
 * same global batch, determinism, resume 2 → 1 and 1 → 2, sharded evaluation, errors and a rank
 * killed mid-run. Needs mpirun and the MPI build of train (tests/run.sh sets VG_TRAIN_MPI to it;
 * `make test` builds it when mpicc is present); skips visibly otherwise. */
#include "base/clock.h"
#include "test.h"
#include "tensor/safetensors.h"
#include "gemm/gemm.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* over TCP on the loopback interface only, as between machines; ranks may share cores */
#define MPIRUN "env ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " \
               "mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo "      \
               "--mca oob_tcp_if_include lo"
#define TINY "--dataset cifar10 --model vit-micro-cifar --dim 16 --depth 2 --heads 2 --batch 32 --threads 1 " \
             "--loader-threads 1 --log-every 1 --eval-every 0 --save-every 0 --seed 3 --drop 0.1 "          \
             "--attn-drop 0.1 --lr 3e-3 --warmup 2s"
/* How far 2 ranks may drift from 1 process, from the arithmetic: the runs differ only in the order
 * of FP32 sums over the batch (each rank sums its half, then the halves are added; the GEMMs' K
 * blocking of dW = Xᵀ·dY over K = 32 images × 65 tokens = 2,080 rows also differs with the row
 * count and with the instruction set's block size). A sum of K terms in another order differs by
 * about √K·u of the sum of its terms' magnitudes (u = 2⁻²⁴, rounding errors as independent
 * signs; K·u is the worst case), 2.7e-6 for K = 2,080. AdamW divides the update by √v, so a
 * gradient off by a relative δ gives an update off by about δ, and over T steps the differences
 * add up: T·√K·u = 3.3e-5 for T = 12, 6.6e-5 for 24 (the longest run here). Weights and losses
 * must agree within 10x that for 24 steps: 6.6e-4 (loss: the mean of the same per-sample values,
 * summed in another order: well inside). Measured (docs/distributed.md): 1.1e-6 on AVX-512, 2.5e-5
 * on AVX2 (mixup over 12 steps). qkv.bias is apart: its key part has an exactly zero gradient
 * (softmax ignores a constant added to every key), so what it gets is rounding noise, which AdamW
 * scales up to lr-sized steps in either run; measured 7e-5, bound kept at 1e-3 of the tensor's
 * largest value. */
#define SUM_ORDER_DRIFT (24 * 45.6 * 0x1p-24)       /* T·√K·u, T = 24 steps, K = 2,080 */
#define LOSS_RTOL (10 * SUM_ORDER_DRIFT)
#define WEIGHT_RTOL (10 * SUM_ORDER_DRIFT)
#define KEY_BIAS_RTOL 1e-3

static char root[256], train_mpi[1024], data_flag[400];

/* false (and a visible skip) without mpirun or the MPI build of train */
static bool ready(void) {
    const char *t = getenv("VG_TRAIN_MPI");
    if (!t || access(t, X_OK) != 0 || system("command -v mpirun >/dev/null 2>&1") != 0) return false;
    snprintf(train_mpi, sizeof train_mpi, "%s", t);
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/vitgrad-mpi-test-XXXXXX");
        if (!mkdtemp(root)) return false;
        char d[300]; snprintf(d, sizeof d, "%s/cifar", root);
        mkdir(d, 0755);
        if (!vg_test_write_cifar(d)) return false;
        snprintf(data_flag, sizeof data_flag, "--data %s", d);
    }
    return true;
}
#define NEED_MPI() do { if (!ready()) VG_SKIP("no mpirun or no MPI build of train (make test builds build/train-mpi when mpicc is present)"); } while (0)

/* run `train FLAGS` as one process (np 0: no mpirun) or np ranks; output into out */
static int train(int np, const char *flags, char *out, size_t n) {
    char cmd[4096];
    if (np == 0) snprintf(cmd, sizeof cmd, "env ASAN_OPTIONS=detect_leaks=0 %s %s %s %s", train_mpi, TINY, data_flag, flags);
    else snprintf(cmd, sizeof cmd, MPIRUN " -np %d %s %s %s %s", np, train_mpi, TINY, data_flag, flags);
    return vg_test_run(cmd, out, n);
}

/* the loss of every logged step in OUT/metrics.csv, in order; returns the count */
static int losses(const char *out_dir, double *loss, int max) {
    char path[512]; snprintf(path, sizeof path, "%s/%s/metrics.csv", root, out_dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        long long step; double epoch, l;
        if (sscanf(line, "%lld,%lf,%lf,", &step, &epoch, &l) == 3) loss[n++] = l;
    }
    fclose(f);
    return n;
}

/* worst relative difference of the losses of the first `upto` of `want` logged steps; INFINITY
 * when either run did not log `want` steps */
static double loss_rel_diff_upto(const char *a, const char *b, int want, int upto) {
    double la[64], lb[64];
    int na = losses(a, la, 64), nb = losses(b, lb, 64);
    if (na != want || nb != want) return INFINITY;
    double worst = 0;
    for (int i = 0; i < upto && i < na; i++) {
        double d = fabs(la[i] - lb[i]) / fabs(lb[i]);
        if (!(d <= worst)) worst = d;
    }
    return worst;
}
static double worst_loss_rel_diff(const char *a, const char *b, int want) {
    return loss_rel_diff_upto(a, b, want, want);
}

/* max over tensors of max|a − b| / max|b| between two model.safetensors (qkv biases apart, in
 * *key_bias if not NULL); INFINITY if unreadable */
static double worst_weight_rel_diff(const char *a, const char *b, double *key_bias) {
    double kb = 0;
    char pa[512], pb[512], err[512];
    snprintf(pa, sizeof pa, "%s/%s/model.safetensors", root, a);
    snprintf(pb, sizeof pb, "%s/%s/model.safetensors", root, b);
    vg_st_file *fa = vg_st_open(pa, err, sizeof err), *fb = vg_st_open(pb, err, sizeof err);
    double worst = fa && fb && vg_st_count(fa) == vg_st_count(fb) && vg_st_count(fa) > 0 ? 0 : INFINITY;
    for (size_t i = 0; worst < INFINITY && i < vg_st_count(fa); i++) {
        const vg_st_tensor *t = vg_st_at(fa, i);
        float *x = malloc(sizeof(float) * t->numel), *y = malloc(sizeof(float) * t->numel);
        if (vg_st_read_f32(fa, t->name, x, t->numel, err, sizeof err) || vg_st_read_f32(fb, t->name, y, t->numel, err, sizeof err)) worst = INFINITY;
        double dmax = 0, ymax = 0;
        for (size_t k = 0; worst < INFINITY && k < t->numel; k++) {
            if (!(fabs(x[k] - y[k]) <= dmax)) dmax = fabs(x[k] - y[k]);
            if (fabs(y[k]) > ymax) ymax = fabs(y[k]);
        }
        double *w = strstr(t->name, "qkv.bias") ? &kb : &worst;
        if (worst < INFINITY && ymax > 0 && !(dmax / ymax <= *w)) *w = dmax / ymax;
        free(x); free(y);
    }
    vg_st_close(fa); vg_st_close(fb);
    if (key_bias) *key_bias = kb;
    else if (kb > worst) worst = kb;
    return worst;
}

static char out1[65536], out2[65536];

/* how close 2 ranks must come to 1 process */
typedef struct { double loss, weight, key_bias; } tolerances;
static const tolerances FP32_TOL = {LOSS_RTOL, WEIGHT_RTOL, KEY_BIAS_RTOL};

/* `flags` as one process (OUT dir `one`) and as 2 ranks (`two`): the loss of every logged step and the
 * final weights agree within float32 summation order (tol) */
static void two_ranks_vs_one_within(const char *label, const char *flags, int steps, const char *one,
                                    const char *two, tolerances tol) {
    char f[600];
    snprintf(f, sizeof f, "%s --steps %d --out %s/%s", flags, steps, root, one);
    int rc1 = train(0, f, out1, sizeof out1);           /* the MPI build without mpirun: 1 process */
    snprintf(f, sizeof f, "%s --steps %d --out %s/%s", flags, steps, root, two);
    int rc2 = train(2, f, out2, sizeof out2);
    CHECK_MSG(rc1 == 0, "1 process: exit %d: %s", rc1, out1);
    CHECK_MSG(rc2 == 0, "2 ranks: exit %d: %s", rc2, out2);
    REQUIRE(rc1 == 0 && rc2 == 0);
    double kb, dl = worst_loss_rel_diff(two, one, steps), dw = worst_weight_rel_diff(two, one, &kb);
    printf("    %s2 ranks vs 1 process, %d steps: worst relative difference: loss %.2e, weights %.2e, qkv biases %.2e\n",
           label, steps, dl, dw, kb);
    CHECK_MSG(dl <= tol.loss, "loss differs by %g (relative)", dl);
    CHECK_MSG(dw <= tol.weight, "weights differ by %g (relative to each tensor's largest)", dw);
    CHECK_MSG(kb <= tol.key_bias, "qkv biases differ by %g (relative to each tensor's largest)", kb);
}
static void two_ranks_vs_one(const char *label, const char *flags, int steps, const char *one, const char *two) {
    two_ranks_vs_one_within(label, flags, steps, one, two, FP32_TOL);
}

VG_TEST(mpi_two_ranks_match_one_process_on_the_same_global_batch) {
    NEED_MPI();
    two_ranks_vs_one("", "", 24, "one", "two");
    CHECK_MSG(strstr(out1, "1 process x 1 threads; rank 0 on "), "%s", out1);
    CHECK_MSG(strstr(out2, "2 processes x 1 threads; rank 0 on ") && strstr(out2, ", 1 on "), "%s", out2);
}

/* Mixup/CutMix pair sample b of the global batch with sample G−1−b, which the other rank holds:
 * the ranks exchange their slices, so 2 ranks mix the same pairs as one process */
VG_TEST(mpi_mixup_and_cutmix_pair_across_ranks_as_in_one_process) {
    NEED_MPI();
    two_ranks_vs_one("mixup + cutmix, ", "--mixup 0.8 --cutmix 1.0", 12, "mix-one", "mix-two");
}

/* drop-path, patch dropout and random erasing draw per sample from its index in the global batch:
 * 2 ranks drop and erase what one process does */
VG_TEST(mpi_per_sample_regularisers_follow_the_sample_across_ranks) {
    NEED_MPI();
    two_ranks_vs_one("drop-path + patch dropout + erasing, ", "--drop-path 0.2 --patch-drop 0.25 --reprob 0.3", 12,
                     "reg-one", "reg-two");
}

/* --amp: every rank runs the bf16 GEMMs on its slice of the batch; only the FP32 sums of the
 * gradients over the batch run in another order, as without --amp. But once the weights differ in
 * their last bits, some of them round to the other bf16 neighbour (a 2^-8 relative step, not
 * FP32's 2^-24), so the runs drift apart faster. Measured over 12 steps: the losses of steps 1-5
 * equal to metrics.csv's 7 digits, then up to 9.5e-6 apart; weights 3.2e-4 of each tensor's
 * largest, qkv biases 3.7e-2. Tolerances: 10x, and the first 4 steps within 2e-6 (a few units of
 * the printed last digit). This model in FP32 is 1.6e-5 from its --amp loss at step 1, so a rank
 * left in FP32 would move the mean by ~8e-6. */
VG_TEST(mpi_amp_two_ranks_match_one_process) {
    NEED_MPI();
    two_ranks_vs_one_within("--amp, ", "--amp --patch-drop 0.25", 12, "amp-one", "amp-two",
                            (tolerances){1e-4, 3e-3, 0.3});
    double first = loss_rel_diff_upto("amp-two", "amp-one", 12, 4);
    CHECK_MSG(first <= 2e-6, "the losses of steps 1-4 differ by %g (relative)", first);
    /* the start-up line names what --amp runs here: a bf16 GEMM, or FP32 GEMMs on a CPU without a
     * bf16 kernel that beats FP32 (gemm/README.md) */
    const char *want = strcmp(vg_gemm_bf16_backend(), "fp32") ? "--amp: bf16 GEMM" : "--amp: FP32 GEMMs";
    CHECK_MSG(strstr(out1, want) && strstr(out2, want), "want \"%s\" in:\n%s", want, out2);
}

VG_TEST(mpi_two_ranks_are_deterministic) {
    NEED_MPI();
    char f[600];
    snprintf(f, sizeof f, "--steps 24 --out %s/two-again", root);
    int rc = train(2, f, out2, sizeof out2);
    REQUIRE(rc == 0);
    CHECK(worst_loss_rel_diff("two-again", "two", 24) == 0);
    CHECK(worst_weight_rel_diff("two-again", "two", NULL) == 0);
}

/* stop at step 12 with `from` ranks, resume with `to` (0: one process without mpirun) */
static void stop_and_resume(int from, int to, const char *dir, const char *reference) {
    char f[600];
    snprintf(f, sizeof f, "--steps 24 --stop-at 12 --out %s/%s", root, dir);
    int rc = train(from, f, out1, sizeof out1);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", dir, rc, out1);
    snprintf(f, sizeof f, "--steps 24 --resume %s/%s --out %s/%s", root, dir, root, dir);
    rc = train(to, f, out2, sizeof out2);
    CHECK_MSG(rc == 0 && strstr(out2, "resumed from"), "%s: exit %d: %s", dir, rc, out2);
    double kb, dl = worst_loss_rel_diff(dir, reference, 24), dw = worst_weight_rel_diff(dir, reference, &kb);
    CHECK_MSG(dl <= LOSS_RTOL && dw <= WEIGHT_RTOL && kb <= KEY_BIAS_RTOL, "%s against %s: loss %g, weights %g, qkv biases %g",
              dir, reference, dl, dw, kb);
}

VG_TEST(mpi_resume_from_2_ranks_with_1_and_from_1_with_2) {
    NEED_MPI();
    stop_and_resume(2, 0, "two-then-one", "two");
    stop_and_resume(0, 2, "one-then-two", "one");
}

VG_TEST(mpi_sharded_evaluation_equals_one_process) {
    NEED_MPI();
    char f[600];
    snprintf(f, sizeof f, "--eval-only --init %s/one/model.safetensors", root);
    int rc1 = train(0, f, out1, sizeof out1), rc2 = train(2, f, out2, sizeof out2);
    REQUIRE(rc1 == 0 && rc2 == 0);
    const char *a = strstr(out1, "test top-1:"), *b = strstr(out2, "test top-1:");
    REQUIRE(a && b);
    CHECK_MSG(!strcmp(a, b), "1 process:\n%s\n2 ranks:\n%s", a, b);   /* accuracy, loss, per class, confusion */
}

VG_TEST(mpi_batch_not_divisible_by_the_ranks_is_refused) {
    NEED_MPI();
    int rc = train(2, "--batch 33 --steps 2", out1, sizeof out1);
    CHECK(rc != 0);
    CHECK_MSG(strstr(out1, "--batch: 33 is not divisible by the 2 processes") && !strstr(out1, "training "), "%s", out1);
}


VG_TEST(mpi_a_rank_that_cannot_open_its_data_ends_the_job) {
    NEED_MPI();
    char cmd[4096];
    snprintf(cmd, sizeof cmd, MPIRUN " -np 1 %s " TINY " %s --steps 50 --out %s/no-data : -np 1 %s " TINY " --data %s/missing --steps 50 --out %s/no-data",
             train_mpi, data_flag, root, train_mpi, root, root);
    double t0 = vg_now_s();
    int rc = vg_test_run(cmd, out1, sizeof out1);
    CHECK(rc != 0);
    CHECK_MSG(strstr(out1, "/missing") && strstr(out1, "rank 1 (on ") && strstr(out1, "ending the whole job"), "%s", out1);
    CHECK_MSG(vg_now_s() - t0 < 60, "took %.0f s", vg_now_s() - t0);
}

/* the pid of rank `rank` among mpirun's children (OMPI_COMM_WORLD_RANK in its environment), or 0 */
static pid_t rank_pid(pid_t mpirun, int rank) {
    char cmd[128], line[64], want[64];
    snprintf(cmd, sizeof cmd, "pgrep -P %d", (int)mpirun);
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    FILE *p = popen(cmd, "r");
    pid_t found = 0;
    while (p && !found && fgets(line, sizeof line, p)) {
        char path[64], env[65536];
        snprintf(path, sizeof path, "/proc/%d/environ", atoi(line));
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t n = fread(env, 1, sizeof env - 1, f);
        fclose(f);
        for (size_t k = 0; k < n; k += strlen(env + k) + 1)
            if (!strcmp(env + k, want)) { found = atoi(line); break; }
    }
    if (p) pclose(p);
    return found;
}

static bool exists(const char *path) { struct stat st; return stat(path, &st) == 0; }

/* Start 2 ranks training for long in the background (extra flags added), wait for a checkpoint,
 * send rank 1 `sig`, wait (at most 60 s) for the job to end. The job's output goes into out1;
 * returns the seconds from the signal to the end (negative if it did not start), *rc its status. */
static double signal_rank_1(const char *name, const char *extra, int sig, int *rc) {
    char cmd[4096], latest[512], rc_path[512], log_path[512], pid_path[512];
    snprintf(latest, sizeof latest, "%s/%s/latest", root, name);
    snprintf(rc_path, sizeof rc_path, "%s/%s.rc", root, name);
    snprintf(log_path, sizeof log_path, "%s/%s.log", root, name);
    snprintf(pid_path, sizeof pid_path, "%s/%s.pid", root, name);
    snprintf(cmd, sizeof cmd, "(" MPIRUN " -np 2 %s " TINY " %s --steps 1000000 --save-every 10 --log-every 100 %s --out %s/%s "
             "> %s 2>&1; echo $? > %s) & echo $! > %s", train_mpi, data_flag, extra, root, name, log_path, rc_path, pid_path);
    *rc = -1;
    if (system(cmd) != 0) return -1;
    double t0 = vg_now_s();
    while (!exists(latest) && vg_now_s() - t0 < 60) usleep(100000);
    FILE *f = fopen(pid_path, "r");
    int shell = 0;
    if (!exists(latest) || !f || fscanf(f, "%d", &shell) != 1) { if (f) fclose(f); return -1; }
    fclose(f);
    pid_t mpirun = 0, victim = 0;
    snprintf(cmd, sizeof cmd, "pgrep -P %d mpirun", shell);
    FILE *p = popen(cmd, "r");
    if (p) { if (fscanf(p, "%d", &mpirun) != 1) mpirun = 0; pclose(p); }
    if (mpirun) victim = rank_pid(mpirun, 1);
    if (victim <= 0) return -1;
    kill(victim, sig);
    double t_sig = vg_now_s();
    while (!exists(rc_path) && vg_now_s() - t_sig < 60) usleep(100000);
    double took = vg_now_s() - t_sig;
    if (sig == SIGSTOP) kill(victim, SIGKILL);          /* if the job did not end it */
    usleep(200000);                                    /* let the shell finish writing rc */
    f = fopen(rc_path, "r");
    if (f) { if (fscanf(f, "%d", rc) != 1) *rc = -1; fclose(f); }
    FILE *lf = fopen(log_path, "r");
    size_t n = lf ? fread(out1, 1, sizeof out1 - 1, lf) : 0;
    out1[n] = 0;
    if (lf) fclose(lf);
    return took;
}

/* signal_rank_1, then: the job ended within `limit` s, failing, its output containing a and b */
static bool job_ends(const char *name, const char *extra, int sig, double limit, const char *a, const char *b) {
    int rc;
    double took = signal_rank_1(name, extra, sig, &rc);
    CHECK_MSG(took >= 0, "%s: the job did not start or rank 1 was not found", name);
    CHECK_MSG(took < limit, "%s: the job still ran %.0f s after rank 1 got signal %d", name, took, sig);
    CHECK_MSG(rc != 0 && strstr(out1, a) && strstr(out1, b), "%s: exit %d:\n%s", name, rc, out1);
    printf("    %s: the job ended %.1f s after rank 1 got signal %d\n", name, took, sig);
    return took >= 0 && !vg_test_failed_now();
}

VG_TEST(mpi_a_killed_rank_ends_the_job_naming_it_and_the_checkpoint_resumes) {
    NEED_MPI();
    REQUIRE(job_ends("killed", "", SIGKILL, 60, "rank 1", "signal 9"));
    /* the last checkpoint is whole: one process resumes from it for two more steps */
    char latest[512], target[512] = "";
    snprintf(latest, sizeof latest, "%s/killed/latest", root);
    ssize_t len = readlink(latest, target, sizeof target - 1);
    long long step = 0;
    REQUIRE(len > 0 && sscanf(strstr(target, "step-") ? strstr(target, "step-") + 5 : "", "%lld", &step) == 1 && step >= 10);
    char flags[700];
    snprintf(flags, sizeof flags, "--steps %lld --resume %s/killed --out %s/killed", step + 2, root, root);
    int rc = train(0, flags, out2, sizeof out2);
    CHECK_MSG(rc == 0 && strstr(out2, "resumed from"), "exit %d: %s", rc, out2);
}

/* a rank that stops answering (SIGSTOP: a frozen node, a dead link; mpirun sees nothing wrong):
 * the other rank gives up after --comm-timeout and ends the job with a message */
VG_TEST(mpi_a_rank_that_stops_answering_ends_the_job_after_the_timeout) {
    NEED_MPI();
    job_ends("frozen", "--comm-timeout 3", SIGSTOP, 30, "waited 3 s for the other ranks", "no answer from rank 1 (on ");
}

/* Ctrl-C reaching one rank stops every rank after the same step (vg_dist_any at the step
 * boundary): the job ends at once with rank 0's checkpoint of that step, exit 130, no timeout */
VG_TEST(mpi_sigint_to_one_rank_stops_every_rank_after_the_same_step) {
    NEED_MPI();
    char cmd[4096], log_path[512], csv[512], latest[512];
    snprintf(log_path, sizeof log_path, "%s/sigint.log", root);
    snprintf(csv, sizeof csv, "%s/sigint/metrics.csv", root);
    snprintf(latest, sizeof latest, "%s/sigint/latest", root);
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s " TINY " %s --steps 1000000 --save-every 0 --log-every 1 --comm-timeout 20 --out %s/sigint",
             train_mpi, data_flag, root);
    int mpirun = vg_test_spawn(cmd, log_path);          /* exec env … mpirun: the pid is mpirun's */
    pid_t victim = 0;
    for (double t0 = vg_now_s(); vg_now_s() - t0 < 60 && !victim; usleep(20000)) {
        FILE *f = fopen(csv, "r");
        int rows = 0, c;
        while (f && (c = fgetc(f)) != EOF) rows += c == '\n';
        if (f) fclose(f);
        if (rows > 3) victim = rank_pid(mpirun, 1);
    }
    if (!victim) { kill(mpirun, SIGKILL); vg_test_wait(mpirun); }
    REQUIRE(victim > 0);
    kill(victim, SIGINT);
    double t_sig = vg_now_s();
    int rc = vg_test_wait(mpirun);
    double took = vg_now_s() - t_sig;
    FILE *lf = fopen(log_path, "r");
    size_t n = lf ? fread(out1, 1, sizeof out1 - 1, lf) : 0;
    out1[n] = 0;
    if (lf) fclose(lf);
    const char *stop = strstr(out1, "stopped after step ");
    long long step = stop ? atoll(stop + strlen("stopped after step ")) : -1;
    char target[512] = "", want[64];
    ssize_t len = readlink(latest, target, sizeof target - 1);
    target[len > 0 ? len : 0] = 0;
    snprintf(want, sizeof want, "step-%08lld", step);
    CHECK_MSG(rc == 130 && stop && strstr(target, want) && !strstr(out1, "ending the whole job") && took < 30,
              "exit %d after %.1f s, latest -> %s:\n%s", rc, took, target, out1);
    printf("    SIGINT to rank 1: both ranks stopped after step %lld, %.1f s later, checkpoint %s\n", step, took, target);
    /* it resumes, with one process, for two more steps */
    char flags[700];
    snprintf(flags, sizeof flags, "--steps %lld --resume %s/sigint --out %s/sigint", step + 2, root, root);
    rc = train(0, flags, out2, sizeof out2);
    CHECK_MSG(rc == 0 && strstr(out2, "resumed from"), "exit %d: %s", rc, out2);
}

/* the bucketer itself over 2 ranks: every rank ends with the mean of both ranks' gradients */
VG_TEST(mpi_gradient_buckets_give_every_rank_the_mean_gradient) {
    NEED_MPI();
    char tool[1100], cmd[2048];
    snprintf(tool, sizeof tool, "%s", train_mpi);
    char *slash = strrchr(tool, '/');
    snprintf(slash ? slash + 1 : tool, sizeof tool - (size_t)(slash ? slash + 1 - tool : 0), "dist_check");
    if (access(tool, X_OK) != 0) VG_SKIP("no dist_check next to train-mpi (make test builds it with mpicc)");
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s", tool);
    int rc = vg_test_run(cmd, out1, sizeof out1);
    CHECK_MSG(rc == 0 && strstr(out1, "dist_check: ok"), "exit %d: %s", rc, out1);
    const char *ok = strstr(out1, "dist_check: ok");
    if (ok) printf("    %.*s\n", (int)strcspn(ok, "\n"), ok);
}
