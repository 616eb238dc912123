/* cpu.c — CPU features for the kernel choice (gemm/bf16.c), found once per process.
 *
 * AMX takes three yeses: the CPU (CPUID.(7,0):EDX bit 24 AMX-TILE, bit 22 AMX-BF16), the OS
 * enabling the tile state in XCR0 (bits 17 TILECFG and 18 TILEDATA, read with xgetbv where
 * CPUID.1:ECX.OSXSAVE says it may be), and on Linux ≥ 5.16 the permission for this process to use
 * the 8 KiB of tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); without it the
 * first tile instruction faults. A VM may hide AMX from CPUID altogether. */
#include "cpu.h"
#include <pthread.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <unistd.h>
#include <sys/syscall.h>
#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#endif

static vg_cpu_features features;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}
#endif

static void detect(void) {
    features.amx_why = "this is not an x86-64 build";
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    char vendor[13] = {0};
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(vendor, &b, 4); memcpy(vendor + 4, &d, 4); memcpy(vendor + 8, &c, 4);
    }
    features.intel = strcmp(vendor, "GenuineIntel") == 0;
    features.amd = strcmp(vendor, "AuthenticAMD") == 0;
    const bool osxsave = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27));
    const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6;           /* SSE, AVX, opmask, zmm halves */
    unsigned a1 = 0, b1, c1, d1;
    features.avx512bf16 = zmm_state && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5));
    unsigned edx7 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) edx7 = d;
    if (!(edx7 & (1u << 24)) || !(edx7 & (1u << 22))) {
        features.amx_why = "the CPU does not report AMX-TILE and AMX-BF16 (CPUID.7.0:EDX bits 24, 22; "
                           "a VM may hide them)";
        return;
    }
    if ((xcr0 & (3ull << 17)) != (3ull << 17)) {
        features.amx_why = "the OS has not enabled the tile state (XCR0 bits 17, 18)";
        return;
    }
    unsigned long long perm = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0 ||
        syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) != 0 || !(perm & (1ull << XFEATURE_XTILEDATA))) {
        features.amx_why = "the kernel refused this process the tile data "
                           "(arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA); Linux >= 5.16 needed)";
        return;
    }
    features.amx = true;
    features.amx_why = NULL;
#endif
}

const vg_cpu_features *vg_cpu(void) {
    pthread_once(&once, detect);
    return &features;
}
