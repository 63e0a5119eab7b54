// How a system runs a partition plan, for the cost model (docs/cost_model.md, "Systems"): the same
// plan (which state is sharded where) costs differently in tierzero's engine and in DeepSpeed.
//
//   tierzero   the engine as it runs: one collective per range (the plan's StepSchedule, message for
//              message), multi-tier collectives hierarchical or, with collectives = flat, one ring in
//              shard order (every hop crosses the outermost tier); quantization kernels inside the
//              collective; measured curves by library "tierzero" (calibration of this machine).
//   deepspeed  DeepSpeed ZeRO-3 / ZeRO++ (and the paper's scheme, built on it) as it runs: every
//              collective is an NCCL/RCCL call over its process group (a multi-tier group is one flat
//              ring on NCCL's channels), weights are gathered per module (each nn.Module's parameters
//              in one all-gather; parameters under stage3_param_persistence_threshold elements are
//              persistent and never gathered), gradients are reduced in buckets of reduce_bucket_size
//              elements, qwZ dequantizes on the compute stream before use, qgZ's kernels run inside
//              the reduction; measured curves by library "rccl" or "nccl".
// DeepSpeed's defaults are those of deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig):
// reduce_bucket_size 5e8, stage3_prefetch_bucket_size 5e7 (about one module ahead at these model
// sizes: tierzero's prefetch of one range is the nearest), stage3_param_persistence_threshold 1e5.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tz::perf {

enum class Runtime { tierzero, deepspeed };
std::string_view runtime_name(Runtime r);
// "tierzero" or "deepspeed"; InputError naming `option` otherwise.
Runtime parse_runtime(std::string_view text, std::string_view option);

inline constexpr double kDeepSpeedReduceBucketElements = 5e8;
inline constexpr double kDeepSpeedPersistenceThreshold = 1e5;

// The libraries whose measured curves describe this runtime's collectives, in order of preference.
std::vector<std::string> curve_libraries(Runtime r);

}  // namespace tz::perf
