/* single.c — the communicator of one process (plain `make`): rank 0 of 1.
 *
 * The sum of a value over one rank is the value itself, so every collective returns its input
 * and every non-blocking sum is complete when started. This is the N = 1 case of dist/mpi.c. */
#include "dist/dist.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char host[64];

int vg_dist_init(int *argc, char ***argv, char *err, size_t errlen) {
    (void)argc; (void)argv; (void)err; (void)errlen;
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    return 0;
}
void vg_dist_finalize(void) {}
_Noreturn void vg_dist_abort(int code) { fflush(stdout); exit(code); }
const char *vg_dist_backend(void) { return "single process"; }
int vg_dist_rank(void) { return 0; }
int vg_dist_size(void) { return 1; }
int vg_dist_local_size(void) { return 1; }
const char *vg_dist_host(void) { return host[0] ? host : "localhost"; }
void vg_dist_hosts(char (*hosts)[64]) { snprintf(hosts[0], 64, "%s", vg_dist_host()); }
void vg_dist_set_timeout(double seconds) { (void)seconds; }

void vg_dist_sum_f64(double *x, int n) { (void)x; (void)n; }
void vg_dist_sum_i64(int64_t *x, int n) { (void)x; (void)n; }
bool vg_dist_any(bool local) { return local; }
void vg_dist_exchange(const void *send, void *recv, size_t bytes, int peer) { (void)peer; if (send != recv) memmove(recv, send, bytes); }

int  vg_dist_isum(real *buf, int64_t n) { (void)buf; (void)n; return 0; }
bool vg_dist_test(int handle) { (void)handle; return true; }
void vg_dist_wait(int handle) { (void)handle; }
void vg_dist_requests_clear(void) {}
