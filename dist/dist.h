/* dist.h — data-parallel training across processes: the communicator and the gradient bucketer.
 *
 * Two implementations of the same calls, chosen when ./train is linked:
 *   dist/single.c  one process (plain `make`): rank 0 of 1; a sum over ranks is the value itself.
 *   dist/mpi.c     MPI (`make MPI=1`, built with mpicc): rank r of N processes started by mpirun.
 * The program calls the same functions either way; with one process they are the N = 1 case of
 * the MPI code, not a different code path.
 *
 * Every collective (vg_dist_sum_*, vg_dist_any, vg_dist_isum + vg_dist_wait) must be called by
 * every rank in the same order. Collectives wait at most vg_dist_set_timeout seconds for the
 * other ranks; past that the job is ended (vg_dist_abort) with a message naming this rank, so a
 * rank that died or cannot be reached ends the job in bounded time instead of hanging it.
 * Errors are values except vg_dist_abort, whose job is to end every rank. */
#ifndef VG_DIST_H
#define VG_DIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nn/nn.h"

/* Start (MPI_Init_thread: only the calling thread talks to MPI). 0, or -1 with err set. */
int  vg_dist_init(int *argc, char ***argv, char *err, size_t errlen);
/* End normally (every rank calls it). */
void vg_dist_finalize(void);
/* End the whole job now with exit status `code` (after this rank printed why). */
_Noreturn void vg_dist_abort(int code);
const char *vg_dist_backend(void);     /* "MPI (Open MPI 4.1.4)" or "single process" */
int  vg_dist_rank(void);               /* 0..size-1 */
int  vg_dist_size(void);               /* number of ranks */
int  vg_dist_local_size(void);         /* ranks on this rank's node (shared memory) */
const char *vg_dist_host(void);        /* this rank's host name */
/* host name of every rank into hosts[size][64] (collective) */
void vg_dist_hosts(char (*hosts)[64]);
/* seconds a collective may wait for the other ranks before the job is ended (default 300) */
void vg_dist_set_timeout(double seconds);

/* ---- blocking collectives: x := the sum of x over ranks ---- */
void vg_dist_sum_f64(double *x, int n);
void vg_dist_sum_i64(int64_t *x, int n);
/* true on every rank if `local` is true on any rank: a decision all ranks take together
 * (stop at this step, an error on one rank, a NaN) */
bool vg_dist_any(bool local);
/* send `bytes` to rank `peer` and receive as many from it into recv (peer may be this rank: a
 * copy). Mixup/CutMix pair sample b of a global batch with sample G−1−b, which another rank holds. */
void vg_dist_exchange(const void *send, void *recv, size_t bytes, int peer);

/* ---- non-blocking sum in place over n reals (MPI_Iallreduce) ---- */
/* Start it; returns a handle >= 0. buf must not be touched until vg_dist_wait(handle). */
int  vg_dist_isum(real *buf, int64_t n);
bool vg_dist_test(int handle);         /* complete? (also moves the other pending ones on) */
void vg_dist_wait(int handle);
/* forget every handle (all must be complete); called once per step */
void vg_dist_requests_clear(void);

/* ---- the gradient bucketer ----
 * Gives every trainable parameter a gradient buffer inside one flat allocation, laid out in
 * reverse registration order (the order backward finishes them) and cut into buckets of about
 * bucket_bytes. During vg_backward the engine tells it when a parameter's gradient is final
 * (vg_set_grad_ready_hook); when a bucket's last gradient is final its sum over ranks starts
 * (vg_dist_isum), while backward goes on with earlier layers. vg_grad_sync_finish waits for all
 * and divides by the number of ranks: afterwards every rank holds the gradient of the mean loss
 * over the global batch, as one process computes it (up to float summation order). Buckets are
 * started strictly in bucket order, so every rank issues the same collectives in the same order. */
typedef struct vg_grad_sync vg_grad_sync;
typedef struct {
    int buckets;
    int64_t elems;                 /* reals summed per step (with alignment padding) */
    double exposed_ms;             /* last step: time spent waiting after backward ended */
    double backward_ms;            /* last step: vg_grad_sync_begin → vg_grad_sync_finish */
} vg_grad_sync_stats;
/* Replaces the params' .grad buffers (any existing ones are freed). Free it after the params. */
vg_grad_sync *vg_grad_sync_new(const vg_params *params, size_t bucket_bytes, char *err, size_t errlen);
void vg_grad_sync_begin(vg_grad_sync *s);     /* before vg_backward: installs the engine hook */
void vg_grad_sync_finish(vg_grad_sync *s);    /* after vg_backward: sums, waits, divides by N */
vg_grad_sync_stats vg_grad_sync_stats_get(const vg_grad_sync *s);
/* milliseconds one blocking sum of the whole gradient takes, median of `reps` (a benchmark: it
 * overwrites the gradients; collective) */
double vg_grad_sync_time_sum(vg_grad_sync *s, int reps);
void vg_grad_sync_free(vg_grad_sync *s);
#endif
