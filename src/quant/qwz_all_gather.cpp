// qwZ all-gather (qwz_all_gather.hpp): quantize the local shard once, all-gather codes + scales as
// u8 (flat, or Mesh's hierarchical all-gather: outer tier first), dequantize every piece.
//   step 1  quantize(shard) -> q_local                   quantized_bytes(count) bytes, no traffic
//   step 2  all-gather q_local -> q_all over the group   G pieces of quantized_bytes(count) bytes
//   step 3  dequantize piece i -> full[i * count ...]    for i in 0..G-1, no traffic
// Scratch buffers are per thread (one rank = one thread or process) and kept across calls.
#include "quant/qwz_all_gather.hpp"

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "quant/block_quantize.hpp"

namespace tz {
namespace {

struct QwzScratch {
  std::vector<std::uint8_t> local, gathered;
};

QwzScratch& scratch() {
  thread_local QwzScratch s;
  return s;
}

void check_args(const void* shard, const void* full, std::size_t count, DType dtype,
                const QuantOptions& opts) {
  validate_quant_options(opts);
  if (dtype != DType::f32 && dtype != DType::bf16)
    fail_input("qwz_all_gather: dtype {} is not quantizable (f32 or bf16)", dtype_name(dtype));
  TZ_CHECK(count == 0 || (shard != nullptr && full != nullptr), "qwz_all_gather: null buffer for {} elements",
           count);
}

// Steps 1 and 3 around a gather of `group` pieces done by `gather(local, gathered, bytes)`.
template <typename Gather>
Work quantized_gather(int group, const void* shard, void* full, std::size_t count, DType dtype,
                      const QuantOptions& opts, QuantStats* stats, Gather&& gather) {
  check_args(shard, full, count, dtype, opts);
  if (count == 0) return Work();
  const std::size_t qbytes = quantized_bytes(count, opts);
  QwzScratch& s = scratch();
  s.local.resize(qbytes);
  s.gathered.resize(qbytes * group);
  const QuantStats st = quantize(shard, dtype, count, s.local.data(), opts);
  if (stats) *stats += st;
  gather(s.local.data(), s.gathered.data(), qbytes).wait();
  const std::size_t shard_bytes = count * dtype_bytes(dtype);
  for (int i = 0; i < group; ++i)
    dequantize(s.gathered.data() + i * qbytes, count, static_cast<std::uint8_t*>(full) + i * shard_bytes,
               dtype, opts);
  return Work();
}

}  // namespace

Work qwz_all_gather(Communicator& comm, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts, QuantStats* stats) {
  return quantized_gather(comm.size(), shard, full, count, dtype, opts, stats,
                          [&](const std::uint8_t* local, std::uint8_t* gathered, std::size_t bytes) {
                            return comm.all_gather(local, gathered, bytes, DType::u8);
                          });
}

Work qwz_all_gather(Mesh& mesh, TierSet tiers, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts, QuantStats* stats) {
  return quantized_gather(mesh.group_size(tiers), shard, full, count, dtype, opts, stats,
                          [&](const std::uint8_t* local, std::uint8_t* gathered, std::size_t bytes) {
                            return mesh.all_gather(tiers, local, gathered, bytes, DType::u8);
                          });
}

}  // namespace tz
