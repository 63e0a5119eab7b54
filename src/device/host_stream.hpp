// Host streams: the CPU steps of a collective (quantize before it is sent, dequantize and reduce after
// it arrives, the engine's accumulation of a reduced gradient) as tasks on an in-order queue, each
// behind the Works it depends on. It is the host twin of a kernel launched on a CUDA stream behind
// an event, and what makes qwZ and qgZ non-blocking: a communicator runs only communication, so the
// quantized collectives chain host tasks and communicator calls through Works:
//
//   Q = stream.enqueue(quantize, {after})      the codes, once `after` (e.g. a weight refresh) is done
//   comm.stream_wait(Q); G = comm.all_gather(codes ...)   issued NOW, in the caller's order
//   D = stream.enqueue(dequantize, {G})        the returned Work
//
// Every communicator call is still made on the calling thread at call time, so collectives stay
// matched across ranks (the same order on every rank); only the host steps move. A task waits for
// Works issued before it and a stream_wait waits for a task enqueued before it, so every dependency
// points back in issue order and the chain cannot deadlock.
//
// Tasks of one stream run one at a time, in enqueue order, on the stream's progress thread or on a
// thread that waits for one of its Works and finds the stream idle ("wait helps", as in
// device/stream.hpp: a caller that waits at once runs the dequantization itself, saving two thread
// hand-offs when ranks are oversubscribed). A dependency that failed fails the task's Work with the
// same error, without running the task; a task that throws fails its Work. Later tasks still run.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "device/work.hpp"

namespace tz {

class Stream;

class HostStream {
 public:
  HostStream();
  ~HostStream();  // runs what is still queued, then stops the progress thread
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // Runs `task` after every task enqueued before it and once every Work of `deps` has completed.
  Work enqueue(std::function<void()> task, std::initializer_list<Work> deps = {});
  Work enqueue(std::function<void()> task, const std::vector<Work>& deps);

 private:
  std::shared_ptr<Stream> stream_;
};

// The host streams of the calling thread (one rank issues its collectives from one thread), like
// CUDA's per-thread default stream: qwZ's weight steps, and the gradient steps of qgZ and of the
// engine's accumulation. Two lanes, so a gather's dequantization never queues behind a reduction.
enum class HostLane { weights, gradients };
HostStream& host_stream(HostLane lane);

}  // namespace tz
