// Device time of the block-quantization kernels of qwZ and qgZ (docs/cost_model.md, "Kernels"). The
// kernels stream memory, so their time is the bytes they read and write over the rate at which the
// device moves memory for them:
//   rate      DeviceSpec::quant_GBps when the topology gives one (calibrated from bench quant: the
//             measured GB/s of tensor times the bytes moved per tensor byte), else
//             memory_bandwidth_GBps x kernel efficiency (CostOptions; documented default). A device
//             with neither prices the kernels at 0 (and the output says so).
//   quantize  n values of s bytes to b-bit codes: reads n s, writes q(n) = quantized_bytes(n, b, B)
//             (codes padded to whole blocks + one fp32 scale per block);
//   dequantize the reverse: reads q(n), writes n s;
//   dequantize-reduce (qgZ, per tier of fan-out f, input n values): reads the f received slices' codes
//             q(n) and writes the n/f fp32 sums.
// Per collective: qwZ quantizes the rank's shard once (n = shard) and dequantizes the gathered range
// (n = padded range); qgZ on each tier quantizes its input n_i (fp32 partial sums in tierzero, the
// bf16 gradient first in DeepSpeed) and dequantize-reduces it, n_{i+1} = n_i / f_i.
#pragma once

#include <cstddef>

#include "topology/topology.hpp"

namespace tz::perf {

// Bytes per second of kernel memory traffic; 0 when the device gives no figure.
double quant_kernel_bytes_per_s(const DeviceSpec& device, double kernel_efficiency);

double quantize_bytes_moved(double n, double value_bytes, int bits, std::size_t block);
double dequantize_bytes_moved(double n, double value_bytes, int bits, std::size_t block);
double dequantize_reduce_bytes_moved(double n, int fanout, int bits, std::size_t block);

}  // namespace tz::perf
