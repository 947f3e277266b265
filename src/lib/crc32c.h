/*
 * crc32c: CRC-32C (Castagnoli; the iSCSI, ext4 and LevelDB checksum),
 * reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
 * Table-driven, one byte at a time; no project knowledge.
 *
 * xp_crc32c(0, "123456789", 9) == 0xE3069283. A checksum over several
 * pieces is the one over their concatenation: pass the previous result as
 * crc (0 to start).
 */
#ifndef XP_CRC32C_H
#define XP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t xp_crc32c(uint32_t crc, const void *data, size_t len);

#endif
