#include "data/tokenizer_json_pipeline.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tz {
namespace {

// The value at `key` of `obj` for a message: its JSON text, cut to a length a line can hold.
std::string shown_value(const nlohmann::json& obj, const char* key) {
  if (!obj.contains(key)) return "missing";
  std::string s = obj[key].dump();
  if (s.size() > 160) s = s.substr(0, 160) + "...";
  return s;
}

// Fails unless obj[key] is absent, null or `allowed`.
void require_absent_or(const nlohmann::json& obj, const char* key, const nlohmann::json& allowed,
                       const std::string& where, const std::string& path, const char* why) {
  if (!obj.contains(key) || obj[key].is_null() || obj[key] == allowed) return;
  fail_input("{}: key '{}{}' is {}; {}", where, path, key, shown_value(obj, key), why);
}

std::string type_of(const nlohmann::json& obj) {
  return obj.is_object() && obj.contains("type") && obj["type"].is_string() ? obj["type"].get<std::string>()
                                                                            : std::string();
}

constexpr const char* kSupported =
    "tierzero implements a ByteLevel pre-tokenizer with GPT-2's pattern (GPT-2, GPT-NeoX, Pythia) or a "
    "Sequence of a Split with Llama 3's or GPT-2's pattern and a ByteLevel (Llama 3)";

// The pattern of a Split, recognised exactly.
PreTokenizerPattern read_split(const nlohmann::json& split, const std::string& where,
                               const std::string& path) {
  const nlohmann::json pattern = split.value("pattern", nlohmann::json());
  if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
    fail_input(
        "{}: key '{}pattern' is {}; tierzero needs {{\"Regex\": P}} with Llama 3's or GPT-2's pattern P",
        where, path, shown_value(split, "pattern"));
  const std::string regex = pattern["Regex"].get<std::string>();
  PreTokenizerPattern found;
  if (regex == pretokenizer_regex(PreTokenizerPattern::llama3)) {
    found = PreTokenizerPattern::llama3;
  } else if (regex == pretokenizer_regex(PreTokenizerPattern::gpt2)) {
    found = PreTokenizerPattern::gpt2;
  } else {
    fail_input(
        "{}: key '{}pattern.Regex' is {}; tierzero implements exactly Llama 3's pattern {} and GPT-2's {}",
        where, path, shown_value(pattern, "Regex"),
        nlohmann::json(pretokenizer_regex(PreTokenizerPattern::llama3)).dump(),
        nlohmann::json(pretokenizer_regex(PreTokenizerPattern::gpt2)).dump());
  }
  if (split.value("behavior", nlohmann::json()) != "Isolated")
    fail_input("{}: key '{}behavior' is {}; tierzero needs \"Isolated\" (each match a piece of its own)",
               where, path, shown_value(split, "behavior"));
  require_absent_or(split, "invert", false, where, path, "tierzero needs false (the matches are the pieces)");
  return found;
}

void check_byte_level(const nlohmann::json& byte_level, bool use_regex, const std::string& where,
                      const std::string& path) {
  require_absent_or(byte_level, "add_prefix_space", false, where, path,
                    "tierzero needs false (no space is added before the text)");
  const nlohmann::json v = byte_level.value("use_regex", nlohmann::json());  // absent: true
  if (v.is_null() ? !use_regex : !(v.is_boolean() && v.get<bool>() == use_regex))
    fail_input("{}: key '{}use_regex' is {}; tierzero needs {} here ({})", where, path,
               shown_value(byte_level, "use_regex"), use_regex,
               use_regex ? "a ByteLevel alone cuts the text with GPT-2's pattern"
                         : "after a Split the pieces are not cut again");
}

PreTokenizerPattern read_pre_tokenizer(const nlohmann::json& doc, const std::string& where) {
  const nlohmann::json pre = doc.value("pre_tokenizer", nlohmann::json());
  if (!pre.is_object())
    fail_input("{}: key 'pre_tokenizer' is {}; {}", where, shown_value(doc, "pre_tokenizer"), kSupported);
  const std::string type = type_of(pre);
  if (type == "ByteLevel") {
    check_byte_level(pre, true, where, "pre_tokenizer.");
    return PreTokenizerPattern::gpt2;
  }
  if (type != "Sequence")
    fail_input("{}: key 'pre_tokenizer.type' is {}; {}", where, shown_value(pre, "type"), kSupported);
  const nlohmann::json list = pre.value("pretokenizers", nlohmann::json());
  if (!list.is_array() || list.size() != 2 || type_of(list[0]) != "Split" ||
      type_of(list[1]) != "ByteLevel") {
    std::string found = shown_value(pre, "pretokenizers");
    if (list.is_array()) {  // name the types: the elements themselves may be long
      nlohmann::json types = nlohmann::json::array();
      for (const auto& p : list) types.push_back(type_of(p));
      found = "a list of types " + types.dump();
    }
    fail_input("{}: key 'pre_tokenizer.pretokenizers' is {}; {}", where, found, kSupported);
  }
  const PreTokenizerPattern pattern = read_split(list[0], where, "pre_tokenizer.pretokenizers[0].");
  check_byte_level(list[1], false, where, "pre_tokenizer.pretokenizers[1].");
  return pattern;
}

}  // namespace

TokenizerJsonPipeline read_tokenizer_json_pipeline(const nlohmann::json& doc, const std::string& where) {
  TokenizerJsonPipeline pipeline;
  const nlohmann::json normalizer = doc.value("normalizer", nlohmann::json());
  if (normalizer == nlohmann::json{{"type", "NFC"}})
    pipeline.nfc = true;
  else if (!normalizer.is_null())
    fail_input(
        "{}: key 'normalizer' is {}; tierzero implements no normalizer (null) or {{\"type\": \"NFC\"}} "
        "(no NFD/NFKC, lowercasing, replacements or sequences)",
        where, shown_value(doc, "normalizer"));
  if (doc.contains("decoder") && !doc["decoder"].is_null() && type_of(doc["decoder"]) != "ByteLevel")
    fail_input("{}: key 'decoder' is {}; tierzero decodes byte-level BPE (a ByteLevel decoder or null)",
               where, shown_value(doc, "decoder"));
  pipeline.pretokenizer = read_pre_tokenizer(doc, where);
  return pipeline;
}

}  // namespace tz
