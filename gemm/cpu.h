/* cpu.h — what this CPU, its operating system and this build let the GEMM kernels use, found once
 * per process (gemm/cpu.c). Internal to gemm/. */
#ifndef VG_GEMM_CPU_H
#define VG_GEMM_CPU_H
#include <stdbool.h>

typedef struct {
    bool intel, amd;            /* CPUID vendor string GenuineIntel / AuthenticAMD */
    bool avx512bf16;            /* CPUID.(7,1):EAX bit 5, with the OS saving zmm state */
    bool amx;                   /* AMX-TILE and AMX-BF16 usable: CPUID, XCR0 and the permission */
    const char *amx_why;        /* when !amx: which of the three said no, as a sentence */
} vg_cpu_features;

/* Detected on first call (thread-safe); the AMX permission (Linux's arch_prctl) is requested then,
 * once for the process. */
const vg_cpu_features *vg_cpu(void);
#endif
