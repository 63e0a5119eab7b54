// The model's layers in the CUDA kernel table against the cpu backend's, entry by entry, on the same
// inputs (device/cpu/layers.hpp defines them): odd sizes and one larger shape, parameter gradients
// pre-filled to prove they accumulate, layernorm's dinp pre-filled (it accumulates), input gradients
// pre-filled with garbage to prove they are overwritten. Bitwise where the CUDA file claims it
// (encoder with fp32 and bf16 wte, residual, cross-entropy backward, layernorm's dbias on the cpu's
// AVX2 path); elsewhere |gpu - cpu| <= tol (1 + |cpu|) with the tolerance each CUDA file states:
//   layernorm 1e-5, attention 1e-5 (grouped-query heads too), rotary bitwise, gelu 2e-6 forward and 2e-5
//   backward, cross-entropy 1e-5 (probs: 1e-5 relative).
// A token id or a target outside the vocabulary is an InternalError, not a wild access.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "cuda/cuda_test_support.hpp"
#include "device/cpu/simd.hpp"
#include "device/device_buffer.hpp"
#include "device/kernels.hpp"

namespace tz {
namespace {

std::vector<float> layers_randoms(std::size_t n, unsigned seed, float scale = 1.0f, float offset = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(offset, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// n ids in [0, range): a small range makes ids repeat, so gradient rows take several adds.
std::vector<std::int32_t> layers_ids(std::size_t n, int range, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, range - 1);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void layers_expect_bitwise(const std::vector<float>& got, const std::vector<float>& want,
                           const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": first difference at element " << i << ": cpu " << want[i] << ", cuda "
                    << got[i];
      return;
    }
}

// |got - want| <= tol (1 + |want|) everywhere; reports the first violation and the largest error.
void layers_expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  std::size_t first_bad = got.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i])) / (1.0 + std::fabs(double(want[i])));
    if (!(err <= tol) && first_bad == got.size()) first_bad = i;
    if (err > worst || std::isnan(err)) worst = err;
  }
  if (first_bad != got.size())
    ADD_FAILURE() << what << ": element " << first_bad << ": cpu " << want[first_bad] << ", cuda "
                  << got[first_bad] << "; largest normalized error " << worst << " > " << tol;
}

std::vector<bf16> layers_narrow(const std::vector<float>& x) {
  std::vector<bf16> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = to_bf16(x[i]);
  return out;
}

class CudaLayers : public ::testing::Test {
 protected:
  void SetUp() override { TZ_REQUIRE_CUDA(); }
  static Backend& gpu() { return backend(DeviceKind::cuda); }
  static Backend& cpu() { return backend(DeviceKind::cpu); }
  template <typename T>
  static DeviceBuffer<T> put(Backend& b, const std::vector<T>& host) {
    DeviceBuffer<T> d(b, host.size());
    upload(d, std::span<const T>(host));
    return d;
  }
  template <typename T>
  static T* at(DeviceBuffer<T>& d) {
    return d.data().address();
  }
  // Runs `body` on the cuda backend, then on the cpu backend: results[0] cuda, results[1] cpu.
  using Results = std::vector<std::vector<float>>;
  static void both(const std::function<Results(Backend&)>& body, Results out[2]) {
    out[0] = body(gpu());
    out[1] = body(cpu());
  }
};

struct LayersShape {
  int B, T, C, H, V;
};
constexpr LayersShape kLayersShapes[] = {{2, 37, 48, 3, 101}, {3, 130, 192, 2, 1031}};

TEST_F(CudaLayers, EncoderIsBitwise) {
  for (const LayersShape& sh : kLayersShapes) {
    const std::size_t N = static_cast<std::size_t>(sh.B) * sh.T, C = sh.C, P = sh.T + 3;
    const auto tokens = layers_ids(N, std::min(sh.V, 17), 1);  // repeats
    const auto wte = layers_randoms(sh.V * C, 2), wpe = layers_randoms(P * C, 3);
    const auto wte16 = layers_narrow(wte);
    const auto dout = layers_randoms(N * C, 4), dwte0 = layers_randoms(sh.V * C, 5, 0.1f),
               dwpe0 = layers_randoms(P * C, 6, 0.1f);
    Results r[2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_tok = put(dev, tokens);
          auto d_wte = put(dev, wte), d_wpe = put(dev, wpe);
          auto d_wte16 = put(dev, wte16);
          DeviceBuffer<float> out32(dev, N * C), out16(dev, N * C);
          k.encoder_forward(at(out32), at(d_tok), WeightRef(at(d_wte)), at(d_wpe), sh.B, sh.T, sh.C, sh.V);
          k.encoder_forward(at(out16), at(d_tok), WeightRef(at(d_wte16)), at(d_wpe), sh.B, sh.T, sh.C, sh.V);
          auto d_dout = put(dev, dout), d_dwte = put(dev, dwte0), d_dwpe = put(dev, dwpe0);
          k.encoder_backward(at(d_dwte), at(d_dwpe), at(d_dout), at(d_tok), sh.B, sh.T, sh.C, sh.V);
          return Results{download(out32), download(out16), download(d_dwte), download(d_dwpe)};
        },
        r);
    const std::string at_shape = " at T=" + std::to_string(sh.T);
    layers_expect_bitwise(r[0][0], r[1][0], "encoder_forward fp32 wte" + at_shape);
    layers_expect_bitwise(r[0][1], r[1][1], "encoder_forward bf16 wte" + at_shape);
    layers_expect_bitwise(r[0][2], r[1][2], "encoder_backward dwte" + at_shape);
    layers_expect_bitwise(r[0][3], r[1][3], "encoder_backward dwpe" + at_shape);
  }
}

TEST_F(CudaLayers, EncoderRejectsATokenOutsideTheVocabulary) {
  const int B = 2, T = 5, C = 8, V = 11;
  Kernels& k = gpu().kernels();
  auto wte = put(gpu(), layers_randoms(V * C, 1)), wpe = put(gpu(), layers_randoms(T * C, 2));
  DeviceBuffer<float> out(gpu(), B * T * C), dwte(gpu(), V * C), dwpe(gpu(), T * C);
  for (std::int32_t bad : {V, -1, 1 << 30}) {
    std::vector<std::int32_t> ids = layers_ids(B * T, V, 3);
    ids[7] = bad;
    auto tok = put(gpu(), ids);
    EXPECT_THROW(k.encoder_forward(at(out), at(tok), WeightRef(at(wte)), at(wpe), B, T, C, V), InternalError)
        << bad;
    EXPECT_THROW(k.encoder_backward(at(dwte), at(dwpe), at(out), at(tok), B, T, C, V), InternalError) << bad;
  }
  // Nothing was added for the rejected batch.
  EXPECT_EQ(download(dwte), std::vector<float>(V * C, 0.0f));
}

TEST_F(CudaLayers, LayerNormWithinTolerance) {
  constexpr double kTol = 1e-5;
  for (const LayersShape& sh : kLayersShapes) {
    const int N = sh.B * sh.T, C = sh.C;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const auto inp = layers_randoms(NC, 10, 2.0f, 0.5f), weight = layers_randoms(C, 11),
               bias = layers_randoms(C, 12), dout = layers_randoms(NC, 13), dinp0 = layers_randoms(NC, 14),
               dw0 = layers_randoms(C, 15), db0 = layers_randoms(C, 16);
    // Backward runs on the cpu's mean and rstd on both backends, so it compares backward alone.
    std::vector<float> cpu_mean, cpu_rstd;
    Results r[2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_inp = put(dev, inp), d_w = put(dev, weight), d_b = put(dev, bias);
          DeviceBuffer<float> out(dev, NC), mean(dev, N), rstd(dev, N);
          k.layernorm_forward(at(out), at(mean), at(rstd), at(d_inp), at(d_w), at(d_b), N, C, 1e-5f);
          return Results{download(out), download(mean), download(rstd)};
        },
        r);
    const std::string at_shape = " at N=" + std::to_string(N);
    layers_expect_near(r[0][0], r[1][0], kTol, "layernorm_forward out" + at_shape);
    layers_expect_near(r[0][1], r[1][1], kTol, "layernorm_forward mean" + at_shape);
    layers_expect_near(r[0][2], r[1][2], kTol, "layernorm_forward rstd" + at_shape);
    cpu_mean = r[1][1];
    cpu_rstd = r[1][2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_inp = put(dev, inp), d_w = put(dev, weight), d_dout = put(dev, dout);
          auto mean = put(dev, cpu_mean), rstd = put(dev, cpu_rstd);
          auto dinp = put(dev, dinp0), dw = put(dev, dw0), db = put(dev, db0);
          k.layernorm_backward(at(dinp), at(dw), at(db), at(d_dout), at(d_inp), at(d_w), at(mean), at(rstd),
                               N, C);
          return Results{download(dinp), download(dw), download(db)};
        },
        r);
    layers_expect_near(r[0][0], r[1][0], kTol, "layernorm_backward dinp (accumulated)" + at_shape);
    layers_expect_near(r[0][1], r[1][1], kTol, "layernorm_backward dweight" + at_shape);
    if (simd::have_avx2_fma())  // the cpu's AVX2 path sums 64-row parts, as the CUDA kernel does
      layers_expect_bitwise(r[0][2], r[1][2], "layernorm_backward dbias" + at_shape);
    else
      layers_expect_near(r[0][2], r[1][2], kTol, "layernorm_backward dbias" + at_shape);
  }
}

TEST_F(CudaLayers, AttentionWithinTolerance) {
  constexpr double kTol = 1e-5;
  struct AttnCase {
    int B, T, H, KV, D;
  };
  // Multi-head: {2, 37, 3, 3, 16} and {3, 130, 2, 2, 96} (the model shapes of kLayersShapes);
  // {1, 20, 2, 2, 160}: a long head; {2, 256, 6, 6, 64}: a model-sized head over a longer sequence;
  // {1, 600, 2, 2, 32}: three query tiles of the GPU kernel (the last one short) and three key blocks of
  // the cpu's. Grouped-query: 4:1, 2:1, 3:1 with odd head counts and head sizes not multiples of 8, and
  // Llama-like {2, 300, 8, 2, 64}.
  const AttnCase cases[] = {{2, 37, 3, 3, 16},  {3, 130, 2, 2, 96}, {1, 20, 2, 2, 160},
                            {2, 256, 6, 6, 64}, {1, 600, 2, 2, 32}, {2, 37, 4, 1, 12},
                            {1, 70, 6, 3, 7},   {2, 45, 3, 1, 20},  {2, 300, 8, 2, 64}};
  for (const AttnCase& sh : cases) {
    const int B = sh.B, T = sh.T, H = sh.H, KV = sh.KV, D = sh.D;
    const std::size_t N = static_cast<std::size_t>(B) * T, S = static_cast<std::size_t>(B) * H * T;
    const std::size_t Q = N * (H + 2 * KV) * D, O = N * H * D;
    const auto qkv = layers_randoms(Q, 20), dout = layers_randoms(O, 21), garbage = layers_randoms(Q, 22);
    Results r[2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_qkv = put(dev, qkv);
          DeviceBuffer<float> out(dev, O), lse(dev, S);
          k.attention_forward(at(out), at(lse), at(d_qkv), B, T, H, KV, D);
          return Results{download(out), download(lse)};
        },
        r);
    const std::string at_shape = " at T=" + std::to_string(T) + " H=" + std::to_string(H) +
                                 " KV=" + std::to_string(KV) + " D=" + std::to_string(D);
    layers_expect_near(r[0][0], r[1][0], kTol, "attention_forward out" + at_shape);
    layers_expect_near(r[0][1], r[1][1], kTol, "attention_forward lse" + at_shape);
    const std::vector<float> cpu_out = r[1][0], cpu_lse = r[1][1];  // backward runs on the cpu's on both
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_qkv = put(dev, qkv), d_dout = put(dev, dout), out = put(dev, cpu_out),
               lse = put(dev, cpu_lse);
          auto dqkv = put(dev, garbage);  // overwritten
          k.attention_backward(at(dqkv), at(d_dout), at(d_qkv), at(out), at(lse), B, T, H, KV, D);
          Results res{download(dqkv)};
          k.attention_backward(at(dqkv), at(d_dout), at(d_qkv), at(out), at(lse), B, T, H, KV, D);
          res.push_back(download(dqkv));
          return res;
        },
        r);
    layers_expect_near(r[0][0], r[1][0], kTol, "attention_backward dqkv" + at_shape);
    layers_expect_bitwise(r[0][1], r[0][0], "attention_backward run to run" + at_shape);
  }
  EXPECT_THROW(gpu().kernels().attention_forward(nullptr, nullptr, nullptr, 1, 4, 4, 3, 8), InputError);
}

// Rotary embedding: the GPU rounds the same multiplies and adds as the cpu (no FMA contraction), so
// both directions are bitwise the cpu's; R = D and R = D/4, a Llama-sized head, a 4:1 and a 3:1 group.
TEST_F(CudaLayers, RotaryIsBitwise) {
  struct RotaryCase {
    int B, T, H, KV, D, R;
  };
  for (const RotaryCase& sh : {RotaryCase{2, 37, 4, 1, 12, 12}, RotaryCase{3, 130, 6, 3, 64, 16},
                               RotaryCase{1, 300, 8, 2, 128, 128}, RotaryCase{2, 9, 3, 1, 20, 4}}) {
    const std::size_t Q = static_cast<std::size_t>(sh.B) * sh.T * (sh.H + 2 * sh.KV) * sh.D;
    const std::size_t table = static_cast<std::size_t>(sh.T) * (sh.R / 2);
    const auto qkv = layers_randoms(Q, 40), cos = layers_randoms(table, 41), sin = layers_randoms(table, 42);
    Results r[2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto fwd = put(dev, qkv), bwd = put(dev, qkv), d_cos = put(dev, cos), d_sin = put(dev, sin);
          k.rotary_forward(at(fwd), at(d_cos), at(d_sin), sh.B, sh.T, sh.H, sh.KV, sh.D, sh.R);
          k.rotary_backward(at(bwd), at(d_cos), at(d_sin), sh.B, sh.T, sh.H, sh.KV, sh.D, sh.R);
          return Results{download(fwd), download(bwd)};
        },
        r);
    const std::string at_shape =
        " at T=" + std::to_string(sh.T) + " D=" + std::to_string(sh.D) + " R=" + std::to_string(sh.R);
    layers_expect_bitwise(r[0][0], r[1][0], "rotary_forward" + at_shape);
    layers_expect_bitwise(r[0][1], r[1][1], "rotary_backward" + at_shape);
  }
  EXPECT_THROW(gpu().kernels().rotary_forward(nullptr, nullptr, nullptr, 1, 4, 2, 1, 8, 5), InputError);
}

TEST_F(CudaLayers, GeluWithinToleranceAndResidualBitwise) {
  const long n = 100'003;
  auto x = layers_randoms(n, 30, 2.0f);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 9.5f;
  x[3] = -9.5f;
  const auto y = layers_randoms(n, 31), dout = layers_randoms(n, 32), garbage = layers_randoms(n, 33);
  Results r[2];
  both(
      [&](Backend& dev) {
        Kernels& k = dev.kernels();
        auto d_x = put(dev, x), d_y = put(dev, y), d_dout = put(dev, dout);
        auto out = put(dev, garbage), dinp = put(dev, garbage), sum = put(dev, garbage);
        k.gelu_forward(at(out), at(d_x), n);
        k.gelu_backward(at(dinp), at(d_x), at(d_dout), n);
        k.residual_forward(at(sum), at(d_x), at(d_y), n);
        return Results{download(out), download(dinp), download(sum)};
      },
      r);
  layers_expect_near(r[0][0], r[1][0], 2e-6, "gelu_forward");
  layers_expect_near(r[0][1], r[1][1], 2e-5, "gelu_backward");
  layers_expect_bitwise(r[0][2], r[1][2], "residual_forward");
}

TEST_F(CudaLayers, CrossEntropyWithinToleranceAndBackwardBitwise) {
  constexpr double kTol = 1e-5;
  const struct { int N, V; } shapes[] = {{74, 101}, {6, 50304}};
  for (const auto& sh : shapes) {
    const int N = sh.N, V = sh.V;
    const std::size_t NV = static_cast<std::size_t>(N) * V;
    const auto logits = layers_randoms(NV, 40, 3.0f), garbage = layers_randoms(NV, 41);
    const auto targets = layers_ids(N, V, 42);
    double mean_loss[2] = {0, 0};
    Results r[2];
    int side = 0;
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_logits = put(dev, logits);
          auto d_targets = put(dev, targets);
          DeviceBuffer<float> losses(dev, N), probs(dev, NV);
          mean_loss[side++] =
              k.softmax_cross_entropy_forward(at(losses), at(probs), at(d_logits), at(d_targets), N, V);
          return Results{download(losses), download(probs)};
        },
        r);
    const std::string at_shape = " at V=" + std::to_string(V);
    layers_expect_near(r[0][0], r[1][0], kTol, "softmax_cross_entropy_forward losses" + at_shape);
    EXPECT_LE(std::fabs(mean_loss[0] - mean_loss[1]), kTol * (1 + std::fabs(mean_loss[1]))) << at_shape;
    double worst = 0;  // probs: relative
    for (std::size_t i = 0; i < NV; ++i)
      worst = std::max(worst, std::fabs(double(r[0][1][i]) - r[1][1][i]) / (double(r[1][1][i]) + 1e-30));
    EXPECT_LE(worst, kTol) << "softmax_cross_entropy_forward probs" << at_shape;
    const std::vector<float> cpu_probs = r[1][1];  // backward runs on the cpu's probs on both
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto probs = put(dev, cpu_probs);
          auto d_targets = put(dev, targets);
          auto dlogits = put(dev, garbage);  // overwritten
          k.softmax_cross_entropy_backward(at(dlogits), at(probs), at(d_targets), 1.0f / 7.0f, N, V);
          return Results{download(dlogits)};
        },
        r);
    layers_expect_bitwise(r[0][0], r[1][0], "softmax_cross_entropy_backward" + at_shape);
  }
}

TEST_F(CudaLayers, CrossEntropyRejectsATargetOutsideTheVocabulary) {
  const int N = 9, V = 13;
  Kernels& k = gpu().kernels();
  auto logits = put(gpu(), layers_randoms(static_cast<std::size_t>(N) * V, 50));
  DeviceBuffer<float> losses(gpu(), N), probs(gpu(), static_cast<std::size_t>(N) * V),
      dlogits(gpu(), static_cast<std::size_t>(N) * V);
  for (std::int32_t bad : {V, -1, 1 << 30}) {
    std::vector<std::int32_t> ids = layers_ids(N, V, 51);
    ids[4] = bad;
    auto targets = put(gpu(), ids);
    EXPECT_THROW(k.softmax_cross_entropy_forward(at(losses), at(probs), at(logits), at(targets), N, V),
                 InternalError)
        << bad;
    EXPECT_THROW(k.softmax_cross_entropy_backward(at(dlogits), at(probs), at(targets), 1.0f, N, V),
                 InternalError)
        << bad;
  }
}

}  // namespace
}  // namespace tz
