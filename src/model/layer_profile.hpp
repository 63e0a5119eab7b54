// Wall time of the model's layers, summed over forward and backward calls while GptOptions::profile is
// on: which layers bound a step (matrix products or the elementwise and softmax work around them).
// The model layer returns the numbers; benchmarks and tools print them.
#pragma once

#include <array>
#include <chrono>
#include <string_view>

#include "core/timing.hpp"

namespace tz {

enum class LayerSlot {
  encoder,        // token + position embedding
  layernorm,      // ln_1, ln_2 of every block and ln_f
  qkv,            // qkv linear layer
  attention,      // causal attention (QK^T, softmax, PV)
  attn_proj,      // attention output projection
  residual,       // residual adds
  fc,             // MLP up-projection
  gelu,           // GELU
  mlp_proj,       // MLP down-projection
  lm_head,        // logits = ln_f(x) wte^T
  cross_entropy,  // softmax + cross-entropy
  count
};
inline constexpr int kLayerSlots = static_cast<int>(LayerSlot::count);

inline std::string_view layer_slot_name(LayerSlot s) {
  constexpr std::array<std::string_view, kLayerSlots> names = {
      "encoder", "layernorm", "qkv",      "attention", "attn_proj",    "residual",
      "fc",      "gelu",      "mlp_proj", "lm_head",   "cross_entropy"};
  return names[static_cast<int>(s)];
}

struct LayerProfile {
  std::array<double, kLayerSlots> forward_s{}, backward_s{};  // recompute counts as forward
  double total_s() const {
    double t = 0;
    for (int i = 0; i < kLayerSlots; ++i) t += forward_s[i] + backward_s[i];
    return t;
  }
};

// Adds the scope's wall time to one slot when `profile` is non-null.
class LayerTimer {
 public:
  LayerTimer(LayerProfile* profile, LayerSlot slot, bool backward)
      : target_(profile ? &(backward ? profile->backward_s : profile->forward_s)[static_cast<int>(slot)]
                        : nullptr) {
    if (target_) t0_ = std::chrono::steady_clock::now();
  }
  ~LayerTimer() {
    if (target_) *target_ += seconds_since(t0_);
  }
  LayerTimer(const LayerTimer&) = delete;
  LayerTimer& operator=(const LayerTimer&) = delete;

 private:
  double* target_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace tz
