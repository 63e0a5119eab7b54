#include "engine/engine_param_source.hpp"

#include <algorithm>
#include <chrono>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "quant/qgz_reduce_scatter.hpp"
#include "quant/qwz_all_gather.hpp"

namespace tz {
namespace {

// Gradient slots alive at once: the embedding's (held through the whole backward), the one being
// computed, and reductions in flight.
constexpr std::size_t kMaxGradSlots = 4;

QuantOptions quant_options(QuantOptions base, int block) {
  if (block > 0) base.block_size = static_cast<std::size_t>(block);
  return base;
}

}  // namespace

EngineParamSource::EngineParamSource(Mesh& mesh, ShardedState& state, const ParameterLayout& params,
                                     std::vector<int> forward_order, std::vector<int> backward_order,
                                     int reused_in_backward)
    : mesh_(mesh),
      state_(state),
      layout_(state.layout()),
      params_(params),
      dtype_(state.compute_dtype()),
      depth_(layout_.plan().options().prefetch_depth),
      qwz_(layout_.plan().options().qwz),
      qgz_(layout_.plan().options().qgz),
      qwz_opts_(quant_options(kQwzDefaultOptions, layout_.plan().options().quant_block)),
      qgz_opts_(quant_options(kQgzDefaultOptions, layout_.plan().options().quant_block)) {
  const int K = 1 + depth_;
  const bool gathers = layout_.shard_count(ModelState::w_fwd) > 1;  // else W is whole on every rank
  const int nF = static_cast<int>(forward_order.size());
  for (int p = 0; p < nF; ++p) forward_.push_back({forward_order[p], gathers, p % K});
  for (int j = 0; j < static_cast<int>(backward_order.size()); ++j)
    backward_.push_back(
        {backward_order[j], gathers && j >= reused_in_backward, (((nF - 1 - j) % K) + K) % K});
  if (gathers) {
    for (int k = 0; k < K; ++k) ring_.emplace_back(dtype_, layout_.max_padded_numel());
    ring_work_.resize(K);
  }
  if (dtype_ != DType::f32) compute_.resize(layout_.max_padded_numel());
}

EngineParamSource::~EngineParamSource() {
  // Collectives still in flight write into buffers owned here: let them land (errors are moot now).
  for (auto& w : ring_work_) {
    try {
      w.wait();
    } catch (...) {
    }
  }
  for (auto& s : slots_) {
    try {
      s->work.wait();
    } catch (...) {
    }
  }
}

void EngineParamSource::begin_forward() {
  in_backward_ = false;
  cursor_ = issued_ = 0;
}

void EngineParamSource::begin_backward() {
  TZ_CHECK_EQ(cursor_, forward_.size());
  in_backward_ = true;
  cursor_ = issued_ = 0;
}

void EngineParamSource::issue_gather(int pos) {
  const Acquisition& a = (in_backward_ ? backward_ : forward_)[pos];
  if (!a.gather) return;
  const int r = a.range;
  const bool secondary = in_backward_ && layout_.plan().has_secondary_weights();
  const ModelState s = secondary ? ModelState::w_bwd : ModelState::w_fwd;
  const WeightBuffer& src = secondary ? state_.w_bwd() : state_.w_fwd();
  const TierSet tiers = secondary ? layout_.backward_gather_tiers() : layout_.forward_gather_tiers();
  const std::size_t count = state_.span(s, r).numel;
  const std::byte* shard = src.at(state_.local(s, r));
  std::byte* full = ring_[a.buffer].at(0);
  const bool flat = layout_.runs_flat(tiers);  // one collective on the whole group (plan option)
  if (qwz_ && !secondary) {
    QuantStats stats;
    ring_work_[a.buffer] =
        flat ? qwz_all_gather(mesh_.flat_group(tiers), shard, full, count, dtype_, qwz_opts_, &stats)
             : qwz_all_gather(mesh_, tiers, shard, full, count, dtype_, qwz_opts_, &stats);
    nonfinite_blocks_ += stats.nonfinite_blocks;
  } else {
    ring_work_[a.buffer] = flat ? mesh_.flat_group(tiers).all_gather(shard, full, count, dtype_)
                                : mesh_.all_gather(tiers, shard, full, count, dtype_);
  }
}

void EngineParamSource::wait_gather(int pos) {
  const auto t0 = std::chrono::steady_clock::now();
  ring_work_[(in_backward_ ? backward_ : forward_)[pos].buffer].wait();
  exposed_gather_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const float* EngineParamSource::acquire_params(int range) {
  const auto& pass = in_backward_ ? backward_ : forward_;
  TZ_CHECK(cursor_ < pass.size(), "acquisition {} of a {}-acquisition {} pass", cursor_, pass.size(),
           in_backward_ ? "backward" : "forward");
  const Acquisition& a = pass[cursor_];
  TZ_CHECK_EQ(a.range, range);
  const std::byte* src = nullptr;
  if (!ring_.empty()) {
    const std::size_t last = std::min(pass.size(), cursor_ + 1 + depth_);
    for (issued_ = std::max(issued_, cursor_); issued_ < last; ++issued_)
      issue_gather(static_cast<int>(issued_));
    if (a.gather) wait_gather(static_cast<int>(cursor_));
    src = ring_[a.buffer].at(0);
    if (!in_backward_ && layout_.plan().has_secondary_weights()) {
      // hpZ: keep this rank's secondary shard of the weights just gathered.
      const ShardSpan sp = state_.span(ModelState::w_bwd, range);
      std::copy_n(src + sp.offset * dtype_bytes(dtype_), sp.numel * dtype_bytes(dtype_),
                  state_.w_bwd().at(state_.local(ModelState::w_bwd, range)));
    }
  } else {
    src = state_.w_fwd().at(state_.local(ModelState::w_fwd, range));  // replicated: the whole range
  }
  ++cursor_;
  if (dtype_ == DType::f32) return reinterpret_cast<const float*>(src);
  from_compute_dtype(compute_.data(), src, dtype_, params_.range(range).numel);
  return compute_.data();
}

void EngineParamSource::release_params(int range) {
  TZ_CHECK(cursor_ > 0, "release of range {} before any acquisition", range);
  const auto& pass = in_backward_ ? backward_ : forward_;
  TZ_CHECK_EQ(pass[cursor_ - 1].range, range);
}

EngineParamSource::GradSlot& EngineParamSource::free_slot() {
  for (auto& s : slots_)
    if (s->range < 0) return *s;
  if (slots_.size() < kMaxGradSlots) {
    auto slot = std::make_unique<GradSlot>();
    slot->full.resize(layout_.max_padded_numel());
    std::size_t max_shard = 0;
    for (int r = 0; r < layout_.num_ranges(); ++r)
      max_shard = std::max(max_shard, layout_.shard_numel(ModelState::grad, r));
    if (dtype_ != DType::f32 && !qgz_) slot->send = WeightBuffer(dtype_, layout_.max_padded_numel());
    slot->shard = WeightBuffer(qgz_ ? DType::f32 : dtype_, max_shard);
    slots_.push_back(std::move(slot));
    return *slots_.back();
  }
  TZ_CHECK(!in_flight_.empty(), "all {} gradient slots are held by ranges not yet ready", slots_.size());
  GradSlot& oldest = *in_flight_.front();
  in_flight_.pop_front();
  complete(oldest);
  return oldest;
}

float* EngineParamSource::grad_buffer(int range) {
  if (layout_.shard_count(ModelState::grad) == 1)
    return state_.grad().data() + state_.local(ModelState::grad, range);  // replicated G: in place
  for (auto& s : slots_)
    if (s->range == range && !s->in_flight) return s->full.data();
  GradSlot& slot = free_slot();
  slot.range = range;
  std::fill_n(slot.full.begin(), layout_.padded_numel(range), 0.0f);
  return slot.full.data();
}

void EngineParamSource::grads_ready(int range) {
  if (layout_.shard_count(ModelState::grad) == 1) return;
  GradSlot* slot = nullptr;
  for (auto& s : slots_)
    if (s->range == range && !s->in_flight) slot = s.get();
  TZ_CHECK(slot != nullptr, "grads_ready for range {} without its grad_buffer", range);
  const TierSet tiers = layout_.grad_reduce_tiers();
  const std::size_t count = state_.span(ModelState::grad, range).numel;
  if (qgz_) {
    QuantStats stats;
    slot->work = qgz_reduce_scatter(mesh_, tiers, slot->full.data(),
                                    reinterpret_cast<float*>(slot->shard.at(0)), count, qgz_opts_, &stats);
    nonfinite_blocks_ += stats.nonfinite_blocks;
  } else {
    const void* send = slot->full.data();
    if (dtype_ != DType::f32) {
      to_compute_dtype(slot->send.at(0), dtype_, slot->full.data(), layout_.padded_numel(range));
      send = slot->send.at(0);
    }
    slot->work = layout_.runs_flat(tiers)  // one collective on the whole group (plan option)
                     ? mesh_.flat_group(tiers).reduce_scatter(send, slot->shard.at(0), count, dtype_)
                     : mesh_.reduce_scatter(tiers, send, slot->shard.at(0), count, dtype_);
  }
  slot->in_flight = true;
  in_flight_.push_back(slot);
}

void EngineParamSource::complete(GradSlot& slot) {
  slot.work.wait();
  const std::size_t count = state_.span(ModelState::grad, slot.range).numel;
  float* g = state_.grad().data() + state_.local(ModelState::grad, slot.range);
  if (slot.shard.dtype() == DType::f32) {
    const auto* x = reinterpret_cast<const float*>(slot.shard.at(0));
    for (std::size_t i = 0; i < count; ++i) g[i] += x[i];
  } else {
    const auto* x = reinterpret_cast<const bf16*>(slot.shard.at(0));
    for (std::size_t i = 0; i < count; ++i) g[i] += to_float(x[i]);
  }
  slot.range = -1;
  slot.in_flight = false;
}

void EngineParamSource::finish_backward() {
  while (!in_flight_.empty()) {
    GradSlot* s = in_flight_.front();
    in_flight_.pop_front();
    complete(*s);
  }
  for (auto& s : slots_)
    TZ_CHECK(s->range < 0, "range {} got a gradient buffer but no grads_ready", s->range);
}

std::size_t EngineParamSource::gather_buffer_bytes() const {
  std::size_t b = compute_.size() * sizeof(float);
  for (const auto& w : ring_) b += w.bytes();
  return b;
}

std::size_t EngineParamSource::grad_buffer_bytes() const {
  std::size_t b = 0;
  for (const auto& s : slots_) b += s->full.size() * sizeof(float) + s->send.bytes() + s->shard.bytes();
  return b;
}

}  // namespace tz
