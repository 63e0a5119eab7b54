// NFC normalisation (unicode_nfc.hpp) against Python's unicodedata.normalize("NFC", ...) on the texts
// of tests/fixtures/nfc_normalize.json (scripts/gen_nfc_data.py): combining sequences in and out of
// canonical order, Hangul jamo and syllables, already-composed text, singletons (U+212B, U+2126),
// composition exclusions (U+0958, U+2ADC), non-starter decompositions (U+0344, U+0F73), blocked
// marks, invalid UTF-8, and random mixes of those.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "data/unicode_nfc.hpp"

namespace tz {
namespace {

std::string nfc_from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

TEST(UnicodeNfc, EqualsPythonUnicodedataOnEveryFixtureText) {
  std::ifstream in(std::string(TZ_TEST_DATA_DIR) + "/nfc_normalize.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_GE(doc["cases"].size(), 90u);
  int changed = 0;
  for (const auto& c : doc["cases"]) {
    const std::string text = nfc_from_hex(c["text"]), want = nfc_from_hex(c["nfc"]);
    EXPECT_EQ(nfc_normalize(text), want) << "text hex " << c["text"].get<std::string>();
    EXPECT_EQ(nfc_normalize(want), want) << "NFC is idempotent; hex " << c["nfc"].get<std::string>();
    changed += text != want;
  }
  EXPECT_GE(changed, 40);  // the fixture exercises composition, not only pass-through
}

TEST(UnicodeNfc, WorkedExamples) {
  EXPECT_EQ(nfc_normalize("cafe\xcc\x81"), "caf\xc3\xa9");               // e + U+0301 -> U+00E9
  EXPECT_EQ(nfc_normalize("\xe2\x84\xab"), "\xc3\x85");                  // U+212B ANGSTROM -> U+00C5
  EXPECT_EQ(nfc_normalize("\xe0\xa5\x98"), "\xe0\xa4\x95\xe0\xa4\xbc");  // U+0958 stays decomposed
  EXPECT_EQ(nfc_normalize("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"), "\xed\x95\x9c");  // jamo -> U+D55C
  EXPECT_EQ(nfc_normalize("e\xff\xcc\x81"), "e\xff\xcc\x81");  // an invalid byte blocks and survives
  EXPECT_EQ(canonical_combining_class(0x0301), 230);
  EXPECT_EQ(canonical_combining_class(0x0323), 220);
  EXPECT_EQ(canonical_combining_class('a'), 0);
}

}  // namespace
}  // namespace tz
