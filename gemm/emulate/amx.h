/* amx.h — the AMX tile instructions gemm/amx.c uses, in plain C on the scalar definition
 * (gemm/bf16.h's vg_tdpbf16ps_row), so `make test` runs the AMX kernel — its tile configuration,
 * packing, blocking, edges and epilogues — on any machine. Only for that build: gemm/amx.c includes
 * this file when compiled with -DVG_GEMM_EMULATE_AMX, after <immintrin.h>, whose macros of the same
 * names it replaces.
 *
 * The state is per thread, as on hardware: eight tiles of 16 rows × 64 bytes and a configuration
 * (palette 1: rows and bytes per row of each tile, from a 64-byte block). What hardware would
 * fault on aborts here with a message: a tile instruction before _tile_loadconfig (#UD), a palette
 * other than 1 or reserved bytes set, tiles of a tdpbf16ps that do not fit together (C rows ≠ A
 * rows, C bytes per row ≠ B's, A bytes per row / 4 ≠ B rows) or are not three different tiles. */
#ifndef VG_AMX_EMULATED_H
#define VG_AMX_EMULATED_H
#include "gemm/bf16.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int configured;
    int rows[8], colsb[8];
    uint8_t t[8][16][64];
} vg_emu_amx_state;
static _Thread_local vg_emu_amx_state vg_emu_amx;

static inline void vg_emu_amx_fault(const char *what) {
    fprintf(stderr, "amx emulation: %s (a #UD on hardware)\n", what);
    abort();
}
static inline void vg_emu_tile_check(int t) {
    if (!vg_emu_amx.configured) vg_emu_amx_fault("tile instruction before _tile_loadconfig");
    if (t < 0 || t > 7 || vg_emu_amx.rows[t] == 0) vg_emu_amx_fault("tile not configured");
}
static inline void vg_emu_tile_loadconfig(const void *config) {
    const uint8_t *c = config;
    if (c[0] != 1) vg_emu_amx_fault("palette other than 1");
    for (int i = 1; i < 16; i++)
        if (c[i]) vg_emu_amx_fault("reserved or start_row bytes set in the configuration");
    memset(&vg_emu_amx, 0, sizeof vg_emu_amx);
    for (int t = 0; t < 8; t++) {
        vg_emu_amx.colsb[t] = c[16 + 2 * t] | c[17 + 2 * t] << 8;
        vg_emu_amx.rows[t] = c[48 + t];
        if (vg_emu_amx.colsb[t] > 64 || vg_emu_amx.rows[t] > 16 || (vg_emu_amx.colsb[t] == 0) != (vg_emu_amx.rows[t] == 0))
            vg_emu_amx_fault("tile shape out of range");
    }
    vg_emu_amx.configured = 1;
}
static inline void vg_emu_tile_release(void) { memset(&vg_emu_amx, 0, sizeof vg_emu_amx); }
static inline void vg_emu_tile_zero(int t) {
    vg_emu_tile_check(t);
    memset(vg_emu_amx.t[t], 0, sizeof vg_emu_amx.t[t]);
}
static inline void vg_emu_tile_loadd(int t, const void *base, long stride) {
    vg_emu_tile_check(t);
    memset(vg_emu_amx.t[t], 0, sizeof vg_emu_amx.t[t]);
    for (int r = 0; r < vg_emu_amx.rows[t]; r++)
        memcpy(vg_emu_amx.t[t][r], (const uint8_t *)base + r * stride, (size_t)vg_emu_amx.colsb[t]);
}
static inline void vg_emu_tile_stored(int t, void *base, long stride) {
    vg_emu_tile_check(t);
    for (int r = 0; r < vg_emu_amx.rows[t]; r++)
        memcpy((uint8_t *)base + r * stride, vg_emu_amx.t[t][r], (size_t)vg_emu_amx.colsb[t]);
}
static inline void vg_emu_tile_dpbf16ps(int c, int a, int b) {
    vg_emu_tile_check(c); vg_emu_tile_check(a); vg_emu_tile_check(b);
    if (c == a || c == b || a == b) vg_emu_amx_fault("tdpbf16ps needs three different tiles");
    const int m = vg_emu_amx.rows[c], n = vg_emu_amx.colsb[c] / 4, k = vg_emu_amx.rows[b];
    if (vg_emu_amx.rows[a] != m || vg_emu_amx.colsb[b] != vg_emu_amx.colsb[c] || vg_emu_amx.colsb[a] / 4 != k)
        vg_emu_amx_fault("tdpbf16ps tiles of shapes that do not fit together");
    vg_bf16 bt[16][32];
    memcpy(bt, vg_emu_amx.t[b], sizeof bt);
    for (int r = 0; r < m; r++) {
        float cr[16];
        vg_bf16 ar[32];
        memcpy(cr, vg_emu_amx.t[c][r], sizeof cr);
        memcpy(ar, vg_emu_amx.t[a][r], sizeof ar);
        vg_tdpbf16ps_row(cr, ar, &bt[0][0], 32, k, n);
        memcpy(vg_emu_amx.t[c][r], cr, sizeof cr);
    }
}

#undef _tile_loadconfig
#undef _tile_release
#undef _tile_zero
#undef _tile_loadd
#undef _tile_stream_loadd
#undef _tile_stored
#undef _tile_dpbf16ps
#define _tile_loadconfig(config) vg_emu_tile_loadconfig(config)
#define _tile_release() vg_emu_tile_release()
#define _tile_zero(t) vg_emu_tile_zero(t)
#define _tile_loadd(t, base, stride) vg_emu_tile_loadd(t, base, stride)
#define _tile_stream_loadd(t, base, stride) vg_emu_tile_loadd(t, base, stride)
#define _tile_stored(t, base, stride) vg_emu_tile_stored(t, base, stride)
#define _tile_dpbf16ps(c, a, b) vg_emu_tile_dpbf16ps(c, a, b)
#endif
