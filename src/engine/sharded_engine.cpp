#include "engine/sharded_engine.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/cpu_terms.hpp"
#include "core/error.hpp"
#include "engine/decay_segments.hpp"
#include "model/flops.hpp"
#include "model/range_schedule.hpp"
#include "optim/grad_clip.hpp"
#include "quant/run_collective.hpp"

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
             {.device = options.device, .threads = options.threads, .recompute = options.recompute}) {
  const Topology& topo = mesh.topology();
  plan.validate_world(topo, mesh.world().size());
  layout_ = std::make_unique<ShardLayout>(range_specs(model_.layout()), topo, plan);
  const AcquisitionOrder order{forward_acquire_order(config), backward_acquire_order(config),
                               grads_ready_order(config)};
  schedule_ = std::make_unique<StepSchedule>(*layout_, order, mesh.shared_memory_tiers());
  graph_ = std::make_unique<StepGraph>(*layout_, *schedule_, order, BoundaryMode::pipelined);
  trace_ = std::make_unique<StepTrace>(*graph_, *schedule_);
  trace_->set_enabled(options.trace_collectives);
  Backend& dev = backend(options.device);
  state_ = std::make_unique<ShardedState>(dev, *layout_, model_.layout(), mesh.world().rank(), options.seed);
  issuer_ = std::make_unique<CollectiveIssuer>(mesh, *layout_);
  issuer_->set_tracing(options.trace_collectives);
  issuer_->set_step_trace(trace_.get());
  source_ = std::make_unique<EngineParamSource>(
      *state_, model_.layout(), *issuer_, order.forward, order.backward, schedule_->reused_in_backward(),
      [this](int range, const Work& ready) { start_boundary_reduce(range, ready); });
  if (layout_->boundary_reduce_tiers() != 0 ||
      layout_->domain(ModelState::grad) != layout_->domain(ModelState::optim))
    o_grad_ = DeviceBuffer<float>(dev, layout_->state_shard_numel(ModelState::optim));
  refresh_ = WeightBuffer(dev, state_->compute_dtype(), layout_->state_shard_numel(ModelState::optim));
  scalars_ = DeviceBuffer<double>(dev, kScalarSlots);
  boundary_work_.resize(layout_->num_ranges());
  refresh_work_.resize(layout_->num_ranges());
  inputs_.resize(static_cast<std::size_t>(model_.batch()) * model_.seq());
  targets_.resize(inputs_.size());
  // Sub-communicators are created collectively: make every one the step uses now, in one order.
  for (int t = 0; t < topo.num_tiers(); ++t) mesh.tier(t);
  for (const auto& c : schedule_->collectives()) mesh.prepare(c.plan, c.request.tiers);
  ledger_ = mesh.ledger().snapshot_both();
}

ShardedEngine::~ShardedEngine() {
  // Collectives still in flight write into buffers owned here: let them land (errors are moot now).
  for (auto* works : {&boundary_work_, &refresh_work_})
    for (Work& w : *works) {
      try {
        w.wait();
      } catch (...) {
      }
    }
  try {
    loss_work_.wait();
  } catch (...) {
  }
}

void ShardedEngine::settle() {
  for (Work& w : refresh_work_) w.wait();
}

DevicePtr<float> ShardedEngine::o_grad(int range) {
  // When G and O share a domain they share a layout: the G shard is the O-shard gradient.
  return (o_grad_.empty() ? state_->grad() : o_grad_).at(state_->local(ModelState::optim, range));
}

void ShardedEngine::start_boundary_reduce(int r, const Work& ready) {
  ShardedState& S = *state_;
  Work w = ready;
  if (!o_grad_.empty())
    w = issuer_->issue(CollectivePurpose::grad_boundary_reduce, r,
                       S.grad().at(S.local(ModelState::grad, r)).address(), o_grad(r).address(), nullptr, w);
  if (mesh_.topology().group_size(layout_->replica_tiers()) > 1)
    w = issuer_->issue(CollectivePurpose::grad_replica_reduce, r, o_grad(r).address(), o_grad(r).address(),
                       nullptr, w);
  boundary_work_[r] = w;
}

EngineStep ShardedEngine::step(const BatchFn& next_batch) {
  // This thread's CPU time, and that of the work it hands to other threads, is this rank's.
  const CpuCountersBinding bound(cpu_counters_.get(), CpuTerm::other);
  const auto t0 = std::chrono::steady_clock::now();
  const double exposed0 = source_->exposed_gather_seconds();
  const double refresh0 = source_->exposed_refresh_seconds();
  const std::size_t nonfinite_blocks0 = source_->nonfinite_quant_blocks();
  const int accum = layout_->plan().options().grad_accum_steps;
  const int world = mesh_.world().size();
  const int rank = mesh_.world().rank();
  const float grad_scale = 1.0f / (static_cast<float>(accum) * static_cast<float>(world));

  double local_loss = 0;
  auto compute_end = t0;
  for (int k = 0; k < accum; ++k) {
    const bool last = k + 1 == accum;
    issuer_->set_micro_batch(k);
    next_batch(inputs_.data(), targets_.data());
    source_->begin_forward(refresh_work_);  // done after the first micro-batch
    {
      const CpuTermScope compute(CpuTerm::model);
      local_loss += model_.forward(*source_, inputs_.data(), targets_.data());
    }
    if (last) {
      // The step's loss is known: sum it while the backward runs (its finiteness is voted on at the
      // boundary).
      local_loss /= accum;
      if (step_ == options_.inject_nan_loss_step && rank == options_.inject_nan_loss_rank)
        local_loss = std::numeric_limits<double>::quiet_NaN();
      local_loss_ = local_loss;
      const DevicePtr<double> sum = scalars_.at(kLossSlot);
      upload(sum, &local_loss, 1);
      loss_work_ = issuer_->issue(CollectivePurpose::loss_sum, -1, sum.address(), sum.address());
      if (step_ == options_.inject_nan_step && rank == options_.inject_nan_rank)
        source_->poison_next_gradient(options_.inject_grad_value, options_.inject_grad_range);
    }
    source_->begin_backward(last);
    {
      const CpuTermScope compute(CpuTerm::model);
      model_.backward(*source_, grad_scale);
    }
    compute_end = std::chrono::steady_clock::now();
    source_->finish_backward();
  }

  EngineStep out;
  out.step = step_;
  out.nonfinite_quant_blocks = source_->nonfinite_quant_blocks() - nonfinite_blocks0;
  boundary(out, out.nonfinite_quant_blocks);
  ++step_;
  const auto t1 = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.exposed_boundary_s = std::chrono::duration<double>(t1 - compute_end).count() +
                           (source_->exposed_refresh_seconds() - refresh0);
  const double tokens = static_cast<double>(accum) * model_.batch() * model_.seq();
  out.tokens_per_s = tokens * world / out.seconds;
  out.gflops = accum * training_step_flops(model_.config(), model_.batch(), model_.seq()) / out.seconds / 1e9;
  out.exposed_gather_s = source_->exposed_gather_seconds() - exposed0;
  out.traffic = issuer_->take_traffic();
  // One snapshot of both views: a refresh completing on a progress thread lands in both or neither.
  const TrafficSnapshot now = mesh_.ledger().snapshot_both();
  for (const auto& [label, t] : TrafficLedger::difference(now.by_tier, ledger_.by_tier))
    if (auto it = out.traffic.find(label); it != out.traffic.end()) it->second.seconds = t.seconds;
  out.by_kind = TrafficLedger::difference(now.by_kind, ledger_.by_kind);
  ledger_ = now;
  out.issued = issuer_->take_trace();
  out.executed = trace_->take();
  // Work of this step still on other threads (the weight refresh) lands in the next step's figures.
  const CpuTermSeconds cpu_now = cpu_counters_->totals();
  out.cpu = cpu_now - cpu_at_last_step_;
  cpu_at_last_step_ = cpu_now;
  return out;
}

float ShardedEngine::evaluate(const BatchFn& next_batch, int batches) {
  TZ_CHECK_GE(batches, 1);
  // The last step's refresh completes first (the forward would wait for it anyway) and stays in the
  // next step's ledger window; the evaluation's own collectives are taken out of it below.
  settle();
  const TrafficSnapshot before = mesh_.ledger().snapshot_both();
  double loss = 0;
  for (int k = 0; k < batches; ++k) {
    next_batch(inputs_.data(), targets_.data());
    source_->begin_forward(refresh_work_);  // the gathers wait for the last step's refreshes
    loss += model_.forward(*source_, inputs_.data(), targets_.data());
  }
  loss /= batches;
  const DevicePtr<double> sum = scalars_.at(kEvalLossSlot);
  upload(sum, &loss, 1);
  issuer_->issue(CollectivePurpose::loss_sum, -1, sum.address(), sum.address()).wait();
  download(&loss, sum, 1);
  // Evaluation is not part of any step: its collectives are left out of the next step's report.
  issuer_->take_traffic();
  issuer_->take_trace();
  trace_->take();
  auto exclude = [](TrafficByKey& window_start, const TrafficByKey& during) {
    for (const auto& [key, t] : during) {
      TierTraffic& w = window_start[key];
      w.bytes += t.bytes;
      w.ops += t.ops;
      w.seconds += t.seconds;
    }
  };
  const TrafficSnapshot after = mesh_.ledger().snapshot_both();
  exclude(ledger_.by_tier, TrafficLedger::difference(after.by_tier, before.by_tier));
  exclude(ledger_.by_kind, TrafficLedger::difference(after.by_kind, before.by_kind));
  return static_cast<float>(loss / mesh_.world().size());
}

void ShardedEngine::boundary(EngineStep& out, std::size_t quant_blocks) {
  const ShardLayout& L = *layout_;
  const int R = L.num_ranges();
  ShardedState& S = *state_;

  // Global norm: each O shard once, summed over O's domain (replicas hold the same values). The
  // per-range sums are added in range order whatever order the reductions finished in.
  std::vector<double> range_sumsq(R, 0.0);
  trace_->boundary(StepOp::backward_done);
  for (int r = 0; r < R; ++r) {
    {
      const CpuWaitScope waiting;
      boundary_work_[r].wait();
    }
    boundary_work_[r] = Work();
    const CpuTermScope norm(CpuTerm::optimizer);
    range_sumsq[r] = kernels().sum_of_squares(o_grad(r), S.span(ModelState::optim, r).numel);
  }
  double sumsq = 0;
  for (double x : range_sumsq) sumsq += x;
  const DevicePtr<double> norm = scalars_.at(kNormSlot);
  upload(norm, &sumsq, 1);
  {
    const CpuWaitScope waiting;
    issuer_->issue(CollectivePurpose::grad_norm, -1, norm.address(), norm.address()).wait();
  }
  download(&sumsq, norm, 1);
  out.grad_norm = std::sqrt(sumsq);
  out.lr = lr_at(options_.schedule, step_ - skipped_);

  AdamWParams hp = options_.adamw;
  hp.lr = out.lr;
  const float clip = clip_scale(out.grad_norm, options_.grad_clip);
  const int adam_step = step_ - skipped_ + 1;
  auto segments_of = [&](int r) {
    const ShardSpan o = S.span(ModelState::optim, r);
    return decay_segments(params(), params().range(r).offset + o.offset, o.valid_numel);
  };
  if (step_ == options_.inject_nan_optim_step && mesh_.world().rank() == options_.inject_nan_optim_rank)
    for (int r = 0; r < R; ++r)
      if (S.span(ModelState::optim, r).valid_numel > 0) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        upload(S.adam_m().at(S.local(ModelState::optim, r)), &nan, 1);
        optim_bound_.reset();
        break;
      }

  // The non-finite vote: this rank's counts per place, summed over the world, so that every rank
  // takes the same decision. The optimizer is checked before anything is written (the same
  // arithmetic as the update), so a skipped step leaves the state as it was; the check is a pass
  // over the state unless the last update's bound proves its count 0 (no |gradient| exceeds the
  // global norm).
  trace_->boundary(StepOp::optimizer_check);
  std::array<double, kNonfiniteVoteCount> vote{};
  vote[0] = std::isfinite(local_loss_) ? 0.0 : 1.0;
  vote[1] = std::isfinite(out.grad_norm) ? 0.0 : 1.0;
  vote[2] = static_cast<double>(quant_blocks);
  const bool proven_finite =
      optim_bound_ && adamw_update_stays_finite(*optim_bound_, out.grad_norm, adam_step, hp, clip);
  if (vote[1] == 0 && !proven_finite)
    for (int r = 0; r < R; ++r) {
      const ShardSpan o = S.span(ModelState::optim, r);
      if (o.valid_numel == 0) continue;
      const std::size_t at = S.local(ModelState::optim, r);
      const CpuTermScope check(CpuTerm::optimizer);
      vote[3] += static_cast<double>(
          kernels().adamw_nonfinite_count(S.master().at(at), o_grad(r), S.adam_m().at(at), S.adam_v().at(at),
                                          segments_of(r), o.valid_numel, adam_step, hp, clip));
    }
  const DevicePtr<double> votes = scalars_.at(kVoteSlot);
  upload(votes, vote.data(), vote.size());
  {
    const CpuWaitScope waiting;
    issuer_->issue(CollectivePurpose::nonfinite_flag, -1, votes.address(), votes.address()).wait();
  }
  download(vote.data(), votes, vote.size());
  out.nonfinite = {.loss_ranks = static_cast<std::uint64_t>(vote[0]),
                   .grad_ranks = static_cast<std::uint64_t>(vote[1]),
                   .quant_blocks = static_cast<std::uint64_t>(vote[2]),
                   .optim_values = static_cast<std::uint64_t>(vote[3])};
  out.skipped = out.nonfinite.any();

  if (!out.skipped) {
    const DType dtype = S.compute_dtype();
    const bool gathered = mesh_.topology().group_size(L.refresh_gather_tiers()) > 1;
    AdamWStateBound bound;
    for (int r = 0; r < R; ++r) {
      const ShardSpan o = S.span(ModelState::optim, r), w = S.span(ModelState::w_fwd, r);
      const std::size_t at = S.local(ModelState::optim, r);
      trace_->boundary(StepOp::adamw, r);
      if (o.valid_numel > 0) {
        const CpuTermScope update(CpuTerm::optimizer);
        bound.merge(kernels().adamw_update(S.master().at(at), o_grad(r), S.adam_m().at(at), S.adam_v().at(at),
                                           segments_of(r), o.valid_numel, adam_step, hp, clip));
      }
      // Refresh W from the new master weights at once: gather over (tW, tO] (left in flight for the
      // next forward), or slice when W is no coarser than O.
      {
        const CpuWaitScope waiting;
        refresh_work_[r].wait();  // the previous refresh read this range's buffer (long done)
      }
      {
        // In bf16 a narrowing; in fp32 a copy of the range into the refresh buffer.
        const CpuTermScope converting(dtype == DType::f32 ? CpuTerm::packing : CpuTerm::narrowing);
        to_compute_dtype(refresh_.at(at), dtype, S.master().at(at), o.numel);
      }
      const DevicePtr<std::byte> dst = S.w_fwd().at(S.local(ModelState::w_fwd, r));
      const DevicePtr<const std::byte> src = refresh_.at(at);
      if (gathered) {
        refresh_work_[r] = issuer_->issue(CollectivePurpose::weight_refresh, r, src.address(), dst.address());
      } else {
        TZ_CHECK(w.offset >= o.offset && w.offset + w.numel <= o.offset + o.numel,
                 "W shard of range {} outside its O shard", r);
        const CpuTermScope packing(CpuTerm::packing);
        copy_on_device(dst, src + (w.offset - o.offset) * dtype_bytes(dtype), w.numel * dtype_bytes(dtype));
      }
    }
    optim_bound_ = bound;
  } else {
    ++skipped_;
  }
  S.backend().fill_bytes(S.grad().data().address(), 0, S.grad().bytes());

  {
    const CpuWaitScope waiting;
    loss_work_.wait();
  }
  double loss_sum = 0;
  download(&loss_sum, scalars_.at(kLossSlot), 1);
  out.loss = static_cast<float>(loss_sum / mesh_.world().size());
  if (out.skipped && skipped_ > options_.max_nonfinite_steps) {
    const NonfiniteVote& v = out.nonfinite;
    // Steps are counted from 1 in messages, as in the step log lines.
    throw TrainingError(fmt::format(
        "training stopped at step {}: {} steps were non-finite (max_nonfinite_steps = {}); this step: "
        "non-finite loss on {} rank(s), gradient norm on {} rank(s), {} quantized block(s), {} optimizer "
        "value(s)",
        step_ + 1, skipped_, options_.max_nonfinite_steps, v.loss_ranks, v.grad_ranks, v.quant_blocks,
        v.optim_values));
  }
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
  m.boundary_buffers = o_grad_.bytes() + refresh_.bytes();
  m.activations = model_.activation_floats() * sizeof(float);
  return m;
}

std::vector<float> ShardedEngine::gather_master_params() {
  const ShardLayout& L = *layout_;
  DeviceBuffer<float> padded(state_->backend(), L.max_padded_numel());
  std::vector<float> flat(params().total_numel());
  for (int r = 0; r < L.num_ranges(); ++r) {
    const ShardSpan sp = state_->span(ModelState::optim, r);
    mesh_
        .all_gather(L.domain(ModelState::optim),
                    state_->master().at(state_->local(ModelState::optim, r)).address(),
                    padded.data().address(), sp.numel, DType::f32)
        .wait();
    download(flat.data() + params().range(r).offset, padded.data(), params().range(r).numel);
  }
  return flat;
}

void ShardedEngine::read_optim_values(OptimValue which, int range, std::size_t offset, std::size_t n,
                                      float* out) const {
  TZ_CHECK(offset + n <= optim_span(range).valid_numel, "O values {}..{} of range {} with {}", offset,
           offset + n, range, optim_span(range).valid_numel);
  const DeviceBuffer<float>& buf = which == OptimValue::master   ? state_->master()
                                   : which == OptimValue::adam_m ? state_->adam_m()
                                                                 : state_->adam_v();
  download(out, buf.at(state_->local(ModelState::optim, range) + offset), n);
}

void ShardedEngine::restore(int steps_done, int skipped_steps, const StateReader& read) {
  TZ_CHECK(steps_done >= 0 && skipped_steps >= 0 && skipped_steps <= steps_done,
           "restore at step {}, {} skipped", steps_done, skipped_steps);
  settle();  // a refresh in flight would write the W shards this overwrites
  ShardedState& S = *state_;
  const DType dtype = S.compute_dtype();
  constexpr std::size_t kChunk = std::size_t{1} << 18;  // elements converted at a time: bounded memory
  std::vector<float> tmp;
  DeviceBuffer<float> staged(S.backend(), kChunk);
  // The O shard (master, m, v): read on the host, uploaded; padding zero.
  for (int r = 0; r < layout_->num_ranges(); ++r) {
    const ShardSpan o = S.span(ModelState::optim, r);
    const std::size_t at = S.local(ModelState::optim, r);
    for (auto [which, buf] : {std::pair{OptimValue::master, &S.master()},
                              {OptimValue::adam_m, &S.adam_m()},
                              {OptimValue::adam_v, &S.adam_v()}}) {
      tmp.assign(o.numel, 0.0f);
      if (o.valid_numel > 0) read(which, r, o.offset, o.valid_numel, tmp.data());
      upload(buf->at(at), tmp.data(), o.numel);
    }
  }
  // A weight shard: the compute-dtype rounding of the master weights it covers, taken from this rank's
  // restored O shard when it lies inside it, else read.
  auto fill_weights = [&](ModelState s, WeightBuffer& buf, int r) {
    const ShardSpan w = S.span(s, r), o = S.span(ModelState::optim, r);
    const DevicePtr<std::byte> dst = buf.at(S.local(s, r));
    S.backend().fill_bytes(dst.address(), 0, w.numel * dtype_bytes(dtype));
    const bool inside = w.offset >= o.offset && w.offset + w.valid_numel <= o.offset + o.valid_numel;
    for (std::size_t at = 0; at < w.valid_numel; at += kChunk) {
      const std::size_t n = std::min(kChunk, w.valid_numel - at);
      DevicePtr<const float> src = staged.data();
      if (inside) {
        src = S.master().at(S.local(ModelState::optim, r) + (w.offset - o.offset) + at);
      } else {
        tmp.resize(n);
        read(OptimValue::master, r, w.offset + at, n, tmp.data());
        upload(staged.data(), tmp.data(), n);
      }
      to_compute_dtype(dst + at * dtype_bytes(dtype), dtype, src, n);
    }
  };
  for (int r = 0; r < layout_->num_ranges(); ++r) {
    fill_weights(ModelState::w_fwd, S.w_fwd(), r);
    if (S.w_bwd().numel() > 0) fill_weights(ModelState::w_bwd, S.w_bwd(), r);
  }
  S.backend().fill_bytes(S.grad().data().address(), 0, S.grad().bytes());
  if (!o_grad_.empty()) S.backend().fill_bytes(o_grad_.data().address(), 0, o_grad_.bytes());
  optim_bound_.reset();  // read state: the next step counts its non-finite values
  step_ = steps_done;
  skipped_ = skipped_steps;
}

}  // namespace tz
