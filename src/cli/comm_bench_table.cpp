#include "cli/comm_bench_table.hpp"

#include <fmt/format.h>

namespace tz::cli {
namespace {

std::string nccl_type(const std::string& dtype) {
  return dtype == "bf16" ? "bfloat16" : dtype == "f32" ? "float" : dtype;
}

std::string redop(const std::string& op) {
  return op == "reduce_scatter" || op == "all_reduce" ? "sum" : "none";
}

struct Average {
  double ours = 0, native = 0;
  int rows = 0, native_rows = 0;
  std::string line(const std::string& what) const {
    if (rows == 0) return "";
    std::string s = fmt::format("# Avg bus bandwidth{}: {:.4f} GB/s tierzero", what, ours / rows);
    if (native_rows > 0) s += fmt::format(", {:.4f} GB/s native", native / native_rows);
    return s + "\n";
  }
};

}  // namespace

std::string format_comm_bench_table(const nlohmann::json& doc) {
  const std::string dtype = doc["dtype"].get<std::string>();
  const std::size_t esz = dtype == "bf16" ? 2 : 4;
  std::string out = fmt::format("# tierzero bench comm: topology {}, {} ranks, type {}; native = {}\n",
                                doc["topology"].get<std::string>(), doc["world_size"].get<int>(),
                                nccl_type(dtype), doc["native_library"].get<std::string>());
  if (doc.contains("cpu")) out += fmt::format("# {}\n", doc["cpu"].get<std::string>());
  out +=
      "# size = one rank's full tensor, count = its elements; busbw = algbw x (p-1)/p (all_reduce 2(p-1)/p, "
      "broadcast 1), as nccl-tests; ratio = tierzero busbw / native busbw\n";
  std::string current;
  Average table, all;
  for (const auto& row : doc["results"]) {
    const std::string op = row["op"].get<std::string>();
    const std::string key = row["group"].get<std::string>() + "/" + op;
    if (key != current) {
      out += table.line("");
      table = {};
      current = key;
      out += fmt::format("\n## group {} ({} ranks, {}), {}\n", row["group"].get<std::string>(),
                         row["group_size"].get<int>(), row["algorithm"].get<std::string>(), op);
      out += fmt::format("#{:>11} {:>12} {:>9} {:>6} {:>5} | {:>9} {:>7} {:>7} | {:>9} {:>7} {:>7} | {:>6}\n",
                         "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "time", "algbw",
                         "busbw", "ratio");
      out += fmt::format("#{:>11} {:>12} {:>9} {:>6} {:>5} | {:>9} {:>7} {:>7} | {:>9} {:>7} {:>7} | {:>6}\n",
                         "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)",
                         "(GB/s)", "");
      out += fmt::format("#{:>11} {:>12} {:>9} {:>6} {:>5} | {:^25} | {:^25} |\n", "", "", "", "", "",
                         "tierzero", "native");
    }
    const auto& t = row["tierzero"];
    const std::size_t size = row["size_bytes"].get<std::size_t>();
    out += fmt::format(" {:>11} {:>12} {:>9} {:>6} {:>5} | {:>9.1f} {:>7.3f} {:>7.3f} |", size, size / esz,
                       nccl_type(dtype), redop(op), op == "broadcast" ? 0 : -1, t["time_us"].get<double>(),
                       t["algbw_GBps"].get<double>(), t["busbw_GBps"].get<double>());
    const double busbw = t["busbw_GBps"].get<double>();
    table.ours += busbw;
    all.ours += busbw;
    ++table.rows;
    ++all.rows;
    if (row["native"].is_null()) {
      out += fmt::format(" {:>9} {:>7} {:>7} | {:>6}\n", "n/a", "", "", "");
    } else {
      const auto& n = row["native"];
      out += fmt::format(" {:>9.1f} {:>7.3f} {:>7.3f} | {:>6.2f}\n", n["time_us"].get<double>(),
                         n["algbw_GBps"].get<double>(), n["busbw_GBps"].get<double>(),
                         row["ratio"].get<double>());
      table.native += n["busbw_GBps"].get<double>();
      all.native += n["busbw_GBps"].get<double>();
      ++table.native_rows;
      ++all.native_rows;
    }
  }
  out += table.line("");
  out += '\n';
  out += all.line(" (all rows)");
  return out;
}

}  // namespace tz::cli
