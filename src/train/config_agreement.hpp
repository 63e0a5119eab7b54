// Before training, all ranks prove they run the same configuration: each hashes its canonical
// configuration text (training config, model, topology, plan, data), the world all-gathers the
// hashes, and every rank raises the same InputError naming the ranks that differ from rank 0.
#pragma once

#include <cstdint>
#include <string_view>

#include "comm/communicator.hpp"

namespace tz {

// FNV-1a, 64 bits: stable across machines and builds.
std::uint64_t config_hash(std::string_view canonical_text);

// Collective over `world`. Throws InputError on every rank when any rank's hash differs.
void check_config_agreement(Communicator& world, std::string_view canonical_text);

}  // namespace tz
