// A backend's kernel table: every operation the engine, the optimizer and quantization run on device
// data, with its arguments in the backend's memory (backend.hpp). The cpu backend's entries are
// tierzero's CPU paths (device/cpu/: AVX-512, AVX2 or portable, chosen at run time); the emulated
// backend's are the same code behind a translation that checks every buffer against its allocation;
// a GPU backend brings its own (docs/backends.md lists the CUDA counterparts). Each entry documents
// the bytes it reads and writes; results are bitwise the cpu backend's wherever the arithmetic is
// exact, which the tests hold every backend to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/bf16.hpp"
#include "core/dtype.hpp"
#include "core/quant_format.hpp"
#include "device/adamw_args.hpp"
#include "device/decay_segment.hpp"
#include "device/device_buffer.hpp"
#include "device/gemm_args.hpp"

namespace tz {

class Kernels {
 public:
  virtual ~Kernels() = default;

  // --- conversions and elementwise passes over n elements ---
  // out = in rounded to bf16 (nearest even); reads 4n bytes, writes 2n.
  virtual void narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) = 0;
  // out = in widened (exact); reads 2n, writes 4n.
  virtual void widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) = 0;
  // out = a + b in `dtype` (f32; bf16 added in fp32 and rounded once; f64); out may alias a or b.
  virtual void reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a,
                          DevicePtr<const std::byte> b, std::size_t n, DType dtype) = 0;
  // acc += x, x of `dtype` (f32, or bf16 widened): a reduced gradient accumulated into its shard.
  virtual void accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n, DType dtype) = 0;
  // out = narrow(in), then in = 0: a gradient buffer narrowed for its reduction and cleared for the
  // next micro-batch in one pass.
  virtual void narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) = 0;
  // The sum of x[i]^2 in fp64 (a shard's share of the global gradient norm).
  virtual double sum_of_squares(DevicePtr<const float> x, std::size_t n) = 0;

  // --- the optimizer (device/cpu/adamw.hpp defines the arithmetic) ---
  virtual AdamWStateBound adamw_update(DevicePtr<float> params, DevicePtr<const float> grads,
                                       DevicePtr<float> m, DevicePtr<float> v,
                                       std::span<const DecaySegment> segments, std::size_t n, int step,
                                       const AdamWParams& hp, float grad_scale) = 0;
  virtual std::size_t adamw_nonfinite_count(DevicePtr<const float> params, DevicePtr<const float> grads,
                                            DevicePtr<const float> m, DevicePtr<const float> v,
                                            std::span<const DecaySegment> segments, std::size_t n, int step,
                                            const AdamWParams& hp, float grad_scale) = 0;

  // --- block quantization (core/quant_format.hpp; device/cpu/block_quantize.hpp) ---
  // q: quantized_bytes(count, opts) bytes; x: count elements of dtype (f32 or bf16).
  virtual QuantStats quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x, std::size_t count,
                              DType dtype, const QuantOptions& opts) = 0;
  virtual void dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q,
                          std::size_t count, const QuantOptions& opts) = 0;
  virtual void dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                              const QuantOptions& opts) = 0;

  // --- matrix product (device/gemm_args.hpp): every matrix address in this backend's memory ---
  virtual void gemm(const GemmArgs& args) = 0;
};

// A typed device pointer as bytes (the dtype-generic kernels take these).
template <typename T>
DevicePtr<std::byte> as_bytes(DevicePtr<T> p) {
  return device_cast<std::byte>(p);
}
template <typename T>
DevicePtr<const std::byte> as_bytes(DevicePtr<const T> p) {
  return device_cast<const std::byte>(p);
}

}  // namespace tz
