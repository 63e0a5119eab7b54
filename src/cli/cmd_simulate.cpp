// `tierzero simulate`: sweeps the cost model over outer-tier counts (e.g. 1..48 Frontier nodes =
// 8..384 GCDs) and plans, writes CSV and JSON, and draws two charts with gnuplot (Debian's
// gnuplot-nox): TFLOPS per device vs devices (one line per plan) and bytes per tier per plan at the
// largest size. `--paper` prints the validation ratios of docs/cost_model.md.
#include <fmt/format.h>
#include <fmt/os.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_registry.hpp"
#include "cli/step_inputs.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "perf/auto_planner.hpp"
#include "perf/calibration.hpp"
#include "perf/cost_report.hpp"
#include "perf/sim_step.hpp"

namespace tz::cli {
namespace {

struct SimulateArgs {
  std::string topology = "frontier";
  std::string model = "gpt-20b";
  std::vector<int> nodes = {1, 2, 4, 8, 16, 32, 48};
  std::vector<std::string> plans = {"zero3", "zeropp", "three-level"};
  std::string out = "simulate-out";
  bool no_charts = false;
  bool sim_check = false;
  std::string calibrate_from;
  double measured_tflops = 0;
  std::vector<double> thread_tflops;
  int host_cores = 0;
  int local_ranks = 0;
  std::string write_topology;
  StepInputs step;  // --micro-batch, --accumulation, --fraction, --no-recompute, --no-overlap, --collectives
};

// The step's collectives on the simulated transport (same comm code) beside the closed form.
void print_sim_check(const perf::ModelShape& model, const Topology& topo,
                     const std::vector<std::string>& plans, const PlanOptions& base) {
  if (topo.world_size() > 64) {
    fmt::print("\nsimulated transport: skipped ({} ranks; it runs one thread per rank, at most 64)\n",
               topo.world_size());
    return;
  }
  fmt::print("\nsimulated transport at {} ranks: the step's collectives run by comm/ on a simulated clock\n",
             topo.world_size());
  fmt::print("{:<14} {:<10} {:>14} {:>14} {:>14}\n", "plan", "tier", "simulated_s", "closed_form_s",
             "ledger_GB");
  for (const auto& name : plans) {
    const perf::SimStepResult r =
        perf::simulate_step_comm(model, topo, perf::preset_with_options(name, topo, base));
    for (const auto& t : r.tiers)
      fmt::print("{:<14} {:<10} {:>14.6f} {:>14.6f} {:>14.4f}\n", name, t.name, t.simulated_s,
                 t.closed_form_s, t.ledger_bytes / 1e9);
  }
}

void write_charts(const std::filesystem::path& dir, const std::vector<std::string>& plans,
                  const Topology& largest, const std::vector<std::string>& columns) {
  std::string gp = "set terminal pngcairo size 900,560\nset datafile separator ','\nset key outside right\n";
  gp += fmt::format("set output '{}'\n", (dir / "scaling.png").string());
  gp += "set title 'Predicted TFLOPS per device'\nset xlabel 'devices'\nset ylabel 'TFLOPS per device'\n";
  gp += "set logscale x 2\nset grid\nplot ";
  for (std::size_t i = 0; i < plans.size(); ++i)
    gp += fmt::format("{}'{}' using 1:{} with linespoints title '{}'", i ? ", " : "",
                      (dir / "scaling.csv").string(), i + 2, plans[i]);
  gp += "\nunset logscale x\n";
  gp += fmt::format("set output '{}'\n", (dir / "traffic.png").string());
  gp += fmt::format("set title 'Bytes per rank per step by tier at {} devices'\n", largest.world_size());
  gp += "set style data histograms\nset style histogram clustered\nset style fill solid 0.8\n";
  gp += "set xlabel 'plan'\nset ylabel 'GB per rank per step'\nset xtics rotate by -20\nplot ";
  for (std::size_t t = 0; t < columns.size(); ++t)
    gp += fmt::format("{}'{}' using {}:xtic(1) title '{}'", t ? ", " : "", (dir / "traffic.csv").string(),
                      t + 2, columns[t]);
  gp += "\n";
  std::ofstream(dir / "charts.gp") << gp;
  const std::string cmd = fmt::format("gnuplot '{}'", (dir / "charts.gp").string());
  if (std::system(cmd.c_str()) != 0)
    fmt::print(stderr, "simulate: gnuplot failed (is gnuplot-nox installed?); CSV and JSON are written\n");
}

perf::DeviceCalibration device_calibration(const SimulateArgs& a) {
  if (a.thread_tflops.empty()) {
    if (a.host_cores > 0 || a.local_ranks > 0)
      fail_input("--host-cores and --local-ranks need --thread-tflops (the 1-rank rates by thread count)");
    return {.tflops = a.measured_tflops, .source = "given by --measured-tflops"};
  }
  if (a.measured_tflops > 0) fail_input("give --measured-tflops or --thread-tflops, not both");
  if (a.host_cores < 1 || a.local_ranks < 1)
    fail_input("--thread-tflops needs --host-cores C and --local-ranks k (ranks sharing the host)");
  const perf::HostCompute host{.cores = a.host_cores, .tflops_by_threads = a.thread_tflops};
  std::string rates;
  for (std::size_t t = 0; t < a.thread_tflops.size(); ++t)
    rates += fmt::format("{}R({}) = {:.4g}", t ? ", " : "", t + 1, a.thread_tflops[t]);
  return {
      .tflops = perf::shared_rank_tflops(host, a.local_ranks),
      .source = fmt::format("{} ranks sharing {} cores: R(max(1, C/k)) x min(1, C/k), from the 1-rank rates "
                            "{} TFLOPS with t threads",
                            a.local_ranks, a.host_cores, rates)};
}

int run_calibrate(const SimulateArgs& a) {
  if (a.write_topology.empty()) fail_input("--calibrate-from needs --write-topology FILE");
  const nlohmann::json doc = perf::calibrated_topology_json(
      Topology::load(a.topology), read_json_file(a.calibrate_from), a.calibrate_from, device_calibration(a));
  Topology::from_json(doc, a.write_topology);  // it must read back
  std::ofstream(a.write_topology) << doc.dump(2) << "\n";
  fmt::print("wrote {}: device {:.4g} TFLOPS per rank\n", a.write_topology,
             doc["device"]["peak_tflops"].get<double>());
  for (const auto& t : doc["tiers"])
    fmt::print("  {:<10} {:>10.3f} GB/s {:>10.2f} us  reduce {:>8.3f} GB/s   {}\n",
               t["name"].get<std::string>(), t["bandwidth_gbps"].get<double>(), t["latency_us"].get<double>(),
               t.value("reduce_gbps", 0.0), t["source"].get<std::string>());
  return 0;
}

int run_simulate(const SimulateArgs& a) {
  if (!a.calibrate_from.empty()) return run_calibrate(a);
  const Topology base_topo = Topology::load(a.topology);
  const perf::ModelShape model = perf::load_model_shape(a.model);
  const PlanOptions base = a.step.plan_options();
  const perf::CostOptions opt = a.step.cost_options();
  const std::filesystem::path dir(a.out);
  std::filesystem::create_directories(dir);

  nlohmann::json doc = {
      {"topology", base_topo.name()}, {"model", model.name}, {"points", nlohmann::json::array()}};
  std::map<std::string, std::map<int, double>> tflops;
  std::vector<perf::CostRow> largest_rows;
  Topology largest = base_topo;
  struct Point {
    std::string plan;
    int devices = 0;
    perf::StepCost cost;
  };
  std::vector<Point> points;
  for (int n : a.nodes) {
    const Topology topo = base_topo.resolve_outer(n);
    largest_rows.clear();
    largest = topo;
    for (const auto& name : a.plans) {
      const PartitionPlan plan = perf::preset_with_options(name, topo, base);
      const perf::StepCost c = perf::predict_step(model, topo, plan, opt);
      points.push_back({name, topo.world_size(), c});
      doc["points"].push_back(perf::cost_to_json(topo, plan, c));
      tflops[name][topo.world_size()] = c.tflops_per_device;
      largest_rows.push_back({plan, c});
    }
  }
  // Traffic columns: the tiers, then any flat group ("world", ...) a plan's collectives ran on.
  std::vector<perf::StepCost> costs;
  for (const auto& p : points) costs.push_back(p.cost);
  const std::vector<std::string> columns = perf::traffic_columns(base_topo, costs);
  std::ofstream csv(dir / "sweep.csv");
  csv << "plan,devices,tflops_per_device,step_s,compute_s,exposed_comm_s,peak_memory_gib,fits";
  for (const auto& c : columns) csv << "," << c << "_bytes";
  csv << "\n";
  for (const auto& p : points) {
    const perf::StepCost& c = p.cost;
    csv << fmt::format("{},{},{:.4f},{:.6f},{:.6f},{:.6f},{:.3f},{}", p.plan, p.devices, c.tflops_per_device,
                       c.step_s, c.compute_s, c.exposed_comm_s,
                       double(c.memory.peak_bytes()) / double(1ull << 30), c.fits ? 1 : 0);
    for (const auto& col : columns) csv << fmt::format(",{:.0f}", perf::traffic_bytes(c, col));
    csv << "\n";
  }
  csv.close();
  std::ofstream traffic(dir / "traffic.csv");
  for (const auto& r : largest_rows) {
    traffic << r.plan.name();
    for (const auto& col : columns) traffic << fmt::format(",{:.4f}", perf::traffic_bytes(r.cost, col) / 1e9);
    traffic << "\n";
  }
  traffic.close();
  std::ofstream(dir / "sweep.json") << doc.dump(2) << "\n";
  std::ofstream scaling(dir / "scaling.csv");
  for (const auto& [devices, _] : tflops.begin()->second) {
    scaling << devices;
    for (const auto& name : a.plans) scaling << fmt::format(",{:.4f}", tflops[name][devices]);
    scaling << "\n";
  }
  scaling.close();

  fmt::print(
      "model {} on {}: micro-batch {}, accumulation {}, fraction of peak {}, recompute {}, overlap {}, "
      "collectives {}\n",
      model.name, base_topo.name(), a.step.micro_batch, a.step.accumulation, a.step.fraction,
      a.step.no_recompute ? "off" : "on", a.step.no_overlap ? "off" : "on", a.step.collectives);
  fmt::print("{:<14}", "devices");
  for (const auto& name : a.plans) fmt::print(" {:>12}", name);
  fmt::print("   (TFLOPS per device)\n");
  for (const auto& [devices, _] : tflops.begin()->second) {
    fmt::print("{:<14}", devices);
    for (const auto& name : a.plans) fmt::print(" {:>12.1f}", tflops[name][devices]);
    fmt::print("\n");
  }
  fmt::print("\nat {} devices:\n{}", largest.world_size(), perf::format_cost_table(largest, largest_rows));
  auto ratio = [&](const std::string& x, const std::string& y) {
    const int d = largest.world_size();
    return tflops.count(x) && tflops.count(y) ? tflops[x][d] / tflops[y][d] : 0.0;
  };
  if (tflops.count("zero3") && tflops.count("zeropp") && tflops.count("three-level")) {
    const auto& tl = tflops["three-level"];
    fmt::print(
        "\nratios at {} devices: zeropp/zero3 = {:.3f} (paper 1.405), three-level/zeropp = {:.3f} (paper "
        "1.71); "
        "three-level scaling efficiency {} -> {} devices = {:.3f} (paper 0.94)\n",
        largest.world_size(), ratio("zeropp", "zero3"), ratio("three-level", "zeropp"), tl.begin()->first,
        tl.rbegin()->first, tl.rbegin()->second / tl.begin()->second);
  }
  if (a.sim_check) print_sim_check(model, base_topo.resolve_outer(a.nodes.front()), a.plans, base);
  if (!a.no_charts) write_charts(dir, a.plans, largest, columns);
  fmt::print("wrote {}/sweep.csv, sweep.json, scaling.csv, traffic.csv{}\n", dir.string(),
             a.no_charts ? "" : ", scaling.png, traffic.png");
  return 0;
}

const bool registered = register_command(
    {"simulate",
     "Sweep the cost model over device counts and plans; write CSV/JSON and scaling/traffic charts",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<SimulateArgs>();
       sub.add_option("--topology", a->topology, "topology preset or JSON file")->capture_default_str();
       sub.add_option("--model", a->model, "model preset (models/) or JSON file")->capture_default_str();
       sub.add_option("--nodes", a->nodes, "units of the outermost tier to sweep")->capture_default_str();
       sub.add_option("--plans", a->plans, "plan presets")->capture_default_str();
       a->step.add_options(
           sub,
           "how every plan runs multi-tier collectives: hierarchical (tier by tier) or flat (one "
           "ring over the group, as DeepSpeed/NCCL run ZeRO-3 and ZeRO++)");
       sub.add_option("--out", a->out, "output folder")->capture_default_str();
       sub.add_flag("--no-charts", a->no_charts, "skip gnuplot");
       sub.add_flag("--sim-check", a->sim_check,
                    "also run the step's collectives on the simulated transport at the first --nodes size");
       sub.add_option("--calibrate-from", a->calibrate_from,
                      "calibrate instead of sweeping: a `tierzero bench comm --format json` result");
       sub.add_option("--measured-tflops", a->measured_tflops,
                      "with --calibrate-from: the measured model-step rate, written as device peak_tflops");
       sub.add_option(
           "--thread-tflops", a->thread_tflops,
           "with --calibrate-from: model-step rates of a 1-rank run with 1, 2, ... threads; the "
           "device rate is then one rank's share when --local-ranks ranks share --host-cores cores");
       sub.add_option("--host-cores", a->host_cores, "with --thread-tflops: cores of the host");
       sub.add_option("--local-ranks", a->local_ranks, "with --thread-tflops: ranks sharing the host");
       sub.add_option("--write-topology", a->write_topology,
                      "with --calibrate-from: the topology file to write");
       return [a] { return run_simulate(*a); };
     }});

}  // namespace
}  // namespace tz::cli
