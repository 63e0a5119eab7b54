#include "checkpoint/weight_import.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include "checkpoint/agreed_io.hpp"
#include "checkpoint/checked_file.hpp"
#include "checkpoint/model_file_reader.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"

namespace tz {

ImportResult import_weights(Communicator& world, ShardedEngine& engine, const std::string& path,
                            const ImportOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ImportResult res;
  run_agreed_io(world, {.what = fmt::format("import of {}", path), .timeout_s = options.io_timeout_s}, [&] {
    const ParameterLayout& params = engine.params();
    ModelFileReader weights(path, params);
    engine.restore(0, 0, [&](OptimValue which, int range, std::size_t offset, std::size_t n, float* out) {
      if (which != OptimValue::master) {  // a fresh optimizer: explicitly zero moments
        std::fill(out, out + n, 0.0f);
        return;
      }
      // The range's tensors, which follow each other in the layout (a search, not a scan per range).
      const auto& tensors = params.tensors();
      const auto first = std::lower_bound(tensors.begin(), tensors.end(), range,
                                          [](const ParamTensor& pt, int r) { return pt.range < r; });
      for (int t = static_cast<int>(first - tensors.begin());
           t < static_cast<int>(tensors.size()) && tensors[t].range == range; ++t) {
        const ParamTensor& pt = tensors[t];
        const std::size_t a = std::max(offset, pt.range_offset),
                          b = std::min(offset + n, pt.range_offset + pt.numel);
        if (a < b) weights.read(t, a - pt.range_offset, b - a, out + (a - offset));
      }
    });
    res.format = weights.format();
    res.dtype = weights.dtype();
    res.bytes_read = weights.bytes_read();
  });
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace tz
