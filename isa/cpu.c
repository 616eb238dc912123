/* cpu.c — CPU features and the instruction-set level (isa/isa.h), found once per process.
 *
 * x86-64: AVX2 needs CPUID.1:ECX AVX (28), FMA (12), OSXSAVE (27) and CPUID.(7,0):EBX AVX2 (5),
 * with XCR0 bits 1-2 (SSE, AVX state); AVX-512 needs CPUID.(7,0):EBX F (16), DQ (17), BW (30),
 * VL (31) with XCR0 bits 5-7 (opmask, zmm halves). aarch64: getauxval(AT_HWCAP) & HWCAP_ASIMD.
 *
 * AMX takes three yeses: the CPU (CPUID.(7,0):EDX bit 24 AMX-TILE, bit 22 AMX-BF16), the OS
 * enabling the tile state in XCR0 (bits 17 TILECFG and 18 TILEDATA, read with xgetbv where
 * CPUID.1:ECX.OSXSAVE says it may be), and on Linux ≥ 5.16 the permission for this process to use
 * the 8 KiB of tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); without it the
 * first tile instruction faults. A VM may hide AMX from CPUID altogether. */
#include "isa.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
#endif
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
#if defined(__aarch64__) && defined(__linux__)
    features.neon = (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#elif defined(__aarch64__)
    features.neon = true;                       /* Advanced SIMD is part of every ARMv8-A CPU */
#endif
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
    const bool ymm_state = (xcr0 & 0x6) == 0x6;             /* SSE, AVX */
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6;           /* SSE, AVX, opmask, zmm halves */
    const bool avx_fma = osxsave && (c & (1u << 28)) && (c & (1u << 12));
    unsigned b7 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) b7 = b;
    features.avx2 = ymm_state && avx_fma && (b7 & (1u << 5));
    const unsigned avx512_bits = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);   /* F DQ BW VL */
    features.avx512 = features.avx2 && zmm_state && (b7 & avx512_bits) == avx512_bits;
    unsigned a1 = 0, b1, c1, d1;
    features.avx512bf16 = features.avx512 && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5));
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

static const char *const level_names[VG_ISA_COUNT] = { "generic", "avx2", "avx512", "avx512bf16", "amx", "neon" };
const char *vg_isa_name(vg_isa l) { return l >= 0 && l < VG_ISA_COUNT ? level_names[l] : "?"; }

static bool cpu_has(vg_isa l) {
    const vg_cpu_features *f = vg_cpu();
    switch (l) {
    case VG_ISA_GENERIC: return true;
    case VG_ISA_AVX2: return f->avx2;
    case VG_ISA_AVX512: return f->avx512;
    case VG_ISA_AVX512BF16: return f->avx512 && f->avx512bf16;
    case VG_ISA_AMX: return f->avx512 && f->avx512bf16 && f->amx;
    case VG_ISA_NEON: return f->neon;
    default: return false;
    }
}

/* the levels of this architecture, lowest first */
#if defined(__aarch64__)
static const vg_isa arch_levels[] = { VG_ISA_GENERIC, VG_ISA_NEON };
#else
static const vg_isa arch_levels[] = { VG_ISA_GENERIC, VG_ISA_AVX2, VG_ISA_AVX512, VG_ISA_AVX512BF16, VG_ISA_AMX };
#endif
enum { N_LEVELS = (int)(sizeof arch_levels / sizeof arch_levels[0]) };
static int rank_of(vg_isa l) {
    for (int i = 0; i < N_LEVELS; i++) if (arch_levels[i] == l) return i;
    return -1;
}

static vg_isa best, cap;
static bool capped;
static char cap_note[200];
static pthread_once_t level_once = PTHREAD_ONCE_INIT;

static void find_level(void) {
    best = VG_ISA_GENERIC;
    for (int i = 0; i < N_LEVELS; i++) if (cpu_has(arch_levels[i])) best = arch_levels[i];
    cap = best;
    const char *env = getenv("VG_ISA");
    if (!env || !*env) return;
    int r = -1;
    for (int l = 0; l < VG_ISA_COUNT; l++) if (strcmp(env, level_names[l]) == 0) r = rank_of((vg_isa)l);
    if (r < 0) {
        char list[96] = "";
        for (int i = 0; i < N_LEVELS; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", level_names[arch_levels[i]]);
        snprintf(cap_note, sizeof cap_note, "warning: VG_ISA=%s ignored: not a level of this CPU's "
                 "architecture (%s)", env, list);
    } else if (r > rank_of(best))
        snprintf(cap_note, sizeof cap_note, "warning: VG_ISA=%s ignored: this CPU's best level is %s",
                 env, level_names[best]);
    else {
        cap = arch_levels[r];
        capped = true;
        snprintf(cap_note, sizeof cap_note, "VG_ISA=%s (this CPU: %s)", env, level_names[best]);
    }
}

vg_isa vg_isa_best(void) { pthread_once(&level_once, find_level); return best; }
vg_isa vg_isa_level(void) { pthread_once(&level_once, find_level); return cap; }
const char *vg_isa_cap_note(void) { pthread_once(&level_once, find_level); return cap_note[0] ? cap_note : NULL; }
bool vg_isa_within_cap(vg_isa l) {
    pthread_once(&level_once, find_level);
    const int r = rank_of(l);
    return r >= 0 && (!capped || r <= rank_of(cap));
}
bool vg_isa_allows(vg_isa l) { return vg_isa_within_cap(l) && cpu_has(l); }
