// Strict JSON reading (core/json_read.hpp): what the JSON library accepts or crashes on and the
// reader refuses with one line naming the origin, the key and the position.
#include "core/json_read.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

using test::expect_input_error;

std::string error_of(std::string_view text) {
  try {
    parse_json_strict(text, "config c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonRead, ParsesWhatTheLibraryParses) {
  const std::string text = R"({"a": [1, -2, 3.5, 18446744073709551615, true, null, "s\u00e9"], "b": {"c": {}},
                               "d": [], "e": 1e-300, "f": "\n"})";
  EXPECT_EQ(parse_json_strict(text, "t"), nlohmann::json::parse(text));
}

TEST(JsonRead, RepositoryFilesReadAsTheLibraryReadsThem) {
  int files = 0;
  for (const char* folder : {"configs", "models", "topologies", "tests/engine/configs", "tests/fixtures"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(TZ_SOURCE_DIR) + "/" + folder)) {
      if (e.path().extension() != ".json") continue;
      std::ifstream in(e.path());
      const nlohmann::json expected = nlohmann::json::parse(in);
      EXPECT_EQ(read_json_file(e.path().string()), expected) << e.path();
      ++files;
    }
  }
  EXPECT_GE(files, 12);
}

TEST(JsonRead, DuplicateKeysNameThePath) {
  expect_input_error([] { parse_json_strict(R"({"lr": 1, "lr": 2})", "config c.json"); },
                     {"config c.json", "duplicate key 'lr'"});
  expect_input_error(
      [] {
        parse_json_strict(R"({"optimizer": {"params": {"lr": 1, "eps": 2, "lr": 1}}})", "config c.json");
      },
      {"config c.json", "duplicate key 'optimizer.params.lr'"});
  expect_input_error(
      [] {
        parse_json_strict(R"({"tiers": [{"name": "a"}, {"name": "b", "fanout": 2, "fanout": 2}]})", "t");
      },
      {"duplicate key 'tiers[1].fanout'"});
  // The same key in different objects is fine.
  EXPECT_NO_THROW(parse_json_strict(R"({"a": {"x": 1}, "b": {"x": 2}, "x": [{"x": 3}, {"x": 4}]})", "t"));
}

TEST(JsonRead, NestingIsLimited) {
  EXPECT_NO_THROW(parse_json_strict(test::nested_arrays(kMaxJsonDepth), "t"));
  expect_input_error([] { parse_json_strict(test::nested_arrays(kMaxJsonDepth + 1), "config c.json"); },
                     {"config c.json", "nested deeper than 128 levels"});
  std::string objects;
  for (std::size_t i = 0; i <= kMaxJsonDepth; ++i) objects += R"({"k":)";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  expect_input_error([&] { parse_json_strict(objects, "model m.json"); },
                     {"model m.json", "nested deeper than 128", "at 'k.k.k.k"});
}

TEST(JsonRead, HundredThousandLevelsGiveOneShortLine) {
  test::ScratchDir dir;
  const std::string path = dir.write("deep.json", R"({"tierzero": )" + test::nested_arrays(100000) + "}");
  const std::string deep_objects = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += R"({"a":)";
    return s + "0" + std::string(100000, '}');
  }();
  const std::string path2 = dir.write("deep_objects.json", deep_objects);
  for (const auto& p : {path, path2}) {
    try {
      read_json_file(p, "config");
      FAIL() << "expected an InputError";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("config " + p + ": arrays/objects nested deeper than 128 levels"), std::string::npos)
          << msg;
      EXPECT_LT(msg.size(), 300u + p.size()) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos);
    }
  }
}

TEST(JsonRead, NumbersOutOfRangeNameTheKey) {
  expect_input_error(
      [] { parse_json_strict(R"({"optimizer": {"params": {"lr": 1e400}}})", "config c.json"); },
      {"config c.json", "key 'optimizer.params.lr'", "1e400", "out of range", "line 1"});
  expect_input_error([] { parse_json_strict("{\n \"betas\": [0.9,\n -1e999]}", "config c.json"); },
                     {"key 'betas[1]'", "-1e999", "line 3"});
  // Integers beyond 64 bits become doubles (the library's rule); fields that need integers reject them.
  EXPECT_TRUE(parse_json_strict(R"({"n": 123456789012345678901234567890})", "t")["n"].is_number_float());
}

TEST(JsonRead, SyntaxErrorsNameLineColumnAndQuoteLittle) {
  const std::string msg = error_of("{\n  \"a\": 1,\n  \"b\": tru\n}");
  EXPECT_NE(msg.find("config c.json: invalid JSON at line 3, column"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid literal"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;

  // An unterminated 1 MB string: the library's own message quotes all of it.
  const std::string long_msg = error_of(R"({"a": ")" + std::string(1 << 20, 'y'));
  EXPECT_NE(long_msg.find("missing closing quote"), std::string::npos) << long_msg.substr(0, 400);
  EXPECT_LT(long_msg.size(), 400u) << long_msg.substr(0, 400);

  EXPECT_NE(error_of(R"({"a": 1} {"b": 2})").find("invalid JSON"), std::string::npos);  // trailing text
  EXPECT_NE(error_of("{\"a\": \"\xff\xfe\"}").find("invalid JSON at line 1"),
            std::string::npos);                                                      // bad UTF-8
  EXPECT_NE(error_of("{\"a\": \"\x01\"}").find("invalid JSON"), std::string::npos);  // raw control character
  EXPECT_NE(error_of("{\"a\": 1, // comment\n}").find("invalid JSON"), std::string::npos);
  for (const char* text : {"{\"a\": tru}", "[1, 2", "{\"a\"}", "nul", "\"\\u12\""})
    expect_input_error([&] { parse_json_strict(text, "config c.json"); },
                       {"config c.json: invalid JSON at line"});
}

TEST(JsonRead, EmptyInputSaysSo) {
  expect_input_error([] { parse_json_strict("", "config c.json"); }, {"config c.json: is empty"});
  expect_input_error([] { parse_json_strict(" \n\t ", "config c.json"); }, {"config c.json: is empty"});
}

TEST(JsonRead, FilesThatAreNotJsonFilesSaySo) {
  test::ScratchDir dir;
  expect_input_error([&] { read_json_file(dir.path(""), "config"); },
                     {"is a directory, expected a JSON file"});
  expect_input_error([&] { read_json_file(dir.path("missing.json"), "topology"); },
                     {"topology " + dir.path("missing.json") + ": no such file"});
  expect_input_error([&] { read_json_file(dir.write("empty.json", ""), "config"); },
                     {"empty.json: is empty"});
  // A device that never ends is cut off at the size limit, not read into memory forever.
  expect_input_error([] { read_json_file("/dev/zero", "config"); },
                     {"config /dev/zero: larger than 64 MiB, not a configuration file"});
  const std::string too_long_name = dir.path(std::string(5000, 'a') + ".json");
  expect_input_error([&] { read_json_file(too_long_name, "config"); }, {"cannot read"});
}

TEST(JsonRead, ReadErrorsSaySo) {
  // Opens, but reading offset 0 of a process's own memory fails (EIO), as root too.
  expect_input_error([] { read_json_file("/proc/self/mem", "config"); },
                     {"config /proc/self/mem: read error"});
}

TEST(JsonRead, UnreadableFileSaysSo) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files without read permission";
  test::ScratchDir dir;
  const std::string path = dir.write("secret.json", "{}");
  std::filesystem::permissions(path, std::filesystem::perms::none);
  expect_input_error([&] { read_json_file(path, "config"); },
                     {"config " + path + ": cannot open: Permission denied"});
}

TEST(JsonRead, HugeValuesReadAndErrorsStayShort) {
  // 25 MB value in a file: it reads (under the size limit); the readers' messages quote an excerpt
  // (see json_fields_test and the readers' suites).
  test::ScratchDir dir;
  const std::string path =
      dir.write("big.json", R"({"gradient_clipping": ")" + std::string(25'000'000, 'x') + "\"}");
  const nlohmann::json doc = read_json_file(path, "config");
  EXPECT_EQ(doc["gradient_clipping"].get_ref<const std::string&>().size(), 25'000'000u);
}

}  // namespace
}  // namespace tz
