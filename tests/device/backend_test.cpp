// The backends of the device seam (device/backend.hpp): on both the cpu and the emulated backend,
// buffers start zeroed and values travel only through copies (host -> device -> device -> host,
// bitwise); the emulated backend hands out addresses the host cannot dereference (a planted host
// read of a device buffer dies), refuses accesses that leave their allocation or come after it was
// freed, and frees everything it handed out.
#include "device/backend.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "device/device_buffer.hpp"
#include "device/emulated_backend.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

class Backends : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Backend& dev() { return backend(GetParam()); }
};

TEST_P(Backends, BuffersStartZeroedAndCopiesAreBitwise) {
  DeviceBuffer<float> a(dev(), 1000), b(dev(), 1000);
  EXPECT_EQ(a.size(), 1000u);
  EXPECT_EQ(a.bytes(), 4000u);
  EXPECT_EQ(download(a), std::vector<float>(1000, 0.0f));
  std::vector<float> host(1000);
  std::iota(host.begin(), host.end(), -3.5f);
  host[7] = -0.0f;
  upload(a, std::span<const float>(host));
  copy_on_device(b.at(10), a.at(20), 500);
  const std::vector<float> got = download(b);
  for (std::size_t i = 0; i < 1000; ++i) {
    const float want = i >= 10 && i < 510 ? host[i + 10] : 0.0f;
    EXPECT_EQ(std::memcmp(&got[i], &want, 4), 0) << i;
  }
  dev().fill_bytes(b.at(0).address(), 0xff, 8);
  const std::vector<std::uint32_t> bits = download(
      DevicePtr<const std::uint32_t>(b.backend(), reinterpret_cast<std::uint32_t*>(b.data().address())), 3);
  EXPECT_EQ(bits[0], 0xffffffffu);
  EXPECT_EQ(bits[1], 0xffffffffu);
  EXPECT_NE(bits[2], 0xffffffffu);
}

TEST_P(Backends, BuffersMoveAndEmptyOnesHoldNothing) {
  DeviceBuffer<double> a(dev(), 3);
  upload(a, std::span<const double>(std::vector<double>{1, 2, 3}));
  DeviceBuffer<double> b = std::move(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(download(b), (std::vector<double>{1, 2, 3}));
  DeviceBuffer<double> none(dev(), 0);
  EXPECT_TRUE(none.data().null());
  EXPECT_TRUE(download(none).empty());
  EXPECT_EQ(dev().host_addressable(), GetParam() == DeviceKind::cpu);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Backends, ::testing::Values(DeviceKind::cpu, DeviceKind::emulated),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

TEST(EmulatedDevice, AHostReadOfDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  DeviceBuffer<float> buf(backend(DeviceKind::emulated), 16);
  float* planted = buf.data().address();  // what host code that forgot the backend would hold
  EXPECT_DEATH(
      {
        volatile float x = planted[3];
        (void)x;
      },
      "");
  EXPECT_DEATH({ planted[0] = 1.0f; }, "");
  // The same read on the cpu backend is a plain load: the emulated device is what catches it.
  DeviceBuffer<float> host_side(backend(DeviceKind::cpu), 16);
  EXPECT_EQ(host_side.data().address()[3], 0.0f);
}

TEST(EmulatedDevice, AccessesOutsideALiveAllocationAreRefused) {
  auto& emu = static_cast<EmulatedBackend&>(backend(DeviceKind::emulated));
  const std::size_t before = emu.live_allocations();
  float host[8] = {};
  void* stale = nullptr;
  {
    DeviceBuffer<float> buf(emu, 8);
    EXPECT_EQ(emu.live_allocations(), before + 1);
    EXPECT_THROW(download(host, buf.data() + 4, 5), InternalError);  // one past the end
    EXPECT_NO_THROW(download(host, buf.data() + 4, 4));
    EXPECT_THROW(emu.copy_to_host(host, host, 4), InternalError);  // a host pointer is not device memory
    stale = buf.data().address();
  }
  EXPECT_EQ(emu.live_allocations(), before);
  EXPECT_THROW(emu.copy_to_host(host, stale, 4), InternalError);  // freed
  try {
    emu.host_address(static_cast<char*>(stale) + 1, 1);
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("emulated device"), std::string::npos) << e.what();
  }
}

TEST(DeviceKinds, ParsedByNameWithTheOptionNamed) {
  EXPECT_EQ(parse_device_kind("cpu", "--device"), DeviceKind::cpu);
  EXPECT_EQ(parse_device_kind("emulated", "--device"), DeviceKind::emulated);
  test::expect_input_error([] { parse_device_kind("gpu", "--device"); },
                           {"--device 'gpu'", "cpu, emulated, cuda"});
  if (cuda_backend_built()) {
    EXPECT_EQ(parse_device_kind("cuda", "--device"), DeviceKind::cuda);
  } else {
    // A build without the CUDA backend says how to get one, at parsing and when asked for the backend.
    test::expect_input_error([] { parse_device_kind("cuda", "--device"); },
                             {"--device 'cuda'", "no CUDA backend", "-DTZ_CUDA=ON"});
    test::expect_input_error([] { backend(DeviceKind::cuda); }, {"no CUDA backend"});
  }
}

}  // namespace
}  // namespace tz
