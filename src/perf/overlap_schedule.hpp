// Overlap of communication with compute over one step's forward and backward passes: two streams,
// one computing and one communicating. The cost model runs its generalization, perf/step_timeline.hpp
// (any issue conditions, the step boundary, several steps); this is that timeline's plain reference
// for passes (tests/perf/step_timeline_test.cpp).
//   compute stream  acquisitions 0..n-1 in order (forward then backward of every micro-batch);
//                   acquisition i starts when i-1 is done and its weights have been gathered.
//   comm stream     the step schedule's collectives in order of issue time, one at a time (links
//                   are shared, so collectives do not run side by side; a collective's
//                   time is the sum of its tier steps); each starts when the previous one is done
//                   and it has been issued:
//                     a gather for acquisition i is issued when acquisition i - prefetch_depth
//                     starts computing (at the start for i <= prefetch_depth): "gathers of layer
//                     i+1 overlap compute of layer i";
//                     a gradient reduction is issued when the acquisition it follows has computed.
// The passes end when both streams are idle. Without overlap every item runs back to back.
#pragma once

#include <vector>

namespace tz::perf {

struct CommItem {
  enum class Kind { gather, reduce } kind = Kind::gather;
  int acquisition = 0;  // gather: needed before it; reduce: issued after it
  double seconds = 0;
};

struct OverlapResult {
  double total_s = 0;    // until both streams are idle
  double compute_s = 0;  // sum of compute
  double comm_s = 0;     // sum of communication (busy time)
  double exposed_comm_s() const { return total_s - compute_s; }
};

// `comm` in the schedule's order; gathers keep their order, reductions theirs, and the two are
// merged by issue time (ties: list order).
OverlapResult schedule_overlap(const std::vector<double>& compute_s, const std::vector<CommItem>& comm,
                               int prefetch_depth, bool overlap);
// The plain reference: every item in sequence (what overlap = false computes).
OverlapResult schedule_serial_ref(const std::vector<double>& compute_s, const std::vector<CommItem>& comm);

}  // namespace tz::perf
