// The in-order stream: tasks run in enqueue order, and a thread that helps (try_run_one with the
// ticket of the task it waits for) never runs a task enqueued after that one, even when the stream
// is idle and such a task is next in the queue. Running it could deadlock: its dependencies may be
// queued behind the helper on the helper's own stream.
#include "device/stream.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tz {
namespace {

TEST(Stream, AHelperRunsTasksUpToItsTicketOnly) {
  Stream s(StreamProgress::callers_only);
  std::vector<int> ran;
  const std::uint64_t first = s.enqueue([&] { ran.push_back(1); });
  const std::uint64_t second = s.enqueue([&] { ran.push_back(2); });
  EXPECT_LT(first, second);
  EXPECT_FALSE(s.try_run_one(first - 1)) << "the next task is past the helper's ticket";
  EXPECT_TRUE(ran.empty());
  EXPECT_TRUE(s.try_run_one(first));
  EXPECT_FALSE(s.try_run_one(first)) << "a waiter of the first task must not run the second";
  EXPECT_EQ(ran, std::vector<int>{1});
  EXPECT_TRUE(s.try_run_one(second));
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_FALSE(s.try_run_one(second)) << "nothing is left";
}

TEST(Stream, ShutdownRunsWhatIsQueued) {
  std::vector<int> ran;
  {
    Stream s(StreamProgress::callers_only);
    for (int i = 0; i < 3; ++i) s.enqueue([&ran, i] { ran.push_back(i); });
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  Stream threaded;  // the progress thread runs them in order too
  ran.clear();
  for (int i = 0; i < 100; ++i) threaded.enqueue([&ran, i] { ran.push_back(i); });
  threaded.shutdown();
  ASSERT_EQ(ran.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[i], i);
}

}  // namespace
}  // namespace tz
