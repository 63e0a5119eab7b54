#include "data/bpe_vocabulary.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/output_file.hpp"
#include "data/tokenizer_json_pipeline.hpp"
#include "data/unicode_classes.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;

struct Alphabet {
  std::array<char32_t, 256> to_cp{};
  std::array<int, 324> to_byte{};  // code points < 324 cover the whole alphabet
  Alphabet() {
    to_byte.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      to_byte[to_cp[b]] = b;
    }
  }
};
const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string read_text(const std::string& path) {
  if (fs::is_directory(path)) fail_input("tokenizer {}: is a directory, expected a file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input("tokenizer {}: cannot open file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail_input("tokenizer {}: read failed", path);
  return ss.str();
}

nlohmann::json parse_json(const std::string& path) {
  try {
    return nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    fail_input("tokenizer {}: not valid JSON: {:.200}", path, e.what());
  }
}

// Fills vocab.tokens from a {"token": id} object; returns token text (alphabet) -> id.
std::unordered_map<std::string, std::int32_t> read_vocab_object(const nlohmann::json& v,
                                                                const std::string& where,
                                                                BpeVocabulary& vocab) {
  if (!v.is_object()) fail_input("{}: the vocabulary must be a JSON object {{\"token\": id}}", where);
  std::unordered_map<std::string, std::int32_t> ids;
  std::vector<bool> used;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
        value.get<std::int64_t>() >= (1LL << 31))
      fail_input("{}: token '{:.40}' has id {:.40}, expected an integer in [0, 2^31)", where, key,
                 value.dump());
    const auto id = value.get<std::int32_t>();
    if (static_cast<std::size_t>(id) >= used.size()) {
      if (id > 50'000'000)
        fail_input("{}: token '{:.40}' has id {}, more than this reader allows", where, key, id);
      used.resize(id + 1, false);
      vocab.tokens.resize(id + 1);
    }
    if (used[id]) fail_input("{}: id {} is given to two tokens (one is '{:.40}')", where, id, key);
    used[id] = true;
    vocab.tokens[id] = alphabet_to_bytes(key, fmt::format("{}: token '{:.40}'", where, key));
    ids.emplace(key, id);
  }
  return ids;
}

void add_merge(BpeVocabulary& vocab, const std::unordered_map<std::string, std::int32_t>& ids,
               const std::string& left, const std::string& right, const std::string& where) {
  auto find = [&](const std::string& t, const char* what) {
    auto it = ids.find(t);
    if (it == ids.end()) fail_input("{}: {} '{:.40}' is not in the vocabulary", where, what, t);
    return it->second;
  };
  const std::int32_t a = find(left, "left part"), b = find(right, "right part");
  find(left + right, "merged token");
  vocab.merges.emplace_back(a, b);
}

void check_null_or(const nlohmann::json& obj, const char* key, const nlohmann::json& allowed,
                   const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null() || obj[key] == allowed) return;
  fail_input("{}: key '{}' is {:.60}; tierzero implements GPT-2's byte-level BPE, which needs {}", where, key,
             obj[key].dump(), allowed.dump());
}

}  // namespace

char32_t byte_to_unicode(unsigned char b) {
  return alphabet().to_cp[b];
}

int unicode_to_byte(char32_t cp) {
  return cp < alphabet().to_byte.size() ? alphabet().to_byte[cp] : -1;
}

std::string bytes_to_alphabet(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) append_utf8(out, byte_to_unicode(b));
  return out;
}

std::string alphabet_to_bytes(const std::string& text, const std::string& where) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Unit u = decode_utf8_unit(p + i, text.size() - i);
    const int b = u.valid ? unicode_to_byte(u.code_point) : -1;
    if (b < 0)
      fail_input("{}: character U+{:04X} at byte {} is not in GPT-2's byte-level alphabet", where,
                 static_cast<std::uint32_t>(u.valid ? u.code_point : p[i]), i);
    out += static_cast<char>(b);
    i += u.bytes;
  }
  return out;
}

BpeVocabulary read_vocab_and_merges(const std::string& vocab_json, const std::string& merges_txt) {
  BpeVocabulary vocab;
  vocab.origin = vocab_json + " + " + merges_txt;
  const auto ids = read_vocab_object(parse_json(vocab_json), "tokenizer " + vocab_json, vocab);
  const std::string text = read_text(merges_txt);
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.starts_with("#version"))) continue;
    const std::size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || line.find(' ', sp + 1) != std::string::npos ||
        sp + 1 == line.size())
      fail_input("tokenizer {}: line {} '{:.60}' is not two tokens separated by one space", merges_txt, n,
                 line);
    add_merge(vocab, ids, line.substr(0, sp), line.substr(sp + 1),
              fmt::format("tokenizer {}: line {}", merges_txt, n));
  }
  if (const auto it = ids.find("<|endoftext|>"); it != ids.end()) vocab.special.push_back(it->second);
  return vocab;
}

BpeVocabulary read_hf_tokenizer_json(const std::string& path) {
  const nlohmann::json doc = parse_json(path);
  const std::string where = "tokenizer " + path;
  if (!doc.is_object())
    fail_input("{}: expected a JSON object (a Hugging Face tokenizer.json), got {} {}", where,
               doc.type_name(), json_excerpt(doc));
  if (!doc.contains("model"))
    fail_input("{}: missing key 'model' (a Hugging Face tokenizer.json has one)", where);
  if (!doc["model"].is_object())
    fail_input(
        "{}: key 'model' is {} {}, not an object (a Hugging Face tokenizer.json's \"model\" holds "
        "\"type\", \"vocab\" and \"merges\")",
        where, doc["model"].type_name(), json_excerpt(doc["model"]));
  const nlohmann::json& model = doc["model"];
  if (model.value("type", std::string()) != "BPE")
    fail_input("{}: key 'model.type' is {:.40}; only \"BPE\" is supported", where,
               model.contains("type") ? model["type"].dump() : std::string("missing"));
  check_null_or(model, "dropout", nullptr, where);
  check_null_or(model, "continuing_subword_prefix", "", where);
  check_null_or(model, "end_of_word_suffix", "", where);
  check_null_or(model, "byte_fallback", false, where);
  BpeVocabulary vocab;
  vocab.origin = path;
  const TokenizerJsonPipeline pipeline = read_tokenizer_json_pipeline(doc, where);
  vocab.pretokenizer = pipeline.pretokenizer;
  vocab.nfc = pipeline.nfc;
  if (model.contains("ignore_merges") && !model["ignore_merges"].is_null()) {
    if (!model["ignore_merges"].is_boolean())
      fail_input("{}: key 'model.ignore_merges' is {:.40}, expected true or false", where,
                 model["ignore_merges"].dump());
    vocab.ignore_merges = model["ignore_merges"].get<bool>();
  }
  if (!model.contains("vocab")) fail_input("{}: missing key 'model.vocab'", where);
  const auto ids = read_vocab_object(model["vocab"], where + ": model.vocab", vocab);
  const nlohmann::json merges = model.value("merges", nlohmann::json::array());
  if (!merges.is_array()) fail_input("{}: key 'model.merges' must be an array", where);
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const nlohmann::json& m = merges[r];
    const std::string at = fmt::format("{}: model.merges[{}]", where, r);
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() ||
          s.find(' ', sp + 1) != std::string::npos)
        fail_input("{}: '{:.60}' is not two tokens separated by one space", at, s);
      add_merge(vocab, ids, s.substr(0, sp), s.substr(sp + 1), at);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      add_merge(vocab, ids, m[0].get<std::string>(), m[1].get<std::string>(), at);
    } else {
      fail_input("{}: {:.60} is neither \"left right\" nor [\"left\", \"right\"]", at, m.dump());
    }
  }
  const nlohmann::json added = doc.value("added_tokens", nlohmann::json::array());
  if (!added.is_array()) fail_input("{}: key 'added_tokens' must be an array", where);
  for (std::size_t i = 0; i < added.size(); ++i) {
    const nlohmann::json& t = added[i];
    const std::string at = fmt::format("{}: added_tokens[{}]", where, i);
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
        !t["content"].is_string())
      fail_input("{}: expected {{\"id\": integer, \"content\": string, ...}}, got {:.60}", at, t.dump());
    const std::int64_t id = t["id"].get<std::int64_t>();
    const std::string content = t["content"].get<std::string>();
    if (id < 0 || id > 50'000'000) fail_input("{}: id {} out of range", at, id);
    if (content.empty()) fail_input("{}: key 'content' is empty", at);
    for (const char* key : {"lstrip", "rstrip", "single_word"})
      if (t.contains(key) && !t[key].is_null() && t[key] != false)
        fail_input(
            "{}: key '{}' is {:.40} for '{:.40}'; tierzero implements added tokens matched exactly, so it "
            "needs false",
            at, key, t[key].dump(), content);
    for (const char* key : {"special", "normalized"})
      if (t.contains(key) && !t[key].is_boolean())
        fail_input("{}: key '{}' is {:.40}, expected true or false", at, key, t[key].dump());
    const bool special = t.value("special", true);
    if (static_cast<std::size_t>(id) >= vocab.tokens.size()) vocab.tokens.resize(id + 1);
    if (!vocab.tokens[id].empty() && vocab.tokens[id] != content)
      fail_input("{}: id {} is '{:.40}' here but another token in model.vocab", at, id, content);
    vocab.tokens[id] = content;  // added tokens are plain text, not in the byte-level alphabet
    if (special)
      vocab.special.push_back(static_cast<std::int32_t>(id));
    else
      vocab.added.push_back({static_cast<std::int32_t>(id), content, t.value("normalized", true)});
  }
  return vocab;
}

BpeVocabulary read_bpe_vocabulary(const std::string& path) {
  if (!fs::exists(path)) fail_input("--tokenizer {}: no such file or folder", path);
  if (!fs::is_directory(path)) return read_hf_tokenizer_json(path);
  const fs::path dir(path);
  if (fs::exists(dir / "tokenizer.json")) return read_hf_tokenizer_json((dir / "tokenizer.json").string());
  if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt"))
    return read_vocab_and_merges((dir / "vocab.json").string(), (dir / "merges.txt").string());
  fail_input("--tokenizer {}: holds neither tokenizer.json nor vocab.json + merges.txt", path);
}

void write_vocab_and_merges(const BpeVocabulary& vocab, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail_input("{}: cannot create folder: {}", dir, ec.message());
  nlohmann::json v = nlohmann::json::object();
  for (std::size_t id = 0; id < vocab.tokens.size(); ++id)
    if (!vocab.tokens[id].empty()) v[bytes_to_alphabet(vocab.tokens[id])] = id;
  auto write = [](const std::string& path, const std::string& text) {
    write_output_file(path, text, "vocabulary");
  };
  write((fs::path(dir) / "vocab.json").string(), v.dump() + "\n");
  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : vocab.merges)
    merges += bytes_to_alphabet(vocab.tokens[a]) + " " + bytes_to_alphabet(vocab.tokens[b]) + "\n";
  write((fs::path(dir) / "merges.txt").string(), merges);
}

}  // namespace tz
