// A nanoGPT-style run through the command line, in-process and tiny: train with a validation set and
// a metrics file, write the weights, sample from them, plot the metrics. Checks the metrics are
// consistent (MFU = tokens/s x FLOPs/token / (world x peak), the step time inside its spread over
// ranks, evaluations where asked), sampling is deterministic for a seed and uses one position per
// token, and the plot files exist and are PNG and SVG.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>

#include "cli_test_util.hpp"
#include "model/parameter_layout.hpp"
#include "model/weights_file.hpp"
#include "support/gpt2_file_writer.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string head(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

class TrainSamplePlot : public ::testing::Test {
 protected:
  test::ScratchDir dir;
  std::string text, val, model, metrics, weights;
  void SetUp() override {
    std::string corpus, held_out;
    for (int i = 0; i < 400; ++i) corpus += "the quick brown fox jumps over the lazy dog. ";
    for (int i = 0; i < 60; ++i) held_out += "the lazy dog sleeps. ";
    text = dir.write("train.txt", corpus);
    val = dir.write("val.txt", held_out);
    model = dir.write("tiny.json",
                      R"({"n_layer": 2, "n_embd": 32, "n_head": 2, "n_positions": 32, "vocab_size": 256})");
    metrics = dir.path("m.jsonl");
    weights = dir.path("w.bin");
  }
};

TEST_F(TrainSamplePlot, EndToEnd) {
  const test::CliResult tr = test::run_cli({"train",      "--model",        model,       "--data",
                                            text,         "--val-data",     val,         "--eval-every",
                                            "3",          "--eval-batches", "2",         "--steps",
                                            "7",          "--seq",          "16",        "--micro-batch",
                                            "2",          "--log-every",    "2",         "--metrics",
                                            metrics,      "--weights-out",  weights,     "--peak-tflops",
                                            "0.5",        "--no-progress",  "--threads", "1",
                                            "--save-dir", dir.path("ckpt")});
  ASSERT_EQ(tr.code, 0) << tr.err << tr.out;
  EXPECT_NE(tr.out.find("val loss"), std::string::npos) << tr.out;
  EXPECT_NE(tr.out.find("MFU peak: 0.5 TFLOPS per rank, given by --peak-tflops"), std::string::npos)
      << tr.out;
  EXPECT_NE(tr.out.find("ETA"), std::string::npos);
  const auto lines = read_lines(metrics);
  std::vector<int> eval_steps, step_steps;
  for (const auto& j : lines) {
    if (j["event"] == "eval") {
      eval_steps.push_back(j["step"]);
      EXPECT_TRUE(std::isfinite(j["val_loss"].get<double>()));
      continue;
    }
    step_steps.push_back(j["step"]);
    const double mfu = j["tokens_per_s"].get<double>() * j["flops_per_token"].get<double>() /
                       (j["world_size"].get<double>() * j["peak_flops_per_s"].get<double>());
    EXPECT_NEAR(j["mfu"].get<double>(), mfu, 1e-12 + 1e-9 * mfu);
    EXPECT_DOUBLE_EQ(j["peak_flops_per_s"].get<double>(), 0.5e12);
    EXPECT_LE(j["min_step_s"].get<double>(), j["seconds"].get<double>());
    EXPECT_GE(j["max_step_s"].get<double>(), j["seconds"].get<double>());
    for (const char* k : {"loss", "lr", "grad_norm", "bytes_per_tier", "seconds_per_tier", "bytes_per_kind",
                          "collectives_by_kind"})
      EXPECT_TRUE(j.contains(k)) << k;
    // CPU time by term: every term, adding up to cpu_s, and every rank's (one here).
    double cpu_sum = 0;
    for (const char* k : {"model", "packing", "narrowing", "collective_copies", "quantization",
                          "grad_accumulate", "collective_wait", "optimizer", "other"}) {
      ASSERT_TRUE(j["cpu_s_per_term"].contains(k)) << k;
      EXPECT_GE(j["cpu_s_per_term"][k].get<double>(), 0.0) << k;
      cpu_sum += j["cpu_s_per_term"][k].get<double>();
    }
    EXPECT_NEAR(j["cpu_s"].get<double>(), cpu_sum, 1e-12);
    EXPECT_GT(j["cpu_s_per_term"]["model"].get<double>(), 0.0);
    EXPECT_GE(j["wait_wall_s"].get<double>(), 0.0);
    ASSERT_EQ(j["cpu_s_per_term_by_rank"].size(), j["world_size"].get<std::size_t>());
    EXPECT_EQ(j["cpu_s_per_term_by_rank"][0]["model"], j["cpu_s_per_term"]["model"]);
  }
  EXPECT_EQ(step_steps, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(eval_steps, (std::vector<int>{0, 3, 6, 7}));

  // Sampling: the same seed gives the same text, another seed other text; greedy is the same always.
  auto sample = [&](const std::string& seed, const std::string& temperature) {
    const test::CliResult s =
        test::run_cli({"sample", "--weights", weights, "--model", model, "--prompt", "the ",
                       "--max-new-tokens", "12", "--seed", seed, "--temperature", temperature});
    EXPECT_EQ(s.code, 0) << s.err;
    EXPECT_NE(s.err.find("4 prompt + 12 new tokens, 15 positions computed"), std::string::npos) << s.err;
    return s.out;
  };
  const std::string a = sample("1", "1.0"), b = sample("1", "1.0"), c = sample("2", "1.0");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.rfind("the ", 0), 0u);
  EXPECT_EQ(sample("1", "0"), sample("2", "0"));
  // The same weights exported as safetensors (shape from --model) and as an llm.c file give the same text.
  const ModelWeights trained = read_parameter_file(weights);
  const ParameterLayout layout(trained.config);
  const std::string st =
      dir.write("w.safetensors",
                test::safetensors_bytes(test::hf_gpt2_tensors(layout, trained.params.data(), "", "F32")));
  const std::string llmc = dir.write("w_llmc.bin", test::llmc_bytes(layout, trained.params.data(), 3, 256));
  // And so does the checkpoint the run saved after its last step (read on this process).
  for (const std::vector<std::string>& source : {std::vector<std::string>{"--weights", st, "--model", model},
                                                 std::vector<std::string>{"--weights", llmc},
                                                 std::vector<std::string>{"--weights", dir.path("ckpt")}}) {
    std::vector<std::string> args = {"sample", "--prompt", "the ", "--max-new-tokens", "12", "--seed", "1"};
    args.insert(args.end(), source.begin(), source.end());
    const test::CliResult s = test::run_cli(args);
    EXPECT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(s.out, a) << source[1];
  }
  // The model check: --model must describe the weights.
  const test::CliResult wrong =
      test::run_cli({"sample", "--weights", weights, "--model", "gpt-tiny", "--prompt", "x"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("is not the model of --weights"), std::string::npos) << wrong.err;
  const test::CliResult too_long =
      test::run_cli({"sample", "--weights", weights, "--prompt", "abcd", "--max-new-tokens", "29"});
  EXPECT_EQ(too_long.code, 2);
  EXPECT_NE(too_long.err.find("--max-new-tokens 29"), std::string::npos) << too_long.err;

  // Plot: PNG and SVG of loss and tokens/s.
  const std::string out = dir.path("plots");
  const test::CliResult p = test::run_cli({"plot", metrics, "--out", out});
  ASSERT_EQ(p.code, 0) << p.err;
  for (const char* f : {"loss.png", "tokens_per_s.png"})
    EXPECT_EQ(head(out + "/" + f, 8), "\x89PNG\r\n\x1a\n") << f;
  for (const char* f : {"loss.svg", "tokens_per_s.svg"}) {
    const std::string svg = head(out + "/" + f, 4096);
    EXPECT_NE(svg.find("<svg"), std::string::npos) << f;
  }
  std::ifstream loss_svg(out + "/loss.svg");
  const std::string whole((std::istreambuf_iterator<char>(loss_svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(whole.find("validation loss"), std::string::npos);
  EXPECT_NE(whole.find("step (optimizer steps)"), std::string::npos);
}

TEST_F(TrainSamplePlot, AnMfuAbove100PercentIsFlaggedOnce) {
  // A peak far below what the run reaches (1 MFLOP/s): the MFU is reported as computed, with one note.
  const test::CliResult tr = test::run_cli({"train", "--model", model, "--data", text, "--steps", "3",
                                            "--seq", "16", "--micro-batch", "1", "--log-every", "1",
                                            "--peak-tflops", "1e-6", "--no-progress", "--threads", "1"});
  ASSERT_EQ(tr.code, 0) << tr.err << tr.out;
  const std::string note = "note: MFU above 100% at step 1";
  const auto at = tr.out.find(note);
  EXPECT_NE(at, std::string::npos) << tr.out;
  EXPECT_EQ(tr.out.find("note: MFU above 100%", at + 1), std::string::npos) << "printed once: " << tr.out;
}

// Without --tokenizer every drawn token must be a byte: a model of more than 256 tokens is refused
// before anything is printed, naming its vocabulary and the option (not an internal error halfway
// through the text when it draws token 273).
TEST_F(TrainSamplePlot, SampleWithoutATokenizerRefusesAVocabularyBeyondBytesBeforePrinting) {
  GptConfig c;
  c.n_layer = 1;
  c.n_embd = 16;
  c.n_head = 2;
  c.n_positions = 64;
  c.vocab_size = 300;
  const ParameterLayout layout(c);
  const std::vector<float> zeros(layout.total_numel(), 0.f);  // uniform over all 300 tokens
  const std::string w = dir.write("v300.bin", test::llmc_bytes(layout, zeros.data(), 3, 300));
  const test::CliResult s =
      test::run_cli({"sample", "--weights", w, "--prompt", "the ", "--max-new-tokens", "60", "--seed", "1"});
  EXPECT_EQ(s.code, 2) << s.err << s.out;
  EXPECT_EQ(s.out, "") << "refused before sampling";
  for (const char* f : {"300 tokens", "--tokenizer", "v300.bin"})
    EXPECT_NE(s.err.find(f), std::string::npos) << s.err;
  EXPECT_EQ(std::count(s.err.begin(), s.err.end(), '\n'), 1) << s.err;
}

// `sample --help` names every kind of weights --weights takes, checkpoint directories included.
TEST_F(TrainSamplePlot, SampleHelpListsCheckpointDirectories) {
  const test::CliResult h = test::run_cli({"sample", "--help"});
  EXPECT_EQ(h.code, 0);
  for (const char* f :
       {"--weights-out", "checkpoint directory", "--save-dir", "latest", "step_N", ".safetensors", "llm.c"})
    EXPECT_NE(h.out.find(f), std::string::npos) << f << "\n" << h.out;
}

// train writes a non-finite loss as null (JSON has no NaN): plot draws the finite steps, leaves the
// others out, marks them on the loss chart and names them in its line.
TEST_F(TrainSamplePlot, PlotDrawsARunWithNullLossesAndNamesTheSkippedSteps) {
  const test::CliResult tr =
      test::run_cli({"train",     "--model",   model,   "--data",        text, "--steps",
                     "5",         "--seq",     "16",    "--micro-batch", "1",  "--log-every",
                     "5",         "--metrics", metrics, "--peak-tflops", "1",  "--no-progress",
                     "--threads", "1"});
  ASSERT_EQ(tr.code, 0) << tr.err << tr.out;
  // Steps 2 and 4 as train writes a non-finite loss and norm.
  auto lines = read_lines(metrics);
  ASSERT_EQ(lines.size(), 5u);
  std::string with_nulls;
  for (auto& j : lines) {
    if (j["step"] == 2 || j["step"] == 4) {
      j["loss"] = std::numeric_limits<double>::quiet_NaN();
      j["grad_norm"] = std::numeric_limits<double>::infinity();
      j["skipped"] = true;
    }
    with_nulls += j.dump() + "\n";
  }
  ASSERT_NE(with_nulls.find("\"loss\":null"), std::string::npos) << "nlohmann writes NaN as null";
  const std::string m = dir.write("nulls.jsonl", with_nulls);
  const std::string out = dir.path("plots");
  const test::CliResult p = test::run_cli({"plot", m, "--out", out});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("plot: 5 steps, 0 evaluations"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("2 steps with a non-finite loss (null) left out and marked: steps 2 and 4"),
            std::string::npos)
      << p.out;
  std::ifstream dat(out + "/loss.dat");
  const std::string points((std::istreambuf_iterator<char>(dat)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(points.begin(), points.end(), '\n'), 3) << points;
  std::ifstream svg(out + "/loss.svg");
  const std::string drawn((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(drawn.find("non-finite loss (step skipped): 2 steps"), std::string::npos);
  EXPECT_EQ(head(out + "/loss.png", 8), "\x89PNG\r\n\x1a\n");
}

TEST_F(TrainSamplePlot, PlotRefusesBadMetrics) {
  const std::string bad = dir.write(
      "bad.jsonl", "{\"event\": \"step\", \"step\": 1, \"loss\": 2.0, \"tokens_per_s\": 5}\n{\"step\": \n");
  const test::CliResult p = test::run_cli({"plot", bad, "--out", dir.path("p")});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("line 2"), std::string::npos) << p.err;
  const std::string none = dir.write("none.jsonl", "{\"event\": \"eval\", \"step\": 0, \"val_loss\": 2.0}\n");
  const test::CliResult q = test::run_cli({"plot", none, "--out", dir.path("q")});
  EXPECT_EQ(q.code, 2);
  EXPECT_NE(q.err.find("no step lines"), std::string::npos) << q.err;
  // A loss that is neither a number nor null is still an error naming the line and the key.
  const std::string text_loss =
      dir.write("text.jsonl", "{\"event\": \"step\", \"step\": 1, \"loss\": \"2.0\", \"tokens_per_s\": 5}\n");
  const test::CliResult t = test::run_cli({"plot", text_loss, "--out", dir.path("t")});
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.err.find("line 1: key 'loss' must be a number"), std::string::npos) << t.err;
  // Nothing finite to draw.
  const std::string all_null = dir.write(
      "all_null.jsonl", "{\"event\": \"step\", \"step\": 1, \"loss\": null, \"tokens_per_s\": 5}\n");
  const test::CliResult n = test::run_cli({"plot", all_null, "--out", dir.path("n")});
  EXPECT_EQ(n.code, 2);
  EXPECT_NE(n.err.find("every one of its 1 steps is null"), std::string::npos) << n.err;
  // A directory in place of the file: said as such, not "read failed".
  const test::CliResult d = test::run_cli({"plot", dir.path(""), "--out", dir.path("d")});
  EXPECT_EQ(d.code, 2);
  EXPECT_NE(d.err.find("is a directory; expected the JSON-lines file `tierzero train --metrics FILE` wrote"),
            std::string::npos)
      << d.err;
}

}  // namespace
}  // namespace tz
