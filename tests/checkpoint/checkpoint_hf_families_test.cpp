// Hugging Face safetensors of the Llama and GPT-NeoX families: tiny models made from their config.json
// (a Llama with grouped-query attention, SwiGLU and an untied head; one tied with attention and MLP
// biases; a GPT-NeoX with rotary on a quarter of each head and the parallel residual), their master
// weights set to distinct values (biases and gains too, so a misplaced row shows) and saved as a
// checkpoint. The export has Hugging Face's names, shapes and layouts (checked by a json + numpy reader
// against tierzero's flat parameters); export -> import at 1 and 3 ranks -> save -> export is
// byte-identical; each rank reads exactly its shard's elements; bad files are refused naming the tensor;
// PyTorch reading the files reproduces tierzero's logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint_save.hpp"
#include "checkpoint/model_file_layout.hpp"
#include "checkpoint/weight_export.hpp"
#include "checkpoint_test_util.hpp"
#include "core/bf16.hpp"
#include "model/gpt.hpp"
#include "model/param_source.hpp"
#include "support/expect_contains.hpp"

namespace tz {
namespace {

using test::expect_contains;

struct HfFamily {
  std::string name;
  nlohmann::json config;  // Hugging Face's config.json
};

std::vector<HfFamily> hf_families() {
  const nlohmann::json llama = {{"model_type", "llama"},         {"hidden_size", 32},
                                {"num_hidden_layers", 2},        {"num_attention_heads", 4},
                                {"num_key_value_heads", 2},      {"intermediate_size", 40},
                                {"max_position_embeddings", 16}, {"vocab_size", 61},
                                {"rms_norm_eps", 1e-5},          {"tie_word_embeddings", false}};
  nlohmann::json llama_tied = llama;
  llama_tied["tie_word_embeddings"] = true;
  llama_tied["attention_bias"] = true;
  llama_tied["mlp_bias"] = true;
  const nlohmann::json neox = {
      {"model_type", "gpt_neox"}, {"hidden_size", 32},           {"num_hidden_layers", 2},
      {"num_attention_heads", 4}, {"intermediate_size", 128},    {"max_position_embeddings", 16},
      {"vocab_size", 61},         {"rotary_pct", 0.25},          {"use_parallel_residual", true},
      {"hidden_act", "gelu"},     {"tie_word_embeddings", false}};
  return {{"llama", llama}, {"llama_tied_biased", llama_tied}, {"gpt_neox", neox}};
}

GptConfig model_of(const HfFamily& f) {
  return GptConfig::from_json(f.config, f.name);
}

// Distinct values for every element: a row taken from the wrong place is a different number.
std::vector<float> distinct_params(const GptConfig& model) {
  std::vector<float> p(ParameterLayout(model).total_numel());
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = static_cast<float>(std::sin(0.37 * i + 0.1) * (1 + i % 7));
  return p;
}

// Runs `fn` on every rank of a `world`-rank thread mesh holding an engine of `model`; returns each
// rank's exception message ("" when none).
std::vector<std::string> on_engines(
    const GptConfig& model, int world,
    const std::function<void(Mesh&, ShardedEngine&, const CheckpointMeta&)>& fn) {
  const Topology topo = test::topology_for_world(world);
  const TrainConfig config = test::train_config({});
  const TrainRun run = make_train_run(config, model, topo, world);
  CheckpointMeta meta = checkpoint_meta(config, topo, run);
  meta.data = {.position = 0, .seed = 1, .seq = run.engine.seq, .windows_per_epoch = 1, .fingerprint = 1};
  std::vector<std::string> errors(world);
  std::mutex mu;
  CommOptions comm;
  comm.timeout_s = 60;
  run_thread_mesh(
      topo,
      [&](Mesh& mesh) {
        try {
          ShardedEngine engine(mesh, model, run.plan, run.engine);
          fn(mesh, engine, meta);
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          errors[mesh.world().rank()] = e.what();
        }
      },
      comm);
  return errors;
}

SaveOptions save_to(const std::string& dir) {
  SaveOptions o;
  o.dir = dir;
  o.io_timeout_s = 60;
  return o;
}

// A checkpoint (step 0) whose master weights are `params`, saved by 2 ranks.
std::string checkpoint_of(const GptConfig& model, const std::vector<float>& params, const std::string& dir) {
  const ParameterLayout layout(model);
  const auto errors =
      on_engines(model, 2, [&](Mesh& mesh, ShardedEngine& engine, const CheckpointMeta& meta) {
        engine.restore(0, 0, [&](OptimValue which, int range, std::size_t offset, std::size_t n, float* out) {
          if (which == OptimValue::master)
            std::copy_n(params.data() + layout.range(range).offset + offset, n, out);
          else
            std::fill_n(out, n, 0.0f);
        });
        save_checkpoint(mesh.world(), engine, meta, save_to(dir));
      });
  for (const auto& e : errors) EXPECT_EQ(e, "") << "saving " << dir;
  return dir + "/step_0";
}

// Imports `file` into engines of `model` on `world` ranks; returns the gathered master weights (or
// the ranks' common error in `error`) and, when `save_dir` is given, saves them there.
std::vector<float> imported(const GptConfig& model, int world, const std::string& file, std::string* error,
                            const std::string& save_dir = "") {
  std::vector<float> params;
  std::mutex mu;
  const auto errors =
      on_engines(model, world, [&](Mesh& mesh, ShardedEngine& engine, const CheckpointMeta& meta) {
        import_weights(mesh.world(), engine, file, {.io_timeout_s = 60});
        std::vector<float> p = engine.gather_master_params();
        if (!save_dir.empty()) save_checkpoint(mesh.world(), engine, meta, save_to(save_dir));
        std::lock_guard lock(mu);
        if (mesh.world().rank() == 0) params = std::move(p);
      });
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(errors[r], errors[0]) << file << ": rank " << r << " failed differently";
  if (error)
    *error = errors[0];
  else
    EXPECT_EQ(errors[0], "") << file;
  return params;
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string float_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)};
}

TEST(CheckpointHfFamilies, TheExportHasHuggingFacesNamesShapesAndLayouts) {
  for (const HfFamily& f : hf_families()) {
    const GptConfig model = model_of(f);
    const std::vector<float> params = distinct_params(model);
    const std::string dir = test::scratch_dir(f.name);
    const std::string ckpt = checkpoint_of(model, params, dir + "/ckpt");
    write_file(dir + "/config.json", f.config.dump());
    write_file(dir + "/params.bin", float_bytes(params));
    for (DType dtype : {DType::f32, DType::bf16}) {
      const std::string file = dir + "/model_" + std::string(dtype_name(dtype)) + ".safetensors";
      const ExportResult r =
          export_checkpoint(ckpt, file, {.format = WeightFormat::safetensors, .dtype = dtype});
      EXPECT_EQ(r.bytes, std::filesystem::file_size(file));
      const std::string cmd = fmt::format(
          "/usr/bin/python3 {}/tests/checkpoint/check_hf_safetensors.py --model {} --config {} --params {}",
          TZ_SOURCE_DIR, file, dir + "/config.json", dir + "/params.bin");
      EXPECT_EQ(std::system(cmd.c_str()), 0) << f.name << " " << dtype_name(dtype) << ": " << cmd;
    }
  }
}

TEST(CheckpointHfFamilies, TheCheckerFindsAMisplacedRow) {
  // The json + numpy check is not vacuous: the NeoX file's first two heads' rows swapped is refused.
  const HfFamily f = hf_families()[2];
  const GptConfig model = model_of(f);
  std::vector<float> params = distinct_params(model);
  const std::string dir = test::scratch_dir("neox");
  const std::string file = dir + "/model.safetensors";
  export_checkpoint(checkpoint_of(model, params, dir + "/ckpt"), file, {});
  write_file(dir + "/config.json", f.config.dump());
  // tierzero's qkv rows as if the head grouping were ignored: k_0 read where q_1 lies.
  const ParameterLayout layout(model);
  const ParamTensor& qkv = layout.tensor("h.1.attn.qkv.weight");
  const std::size_t C = model.n_embd, D = model.head_size();
  std::swap_ranges(params.begin() + qkv.offset + D * C, params.begin() + qkv.offset + 2 * D * C,
                   params.begin() + qkv.offset + C * C);
  write_file(dir + "/params.bin", float_bytes(params));
  const std::string cmd = fmt::format(
      "/usr/bin/python3 {}/tests/checkpoint/check_hf_safetensors.py --model {} --config {} --params {}",
      TZ_SOURCE_DIR, file, dir + "/config.json", dir + "/params.bin");
  EXPECT_NE(std::system(cmd.c_str()), 0) << cmd;
}

TEST(CheckpointHfFamilies, ExportImportSaveExportIsByteIdenticalAtOneAndThreeRanks) {
  for (const HfFamily& f : hf_families()) {
    const GptConfig model = model_of(f);
    const std::vector<float> params = distinct_params(model);
    const std::string dir = test::scratch_dir(f.name);
    const std::string ckpt = checkpoint_of(model, params, dir + "/ckpt");
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (int world : {1, 3}) {
        const std::string what = fmt::format("{} {} at {} ranks", f.name, dtype_name(dtype), world);
        const std::string sub = fmt::format("{}/{}_{}", dir, dtype_name(dtype), world);
        const std::string f1 = sub + "_a.safetensors", f2 = sub + "_b.safetensors";
        export_checkpoint(ckpt, f1, {.format = WeightFormat::safetensors, .dtype = dtype});
        const std::vector<float> got = imported(model, world, f1, nullptr, sub + "_ckpt");
        std::vector<float> want = params;
        if (dtype == DType::bf16)
          for (float& p : want) p = to_float(to_bf16(p));
        ASSERT_EQ(got.size(), want.size()) << what;
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0)
            << what << ": imported weights differ";
        export_checkpoint(sub + "_ckpt", f2, {.format = WeightFormat::safetensors, .dtype = dtype});
        EXPECT_TRUE(file_bytes(f1) == file_bytes(f2)) << what << ": export -> import -> export differs";
      }
    }
  }
}

TEST(CheckpointHfFamilies, EachRankReadsExactlyItsShard) {
  // No transposed matrix in these families: a rank's reads are its O shard's elements, however the
  // file splits (q/k/v_proj) or regroups (per-head query_key_value) the tensors they come from.
  for (const HfFamily& f : hf_families()) {
    const GptConfig model = model_of(f);
    const std::string dir = test::scratch_dir(f.name);
    const std::string file = dir + "/model.safetensors";
    export_checkpoint(checkpoint_of(model, distinct_params(model), dir + "/ckpt"), file, {});
    std::vector<std::uint64_t> read(3), owned(3);
    const auto errors = on_engines(model, 3, [&](Mesh& mesh, ShardedEngine& engine, const CheckpointMeta&) {
      const int rank = mesh.world().rank();
      read[rank] = import_weights(mesh.world(), engine, file, {.io_timeout_s = 60}).bytes_read;
      for (int r = 0; r < engine.layout().num_ranges(); ++r) owned[rank] += engine.optim_span(r).valid_numel;
    });
    std::uint64_t all = 0;
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(errors[r], "") << f.name;
      EXPECT_EQ(read[r], owned[r] * 4) << f.name << " rank " << r;
      all += owned[r];
    }
    EXPECT_EQ(all, ParameterLayout(model).total_numel()) << f.name;
  }
}

// Rewrites a safetensors file with an edited header (data section unchanged).
void edit_header(const std::string& in, const std::string& out,
                 const std::function<void(nlohmann::json&)>& edit) {
  const std::string raw = file_bytes(in);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  nlohmann::json j = nlohmann::json::parse(raw.substr(8, n));
  edit(j);
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  write_file(out, len + text + raw.substr(8 + n));
}

// Appends tensors to a safetensors file, after the data it has: each (name, like) a copy of tensor
// `like`'s entry and bytes under `name`.
void append_tensors(const std::string& in, const std::string& out,
                    const std::vector<std::pair<std::string, std::string>>& copies) {
  const std::string raw = file_bytes(in);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  nlohmann::json j = nlohmann::json::parse(raw.substr(8, n));
  std::string data = raw.substr(8 + n);
  for (const auto& [name, like] : copies) {
    const auto& e = j[like];
    const std::uint64_t b = e["data_offsets"][0], end = e["data_offsets"][1];
    const std::uint64_t at = data.size();
    data += data.substr(b, end - b);
    j[name] = {{"dtype", e["dtype"]}, {"shape", e["shape"]}, {"data_offsets", {at, at + (end - b)}}};
  }
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  write_file(out, len + text + data);
}

void rename_tensor(nlohmann::json& j, const std::string& from, const std::string& to) {
  j[to] = j[from];
  j.erase(from);
}

std::string family_import_error(const GptConfig& model, const std::string& file) {
  std::string error;
  imported(model, 2, file, &error);
  EXPECT_NE(error, "") << file << " was accepted";
  return error;
}

TEST(CheckpointHfFamilies, BadFilesAreRefusedNamingTheTensor) {
  const auto families = hf_families();
  const GptConfig llama = model_of(families[0]), llama_tied = model_of(families[1]),
                  neox = model_of(families[2]);
  const std::string dir = test::scratch_dir("bad");
  const std::string good_llama = dir + "/llama.safetensors", good_neox = dir + "/neox.safetensors",
                    good_tied = dir + "/tied.safetensors";
  export_checkpoint(checkpoint_of(llama, distinct_params(llama), dir + "/llama"), good_llama, {});
  export_checkpoint(checkpoint_of(neox, distinct_params(neox), dir + "/neox"), good_neox, {});
  export_checkpoint(checkpoint_of(llama_tied, distinct_params(llama_tied), dir + "/tied"), good_tied, {});

  // k_proj is (KV D, C) = (16, 32): the same elements as (32, 16), so only the shape check finds it.
  edit_header(good_llama, dir + "/shape.safetensors", [](nlohmann::json& j) {
    j["model.layers.1.self_attn.k_proj.weight"]["shape"] = {32, 16};
  });
  expect_contains(
      family_import_error(llama, dir + "/shape.safetensors"),
      {"tensor 'model.layers.1.self_attn.k_proj.weight'", "expected shape [16, 32]", "found [32, 16]"});

  edit_header(good_llama, dir + "/missing.safetensors", [](nlohmann::json& j) {
    rename_tensor(j, "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.upper_proj.weight");
  });
  expect_contains(family_import_error(llama, dir + "/missing.safetensors"),
                  {"tensor 'model.layers.0.mlp.up_proj.weight' is missing"});

  edit_header(good_neox, dir + "/neox_shape.safetensors", [](nlohmann::json& j) {
    j["gpt_neox.layers.0.attention.query_key_value.bias"]["shape"] = {96, 1};
  });
  expect_contains(
      family_import_error(neox, dir + "/neox_shape.safetensors"),
      {"tensor 'gpt_neox.layers.0.attention.query_key_value.bias'", "expected shape [96]", "found [96, 1]"});

  // The other family's file: its names are not this model's.
  expect_contains(family_import_error(llama, good_neox),
                  {"tensor 'model.embed_tokens.weight' is missing", "llama"});
  expect_contains(family_import_error(neox, good_llama),
                  {"tensor 'gpt_neox.embed_in.weight' is missing", "gpt_neox"});
  // An untied file for the tied model (it has a bias the untied one lacks: missing first).
  expect_contains(family_import_error(llama_tied, good_llama),
                  {"tensor 'model.layers.0.self_attn.q_proj.bias' is missing"});
  // The tied file for the untied model: no lm_head.weight.
  expect_contains(family_import_error(llama, good_tied), {"tensor 'lm_head.weight' is missing"});
  // An entry the model has no place for.
  append_tensors(good_llama, dir + "/extra.safetensors",
                 {{"model.layers.0.self_attn.q_norm.weight", "model.norm.weight"}});
  expect_contains(family_import_error(llama, dir + "/extra.safetensors"),
                  {"tensor 'model.layers.0.self_attn.q_norm.weight' is not a Llama tensor"});
}

TEST(CheckpointHfFamilies, OldNeoxBuffersAreIgnoredAndATiedHeadMustEqualTheEmbedding) {
  const auto families = hf_families();
  const GptConfig tied = model_of(families[1]), neox = model_of(families[2]);
  const std::string dir = test::scratch_dir("buffers");
  const std::vector<float> neox_params = distinct_params(neox), tied_params = distinct_params(tied);
  const std::string neox_file = dir + "/neox.safetensors", tied_file = dir + "/tied.safetensors";
  export_checkpoint(checkpoint_of(neox, neox_params, dir + "/neox"), neox_file, {});
  export_checkpoint(checkpoint_of(tied, tied_params, dir + "/tied"), tied_file, {});

  append_tensors(
      neox_file, dir + "/old_neox.safetensors",
      {{"gpt_neox.layers.0.attention.bias", "gpt_neox.layers.0.input_layernorm.weight"},
       {"gpt_neox.layers.0.attention.masked_bias", "gpt_neox.layers.0.input_layernorm.bias"},
       {"gpt_neox.layers.1.attention.rotary_emb.inv_freq", "gpt_neox.layers.1.input_layernorm.bias"}});
  std::string error;
  const std::vector<float> got = imported(neox, 2, dir + "/old_neox.safetensors", &error);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(got == neox_params) << "the buffers changed what was imported";

  append_tensors(tied_file, dir + "/with_head.safetensors",
                 {{"lm_head.weight", "model.embed_tokens.weight"}});
  EXPECT_TRUE(imported(tied, 2, dir + "/with_head.safetensors", &error) == tied_params);
  EXPECT_EQ(error, "");
  {  // the head's last element changed (the file's last 4 bytes)
    std::string raw = file_bytes(dir + "/with_head.safetensors");
    const float v = 12345.0f;
    std::memcpy(raw.data() + raw.size() - 4, &v, 4);
    write_file(dir + "/changed_head.safetensors", raw);
    expect_contains(
        family_import_error(tied, dir + "/changed_head.safetensors"),
        {"tensor 'lm_head.weight' differs from 'model.embed_tokens.weight' at element 1951", "12345"});
  }
  append_tensors(tied_file, dir + "/other_head.safetensors",
                 {{"lm_head.weight", "model.layers.0.mlp.up_proj.weight"}});
  // up_proj is (40, 32), not the embedding's (61, 32).
  expect_contains(
      family_import_error(tied, dir + "/other_head.safetensors"),
      {"tensor 'lm_head.weight'", "expected shape [61, 32]", "tied to model.embed_tokens.weight"});
}

TEST(CheckpointHfFamilies, AnArchitectureTheFamilysFileCannotHoldIsAnErrorNamingTheTensor) {
  GptConfig neox_gqa = model_of(hf_families()[2]);
  neox_gqa.n_kv_head = 2;  // GPT-NeoX's query_key_value has a key and a value head per query head
  expect_contains(
      [&] {
        try {
          hf_tensors(ParameterLayout(neox_gqa), "export of x");
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      {"export of x", "gpt_neox.layers.0.attention.query_key_value.weight", "2 key/value heads for 4"});
  GptConfig llama_ln = model_of(hf_families()[0]);
  llama_ln.norm = NormKind::layernorm;
  llama_ln.mlp = MlpKind::gelu_tanh;  // mlp.fc of F rows: no up_proj half
  expect_contains(
      [&] {
        try {
          hf_tensors(ParameterLayout(llama_ln), "export of x");
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      {"model.layers.0.mlp.up_proj.weight", "rows [40, 80)", "which has 40 rows"});
  EXPECT_EQ(hf_tensors(ParameterLayout(model_of(hf_families()[0])), "x").size(), 1u + 2 * 9 + 2);
}

TEST(CheckpointHfFamilies, PyTorchReadsTheFilesAndReproducesTheLogits) {
  // An independent reader (json + numpy + plain torch, each family's forward written from its
  // config.json keys the Hugging Face way) runs the exported file on a batch and gets tierzero's logits.
  for (const HfFamily& f : hf_families()) {
    const GptConfig model = model_of(f);
    std::vector<float> params = distinct_params(model);
    for (float& p : params) p *= 0.1f;  // activations of a trained model's size
    const std::string dir = test::scratch_dir(f.name);
    const std::string ckpt = checkpoint_of(model, params, dir + "/ckpt");
    const int B = 3, T = model.n_positions;
    std::vector<std::int32_t> tokens(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (i * 13 + 5) % model.vocab_size;
    write_file(dir + "/tokens.bin", {reinterpret_cast<const char*>(tokens.data()), tokens.size() * 4});
    write_file(dir + "/config.json", f.config.dump());
    for (DType dtype : {DType::f32, DType::bf16}) {
      const std::string file = dir + "/model_" + std::string(dtype_name(dtype)) + ".safetensors";
      export_checkpoint(ckpt, file, {.format = WeightFormat::safetensors, .dtype = dtype});
      std::vector<float> weights = params, grads(params.size());
      if (dtype == DType::bf16)
        for (float& p : weights) p = to_float(to_bf16(p));
      Gpt gpt(model, B, T);
      ResidentParams src(gpt.layout(), weights.data(), grads.data());
      gpt.forward(src, tokens.data(), nullptr);
      write_file(dir + "/logits.bin", {reinterpret_cast<const char*>(gpt.logits().data()),
                                       static_cast<std::size_t>(B) * T * model.vocab_size * 4});
      const std::string cmd = fmt::format(
          "OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 /usr/bin/python3 "
          "{}/tests/checkpoint/torch_safetensors_logits.py "
          "--model {} --config {}/config.json --tokens {}/tokens.bin --logits {}/logits.bin --batch {} --seq "
          "{}",
          TZ_SOURCE_DIR, file, dir, dir, dir, B, T);
      EXPECT_EQ(std::system(cmd.c_str()), 0) << f.name << " " << dtype_name(dtype) << ": " << cmd;
    }
  }
}

}  // namespace
}  // namespace tz
