// qgZ hierarchical reduce-scatter (qgz_reduce_scatter.hpp): per tier, innermost first,
//   quantize f slices -> all-to-all (u8) -> dequantize + sum in fp32 -> this rank's slice,
// which is the next tier's input. The host steps are tasks on the calling thread's gradient host
// stream: task i dequantizes and sums step i-1's slices and quantizes step i's; each all-to-all is
// issued at call time behind the task that fills it. Buffers come from the thread's scratch pool
// and go back when the last task that reads them has run, so steady-state calls allocate nothing.
#include "quant/qgz_reduce_scatter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cpu_terms.hpp"
#include "core/error.hpp"
#include "device/cpu/block_quantize.hpp"
#include "device/host_stream.hpp"
#include "device/kernels.hpp"
#include "quant/collective_after.hpp"
#include "quant/scratch_pool.hpp"

namespace tz {
namespace {

std::atomic<std::size_t> g_fallbacks{0};

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

std::size_t qgz_fallback_count() {
  return g_fallbacks.load();
}

Work qgz_reduce_scatter(Mesh& mesh, TierSet tiers, const float* full_grad, float* shard_out,
                        std::size_t count, const QuantOptions& opts, QuantStats* stats, const Work& after) {
  validate_quant_options(opts);  // before planning: bad input is an InputError
  const CollectiveRequest request{.kind = CollectiveKind::reduce_scatter,
                                  .tiers = tiers,
                                  .count = count,
                                  .dtype = DType::f32,
                                  .quant_bits = static_cast<int>(opts.bits),
                                  .quant_block = opts.block_size};
  return qgz_reduce_scatter(mesh, request, plan_collective(mesh.topology(), mesh.with_shared_memory(request)),
                            full_grad, shard_out, stats, after);
}

Work qgz_reduce_scatter(Mesh& mesh, const CollectiveRequest& request, const CollectivePlan& plan,
                        const float* full_grad, float* shard_out, QuantStats* stats, const Work& after) {
  const std::size_t count = request.count;
  if (count == 0) return Work();
  TZ_CHECK(full_grad != nullptr && shard_out != nullptr, "qgz_reduce_scatter: null buffer for {} elements",
           count);
  const Topology& topo = mesh.topology();
  const QuantOptions opts = request.quant_options();
  if (plan.quant == CollectiveQuant::qgz_fallback) {
    ++g_fallbacks;
    log_fallback_once(topo, request.tiers, count, opts);
    start_after(mesh, plan, request.tiers, after);
    return mesh.execute(plan, CollectiveKind::reduce_scatter, request.tiers, full_grad, shard_out);
  }
  TZ_CHECK(plan.quant == CollectiveQuant::qgz, "qgz_reduce_scatter of a {} plan",
           collective_route_name(plan.route));
  HostStream& host = host_stream(HostLane::gradients);
  // The gradient, the shard and the code buffers are memory of the world's backend; the quantization
  // runs as its kernels.
  Backend& dev = backend(mesh.world().options().device);
  Kernels* k = &dev.kernels();
  if (plan.steps.empty())  // a group of one: this rank's block is the whole input
    return host.enqueue([=, &dev] { copy_bytes(dev, shard_out, full_grad, count * sizeof(float)); }, {after});

  ScratchPool& pool = quant_scratch(dev);
  // Quantizes the f slices of `slice` elements of `in` into `send`, each on its own.
  auto quantize_slices = [opts, stats, k](DevicePtr<const float> in, std::size_t slice, int f,
                                          std::size_t qbytes, DevicePtr<std::byte> send) {
    const CpuTermScope charged(CpuTerm::quantization);
    for (int j = 0; j < f; ++j) {
      const QuantStats st = k->quantize(device_cast<std::uint8_t>(send + j * qbytes),
                                        as_bytes(in + j * slice), slice, DType::f32, opts);
      if (stats) *stats += st;
    }
  };
  // Sums the f received slices of `slice` elements into `out`, in peer order, in fp32.
  auto sum_slices = [opts, k, &dev](DevicePtr<const std::byte> recv, std::size_t slice, int f,
                                    std::size_t qbytes, DevicePtr<float> out) {
    const CpuTermScope charged(CpuTerm::quantization);
    dev.fill_bytes(out.address(), 0, slice * sizeof(float));
    for (int j = 0; j < f; ++j)
      k->dequantize_add(out, device_cast<const std::uint8_t>(recv + j * qbytes), slice, opts);
  };
  const DevicePtr<const float> grad_in(&dev, full_grad);
  const DevicePtr<float> grad_out(&dev, shard_out);

  std::size_t m = count * static_cast<std::size_t>(mesh.group_size(request.tiers));
  const int f_first = plan.steps.front().group_size;
  std::size_t slice = m / f_first, qbytes = quantized_bytes(slice, opts);
  ScratchBuffer send = pool.get(qbytes * f_first);
  Work ready = host.enqueue([=] { quantize_slices(grad_in, slice, f_first, qbytes, send->data()); }, {after});
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const TierStep& step = plan.steps[i];
    const int f = step.group_size;
    TZ_CHECK_EQ(m / f, slice);
    TZ_CHECK_EQ(step.payload_bytes, qbytes * f);
    ScratchBuffer recv = pool.get(qbytes * f);
    Communicator& comm = mesh.tier(step.tier);
    comm.stream_wait(ready);
    const Work arrived =
        comm.all_to_all(send->data().address(), recv->data().address(), qbytes, DType::u8, step.algorithm);
    if (i + 1 == plan.steps.size())
      return host.enqueue(
          [=] {
            sum_slices(std::as_const(*recv).data(), slice, f, qbytes, grad_out);
            (void)send;  // the all-to-all reads it until `arrived`
          },
          {arrived});
    // The sum is the next step's input: quantize its slices at once, in the same task.
    const int f_next = plan.steps[i + 1].group_size;
    const std::size_t slice_next = slice / f_next, qbytes_next = quantized_bytes(slice_next, opts);
    ScratchBuffer partial = pool.get(slice * sizeof(float));
    ScratchBuffer send_next = pool.get(qbytes_next * f_next);
    ready = host.enqueue(
        [=] {
          const DevicePtr<float> sum = device_cast<float>(partial->data());
          sum_slices(std::as_const(*recv).data(), slice, f, qbytes, sum);
          quantize_slices(sum, slice_next, f_next, qbytes_next, send_next->data());
          (void)send;  // the all-to-all reads it until `arrived`
        },
        {arrived});
    m = slice;
    slice = slice_next;
    qbytes = qbytes_next;
    send = send_next;
  }
  TZ_CHECK(false, "qgz_reduce_scatter: no last step");
  __builtin_unreachable();
}

}  // namespace tz
