/* test_launch.c — ./launch (launcher/launch.c): a job whose process is killed at random moments is
 * restarted from its last checkpoint until it finishes, with the same final weights and loss rows
 * as an uninterrupted run; failures a restart cannot cure (a bad flag, a graceful stop) are not
 * restarted; with mpirun, a rank killed by SIGKILL is restarted on as many ranks, or on fewer
 * with --min-ranks. The MPI part needs mpirun and the MPI build (VG_TRAIN_MPI), else it skips. */
#include "base/clock.h"
#include "test.h"
#include "run_helpers.h"
#include "tensor/tensor.h"
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the tiny model of tests/test_reliability.c (10 steps per epoch of 32 on 320 images) */
#define TINY_FLAGS "--dataset cifar10 --model vit-micro-cifar --dim 16 --depth 1 --heads 2 --batch 32 --threads 1 " \
                   "--loader-threads 1 --eval-every 0 --seed 3 --drop 0.1 --lr 3e-3 --warmup 2s --log-every 1"
#define MPIRUN "env ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " \
               "mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo "      \
               "--mca oob_tcp_if_include lo"

static char root[256], train_bin[1100];

static void sleep_s(double s) { struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}; nanosleep(&t, NULL); }

/* the data, once */
static const char *setup(void) {
    if (root[0]) return root;
    const char *bin = getenv("VG_BIN");
    snprintf(train_bin, sizeof train_bin, "%s%s/train", vg_test_exec_wrapper(), bin && *bin ? bin : ".");
    snprintf(root, sizeof root, "/tmp/vitgrad-launch-XXXXXX");
    if (!mkdtemp(root)) { root[0] = 0; return NULL; }
    char d[300];
    snprintf(d, sizeof d, "%s/cifar", root);
    mkdir(d, 0755);
    if (!vg_test_write_cifar(d)) return NULL;
    return root;
}


/* pid runs (not a zombie waiting to be reaped) */
static bool alive(int pid) {
    char p[64], buf[256];
    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f) return false;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    const char *close = strrchr(buf, ')');
    return close && close[1] == ' ' && close[2] != 'Z';
}

/* a child of `parent` (from /proc), or 0 */
static int child_of(int parent) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        int pid = atoi(e->d_name);
        if (pid <= 0) continue;
        char p[64], buf[512];
        snprintf(p, sizeof p, "/proc/%d/stat", pid);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        const char *close = strrchr(buf, ')');     /* "pid (comm) S ppid …" */
        int ppid = 0;
        if (close && sscanf(close + 1, " %*c %d", &ppid) == 1 && ppid == parent) found = pid;
    }
    if (d) closedir(d);
    return found;
}

/* the OMPI_COMM_WORLD_RANK=rank process among the descendants of pid (depth ≤ 3), or 0 */
static int rank_below(int pid, int rank, int depth) {
    if (depth > 3) return 0;
    char want[64];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *d = opendir("/proc");
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        int c = atoi(e->d_name);
        if (c <= 0) continue;
        char p[64], buf[512];
        snprintf(p, sizeof p, "/proc/%d/stat", c);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        const char *close = strrchr(buf, ')');
        int ppid = 0;
        if (!close || sscanf(close + 1, " %*c %d", &ppid) != 1 || ppid != pid) continue;
        static char env[65536];
        snprintf(p, sizeof p, "/proc/%d/environ", c);
        f = fopen(p, "rb");
        size_t n = f ? fread(env, 1, sizeof env - 1, f) : 0;
        if (f) fclose(f);
        for (size_t i = 0; i < n; i += strlen(env + i) + 1)
            if (!strcmp(env + i, want)) { found = c; break; }
        if (!found) found = rank_below(c, rank, depth + 1);
    }
    if (d) closedir(d);
    return found;
}

/* the final weights and loss rows of run `name` equal those of run `ref` */
static void check_same(const char *ref, const char *name) {
    char a[512], b[512], la[16384], lb[16384];
    snprintf(a, sizeof a, "%s/%s/model.safetensors", root, ref);
    snprintf(b, sizeof b, "%s/%s/model.safetensors", root, name);
    CHECK_MSG(vg_test_same_bytes(a, b), "%s: final weights differ from %s's", name, ref);
    snprintf(a, sizeof a, "%s/%s/metrics.csv", root, ref);
    snprintf(b, sizeof b, "%s/%s/metrics.csv", root, name);
    vg_test_loss_columns(a, la, sizeof la);
    vg_test_loss_columns(b, lb, sizeof lb);
    CHECK_MSG(la[0] && !strcmp(la, lb), "%s: metrics.csv loss rows differ from %s's:\n%s\nvs\n%s", name, ref, lb, la);
}

/* how many lines of OUT/launch.log contain `what` */
static int log_lines(const char *name, const char *what) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s/launch.log", root, name);
    char *s = vg_test_read_file(p, NULL);
    int n = 0;
    for (char *q = s; q && (q = strstr(q, what)); q += strlen(what)) n++;
    free(s);
    return n;
}

/* Spawn cmd (./launch …) and kill -9 the process found by victim() `kills` times at seeded random
 * moments: once the job has logged 1–4 more rows of OUT/metrics.csv, plus 0–20 ms. Returns the
 * launcher's exit status; *done gets the number of kills made. */
static int launch_and_kill(const char *cmd, const char *name, int kills, int (*victim)(int), uint64_t seed, int *done) {
    char log[512], csv[512];
    snprintf(log, sizeof log, "%s/%s.log", root, name);
    snprintf(csv, sizeof csv, "%s/%s/metrics.csv", root, name);
    int launcher = vg_test_spawn(cmd, log);
    vg_rng rng = vg_rng_seed(seed);
    *done = 0;
    for (int k = 0; k < kills; k++) {
        int more = 1 + (int)vg_rng_below(&rng, 4), r0 = vg_test_count_lines(csv), v = 0;
        double extra = 0.020 * vg_rng_uniform(&rng), t0 = vg_now_s();
        while (vg_now_s() - t0 < 60 && alive(launcher) && (vg_test_count_lines(csv) < r0 + more || !(v = victim(launcher)))) sleep_s(0.002);
        if (!v) break;                                 /* the job finished first */
        sleep_s(extra);
        if (kill(v, SIGKILL) == 0) (*done)++;
        for (t0 = vg_now_s(); vg_now_s() - t0 < 30 && alive(v);) sleep_s(0.005);
    }
    return vg_test_wait(launcher);
}

static int train_process(int launcher) { return child_of(launcher); }

VG_TEST(launch_restarts_a_killed_train_until_it_finishes_bit_exact) {
    REQUIRE(setup());
    char cmd[4096], out[16384];
    snprintf(cmd, sizeof cmd, "%s " TINY_FLAGS " --data %s/cifar --steps 60 --save-every 1 --out %s/straight", train_bin, root, root);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, "./launch --max-restarts 10 --delay 0 -- %s " TINY_FLAGS " --data %s/cifar --steps 60 --save-every 1 --out %s/launched",
             train_bin, root, root);
    int kills, rc = launch_and_kill(cmd, "launched", 6, train_process, 3131, &kills);
    int restarts = log_lines("launched", "restart ");
    CHECK_MSG(rc == 0 && kills >= 4 && restarts == kills && log_lines("launched", "the job finished after") == 1,
              "exit %d, %d kills, %d restarts logged", rc, kills, restarts);
    printf("    %d kills of ./train at random moments, %d restarts, final weights compared\n", kills, restarts);
    check_same("straight", "launched");

    /* a bad flag is not restarted: exit 2 at once */
    snprintf(cmd, sizeof cmd, "./launch --max-restarts 5 -- %s --no-such-flag --out %s/badflag", train_bin, root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--no-such-flag") && strstr(out, "a usage error; not restarting") && !strstr(out, "restart 1"),
              "exit %d: %s", rc, out);
    /* nor a graceful stop: SIGINT to the launcher reaches ./train, which saves and exits 130 */
    snprintf(cmd, sizeof cmd, "./launch --max-restarts 5 -- %s " TINY_FLAGS " --data %s/cifar --steps 100000 --save-every 0 --out %s/stopped",
             train_bin, root, root);
    char log[512], csv[512];
    snprintf(log, sizeof log, "%s/stopped.log", root);
    snprintf(csv, sizeof csv, "%s/stopped/metrics.csv", root);
    int launcher = vg_test_spawn(cmd, log);
    for (double t0 = vg_now_s(); vg_now_s() - t0 < 60 && vg_test_count_lines(csv) < 5;) sleep_s(0.01);
    kill(launcher, SIGINT);
    rc = vg_test_wait(launcher);
    char *text = vg_test_read_file(log, NULL);
    CHECK_MSG(rc == 130 && text && strstr(text, "(SIGINT); checkpoint") && strstr(text, "not restarting") && !strstr(text, "restart 1"),
              "exit %d: %s", rc, text);
    free(text);
}

/* ------------------------------------------------------------------ with mpirun */
static char train_mpi[1024];
static bool mpi_ready(void) {
    const char *t = getenv("VG_TRAIN_MPI");
    if (!t || access(t, X_OK) != 0 || system("command -v mpirun >/dev/null 2>&1") != 0) return false;
    snprintf(train_mpi, sizeof train_mpi, "%s", t);
    return setup() != NULL;
}
static int rank_1(int launcher) { return rank_below(launcher, 1, 0); }

VG_TEST(launch_restarts_an_mpi_job_after_a_rank_is_killed) {
    if (!mpi_ready()) VG_SKIP("no mpirun or no MPI build of train (make test builds build/train-mpi when mpicc is present)");
    char cmd[4096], out[16384];
    /* 2 ranks, rank 1 killed 3 times at random moments: the same weights as an undisturbed 2-rank run */
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s " TINY_FLAGS " --data %s/cifar --steps 60 --save-every 1 --out %s/mpi-straight",
             train_mpi, root, root);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, "./launch --max-restarts 6 --delay 0 -- " MPIRUN " -np 2 %s " TINY_FLAGS " --data %s/cifar --steps 60 "
             "--save-every 1 --out %s/mpi-launched", train_mpi, root, root);
    int kills, rc = launch_and_kill(cmd, "mpi-launched", 3, rank_1, 4242, &kills);
    int restarts = log_lines("mpi-launched", "restart ");
    CHECK_MSG(rc == 0 && kills >= 2 && restarts == kills, "exit %d, %d kills of rank 1, %d restarts logged", rc, kills, restarts);
    printf("    %d kills of rank 1 at random moments, %d restarts on 2 ranks\n", kills, restarts);
    check_same("mpi-straight", "mpi-launched");

    /* --min-ranks 1: after rank 1 is killed the job goes on with 1 rank and finishes */
    snprintf(cmd, sizeof cmd, "./launch --max-restarts 2 --min-ranks 1 --delay 0 -- " MPIRUN " -np 2 %s " TINY_FLAGS
             " --data %s/cifar --steps 60 --save-every 1 --out %s/mpi-fewer", train_mpi, root, root);
    rc = launch_and_kill(cmd, "mpi-fewer", 1, rank_1, 77, &kills);
    CHECK_MSG(rc == 0 && kills == 1 && log_lines("mpi-fewer", "on 1 rank") == 1 && log_lines("mpi-fewer", "the job finished") == 1,
              "exit %d, %d kills", rc, kills);

    /* SIGINT to the launcher: passed to the ranks (not to mpirun, which would end them before they
     * save): every rank stops after the same step, the checkpoint is written, exit 130, no restart */
    snprintf(cmd, sizeof cmd, "./launch --max-restarts 5 -- " MPIRUN " -np 2 %s " TINY_FLAGS " --data %s/cifar --steps 100000 "
             "--save-every 0 --out %s/mpi-stopped", train_mpi, root, root);
    char log[512], csv[512], latest[512];
    snprintf(log, sizeof log, "%s/mpi-stopped.log", root);
    snprintf(csv, sizeof csv, "%s/mpi-stopped/metrics.csv", root);
    snprintf(latest, sizeof latest, "%s/mpi-stopped/latest/train_state.safetensors", root);
    int launcher = vg_test_spawn(cmd, log);
    for (double t0 = vg_now_s(); vg_now_s() - t0 < 60 && vg_test_count_lines(csv) < 5;) sleep_s(0.01);
    kill(launcher, SIGINT);
    rc = vg_test_wait(launcher);
    char *text = vg_test_read_file(log, NULL);
    struct stat st;
    CHECK_MSG(rc == 130 && stat(latest, &st) == 0 && text && strstr(text, "not restarting") && !strstr(text, "restart 1"),
              "exit %d, checkpoint %s: %s", rc, stat(latest, &st) == 0 ? "written" : "missing", text);
    free(text);
}
