// The "(known: ...)" part of an unknown-key error: the whole list when it is short, else the keys
// nearest to the one given (by edit distance) and how many there are, so that a reader with dozens
// of keys (DeepSpeed's zero_optimization) still gives one short line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tz {

// E.g. "known: stage, offload_param" or "nearest: stage, stage3_gather_16bit_weights_on_model_save,
// ...; 31 keys in all".
std::string known_keys_text(std::string_view given, const std::vector<std::string_view>& known);

}  // namespace tz
