// Export and import: the safetensors file, read by PyTorch through an independent reader, gives
// tierzero's logits to 1e-5; export -> import (at another world size) -> save -> export is
// byte-identical for both formats and dtypes; an imported model fine-tunes; bad files are refused
// with the tensor and the expected and found values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/llmc_format.hpp"
#include "checkpoint/model_file_layout.hpp"
#include "checkpoint/safetensors_format.hpp"
#include "checkpoint/weight_export.hpp"
#include "checkpoint_test_util.hpp"
#include "core/bf16.hpp"
#include "model/gpt.hpp"
#include "model/param_source.hpp"
#include "support/expect_contains.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_contains;
using test::Trial;
using test::TrialSpec;

struct Saved {
  TrialSpec spec;
  Trial trial;
  std::string ckpt;
};

// Two ranks, zero3, 4 steps, saved at the end.
Saved trained(const std::string& name) {
  Saved s;
  s.spec.topo = test::topology_for_world(2);
  s.spec.steps = 4;
  s.spec.save_dir = test::scratch_dir(name);
  s.trial = test::run_trial(s.spec);
  test::expect_no_errors(s.trial, "training");
  s.ckpt = s.spec.save_dir + "/step_4";
  return s;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(CheckpointExport, PyTorchReadsTheSafetensorsFileAndReproducesTheLogits) {
  const Saved s = trained("torch");
  const GptConfig cfg = test::tiny_gpt();
  const std::string dir = test::scratch_dir("files");
  const int B = 3, T = cfg.n_positions;
  std::vector<std::int32_t> tokens(B * T);
  for (int i = 0; i < B * T; ++i) tokens[i] = (i * 13 + 5) % cfg.vocab_size;
  {
    std::ofstream(dir + "/tokens.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 4));
    std::ofstream(dir + "/config.json") << cfg.to_json().dump();
  }
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::string model = dir + "/model_" + std::string(dtype_name(dtype)) + ".safetensors";
    export_checkpoint(s.ckpt, model, {.format = WeightFormat::safetensors, .dtype = dtype});
    // tierzero's logits from the weights the file holds (the master weights, rounded for bf16).
    std::vector<float> params = s.trial.params, grads(params.size());
    if (dtype == DType::bf16)
      for (float& p : params) p = to_float(to_bf16(p));
    Gpt gpt(cfg, B, T);
    ResidentParams src(gpt.layout(), params.data(), grads.data());
    gpt.forward(src, tokens.data(), nullptr);
    std::ofstream(dir + "/logits.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(gpt.logits().data()),
               static_cast<std::streamsize>(B * T * cfg.vocab_size * 4));
    const std::string cmd = fmt::format(
        "OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 /usr/bin/python3 "
        "{}/tests/checkpoint/torch_safetensors_logits.py "
        "--model {} --config {}/config.json --tokens {}/tokens.bin --logits {}/logits.bin --batch {} --seq "
        "{}",
        TZ_SOURCE_DIR, model, dir, dir, dir, B, T);
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0)
        << "PyTorch (Debian's python3-torch, installed by scripts/install_deps.sh) disagrees or is "
           "missing: "
        << cmd;
  }
}

TEST(CheckpointExport, ExportImportSaveExportIsByteIdenticalForEveryFormatAndDtype) {
  const Saved s = trained("roundtrip");
  for (WeightFormat format : {WeightFormat::safetensors, WeightFormat::llmc}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      const std::string what =
          fmt::format("{} {}", format == WeightFormat::llmc ? "llmc" : "safetensors", dtype_name(dtype));
      const std::string dir = test::scratch_dir(what);
      const std::string f1 = dir + "/a.bin", f2 = dir + "/b.bin";
      const ExportResult e = export_checkpoint(s.ckpt, f1, {.format = format, .dtype = dtype});
      EXPECT_EQ(e.bytes, fs::file_size(f1)) << what;
      TrialSpec t;
      t.topo = test::topology_for_world(3);  // import at another world size
      t.init_from = f1;
      t.steps = 0;
      t.save_dir = dir + "/ckpt";
      const Trial imported = test::run_trial(t);
      test::expect_no_errors(imported, what);
      // Weights exactly the file's (bf16 widened); nothing trained (0 steps), saved at step 0.
      std::vector<float> want = s.trial.params;
      if (dtype == DType::bf16)
        for (float& p : want) p = to_float(to_bf16(p));
      ASSERT_EQ(imported.params.size(), want.size());
      EXPECT_EQ(std::memcmp(imported.params.data(), want.data(), want.size() * 4), 0) << what;
      export_checkpoint(t.save_dir, f2, {.format = format, .dtype = dtype});
      EXPECT_TRUE(read_bytes(f1) == read_bytes(f2)) << what << ": export -> import -> export differs";
    }
  }
}

TEST(CheckpointExport, TheLlmcFileHasTheGpt2_124MLayout) {
  const Saved s = trained("llmc_layout");
  const std::string f = test::scratch_dir("f") + "/gpt2.bin";
  export_checkpoint(s.ckpt, f, {.format = WeightFormat::llmc, .dtype = DType::f32});
  const GptConfig c = test::tiny_gpt();
  const std::size_t L = c.n_layer, C = c.n_embd, Vp = 128, P = c.n_positions;
  const std::size_t n =
      Vp * C + P * C +
      L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C;
  ASSERT_EQ(fs::file_size(f), 1024 + 4 * n);
  InFile in(f);
  std::int32_t h[8];
  in.read_at(0, h, sizeof h);
  EXPECT_EQ(std::vector<std::int32_t>(h, h + 8),
            (std::vector<std::int32_t>{20240326, 3, c.n_positions, c.vocab_size, c.n_layer, c.n_head,
                                       c.n_embd, 128}));
  // Spot checks by llm.c's offsets: wte row 1, a padded row (zero), layer 1's qkvw and lnfb.
  const ParameterLayout layout(c);
  auto at = [&](std::size_t element) {
    float v;
    in.read_at(1024 + 4 * element, &v, 4);
    return v;
  };
  const auto& p = s.trial.params;
  EXPECT_EQ(at(1 * C + 3), p[layout.tensor("wte").offset + C + 3]);
  EXPECT_EQ(at(100 * C), 0.0f);
  const std::size_t qkvw = Vp * C + P * C + 2 * L * C;
  EXPECT_EQ(at(qkvw + 3 * C * C + 5), p[layout.tensor("h.1.attn.qkv.weight").offset + 5]);
  EXPECT_EQ(at(n - 1), p[layout.tensor("ln_f.bias").offset + C - 1]);
}

TEST(CheckpointImport, AnImportedModelFineTunes) {
  const Saved s = trained("finetune");
  const std::string f = test::scratch_dir("f") + "/model.safetensors";
  export_checkpoint(s.ckpt, f, {});
  TrialSpec fresh;
  fresh.topo = test::topology_for_world(3);
  fresh.steps = 3;
  const Trial base = test::run_trial(fresh);
  fresh.init_from = f;
  const Trial tuned = test::run_trial(fresh);
  test::expect_no_errors(tuned, "fine-tuning");
  ASSERT_EQ(tuned.steps.size(), 3u);
  for (const auto& st : tuned.steps) EXPECT_TRUE(std::isfinite(st.loss));
  // The same first batch: the trained weights do better than the initial ones.
  EXPECT_LT(tuned.steps[0].loss, base.steps[0].loss);
}

TEST(CheckpointImport, EachRankReadsOnlyItsOwnShard) {
  // 3 ranks, zero3: each rank's O shard is about a third of the model and its weight shards lie inside
  // it, so a rank reads its shard's elements, plus at most two partial rows per transposed matrix
  // (GPT-2's Conv1D layout), never a whole tensor it does not own or the whole model.
  const Saved s = trained("own_shard");
  const GptConfig cfg = test::tiny_gpt();
  const ParameterLayout layout(cfg);
  const Topology topo = test::topology_for_world(3);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::string what(dtype_name(dtype));
    const std::string f = test::scratch_dir(what) + "/model.safetensors";
    export_checkpoint(s.ckpt, f, {.format = WeightFormat::safetensors, .dtype = dtype});
    const std::uint64_t esize = dtype_bytes(dtype);
    std::uint64_t transposed_cols = 0;  // the in-dimension of every Conv1D matrix
    for (const auto& ft : hf_tensors(layout, "test"))
      if (ft.parts[0].transposed) transposed_cols += layout.tensors()[ft.parts[0].tensor].shape[1];
    std::vector<std::uint64_t> read(3), owned(3);
    run_thread_mesh(topo, [&](Mesh& mesh) {
      const int rank = mesh.world().rank();
      const TrainRun run = make_train_run(test::train_config({}), cfg, topo, 3);
      ShardedEngine engine(mesh, cfg, run.plan, run.engine);
      read[rank] = import_weights(mesh.world(), engine, f, {.io_timeout_s = 60}).bytes_read;
      for (int r = 0; r < engine.layout().num_ranges(); ++r) owned[rank] += engine.optim_span(r).valid_numel;
    });
    std::uint64_t all = 0;
    for (int r = 0; r < 3; ++r) {
      all += owned[r];
      EXPECT_GE(read[r], owned[r] * esize) << what << " rank " << r;
      EXPECT_LE(read[r], (owned[r] + 2 * transposed_cols) * esize) << what << " rank " << r;
      EXPECT_LT(read[r], layout.total_numel() * esize / 2)
          << what << " rank " << r << " reads most of the model";
    }
    EXPECT_EQ(all, layout.total_numel()) << what << ": the O shards tile the model";
  }
}

// Rewrites a safetensors file with an edited header (data section unchanged).
void edit_safetensors(const std::string& in, const std::string& out,
                      const std::function<void(nlohmann::json&)>& edit) {
  const std::string raw = read_bytes(in);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  nlohmann::json j = nlohmann::json::parse(raw.substr(8, n));
  edit(j);
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  std::ofstream(out, std::ios::binary) << len << text << raw.substr(8 + n);
}

std::string import_error(const std::string& file) {
  TrialSpec t;
  t.topo = test::topology_for_world(2);
  t.steps = 1;
  t.init_from = file;
  return test::common_error(test::run_trial(t), "import of " + file);
}

TEST(CheckpointImport, BadFilesAreRefusedNamingTensorExpectedAndFound) {
  const Saved s = trained("bad_import");
  const std::string dir = test::scratch_dir("f");
  const std::string good = dir + "/good.safetensors", llmc = dir + "/good.bin";
  export_checkpoint(s.ckpt, good, {});
  export_checkpoint(s.ckpt, llmc, {.format = WeightFormat::llmc, .dtype = DType::f32});

  // The header edited alone: a tensor taken out of it leaves its bytes owned by no tensor (a missing
  // tensor with its bytes gone too is tests/train/exported_weights_test.cpp's).
  edit_safetensors(good, dir + "/missing.safetensors",
                   [](nlohmann::json& j) { j.erase("h.1.mlp.c_proj.bias"); });
  expect_contains(import_error(dir + "/missing.safetensors"), {"leaving bytes", "that no tensor holds"});

  edit_safetensors(good, dir + "/shape.safetensors", [](nlohmann::json& j) {
    j["wpe.weight"]["shape"] = {24, 16};
  });
  expect_contains(import_error(dir + "/shape.safetensors"),
                  {"tensor 'wpe.weight': expected shape [16, 24], found [24, 16]"});

  edit_safetensors(good, dir + "/count.safetensors",
                   [](nlohmann::json& j) { j["ln_f.bias"]["shape"] = {25}; });
  expect_contains(import_error(dir + "/count.safetensors"),
                  {"tensor 'ln_f.bias'", "expected 100 bytes", "found 96"});

  // A second name for ln_f.bias's bytes: two tensors sharing bytes.
  edit_safetensors(good, dir + "/extra.safetensors",
                   [](nlohmann::json& j) { j["h.7.mlp.c_fc.weight"] = j["ln_f.bias"]; });
  expect_contains(import_error(dir + "/extra.safetensors"),
                  {"tensor 'ln_f.bias'", "overlap tensor 'h.7.mlp.c_fc.weight'"});

  edit_safetensors(good, dir + "/prefixed.safetensors", [](nlohmann::json& j) {
    nlohmann::json k;
    for (auto& [name, v] : j.items()) k[name == "__metadata__" ? name : "transformer." + name] = v;
    j = k;
  });
  {
    TrialSpec t;
    t.topo = test::topology_for_world(2);
    t.steps = 1;
    t.init_from = dir + "/prefixed.safetensors";
    test::expect_no_errors(test::run_trial(t), "the transformer. prefix is accepted");
  }

  {  // an llm.c file of another width
    std::string raw = read_bytes(llmc);
    const std::int32_t c = 27;
    std::memcpy(raw.data() + 6 * 4, &c, 4);
    std::ofstream(dir + "/wide.bin", std::ios::binary) << raw;
    expect_contains(import_error(dir + "/wide.bin"),
                    {"C (word 6): expected 24 (this run's model), found 27"});
    raw = read_bytes(llmc);
    std::ofstream(dir + "/short.bin", std::ios::binary) << raw.substr(0, raw.size() - 8);
    expect_contains(import_error(dir + "/short.bin"),
                    {"llm.c checkpoint", fmt::format("expected {} bytes", raw.size()),
                     fmt::format("found {}", raw.size() - 8)});
  }
}

}  // namespace
}  // namespace tz
