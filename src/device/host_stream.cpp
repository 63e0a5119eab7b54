// Host streams (host_stream.hpp) over the in-order Stream and Work state.
#include "device/host_stream.hpp"

#include "device/stream.hpp"
#include "device/work_state.hpp"

namespace tz {

HostStream::HostStream() : stream_(std::make_shared<Stream>()) {}

HostStream::~HostStream() {
  stream_->shutdown();
}

Work HostStream::enqueue(std::function<void()> task, std::initializer_list<Work> deps) {
  return enqueue(std::move(task), std::vector<Work>(deps));
}

Work HostStream::enqueue(std::function<void()> task, const std::vector<Work>& deps) {
  auto state = std::make_shared<Work::State>(stream_);  // a waiter may run the stream's tasks
  std::vector<std::shared_ptr<Work::State>> waits;
  for (const Work& d : deps)
    if (auto s = work_state(d)) waits.push_back(std::move(s));
  state->ticket = stream_->enqueue([state, waits = std::move(waits), task = std::move(task)] {
    for (const auto& w : waits)
      if (std::exception_ptr e = w->wait_quietly()) {
        state->finish(e);
        return;
      }
    try {
      task();
      state->finish(nullptr);
    } catch (...) {
      state->finish(std::current_exception());
    }
  });
  return Work(state);
}

namespace {

struct ThreadHostStreams {
  HostStream weights, gradients;
};

}  // namespace

HostStream& host_stream(HostLane lane) {
  thread_local ThreadHostStreams streams;
  return lane == HostLane::weights ? streams.weights : streams.gradients;
}

}  // namespace tz
