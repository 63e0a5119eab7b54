// `tierzero bench data`: the data pipeline's speed, single thread, medians of --reps runs.
//   - loader: tokens/s that DataLoader::next delivers from memory-mapped shards (--data, or a
//     generated llm.c shard of --tokens random uint16 tokens), shuffled windows of --seq + 1 tokens,
//     batch --batch; next to memcpy of the same bytes in the same run;
//   - bpe: encode MB/s of the fast encoder and of GPT-2's reference loop on --text (default: the
//     fortunes corpus), with --tokenizer or, without one, a --train-vocab vocabulary trained on it.
// Compare the loader's tokens/s with what `tierzero train` consumes (its tok/s per rank).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include <unistd.h>

#include "cli/bench_registry.hpp"
#include "cli/cli_options.hpp"
#include "core/cpu_features.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/bpe_trainer.hpp"
#include "data/data_loader.hpp"
#include "data/llmc_shard_writer.hpp"
#include "data/mapped_file.hpp"
#include "data/token_data.hpp"

namespace tz::cli {
namespace {

struct BenchDataArgs {
  std::string what = "all";
  std::string data;
  long long tokens = 100'000'000;
  int seq = 1024;
  int batch = 8;
  int reps = 5;
  double seconds = 1.0;
  std::string text;
  std::string tokenizer;
  int train_vocab = 4096;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string cpu_extensions() {
  return cpu_description();
}

void bench_loader(const BenchDataArgs& a) {
  std::string path = a.data, made;
  if (path.empty()) {
    if (a.tokens < a.seq + 1) fail_input("--tokens {}: must be at least --seq + 1 = {}", a.tokens, a.seq + 1);
    made =
        (std::filesystem::temp_directory_path() / fmt::format("tz_bench_data_{}.bin", ::getpid())).string();
    LlmcShardWriter w(made, 2);  // written in chunks: the benchmark itself stays small in memory
    std::mt19937 rng(1);
    std::vector<std::int32_t> chunk(1 << 20);
    for (long long done = 0; done < a.tokens; done += static_cast<long long>(chunk.size())) {
      chunk.resize(static_cast<std::size_t>(std::min<long long>(chunk.size(), a.tokens - done)));
      for (auto& t : chunk) t = static_cast<std::int32_t>(rng() % 50257);
      w.append(chunk);
    }
    w.close();
    path = made;
  }
  const ShardSet set = ShardSet::open(path);
  DataLoader loader(set, {.batch = a.batch, .seq = a.seq, .seed = 1, .vocab_size = 1 << 20});
  std::vector<std::int32_t> in(static_cast<std::size_t>(a.batch) * a.seq), tg(in.size());
  loader.next(in.data(), tg.data());  // warm the first pages
  std::vector<double> rates, copy_rates;
  std::vector<std::int32_t> src(in.size() * 2), dst(src.size());
  for (int r = 0; r < a.reps; ++r) {
    std::size_t calls = 0;
    const double t0 = now_s();
    double t = t0;
    while (t - t0 < a.seconds) {
      for (int i = 0; i < 64; ++i) loader.next(in.data(), tg.data());
      calls += 64;
      t = now_s();
    }
    rates.push_back(static_cast<double>(calls) * a.batch * a.seq / (t - t0));
    std::size_t copies = 0;
    const double c0 = now_s();
    double c = c0;
    while (c - c0 < a.seconds / 4) {
      for (int i = 0; i < 64; ++i) std::memcpy(dst.data(), src.data(), src.size() * 4);
      copies += 64;
      c = now_s();
    }
    copy_rates.push_back(static_cast<double>(copies) * a.batch * a.seq / (c - c0));
  }
  fmt::print(
      "loader: {} ({}), T {}, batch {}: {:.3g} tokens/s median of {} (memcpy of the int32 batch, inputs + "
      "targets: {:.3g} tokens/s, ratio {:.2f})\n",
      set.describe(), made.empty() ? "given" : "generated, page cache warm after writing", a.seq, a.batch,
      median(rates), a.reps, median(copy_rates), median(rates) / median(copy_rates));
  if (!made.empty()) std::filesystem::remove(made);
}

void bench_bpe(const BenchDataArgs& a) {
  std::string text;
  std::string origin;
  if (a.text.empty()) {
    const TokenData d = load_fortunes_corpus();
    text.reserve(d.tokens.size());
    for (auto t : d.tokens) text += static_cast<char>(t);
    origin = d.origin;
  } else {
    const MappedFile f(a.text, "--text");
    text.assign(reinterpret_cast<const char*>(f.data()), f.size_bytes());
    origin = a.text;
  }
  BpeTokenizer tok =
      a.tokenizer.empty() ? BpeTokenizer(train_bpe({text}, a.train_vocab)) : BpeTokenizer::load(a.tokenizer);
  std::vector<double> fast, ref;
  std::size_t tokens = 0;
  for (int r = 0; r < a.reps; ++r) {
    BpeTokenizer cold = tok;  // a fresh cache each run: the cache fills during the run, as in `tokenize`
    double t0 = now_s();
    const auto ids = cold.encode(text);
    fast.push_back(text.size() / (now_s() - t0) / 1e6);
    tokens = ids.size();
    t0 = now_s();
    const auto ids_ref = tok.encode_ref(text);
    ref.push_back(text.size() / (now_s() - t0) / 1e6);
    if (ids_ref != ids) fail_input("bench data: encode and encode_ref disagree on {}", origin);
  }
  fmt::print(
      "bpe: {} ({} bytes, {} tokens, {:.2f} bytes/token), vocabulary {} ({} tokens): encode {:.1f} MB/s, "
      "reference loop {:.1f} MB/s (ratio {:.2f}), median of {}\n",
      origin, text.size(), tokens, static_cast<double>(text.size()) / tokens,
      a.tokenizer.empty() ? fmt::format("trained on it") : a.tokenizer, tok.vocab_size(), median(fast),
      median(ref), median(fast) / median(ref), a.reps);
}

const bool bench_data_registered =
    register_bench({"data", "Data pipeline: loader tokens/s from mmap, BPE encode MB/s (single thread)",
                    [](CLI::App& sub) -> RunFn {
                      auto a = std::make_shared<BenchDataArgs>();
                      OptionSet o(sub, "bench data");
                      o.choice("--what", a->what, {"loader", "bpe", "all"}, "what to measure");
                      o.text("--data", a->data, "shards to read", "a generated llm.c shard");
                      o.integer("--tokens", a->tokens, 2, INT32_MAX, "tokens of the generated shard");
                      o.integer("--seq", a->seq, 1, 1 << 20, "window length T");
                      o.integer("--batch", a->batch, 1, 1 << 16, "windows per next()");
                      o.integer("--reps", a->reps, 1, 1000, "runs (median)");
                      o.real("--seconds", a->seconds, 0.01, 600.0, "seconds per loader run");
                      o.text("--text", a->text, "text to encode", "the fortunes corpus");
                      o.text("--tokenizer", a->tokenizer, "vocab.json + merges.txt folder or tokenizer.json",
                             "a vocabulary trained on the text");
                      o.integer("--train-vocab", a->train_vocab, 257, 1 << 20,
                                "vocabulary size to train when no --tokenizer");
                      return [a] {
                        fmt::print("{}\n", cpu_extensions());
                        if (a->what != "bpe") bench_loader(*a);
                        if (a->what != "loader") bench_bpe(*a);
                        return 0;
                      };
                    }});

}  // namespace
}  // namespace tz::cli
