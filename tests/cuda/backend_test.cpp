// The CUDA backend's memory operations: fresh buffers are zero, copies round-trip bitwise (host to
// device, device to device, overlapping device copies as memmove), fills, the device address test,
// and the host address a GPU cannot give.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "cuda/cuda_test_support.hpp"
#include "device/device_buffer.hpp"
#include "device/kernels.hpp"

namespace tz {
namespace {

TEST(CudaBackend, BuffersStartZeroAndCopiesRoundTripBitwise) {
  TZ_REQUIRE_CUDA();
  Backend& gpu = backend(DeviceKind::cuda);
  EXPECT_EQ(gpu.kind(), DeviceKind::cuda);
  EXPECT_FALSE(gpu.host_addressable());
  const std::size_t n = 100'003;
  DeviceBuffer<float> a(gpu, n), b(gpu, n);
  EXPECT_EQ(download(a), std::vector<float>(n, 0.0f));
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), -5.0f);
  x[7] = -0.0f;
  upload(a, std::span<const float>(x));
  copy_on_device(b.data(), a.data(), n);
  const std::vector<float> back = download(b);
  EXPECT_EQ(std::memcmp(back.data(), x.data(), n * sizeof(float)), 0);

  gpu.fill_bytes(b.at(10).address(), 0xff, 3 * sizeof(float));
  const std::vector<float> filled = download(b);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &filled[11], 4);
  EXPECT_EQ(bits, 0xffffffffu);
  EXPECT_EQ(filled[13], x[13]);
}

TEST(CudaBackend, OverlappingDeviceCopiesAreMemmoves) {
  TZ_REQUIRE_CUDA();
  Backend& gpu = backend(DeviceKind::cuda);
  std::vector<int> x(1000);
  std::iota(x.begin(), x.end(), 0);
  DeviceBuffer<int> d(gpu, x.size());
  upload(d, std::span<const int>(x));
  copy_on_device(d.at(3), DevicePtr<const int>(d.at(0)), 900);  // forward overlap
  std::vector<int> want = x;
  std::memmove(want.data() + 3, want.data(), 900 * sizeof(int));
  EXPECT_EQ(download(d), want);
  copy_on_device(d.at(0), DevicePtr<const int>(d.at(5)), 900);  // backward overlap
  std::memmove(want.data(), want.data() + 5, 900 * sizeof(int));
  EXPECT_EQ(download(d), want);
}

TEST(CudaBackend, TellsDeviceAddressesAndHasNoHostAddress) {
  TZ_REQUIRE_CUDA();
  Backend& gpu = backend(DeviceKind::cuda);
  DeviceBuffer<float> d(gpu, 16);
  std::vector<float> host(16);
  EXPECT_TRUE(gpu.is_device_address(d.data().address()));
  EXPECT_TRUE(gpu.is_device_address(d.at(15).address()));
  EXPECT_FALSE(gpu.is_device_address(host.data()));
  EXPECT_FALSE(gpu.is_device_address(nullptr));
  EXPECT_THROW(gpu.host_address(d.data().address(), 4), InternalError);
  // copy_bytes tells the directions apart by address.
  std::vector<float> src(16, 2.5f), dst(16);
  copy_bytes(gpu, d.data().address(), src.data(), 64);
  copy_bytes(gpu, dst.data(), d.data().address(), 64);
  EXPECT_EQ(dst, src);
}

TEST(CudaBackend, ThreadsShareTheBackendAndSeeEachOthersWrites) {
  TZ_REQUIRE_CUDA();
  Backend& gpu = backend(DeviceKind::cuda);
  DeviceBuffer<float> d(gpu, 1 << 20);
  std::vector<float> ones(1 << 20, 1.0f);
  std::thread writer([&] { upload(d, std::span<const float>(ones)); });
  writer.join();
  DeviceBuffer<float> acc(gpu, 1 << 20);
  std::thread adder([&] {
    gpu.kernels().accumulate(acc.data(), as_bytes(DevicePtr<const float>(d.data())), 1 << 20, DType::f32);
  });
  adder.join();
  EXPECT_EQ(download(acc), ones);
}

TEST(CudaBackend, DeviceKindParsesInThisBuild) {
  EXPECT_TRUE(cuda_backend_built());
  EXPECT_EQ(parse_device_kind("cuda", "--device"), DeviceKind::cuda);
}

}  // namespace
}  // namespace tz
