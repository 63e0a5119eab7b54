// `tierzero simulate`: sweeps the cost model over outer-tier counts (e.g. 1..48 Frontier nodes =
// 8..384 GCDs) and plans, writes CSV and JSON, and draws two charts with gnuplot (Debian's
// gnuplot-nox): TFLOPS per device vs devices (one line per plan) and bytes per tier per plan at the
// largest size. scripts/validate_paper.sh prints the
// validation ratios of docs/cost_model.md.
#include <fmt/format.h>
#include <fmt/os.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "cli/step_inputs.hpp"
#include "cli/topology_args.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/output_file.hpp"
#include "perf/auto_planner.hpp"
#include "perf/calibration.hpp"
#include "perf/collective_price.hpp"
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
  std::vector<std::string> calibrate_from;
  double measured_tflops = 0;
  std::vector<double> thread_tflops;
  double quant_GBps = 0;
  int host_cores = 0;
  int local_ranks = 0;
  std::string write_topology;
  std::string busbw;  // a collective: print the model's flat-ring busbw table instead of sweeping
  std::vector<double> sizes_mib = {4, 16, 64, 256, 1024};
  StepInputs step;  // --micro-batch, --accumulation, --fraction, --no-recompute, --no-overlap, --collectives
};

// Writes `text` to `path`; an InputError naming the file when it cannot be written completely.
void write_simulate_file(const std::filesystem::path& path, const std::string& text) {
  write_output_file(path.string(), text, "simulate output");
}

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
        perf::simulate_step_comm(model, topo, plan_by_name_or_file(name, topo, base, "--plans"));
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
  write_simulate_file(dir / "charts.gp", gp);
  const std::string cmd = fmt::format("gnuplot '{}'", (dir / "charts.gp").string());
  if (std::system(cmd.c_str()) != 0)
    fmt::print(stderr, "simulate: gnuplot failed (is gnuplot-nox installed?); CSV and JSON are written\n");
}

perf::DeviceCalibration device_calibration(const SimulateArgs& a) {
  if (a.thread_tflops.empty()) {
    if (a.host_cores > 0 || a.local_ranks > 0)
      fail_input("--host-cores and --local-ranks need --thread-tflops (the 1-rank rates by thread count)");
    return {.tflops = a.measured_tflops, .source = "given by --measured-tflops", .quant_GBps = a.quant_GBps};
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
                            a.local_ranks, a.host_cores, rates),
      .quant_GBps = a.quant_GBps};
}

int run_calibrate(const SimulateArgs& a) {
  if (a.write_topology.empty()) fail_input("--calibrate-from needs --write-topology FILE");
  std::vector<nlohmann::json> extra;
  std::vector<std::string> extra_origins(a.calibrate_from.begin() + 1, a.calibrate_from.end());
  for (const auto& f : extra_origins) extra.push_back(read_json_file(f));
  const nlohmann::json doc =
      perf::calibrated_topology_json(Topology::load(a.topology), read_json_file(a.calibrate_from.front()),
                                     a.calibrate_from.front(), device_calibration(a), extra, extra_origins);
  Topology::from_json(doc, a.write_topology);  // it must read back
  write_simulate_file(a.write_topology, doc.dump(2) + "\n");
  fmt::print(
      "wrote {}: device {:.4g} TFLOPS per rank, quantization kernels {:.4g} GB/s, {} measured curve(s)\n",
      a.write_topology, doc["device"]["peak_tflops"].get<double>(), doc["device"].value("quant_GBps", 0.0),
      doc.value("collective_curves", nlohmann::json::array()).size());
  for (const auto& t : doc["tiers"])
    fmt::print(
        "  {:<10} {:>10.3f} GB/s {:>10.2f} us  reduce {:>8.3f} GB/s  cpu {:>7.1f} us + {:>7.3f} GB/s   {}\n",
        t["name"].get<std::string>(), t["bandwidth_GBps"].get<double>(), t["latency_us"].get<double>(),
        t.value("reduce_GBps", 0.0), t.value("cpu_call_us", 0.0), t.value("cpu_GBps", 0.0),
        t["source"].get<std::string>());
  return 0;
}

// The busbw the model gives a flat collective over the whole world (the ring NCCL-tests measures),
// per outer-tier count and size: the prices of perf/collective_price.hpp for `--runtime`.
int run_busbw(const SimulateArgs& a) {
  CollectiveKind kind = CollectiveKind::all_gather;
  bool known = false;
  for (auto k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce,
                 CollectiveKind::all_to_all})
    if (collective_name(k) == a.busbw) kind = k, known = true;
  if (!known)
    fail_input("--busbw: must be all_gather, reduce_scatter, all_reduce or all_to_all, got '{}'", a.busbw);
  for (double s : a.sizes_mib)
    if (!(s > 0) || !std::isfinite(s)) fail_input("--sizes-mib: sizes must be > 0 MiB, got {}", s);
  const Topology base_topo = Topology::load(a.topology);
  const perf::Runtime runtime = perf::parse_runtime(a.step.runtime, "--runtime");
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("model busbw (GB/s) of a flat {} over the whole world of {}, run as {} runs it\n", a.busbw,
             base_topo.name(), a.step.runtime);
  fmt::print("{:>8} {:>8}", "outer", "ranks");
  for (double s : a.sizes_mib) fmt::print(" {:>12}", fmt::format("{:g}MiB", s));
  fmt::print("   (m = measured curve)\n");
  for (int n : a.nodes) {
    const Topology topo = base_topo.resolve_outer(n);
    fmt::print("{:>8} {:>8}", n, topo.world_size());
    for (double s : a.sizes_mib) {
      TierStep step;
      step.kind = kind;
      step.tiers = tiers_up_to(topo.num_tiers() - 1);
      step.tier = topo.num_tiers() - 1;
      step.group_size = topo.world_size();
      step.label = "world";
      const double bytes = s * double(1 << 20);
      step.payload_bytes = static_cast<std::size_t>(bytes);
      const perf::MessagePrice m = perf::price_message(step, bytes, topo, runtime);
      const double busbw =
          m.seconds > 0 ? algorithmic_bytes(kind, bytes, topo.world_size()) / m.seconds / 1e9 : 0;
      fmt::print(" {:>11.2f}{}", busbw, m.measured ? "m" : " ");
      rows.push_back({{"outer", n},
                      {"group_size", topo.world_size()},
                      {"size_bytes", bytes},
                      {"busbw_GBps", busbw},
                      {"seconds", m.seconds},
                      {"measured_curve", m.measured}});
    }
    fmt::print("\n");
  }
  const std::filesystem::path dir(a.out);
  std::filesystem::create_directories(dir);
  write_simulate_file(
      dir / "busbw.json",
      nlohmann::json{
          {"topology", base_topo.name()}, {"op", a.busbw}, {"runtime", a.step.runtime}, {"rows", rows}}
              .dump(2) +
          "\n");
  return 0;
}

int run_simulate(const SimulateArgs& a) {
  if (!a.calibrate_from.empty()) return run_calibrate(a);
  if (!a.busbw.empty()) return run_busbw(a);

  const Topology base_topo = Topology::load(a.topology);
  const perf::ModelShape model = perf::load_model_shape(a.model);
  const PlanOptions base = a.step.plan_options();
  const perf::CostOptions opt = a.step.cost_options();
  for (const auto& n : model.notes) fmt::print("note: model {}: accepted, not applied: {}\n", a.model, n);
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
  for (int n : a.nodes) world_of_nodes(base_topo, n);  // every size checked before any is swept
  for (int n : a.nodes) {
    const Topology topo = base_topo.resolve_outer(n);
    largest_rows.clear();
    largest = topo;
    for (const auto& name : a.plans) {
      const PartitionPlan plan = plan_by_name_or_file(name, topo, base, "--plans");
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
  std::ostringstream csv;
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
  write_simulate_file(dir / "sweep.csv", csv.str());
  std::ostringstream traffic;
  for (const auto& r : largest_rows) {
    traffic << r.plan.name();
    for (const auto& col : columns) traffic << fmt::format(",{:.4f}", perf::traffic_bytes(r.cost, col) / 1e9);
    traffic << "\n";
  }
  write_simulate_file(dir / "traffic.csv", traffic.str());
  write_simulate_file(dir / "sweep.json", doc.dump(2) + "\n");
  std::ostringstream scaling;
  for (const auto& [devices, _] : tflops.begin()->second) {
    scaling << devices;
    for (const auto& name : a.plans) scaling << fmt::format(",{:.4f}", tflops[name][devices]);
    scaling << "\n";
  }
  write_simulate_file(dir / "scaling.csv", scaling.str());

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

const bool simulate_registered = register_command(
    {"simulate",
     "Sweep the cost model over device counts and plans; write CSV/JSON and scaling/traffic charts",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<SimulateArgs>();
       OptionSet o(sub, "simulate");
       o.text("--topology", a->topology, "topology preset or JSON file");
       o.text("--model", a->model,
              "model preset of models/ (gpt-tiny, gpt2, gpt-20b, llama-3-8b, ...) or a config.json "
              "(GPT-2, Llama, GPT-NeoX)");
       o.integer("--nodes", a->nodes, 1, kMaxWorldRanks, "units of the outermost tier to sweep");
       o.text("--plans", a->plans, "plan presets or plan JSON files", "zero3 zeropp three-level");
       a->step.add_options(
           o,
           "how every plan runs multi-tier collectives: hierarchical (tier by tier) or flat (one "
           "ring over the group, as DeepSpeed/NCCL run ZeRO-3 and ZeRO++)");
       o.text("--out", a->out, "output folder");
       o.flag("--no-charts", a->no_charts, "skip gnuplot");
       o.flag("--sim-check", a->sim_check,
              "also run the step's collectives on the simulated transport at the first --nodes size");
       o.text("--calibrate-from", a->calibrate_from,
              "calibrate instead of sweeping: `tierzero bench comm --format json` results (tier links are "
              "fitted "
              "from the first; measured curves come from all, one row per group size)",
              "none");
       o.real("--measured-tflops", a->measured_tflops, 0, 1e6,
              "with --calibrate-from: the measured model-step rate, written as device peak_tflops", "none",
              true);
       o.real("--thread-tflops", a->thread_tflops, 0, 1e6,
              "with --calibrate-from: model-step rates of a 1-rank run with 1, 2, ... threads; the device "
              "rate is "
              "then one rank's share when --local-ranks ranks share --host-cores cores",
              "none", true);
       o.real("--quant-GBps", a->quant_GBps, 0, 1e6,
              "with --calibrate-from: GB/s of memory traffic the quantization kernels sustain here (bench "
              "quant), written as device quant_GBps",
              "none");
       o.integer("--host-cores", a->host_cores, 1, 1 << 16, "with --thread-tflops: cores of the host",
                 "none");
       o.integer("--local-ranks", a->local_ranks, 1, 1 << 16, "with --thread-tflops: ranks sharing the host",
                 "none");
       o.choice(
           "--busbw", a->busbw, {"all_gather", "reduce_scatter", "all_reduce", "all_to_all"},
           "instead of sweeping plans: the model's busbw of this collective on a flat ring over the whole "
           "world, per --nodes and --sizes-mib",
           "none");
       o.real("--sizes-mib", a->sizes_mib, 0, 1 << 20,
              "with --busbw: collective sizes in MiB (nccl-tests convention)", "4 16 64 256 1024", true);
       o.text("--write-topology", a->write_topology, "with --calibrate-from: the topology file to write",
              "none");
       return [a] { return run_simulate(*a); };
     }});

}  // namespace
}  // namespace tz::cli
