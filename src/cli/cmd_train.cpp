// `tierzero train`: single-process GPT training (one rank) with the reference trainer
// (model/trainer_single.hpp). Prints the unigram entropy of the data first, in nats like the loss,
// then per step: loss, learning rate, gradient norm, tokens/s and GFLOP/s (model/flops.hpp).
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command_registry.hpp"
#include "core/error.hpp"
#include "data/token_data.hpp"
#include "model/flops.hpp"
#include "model/gpt_init.hpp"
#include "model/parameter_file.hpp"
#include "model/trainer_single.hpp"

namespace tz::cli {
namespace {

struct TrainArgs {
  std::string model = "gpt-tiny";
  std::string data;  // empty: the fortunes corpus
  int steps = 300;
  int batch = 8;
  int seq = 0;  // 0: n_positions
  int grad_accum = 1;
  float lr = 1e-3f;
  float min_lr = -1;  // < 0: lr / 10
  int warmup = 20;
  float weight_decay = 0.1f;
  float clip = 1.0f;
  std::uint64_t seed = 1337;
  int threads = 0;  // 0: all hardware threads
  bool recompute = false;
  int log_every = 10;
  std::string metrics;
  std::string init_out;
};

int run_train(const TrainArgs& a) {
  const GptConfig config = GptConfig::load(a.model);
  TrainOptions opt;
  opt.batch = a.batch;
  opt.seq = a.seq > 0 ? a.seq : config.n_positions;
  opt.grad_accum = a.grad_accum;
  opt.schedule = {.max_lr = a.lr,
                  .min_lr = a.min_lr >= 0 ? a.min_lr : a.lr / 10,
                  .warmup_steps = a.warmup,
                  .decay_steps = std::max(a.steps, a.warmup + 1)};
  opt.adamw.weight_decay = a.weight_decay;
  opt.grad_clip = a.clip;
  opt.seed = a.seed;
  opt.threads =
      a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opt.recompute = a.recompute;
  if (a.steps < 0) fail_input("train: --steps must be >= 0, got {}", a.steps);

  if (!a.init_out.empty()) {
    ParameterLayout layout(config);
    std::vector<float> params(layout.total_numel());
    gpt2_init(params.data(), layout, a.seed);
    write_parameter_file(a.init_out, layout, params.data());
    fmt::print("wrote initial parameters ({} floats, seed {}) to {} and {}.json\n", layout.total_numel(),
               a.seed, a.init_out, a.init_out);
    if (a.steps == 0) return 0;
  }

  TokenData data = a.data.empty() ? load_fortunes_corpus() : load_token_file(a.data);
  if (data.max_token() >= config.vocab_size)
    fail_input("data {}: token {} does not fit the model's vocab_size {}", data.origin, data.max_token(),
               config.vocab_size);
  const double h = unigram_entropy_nats(data.tokens);
  const ParameterLayout layout(config);
  fmt::print("model {}: {} layers, width {}, {} heads, vocab {}, {} parameters\n", a.model, config.n_layer,
             config.n_embd, config.n_head, config.vocab_size, layout.total_numel());
  fmt::print("data {} ({}): {} tokens; unigram entropy {:.4f} nats ({:.4f} bits) per token\n", data.origin,
             data.format, data.tokens.size(), h, h / std::log(2.0));
  fmt::print(
      "batch {} x seq {} x accum {}, {} threads, {:.3f} GFLOP per step (72LC^2 + 12LTC + 6VC per token)\n",
      opt.batch, opt.seq, opt.grad_accum, opt.threads,
      opt.grad_accum * training_step_flops(config, opt.batch, opt.seq) / 1e9);

  std::ofstream metrics;
  if (!a.metrics.empty()) {
    metrics.open(a.metrics);
    if (!metrics) fail_input("train: cannot open --metrics file {}", a.metrics);
  }
  double loss_avg = 0;
  auto records = train_single(config, data.tokens, a.steps, opt, [&](const StepRecord& r) {
    loss_avg = r.step == 0 ? r.loss : 0.9 * loss_avg + 0.1 * r.loss;
    if (r.step % a.log_every == 0 || r.step + 1 == a.steps)
      fmt::print(
          "step {:5d}  loss {:.4f}  (avg {:.4f}, unigram {:.4f})  lr {:.2e}  grad_norm {:.3f}  {:.0f} tok/s  "
          "{:.1f} GFLOP/s\n",
          r.step, r.loss, loss_avg, h, r.lr, r.grad_norm, r.tokens_per_s, r.gflops);
    if (metrics.is_open())
      metrics << nlohmann::json{{"step", r.step},       {"loss", r.loss},
                                {"lr", r.lr},           {"grad_norm", r.grad_norm},
                                {"seconds", r.seconds}, {"tokens_per_s", r.tokens_per_s},
                                {"gflops", r.gflops},   {"unigram_entropy", h}}
                     .dump()
              << "\n";
  });
  if (!records.empty())
    fmt::print("final loss {:.4f} (smoothed {:.4f}) vs unigram entropy {:.4f} nats: {}\n",
               records.back().loss, loss_avg, h, loss_avg < h ? "below" : "not below");
  return 0;
}

const bool registered = register_command(
    {"train", "Train a GPT on one process (default: tiny config on the fortunes corpus)",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<TrainArgs>();
       sub.add_option("--model", a->model,
                      "model preset (gpt-tiny, gpt-small, ...) or GPT-2 style config.json")
           ->capture_default_str();
       sub.add_option("--data", a->data,
                      "text file (bytes) or .bin token shard (llm.c or nanoGPT); default: fortunes");
       sub.add_option("--steps", a->steps, "optimizer steps")->capture_default_str();
       sub.add_option("--batch", a->batch, "sequences per micro-batch")->capture_default_str();
       sub.add_option("--seq", a->seq, "sequence length (default: n_positions)");
       sub.add_option("--grad-accum", a->grad_accum, "micro-batches per step")->capture_default_str();
       sub.add_option("--lr", a->lr, "peak learning rate")->capture_default_str();
       sub.add_option("--min-lr", a->min_lr, "final learning rate of the cosine (default: lr/10)");
       sub.add_option("--warmup", a->warmup, "linear warmup steps")->capture_default_str();
       sub.add_option("--weight-decay", a->weight_decay, "AdamW decoupled weight decay")
           ->capture_default_str();
       sub.add_option("--clip", a->clip, "max global gradient norm (0: off)")->capture_default_str();
       sub.add_option("--seed", a->seed, "initialisation and data-order seed")->capture_default_str();
       sub.add_option("--threads", a->threads, "kernel + OpenBLAS threads (default: all cores)");
       sub.add_flag("--recompute", a->recompute, "recompute each block's activations in backward");
       sub.add_option("--log-every", a->log_every, "print every N steps")->capture_default_str();
       sub.add_option("--metrics", a->metrics, "write one JSON line per step to this file");
       sub.add_option(
           "--init-out", a->init_out,
           "write the initial parameters (raw f32 + .json size table) here; with --steps 0, only that");
       return [a] { return run_train(*a); };
     }});

}  // namespace
}  // namespace tz::cli
