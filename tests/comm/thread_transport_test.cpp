// The ranks-as-threads transport's failure paths: a wait that throws leaves no operation behind that a
// peer could still copy into, so the caller may free its buffers while the exception unwinds.
#include "comm/transport/thread_transport.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <span>

#include "core/error.hpp"

namespace tz {
namespace {

Deadline soon() {
  return Clock::now() + std::chrono::seconds(10);
}

TEST(ThreadTransport, AWaitThatThrowsOnAbortCancelsItsReceivesFirst) {
  ThreadWorldHandle world = make_thread_world(2);
  Transport& t0 = *world.transports[0];
  Transport& t1 = *world.transports[1];
  int y = 7;
  Request r = t0.irecv(&y, sizeof(y), 1, 0);
  world.abort("a test aborts the world");
  EXPECT_THROW(t0.wait_all(std::span(&r, 1), soon()), CommError);
  EXPECT_FALSE(r.pending());
  // The peer sends later: refused, as every post after an abort is.
  int x = 5;
  EXPECT_THROW(t1.isend(&x, sizeof(x), 0, 0), CommError);
  EXPECT_EQ(y, 7);
}

TEST(ThreadTransport, AnAbortEndsReceivesThatNobodyWaitsFor) {
  ThreadWorldHandle world = make_thread_world(2);
  Transport& t0 = *world.transports[0];
  Transport& t1 = *world.transports[1];
  int y = 7;
  Request r = t0.irecv(&y, sizeof(y), 1, 0);  // its rank unwinds without waiting, as a throw would
  world.abort("a test aborts the world");
  int x = 5;
  EXPECT_THROW(t1.isend(&x, sizeof(x), 0, 0), CommError);
  EXPECT_EQ(y, 7);
  try {
    t0.wait_all(std::span(&r, 1), soon());
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("a test aborts the world"), std::string::npos) << e.what();
  }
  EXPECT_EQ(y, 7);
}

TEST(ThreadTransport, AWaitAfterAnAbortThrowsEvenForACompletedRequest) {
  ThreadWorldHandle world = make_thread_world(2);
  Transport& t0 = *world.transports[0];
  Transport& t1 = *world.transports[1];
  int x = 5, y = 7;
  Request r = t0.irecv(&y, sizeof(y), 1, 0);
  Request s = t1.isend(&x, sizeof(x), 0, 0);  // matched and copied at once
  EXPECT_EQ(y, 5);
  world.abort("a test aborts the world");
  EXPECT_THROW(t0.wait_all(std::span(&r, 1), soon()), CommError);
  EXPECT_THROW(t1.wait_all(std::span(&s, 1), soon()), CommError);
}

TEST(ThreadTransport, AWaitThatThrowsOnAFailedRequestCancelsTheOthersFirst) {
  ThreadWorldHandle world = make_thread_world(2);
  Transport& t0 = *world.transports[0];
  Transport& t1 = *world.transports[1];
  int a = 1, b = 2;
  Request r[2] = {t0.irecv(&a, sizeof(a), 1, 0), t0.irecv(&b, sizeof(b), 1, 1)};
  const long long wrong_size = 9;  // 8 bytes where 4 are expected: a size mismatch fails r[0]
  Request bad = t1.isend(&wrong_size, sizeof(wrong_size), 0, 0);
  try {
    t0.wait_all(r, soon());
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("message size mismatch"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(r[0].pending());
  EXPECT_FALSE(r[1].pending());
  const int late = 5;
  Request s = t1.isend(&late, sizeof(late), 0, 1);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_THROW(t1.wait_all(std::span(&bad, 1), soon()), CommError);
  t1.cancel(std::span(&s, 1));
}

}  // namespace
}  // namespace tz
