// The loader's global stream of windows: the seeded permutation, window_at against its reference,
// every epoch a permutation of all windows, ranks' disjoint blocks, the single-process union, the
// rank assignment across an epoch boundary, the cursor (JSON round trip, restore at other world
// sizes and batches without repeating or skipping a window) and the errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "data/data_loader.hpp"
#include "data/seeded_permutation.hpp"
#include "data_test_util.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;

TEST(SeededPermutation, IsABijectionForAnySize) {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 5ull, 17ull, 64ull, 100ull, 1000ull, 4097ull, 65537ull}) {
    for (std::uint64_t key : {0ull, 1ull, 0xdeadbeefull}) {
      const SeededPermutation p(n, key);
      std::vector<bool> hit(n, false);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t v = p(i);
        ASSERT_LT(v, n);
        ASSERT_FALSE(hit[v]) << "n " << n << " key " << key << ": " << v << " twice";
        hit[v] = true;
      }
    }
  }
  const SeededPermutation a(1000, 1), b(1000, 2), c(1000, 1);
  int same = 0, fixed = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
    EXPECT_EQ(a(i), c(i));
  }
  EXPECT_LT(same, 20) << "another key, another order";
  EXPECT_LT(fixed, 20) << "a shuffle, not the identity";
}

// Shard k holds tokens k * 1'000'000 + i, so a window's first token names its shard and start.
ShardSet numbered_shards(const std::vector<std::size_t>& sizes) {
  std::vector<TokenShard> shards;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    auto t = std::make_shared<std::vector<std::int32_t>>(sizes[k]);
    for (std::size_t i = 0; i < sizes[k]; ++i) (*t)[i] = static_cast<std::int32_t>(k * 1'000'000 + i);
    shards.push_back(memory_shard(t, "shard" + std::to_string(k)));
  }
  return ShardSet(std::move(shards));
}

WindowRef window_of_first_token(std::int32_t token, int T) {
  return {static_cast<std::size_t>(token / 1'000'000), static_cast<std::uint64_t>(token % 1'000'000 / T)};
}

TEST(DataLoader, WindowAtMatchesReferenceAndEachEpochIsAPermutation) {
  const int T = 5;
  const ShardSet set = numbered_shards({31, 6, 52, 11, 26});  // 6 + 1 + 10 + 2 + 5 = 24 windows
  const DataLoader loader(set, {.batch = 2, .seq = T, .seed = 9});
  ASSERT_EQ(loader.num_windows(), 24u);
  std::vector<std::vector<WindowRef>> epochs(3);
  for (std::uint64_t p = 0; p < 3 * 24; ++p) {
    const WindowRef w = loader.window_at(p);
    ASSERT_EQ(w, loader.window_at_ref(p)) << "position " << p;
    epochs[p / 24].push_back(w);
  }
  for (const auto& e : epochs) {
    std::set<std::pair<std::size_t, std::uint64_t>> seen;
    for (const auto& w : e) {
      ASSERT_LT(w.window * T + T, set.shards()[w.shard].count) << "window inside its shard";
      seen.insert({w.shard, w.window});
    }
    EXPECT_EQ(seen.size(), 24u) << "every window once per epoch";
  }
  EXPECT_NE(epochs[0], epochs[1]) << "a fresh order every epoch";
}

TEST(DataLoader, RanksGetDisjointDeterministicWindows) {
  const int B = 3, T = 7, world = 3;
  const ShardSet set = numbered_shards({400, 300, 301});  // 57 + 42 + 42 = 141 windows, 15 calls
  std::set<std::pair<std::size_t, std::uint64_t>> seen;
  for (int r = 0; r < world; ++r) {
    DataLoader a(set, {.batch = B, .seq = T, .rank = r, .world = world, .seed = 11});
    DataLoader b(set, {.batch = B, .seq = T, .rank = r, .world = world, .seed = 11});
    std::vector<std::int32_t> in(B * T), tg(B * T), in2(B * T), tg2(B * T);
    for (int s = 0; s < 15; ++s) {
      a.next(in.data(), tg.data());
      b.next(in2.data(), tg2.data());
      EXPECT_EQ(in, in2);
      for (int i = 0; i < B; ++i) {
        const WindowRef w = window_of_first_token(in[i * T], T);
        EXPECT_EQ(in[i * T] % 1'000'000 % T, 0) << "windows start at multiples of T";
        EXPECT_TRUE(seen.insert({w.shard, w.window}).second) << "window seen twice";
        for (int t = 0; t < T; ++t) EXPECT_EQ(tg[i * T + t], in[i * T + t] + 1);
      }
    }
  }
  EXPECT_EQ(seen.size(), 15u * B * world);
  DataLoader a(set, {.batch = B, .seq = T, .seed = 11}), c(set, {.batch = B, .seq = T, .seed = 12});
  std::vector<std::int32_t> x(B * T), y(B * T), z(B * T);
  a.next(x.data(), y.data());
  c.next(z.data(), y.data());
  EXPECT_NE(x, z) << "another seed, another order";
}

TEST(DataLoader, UnionOfRanksIsTheSingleProcessBatchAcrossEpochs) {
  const int B = 2, T = 9, world = 4;
  const ShardSet set =
      numbered_shards({2000, 1000, 2000});  // 222 + 111 + 222 = 555 windows: 69.4 calls/epoch
  DataLoader single = DataLoader::union_of_ranks(set, {.batch = B, .seq = T, .world = world, .seed = 5});
  std::vector<DataLoader> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back(set, DataLoaderOptions{.batch = B, .seq = T, .rank = r, .world = world, .seed = 5});
  std::vector<std::int32_t> in(world * B * T), tg(in.size()), rin(B * T), rtg(B * T);
  for (int step = 0; step < 150; ++step) {  // crosses two epoch boundaries
    single.next(in.data(), tg.data());
    for (int r = 0; r < world; ++r) {
      ranks[r].next(rin.data(), rtg.data());
      ASSERT_TRUE(std::equal(rin.begin(), rin.end(), in.begin() + r * B * T))
          << "step " << step << " rank " << r;
      ASSERT_TRUE(std::equal(rtg.begin(), rtg.end(), tg.begin() + r * B * T))
          << "step " << step << " rank " << r;
    }
  }
  // The span form (the engine tests' reference) is the same stream.
  const std::vector<std::int32_t> tokens = test::iota_tokens(500);
  DataLoader u = DataLoader::union_of_ranks(tokens, B, T, world, 5);
  DataLoader v(ShardSet::view(tokens, "v"), {.batch = world * B, .seq = T, .seed = 5});
  std::vector<std::int32_t> a(world * B * T), b(a.size()), c(a.size());
  for (int step = 0; step < 10; ++step) {
    u.next(a.data(), c.data());
    v.next(b.data(), c.data());
    ASSERT_EQ(a, b);
  }
}

// 10 windows, 3 ranks of batch 1: the 4th call takes positions 9, 10, 11: rank 0 gets the last
// window of epoch 0, ranks 1 and 2 the first two of epoch 1. Nothing is skipped at the boundary.
TEST(DataLoader, EpochBoundaryAssignsTheNextEpochsFirstWindowsToTheNextRanks) {
  const int T = 4;
  const ShardSet set = numbered_shards({41});
  std::vector<DataLoader> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back(set, DataLoaderOptions{.batch = 1, .seq = T, .rank = r, .world = 3, .seed = 3});
  ASSERT_EQ(ranks[0].num_windows(), 10u);
  std::vector<std::int32_t> in(T), tg(T);
  std::vector<WindowRef> stream;  // windows in global order: call by call, rank by rank
  for (int call = 0; call < 10; ++call)
    for (int r = 0; r < 3; ++r) {
      ranks[r].next(in.data(), tg.data());
      const WindowRef w = window_of_first_token(in[0], T);
      EXPECT_EQ(w, ranks[r].window_at(3 * call + r)) << "call " << call << " rank " << r;
      stream.push_back(w);
    }
  EXPECT_EQ(ranks[0].cursor().position, 30u);
  EXPECT_EQ(ranks[2].cursor().epoch(), 3u);
  for (int e = 0; e < 3; ++e) {
    std::set<std::uint64_t> epoch;
    for (int i = 0; i < 10; ++i) epoch.insert(stream[10 * e + i].window);
    EXPECT_EQ(epoch.size(), 10u) << "epoch " << e << " visits all 10 windows across the boundary calls";
  }
  // Call 3: rank 0 has epoch 0's last window; ranks 1 and 2 have epoch 1's first two.
  EXPECT_EQ(stream[9], ranks[0].window_at(9));
  EXPECT_EQ(stream[10], ranks[0].window_at(10));
  EXPECT_EQ(ranks[0].cursor().windows_per_epoch, 10u);
}

TEST(DataCursor, JsonRoundTripIsExact) {
  DataCursor c{.position = (1ULL << 62) + 12345,
               .seed = ~0ULL,
               .seq = 1024,
               .windows_per_epoch = 97,
               .fingerprint = 0x0123456789abcdefULL};
  const std::string text = c.to_json().dump();
  EXPECT_EQ(DataCursor::from_json(nlohmann::json::parse(text), "ckpt"), c);
  EXPECT_EQ(c.to_json()["epoch"], c.position / 97);
  EXPECT_EQ(c.to_json()["fingerprint"], "0123456789abcdef");
}

TEST(DataCursor, BadJsonNamesTheKey) {
  const nlohmann::json good =
      DataCursor{.position = 5, .seed = 1, .seq = 8, .windows_per_epoch = 4, .fingerprint = 3}.to_json();
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    if (v.is_discarded())
      j.erase(key);
    else
      j[key] = v;
    return j;
  };
  const nlohmann::json drop = nlohmann::json::value_t::discarded;
  expect_input_error([&] { DataCursor::from_json(with("position", drop), "c.json"); },
                     {"c.json", "position"});
  expect_input_error([&] { DataCursor::from_json(with("position", -1), "c.json"); },
                     {"position", "non-negative"});
  expect_input_error([&] { DataCursor::from_json(with("position", "5"), "c.json"); }, {"position"});
  expect_input_error([&] { DataCursor::from_json(with("position", 1.5), "c.json"); }, {"position"});
  expect_input_error([&] { DataCursor::from_json(with("seq", 0), "c.json"); }, {"seq"});
  expect_input_error([&] { DataCursor::from_json(with("windows_per_epoch", 0), "c.json"); },
                     {"windows_per_epoch"});
  expect_input_error([&] { DataCursor::from_json(with("fingerprint", "xyz"), "c.json"); }, {"fingerprint"});
  expect_input_error([&] { DataCursor::from_json(with("epoch", 7), "c.json"); }, {"epoch", "is 7"});
  expect_input_error([&] { DataCursor::from_json(with("extra", 1), "c.json"); }, {"unknown key 'extra'"});
  expect_input_error([&] { DataCursor::from_json(nlohmann::json::array(), "c.json"); }, {"c.json", "object"});
}

// The windows all ranks of a world consume in `calls` calls, in global order.
std::vector<WindowRef> consume(const ShardSet& set, int world, int B, int T, int calls,
                               const DataCursor* from, DataCursor* end) {
  std::vector<DataLoader> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back(set, DataLoaderOptions{.batch = B, .seq = T, .rank = r, .world = world, .seed = 21});
    if (from != nullptr) ranks.back().restore(*from);
  }
  std::vector<std::int32_t> in(B * T), tg(B * T);
  std::vector<WindowRef> out;
  for (int c = 0; c < calls; ++c)
    for (int r = 0; r < world; ++r) {
      ranks[r].next(in.data(), tg.data());
      for (int b = 0; b < B; ++b) out.push_back(window_of_first_token(in[b * T], T));
    }
  *end = ranks[0].cursor();
  for (const auto& l : ranks) EXPECT_EQ(l.cursor(), *end) << "every rank holds the same cursor";
  return out;
}

TEST(DataLoader, CursorRestoresAtAnotherWorldSizeWithoutRepeatOrSkip) {
  const int T = 6;
  const ShardSet set = numbered_shards({200, 77, 130});  // 33 + 12 + 21 = 66 windows
  // 2 ranks x 3 for 9 calls (54 windows), then 3 ranks x 2 (saved through JSON) for 5 calls (30:
  // crosses the epoch boundary at 66), then 1 rank x 5 for 4 calls (20).
  DataCursor c1, c2, c3;
  std::vector<WindowRef> got = consume(set, 2, 3, T, 9, nullptr, &c1);
  const DataCursor c1_json = DataCursor::from_json(nlohmann::json::parse(c1.to_json().dump()), "cursor");
  std::vector<WindowRef> more = consume(set, 3, 2, T, 5, &c1_json, &c2);
  got.insert(got.end(), more.begin(), more.end());
  more = consume(set, 1, 5, T, 4, &c2, &c3);
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(c1.position, 54u);
  EXPECT_EQ(c2.position, 84u);
  EXPECT_EQ(c3.position, 104u);
  // The same windows, in the same order, as the global stream: nothing repeated or skipped.
  const DataLoader ref(set, {.batch = 1, .seq = T, .seed = 21});
  ASSERT_EQ(got.size(), 104u);
  for (std::uint64_t p = 0; p < got.size(); ++p) ASSERT_EQ(got[p], ref.window_at(p)) << "position " << p;
}

TEST(DataLoader, RestoreRejectsAnotherStream) {
  const ShardSet set = numbered_shards({200, 77});
  DataLoader a(set, {.batch = 2, .seq = 6, .seed = 1});
  const DataCursor c = a.cursor();
  DataLoader other_seq(set, {.batch = 2, .seq = 5, .seed = 1});
  expect_input_error([&] { other_seq.restore(c); }, {"sequence length 6", "uses 5"});
  DataLoader other_seed(set, {.batch = 2, .seq = 6, .seed = 2});
  expect_input_error([&] { other_seed.restore(c); }, {"data seed 1", "uses 2"});
  DataCursor c2 = c;
  c2.fingerprint ^= 1;
  expect_input_error([&] { a.restore(c2); }, {"other data", "fingerprint"});
  DataLoader bigger(numbered_shards({200, 200}), {.batch = 2, .seq = 6, .seed = 1});
  expect_input_error([&] { bigger.restore(c); }, {"other data", "45 windows"});
}

TEST(DataLoader, ShortDataAndBadOptionsAreErrors) {
  const std::vector<std::int32_t> tokens = test::iota_tokens(40);
  expect_input_error([&] { DataLoader(tokens, 4, 8, 0, 2, 1, "tiny.txt"); },
                     {"tiny.txt", "too short", "40 tokens"});
  expect_input_error([&] { DataLoader(tokens, 1, 8, 2, 2, 1, "tiny.txt"); }, {"rank 2"});
  expect_input_error([&] { DataLoader(tokens, 0, 8, 0, 1, 1, "tiny.txt"); }, {"batch 0"});
  expect_input_error(
      [&] { DataLoader(ShardSet::view(tokens, "v"), {.batch = 1, .seq = 4, .vocab_size = -1}); },
      {"vocabulary size -1"});
  // One shard shorter than a window: named.
  const ShardSet set = numbered_shards({100, 5});
  expect_input_error([&] { DataLoader(set, {.batch = 1, .seq = 8}); }, {"shard1", "5 tokens", "T + 1 = 9"});
}

TEST(DataLoader, TokenOutsideTheVocabularyIsFoundWhenItsWindowIsRead) {
  const std::string path = test::temp_path("oov.bin");
  std::vector<std::int32_t> toks(100, 3);
  toks[57] = 500;
  write_llmc_shard(path, toks);
  DataLoader loader(ShardSet::open(path),
                    {.batch = 11, .seq = 9, .seed = 4, .vocab_size = 256});  // all 11 windows
  std::vector<std::int32_t> in(99), tg(99);
  expect_input_error([&] { loader.next(in.data(), tg.data()); },
                     {path, "token id 500 at token index 57", "byte offset 1138", "[0, 256)"});
  // In memory, the check comes when the loader is made.
  expect_input_error(
      [&] { DataLoader(ShardSet::from_tokens(toks, "mem"), {.batch = 1, .seq = 9, .vocab_size = 256}); },
      {"mem", "token index 57"});
  fs::remove(path);
}

}  // namespace
}  // namespace tz
