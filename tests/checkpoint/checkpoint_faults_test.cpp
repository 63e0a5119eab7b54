// Faults: every corruption of a checkpoint stops every rank with one message naming the file, the
// tensor and the expected and found values; a checkpoint of another model is refused; an incomplete
// checkpoint (no marker) is never read and never `latest`; a non-finite state is never saved.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/checkpoint_save.hpp"
#include "checkpoint/crc32c.hpp"
#include "checkpoint_test_util.hpp"
#include "core/error.hpp"
#include "support/expect_contains.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_contains;
using test::Trial;
using test::TrialSpec;

// A 3-rank zero3 run saved at step 2 into a fresh directory; returns its step_2 path.
std::string saved_run(const std::string& name, TrialSpec* spec_out = nullptr) {
  TrialSpec s;
  s.topo = test::topology_for_world(3);
  s.steps = 2;
  s.save_every = 2;
  s.save_dir = test::scratch_dir(name);
  const Trial t = test::run_trial(s);
  test::expect_no_errors(t, "the save");
  if (spec_out) *spec_out = s;
  return (fs::path(s.save_dir) / "step_2").string();
}

// Resumes the checkpoint on 2 ranks (another world size: the reads cross the writers' pieces).
std::string resume_error(const std::string& ckpt, GptConfig model = test::tiny_gpt()) {
  TrialSpec s;
  s.topo = test::topology_for_world(2);
  s.steps = 3;
  s.resume = ckpt;
  s.model = model;
  return test::common_error(test::run_trial(s), "resume of " + ckpt);
}

nlohmann::json read_manifest(const std::string& ckpt) {
  return nlohmann::json::parse(read_small_file(ckpt + "/manifest.json"));
}

// Rewrites the manifest and its completion marker (so only the edited content is wrong).
void write_manifest(const std::string& ckpt, const nlohmann::json& m) {
  const std::string text = m.dump(1) + "\n";
  write_file_atomic(ckpt + "/manifest.json", text);
  const auto marker = read_marker(ckpt);
  write_file_atomic(ckpt + "/COMPLETE",
                    marker_text({marker->step, text.size(), crc32c(0, text.data(), text.size())}));
}

nlohmann::json& tensor_entry(nlohmann::json& m, const std::string& name) {
  for (auto& t : m["tensors"])
    if (t["name"] == name) return t;
  throw std::runtime_error("no tensor " + name);
}

TEST(CheckpointFaults, ATruncatedShardNamesFileTensorAndSizes) {
  const std::string ckpt = saved_run("truncated");
  const std::string file = ckpt + "/rank_00001.bin";
  const auto size = fs::file_size(file);
  fs::resize_file(file, size - 10);
  expect_contains(resume_error(ckpt),
                  {"rank_00001.bin", "tensor '", fmt::format("the file has {} bytes", size - 10),
                   fmt::format("expected {}", size), "truncated"});
}

TEST(CheckpointFaults, AFlippedByteIsACrcMismatchNamingTheTensor) {
  const std::string ckpt = saved_run("flipped");
  const nlohmann::json m = read_manifest(ckpt);
  // The first piece of wte's adam_v: flip a byte inside it.
  const auto& piece = tensor_entry(const_cast<nlohmann::json&>(m), "wte")["pieces"]["adam_v"][0];
  const std::string file = ckpt + "/" + piece["file"].get<std::string>();
  const std::uint64_t at = piece["byte_offset"].get<std::uint64_t>() + 5;
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c;
  f.read(&c, 1);
  c ^= 0x10;
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
  f.close();
  const std::string want = piece["crc32c"][0].get<std::string>();
  expect_contains(resume_error(ckpt), {piece["file"].get<std::string>(), "tensor 'wte' (adam_v)",
                                       "crc32c expected " + want, "found "});
}

TEST(CheckpointFaults, AWrongChecksumInTheManifestIsNamed) {
  const std::string ckpt = saved_run("wrong_crc");
  nlohmann::json m = read_manifest(ckpt);
  auto& crc = tensor_entry(m, "h.1.mlp.fc.weight")["pieces"]["master"][0]["crc32c"][0];
  const std::string was = crc.get<std::string>();
  crc = was == "00000000" ? "00000001" : "00000000";
  write_manifest(ckpt, m);
  expect_contains(resume_error(ckpt), {"tensor 'h.1.mlp.fc.weight' (master)",
                                       "crc32c expected " + crc.get<std::string>(), "found " + was});
}

TEST(CheckpointFaults, AnEditedManifestFailsItsMarkersChecksum) {
  const std::string ckpt = saved_run("edited");
  std::string text = read_small_file(ckpt + "/manifest.json");
  text[text.find("\"step\": 2") + 8] = '3';
  write_file_atomic(ckpt + "/manifest.json", text);
  expect_contains(resume_error(ckpt), {"manifest.json", "crc32c expected", "COMPLETE", "found"});
}

TEST(CheckpointFaults, AMissingTensorIsNamed) {
  const std::string ckpt = saved_run("missing");
  nlohmann::json m = read_manifest(ckpt);
  auto& ts = m["tensors"];
  for (auto it = ts.begin(); it != ts.end(); ++it)
    if ((*it)["name"] == "h.1.ln_2.bias") {
      ts.erase(it);
      break;
    }
  write_manifest(ckpt, m);
  expect_contains(resume_error(ckpt), {"tensor 'h.1.ln_2.bias' is missing"});
}

TEST(CheckpointFaults, AMissingOptimizerPieceIsAGapNeverZero) {
  const std::string ckpt = saved_run("gap");
  nlohmann::json m = read_manifest(ckpt);
  auto& pieces = tensor_entry(m, "wte")["pieces"]["adam_m"];
  ASSERT_GE(pieces.size(), 2u);
  const auto begin = pieces[1]["begin"].get<std::uint64_t>(),
             end = begin + pieces[1]["numel"].get<std::uint64_t>();
  pieces.erase(pieces.begin() + 1);
  write_manifest(ckpt, m);
  expect_contains(resume_error(ckpt),
                  {"tensor 'wte' (adam_m)", fmt::format("elements [{}, {}) are in no piece", begin, end)});
}

TEST(CheckpointFaults, ATensorOfAnotherShapeIsNamed) {
  const std::string ckpt = saved_run("shape");
  nlohmann::json m = read_manifest(ckpt);
  tensor_entry(m, "wte")["shape"] = {62, 24};
  write_manifest(ckpt, m);
  expect_contains(resume_error(ckpt), {"tensor 'wte': expected shape [61, 24], found [62, 24]"});
}

TEST(CheckpointFaults, ACheckpointOfAnotherModelIsRefused) {
  const std::string ckpt = saved_run("model");
  GptConfig other = test::tiny_gpt();
  other.n_embd = 30;
  expect_contains(resume_error(ckpt, other),
                  {"a checkpoint of another model", "n_embd expected 30, found 24"});
}

TEST(CheckpointFaults, AMissingShardFileIsNamed) {
  const std::string ckpt = saved_run("nofile");
  fs::remove(ckpt + "/rank_00002.bin");
  expect_contains(resume_error(ckpt), {"rank_00002.bin: file is missing", "tensor '"});
}

TEST(CheckpointFaults, ACheckpointWithoutItsMarkerIsNeverRead) {
  TrialSpec s;
  const std::string ckpt = saved_run("nomarker", &s);
  fs::remove(ckpt + "/COMPLETE");
  expect_contains(resume_error(ckpt), {"is not a complete checkpoint", "COMPLETE"});
  // The save directory has no complete checkpoint left.
  expect_contains(resume_error(s.save_dir), {"no complete checkpoint in"});
}

TEST(CheckpointFaults, LatestSkipsAnIncompleteCheckpointAndSaysSo) {
  TrialSpec s;
  s.topo = test::topology_for_world(2);
  s.steps = 4;
  s.save_every = 2;
  s.save_dir = test::scratch_dir("latest");
  test::expect_no_errors(test::run_trial(s), "save");
  // As if a save of step 6 had crashed between the rename and the marker, after `latest` was pointed
  // at it by hand: resolution falls back to the newest complete checkpoint.
  fs::create_directory(s.save_dir + "/step_6");
  fs::create_directory(s.save_dir + "/step_8.tmp");
  write_file_atomic(s.save_dir + "/latest", "step_6\n");
  const ResolvedCheckpoint r = resolve_checkpoint(s.save_dir);
  EXPECT_EQ(fs::path(r.path).filename(), "step_4");
  expect_contains(r.note, {"step_6, which is not a complete checkpoint"});
}

TEST(CheckpointRotation, KeepLeavesTheNewestKAndRemovesLeftovers) {
  TrialSpec s;
  s.topo = test::topology_for_world(3);
  s.steps = 5;
  s.save_every = 1;
  s.keep = 2;
  s.save_dir = test::scratch_dir("keep");
  fs::create_directories(s.save_dir + "/step_3.tmp");  // a crashed save's leftovers
  const Trial t = test::run_trial(s);
  test::expect_no_errors(t, "rotation");
  EXPECT_EQ(t.saved.size(), 5u);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(s.save_dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"latest", "step_4", "step_5"}));
  EXPECT_EQ(read_small_file(s.save_dir + "/latest"), "step_5\n");
}

TEST(CheckpointNaN, ASkippedStepIsNeverSavedItsSaveMovesToTheNextGoodStep) {
  TrialSpec s;
  s.topo = test::topology_for_world(2);
  s.steps = 4;
  s.save_every = 2;
  s.inject_nan_step = 1;  // the update of step 2 (1-based) is skipped
  s.inject_nan_rank = 1;
  s.save_dir = test::scratch_dir("nan");
  const Trial t = test::run_trial(s);
  test::expect_no_errors(t, "nan run");
  EXPECT_TRUE(t.steps[1].skipped);
  ASSERT_EQ(t.saved.size(), 2u);
  EXPECT_EQ(fs::path(t.saved[0]).filename(), "step_3");
  EXPECT_EQ(fs::path(t.saved[1]).filename(), "step_4");
  EXPECT_FALSE(fs::exists(s.save_dir + "/step_2"));
}

TEST(CheckpointNaN, ANonFiniteStateIsRefusedOnEveryRankAndLatestIsKept) {
  TrialSpec s;
  const std::string good = saved_run("nonfinite", &s);
  const Topology topo = test::topology_for_world(3);
  std::vector<std::string> errors(3);
  std::mutex mu;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    TrainConfig config = test::train_config(s.run);
    const TrainRun run = make_train_run(config, test::tiny_gpt(), topo, 3);
    ShardedEngine engine(mesh, test::tiny_gpt(), run.plan, run.engine);
    // A state with one inf moment (on whichever rank holds element 7 of h.0.mlp.fc.weight).
    const ParamTensor& pt = engine.params().tensor("h.0.mlp.fc.weight");
    engine.restore(4, 0, [&](OptimValue which, int range, std::size_t offset, std::size_t n, float* out) {
      std::fill(out, out + n, 0.5f);
      const std::size_t bad = pt.range_offset + 7;
      if (which == OptimValue::adam_v && range == pt.range && bad >= offset && bad < offset + n)
        out[bad - offset] = std::numeric_limits<float>::infinity();
    });
    try {
      SaveOptions o;
      o.dir = s.save_dir;
      save_checkpoint(mesh.world(), engine, checkpoint_meta(config, topo, run), o);
    } catch (const TrainingError& e) {
      std::lock_guard lock(mu);
      errors[mesh.world().rank()] = e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_EQ(e, errors[0]);
    expect_contains(e, {"not saved", "tensor 'h.0.mlp.fc.weight' (adam_v) element 7 is inf"});
  }
  EXPECT_FALSE(fs::exists(s.save_dir + "/step_4"));
  EXPECT_FALSE(fs::exists(s.save_dir + "/step_4.tmp"));  // the refused save removed what it started
  EXPECT_EQ(resolve_checkpoint(s.save_dir).path, good);
}

}  // namespace
}  // namespace tz
