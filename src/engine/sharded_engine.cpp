#include "engine/sharded_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "model/range_schedule.hpp"
#include "optim/grad_clip.hpp"

namespace tz {
namespace {

std::vector<RangeSpec> range_specs(const ParameterLayout& params) {
  std::vector<RangeSpec> out;
  for (const auto& r : params.ranges()) out.push_back({r.name, r.numel});
  return out;
}

}  // namespace

ShardedEngine::ShardedEngine(Mesh& mesh, const GptConfig& config, const PartitionPlan& plan,
                             const EngineOptions& options)
    : mesh_(mesh),
      options_(options),
      model_(config, plan.options().micro_batch_size, options.seq,
             {.threads = options.threads, .recompute = options.recompute}) {
  const Topology& topo = mesh.topology();
  plan.validate_world(topo, mesh.world().size());
  layout_ = std::make_unique<ShardLayout>(range_specs(model_.layout()), topo, plan);
  const AcquisitionOrder order{forward_acquire_order(config), backward_acquire_order(config)};
  schedule_ = std::make_unique<StepSchedule>(*layout_, order);
  state_ = std::make_unique<ShardedState>(*layout_, model_.layout(), mesh.world().rank(), options.seed);
  source_ = std::make_unique<EngineParamSource>(mesh, *state_, model_.layout(), order.forward, order.backward,
                                                schedule_->reused_in_backward());
  if (layout_->boundary_reduce_tiers() != 0 ||
      layout_->domain(ModelState::grad) != layout_->domain(ModelState::optim))
    o_grad_.assign(layout_->state_shard_numel(ModelState::optim), 0.0f);
  refresh_ = WeightBuffer(state_->compute_dtype(), layout_->state_shard_numel(ModelState::optim));
  inputs_.resize(static_cast<std::size_t>(model_.batch()) * model_.seq());
  targets_.resize(inputs_.size());
  // Sub-communicators are created collectively: make every one the step uses now, in one order.
  for (int t = 0; t < topo.num_tiers(); ++t) mesh.tier(t);
  for (const auto& c : schedule_->collectives())  // flat plans: the groups of their flat steps
    for (const auto& s : c.steps)
      if (layout_->runs_flat(s.tiers)) mesh.flat_group(s.tiers);
}

void ShardedEngine::all_reduce_scalar(double* value, TierSet tiers) {
  // A scalar cannot be split: it is all-reduced tier by tier, inner first (StepSchedule's scalars).
  const Topology& topo = mesh_.topology();
  for (int t = 0; t < topo.num_tiers(); ++t)
    if ((tiers & tier_bit(t)) && topo.tier(t).fanout > 1)
      mesh_.tier(t).all_reduce(value, value, 1, DType::f64).wait();
}

EngineStep ShardedEngine::step(const BatchFn& next_batch) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto traffic0 = mesh_.ledger().snapshot();
  const double exposed0 = source_->exposed_gather_seconds();
  const int accum = layout_->plan().options().grad_accum_steps;
  const int world = mesh_.world().size();
  const float grad_scale = 1.0f / (static_cast<float>(accum) * static_cast<float>(world));

  double local_loss = 0;
  for (int k = 0; k < accum; ++k) {
    next_batch(inputs_.data(), targets_.data());
    source_->begin_forward();
    local_loss += model_.forward(*source_, inputs_.data(), targets_.data());
    source_->begin_backward();
    model_.backward(*source_, grad_scale);
    source_->finish_backward();
  }
  local_loss /= accum;
  if (step_ == options_.inject_nan_step && mesh_.world().rank() == options_.inject_nan_rank &&
      !state_->grad().empty())
    state_->grad()[0] = std::numeric_limits<float>::quiet_NaN();

  EngineStep out;
  out.step = step_;
  boundary(out, local_loss);
  ++step_;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens = static_cast<double>(accum) * model_.batch() * model_.seq();
  out.tokens_per_s = tokens * world / out.seconds;
  out.gflops = accum * training_step_flops(model_.config(), model_.batch(), model_.seq()) / out.seconds / 1e9;
  out.exposed_gather_s = source_->exposed_gather_seconds() - exposed0;
  out.traffic = mesh_.ledger().since(traffic0);
  return out;
}

void ShardedEngine::boundary(EngineStep& out, double local_loss) {
  const ShardLayout& L = *layout_;
  const int R = L.num_ranges();
  ShardedState& S = *state_;
  std::vector<Work> works;
  auto wait_all = [&] {
    for (auto& w : works) w.wait();
    works.clear();
  };

  // G shard -> O shard, then across the replicas of O. When G and O share a domain they share a layout.
  float* o_grad = o_grad_.empty() ? S.grad().data() : o_grad_.data();
  if (!o_grad_.empty()) {
    const TierSet bt = L.boundary_reduce_tiers();
    for (int r = 0; r < R; ++r) {
      const float* g = S.grad().data() + S.local(ModelState::grad, r);
      float* o = o_grad + S.local(ModelState::optim, r);
      const std::size_t n = S.span(ModelState::optim, r).numel;
      works.push_back(L.runs_flat(bt) ? mesh_.flat_group(bt).reduce_scatter(g, o, n, DType::f32)
                                      : mesh_.reduce_scatter(bt, g, o, n, DType::f32));
    }
    wait_all();
  }
  if (mesh_.topology().group_size(L.replica_tiers()) > 1) {
    for (int r = 0; r < R; ++r) {
      float* g = o_grad + S.local(ModelState::optim, r);
      const std::size_t n = S.span(ModelState::optim, r).numel;
      works.push_back(L.runs_flat(L.replica_tiers())
                          ? mesh_.flat_group(L.replica_tiers()).all_reduce(g, g, n, DType::f32)
                          : mesh_.all_reduce(L.replica_tiers(), g, g, n, DType::f32));
    }
    wait_all();
  }

  // Global norm: each O shard once, summed over O's domain (replicas hold the same values).
  double sumsq = 0;
  for (int r = 0; r < R; ++r)
    sumsq += sum_of_squares(o_grad + S.local(ModelState::optim, r), S.span(ModelState::optim, r).numel);
  all_reduce_scalar(&sumsq, L.norm_tiers());
  out.grad_norm = std::sqrt(sumsq);
  double nonfinite = (std::isfinite(local_loss) && std::isfinite(out.grad_norm)) ? 0.0 : 1.0;
  all_reduce_scalar(&nonfinite, tiers_up_to(mesh_.topology().num_tiers() - 1));
  out.skipped = nonfinite > 0;
  out.lr = lr_at(options_.schedule, step_ - skipped_);

  if (!out.skipped) {
    AdamWParams hp = options_.adamw;
    hp.lr = out.lr;
    const float clip = clip_scale(out.grad_norm, options_.grad_clip);
    const int adam_step = step_ - skipped_ + 1;
    for (int r = 0; r < R; ++r) {
      const ShardSpan sp = S.span(ModelState::optim, r);
      if (sp.valid_numel == 0) continue;
      const std::size_t at = S.local(ModelState::optim, r);
      const auto segments = params().decay_segments(params().range(r).offset + sp.offset, sp.valid_numel);
      adamw_update(S.master().data() + at, o_grad + at, S.adam_m().data() + at, S.adam_v().data() + at,
                   segments, sp.valid_numel, adam_step, hp, clip);
    }
    // Refresh W from the new master weights: gather over (tW, tO], or slice when W is no coarser than O.
    const DType dtype = S.compute_dtype();
    to_compute_dtype(refresh_.at(0), dtype, S.master().data(), S.master().size());
    const TierSet rt = L.refresh_gather_tiers();
    for (int r = 0; r < R; ++r) {
      const ShardSpan o = S.span(ModelState::optim, r), w = S.span(ModelState::w_fwd, r);
      std::byte* dst = S.w_fwd().at(S.local(ModelState::w_fwd, r));
      const std::byte* src = refresh_.at(S.local(ModelState::optim, r));
      if (mesh_.topology().group_size(rt) > 1) {
        works.push_back(L.runs_flat(rt) ? mesh_.flat_group(rt).all_gather(src, dst, o.numel, dtype)
                                        : mesh_.all_gather(rt, src, dst, o.numel, dtype));
      } else {
        TZ_CHECK(w.offset >= o.offset && w.offset + w.numel <= o.offset + o.numel,
                 "W shard of range {} outside its O shard", r);
        std::copy_n(src + (w.offset - o.offset) * dtype_bytes(dtype), w.numel * dtype_bytes(dtype), dst);
      }
    }
    wait_all();
  } else {
    ++skipped_;
  }
  std::fill(S.grad().begin(), S.grad().end(), 0.0f);

  double loss = local_loss;
  all_reduce_scalar(&loss, tiers_up_to(mesh_.topology().num_tiers() - 1));
  out.loss = static_cast<float>(loss / mesh_.world().size());
  if (out.skipped && skipped_ > options_.max_nonfinite_steps)
    throw std::runtime_error(
        fmt::format("training stopped at step {}: {} steps had a non-finite loss or gradient norm "
                    "(max_nonfinite_steps = {})",
                    step_, skipped_, options_.max_nonfinite_steps));
}

MemoryPlan ShardedEngine::predicted_memory() const {
  return plan_memory(*layout_);
}

EngineMemory ShardedEngine::allocated_memory() const {
  EngineMemory m;
  m.w_fwd = state_->w_fwd_bytes();
  m.w_bwd = state_->w_bwd_bytes();
  m.grad = state_->grad_bytes();
  m.optim = state_->optim_bytes();
  m.gather_buffers = source_->gather_buffer_bytes();
  m.grad_buffers = source_->grad_buffer_bytes();
  m.boundary_buffers = o_grad_.size() * sizeof(float) + refresh_.bytes();
  m.activations = model_.activation_floats() * sizeof(float);
  return m;
}

std::vector<float> ShardedEngine::gather_master_params() {
  const ShardLayout& L = *layout_;
  std::vector<float> padded(L.max_padded_numel()), flat(params().total_numel());
  for (int r = 0; r < L.num_ranges(); ++r) {
    const ShardSpan sp = state_->span(ModelState::optim, r);
    mesh_
        .all_gather(L.domain(ModelState::optim),
                    state_->master().data() + state_->local(ModelState::optim, r), padded.data(), sp.numel,
                    DType::f32)
        .wait();
    std::copy_n(padded.data(), params().range(r).numel, flat.data() + params().range(r).offset);
  }
  return flat;
}

}  // namespace tz
