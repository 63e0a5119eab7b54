// `tierzero tokenize`: text files -> llm.c token shards with byte-level BPE (GPT-2, GPT-NeoX, Llama 3).
//   tierzero tokenize --tokenizer DIR --out PREFIX [--shard-tokens N] [--no-eot] TEXT...
// DIR holds GPT-2's vocab.json + merges.txt or a Hugging Face tokenizer.json (or is that file).
// Each TEXT file is one document, memory-mapped and encoded in bounded memory; like llm.c's
// writers, every document is preceded by the vocabulary's document separator: <|endoftext|>, else
// <|begin_of_text|> (Llama 3), when it has one. The shards are
// PREFIX_000000.bin, PREFIX_000001.bin, ... of N tokens each (the last one shorter): uint16 when
// the vocabulary fits (magic 20240520), else uint32 (magic 20240801, llm.c's Llama-3 format).
// `--train-vocab V` first trains a V-token vocabulary on the TEXT files and writes it to DIR.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/bpe_trainer.hpp"
#include "data/llmc_shard_writer.hpp"
#include "data/mapped_file.hpp"

namespace tz::cli {
namespace {

struct TokenizeArgs {
  std::string tokenizer;
  std::string out;
  long long shard_tokens = 100'000'000;
  bool no_eot = false;
  int train_vocab = 0;
  std::vector<std::string> texts;
};

// Writes tokens into PREFIX_%06d.bin shards of at most `per_shard` tokens.
class ShardRoller {
 public:
  ShardRoller(std::string prefix, std::size_t per_shard, int token_bytes)
      : prefix_(std::move(prefix)), per_shard_(per_shard), token_bytes_(token_bytes) {}
  void append(std::span<const std::int32_t> tokens) {
    while (!tokens.empty()) {
      if (!writer_)
        writer_ =
            std::make_unique<LlmcShardWriter>(fmt::format("{}_{:06d}.bin", prefix_, shards_++), token_bytes_);
      const std::size_t n = std::min(tokens.size(), per_shard_ - writer_->count());
      writer_->append(tokens.first(n));
      tokens = tokens.subspan(n);
      total_ += n;
      if (writer_->count() == per_shard_) finish();
    }
  }
  void finish() {
    if (!writer_) return;
    writer_->close();
    fmt::print("  wrote {} ({} tokens)\n", writer_->path(), writer_->count());
    writer_.reset();
  }
  std::size_t shards() const { return shards_; }
  std::size_t total() const { return total_; }

 private:
  std::string prefix_;
  std::size_t per_shard_;
  int token_bytes_;
  std::unique_ptr<LlmcShardWriter> writer_;
  std::size_t shards_ = 0, total_ = 0;
};

int run_tokenize(const TokenizeArgs& a) {
  if (a.out.empty() && a.train_vocab == 0)
    fail_input("tokenize: pass --out PREFIX (or --train-vocab V to only train)");
  std::vector<std::unique_ptr<MappedFile>> files;
  std::size_t text_bytes = 0;
  for (const auto& t : a.texts) {
    files.push_back(std::make_unique<MappedFile>(t, "tokenize: text"));
    text_bytes += files.back()->size_bytes();
  }
  auto view = [](const MappedFile& f) {
    return std::string_view(reinterpret_cast<const char*>(f.data()), f.size_bytes());
  };
  if (a.train_vocab != 0) {
    std::vector<std::string_view> texts;
    for (const auto& f : files) texts.push_back(view(*f));
    const auto t0 = std::chrono::steady_clock::now();
    const BpeVocabulary v = train_bpe(texts, a.train_vocab);
    write_vocab_and_merges(v, a.tokenizer);
    fmt::print("trained {} tokens ({} merges) on {} bytes in {:.1f} s; wrote {}/vocab.json and merges.txt\n",
               v.tokens.size(), v.merges.size(), text_bytes, seconds_since(t0), a.tokenizer);
    if (a.out.empty()) return 0;
  }
  BpeTokenizer tok = BpeTokenizer::load(a.tokenizer);
  const int token_bytes = tok.vocab_size() <= 65536 ? 2 : 4;
  fmt::print("tokenizer {}: {} tokens, {} merges, {} pre-tokenizer; shards of uint{} tokens{}\n",
             tok.vocabulary().origin, tok.vocab_size(), tok.vocabulary().merges.size(),
             pretokenizer_name(tok.pretokenizer()), 8 * token_bytes,
             tok.merges_in_training_order() ? "" : " (merges not in training order: GPT-2's reference loop)");
  const bool eot = !a.no_eot && tok.document_separator().has_value();
  ShardRoller out(a.out, static_cast<std::size_t>(a.shard_tokens), token_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : files) {
    if (eot) out.append(std::vector<std::int32_t>{*tok.document_separator()});
    tok.encode_chunked(view(*f), 1 << 20, [&](std::span<const std::int32_t> t) { out.append(t); });
  }
  out.finish();
  const double s = seconds_since(t0);
  fmt::print("{} documents, {} bytes -> {} tokens ({:.2f} bytes/token) in {} shard{}; {:.1f} MB/s\n",
             files.size(), text_bytes, out.total(),
             static_cast<double>(text_bytes) / std::max<std::size_t>(out.total(), 1), out.shards(),
             out.shards() == 1 ? "" : "s", text_bytes / s / 1e6);
  return 0;
}

const bool tokenize_registered = register_command(
    {"tokenize", "Encode text files into llm.c token shards with GPT-2's byte-level BPE",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<TokenizeArgs>();
       OptionSet o(sub, "tokenize");
       o.text("--tokenizer", a->tokenizer,
              "folder with vocab.json + merges.txt or tokenizer.json (or that file); with --train-vocab, the "
              "folder to write")
           ->required();
       o.text("--out", a->out, "output prefix: PREFIX_000000.bin, PREFIX_000001.bin, ...", "none");
       o.integer("--shard-tokens", a->shard_tokens, 1, INT32_MAX,
                 "tokens per shard (llm.c's header counts them in an int32)");
       o.flag("--no-eot", a->no_eot, "do not put <|endoftext|> (or <|begin_of_text|>) before each document");
       o.integer("--train-vocab", a->train_vocab, 257, 1 << 20,
                 "train a byte-level BPE vocabulary of this many tokens on the texts first", "none");
       o.text("texts", a->texts, "text files, one document each")->required();
       return [a] { return run_tokenize(*a); };
     }});

}  // namespace
}  // namespace tz::cli
