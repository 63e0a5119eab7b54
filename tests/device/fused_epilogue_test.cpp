// The gemm epilogues (device/gemm_args.hpp) and the fused linear layers built on them: each fused
// product against its unfused pair (the product, then the separate elementwise kernel) bit for bit,
// for every gemm kernel this CPU runs, at 1 and 2 threads, over shapes with partial tiles, one row,
// K past one slice and N past one packed block; against gemm_ref with the _ref activations under a
// tolerance; the cpu and emulated kernel tables bitwise the CPU layers; bad epilogue arguments refused.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/layers.hpp"
#include "device/device_buffer.hpp"
#include "device/kernels.hpp"
#include "model/kernel_threads.hpp"
#include "model/test_util.hpp"
#include "support/gemm_isa_test.hpp"

namespace tz {
namespace {

using test::norm_err;
using test::randn;

constexpr double kEpilogueVsRef = 2e-5;  // fp32 product and vector GELU vs fp64 sums and libm GELU

bool fused_bitwise(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct EpiShape {
  bool ta, tb;
  int M, N, K;
};

// Partial tiles, one row, one column, K past one slice (384), N past one packed block (1024), K = 0.
const EpiShape kEpiShapes[] = {
    {false, true, 1, 1, 1},    {false, true, 37, 29, 45},   {true, false, 37, 29, 45},
    {false, false, 1, 77, 13}, {false, true, 13, 1100, 17}, {false, false, 50, 33, 800},
    {true, true, 70, 47, 391}, {false, true, 7, 9, 0},      {false, false, 25, 3, 5},
};

const GemmEpilogue kEpilogues[] = {GemmEpilogue::gelu_tanh, GemmEpilogue::gelu_exact,
                                   GemmEpilogue::gelu_tanh_grad, GemmEpilogue::gelu_exact_grad,
                                   GemmEpilogue::add};

// The separate kernel an epilogue replaces, row by row on a matrix with leading dimensions.
void unfused_epilogue(GemmEpilogue e, float* c, int ldc, const float* in, int ld_in, float* out, int ld_out,
                      int M, int N) {
  for (int i = 0; i < M; ++i) {
    float* ci = c + static_cast<std::size_t>(i) * ldc;
    const float* ii = in ? in + static_cast<std::size_t>(i) * ld_in : nullptr;
    float* oi = out ? out + static_cast<std::size_t>(i) * ld_out : nullptr;
    switch (e) {
      case GemmEpilogue::none:
        break;
      case GemmEpilogue::gelu_tanh:
        gelu_forward(oi, ci, N);
        break;
      case GemmEpilogue::gelu_exact:
        gelu_exact_forward(oi, ci, N);
        break;
      case GemmEpilogue::gelu_tanh_grad:
        gelu_backward(ci, ii, ci, N);
        break;
      case GemmEpilogue::gelu_exact_grad:
        gelu_exact_backward(ci, ii, ci, N);
        break;
      case GemmEpilogue::add:
        residual_forward(ci, ci, ii, N);
        break;
    }
  }
}

using FusedEpilogue = test::GemmIsaTest;

TEST_P(FusedEpilogue, EveryEpilogueEqualsTheUnfusedPairBitwise) {
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    for (const EpiShape& s : kEpiShapes)
      for (GemmEpilogue e : kEpilogues) {
        const std::string what = "shape " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                                 std::to_string(s.K) + " epilogue " + std::to_string(static_cast<int>(e)) +
                                 " threads " + std::to_string(threads);
        const int lda = (s.ta ? s.M : s.K) + 1, ldb = (s.tb ? s.K : s.N) + 2, ldc = s.N + 3, lde = s.N + 4;
        const auto A = randn(static_cast<std::size_t>(s.ta ? s.K : s.M) * lda, 1);
        const auto B = randn(static_cast<std::size_t>(s.tb ? s.N : s.K) * ldb, 2, 0.3f);
        const auto bias = randn(s.N, 3);
        const auto E_in = randn(static_cast<std::size_t>(s.M) * lde, 4, 2.0f);
        const std::size_t c_size = static_cast<std::size_t>(s.M) * ldc,
                          e_size = static_cast<std::size_t>(s.M) * lde;
        const bool act = e == GemmEpilogue::gelu_tanh || e == GemmEpilogue::gelu_exact;
        GemmArgs g{.trans_a = s.ta,
                   .trans_b = s.tb,
                   .M = s.M,
                   .N = s.N,
                   .K = s.K,
                   .A = A.data(),
                   .lda = lda,
                   .B = B.data(),
                   .ldb = ldb,
                   .ldc = ldc,
                   .bias = bias.data()};
        // Unfused: the product, then the separate kernel.
        std::vector<float> c_ref(c_size, 0.0f), out_ref(e_size, 0.0f);
        g.C = c_ref.data();
        gemm(g);
        unfused_epilogue(e, c_ref.data(), ldc, E_in.data(), lde, out_ref.data(), lde, s.M, s.N);
        // Fused.
        std::vector<float> c(c_size, 0.0f), out(e_size, 0.0f);
        g.C = c.data();
        g.epilogue = e;
        if (act) {
          g.epi_out = out.data();
          g.ld_epi_out = lde;
        } else {
          g.epi_in = E_in.data();
          g.ld_epi_in = lde;
        }
        gemm(g);
        EXPECT_TRUE(fused_bitwise(c, c_ref)) << what << ": C";
        EXPECT_TRUE(fused_bitwise(out, out_ref)) << what << ": the activation";
        // gemm_ref with the same epilogue (fp64 sums, libm activations).
        std::vector<float> c64(c_size, 0.0f), out64(e_size, 0.0f);
        g.C = c64.data();
        if (act) g.epi_out = out64.data();
        gemm_ref(g);
        EXPECT_LT(norm_err(c, c64), kEpilogueVsRef) << what;
        EXPECT_LT(norm_err(out, out64), kEpilogueVsRef) << what;
      }
  }
}

TEST_P(FusedEpilogue, FusedLinearLayersEqualTheUnfusedSequenceBitwise) {
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    for (GeluForm form : {GeluForm::tanh, GeluForm::exact})
      for (auto [N, C, OC] : {std::array{1, 8, 13}, std::array{37, 24, 100}, std::array{64, 96, 384}}) {
        const std::string what =
            "N " + std::to_string(N) + " C " + std::to_string(C) + " OC " + std::to_string(OC);
        const std::size_t NC = static_cast<std::size_t>(N) * C, NO = static_cast<std::size_t>(N) * OC;
        const auto inp = randn(NC, 5), w = randn(static_cast<std::size_t>(OC) * C, 6, 0.2f), b = randn(OC, 7);
        void (*gelu_fwd)(float*, const float*, long) =
            form == GeluForm::tanh ? gelu_forward : gelu_exact_forward;
        void (*gelu_bwd)(float*, const float*, const float*, long) =
            form == GeluForm::tanh ? gelu_backward : gelu_exact_backward;

        // Forward: pre and act.
        std::vector<float> pre(NO), act(NO), pre_ref(NO), act_ref(NO);
        matmul_gelu_forward(pre.data(), act.data(), inp.data(), w.data(), b.data(), N, C, OC, form);
        matmul_forward(pre_ref.data(), inp.data(), w.data(), b.data(), N, C, OC);
        gelu_fwd(act_ref.data(), pre_ref.data(), static_cast<long>(NO));
        EXPECT_TRUE(fused_bitwise(pre, pre_ref)) << what;
        EXPECT_TRUE(fused_bitwise(act, act_ref)) << what;

        // Backward of the product that reads act (W2 (C, OC): act (N, OC) -> (N, C)): d pre directly.
        const auto dout = randn(NC, 8), w2 = randn(static_cast<std::size_t>(C) * OC, 9, 0.2f);
        std::vector<float> dpre(NO), dw(w2.size(), 0.5f), db(C, 0.25f);
        std::vector<float> dact_ref(NO), dpre_ref(NO), dw_ref(dw), db_ref(db);
        matmul_gelu_backward(dpre.data(), dw.data(), db.data(), dout.data(), act.data(), pre.data(),
                             w2.data(), N, OC, C, form);
        matmul_backward(dact_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), act.data(), w2.data(), N,
                        OC, C);
        gelu_bwd(dpre_ref.data(), pre.data(), dact_ref.data(), static_cast<long>(NO));
        EXPECT_TRUE(fused_bitwise(dpre, dpre_ref)) << what;
        EXPECT_TRUE(fused_bitwise(dw, dw_ref)) << what;
        EXPECT_TRUE(fused_bitwise(db, db_ref)) << what;

        // Residual: out = residual + inp W^T + b.
        const auto residual = randn(NO, 10);
        std::vector<float> out(NO), out_ref(NO);
        matmul_residual_forward(out.data(), residual.data(), inp.data(), w.data(), b.data(), N, C, OC);
        matmul_forward(out_ref.data(), inp.data(), w.data(), b.data(), N, C, OC);
        residual_forward(out_ref.data(), out_ref.data(), residual.data(), static_cast<long>(NO));
        EXPECT_TRUE(fused_bitwise(out, out_ref)) << what;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, FusedEpilogue, test::kEveryGemmIsa, test::gemm_isa_case_name);

// Each element's GELU depends on its value alone: the padded tail of a vector pass equals the same
// element inside a full vector (what lets a gemm tile's rows match the whole-matrix pass).
TEST(FusedEpilogueGelu, SerialSpansEqualTheWholeArrayPassAtEveryOffset) {
  const long n = 29;
  const auto x = randn(n, 11, 3.0f), dy = randn(n, 12);
  using Fwd = void (*)(float*, const float*, long);
  using Bwd = void (*)(float*, const float*, const float*, long);
  struct GeluPair {
    Fwd fwd, fwd_serial;
    Bwd bwd, bwd_serial;
  };
  for (const GeluPair& p : {GeluPair{gelu_forward, gelu_forward_serial, gelu_backward, gelu_backward_serial},
                            GeluPair{gelu_exact_forward, gelu_exact_forward_serial, gelu_exact_backward,
                                     gelu_exact_backward_serial}}) {
    auto [fwd, fwd_serial, bwd, bwd_serial] = p;
    std::vector<float> y(n), dx(n);
    fwd(y.data(), x.data(), n);
    bwd(dx.data(), x.data(), dy.data(), n);
    for (long i = 0; i < n; ++i) {
      float yi, dxi;
      fwd_serial(&yi, &x[i], 1);
      bwd_serial(&dxi, &x[i], &dy[i], 1);
      EXPECT_EQ(std::memcmp(&yi, &y[i], sizeof(float)), 0) << i;
      EXPECT_EQ(std::memcmp(&dxi, &dx[i], sizeof(float)), 0) << i;
    }
  }
}

TEST(FusedEpilogueArgs, MissingOrAliasedEpilogueOperandsAreRefused) {
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4, 0.0f);
  GemmArgs g{
      .M = 2, .N = 2, .K = 3, .A = a.data(), .lda = 3, .B = b.data(), .ldb = 2, .C = c.data(), .ldc = 2};
  g.epilogue = GemmEpilogue::gelu_tanh;  // no output
  EXPECT_THROW(gemm(g), InternalError);
  g.epilogue = GemmEpilogue::add;  // input C itself: C holds partial sums between slices
  g.epi_in = c.data();
  g.ld_epi_in = 2;
  EXPECT_THROW(gemm(g), InternalError);
  g.ld_epi_in = 1;  // shorter than a row
  g.epi_in = a.data();
  EXPECT_THROW(gemm(g), InternalError);
}

class FusedEpilogueTables : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Backend& dev() { return backend(GetParam()); }
  DeviceBuffer<float> put(const std::vector<float>& host) {
    DeviceBuffer<float> d(dev(), host.size());
    upload(d, std::span<const float>(host));
    return d;
  }
  static float* at(DeviceBuffer<float>& d) { return d.data().address(); }
};

TEST_P(FusedEpilogueTables, FusedEntriesAreBitwiseTheCpuLayers) {
  const int N = 19, C = 24, OC = 40;
  const std::size_t NC = static_cast<std::size_t>(N) * C, NO = static_cast<std::size_t>(N) * OC;
  const auto inp = randn(NC, 21), w = randn(static_cast<std::size_t>(OC) * C, 22, 0.2f), b = randn(OC, 23);
  const auto dout = randn(NC, 24), w2 = randn(static_cast<std::size_t>(C) * OC, 25, 0.2f),
             res = randn(NO, 26);
  Kernels& k = dev().kernels();
  for (GeluForm form : {GeluForm::tanh, GeluForm::exact}) {
    std::vector<float> pre(NO), act(NO), dpre(NO), dw(w2.size(), 0.0f), db(C, 0.0f), out(NO);
    matmul_gelu_forward(pre.data(), act.data(), inp.data(), w.data(), b.data(), N, C, OC, form);
    matmul_gelu_backward(dpre.data(), dw.data(), db.data(), dout.data(), act.data(), pre.data(), w2.data(), N,
                         OC, C, form);
    matmul_residual_forward(out.data(), res.data(), inp.data(), w.data(), b.data(), N, C, OC);

    auto d_inp = put(inp), d_w = put(w), d_b = put(b), d_dout = put(dout), d_w2 = put(w2), d_res = put(res);
    DeviceBuffer<float> d_pre(dev(), NO), d_act(dev(), NO), d_dpre(dev(), NO), d_dw(dev(), w2.size()),
        d_db(dev(), C), d_out(dev(), NO);
    k.matmul_gelu_forward(at(d_pre), at(d_act), at(d_inp), WeightRef(at(d_w)), at(d_b), N, C, OC, form);
    k.matmul_gelu_backward(at(d_dpre), at(d_dw), at(d_db), at(d_dout), at(d_act), at(d_pre),
                           WeightRef(at(d_w2)), N, OC, C, form);
    k.matmul_residual_forward(at(d_out), at(d_res), at(d_inp), WeightRef(at(d_w)), at(d_b), N, C, OC);
    EXPECT_TRUE(fused_bitwise(download(d_pre), pre));
    EXPECT_TRUE(fused_bitwise(download(d_act), act));
    EXPECT_TRUE(fused_bitwise(download(d_dpre), dpre));
    EXPECT_TRUE(fused_bitwise(download(d_dw), dw));
    EXPECT_TRUE(fused_bitwise(download(d_db), db));
    EXPECT_TRUE(fused_bitwise(download(d_out), out));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, FusedEpilogueTables, ::testing::Values(DeviceKind::cpu, DeviceKind::emulated),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

// The emulated table checks the epilogue's operands against their allocations like every other buffer.
TEST(FusedEpilogueEmulated, ShortEpilogueBuffersAreRefused) {
  Backend& emu = backend(DeviceKind::emulated);
  const int N = 4, C = 8, OC = 16;
  DeviceBuffer<float> inp(emu, N * C), w(emu, OC * C), full(emu, N * OC), full2(emu, N * OC),
      half(emu, N * OC / 2);
  Kernels& k = emu.kernels();
  auto a = [](DeviceBuffer<float>& d) { return d.data().address(); };
  EXPECT_THROW(
      k.matmul_gelu_forward(a(full), a(half), a(inp), WeightRef(a(w)), nullptr, N, C, OC, GeluForm::tanh),
      InternalError);
  EXPECT_THROW(k.matmul_residual_forward(a(full), a(half), a(inp), WeightRef(a(w)), nullptr, N, C, OC),
               InternalError);
  GemmArgs g = linear_residual_forward_gemm(a(full), a(half), a(inp), WeightRef(a(w)), nullptr, N, C, OC);
  EXPECT_THROW(k.gemm(g), InternalError);
  EXPECT_NO_THROW(
      k.matmul_gelu_forward(a(full), a(full2), a(inp), WeightRef(a(w)), nullptr, N, C, OC, GeluForm::exact));
  EXPECT_NO_THROW(k.matmul_residual_forward(a(full), a(full2), a(inp), WeightRef(a(w)), nullptr, N, C, OC));
}

}  // namespace
}  // namespace tz
