/* test_reliability.c — ./train under faults. kill -9 at random moments (and inside
 * checkpoint writes) then resume: the same final weights and metrics as an uninterrupted run; a
 * full disk while checkpointing; checkpoints of another model, another dataset, or damaged;
 * SIGINT / SIGTERM stop gracefully; an --out holding a run is not overwritten; evaluation needs
 * no more memory than a training step. docs/reliability.md describes what each one holds. */
#include "base/clock.h"
#include "test.h"
#include "run_helpers.h"
#include "tensor/safetensors.h"
#include "tensor/tensor.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* a tiny model on a tiny CIFAR-10 (5 x 64 train images: 10 steps per epoch of 32) */
#define TINY "./train --dataset cifar10 --model vit-micro-cifar --dim 16 --depth 1 --heads 2 --batch 32 --threads 1 " \
             "--loader-threads 1 --eval-every 0 --seed 3 --drop 0.1 --lr 3e-3 --warmup 2s --log-every 1"
#define STEPS "60"

static char root[256];

static void sleep_s(double s) { struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}; nanosleep(&t, NULL); }

/* the data and the uninterrupted run ROOT/straight (60 steps, a checkpoint after each) */
static const char *setup(void) {
    if (root[0]) return root;
    snprintf(root, sizeof root, "/tmp/vitgrad-reliability-XXXXXX");
    if (!mkdtemp(root)) { root[0] = 0; return NULL; }
    char d[300], cmd[2048], out[8192];
    snprintf(d, sizeof d, "%s/cifar", root);
    mkdir(d, 0755);
    if (!vg_test_write_cifar(d)) return NULL;
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --save-every 1 --out %s/straight", root, root);
    if (vg_test_run(cmd, out, sizeof out) != 0) { fprintf(stderr, "%s\n", out); return NULL; }
    return root;
}

static bool file_exists(const char *p) { struct stat st; return stat(p, &st) == 0; }


/* the final weights and the loss rows of run `name` equal the uninterrupted run's */
static void check_same_as_straight(const char *name) {
    char a[512], b[512], la[16384], lb[16384];
    snprintf(a, sizeof a, "%s/straight/model.safetensors", root);
    snprintf(b, sizeof b, "%s/%s/model.safetensors", root, name);
    CHECK_MSG(vg_test_same_bytes(a, b), "%s: final weights differ from the uninterrupted run's", name);
    snprintf(a, sizeof a, "%s/straight/metrics.csv", root);
    snprintf(b, sizeof b, "%s/%s/metrics.csv", root, name);
    vg_test_loss_columns(a, la, sizeof la);
    vg_test_loss_columns(b, lb, sizeof lb);
    CHECK(vg_test_count_lines(a) >= 60);
    CHECK_MSG(!strcmp(la, lb), "%s: metrics.csv loss rows differ from the uninterrupted run's:\n%s\nvs\n%s", name, lb, la);
}

/* start ./train in the background (output into ROOT/NAME.log), stopped (SIGSTOP) once it has
 * logged `rows` rows of metrics.csv; returns its pid, or -1 when it ended before that */
static int start_and_pause(const char *cmd, const char *name, int rows) {
    char log[512], csv[512];
    snprintf(log, sizeof log, "%s/%s.log", root, name);
    snprintf(csv, sizeof csv, "%s/%s/metrics.csv", root, name);
    int pid = vg_test_spawn(cmd, log);
    for (double t0 = vg_now_s(); vg_now_s() - t0 < 120; sleep_s(0.005)) {
        if (vg_test_count_lines(csv) > rows) { kill(pid, SIGSTOP); return pid; }
        if (kill(pid, 0) != 0) break;
    }
    kill(pid, SIGKILL);
    vg_test_wait(pid);
    return -1;
}

/* ------------------------------------------------------------------ kill -9 */
VG_TEST(reliability_kill9_at_random_moments_then_resume_is_bit_exact) {
    REQUIRE(setup());
    const char *train_faults = vg_test_train_faults();
    if (!train_faults) VG_SKIP("no train-faults (make test builds it)");
    char cmd[2048], out[8192], log[512];
    /* ./train with the test faults (its bits are ./train's: the faults only add the kill points) */
    snprintf(cmd, sizeof cmd, "%s%s --data %s/cifar --steps " STEPS " --save-every 1 --out %s/killed --continue",
             train_faults, TINY + strlen("./train"), root, root);
    snprintf(log, sizeof log, "%s/killed.log", root);
    char csv[512];
    snprintf(csv, sizeof csv, "%s/killed/metrics.csv", root);
    vg_rng rng = vg_rng_seed(2222);
    int killed = 0, in_checkpoint = 0, finished = 0;
    for (int attempt = 0; attempt < 14 && !finished; attempt++) {
        int pid, rc;
        if (attempt % 3 == 2) {          /* SIGKILL at a kill point inside one of the next checkpoint writes */
            char k[64]; snprintf(k, sizeof k, "kill_in_checkpoint=%u", 1 + vg_rng_below(&rng, 8));
            setenv("VG_FAULT", k, 1);
            pid = vg_test_spawn(cmd, log);
            unsetenv("VG_FAULT");
            rc = vg_test_wait(pid);
            in_checkpoint += rc == 128 + SIGKILL;
        } else {                          /* kill -9 from outside: after 0-3 more logged steps, then 0-10 ms */
            int more = (int)vg_rng_below(&rng, 4);
            double extra = 0.010 * vg_rng_uniform(&rng);
            int rows0 = vg_test_count_lines(csv);
            pid = vg_test_spawn(cmd, log);
            for (double t0 = vg_now_s(); vg_test_count_lines(csv) < rows0 + more && vg_now_s() - t0 < 60; sleep_s(0.002)) {}
            sleep_s(extra);
            kill(pid, SIGKILL);
            rc = vg_test_wait(pid);
        }
        killed += rc == 128 + SIGKILL;
        finished = rc == 0;
        CHECK_MSG(rc == 0 || rc == 128 + SIGKILL, "attempt %d: exit %d", attempt, rc);
    }
    /* then to the end, resuming from whatever the kills left */
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "final run: exit %d: %s", rc, out);
    printf("    %d kills (%d inside checkpoint writes), then resumed to step " STEPS "\n", killed, in_checkpoint);
    CHECK_MSG(killed >= 10 && in_checkpoint >= 3, "only %d kills (%d in checkpoints): the runs finished too early", killed, in_checkpoint);
    check_same_as_straight("killed");
}

/* ------------------------------------------------------------------ signals */
/* the command ./train printed after "Continue with:" */
static bool printed_resume_command(const char *log_path, char *cmd, size_t n) {
    char *s = vg_test_read_file(log_path, NULL);
    const char *p = s ? strstr(s, "Continue with:\n  ") : NULL;
    if (p) {
        p += strlen("Continue with:\n  ");
        size_t len = strcspn(p, "\n");
        snprintf(cmd, n, "%.*s", (int)len, p);
    }
    free(s);
    return p != NULL;
}

VG_TEST(reliability_sigint_saves_prints_the_resume_command_and_resumes_exactly) {
    REQUIRE(setup());
    char cmd[2048], out[8192], log[512], resume[4096];
    /* SIGINT: the step finishes, a checkpoint is written, exit 130 with the command to continue */
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --save-every 0 --out %s/sigint", root, root);
    int pid = start_and_pause(cmd, "sigint", 5);
    REQUIRE(pid > 0);
    kill(pid, SIGINT);
    kill(pid, SIGCONT);
    int rc = vg_test_wait(pid);
    snprintf(log, sizeof log, "%s/sigint.log", root);
    char *text = vg_test_read_file(log, NULL);
    CHECK_MSG(rc == 130 && text && strstr(text, "(SIGINT); checkpoint ") && strstr(text, "--resume"), "exit %d: %s", rc, text);
    free(text);
    REQUIRE(printed_resume_command(log, resume, sizeof resume));
    rc = vg_test_run(resume, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "resumed from"), "`%s`: exit %d: %s", resume, rc, out);
    check_same_as_straight("sigint");

    /* SIGTERM: the same, exit 143 */
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --save-every 0 --out %s/sigterm", root, root);
    pid = start_and_pause(cmd, "sigterm", 3);
    REQUIRE(pid > 0);
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    rc = vg_test_wait(pid);
    snprintf(log, sizeof log, "%s/sigterm/latest/train_state.safetensors", root);
    CHECK_MSG(rc == 143 && file_exists(log), "SIGTERM: exit %d, checkpoint %s", rc, file_exists(log) ? "written" : "missing");

    /* a second signal before the step ends: exit at once; the last complete checkpoint still loads */
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --save-every 2 --out %s/twice", root, root);
    pid = start_and_pause(cmd, "twice", 5);
    REQUIRE(pid > 0);
    kill(pid, SIGINT);                    /* both pending while it is stopped (exit 128 + whichever is second) */
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    rc = vg_test_wait(pid);
    snprintf(log, sizeof log, "%s/twice.log", root);
    text = vg_test_read_file(log, NULL);
    CHECK_MSG((rc == 130 || rc == 143) && text && strstr(text, "second signal") && !strstr(text, "stopped after"), "exit %d: %s", rc, text);
    free(text);
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --eval-only --init %s/twice", root, root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "test top-1"), "the last checkpoint: exit %d: %s", rc, out);
}

/* a stop signal during an evaluation ends it after the current batch: the state of the last step
 * is saved, the partial evaluation is not logged, and the printed command resumes exactly */
VG_TEST(reliability_sigint_during_an_evaluation_stops_after_its_batch_and_resumes_exactly) {
    REQUIRE(setup());
    char cmd[2048], out[8192], resume[4096], path[600];
    /* an evaluation every 10 steps (an epoch) in batches of 16 of the 64 test images; SIGINT arrives
     * after the second batch of the first one (the test hook raises it, as Ctrl-C would) */
    const char *train_faults = vg_test_train_faults();
    if (!train_faults) VG_SKIP("no train-faults (make test builds it)");
    snprintf(cmd, sizeof cmd, "%s%s --data %s/cifar --steps " STEPS " --save-every 0 --eval-every 10 --eval-batch 16 --out %s/evalcut",
             train_faults, TINY + strlen("./train"), root, root);
    setenv("VG_FAULT", "sigint_in_eval=2", 1);
    int rc = vg_test_run(cmd, out, sizeof out);
    unsetenv("VG_FAULT");
    CHECK_MSG(rc == 130 && strstr(out, "stopped after step 10 (SIGINT, during the evaluation, which is not logged); checkpoint ") &&
              !strstr(out, "test top-1"), "exit %d: %s", rc, out);
    char target[512] = "";
    snprintf(path, sizeof path, "%s/evalcut/latest", root);
    ssize_t len = readlink(path, target, sizeof target - 1);
    target[len > 0 ? len : 0] = 0;
    CHECK_MSG(strstr(target, "step-00000010"), "latest -> %s", target);
    snprintf(path, sizeof path, "%s/evalcut/metrics.csv", root);
    char *csv = vg_test_read_file(path, NULL);
    CHECK_MSG(csv && strstr(csv, "\n10,1.0000,") && !strstr(csv, "\n10,1.0000,,"), "no test row for step 10:\n%s", csv);
    free(csv);
    snprintf(path, sizeof path, "%s/evalcut.log", root);
    FILE *f = fopen(path, "w");
    if (f) { fputs(out, f); fclose(f); }
    REQUIRE(printed_resume_command(path, resume, sizeof resume));
    rc = vg_test_run(resume, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "resumed from") && strstr(out, "step 20 (epoch 2.00): test loss"), "`%s`: exit %d: %s", resume, rc, out);
    check_same_as_straight("evalcut");
}

/* `make data` is advice for a dataset that is not there, not for one that is damaged */
VG_TEST(reliability_data_errors_suggest_make_data_only_when_the_data_is_missing) {
    REQUIRE(setup());
    char cmd[2048], out[8192], path[600];
    snprintf(cmd, sizeof cmd, "cp -r %s/cifar %s/badlabel", root, root);
    REQUIRE(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/badlabel/test_batch.bin", root);
    FILE *f = fopen(path, "r+b");
    REQUIRE(f);
    fputc(10, f);                                         /* the first record's label: 10 */
    fclose(f);
    snprintf(cmd, sizeof cmd, TINY " --data %s/badlabel --steps 2 --out %s/badlabel-run", root, root);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "test_batch.bin: record 0 has label 10, expected 0..9") && !strstr(out, "make data"), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, TINY " --data %s/no-such-dir --steps 2 --out %s/nodata-run", root, root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "No such file or directory") && strstr(out, "make data"), "exit %d: %s", rc, out);
}

/* ------------------------------------------------------------------ full disk */
VG_TEST(reliability_full_disk_during_a_checkpoint_keeps_the_previous_one) {
    REQUIRE(setup());
    if (geteuid() != 0) VG_SKIP("mounting a small tmpfs needs root (CI runs as root): full-disk test not run");
    char mnt[300], cmd[2048], out[8192], path[600];
    snprintf(mnt, sizeof mnt, "%s/small-disk", root);
    mkdir(mnt, 0755);
    /* room for two checkpoints (the pair and the one before it) but not for a third being written (no snapshots: --snapshots 0) */
    size_t bytes = 0;
    const char *files[] = {"model.safetensors", "train_state.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/straight/latest/%s", root, files[i]);
        struct stat st;
        REQUIRE(stat(path, &st) == 0);
        bytes += ((size_t)st.st_size + 4095) / 4096 * 4096;
    }
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=%zuk tmpfs %s", (bytes * 5 / 2 + 4096) / 1024, mnt);
    if (vg_test_run(cmd, out, sizeof out) != 0) VG_SKIP("cannot mount a tmpfs here: full-disk test not run");
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --save-every 1 --log-every 100 --snapshots 0 --out %s/run", root, mnt);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "No space left on device") && strstr(out, "latest is unchanged"), "exit %d: %s", rc, out);
    /* the previous checkpoint is whole: it evaluates, and the run resumes from it (to a fresh --out) */
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --eval-only --init %s/run", root, mnt);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "test top-1"), "eval of the previous checkpoint: exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps 4 --resume %s/run --out %s/after-full-disk", root, mnt, root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "resumed from") && strstr(out, "at step 2"), "resume: exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "umount %s", mnt);
    CHECK(vg_test_run(cmd, out, sizeof out) == 0);
}

/* ------------------------------------------------------------------ mismatched or damaged checkpoints */
VG_TEST(reliability_checkpoint_of_another_model_dataset_or_damaged_is_named) {
    REQUIRE(setup());
    char cmd[2048], out[8192], path[600];
    struct { const char *flags, *expect[2]; } cases[] = {
        /* resuming on another dataset */
        {"--resume %s/straight --dataset fashion-mnist --out %s/x1", {"saved by a run on --dataset cifar10", "resumed with --dataset fashion-mnist"}},
        /* weights of another model */
        {"--init %s/straight --dim 32 --depth 2 --out %s/x2", {"a checkpoint of another model", "embed_dim 16 (this run: 32), depth 1 (this run: 2)"}},
        {"--init %s/straight --dataset fashion-mnist --model vit-mnist --out %s/x3", {"another model", "in_chans 3 (this run: 1)"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char flags[1024];
        snprintf(flags, sizeof flags, cases[i].flags, root, root);
        snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps 4 %s", root, flags);
        int rc = vg_test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 1 && strstr(out, cases[i].expect[0]) && strstr(out, cases[i].expect[1]), "%s: exit %d: %s", flags, rc, out);
    }
    /* a damaged train_state next to a good model: truncated, then garbage */
    size_t n;
    snprintf(path, sizeof path, "%s/straight/latest/train_state.safetensors", root);
    char *state = vg_test_read_file(path, &n), *model = NULL;
    snprintf(path, sizeof path, "%s/straight/latest/model.safetensors", root);
    size_t nm;
    model = vg_test_read_file(path, &nm);
    REQUIRE(state && model && n > 1000);
    snprintf(path, sizeof path, "%s/damaged", root);
    mkdir(path, 0755);
    const struct { size_t len; const char *expect; } damage[] = {{n / 2, "truncated"}, {n, "header"}};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/damaged/model.safetensors", root);
        FILE *f = fopen(path, "wb"); fwrite(model, 1, nm, f); fclose(f);
        snprintf(path, sizeof path, "%s/damaged/train_state.safetensors", root);
        f = fopen(path, "wb");
        if (k == 1) memset(state + 8, '#', 64);            /* garbage in the JSON header */
        fwrite(state, 1, damage[k].len, f); fclose(f);
        snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps 4 --resume %s/damaged --out %s/damaged", root, root, root);
        int rc = vg_test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 1 && strstr(out, "train_state.safetensors") && strstr(out, damage[k].expect), "damage %d: exit %d: %s", k, rc, out);
    }
    /* bit rot: one bit of the model's last tensor flipped after it was written, the header intact —
     * the checksum names the tensor (the file is whole otherwise: it opens unverified) */
    snprintf(path, sizeof path, "%s/straight/latest/train_state.safetensors", root);
    free(state);
    state = vg_test_read_file(path, &n);
    REQUIRE(state);
    snprintf(path, sizeof path, "%s/damaged/train_state.safetensors", root);
    FILE *f = fopen(path, "wb"); fwrite(state, 1, n, f); fclose(f);
    model[nm - 3] ^= 0x04;
    snprintf(path, sizeof path, "%s/damaged/model.safetensors", root);
    f = fopen(path, "wb"); fwrite(model, 1, nm, f); fclose(f);
    char err[512] = "", want[300] = "", listed[300] = "";
    vg_st_file *sf = vg_st_open_unverified(path, err, sizeof err);
    REQUIRE(sf);
    const vg_st_tensor *last = NULL;                       /* the tensor holding the file's last bytes */
    for (size_t i = 0; i < vg_st_count(sf); i++)
        if (!last || (const char *)vg_st_at(sf, i)->data > (const char *)last->data) last = vg_st_at(sf, i);
    snprintf(want, sizeof want, "tensor \"%s\" is damaged", last->name);
    snprintf(listed, sizeof listed, "tensor \"%s\" (", last->name);
    vg_st_close(sf);
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps 4 --resume %s/damaged --out %s/damaged", root, root, root);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "damaged/model.safetensors") && strstr(out, want), "bit rot: exit %d, expected '%s': %s", rc, want, out);
    /* ./inspect verify lists the damaged tensor; a run directory's checkpoints are all whole */
    snprintf(cmd, sizeof cmd, "./inspect verify %s/damaged", root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "model.safetensors: DAMAGED") && strstr(out, listed) &&
              strstr(out, "train_state.safetensors: ok"), "inspect verify: exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "./inspect verify %s/straight", root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "(latest)") && strstr(out, "every CRC-32C matches") && !strstr(out, "DAMAGED"),
              "inspect verify: exit %d: %s", rc, out);
    free(state); free(model);
}

/* ------------------------------------------------------------------ no silent overwrite */
VG_TEST(reliability_an_out_dir_holding_a_run_is_not_overwritten) {
    REQUIRE(setup());
    char cmd[2048], out[8192], path[600];
    /* a finished run: refused without a flag, reported (not retrained) with --continue */
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --out %s/straight", root, root);
    int rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "already holds a run") && strstr(out, "--resume") && strstr(out, "--overwrite"), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps " STEPS " --out %s/straight --continue", root, root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "finished run (step 60 of 60)") && strstr(out, "test top-1: "), "exit %d: %s", rc, out);
    /* --overwrite starts over: the old checkpoints and metrics are gone */
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps 3 --save-every 1 --out %s/over", root, root);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, TINY " --data %s/cifar --steps 2 --save-every 1 --out %s/over --overwrite", root, root);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "removing the run"), "exit %d: %s", rc, out);
    snprintf(path, sizeof path, "%s/over/checkpoints/step-00000003", root);
    CHECK(!file_exists(path));
    snprintf(path, sizeof path, "%s/over/metrics.csv", root);
    CHECK(vg_test_count_lines(path) == 1 + 2 + 1);               /* header, 2 steps, the final evaluation */
}

/* ------------------------------------------------------------------ memory */
/* "peak RSS N MiB" in a program's output */
static long peak_rss(const char *out) {
    const char *p = strstr(out, "peak RSS ");
    return p ? atol(p + strlen("peak RSS ")) : -1;
}

VG_TEST(reliability_evaluation_needs_no_more_memory_than_a_training_step) {
#if defined(__SANITIZE_ADDRESS__)
    VG_SKIP("ASan build: resident memory is mostly the sanitizer's (vit_no_grad_forward_releases_each_block still runs)");
#endif
    REQUIRE(setup());
    char cmd[2048], out[16384];
    /* 64 px, patch 4: 257 tokens; attention weights (B, 4, 257, 257) dominate */
    const char *model = "--model vit-micro-cifar --img-size 64 --batch 16 --threads 2";
    snprintf(cmd, sizeof cmd, "./train %s --bench 1", model);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    long train = peak_rss(out);
    long eval[2];
    /* --eval-only evaluates a trained checkpoint (never a random model): one step makes one */
    snprintf(cmd, sizeof cmd, "./train --dataset cifar10 --data %s/cifar %s --steps 1 --eval-every 0 --out %s/mem", root, model, root);
    REQUIRE(vg_test_run(cmd, out, sizeof out) == 0);
    for (int k = 0; k < 2; k++) {    /* the default evaluation batch (--batch), then 4x that: all 64 test images */
        snprintf(cmd, sizeof cmd, "./train --dataset cifar10 --data %s/cifar %s --init %s/mem --eval-only%s", root, model, root,
                 k ? " --eval-batch 64" : "");
        int rc = vg_test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 0 && strstr(out, k ? "(batch 64)" : "(batch 16)"), "exit %d: %s", rc, out);
        eval[k] = peak_rss(out);
    }
    printf("    peak RSS: training step (batch 16) %ld MiB; --eval-only batch 16: %ld MiB, batch 64: %ld MiB\n", train, eval[0], eval[1]);
    REQUIRE(train > 0 && eval[0] > 0 && eval[1] > 0);
    CHECK(eval[0] <= train);
    CHECK(eval[1] <= train);      /* a block at a time: even 4x the batch stays under the training step */
}
