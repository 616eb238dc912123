/* launcher/launch.c — ./launch: run a training job and restart it from its last checkpoint when it fails for
 * a reason a restart can cure (a lost rank, a rank that stopped answering), as torchrun
 * --max-restarts does.
 *
 *   ./launch [--max-restarts N] [--min-ranks M] [--grace S] [--delay S] -- ./train ARGS…
 *   ./launch [...] -- mpirun -np 4 [MPIRUN OPTIONS] ./train-mpi ARGS…
 *
 * What is restarted, and how:
 *   - ./train's exit status says what happened (docs/reliability.md): 0 done; 1 an error (bad data,
 *     a bad checkpoint, a full disk), 2 a bad flag, 3 a NaN loss, 130/143 a graceful stop (Ctrl-C,
 *     SIGTERM): a restart cannot cure these, the launcher stops with that status. Anything else —
 *     4 (a collective timed out: a rank died or cannot be reached), a process killed by a signal,
 *     mpirun's statuses for a lost rank or daemon (137 for a rank killed by SIGKILL, …) — is
 *     restarted, at most --max-restarts times.
 *   - A restart continues the run in --out: the command again with --resume OUT when OUT has a
 *     checkpoint (its --resume/--init/--overwrite/--continue removed), else with --overwrite (the
 *     failed attempt left nothing worth keeping). Resume is bit-exact (run/train_state.c), so with
 *     the same number of ranks the final weights equal an uninterrupted run's.
 *   - --min-ranks M (with mpirun): each restart runs on one rank fewer than the attempt that
 *     failed, never below M, and on a count that divides --batch (the surviving nodes go on; the
 *     checkpoint resumes on any count: docs/distributed.md). Without it the count stays.
 *   - When the job said it is ending ("… ending the job": a rank timed out or failed) but mpirun
 *     is still running --grace seconds later — Open MPI waits for the daemon of an unreachable node
 *     before it exits, up to the TCP retransmission timeout — the launcher ends it (SIGTERM, then
 *     SIGKILL to its process group).
 *   - Each attempt and restart is logged on stderr and appended to OUT/launch.log.
 *   - SIGINT/SIGTERM to the launcher go to the job, which saves and stops (under mpirun to the
 *     ranks on this machine, not to mpirun), and end the launcher.
 * Exit status: the last attempt's (0 when the job finished). */
#include "base/clock.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_sig, signals;   /* the last SIGINT/SIGTERM received, how many */
static pid_t child;
static bool via_mpirun;
static const char *out_dir = "runs/last";          /* ./train's default --out */

static void on_signal(int sig) { stop_sig = sig; signals++; }

/* the parent of pid (from /proc), 0 if unknown */
static pid_t parent_of(pid_t pid) {
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    const char *close = strrchr(buf, ')');          /* "pid (comm) S ppid …" */
    int ppid = 0;
    return close && sscanf(close + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : 0;
}

/* Pass a stop signal to the job. ./train alone: its process group. Under mpirun: the processes
 * below mpirun on this machine (the ranks, in process groups of their own), not mpirun itself,
 * which would end the job at once, before the ranks can save; one rank's signal stops every rank
 * together (vg_dist_any). */
static void forward(int sig) {
    if (!via_mpirun) { kill(-child, sig); return; }
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        pid_t pid = (pid_t)atoi(e->d_name), p = pid;
        if (pid <= 0 || pid == child) continue;
        for (int depth = 0; depth < 4 && p > 1 && p != child; depth++) p = parent_of(p);
        if (p == child) kill(pid, sig);
    }
    if (d) closedir(d);
}


static void usage(FILE *f) {
    fprintf(f, "usage: ./launch [--max-restarts N] [--min-ranks M] [--grace S] [--delay S] -- COMMAND…\n"
               "  COMMAND: ./train ARGS…, or mpirun [-np N] [OPTIONS] ./train-mpi ARGS… (one program, not MPMD)\n"
               "  --max-restarts N  restarts after a failure a restart can cure (a lost rank, a timeout): default 3\n"
               "  --min-ranks M     with mpirun: each restart on one rank fewer (dividing --batch), down to M\n"
               "                    (default: the same count as the first attempt)\n"
               "  --grace S         end a job that said it is ending but is still running S s later (default 10)\n"
               "  --delay S         seconds between a failure and its restart (default 1)\n"
               "Exit status: 0 when the job finished; else its last status (see docs/reliability.md).\n");
}

/* a line to stderr and to OUT/launch.log */
__attribute__((format(printf, 1, 2)))
static void logf_(const char *fmt, ...) {
    char msg[2048];
    va_list ap; va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "launch: %s\n", msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/launch.log", out_dir);
    FILE *f = fopen(path, "a");
    if (!f) return;
    time_t t = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
    fprintf(f, "%s %s\n", when, msg);
    fclose(f);
}

static bool is_mpirun(const char *prog) {
    const char *b = strrchr(prog, '/');
    b = b ? b + 1 : prog;
    return !strcmp(b, "mpirun") || !strcmp(b, "mpiexec") || !strcmp(b, "orterun");
}

/* the step of OUT's last checkpoint (from the `latest` link), or -1 when it has none */
static long long checkpoint_step(void) {
    char p[4200], target[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/latest/train_state.safetensors", out_dir);
    if (stat(p, &st) != 0) return -1;
    snprintf(p, sizeof p, "%s/latest", out_dir);
    ssize_t n = readlink(p, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    const char *s = strstr(target, "step-");
    return s ? atoll(s + 5) : 0;
}

/* why a status ends the launcher (NULL: a restart may cure it) */
static const char *final_reason(int status) {
    if (WIFSIGNALED(status)) return stop_sig ? "the launcher was asked to stop" : NULL;
    switch (WEXITSTATUS(status)) {
    case 0: return "the job finished";
    case 1: return "an error a restart cannot cure (its message is above)";
    case 2: return "a usage error";
    case 3: return "the loss became NaN or infinite";
    case 130: case 143: return "a graceful stop (SIGINT/SIGTERM)";
    default: return stop_sig ? "the launcher was asked to stop" : NULL;
    }
}

static void describe(int status, char *buf, size_t n) {
    if (WIFSIGNALED(status)) snprintf(buf, n, "killed by signal %d", WTERMSIG(status));
    else if (WEXITSTATUS(status) == 4) snprintf(buf, n, "exit status 4: a rank waited past --comm-timeout");
    else if (WEXITSTATUS(status) == 137) snprintf(buf, n, "exit status 137: a process was killed (SIGKILL)");
    else snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
}

/* Run argv with its stderr passed through (and watched); returns its wait status. */
static int run_job(char **argv, double grace) {
    int pfd[2];
    if (pipe(pfd) != 0) { perror("launch: pipe"); exit(1); }
    child = fork();
    if (child < 0) { perror("launch: fork"); exit(1); }
    if (child == 0) {
        setpgid(0, 0);                              /* its own group: the launcher can end all of it */
        signal(SIGINT, SIG_DFL); signal(SIGTERM, SIG_DFL);
        dup2(pfd[1], STDERR_FILENO);
        close(pfd[0]); close(pfd[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "launch: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(child, child);
    close(pfd[1]);
    char line[4096];
    size_t len = 0;
    double ending_at = -1;                          /* when the job said it is ending */
    bool eof = false, terminated = false, killed = false;
    int status = 0, forwarded = 0;
    for (;;) {
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child) break;
        if (signals > forwarded) { forwarded = signals; forward(stop_sig); }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int r = eof ? (usleep(100000), 0) : poll(&p, 1, 100);
        if (r > 0) {
            char buf[4096];
            ssize_t k = read(pfd[0], buf, sizeof buf);
            if (k <= 0) { if (k == 0 || errno != EINTR) eof = true; continue; }
            if (write(STDERR_FILENO, buf, (size_t)k) < 0) { /* stderr gone: keep watching */ }
            for (ssize_t i = 0; i < k; i++) {       /* whole lines, for the pattern */
                if (buf[i] != '\n' && len + 1 < sizeof line) { line[len++] = buf[i]; continue; }
                line[len] = 0; len = 0;
                if (ending_at < 0 && strstr(line, "train: rank ") && strstr(line, "ending the"))
                    ending_at = vg_now_s();
            }
        }
        if (ending_at >= 0 && !terminated && vg_now_s() - ending_at > grace) {
            logf_("the job said it is ending, but it is still running %.0f s later (mpirun waits for a node it "
                  "cannot reach): ending it", grace);
            kill(-child, SIGTERM);
            terminated = true;
        }
        if (terminated && !killed && vg_now_s() - ending_at > grace + 3) { kill(-child, SIGKILL); killed = true; }
    }
    kill(-child, SIGKILL);                          /* whatever the job left behind on this machine */
    for (double t0 = vg_now_s(); vg_now_s() - t0 < 2;) {  /* what it wrote last */
        struct pollfd p = {pfd[0], POLLIN, 0};
        char buf[4096];
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = read(pfd[0], buf, sizeof buf);
        if (k <= 0) break;
        if (write(STDERR_FILENO, buf, (size_t)k) < 0) break;
    }
    close(pfd[0]);
    child = 0;
    if (terminated && !stop_sig) return 4 << 8;     /* what the ranks said: a timeout */
    return status;
}

/* the value of flag `name` in args (the last one given), or NULL */
static const char *flag_value(int argc, char **argv, const char *name) {
    const char *v = NULL;
    for (int i = 0; i + 1 < argc; i++) if (!strcmp(argv[i], name)) v = argv[i + 1];
    return v;
}

int main(int argc, char **argv) {
    int max_restarts = 3, min_ranks = 0;
    double grace = 10, delay = 1;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) { i++; break; }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (strncmp(a, "--", 2)) break;             /* the command starts */
        if (i + 1 >= argc) { fprintf(stderr, "launch: %s needs a value\n", a); usage(stderr); return 2; }
        char *end;
        double v = strtod(argv[++i], &end);
        if (*end || end == argv[i] || v < 0 || v > 1e6) { fprintf(stderr, "launch: %s: expected a non-negative number, got '%s'\n", a, argv[i]); return 2; }
        if (!strcmp(a, "--max-restarts")) max_restarts = (int)v;
        else if (!strcmp(a, "--min-ranks")) min_ranks = (int)v;
        else if (!strcmp(a, "--grace")) grace = v;
        else if (!strcmp(a, "--delay")) delay = v;
        else { fprintf(stderr, "launch: unknown flag '%s'\n", a); usage(stderr); return 2; }
    }
    if (i >= argc) { fprintf(stderr, "launch: no command given\n"); usage(stderr); return 2; }
    int n = argc - i;
    char **cmd = argv + i;
    const char *o = flag_value(n, cmd, "--out");
    if (o) out_dir = o;
    /* mpirun (maybe after `env VAR=…`) and its rank count: the value after -np / -n / --np */
    int np_at = -1, ranks = 0, mp = 0;
    while (mp < n && !is_mpirun(cmd[mp]) && (!strcmp(cmd[mp], "env") || strchr(cmd[mp], '='))) mp++;
    bool mpi = via_mpirun = mp < n && is_mpirun(cmd[mp]);
    for (int k = mp + 1; mpi && k + 1 < n; k++)
        if (!strcmp(cmd[k], "-np") || !strcmp(cmd[k], "-n") || !strcmp(cmd[k], "--np")) { np_at = k + 1; ranks = atoi(cmd[k + 1]); break; }
    if (min_ranks && (np_at < 0 || ranks < 1)) { fprintf(stderr, "launch: --min-ranks needs an mpirun command with -np N\n"); return 2; }
    if (min_ranks > ranks) min_ranks = ranks;
    const char *b = flag_value(n, cmd, "--batch");
    int batch = b ? atoi(b) : 128;                  /* ./train's default --batch */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    /* the command of an attempt: room for the original words and two more, NULL-terminated */
    char **run = calloc((size_t)n + 4, sizeof *run);
    char np_buf[32];
    if (!run) return 1;
    mkdir(out_dir, 0755);
    int status = 0;
    for (int attempt = 0;; attempt++) {
        long long step = checkpoint_step();
        int m = 0;
        for (int k = 0; k < n; k++) {
            const char *a = cmd[k];
            if (attempt > 0 && (!strcmp(a, "--overwrite") || !strcmp(a, "--continue"))) continue;
            if (attempt > 0 && step >= 0 && (!strcmp(a, "--resume") || !strcmp(a, "--init")) && k + 1 < n) { k++; continue; }
            run[m++] = k == np_at ? np_buf : cmd[k];
        }
        if (attempt > 0) {
            if (step >= 0) { run[m++] = "--resume"; run[m++] = (char *)out_dir; }
            else run[m++] = "--overwrite";
        }
        run[m] = NULL;
        if (np_at >= 0) snprintf(np_buf, sizeof np_buf, "%d", ranks);
        if (attempt == 0) {
            char words[1500] = "";
            for (int k = 0; run[k] && strlen(words) + strlen(run[k]) + 8 < sizeof words; k++) { strcat(words, k ? " " : ""); strcat(words, run[k]); }
            logf_("starting (at most %d restart%s): %s", max_restarts, max_restarts == 1 ? "" : "s", words);
        }
        double t0 = vg_now_s();
        status = run_job(run, grace);
        char what[128];
        describe(status, what, sizeof what);
        const char *why = final_reason(status);
        if (why) {
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0) logf_("the job finished after %d restart%s", attempt, attempt == 1 ? "" : "s");
            else logf_("the job ended (%s, after %.1f s): %s; not restarting", what, vg_now_s() - t0, why);
            break;
        }
        if (attempt >= max_restarts) {
            logf_("the job failed (%s, after %.1f s); giving up after %d restart%s (--max-restarts)", what, vg_now_s() - t0,
                  attempt, attempt == 1 ? "" : "s");
            break;
        }
        if (min_ranks > 0 && ranks > min_ranks) {   /* one fewer, dividing the batch, not below --min-ranks */
            int r = ranks - 1;
            while (r > min_ranks && batch % r) r--;
            if (batch % r == 0) ranks = r;
        }
        step = checkpoint_step();
        char where[96] = "";
        if (np_at >= 0) snprintf(where, sizeof where, " on %d rank%s", ranks, ranks == 1 ? "" : "s");
        if (step >= 0) logf_("restart %d of %d (the job failed: %s, after %.1f s): resuming %s from its checkpoint at step %lld%s",
                             attempt + 1, max_restarts, what, vg_now_s() - t0, out_dir, step, where);
        else logf_("restart %d of %d (the job failed: %s, after %.1f s): no checkpoint yet in %s, starting over%s",
                   attempt + 1, max_restarts, what, vg_now_s() - t0, out_dir, where);
        for (double t = vg_now_s(); vg_now_s() - t < delay && !stop_sig;) usleep(20000);
        if (stop_sig) break;
    }
    free(run);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
