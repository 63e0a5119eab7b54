#include "engine/engine_param_source.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/cpu_terms.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"
#include "device/host_stream.hpp"
#include "plan/step_schedule.hpp"

namespace tz {
namespace {

// Gradient slots alive at once: the embedding's (held through the whole backward), the one being
// computed, and reductions in flight.
constexpr std::size_t kMaxGradSlots = 4;

}  // namespace

EngineParamSource::EngineParamSource(ShardedState& state, const ParameterLayout& params,
                                     CollectiveIssuer& issuer, std::vector<int> forward_order,
                                     std::vector<int> backward_order, int reused_in_backward,
                                     GradFinal on_grad_final)
    : state_(state),
      layout_(state.layout()),
      params_(params),
      issuer_(issuer),
      dtype_(state.compute_dtype()),
      depth_(layout_.plan().options().prefetch_depth),
      qgz_(layout_.plan().options().qgz),
      on_grad_final_(std::move(on_grad_final)) {
  const int K = 1 + depth_;
  const bool gathers = layout_.shard_count(ModelState::w_fwd) > 1;  // else W is whole on every rank
  const int nF = static_cast<int>(forward_order.size());
  for (int p = 0; p < nF; ++p) forward_.push_back({forward_order[p], gathers, p % K});
  for (int j = 0; j < static_cast<int>(backward_order.size()); ++j)
    backward_.push_back(
        {backward_order[j], gathers && j >= reused_in_backward, (((nF - 1 - j) % K) + K) % K});
  if (gathers) {
    for (int k = 0; k < K; ++k) ring_.emplace_back(state.backend(), dtype_, layout_.max_padded_numel());
    ring_work_.resize(K);
    ring_stats_.resize(K);
  }
  TZ_CHECK(dtype_ == DType::f32 || dtype_ == DType::bf16, "compute dtype {}", dtype_name(dtype_));
  if (dtype_ == DType::bf16) {
    compute_ = DeviceBuffer<float>(state.backend(), layout_.max_padded_numel());
    // The runs of each range the model reads in fp32: its tensors other than weight matrices, with
    // neighbours merged.
    fp32_runs_.resize(params.num_ranges());
    for (const ParamTensor& t : params.tensors()) {
      if (t.weight_matrix || t.numel == 0) continue;
      auto& runs = fp32_runs_[t.range];
      if (!runs.empty() && runs.back().offset + runs.back().numel == t.range_offset)
        runs.back().numel += t.numel;
      else
        runs.push_back({t.range_offset, t.numel});
    }
  }
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

void EngineParamSource::begin_forward(const std::vector<Work>& weights_ready) {
  in_backward_ = false;
  weights_ready_ = weights_ready.empty() ? nullptr : &weights_ready;
  cursor_ = issued_ = 0;
}

void EngineParamSource::begin_backward(bool last) {
  TZ_CHECK_EQ(cursor_, forward_.size());
  in_backward_ = true;
  last_ = last;
  cursor_ = issued_ = 0;
}

void EngineParamSource::issue_gather(int pos) {
  const Acquisition& a = (in_backward_ ? backward_ : forward_)[pos];
  if (!a.gather) return;
  const int r = a.range;
  const bool secondary = in_backward_ && layout_.plan().has_secondary_weights();
  const ModelState s = secondary ? ModelState::w_bwd : ModelState::w_fwd;
  const WeightBuffer& src = secondary ? state_.w_bwd() : state_.w_fwd();
  const CollectivePurpose purpose =
      in_backward_ ? CollectivePurpose::weight_gather_bwd : CollectivePurpose::weight_gather_fwd;
  // The forward reads W_fwd: only once the previous step's refresh of this range has written it.
  const Work after = !in_backward_ && weights_ready_ ? (*weights_ready_)[r] : Work();
  ring_work_[a.buffer] = issuer_.issue(purpose, r, src.at(state_.local(s, r)).address(),
                                       ring_[a.buffer].at(0).address(), &ring_stats_[a.buffer], after);
}

void EngineParamSource::wait_refresh(int range) {
  if (in_backward_ || !weights_ready_) return;
  const Work& w = (*weights_ready_)[range];
  if (w.done()) return;
  const CpuWaitScope waiting;
  const auto t0 = std::chrono::steady_clock::now();
  Work(w).wait();
  exposed_refresh_s_ += seconds_since(t0);
}

void EngineParamSource::wait_gather(int pos) {
  const Acquisition& a = (in_backward_ ? backward_ : forward_)[pos];
  wait_refresh(a.range);  // the gather started behind it: time the two waits apart
  {
    const CpuWaitScope waiting;
    const auto t0 = std::chrono::steady_clock::now();
    ring_work_[a.buffer].wait();
    exposed_gather_s_ += seconds_since(t0);
  }
  nonfinite_blocks_ += ring_stats_[a.buffer].nonfinite_blocks;
  ring_stats_[a.buffer] = {};
}

AcquiredParams EngineParamSource::acquire_params(int range) {
  const CpuTermScope engine_work(CpuTerm::other);  // not the model's: it calls in from its forward
  const auto& pass = in_backward_ ? backward_ : forward_;
  TZ_CHECK(cursor_ < pass.size(), "acquisition {} of a {}-acquisition {} pass", cursor_, pass.size(),
           in_backward_ ? "backward" : "forward");
  const Acquisition& a = pass[cursor_];
  TZ_CHECK_EQ(a.range, range);
  issuer_.trace_acquisition(in_backward_, static_cast<int>(cursor_));
  DevicePtr<const std::byte> src;
  if (!ring_.empty()) {
    const std::size_t last = std::min(pass.size(), cursor_ + 1 + depth_);
    for (issued_ = std::max(issued_, cursor_); issued_ < last; ++issued_)
      issue_gather(static_cast<int>(issued_));
    if (a.gather) wait_gather(static_cast<int>(cursor_));
    src = ring_[a.buffer].at(0);
    if (!in_backward_ && layout_.plan().has_secondary_weights()) {
      // hpZ: keep this rank's secondary shard of the weights just gathered.
      const ShardSpan sp = state_.span(ModelState::w_bwd, range);
      const CpuTermScope packing(CpuTerm::packing);
      copy_on_device(state_.w_bwd().at(state_.local(ModelState::w_bwd, range)),
                     src + sp.offset * dtype_bytes(dtype_), sp.numel * dtype_bytes(dtype_));
    }
  } else {
    wait_refresh(range);
    src = state_.w_fwd().at(state_.local(ModelState::w_fwd, range));  // replicated: the whole range
  }
  ++cursor_;
  if (dtype_ == DType::f32) return {device_cast<const float>(src).address()};
  // bf16: the model reads the weight matrices from the gathered range itself; widen the rest.
  const DevicePtr<const bf16> h = device_cast<const bf16>(src);
  const CpuTermScope widening(CpuTerm::narrowing);
  for (const Run& run : fp32_runs_[range])
    kernels().widen_from_bf16(compute_.at(run.offset), h + run.offset, run.numel);
  return {compute_.data().address(), h.address()};
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
    slot->full = DeviceBuffer<float>(state_.backend(), layout_.max_padded_numel());
    std::size_t max_shard = 0;
    for (int r = 0; r < layout_.num_ranges(); ++r)
      max_shard = std::max(max_shard, layout_.shard_numel(ModelState::grad, r));
    if (dtype_ != DType::f32 && !qgz_)
      slot->send = WeightBuffer(state_.backend(), dtype_, layout_.max_padded_numel());
    slot->shard = WeightBuffer(state_.backend(), qgz_ ? DType::f32 : dtype_, max_shard);
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
  const CpuTermScope engine_work(CpuTerm::other);
  if (layout_.shard_count(ModelState::grad) == 1)
    return state_.grad().at(state_.local(ModelState::grad, range)).address();  // replicated G: in place
  for (auto& s : slots_)
    if (s->range == range && !s->in_flight) return s->full.data().address();
  GradSlot& slot = free_slot();
  slot.range = range;
  const std::size_t n = layout_.padded_numel(range);
  state_.backend().fill_bytes(slot.full.data().address(), 0, std::min(slot.dirty_numel, n) * sizeof(float));
  slot.dirty_numel = std::max(slot.dirty_numel, n);  // a larger range before may have left more
  return slot.full.data().address();
}

void EngineParamSource::grads_ready(int range) {
  const CpuTermScope engine_work(CpuTerm::other);
  const bool poison =
      poison_ && params_.range(range).numel > 0 && (poison_range_ < 0 || poison_range_ == range);
  if (poison) poison_ = false;
  if (layout_.shard_count(ModelState::grad) == 1) {  // replicated G, accumulated in place: final now
    if (poison) upload(state_.grad().at(state_.local(ModelState::grad, range)), &poison_value_, 1);
    if (last_) on_grad_final_(range, Work());
    return;
  }
  GradSlot* slot = nullptr;
  for (auto& s : slots_)
    if (s->range == range && !s->in_flight) slot = s.get();
  TZ_CHECK(slot != nullptr, "grads_ready for range {} without its grad_buffer", range);
  if (poison) upload(slot->full.data(), &poison_value_, 1);
  const void* send = slot->full.data().address();
  if (!qgz_ &&
      dtype_ != DType::f32) {  // qgZ quantizes the fp32 gradient; else it travels in the compute dtype
    // Narrow, and clear the fp32 buffer for its next range while each piece is still in cache (one
    // pass over it instead of a second one in grad_buffer).
    const std::size_t n = layout_.padded_numel(range);
    {
      const CpuTermScope narrowing(CpuTerm::narrowing);
      kernels().narrow_and_clear(device_cast<bf16>(slot->send.at(0)), slot->full.data(), n);
    }
    // Only a buffer whose last use never reached here (a backward that threw) can hold more.
    if (slot->dirty_numel > n)
      state_.backend().fill_bytes(slot->full.at(n).address(), 0, (slot->dirty_numel - n) * sizeof(float));
    slot->dirty_numel = 0;
    send = slot->send.at(0).address();
  }
  const Work reduced =
      issuer_.issue(CollectivePurpose::grad_reduce, range, send, slot->shard.at(0).address(), &slot->stats);
  // Add the reduced shard into the fp32 G shard on the gradient host stream, behind the reduction.
  const std::size_t count = state_.span(ModelState::grad, range).numel;
  const DevicePtr<float> g = state_.grad().at(state_.local(ModelState::grad, range));
  const DevicePtr<const std::byte> shard = std::as_const(slot->shard).at(0);
  const DType shard_dtype = slot->shard.dtype();
  Kernels* k = &kernels();
  slot->work = host_stream(HostLane::gradients)
                   .enqueue(
                       [=] {
                         const CpuTermScope accumulating(CpuTerm::grad_accumulate);
                         k->accumulate(g, shard, count, shard_dtype);
                       },
                       {reduced});
  slot->in_flight = true;
  in_flight_.push_back(slot);
  if (last_) on_grad_final_(range, slot->work);
}

void EngineParamSource::complete(GradSlot& slot) {
  {
    const CpuWaitScope waiting;
    slot.work.wait();
  }
  nonfinite_blocks_ += slot.stats.nonfinite_blocks;
  slot.stats = {};
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
  std::size_t b = compute_.bytes();
  for (const auto& w : ring_) b += w.bytes();
  return b;
}

std::size_t EngineParamSource::grad_buffer_bytes() const {
  std::size_t b = 0;
  for (const auto& s : slots_) b += s->full.bytes() + s->send.bytes() + s->shard.bytes();
  return b;
}

}  // namespace tz
