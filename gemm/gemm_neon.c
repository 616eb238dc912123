/* gemm_neon.c — the GEMM on aarch64 Advanced SIMD (NEON, part of every ARMv8-A CPU; isa/dispatch.c
 * runs it where AT_HWCAP reports ASIMD): an 8×12 tile in 24 q-register accumulators, K blocks of
 * 384. Packing is the driver's C (the compiler vectorises its copies for NEON).
 * Blocks for a typical ARMv8 core (64 KiB L1d, 512 KiB–1 MiB L2: Cortex-A76 of the Raspberry Pi 5,
 * Neoverse N1/V1 of Graviton 2/3 and Ampere Altra): the B micro-panel KC×NR (384×12×4 B = 18 KiB)
 * and the A micro-panel (12 KiB) share L1, the A block MC×KC (160×384×4 B = 240 KiB) sits in L2.
 * Not tuned by measurement: no ARM CPU is at hand (docs/architecture.md, ARM64). */
#if defined(__aarch64__) && !defined(VG_DOUBLE)
#include <arm_neon.h>
enum { MR = 8, NR = 12 };
#define VG_GEMM_KC 384
#define VG_GEMM_MICRO_KERNEL "kernel_neon.h"
#define VG_GEMM_OPS vg_gemm_neon
#define VG_GEMM_ISA VG_ISA_NEON
#define VG_GEMM_EMULATED false
#define VG_GEMM_NAME "neon 8x12"
#include "driver.h"
#endif
