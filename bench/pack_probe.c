/* pack_probe.c — how fast gemm.c's A packing (the 6-row transposing pack of row-major
 * activations) reads its source from L2, L3 or memory. Includes gemm/fp32.c to reach the static
 * packer. Not a test; the packing figures in docs/benchmarks.md come from it.
 *
 *   gcc -std=c11 -D_GNU_SOURCE -O3 -march=native -fopenmp -ffp-contract=fast -I. \
 *       bench/pack_probe.c -o pack_probe && chrt -f 1 ./pack_probe
 *
 * Packs 120-row blocks (one MC block) of a K-wide source, K blocks of at most 384, cycling through
 * a source of 120 rows (stays in L2) or 8320 rows (the ViT's activations: 6 MB for K = 192, in L3;
 * 25 MB for K = 768, mostly in memory). */
#include "gemm/fp32.c"
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double pack_gbs(int K, long src_rows) {
    const int rows = 120, kc = K < KC ? K : KC;
    float *src = aligned_alloc(64, 4L * src_rows * K), *dst = aligned_alloc(64, 4L * rows * KC);
    if (!src || !dst) { fputs("pack_probe: out of memory\n", stderr); exit(1); }
    for (long i = 0; i < src_rows * K; i++) src[i] = (float)i * 1e-3f;
    const long blocks = 2000000000L / (4L * rows * K);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        const double t = now();
        long off = 0;
        for (long it = 0; it < blocks; it++) {
            for (int pc = 0; pc < K; pc += kc)
                for (int i = 0; i < rows; i += MR)
                    pack_A(dst + (long)i * kc, src + (off + i) * K + pc, K, 1, MR, K - pc < kc ? K - pc : kc);
            off += rows;
            if (off + rows > src_rows) off = 0;
        }
        const double dt = now() - t;
        if (dt < best) best = dt;
    }
    free(src); free(dst);
    return 4.0 * rows * K * blocks / best / 1e9;
}

int main(void) {
    printf("pack A, K = 192, source in L2 (120 rows):    %5.1f GB/s\n", pack_gbs(192, 120));
    printf("pack A, K = 192, source 8320 rows (6 MB):     %5.1f GB/s\n", pack_gbs(192, 8320));
    printf("pack A, K = 768, source 8320 rows (25 MB):    %5.1f GB/s\n", pack_gbs(768, 8320));
    return 0;
}
