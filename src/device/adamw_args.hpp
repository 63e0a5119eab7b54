// The arguments of the AdamW kernel every backend implements (device/kernels.hpp; the CPU one is
// device/cpu/adamw.hpp, which defines the arithmetic): its hyper-parameters, and the bound of the
// state an update wrote, which lets the engine prove the next update finite without reading the state.
#pragma once

namespace tz {

struct AdamWParams {
  float lr = 3e-4f;  // the step's learning rate (from the schedule)
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  bool decoupled = true;  // AdamW; false: Adam with the decay as an L2 term of the gradient
};

// The largest |p|, |m| and v of an optimizer state, and min(0, smallest v) (negative only where a v
// is); combine slices with merge.
struct AdamWStateBound {
  float abs_p = 0.0f, abs_m = 0.0f, v = 0.0f, v_min = 0.0f;
  void merge(const AdamWStateBound& o);
};

// True when an AdamW update (any backend's: the arithmetic is fixed) cannot leave any element non-finite, for
// a finite state within `state` and gradients with |grads[i]| <= max_abs_grad: adamw_nonfinite_count is then
// 0 without reading the state. A bound on each intermediate (|g|, |m|, v, the step) stays far below FLT_MAX;
// false when it does not, or eps <= 0 (a zero denominator), or a hyper-parameter is out of range or not
// finite. The engine's state bound comes from its last update, so it skips the counting pass on a normal
// step.
bool adamw_update_stays_finite(const AdamWStateBound& state, double max_abs_grad, int step,
                               const AdamWParams& hp, float grad_scale = 1.0f);

}  // namespace tz
