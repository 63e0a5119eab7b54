// Linked into every test binary: a failed assertion inside a rank body of run_thread_world /
// run_thread_mesh aborts that thread world at once, so the other ranks (waiting in a collective
// with the failed rank, which returned early from an ASSERT) fail in milliseconds with "thread world
// aborted: ..." instead of waiting for their collective timeout. Elsewhere it does nothing.
#include <gtest/gtest.h>

#include <string>

#include "comm/thread_world.hpp"

namespace {

class AbortThreadWorldOnFailure : public testing::EmptyTestEventListener {
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    tz::abort_thread_world_of_caller(std::string("a rank failed an assertion at ") +
                                     (result.file_name() ? result.file_name() : "?") + ":" +
                                     std::to_string(result.line_number()));
  }
};

const bool installed = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new AbortThreadWorldOnFailure);
  return true;
}();

}  // namespace
