// How a trainer asks for data: a callback that fills one micro-batch of (B, T) input token ids and
// the (B, T) targets (the inputs shifted by one position). A DataLoader's next() is the usual one.
#pragma once

#include <cstdint>
#include <functional>

namespace tz {

using BatchFn = std::function<void(std::int32_t* inputs, std::int32_t* targets)>;

}  // namespace tz
