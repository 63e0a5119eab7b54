// `tierzero plot METRICS.jsonl --out DIR`: charts of a training run from its --metrics file, drawn
// with gnuplot (Debian's gnuplot-nox), each as PNG and SVG:
//   DIR/loss.{png,svg}          training loss and validation loss (nats/token) against the step
//   DIR/tokens_per_s.{png,svg}  tokens/s of all ranks against the step
// beside the data files they are drawn from (DIR/loss.dat, DIR/val_loss.dat, DIR/tokens_per_s.dat)
// and the script (DIR/plot.gp). Every line of the metrics file is read strictly: a line that is not
// a JSON object with the fields of its event ("step": step, loss, tokens_per_s; "eval": step,
// val_loss) is an error naming the file and the line, except null: JSON has no NaN, so train writes
// a non-finite value (the loss of a skipped step) as null. Such points are left out of their curve,
// a null loss is marked on the loss chart by a dashed line at its step, and both are counted, with
// their steps, in the line the command prints.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/json_read.hpp"
#include "core/output_file.hpp"

namespace tz::cli {
namespace {

struct PlotArgs {
  std::string metrics;
  std::string out = "plot-out";
};

using Points = std::vector<std::pair<long long, double>>;

struct Series {
  Points loss, val_loss, tokens_per_s;
  long long steps = 0, evals = 0;  // lines read, finite or not
  // Steps (and evaluations) whose loss was non-finite: null in the file.
  std::vector<long long> nonfinite_loss, nonfinite_val_loss;
};

// Adds the point (step, key) to `to`, or returns false when the file holds null there (a value train
// could not write as a JSON number). Any other non-number is an error naming the line and the key.
bool add_point(const JsonFields& f, std::string_view key, long long step, Points& to) {
  if (f.has(key) && f.raw(key).is_null()) return false;
  to.emplace_back(step, f.number(key));
  return true;
}

Series read_metrics(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail_input("plot: {} is a directory; expected the JSON-lines file `tierzero train --metrics FILE` wrote",
               path);
  std::ifstream in(path);
  if (!in) fail_input("plot: {}: cannot open for reading", path);
  Series s;
  std::string line;
  for (long long n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const std::string where = fmt::format("metrics {} line {}", path, n);
    const nlohmann::json doc = parse_json_strict(line, where);
    JsonFields f(doc, where);
    const std::string event = f.str_or("event", "step");
    const long long step = f.integer("step", 0, 1LL << 40);
    if (event == "step") {
      ++s.steps;
      if (!add_point(f, "loss", step, s.loss)) s.nonfinite_loss.push_back(step);
      add_point(f, "tokens_per_s", step, s.tokens_per_s);
    } else if (event == "eval") {
      ++s.evals;
      if (!add_point(f, "val_loss", step, s.val_loss)) s.nonfinite_val_loss.push_back(step);
    } else {
      f.fail("event", fmt::format("must be \"step\" or \"eval\", got \"{}\"", event));
    }
  }
  if (in.bad()) fail_input("plot: {}: read failed", path);
  if (s.steps == 0)
    fail_input("plot: {}: no step lines (write it with `tierzero train --metrics FILE`)", path);
  if (s.loss.empty())
    fail_input("plot: {}: the loss of every one of its {} steps is null (non-finite): no loss to draw", path,
               s.steps);
  return s;
}

// "3, 5 and 9", the first `shown` of them and how many more.
std::string step_list(const std::vector<long long>& steps, std::size_t shown = 10) {
  std::string out;
  for (std::size_t i = 0; i < steps.size() && i < shown; ++i)
    out += fmt::format("{}{}", i == 0 ? "" : (i + 1 == steps.size() ? " and " : ", "), steps[i]);
  if (steps.size() > shown) out += fmt::format(" and {} more", steps.size() - shown);
  return out;
}

// Writes `text` to `path`; an InputError naming the file and the system's reason when it fails.
void write_plot_file(const std::filesystem::path& path, const std::string& text) {
  write_output_file(path.string(), text, "plot output");
}

std::string data_text(const Points& points) {
  std::string s;
  for (const auto& [x, y] : points) s += fmt::format("{} {:.9g}\n", x, y);
  return s;
}

int run_plot(const PlotArgs& a) {
  const Series s = read_metrics(a.metrics);
  namespace fs = std::filesystem;
  if (a.out.find('\'') != std::string::npos)
    fail_input("plot: --out {}: a folder name with a ' cannot be passed to gnuplot", a.out);
  const fs::path dir(a.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail_input("plot: --out {}: cannot create the folder: {}", a.out, ec.message());
  write_plot_file(dir / "loss.dat", data_text(s.loss));
  write_plot_file(dir / "val_loss.dat", data_text(s.val_loss));
  write_plot_file(dir / "tokens_per_s.dat", data_text(s.tokens_per_s));
  auto q = [&](const char* name) { return "'" + (dir / name).string() + "'"; };
  std::string gp = "set grid\nset key top right\nset xlabel 'step (optimizer steps)'\n";
  // A step with a non-finite loss: a dashed vertical line across the loss chart at its step, and one
  // entry in the key (an empty curve drawn in the same style) that counts them.
  std::string marks, unmark, mark_key;
  constexpr const char* kMarkStyle = "lc rgb '#c00000' dt 2 lw 1";
  for (long long step : s.nonfinite_loss)
    marks +=
        fmt::format("set arrow from first {0}, graph 0 to first {0}, graph 1 nohead {1}\n", step, kMarkStyle);
  if (!s.nonfinite_loss.empty()) {
    unmark = "unset arrow\n";
    mark_key = fmt::format(", NaN with lines {} title 'non-finite loss (step skipped): {} step{}'",
                           kMarkStyle, s.nonfinite_loss.size(), s.nonfinite_loss.size() == 1 ? "" : "s");
  }
  const std::string loss_plot = fmt::format(
      "{}plot {} using 1:2 with lines lw 2 title 'training loss'{}{}\n{}", marks, q("loss.dat"),
      s.val_loss.empty() ? ""
                         : fmt::format(", {} using 1:2 with linespoints pt 7 lw 2 title 'validation loss'",
                                       q("val_loss.dat")),
      mark_key, unmark);
  const std::string rate_plot =
      fmt::format("plot {} using 1:2 with lines lw 2 title 'tokens/s (all ranks)'\n", q("tokens_per_s.dat"));
  for (const auto& [terminal, ext] :
       {std::pair{"pngcairo size 900,560", "png"}, {"svg size 900,560", "svg"}}) {
    gp += fmt::format("set terminal {}\n", terminal);
    gp += fmt::format("set output {}\nset title 'Loss'\nset ylabel 'loss (nats/token)'\n{}",
                      q(fmt::format("loss.{}", ext).c_str()), loss_plot);
    gp += fmt::format("set output {}\nset title 'Throughput'\nset ylabel 'tokens/s'\n{}",
                      q(fmt::format("tokens_per_s.{}", ext).c_str()), rate_plot);
    gp += "unset output\n";
  }
  write_plot_file(dir / "plot.gp", gp);
  const std::string cmd = fmt::format("gnuplot '{}'", (dir / "plot.gp").string());
  const int rc = std::system(cmd.c_str());
  if (rc != 0)
    fail_input(
        "plot: gnuplot failed (status {}; is gnuplot-nox installed?): the data files and {} are written", rc,
        (dir / "plot.gp").string());
  for (const char* f : {"loss.png", "loss.svg", "tokens_per_s.png", "tokens_per_s.svg"})
    if (!fs::exists(dir / f, ec) || fs::file_size(dir / f, ec) == 0)
      fail_input("plot: gnuplot wrote no {}", (dir / f).string());
  std::string left_out;
  if (!s.nonfinite_loss.empty())
    left_out += fmt::format("; {} step{} with a non-finite loss (null) left out and marked: step{} {}",
                            s.nonfinite_loss.size(), s.nonfinite_loss.size() == 1 ? "" : "s",
                            s.nonfinite_loss.size() == 1 ? "" : "s", step_list(s.nonfinite_loss));
  if (!s.nonfinite_val_loss.empty())
    left_out +=
        fmt::format("; {} evaluation{} with a non-finite validation loss (null) left out: at step{} {}",
                    s.nonfinite_val_loss.size(), s.nonfinite_val_loss.size() == 1 ? "" : "s",
                    s.nonfinite_val_loss.size() == 1 ? "" : "s", step_list(s.nonfinite_val_loss));
  fmt::print(
      "plot: {} steps, {} evaluations from {}{}; wrote {}/loss.png, loss.svg, tokens_per_s.png, "
      "tokens_per_s.svg\n",
      s.steps, s.evals, a.metrics, left_out, a.out);
  return 0;
}

const bool plot_registered = register_command(
    {"plot", "Draw a training run's loss, validation loss and tokens/s from its --metrics file (PNG and SVG)",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<PlotArgs>();
       OptionSet o(sub, "plot");
       o.text("metrics", a->metrics, "the JSON-lines file `tierzero train --metrics` wrote")->required();
       o.text("--out", a->out, "output folder");
       return [a] { return run_plot(*a); };
     }});

}  // namespace
}  // namespace tz::cli
