/* crc32c.h — CRC-32C (Castagnoli), the checksum every safetensors tensor vitgrad writes carries. */
#ifndef VG_CRC32C_H
#define VG_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes, as iSCSI, ext4 and gRPC use it: "123456789" → 0xe3069283 */
uint32_t vg_crc32c(const void *data, size_t n);
#endif
