// qwZ all-gather (qwz_all_gather.hpp): quantize the local shard once, all-gather codes + scales as
// u8 (flat, or Mesh's hierarchical all-gather: outer tier first), dequantize every piece.
//   step 1  quantize(shard) -> q_local                   host task (after `after`), no traffic
//   step 2  all-gather q_local -> q_all over the group   issued now, starts once step 1 is done;
//                                                        G pieces of quantized_bytes(count) bytes
//   step 3  dequantize piece i -> full[i * count ...]    host task after step 2, for i in 0..G-1
// Both host tasks run on the calling thread's weight host stream; the code buffers come from its
// scratch pool and go back when step 3 has run. A group of one sends nothing: step 3 dequantizes
// the local codes.
#include "quant/qwz_all_gather.hpp"

#include <cstdint>
#include <utility>

#include "core/cpu_terms.hpp"
#include "core/error.hpp"
#include "device/cpu/block_quantize.hpp"
#include "device/host_stream.hpp"
#include "device/kernels.hpp"
#include "quant/collective_after.hpp"
#include "quant/scratch_pool.hpp"

namespace tz {
namespace {

void check_args(const void* shard, const void* full, std::size_t count, DType dtype,
                const QuantOptions& opts) {
  validate_quant_options(opts);
  if (dtype != DType::f32 && dtype != DType::bf16)
    fail_input("qwz_all_gather: dtype {} is not quantizable (f32 or bf16)", dtype_name(dtype));
  TZ_CHECK(count == 0 || (shard != nullptr && full != nullptr), "qwz_all_gather: null buffer for {} elements",
           count);
}

// Steps 1-3 around a gather of `group` pieces: `first` is the communicator the gather starts on
// (null for a group of one), `gather(local, gathered, bytes)` issues it.
// The shard and the full buffer are memory of `dev` (CommOptions::device); so are the code buffers,
// and the quantization runs as its kernels.
template <typename Gather>
Work quantized_gather(Backend& dev, int group, Communicator* first, const void* shard, void* full,
                      std::size_t count, DType dtype, const QuantOptions& opts, QuantStats* stats,
                      const Work& after, Gather&& gather) {
  check_args(shard, full, count, dtype, opts);
  if (count == 0) return Work();
  HostStream& host = host_stream(HostLane::weights);
  const std::size_t qbytes = quantized_bytes(count, opts);
  ScratchBuffer local = quant_scratch(dev).get(qbytes);
  ScratchBuffer gathered = group > 1 ? quant_scratch(dev).get(qbytes * group) : local;
  const DevicePtr<const std::byte> x(&dev, static_cast<const std::byte*>(shard));
  const DevicePtr<std::byte> y(&dev, static_cast<std::byte*>(full));
  Work quantized = host.enqueue(
      [=, &dev] {
        const CpuTermScope charged(CpuTerm::quantization);
        const QuantStats st =
            dev.kernels().quantize(device_cast<std::uint8_t>(local->data()), x, count, dtype, opts);
        if (stats) *stats += st;
      },
      {after});
  Work arrived = quantized;
  if (group > 1) {
    TZ_CHECK(first != nullptr, "qwz_all_gather over {} ranks without a communicator", group);
    first->stream_wait(quantized);
    arrived = gather(reinterpret_cast<const std::uint8_t*>(local->data().address()),
                     reinterpret_cast<std::uint8_t*>(gathered->data().address()), qbytes);
  }
  return host.enqueue(
      [=, &dev] {
        const CpuTermScope charged(CpuTerm::quantization);
        const std::size_t shard_bytes = count * dtype_bytes(dtype);
        const DevicePtr<const std::uint8_t> codes =
            device_cast<const std::uint8_t>(std::as_const(*gathered).data());
        for (int i = 0; i < group; ++i)
          dev.kernels().dequantize(y + i * shard_bytes, dtype, codes + i * qbytes, count, opts);
        (void)local;  // the local codes live until the gather that reads them is done
      },
      {arrived});
}

}  // namespace

Work qwz_all_gather(Communicator& comm, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts, QuantStats* stats, const Work& after) {
  return quantized_gather(backend(comm.options().device), comm.size(), &comm, shard, full, count, dtype, opts,
                          stats, after,
                          [&](const std::uint8_t* local, std::uint8_t* gathered, std::size_t bytes) {
                            return comm.all_gather(local, gathered, bytes, DType::u8);
                          });
}

Work qwz_all_gather(Mesh& mesh, TierSet tiers, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts, QuantStats* stats, const Work& after) {
  check_args(shard, full, count, dtype, opts);  // before planning: bad input is an InputError
  const CollectiveRequest request{.kind = CollectiveKind::all_gather,
                                  .tiers = tiers,
                                  .count = count,
                                  .dtype = dtype,
                                  .quant_bits = static_cast<int>(opts.bits),
                                  .quant_block = opts.block_size};
  return qwz_all_gather(mesh, request, plan_collective(mesh.topology(), mesh.with_shared_memory(request)),
                        shard, full, stats, after);
}

Work qwz_all_gather(Mesh& mesh, const CollectiveRequest& request, const CollectivePlan& plan,
                    const void* shard, void* full, QuantStats* stats, const Work& after) {
  TZ_CHECK(plan.quant == CollectiveQuant::qwz, "qwz_all_gather of a {} plan",
           collective_route_name(plan.route));
  const int group = mesh.group_size(request.tiers);
  return quantized_gather(backend(mesh.world().options().device), group,
                          group > 1 ? first_step_communicator(mesh, plan, request.tiers) : nullptr, shard,
                          full, request.count, request.dtype, request.quant_options(), stats, after,
                          [&](const std::uint8_t* local, std::uint8_t* gathered, std::size_t bytes) {
                            TZ_CHECK_EQ(bytes, plan.wire_count);
                            return mesh.execute(plan, CollectiveKind::all_gather, request.tiers, local,
                                                gathered);
                          });
}

}  // namespace tz
