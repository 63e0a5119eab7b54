// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78; the checksum of iSCSI, ext4,
// and RocksDB's and Parquet's blocks), the checksum of every checkpoint block. crc32c() runs the SSE4.2
// `crc32` instruction, 8 bytes at a time, when the CPU has it (every x86-64 machine since 2008), else
// crc32c_ref, the bytewise table loop it is tested against. Both continue a running value:
// crc32c(crc32c(0, a), b) == crc32c(0, a + b).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tz {

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t bytes);
std::uint32_t crc32c_ref(std::uint32_t crc, const void* data, std::size_t bytes);
// Whether crc32c() uses the instruction on this CPU.
bool crc32c_hardware();

// "1a2b3c4d": 8 lower-case hex digits, as manifests write checksums.
std::string crc32c_hex(std::uint32_t crc);

}  // namespace tz
