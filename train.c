/* train.c — train a Vision Transformer: ./train --help.
 *
 * The program that wires run/ together: flags (run/options.c) → model, weights (--init) or a
 * whole checkpoint (--resume, run/train_state.c) → data and the background loader → the loop of
 * training steps (run/step.c) with logging, evaluation (run/evaluate.c) and checkpoints, which
 * are safetensors pairs switched atomically (checkpoint/). A resumed run continues with exactly
 * the same numbers as an uninterrupted one. */
#include "checkpoint/checkpoint.h"
#include "gemm/gemm.h"
#include "isa/dispatch.h"
#include "checkpoint/model_meta.h"
#include "run/run.h"
#include "base/durable.h"
#include "dist/dist.h"
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN RUN_ERRLEN

/* ------------------------------------------------------------------ small utilities */
static bool dir_exists(const char *p) { struct stat st; return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

static const char *default_data_dir(const char *dataset) {
    const char *env = NULL, *cands[3] = {NULL, NULL, NULL};
    if (!strcmp(dataset, "cifar10")) {
        env = getenv("CIFAR10_DIR");
        cands[0] = "data/cifar-10-batches-bin"; cands[1] = "../shared/data/cifar-10-batches-bin";
    } else if (!strcmp(dataset, "imagefolder")) {
        env = getenv("IMAGENET_SUBSET_DIR");
        cands[0] = "../shared/data/imagenet-subset";
    } else {
        env = getenv("FASHION_MNIST_DIR");
        cands[0] = "/usr/share/datasets/fashion-mnist";
    }
    if (env && *env) return env;
    for (int i = 0; i < 3; i++) if (cands[i] && dir_exists(cands[i])) return cands[i];
    return cands[0];
}

/* ------------------------------------------------------------------ progress output */
static void progress(bool tty, int64_t step, int64_t total, int64_t epoch_step, int64_t epoch_steps, int epoch,
                     double ips, double loss, double lr, double eta) {
    if (tty) {
        int width = 24, filled = epoch_steps ? (int)(width * epoch_step / epoch_steps) : 0;
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = 0;
        printf("\repoch %3d [%s] %5lld/%lld  step %lld/%lld  %6.0f img/s  loss %.4f  lr %.2e  ETA %02d:%02d:%02d ",
               epoch + 1, bar, (long long)epoch_step, (long long)epoch_steps, (long long)step, (long long)total, ips, loss, lr,
               (int)(eta / 3600), (int)fmod(eta / 60, 60), (int)fmod(eta, 60));
        fflush(stdout);
    } else {
        printf("step %lld/%lld epoch %d  loss %.4f  lr %.3e  %.0f img/s  ETA %.0f s\n",
               (long long)step, (long long)total, epoch + 1, loss, lr, ips, eta);
        fflush(stdout);
    }
}

/* ------------------------------------------------------------------ main */
/* What main owns, released on every exit path by finish(). */
static struct {
    trainer t; bool model_ready;
    vg_dataset *train, *test;
    vg_loader *loader;
    FILE *csv; bool csv_tta;     /* csv_tta: metrics.csv has the tta_test_* columns */
} run_state;

/* rc 1 is an error this process may have alone (its data, its checkpoint): with several
 * processes it ends the whole job (the message was printed first), not only this process */
static int finish(int rc) {
    trainer *t = &run_state.t;
    if (rc == 1 && vg_dist_size() > 1) {
        fprintf(stderr, "train: rank %d (on %s) failed (the message above): ending the whole job\n", vg_dist_rank(), vg_dist_host());
        vg_dist_abort(rc);
    }
    if (run_state.csv) fclose(run_state.csv);
    run_snapshots_free(t);
    vg_loader_free(run_state.loader);
    vg_dataset_free(run_state.train); vg_dataset_free(run_state.test);
    vg_adamw_free(t->opt);
    vg_params_free(&t->params); vg_params_free(&t->state_dict); vg_params_free(&t->ema_state); vg_data_meta_free(&t->data);
    if (run_state.model_ready) vg_vit_free(&t->model);
    vg_grad_sync_free(t->sync);                 /* after the model: the gradients live in it */
    if (t->has_ema) vg_vit_free(&t->ema_model);
    vg_arena_free_all();
    vg_dist_finalize();
    return rc;
}

/* --threads default: this process's share of its node's cores (N processes on one machine must
 * not start N x cores threads), and never more than the cores it may run on */
static int default_threads(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int share = (int)(online > 0 ? online : 1) / vg_dist_local_size();
    int allowed = omp_get_num_procs();
    if (share > allowed) share = allowed;
    return share > 0 ? share : 1;
}

/* the start-up line: processes x threads and the host of each rank (collective) */
static void print_processes(void) {
    const int n = vg_dist_size();
    char (*hosts)[64] = calloc((size_t)n, 64);
    if (!hosts) return;
    vg_dist_hosts(hosts);
    printf("%s: %d process%s x %d threads", vg_dist_backend(), n, n > 1 ? "es" : "", omp_get_max_threads());
    for (int r = 0; r < n; r++) printf("%s%d on %s", r ? ", " : "; rank ", r, hosts[r]);
    printf("\n%s\n", vg_kernels_summary());                 /* isa/dispatch.c's choice */
    free(hosts);
}

/* The model: run/model_setup.c decides its configuration (the preset, the --resume checkpoint's,
 * or the --init file's; the class count from the data `test` in dir, NULL for --bench/--trace-shapes);
 * model_path and state_path get the checkpoint's files, empty without --resume/--init. */
static int build_model(options *o, const vg_dataset *test, const char *dir, char *model_path, char *state_path, size_t pathlen, char *err) {
    trainer *t = &run_state.t;
    vg_rng init_rng = vg_rng_seed(o->seed);
    t->dropout_rng = trainer_dropout_rng(o->seed);
    int rc = run_model_config(o, model_path, state_path, pathlen, test ? test->n_classes : 0, err);
    if (rc) return rc;
    const vg_vit_config *c = &o->vit;
    if (test && test->n_classes != c->num_classes) {
        snprintf(err, ERRLEN, "%.400s has %d classes, the model %d (%s)", dir, test->n_classes, c->num_classes,
                 o->resume ? "the checkpoint's head; to start a new head from its weights: --init"
                           : "pass --num-classes with the data's count, or leave it out");
        return -1;
    }
    if (test && test->channels != c->in_chans) {
        snprintf(err, ERRLEN, "%.400s has %d-channel images, the model expects %d (choose a matching --model)", dir, test->channels, c->in_chans);
        return -1;
    }
    if (!vg_vit_init(&t->model, c, &init_rng)) { snprintf(err, ERRLEN, "model: %.900s", vg_error()); return -1; }
    t->model.full_last_block = o->full_last_block;
    run_state.model_ready = true;
    vg_vit_params(&t->model, &t->params);
    vg_vit_state(&t->model, &t->state_dict);
    t->opt = vg_adamw_new(&t->params, o->wd);
    if (o->layer_decay > 0 && o->layer_decay < 1) run_layer_decay(t, o->layer_decay);
    if (o->muon && run_muon(t, o, err)) return -1;
    t->sync = vg_grad_sync_new(&t->params, (size_t)(o->bucket_mb * (1 << 20)), err, ERRLEN);
    return t->sync ? 0 : -1;
}

/* the test split (its class count and channels are checked against the model in build_model) */
static vg_dataset *open_test_split(const options *o, const char *dir, char *err) {
    vg_dataset *test = run_state.test = vg_dataset_open(o->dataset, dir, VG_SPLIT_TEST, err, ERRLEN);
    if (!test && !strcmp(o->dataset, "cifar10") && strstr(err, strerror(ENOENT))) strncat(err, "\n(run `make data` to download CIFAR-10, or pass --data DIR)", ERRLEN - strlen(err) - 1);
    return test;
}

/* the length of the run in steps and its lr schedule; --warmup counts epochs when training by
 * --epochs, steps with --steps, unless a suffix says */
static vg_lr_schedule make_schedule(const options *o, int64_t per_epoch) {
    int64_t total = o->steps > 0 ? o->steps : per_epoch * o->epochs;
    int64_t warmup = o->warmup < 0 ? total / 10 : run_length_steps(o->warmup, o->warmup_unit, o, per_epoch);
    return (vg_lr_schedule){o->lr, o->min_lr, warmup, total};
}

/* evaluate on the test split (and the weight EMA's, with --model-ema), print and log it; at the
 * end of the run also the report. 1: a stop signal cut it short (nothing logged) */
static int eval_and_log(const options *o, const vg_dataset *test, int64_t per_epoch, int64_t total, double wall, char *err) {
    trainer *t = &run_state.t;
    const bool flip = !strcmp(o->tta, "flip");
    bool ok; eval_result r = trainer_evaluate(t, test, o->eval_batch, o->loader_threads, flip, err, &ok);
    if (!ok || r.interrupted) { free(r.confusion); return ok ? 1 : -1; }
    eval_result e = {0};
    char ema[96] = "";
    if (t->has_ema) {
        e = model_evaluate(&t->ema_model, test, o->eval_batch, o->loader_threads, false, err, &ok);
        free(e.confusion);
        if (!ok || e.interrupted) { free(r.confusion); return ok ? 1 : -1; }
        snprintf(ema, sizeof ema, "; EMA weights: test loss %.4f, test top-1 %.2f%%", e.loss, 100 * e.acc);
    }
    char tta[96] = "";
    if (flip) snprintf(tta, sizeof tta, "; flip TTA: test loss %.4f, test top-1 %.2f%%", r.tta_loss, 100 * r.tta_acc);
    printf("step %lld (epoch %.2f): test loss %.4f, test top-1 %.2f%%%s%s, wall %.0f s\n", (long long)t->step,
           (double)t->step / (double)per_epoch, r.loss, 100 * r.acc, tta, ema, wall);
    fprintf(run_state.csv, "%lld,%.4f,,,,%.6f,%.4f,,%.1f,", (long long)t->step, (double)t->step / (double)per_epoch, r.loss, r.acc, wall);
    if (t->has_ema) fprintf(run_state.csv, "%.6f,%.4f", e.loss, e.acc);
    else fputc(',', run_state.csv);
    if (run_state.csv_tta) { if (flip) fprintf(run_state.csv, ",%.6f,%.4f", r.tta_loss, r.tta_acc); else fputs(",,", run_state.csv); }
    fputc('\n', run_state.csv);
    fflush(run_state.csv);
    if (t->step == total && vg_dist_rank() == 0) {
        eval_report_print(&r, test, stdout);
        char cpath[2100];
        snprintf(cpath, sizeof cpath, "%s/confusion.txt", o->out);
        FILE *cf = fopen(cpath, "w");
        if (cf) { eval_report_print(&r, test, cf); fclose(cf); }
    }
    free(r.confusion);
    return 0;
}

#define FAIL() do { fprintf(stderr, "train: %s\n", err); return finish(1); } while (0)
/* rc 2: a refusal (usage, exit status 2), else an error */
#define CHECKED(call) do { int rc_ = (call); if (rc_) { fprintf(stderr, "train: %s\n", err); return finish(rc_ == 2 ? 2 : 1); } } while (0)

int main(int argc, char **argv) {
    options o = vg_options_parse(argc, argv);
    char err[ERRLEN];
    if (vg_dist_init(&argc, &argv, err, sizeof err)) { fprintf(stderr, "train: %s\n", err); return 1; }
    vg_dist_set_timeout(o.comm_timeout);
    const int rank = vg_dist_rank(), nproc = vg_dist_size();
    if (o.batch % nproc) {                          /* every process decides the same, before any work */
        if (rank == 0) fprintf(stderr, "train: --batch: %d is not divisible by the %d processes (each takes --batch / N "
                                       "of every global batch)\n", o.batch, nproc);
        return finish(2);
    }
    if (rank > 0 && !freopen("/dev/null", "w", stdout)) return finish(1);   /* logs from rank 0 only */
    omp_set_num_threads(o.threads > 0 ? o.threads : default_threads());
    if (o.amp && (!vg_autocast_set(true) || !vg_gemm_bf16_use(o.amp_kernel))) { fprintf(stderr, "train: --amp: %s\n", vg_error()); return finish(2); }
    trainer *t = &run_state.t;
    char model_path[4096] = "", state_path[4096] = "";
    /* every rank reads --out (rank 0 alone may clear it) before any rank writes there */
    if (run_dir_prepare(&o, rank == 0, err)) FAIL();
    vg_dist_any(false);
    /* the data's class count shapes the model; an error opening it is reported after the checkpoint's */
    const char *dir = o.data ? o.data : default_data_dir(o.dataset);
    char data_err[ERRLEN] = "";
    vg_dataset *test = o.bench || o.trace_shapes ? NULL : open_test_split(&o, dir, data_err);
    CHECKED(build_model(&o, test, dir, model_path, state_path, sizeof model_path, err));
    print_processes();
    if (o.trace_shapes) {
        printf("model %s: %lld parameters\n", o.model, (long long)vg_vit_param_count(&t->model.cfg));
        return finish(vg_vit_trace(&t->model, 2, stdout) ? 0 : 1);
    }
    if (o.bench) return finish(trainer_bench(t, &o));
    /* an evaluation loads the file as it is (never a new head: run/model_setup.c) */
    if (model_path[0] && trainer_load_weights(t, model_path, o.interp, o.resume || o.eval_only, err)) FAIL();
    if (o.model_ema && trainer_ema_init(t, err)) FAIL();
    if (!test) { snprintf(err, ERRLEN, "%s", data_err); FAIL(); }
    CHECKED(run_data_setup(t, &o, test, dir, model_path, err));     /* class names, normalisation */
    if (o.eval_only) { if (run_eval_only(t, &o, test, err)) FAIL(); return finish(0); }
    vg_dataset *train = run_state.train = vg_dataset_open(o.dataset, dir, VG_SPLIT_TRAIN, err, sizeof err);
    if (!train || run_data_train_split(t, &o, train, test, rank == 0, err)) FAIL();
    vg_loader_config lc = vg_loader_config_default();
    lc.batch_size = o.batch * o.grad_accum_steps;      /* one loader batch per optimizer step */
    lc.train = 1; lc.image_size = t->model.cfg.img_size;
    lc.n_threads = o.loader_threads; lc.seed = o.seed;
    lc.shard = rank; lc.n_shards = nproc;           /* this process's slice of every global batch */
    lc.randaugment = o.aa != NULL; lc.reprob = o.reprob;
    if (o.aa && vg_randaugment_parse(o.aa, &lc.ra, err, sizeof err)) FAIL();
    lc.aug = !strcmp(o.aug, "none") ? VG_AUG_NONE : !strcmp(o.aug, "crop") ? VG_AUG_PAD_CROP : !strcmp(o.aug, "rrc") ? VG_AUG_RRC : VG_AUG_AUTO;
    vg_loader *loader = run_state.loader = vg_loader_new(train, &lc, err, sizeof err);
    if (!loader) FAIL();
    int64_t per_epoch = vg_loader_batches_per_epoch(loader);
    if (per_epoch < 1) { fprintf(stderr, "train: %s: %d training images is less than one batch of %d\n", dir, train->n, lc.batch_size); return finish(1); }
    vg_lr_schedule sched = make_schedule(&o, per_epoch);
    if (run_patch_drop_schedule(&o, per_epoch, sched.total_steps, err)) FAIL();
    int64_t total = sched.total_steps, unit = o.every_in_steps ? 1 : per_epoch;   /* --eval-every / --save-every unit */

    if (state_path[0] && o.resume) {
        vg_loader_state ls;
        if (trainer_load_state(t, state_path, &ls, lc.batch_size, err) || vg_loader_state_set(loader, &ls, err, sizeof err)) FAIL();
        printf("resumed from %s at step %lld\n", state_path, (long long)t->step);
        if (t->step >= total) { run_dir_report_finished(o.out, t->step, total); return finish(0); }
        if (rank == 0 && run_dir_trim_metrics(o.out, t->step, err)) FAIL();
    }
    /* rank 0 writes the outputs (metrics.csv, checkpoints, confusion.txt); the others /dev/null */
    char mkerr[512];
    if (rank == 0 && vg_mkdir_p(o.out, mkerr, sizeof mkerr)) { fprintf(stderr, "train: cannot create the output directory: %s\n", mkerr); return finish(1); }
    if (rank == 0) run_dir_log_command(o.out, argc, argv, nproc, omp_get_max_threads());
    char csv_path[2100];
    if (rank == 0) snprintf(csv_path, sizeof csv_path, "%s/metrics.csv", o.out);
    else snprintf(csv_path, sizeof csv_path, "/dev/null");
    FILE *csv = run_state.csv = fopen(csv_path, t->step > 0 ? "a" : "w");
    if (!csv) { fprintf(stderr, "train: %s: %s\n", csv_path, strerror(errno)); return finish(1); }
    fseek(csv, 0, SEEK_END);
    if (ftell(csv) == 0) fprintf(csv, "step,epoch,loss,lr,train_acc,test_loss,test_acc,images_per_s,wall_s,ema_test_loss,ema_test_acc,tta_test_loss,tta_test_acc\n");
    fflush(csv);
    run_state.csv_tta = run_dir_metrics_has(csv_path, "tta_test_acc");     /* a run begun before the columns: without them */
    if (rank == 0 && run_snapshots_start(t, &o, total, unit, err)) FAIL();   /* OUT/snapshots: ./inspect report */

    bool tty = isatty(STDOUT_FILENO);
    char accum[64] = "";
    if (o.grad_accum_steps > 1) snprintf(accum, sizeof accum, " (%d micro-batches of %d)", o.grad_accum_steps, o.batch);
    printf("training %s (%lld parameters, %d classes) on %s: %d train / %d test images, %lld steps (%lld per epoch), "
           "batch %d%s, lr %g, warmup %lld steps, %d threads%s%s; eval every %lld, save every %lld %s\n",
           o.model, (long long)vg_vit_param_count(&t->model.cfg), t->model.cfg.num_classes, dir, train->n, test->n, (long long)total,
           (long long)per_epoch, lc.batch_size, accum, o.lr, (long long)sched.warmup_steps, omp_get_max_threads(),
           o.amp ? ", --amp: " : "", o.amp ? run_amp_describe() : "",
           (long long)o.eval_every, (long long)o.save_every, o.every_in_steps ? "steps" : "epochs");
    if (o.patch_drop_until_step >= 0) printf("patch dropout %g until step %lld, then every patch\n", t->model.cfg.patch_drop_rate, (long long)o.patch_drop_until_step);
    double t_start = vg_now_s(), t_log = t_start;
    int64_t last_saved = -1, log_n = 0, log_correct = 0, log_images = 0;
    double log_loss = 0;
    char last_ckpt[2200] = "";
    vg_batch b;
    run_stop_install();                                     /* Ctrl-C from here on: save, then stop */
    while (t->step < total) {
        if (vg_loader_next(loader, &b) != 1) continue;      /* epoch boundary */
        double lr = vg_lr_at(&sched, t->step);
        int64_t correct; double gnorm = 0;
        run_snapshots_before_step(t);
        double loss = trainer_step(t, &o, &b, lr, &correct, &gnorm);
        if (!isfinite(loss)) {
            if (tty) printf("\n");
            fprintf(stderr, "train: step %lld: the loss is %s (gradient norm %g); stopping. ", (long long)t->step + 1,
                    isnan(loss) ? "NaN" : "infinite", gnorm);
            if (last_ckpt[0]) fprintf(stderr, "The last good checkpoint is %s (step %lld), untouched.\n", last_ckpt, (long long)last_saved);
            else fprintf(stderr, "No checkpoint was saved in this run.\n");
            fprintf(stderr, "Try a lower --lr, a smaller --clip, or a longer --warmup.\n");
            return finish(3);
        }
        if (run_snapshots_after_step(t, err)) FAIL();
        log_loss += loss; log_correct += correct; log_images += b.global_n; log_n++;
        int64_t epoch = (t->step - 1) / per_epoch;
        bool epoch_end = t->step % per_epoch == 0 || t->step == total;
        double wall = t->wall_offset + vg_now_s() - t_start;
        if (t->step % o.log_every == 0 || epoch_end) {
            double ips = log_images / (vg_now_s() - t_log);
            double eta = (vg_now_s() - t_log) / (double)log_n * (double)(total - t->step);
            progress(tty, t->step, total, (t->step - 1) % per_epoch + 1, per_epoch, (int)epoch, ips, log_loss / (double)log_n, lr, eta);
            fprintf(csv, "%lld,%.4f,%.6f,%.6e,%.4f,,,%.1f,%.1f,,%s\n", (long long)t->step, (double)t->step / (double)per_epoch,
                    log_loss / (double)log_n, lr, (double)log_correct / (double)log_images, ips, wall, run_state.csv_tta ? ",," : "");
            fflush(csv);
            log_n = 0; log_loss = 0; log_correct = 0; log_images = 0; t_log = vg_now_s();
        }
        bool at_unit = t->step % unit == 0, do_eval = run_eval_due(&o, t->step, total, unit);
        /* a stop signal on any rank stops every rank after the same step (one collective per step) */
        bool interrupted = vg_dist_any(run_stop_signal() != 0);
        bool stop_now = (o.stop_at > 0 && t->step == o.stop_at) || (interrupted && t->step < total), eval_cut = false;
        bool do_save = t->step == total || stop_now || (o.save_every > 0 && at_unit && (t->step / unit) % o.save_every == 0);
        if (do_eval) {
            if (tty) printf("\n");
            int rc = eval_and_log(&o, test, per_epoch, total, wall, err);
            if (rc < 0) FAIL();
            if (rc > 0) interrupted = stop_now = do_save = eval_cut = true;   /* a signal during the evaluation */
            t_log = vg_now_s();
        }
        if (do_save) {
            if (rank == 0 && trainer_save_checkpoint(t, &o, &sched, loader, wall, err)) {
                fprintf(stderr, "train: checkpoint: %s\n(%s/latest is unchanged: it names the last complete checkpoint, if any)\n", err, o.out);
                return finish(1);
            }
            last_saved = t->step;
            snprintf(last_ckpt, sizeof last_ckpt, "%s/checkpoints/step-%08lld", o.out, (long long)t->step);
            t_log = vg_now_s();
        }
        if (stop_now) {
            char cmd[8192];
            run_resume_command(argc, argv, o.out, cmd, sizeof cmd);
            if (tty) printf("\n");
            printf("stopped after step %lld (%s%s); checkpoint %s. Continue with:\n  %s\n", (long long)t->step,
                   interrupted ? (run_stop_signal() == SIGTERM ? "SIGTERM" : "SIGINT") : "--stop-at",
                   eval_cut ? ", during the evaluation, which is not logged" : "", last_ckpt, cmd);
            if (interrupted) return finish(128 + (run_stop_signal() ? run_stop_signal() : SIGINT));
            break;
        }
    }
    double wait = vg_loader_wait_seconds(loader), total_s = vg_now_s() - t_start;
    printf("done: %lld steps in %.1f s; data-loader wait %.2f s (%.2f%% of the time); peak RSS %ld MiB\n",
           (long long)t->step, total_s, wait, total_s > 0 ? 100 * wait / total_s : 0.0, run_peak_rss_mib());
    int64_t dropped; double g_drop, g_full, tflop = trainer_compute_tflop(t, &o, &dropped, &g_drop, &g_full);
    printf("compute: %.1f TFLOP in total (%lld training images x %.4f GFLOP per image per step", tflop, (long long)dropped, g_drop);
    if (t->images > dropped) printf(", then %lld x %.4f with every patch", (long long)(t->images - dropped), g_full);
    if (t->opt->muon) printf(", and %lld steps x %.3f GFLOP of Muon's Newton-Schulz", (long long)t->step, vg_muon_flops(t->opt) / 1e9);
    printf(")\n");
    printf("weights: %s/model.safetensors%s\n", o.out, t->has_ema ? " (the weight average: model_ema.safetensors)" : "");
    return finish(0);
}
