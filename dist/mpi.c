/* mpi.c — the communicator over MPI (`make MPI=1`; compiled with mpicc, linked into ./train only).
 *
 * Every collective is non-blocking underneath and completed by wait_or_abort(), which polls the
 * request and gives up after the timeout: a rank whose partner died or became unreachable ends
 * the job with a message naming itself, what it waited for and which ranks did not answer a
 * liveness check (a ping on a communicator of its own, which every waiting rank answers), instead
 * of hanging in MPI_Wait.
 * (When a process of the job dies, mpirun normally notices first and ends the job, naming the
 * lost rank; the timeout covers what it cannot see, such as a network that stops answering.)
 * Only the main thread calls MPI (MPI_THREAD_FUNNELED): loader and OpenMP threads never do. */
#include "dist/dist.h"
#include "base/clock.h"
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef VG_DOUBLE
#define MPI_REAL_T MPI_DOUBLE
#else
#define MPI_REAL_T MPI_FLOAT
#endif

static int rank_, size_ = 1, local_size_ = 1, initialized;
static char host[64], backend[96];
static double timeout_s = 300;
static MPI_Comm diag = MPI_COMM_NULL;   /* liveness checks after a timeout (a duplicate of WORLD) */
static char (*all_hosts)[64];          /* every rank's host name, for messages */
enum { TAG_PING = 11, TAG_PONG = 12 };

int vg_dist_init(int *argc, char ***argv, char *err, size_t errlen) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init_thread failed");
        return -1;
    }
    initialized = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;                                   /* the ranks sharing this node's memory */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    snprintf(host, sizeof host, "%.*s", len, name);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &len);
    char *nl = strpbrk(version, ",\n");               /* "Open MPI v4.1.4, package: …" */
    if (nl) *nl = 0;
    snprintf(backend, sizeof backend, "MPI (%.80s)", version);
    MPI_Comm_dup(MPI_COMM_WORLD, &diag);
    all_hosts = calloc((size_t)size_, sizeof *all_hosts);
    if (all_hosts) MPI_Allgather(host, 64, MPI_CHAR, all_hosts, 64, MPI_CHAR, MPI_COMM_WORLD);
    return 0;
}

void vg_dist_finalize(void) {
    if (!initialized) return;
    if (diag != MPI_COMM_NULL) MPI_Comm_free(&diag);
    free(all_hosts); all_hosts = NULL;
    MPI_Finalize();
    initialized = 0;
}

_Noreturn void vg_dist_abort(int code) {
    fflush(stdout); fflush(stderr);
    if (initialized && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
    vg_dist_finalize();
    exit(code);
}

const char *vg_dist_backend(void) { return backend; }
int vg_dist_rank(void) { return rank_; }
int vg_dist_size(void) { return size_; }
int vg_dist_local_size(void) { return local_size_; }
const char *vg_dist_host(void) { return host; }
void vg_dist_set_timeout(double seconds) { timeout_s = seconds; }

/* answer the liveness checks of ranks that timed out waiting (see silent_ranks) */
static void answer_pings(void) {
    static int pong;
    for (int flag = 1; flag;) {
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PING, diag, &flag, &st);
        if (!flag) return;
        int v;
        MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, TAG_PING, diag, MPI_STATUS_IGNORE);
        MPI_Request r;
        MPI_Isend(&pong, 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, diag, &r);
        MPI_Request_free(&r);
    }
}

/* After a timeout: ping every other rank and wait up to `seconds` for the answers (a rank that is
 * waiting in a collective answers at once). Writes the ranks that did not answer into buf
 * ("rank 1 (on node-b)"); returns how many. */
static int silent_ranks(double seconds, char *buf, size_t n) {
    static int ping;
    int N = size_, silent = 0;
    MPI_Request *rq = calloc(2 * (size_t)N, sizeof *rq);
    int *answered = calloc((size_t)N, sizeof *answered), *pong = calloc((size_t)N, sizeof *pong);
    buf[0] = 0;
    if (!rq || !answered || !pong) { free(rq); free(answered); free(pong); return 0; }
    for (int p = 0; p < N; p++) {
        if (p == rank_) { answered[p] = 1; continue; }
        MPI_Irecv(&pong[p], 1, MPI_INT, p, TAG_PONG, diag, &rq[2 * p]);
        MPI_Isend(&ping, 1, MPI_INT, p, TAG_PING, diag, &rq[2 * p + 1]);
    }
    for (double t0 = vg_now_s(); vg_now_s() - t0 < seconds;) {
        int all = 1;
        answer_pings();
        for (int p = 0; p < N; p++) {
            if (!answered[p]) MPI_Test(&rq[2 * p], &answered[p], MPI_STATUS_IGNORE);
            all &= answered[p];
        }
        if (all) break;
        sched_yield();
    }
    for (int p = 0, len = 0; p < N; p++) {
        if (answered[p]) continue;
        if (len < (int)n) len += snprintf(buf + len, n - (size_t)len, "%srank %d (on %s)", silent ? ", " : "", p,
                                          all_hosts ? all_hosts[p] : "?");
        silent++;
    }
    free(rq); free(answered); free(pong);            /* the job ends: the requests are not completed */
    return silent;
}

/* Complete r, polling; yields the core between polls (ranks may share cores) and answers other
 * ranks' liveness checks. After timeout_s the job ends: the other ranks did not take part in this
 * collective in time; the message names the ranks that do not answer at all. */
static void wait_or_abort(MPI_Request *r, const char *what) {
    int done = 0;
    double t0 = vg_now_s();
    for (long spins = 0;; spins++) {
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (spins > 64) sched_yield();
        if ((spins & 1023) == 1023) {
            answer_pings();
            if (vg_now_s() - t0 <= timeout_s) continue;
            char who[512];
            double probe = timeout_s < 2 ? timeout_s / 2 : 1;
            int silent = silent_ranks(probe, who, sizeof who);
            if (silent)
                fprintf(stderr, "train: rank %d (%s): waited %.0f s for the other ranks in %s; no answer from %s "
                                "within %.1f s more: dead, stopped or cut off by the network; ending the job\n",
                        rank_, host, timeout_s, what, who, probe);
            else
                fprintf(stderr, "train: rank %d (%s): waited %.0f s for the other ranks in %s; every rank answers, "
                                "so one is busy elsewhere for longer than --comm-timeout; ending the job\n",
                        rank_, host, timeout_s, what);
            vg_dist_abort(4);
        }
    }
}

void vg_dist_hosts(char (*hosts)[64]) {
    MPI_Request r;
    MPI_Iallgather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, MPI_COMM_WORLD, &r);
    wait_or_abort(&r, "gathering host names");
}

void vg_dist_sum_f64(double *x, int n) {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    wait_or_abort(&r, "a sum (loss, accuracy or evaluation)");
}

void vg_dist_sum_i64(int64_t *x, int n) {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &r);
    wait_or_abort(&r, "a sum of counts");
}

void vg_dist_exchange(const void *send, void *recv, size_t bytes, int peer) {
    if (peer == vg_dist_rank()) { if (send != recv) memmove(recv, send, bytes); return; }
    for (size_t done = 0; done < bytes;) {          /* MPI counts are ints: 1 GiB at a time */
        int n = (int)(bytes - done < ((size_t)1 << 30) ? bytes - done : (size_t)1 << 30);
        MPI_Request r[2];
        MPI_Irecv((char *)recv + done, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &r[0]);
        MPI_Isend((const char *)send + done, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &r[1]);
        wait_or_abort(&r[0], "the exchange of mixup partners");
        wait_or_abort(&r[1], "the exchange of mixup partners");
        done += (size_t)n;
    }
}

bool vg_dist_any(bool local) {
    int v = local;
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD, &r);
    wait_or_abort(&r, "a decision taken together");
    return v != 0;
}

/* ---- non-blocking sums: a growable table of requests, cleared once per step ---- */
static MPI_Request *reqs;
static char *complete;
static int n_reqs, cap_reqs;

int vg_dist_isum(real *buf, int64_t n) {
    if (n_reqs == cap_reqs) {
        int cap = cap_reqs ? 2 * cap_reqs : 64;
        MPI_Request *r = realloc(reqs, sizeof *r * (size_t)cap);
        if (!r) { fprintf(stderr, "train: rank %d: out of memory\n", rank_); vg_dist_abort(1); }
        reqs = r;
        char *c = realloc(complete, (size_t)cap);
        if (!c) { fprintf(stderr, "train: rank %d: out of memory\n", rank_); vg_dist_abort(1); }
        complete = c;
        cap_reqs = cap;
    }
    int h = n_reqs++;
    complete[h] = 0;
    MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_REAL_T, MPI_SUM, MPI_COMM_WORLD, &reqs[h]);
    return h;
}

bool vg_dist_test(int h) {
    if (!complete[h]) {
        int done = 0;
        MPI_Test(&reqs[h], &done, MPI_STATUS_IGNORE);
        complete[h] = (char)done;
    }
    return complete[h];
}

void vg_dist_wait(int h) {
    if (!complete[h]) { wait_or_abort(&reqs[h], "the gradient sum"); complete[h] = 1; }
}

void vg_dist_requests_clear(void) { n_reqs = 0; }
