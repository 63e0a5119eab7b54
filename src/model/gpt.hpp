// A decoder-only transformer on a backend's device (device/backend.hpp; the cpu one by default), of any
// architecture GptConfig describes (GPT-2, Llama, GPT-NeoX: docs/model.md): token embedding (+ learned
// positions), L pre-norm blocks
//   sequential:  r = x + proj(attn(rot(qkv(n_1(x)))));  x' = r + down(act(fc(n_2(r))))
//   parallel:    r = x + proj(attn(rot(qkv(n_1(x)))));  x' = r + down(act(fc(n_2(x))))
// (n LayerNorm or RMSNorm, rot the rotary positions if any, attn causal with grouped-query heads, act
// GELU or SwiGLU), final norm, LM head (wte when tied, else lm_head), mean cross-entropy over the B*T
// positions.
// The model owns activations for a fixed (B, T) and nothing else: parameters and gradients come
// range by range through a ParamSource (param_source.hpp documents the exact call order).
// With recompute on, only each block's input (B, T, C) is kept; backward recomputes the block's
// activations right after acquiring its range (one extra block forward per block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/device_buffer.hpp"
#include "device/kernels.hpp"
#include "device/weight_ref.hpp"
#include "model/gpt_config.hpp"
#include "model/layer_profile.hpp"
#include "model/param_source.hpp"
#include "model/parameter_layout.hpp"

namespace tz {

struct GptOptions {
  DeviceKind device = DeviceKind::cpu;  // where activations live and the layers run (device/backend.hpp)
  int threads = 1;                      // kernel and OpenBLAS threads (set_kernel_threads)
  bool recompute = false;               // activation recomputation per block
  bool profile = false;                 // sum each layer's wall time into profile() (layer_profile.hpp)
  // GELU and the residual adds in the epilogues of the products beside them (device/kernels.hpp's
  // matmul_gelu_* and matmul_residual_forward): bitwise the same step with fewer passes over memory.
  // Off by default: on a 2-core AVX-512 machine it measured no faster than the separate kernels (within
  // +-5% noise, docs/model.md), the GELU's arithmetic costing about as much inside the product's
  // blocks as the pass it saves, whose data the product had just left in the last-level cache.
  bool fuse_epilogues = false;
};

class Gpt {
 public:
  Gpt(const GptConfig& config, int B, int T, GptOptions options = {});

  const GptConfig& config() const { return layout_.config(); }
  const ParameterLayout& layout() const { return layout_; }
  int batch() const { return B_; }
  int seq() const { return T_; }
  // Floats held for activations and backward scratch (device memory).
  std::size_t activation_floats() const { return acts_.size(); }

  // Forward over tokens (B, T). With targets (B, T) returns the mean loss; without, returns NaN and
  // only the logits are valid. Token and target ids must lie in [0, vocab_size) (InternalError else).
  float forward(ParamSource& params, const std::int32_t* tokens, const std::int32_t* targets);
  // Backward of the last forward (which had targets): grad_buffer(r) += d(loss * grad_scale)/d params.
  void backward(ParamSource& params, float grad_scale = 1.0f);
  // (B, T, V) logits of the last forward (overwritten by backward), copied from the device.
  std::vector<float> logits() const;
  std::vector<float> losses() const;  // (B, T) per-position losses of the last forward
  // Layer times summed since construction or reset_profile() (all zero unless options.profile).
  const LayerProfile& profile() const { return profile_; }
  void reset_profile() { profile_ = {}; }

 private:
  // fch: (N, FC) the MLP's first product; fch_act: (N, F) after GELU or SwiGLU. Norm means are unused
  // with RMSNorm.
  struct BlockActs {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *att_lse, *atty, *res2, *ln2, *ln2_mean, *ln2_rstd, *fch,
        *fch_act;
  };
  // A block's parameters as acquired: the fp32 view, and its four weight matrices from the bf16 copy
  // when the source served one (param_source.hpp), else from the fp32 view.
  struct BlockParams {
    BlockView<const float> v;
    WeightRef qkv_w, attn_proj_w, fc_w, mlp_proj_w;
  };
  BlockParams block_params(const AcquiredParams& p) const;
  // wte of the embeddings range as acquired.
  WeightRef wte(const AcquiredParams& p) const;
  // The LM head's matrix in its range as acquired (wte when tied, else lm_head.weight).
  WeightRef head(const AcquiredParams& p) const;
  // The block's norms and MLP activation, by the config's kinds.
  void norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b);
  void norm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                     const float* mean, const float* rstd);
  void activation_forward(float* act, const float* fch);
  void activation_backward(float* dfch, const float* fch, const float* dact);
  void block_forward(const BlockParams& w, const float* x_in, const BlockActs& a, float* x_out);
  void block_backward(const BlockParams& w, const BlockView<float>& g, const float* x_in, const BlockActs& a);
  const BlockActs& acts_for(int layer) const { return blocks_[options_.recompute ? 0 : layer]; }
  // Runs f, timing it into `slot` when profiling (backward_pass_: into the backward column).
  template <class F>
  void timed(LayerSlot slot, F&& f) {
    LayerTimer timer(options_.profile ? &profile_ : nullptr, slot, backward_pass_);
    f();
  }

  Kernels& kernels() const { return acts_.backend()->kernels(); }

  ParameterLayout layout_;
  int B_, T_;
  GptOptions options_;
  // Every activation pointer below is a device address into acts_: only the kernels read it.
  DeviceBuffer<float> acts_;
  std::vector<float*> x_in_;  // L + 1 residual streams: input of block l; x_in_[L] feeds ln_f
  std::vector<BlockActs> blocks_;
  float *lnf_, *lnf_mean_, *lnf_rstd_, *logits_, *probs_, *losses_;
  float *dres_, *dln_, *dqkv_, *datty_, *dfch_, *dfch_act_;  // backward scratch (dfch_act_ = dfch_ for GELU)
  DeviceBuffer<float> rotary_;  // rotary cos then sin tables (T, R/2) each; empty with learned positions
  DeviceBuffer<std::int32_t> tokens_, targets_;  // (B, T) of the last forward, uploaded
  bool have_targets_ = false;
  bool backward_pass_ = false;  // inside backward's layer calls (recompute is timed as forward)
  LayerProfile profile_;
};

}  // namespace tz
