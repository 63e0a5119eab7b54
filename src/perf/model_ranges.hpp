// The model's parameter ranges and acquisition order as the plan library takes them, from the model
// library's ParameterLayout and range schedule (model/), without including both libraries' headers
// in one translation unit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/gpt_config.hpp"

namespace tz::perf {

// The parameter tensors of one module (an nn.Module with parameters, as DeepSpeed hooks them: a
// LayerNorm, a Linear with its bias, an embedding), named by the tensor names without their last part.
struct ModuleParams {
  std::string name;                       // "h.3.attn.qkv", "wte", "ln_f"
  std::vector<std::size_t> tensor_numel;  // its tensors, in range order
};

struct ModelRanges {
  std::vector<std::string> names;
  std::vector<std::size_t> numel;
  std::vector<int> forward;   // range acquired, in forward order (the tied embedding twice)
  std::vector<int> backward;  // in backward order
  int head = 0;               // the range holding the LM head: the embeddings when tied, else lm_head
  int final_ln = 0;           // the head's compute is the head range's acquisition next to final_ln
  std::size_t total_numel = 0;
  std::vector<std::vector<ModuleParams>> modules;  // per range, in range order
};

ModelRanges model_ranges(const GptConfig& config);
// True when the range is a transformer block.
bool is_block_range(const GptConfig& config, int range);

}  // namespace tz::perf
