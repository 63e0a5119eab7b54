#include "model/range_schedule.hpp"

namespace tz {
namespace {

using K = RangeEvent::Kind;

void use(std::vector<RangeEvent>& ev, int r) {
  ev.push_back({K::acquire, r});
  ev.push_back({K::release, r});
}

std::vector<int> acquires(const std::vector<RangeEvent>& ev, K kind) {
  std::vector<int> out;
  for (const auto& e : ev)
    if (e.kind == kind) out.push_back(e.range);
  return out;
}

}  // namespace

// E = embeddings, F = final norm, H = the LM head's range: E when tied, else "lm_head" after F.
std::vector<RangeEvent> forward_range_events(const GptConfig& c) {
  const int E = 0, F = c.n_layer + 1, H = c.tied_embeddings ? E : F + 1;
  std::vector<RangeEvent> ev;
  use(ev, E);
  for (int i = 0; i < c.n_layer; ++i) use(ev, 1 + i);
  use(ev, F);
  use(ev, H);
  return ev;
}

std::vector<RangeEvent> backward_range_events(const GptConfig& c) {
  const int E = 0, F = c.n_layer + 1, H = c.tied_embeddings ? E : F + 1;
  std::vector<RangeEvent> ev;
  use(ev, H);
  if (H != E) ev.push_back({K::grads_ready, H});
  use(ev, F);
  ev.push_back({K::grads_ready, F});
  for (int i = c.n_layer - 1; i >= 0; --i) {
    use(ev, 1 + i);
    ev.push_back({K::grads_ready, 1 + i});
  }
  if (H != E) use(ev, E);  // the embedding's own backward (a tied one was acquired for the head)
  ev.push_back({K::grads_ready, E});
  return ev;
}

std::vector<int> forward_acquire_order(const GptConfig& c) {
  return acquires(forward_range_events(c), K::acquire);
}
std::vector<int> backward_acquire_order(const GptConfig& c) {
  return acquires(backward_range_events(c), K::acquire);
}
std::vector<int> grads_ready_order(const GptConfig& c) {
  return acquires(backward_range_events(c), K::grads_ready);
}

}  // namespace tz
