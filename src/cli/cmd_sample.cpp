// `tierzero sample`: text from a trained model, on one process.
//   tierzero sample --weights FILE --prompt TEXT [--model M --max-new-tokens N --temperature T
//                   --top-k K --seed S --tokenizer DIR --threads N]
// The weights come through train/weights_source.hpp: a parameter file written by `train
// --weights-out`, an exported GPT-2 .safetensors or llm.c model file, or a tierzero checkpoint
// directory (read by the checkpoint layer on this process). The prompt is encoded with
// GPT-2's BPE when --tokenizer is given, else byte by byte (a model of 256 tokens: another vocabulary
// is refused before anything is printed); the model runs with a key/value cache
// (model/gpt_decode.hpp), so each new token costs one forward of one position; the tokens are drawn
// by model/sampling.hpp, the same for a seed on every machine. The prompt and the continuation go
// to stdout as they are drawn; a summary line goes to stderr.
#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/byte_tokenizer.hpp"
#include "model/gpt_decode.hpp"
#include "model/model_preset.hpp"
#include "model/sampling.hpp"
#include "train/weights_source.hpp"

namespace tz::cli {
namespace {

struct SampleArgs {
  std::string weights;
  std::string model;
  std::string prompt;
  int max_new_tokens = 64;
  double temperature = 1.0;
  int top_k = 0;
  std::optional<std::uint64_t> seed;
  std::string tokenizer;
  int threads = 1;
};

int run_sample(const SampleArgs& a) {
  std::optional<GptConfig> asked;
  if (!a.model.empty()) asked = load_model(a.model).config;
  const ModelWeights w = load_model_weights(a.weights, asked);
  if (asked) {
    if (!(*asked == w.config))
      fail_input(
          "--model {} ({} layers, width {}, {} heads, {} positions, vocab {}) is not the model of --weights "
          "{} "
          "({} layers, width {}, {} heads, {} positions, vocab {})",
          a.model, asked->n_layer, asked->n_embd, asked->n_head, asked->n_positions, asked->vocab_size,
          a.weights, w.config.n_layer, w.config.n_embd, w.config.n_head, w.config.n_positions,
          w.config.vocab_size);
  }
  std::optional<BpeTokenizer> bpe;
  std::vector<std::int32_t> prompt;
  if (!a.tokenizer.empty()) {
    bpe.emplace(BpeTokenizer::load(a.tokenizer));
    if (bpe->vocab_size() > w.config.vocab_size)
      fail_input("--tokenizer {}: {} tokens, more than the model's vocabulary of {}", a.tokenizer,
                 bpe->vocab_size(), w.config.vocab_size);
    prompt = bpe->encode(a.prompt);
  } else {
    // Without a tokenizer every token is a byte: a smaller vocabulary cannot hold them, a larger one
    // can draw ids that are not bytes and would have no text.
    if (w.config.vocab_size < kByteVocabSize)
      fail_input(
          "--weights {}: a vocabulary of {} tokens cannot hold bytes; pass the --tokenizer it was trained "
          "with",
          a.weights, w.config.vocab_size);
    if (w.config.vocab_size > kByteVocabSize)
      fail_input(
          "--weights {}: the model's vocabulary of {} tokens needs a tokenizer: pass the --tokenizer it was "
          "trained with (without one every token is a byte, and there are {})",
          a.weights, w.config.vocab_size, kByteVocabSize);
    prompt = byte_encode(a.prompt);
  }
  if (static_cast<long long>(prompt.size()) + a.max_new_tokens > w.config.n_positions)
    fail_input(
        "--max-new-tokens {}: with the prompt's {} tokens that is more than the model's {} positions "
        "(n_positions)",
        a.max_new_tokens, prompt.size(), w.config.n_positions);
  const ParameterLayout layout(w.config);
  GptDecoder decoder(layout, w.params.data(), a.threads);
  const SampleOptions options{.temperature = a.temperature, .top_k = a.top_k, .seed = a.seed.value_or(1337)};
  auto text_of = [&](std::int32_t t) {
    const std::vector<std::int32_t> one{t};
    return bpe ? bpe->decode(one) : byte_decode(one);
  };
  fmt::print("{}", a.prompt);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = generate(decoder, prompt, a.max_new_tokens, options, [&](std::int32_t t) {
    const std::string s = text_of(t);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  const double s = seconds_since(t0);
  fmt::print("\n");
  std::fflush(stdout);
  fmt::print(
      stderr,
      "sample: {} prompt + {} new tokens, {} positions computed (KV cache), {:.1f} new tokens/s; temperature "
      "{}, top-k {}, seed {}\n",
      prompt.size(), out.size(), decoder.positions_computed(), out.size() / std::max(s, 1e-9), a.temperature,
      a.top_k == 0 ? std::string("all") : std::to_string(a.top_k), options.seed);
  return 0;
}

const bool sample_registered = register_command(
    {"sample", "Generate text from trained weights (one process, KV cache): temperature, top-k, seed",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<SampleArgs>();
       OptionSet o(sub, "sample");
       o.text(
            "--weights", a->weights,
            "trained weights: a parameter file (`tierzero train --weights-out`, with its .json beside it), a "
            "checkpoint directory (`tierzero train --save-dir`: DIR, whose `latest` names the newest, or "
            "DIR/step_N), a GPT-2 .safetensors file (the shape from --model or its config.json) or an llm.c "
            "model file")
           ->required();
       o.text("--model", a->model,
              "model preset or config.json: the shape of a .safetensors file; for the other formats a check",
              "the weights' own config");
       o.text("--prompt", a->prompt, "text to continue")->required();
       o.integer("--max-new-tokens", a->max_new_tokens, 0, 1 << 20,
                 "tokens to generate (prompt + these <= n_positions)");
       o.real("--temperature", a->temperature, 0, 100,
              "softmax temperature; 0 = always the most likely token");
       o.integer("--top-k", a->top_k, 0, 1 << 30, "draw among the k most likely tokens; 0 = all");
       o.unsigned_integer("--seed", a->seed, UINT64_MAX, "sampling seed: the same seed, the same text",
                          "1337");
       o.text("--tokenizer", a->tokenizer,
              "GPT-2 BPE folder (vocab.json + merges.txt) or tokenizer.json; needed unless the model's "
              "vocabulary is 256 tokens",
              "bytes (one token per byte)");
       o.integer("--threads", a->threads, 1, 4096, "kernel + OpenBLAS threads");
       return [a] { return run_sample(*a); };
     }});

}  // namespace
}  // namespace tz::cli
