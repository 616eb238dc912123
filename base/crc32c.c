/* crc32c.c — CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78).
 * SSE4.2 has it as an instruction (8 bytes per crc32q); elsewhere a slicing-by-8 table (built
 * once). Same values either way. */
#include "crc32c.h"
#include <string.h>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
uint32_t vg_crc32c(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t c = 0xffffffffu;
    for (; n >= 8; n -= 8, p += 8) { uint64_t v; memcpy(&v, p, 8); c = _mm_crc32_u64(c, v); }
    uint32_t c32 = (uint32_t)c;
    for (; n > 0; n--, p++) c32 = _mm_crc32_u8(c32, *p);
    return ~c32;
}
#else
#include <pthread.h>
/* crc_table[t][b]: the CRC of byte b followed by t zero bytes, so 8 bytes fold in one step */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static void crc_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}
uint32_t vg_crc32c(const void *data, size_t n) {
    pthread_once(&crc_once, crc_tables);
    const unsigned char *p = data;
    uint32_t c = 0xffffffffu;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
    }
    for (; n > 0; n--, p++) c = (c >> 8) ^ crc_table[0][(c ^ *p) & 0xff];
    return ~c;
}
#endif
