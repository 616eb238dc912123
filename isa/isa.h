/* isa.h — what this CPU, its operating system and the VG_ISA cap let vitgrad's kernels use, found
 * once per process (isa/cpu.c). The kernels themselves are chosen in isa/dispatch.c.
 *
 * Levels, each a superset of the one before on its architecture:
 *   x86-64:  generic (SSE2: any x86-64) < avx2 (AVX2 + FMA: Haswell, Zen 1 on) < avx512 (F, BW, DQ,
 *            VL: Skylake-SP, Ice Lake, Zen 4 on) < avx512bf16 (+ AVX512_BF16: Cooper Lake, Sapphire
 *            Rapids, Zen 4 on) < amx (+ AMX-TILE, AMX-BF16 and Linux's permission: Sapphire Rapids on)
 *   aarch64: generic (plain C) < neon (Advanced SIMD: every ARMv8-A CPU)
 * The environment variable VG_ISA=<level> caps the level (tests, comparisons); a level the CPU
 * lacks cannot be forced (it would fault). */
#ifndef VG_ISA_H
#define VG_ISA_H
#include <stdbool.h>

typedef enum { VG_ISA_GENERIC, VG_ISA_AVX2, VG_ISA_AVX512, VG_ISA_AVX512BF16, VG_ISA_AMX, VG_ISA_NEON,
               VG_ISA_COUNT } vg_isa;

typedef struct {
    bool intel, amd;            /* CPUID vendor string GenuineIntel / AuthenticAMD */
    bool avx2;                  /* AVX, AVX2, FMA, with the OS saving ymm state */
    bool avx512;                /* AVX-512 F, BW, DQ, VL, with the OS saving zmm state */
    bool avx512bf16;            /* CPUID.(7,1):EAX bit 5, with the OS saving zmm state */
    bool amx;                   /* AMX-TILE and AMX-BF16 usable: CPUID, XCR0 and the permission */
    const char *amx_why;        /* when !amx: which of the three said no, as a sentence */
    bool neon;                  /* aarch64 Advanced SIMD (AT_HWCAP's ASIMD) */
} vg_cpu_features;

/* Detected on first call (thread-safe); the AMX permission (Linux's arch_prctl) is requested then,
 * once for the process. */
const vg_cpu_features *vg_cpu(void);

/* The highest level this CPU and OS support (before the cap). */
vg_isa vg_isa_best(void);
/* The level kernels may use: vg_isa_best(), or lower where VG_ISA says so. */
vg_isa vg_isa_level(void);
/* Whether a kernel of level l may run: the CPU supports l and l is within the cap. */
bool vg_isa_allows(vg_isa l);
/* Whether VG_ISA leaves level l in (true when VG_ISA is unset): what a kernel whose instructions
 * are emulated in C (make test) needs, besides AVX2. */
bool vg_isa_within_cap(vg_isa l);
/* "generic", "avx2", "avx512", "avx512bf16", "amx", "neon" */
const char *vg_isa_name(vg_isa l);
/* One line about the cap: NULL when VG_ISA is unset, else e.g. "VG_ISA=avx2 (this CPU: avx512)",
 * or a warning when its value is not a level of this architecture or is above the CPU's (ignored
 * then). */
const char *vg_isa_cap_note(void);
#endif
