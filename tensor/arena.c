/* arena.c — the step arena: a list of large chunks with a bump pointer.
 *
 * Every tensor, node and buffer an op creates comes from here; vg_arena_reset() at the end of a
 * training step releases all of them in O(1). Chunks are kept and reused, never returned to the OS
 * between steps: fresh pages cost ~12 µs each to first-touch on this kind of machine, so a
 * steady-state step touches only memory it has touched before. Single-threaded by design: only
 * the thread that builds the graph allocates (OpenMP kernels write into buffers allocated before
 * the parallel region). */
#include "tensor.h"
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 64
#define ARENA_CHUNK (64u << 20)     /* 64 MiB; a larger request gets a chunk of its own size */
#define ARENA_MAX_CHUNKS 256

typedef struct { char *base; size_t size, used; } chunk;
static chunk chunks[ARENA_MAX_CHUNKS];
static int n_chunks, cur;

void *vg_arena_alloc(size_t bytes) {
    bytes = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (bytes == 0) bytes = ARENA_ALIGN;
    while (cur < n_chunks) {
        chunk *c = &chunks[cur];
        if (c->used + bytes <= c->size) { void *p = c->base + c->used; c->used += bytes; return p; }
        /* move on; a later chunk starts empty (reset or release zeroed its `used`) */
        if (cur + 1 < n_chunks) { cur++; chunks[cur].used = 0; continue; }
        break;
    }
    if (n_chunks == ARENA_MAX_CHUNKS) { fprintf(stderr, "vitgrad: arena: too many chunks\n"); abort(); }
    size_t size = bytes > ARENA_CHUNK ? bytes : ARENA_CHUNK;
    char *base = aligned_alloc(ARENA_ALIGN, size);
    if (!base) { fprintf(stderr, "vitgrad: arena: out of memory allocating %zu bytes\n", size); abort(); }
    /* insert the new chunk right after the current one so allocation order stays sequential */
    int at = n_chunks ? cur + 1 : 0;
    if (n_chunks && chunks[cur].used == 0) at = cur;   /* current chunk unused: new goes first */
    memmove(&chunks[at + 1], &chunks[at], sizeof(chunk) * (size_t)(n_chunks - at));
    chunks[at] = (chunk){base, size, bytes};
    n_chunks++;
    cur = at;
    return base;
}

vg_arena_mark vg_arena_get_mark(void) {
    vg_arena_mark m = {cur, n_chunks ? chunks[cur].used : 0};
    return m;
}

void vg_arena_release(vg_arena_mark m) {
    if (!n_chunks) return;
    cur = m.chunk;
    chunks[cur].used = m.used;
    for (int i = cur + 1; i < n_chunks; i++) chunks[i].used = 0;
}

void vg_arena_reset(void) { vg_arena_mark m = {0, 0}; vg_arena_release(m); }

size_t vg_arena_bytes_reserved(void) {
    size_t s = 0;
    for (int i = 0; i < n_chunks; i++) s += chunks[i].size;
    return s;
}

size_t vg_arena_bytes_used(void) {
    size_t s = 0;
    for (int i = 0; i <= cur && i < n_chunks; i++) s += chunks[i].used;
    return s;
}

void vg_arena_free_all(void) {
    for (int i = 0; i < n_chunks; i++) free(chunks[i].base);
    n_chunks = 0; cur = 0;
}
