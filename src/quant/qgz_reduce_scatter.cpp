// qgZ hierarchical reduce-scatter (qgz_reduce_scatter.hpp): per tier, innermost first,
//   quantize f slices -> all-to-all (u8) -> dequantize + sum in fp32 -> this rank's slice,
// which is the next tier's input. Scratch buffers are per thread (one rank = one thread or process)
// and kept across calls, so steady-state calls allocate nothing.
#include "quant/qgz_reduce_scatter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "quant/block_quantize.hpp"

namespace tz {
namespace {

struct QgzScratch {
  std::vector<std::uint8_t> send, recv;
  std::vector<float> partial[2];
};

QgzScratch& scratch() {
  thread_local QgzScratch s;
  return s;
}

std::atomic<std::size_t> g_fallbacks{0};

// The tiers of `tiers` that move data (fan-out > 1), innermost first.
std::vector<int> moving_tiers(const Topology& topology, TierSet tiers) {
  std::vector<int> out;
  for (int t = 0; t < topology.num_tiers(); ++t)
    if ((tiers & tier_bit(t)) && topology.tier(t).fanout > 1) out.push_back(t);
  return out;
}

void log_fallback_once(const Topology& topology, TierSet tiers, std::size_t count, const QuantOptions& opts) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(
        stderr, "%s",
        fmt::format("tierzero: qgZ: {} elements per shard over {} ({} blocks of {}): quantized slices "
                    "would not be smaller than fp32 ones; using the unquantized reduce-scatter "
                    "(logged once; see qgz_fallback_count)\n",
                    count, topology.tier_set_name(tiers), quant_bits_name(opts.bits), opts.block_size)
            .c_str());
  });
}

}  // namespace

bool qgz_quantized_path(const Topology& topology, TierSet tiers, std::size_t count,
                        const QuantOptions& opts) {
  std::size_t m = count * static_cast<std::size_t>(topology.group_size(tiers));
  for (int t : moving_tiers(topology, tiers)) {
    const std::size_t slice = m / topology.tier(t).fanout;
    if (quantized_bytes(slice, opts) >= slice * sizeof(float)) return false;
    m = slice;
  }
  return true;
}

std::size_t qgz_fallback_count() {
  return g_fallbacks.load();
}

Work qgz_reduce_scatter(Mesh& mesh, TierSet tiers, const float* full_grad, float* shard_out,
                        std::size_t count, const QuantOptions& opts, QuantStats* stats) {
  validate_quant_options(opts);
  const Topology& topo = mesh.topology();
  if (count == 0) return Work();
  TZ_CHECK(full_grad != nullptr && shard_out != nullptr, "qgz_reduce_scatter: null buffer for {} elements",
           count);
  if (!qgz_quantized_path(topo, tiers, count, opts)) {
    ++g_fallbacks;
    log_fallback_once(topo, tiers, count, opts);
    return mesh.reduce_scatter(tiers, full_grad, shard_out, count, DType::f32);
  }
  const std::vector<int> steps = moving_tiers(topo, tiers);
  if (steps.empty()) {  // a group of one: this rank's block is the whole input
    std::memcpy(shard_out, full_grad, count * sizeof(float));
    return Work();
  }
  QgzScratch& s = scratch();
  const float* in = full_grad;
  std::size_t m = count * static_cast<std::size_t>(mesh.group_size(tiers));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int f = topo.tier(steps[i]).fanout;
    const std::size_t slice = m / f;
    const std::size_t qbytes = quantized_bytes(slice, opts);
    s.send.resize(qbytes * f);
    s.recv.resize(qbytes * f);
    for (int j = 0; j < f; ++j) {
      const QuantStats st = quantize(in + j * slice, DType::f32, slice, s.send.data() + j * qbytes, opts);
      if (stats) *stats += st;
    }
    mesh.tier(steps[i]).all_to_all(s.send.data(), s.recv.data(), qbytes, DType::u8).wait();
    float* out = shard_out;
    if (i + 1 < steps.size()) {
      s.partial[i % 2].resize(slice);
      out = s.partial[i % 2].data();
    }
    std::fill(out, out + slice, 0.0f);
    for (int j = 0; j < f; ++j) dequantize_add(s.recv.data() + j * qbytes, slice, out, opts);
    in = out;
    m = slice;
  }
  return Work();
}

}  // namespace tz
