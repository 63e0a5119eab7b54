// tierzero's model against PyTorch (fixtures from scripts/torch_reference.py, committed in tests/fixtures),
// one fixture per architecture case (GPT-2; Llama with grouped-query attention 4:1 and an untied head;
// Llama 1:1 with odd heads, attention biases and a tied head; GPT-NeoX with rotary on a quarter of each
// head and the parallel residual; GPT-NeoX sequential with full rotary): logits, loss and every
// parameter gradient for one batch, then the losses of 10 AdamW steps.
// Errors are normalized (||a - ref|| / ||ref||) per tensor, under the named tolerances below.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/json_fields.hpp"
#include "model/gpt.hpp"
#include "test_util.hpp"
#include "train/trainer_single.hpp"

namespace tz {
namespace {

constexpr double kLogitsTol = 1e-5;    // fp32 forward, different summation order
constexpr double kLossTol = 1e-5;      // relative
constexpr double kGradTol = 1e-4;      // per tensor; small tensors (biases) sum few terms
constexpr double kStepLossTol = 1e-4;  // relative, each of the 10 AdamW steps
constexpr double kChecksumTol = 1e-9;  // the initial weights must be the ones the fixture was made from

struct Reference {
  nlohmann::json doc;
  std::vector<float> blob;
  std::vector<float> array(const std::string& name) const {
    const auto& a = doc["arrays"].at(name);
    const std::size_t off = a["offset"], n = a["numel"];
    return {blob.begin() + off, blob.begin() + off + n};
  }
};

Reference load_reference(const std::string& name) {
  const std::string dir = TZ_TEST_DATA_DIR;
  Reference r{read_json_file(dir + "/" + name + "_ref.json"), {}};
  std::ifstream in(dir + "/" + name + "_ref.bin", std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in.good()) << dir << "/" << name << "_ref.bin";
  r.blob.resize(static_cast<std::size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(r.blob.data()),
          static_cast<std::streamsize>(r.blob.size() * sizeof(float)));
  return r;
}

TrainOptions options_of(const Reference& r) {
  const auto& hp = r.doc["hyper_parameters"];
  TrainOptions o;
  o.batch = r.doc["batch"];
  o.seq = r.doc["seq"];
  o.seed = r.doc["seed"];
  o.schedule = {.max_lr = hp["max_lr"],
                .min_lr = hp["min_lr"],
                .warmup_steps = hp["warmup_steps"],
                .decay_steps = hp["decay_steps"]};
  o.adamw = {.lr = 0,
             .beta1 = hp["beta1"],
             .beta2 = hp["beta2"],
             .eps = hp["eps"],
             .weight_decay = hp["weight_decay"]};
  o.grad_clip = hp["grad_clip"];
  return o;
}

class TorchReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchReference, LogitsLossAndEveryGradient) {
  Reference ref = load_reference(GetParam());
  const GptConfig cfg = GptConfig::from_json(ref.doc["config"], GetParam() + "_ref.json");
  SingleTrainer trainer(cfg, options_of(ref));
  double sum = 0, sum_sq = 0;
  for (float p : trainer.params()) sum += p, sum_sq += double(p) * p;
  ASSERT_NEAR(sum_sq, ref.doc["init_checksum"]["sum_sq"].get<double>(), kChecksumTol * sum_sq)
      << "initialisation changed: rerun scripts/torch_reference.py (see README)";
  ASSERT_NEAR(sum, ref.doc["init_checksum"]["sum"].get<double>(), 1e-6);

  std::vector<std::int32_t> tokens = ref.doc["tokens"], targets = ref.doc["targets"];
  Gpt& model = trainer.model();
  std::vector<float> grads(trainer.params().size(), 0.0f);
  ResidentParams src(model.layout(), trainer.params().data(), grads.data());
  const float loss = model.forward(src, tokens.data(), targets.data());
  const std::size_t nlogits = tokens.size() * cfg.vocab_size;
  auto ref_logits = ref.array("logits");
  ASSERT_EQ(ref_logits.size(), nlogits);
  EXPECT_LT(test::norm_err(model.logits().data(), ref_logits.data(), nlogits), kLogitsTol);
  EXPECT_NEAR(loss, ref.doc["loss"].get<double>(), kLossTol * loss);
  model.backward(src);
  for (const auto& t : model.layout().tensors()) {
    auto g = ref.array("grad:" + t.name);
    ASSERT_EQ(g.size(), t.numel) << t.name;
    EXPECT_LT(test::norm_err(grads.data() + t.offset, g.data(), t.numel), kGradTol) << t.name;
  }
}

TEST_P(TorchReference, TenAdamWStepLosses) {
  Reference ref = load_reference(GetParam());
  const GptConfig cfg = GptConfig::from_json(ref.doc["config"], GetParam() + "_ref.json");
  SingleTrainer trainer(cfg, options_of(ref));
  std::vector<std::int32_t> tokens = ref.doc["tokens"], targets = ref.doc["targets"];
  std::vector<double> losses = ref.doc["step_losses"], norms = ref.doc["step_grad_norms"];
  for (std::size_t s = 0; s < losses.size(); ++s) {
    StepRecord r = trainer.step([&](std::int32_t* in, std::int32_t* tg) {
      std::copy(tokens.begin(), tokens.end(), in);
      std::copy(targets.begin(), targets.end(), tg);
    });
    EXPECT_NEAR(r.loss, losses[s], kStepLossTol * losses[s]) << "step " << s;
    EXPECT_NEAR(r.grad_norm, norms[s], kStepLossTol * norms[s]) << "step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TorchReference,
                         ::testing::Values("gpt", "llama_gqa", "llama_tied", "neox", "neox_seq"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tz
