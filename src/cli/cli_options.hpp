// How every subcommand declares its options, so that all of them read values the same way:
//   - integers are parsed exactly (no wrap-around, no "1e9", no trailing text) and range-checked;
//   - reals must be finite and inside their range (NaN, inf and 1e400 are refused);
//   - byte sizes take a binary suffix: 4096, 64K, 64M, 2G, 1T (K = 1024, as nccl-tests reads them);
//   - choices must be one of their words; text values must not be empty;
//   - a bad value is one line naming the option and the value, e.g.
//       --steps 0: must be an integer in [1, 1073741824]
//     (thrown as CLI::ValidationError during parsing, before anything runs or allocates);
//   - every option that has a default shows it in --help the same way, NAME=DEFAULT, and that text is
//     the default that runs (callers pass the value the command really uses).
// option_rules() lists every option declared so far with its kind and range: the CLI's
// table-driven test walks all of them and feeds each one values outside its range.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tz::cli {

enum class OptionKind { integer, real, size_bytes, choice, text, flag };

struct OptionRule {
  std::string command;  // "train", "bench comm", ...
  std::string name;     // the option's first long name, "--steps"
  OptionKind kind = OptionKind::text;
  double min = 0, max = 0;           // integer, real, size_bytes: the range (inclusive unless min_exclusive)
  bool min_exclusive = false;        // real: (min, max]
  std::vector<std::string> choices;  // choice: the allowed words; real: extra words (e.g. "auto")
  bool list = false;                 // takes several values
};

// Every option declared through an OptionSet since the last clear_option_rules().
const std::vector<OptionRule>& option_rules();
void clear_option_rules();

// Parsers behind the options (also used for values that arrive in other ways). Each throws
// CLI::ValidationError("<name> <value>: must be ...").
long long parse_integer(const std::string& name, const std::string& text, long long min, long long max);
std::uint64_t parse_unsigned(const std::string& name, const std::string& text, std::uint64_t max);
double parse_real(const std::string& name, const std::string& text, double min, double max,
                  bool min_exclusive = false);
std::uint64_t parse_size_bytes(const std::string& name, const std::string& text, std::uint64_t min,
                               std::uint64_t max);

// "64 MiB"-style display of a byte count for defaults and messages ("4096", "64M" are what users type).
std::string size_text(std::uint64_t bytes);

class OptionSet {
 public:
  OptionSet(CLI::App& app, std::string command);

  // Integer options: the target keeps its value unless the option is given. `default_text` is what
  // --help shows (empty: the target's value).
  CLI::Option* integer(const std::string& names, int& target, long long min, long long max,
                       const std::string& help, const std::string& default_text = "");
  CLI::Option* integer(const std::string& names, long long& target, long long min, long long max,
                       const std::string& help, const std::string& default_text = "");
  CLI::Option* integer(const std::string& names, std::optional<int>& target, long long min, long long max,
                       const std::string& help, const std::string& default_text);
  CLI::Option* integer(const std::string& names, std::vector<int>& target, long long min, long long max,
                       const std::string& help, const std::string& default_text = "");
  CLI::Option* integer(const std::string& names, std::size_t& target, long long min, long long max,
                       const std::string& help, const std::string& default_text = "");
  CLI::Option* integer(const std::string& names, std::vector<std::size_t>& target, long long min,
                       long long max, const std::string& help, const std::string& default_text = "");
  CLI::Option* unsigned_integer(const std::string& names, std::optional<std::uint64_t>& target,
                                std::uint64_t max, const std::string& help, const std::string& default_text);
  CLI::Option* unsigned_integer(const std::string& names, std::uint64_t& target, std::uint64_t max,
                                const std::string& help, const std::string& default_text);
  // An integer or real whose value sets more than one field: `set` receives it.
  CLI::Option* integer(const std::string& names, std::function<void(long long)> set, long long min,
                       long long max, const std::string& help, const std::string& default_text);
  // Real options in [min, max] (or (min, max]).
  CLI::Option* real(const std::string& names, double& target, double min, double max, const std::string& help,
                    const std::string& default_text = "", bool min_exclusive = false);
  CLI::Option* real(const std::string& names, std::optional<double>& target, double min, double max,
                    const std::string& help, const std::string& default_text, bool min_exclusive = false);
  CLI::Option* real(const std::string& names, std::vector<double>& target, double min, double max,
                    const std::string& help, const std::string& default_text = "",
                    bool min_exclusive = false);
  CLI::Option* real(const std::string& names, std::function<void(double)> set, double min, double max,
                    const std::string& help, const std::string& default_text, bool min_exclusive = false);
  // A real, or one of `words` (e.g. "auto"): the text is stored as given.
  CLI::Option* real_or_word(const std::string& names, std::string& target, double min, double max,
                            std::vector<std::string> words, const std::string& help, bool min_exclusive);
  // A byte size with an optional K/M/G/T suffix.
  CLI::Option* size_bytes(const std::string& names, std::size_t& target, std::uint64_t min, std::uint64_t max,
                          const std::string& help);
  CLI::Option* choice(const std::string& names, std::string& target, std::vector<std::string> choices,
                      const std::string& help, const std::string& default_text = "");
  CLI::Option* choice(const std::string& names, std::vector<std::string>& target,
                      std::vector<std::string> choices, const std::string& help,
                      const std::string& default_text = "");
  // Free text (a path, a prompt, a name checked later): must not be empty.
  CLI::Option* text(const std::string& names, std::string& target, const std::string& help,
                    const std::string& default_text = "");
  CLI::Option* text(const std::string& names, std::vector<std::string>& target, const std::string& help,
                    const std::string& default_text = "");
  CLI::Option* flag(const std::string& names, bool& target, const std::string& help);
  // A flag whose effect is not setting a bool to true (e.g. --fp32 turning bf16 off): `on` runs when given.
  CLI::Option* flag(const std::string& names, std::function<void()> on, const std::string& help);

  CLI::App& app() { return app_; }

 private:
  // Parses one given value of the option named `name` into the target (throws as parse_* do).
  using ValueParser = std::function<void(const std::string& name, const std::string& value)>;
  // Records the option's rule (command and name filled in) in option_rules().
  OptionRule& rule(const std::string& names, OptionRule r);
  // Declares an option taking one value, or a comma-separated list (cleared before the values
  // are parsed); `type` and `shown` are what --help prints.
  CLI::Option* single(const std::string& names, const std::string& help, OptionRule r,
                      const std::string& type, const std::string& shown, ValueParser parse);
  CLI::Option* several(const std::string& names, const std::string& help, OptionRule r,
                       const std::string& type, const std::string& shown, std::function<void()> clear,
                       ValueParser parse_each);
  template <typename T>
  CLI::Option* scalar_integer(const std::string& names, T& target, long long min, long long max,
                              const std::string& help, const std::string& default_text);
  template <typename T>
  CLI::Option* list_integer(const std::string& names, std::vector<T>& target, long long min, long long max,
                            const std::string& help, const std::string& default_text);
  CLI::App& app_;
  std::string command_;
};

}  // namespace tz::cli
