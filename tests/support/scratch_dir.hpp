// Shared by the test suites: a fresh folder under the system's temp folder, named after the running
// test and the process, removed with everything in it when the object goes out of scope.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace tz::test {

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string("tz_") + (info ? std::string(info->test_suite_name()) + "_" + info->name() : "test");
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path(std::string_view name) const { return (dir_ / name).string(); }
  // Writes `content` to the file `name` in the folder and returns its path.
  std::string write(std::string_view name, std::string_view content) const {
    const std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    EXPECT_TRUE(out.good()) << "cannot write " << p;
    return p;
  }

 private:
  std::filesystem::path dir_;
};

// JSON text of `depth` arrays nested inside each other: [[[...]]].
inline std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace tz::test
