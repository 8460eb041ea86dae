// The engine's pieces on their own: active rows (runs, keep-by-mask, gather), row compaction,
// KV cache indexing and fallbacks, and a plain stack run without a cache.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "muninn/engine/routing.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/muninn.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_engine {

using namespace muninn;

namespace {

TEST(ActiveRows, RunsSplitAtSequenceAndPositionGaps) {
  engine::active_rows r;
  r.append(0, 5, 3);  // positions 5, 6, 7 of sequence 0
  r.append(1, 0, 2);  // positions 0, 1 of sequence 1
  ASSERT_EQ(r.size(), 5);
  ASSERT_EQ(r.runs().size(), 2u);
  EXPECT_EQ(r.runs()[1].row0, 3);
  EXPECT_EQ(r.runs()[1].pos0, 0);
  // Dropping position 6 leaves sequence 0 ragged: two runs, each at its own positions.
  const auto k = r.kept({1, 0, 1, 1, 1});
  ASSERT_EQ(k.runs().size(), 3u);
  EXPECT_EQ(k.runs()[0].pos0, 5);
  EXPECT_EQ(k.runs()[1].pos0, 7);
  EXPECT_EQ(k.runs()[1].row0, 1);
  EXPECT_EQ(k.runs()[2].seq, 1);
  EXPECT_EQ(k.pos(3), 1);
  const auto g = r.gathered({4, 0});
  EXPECT_EQ(g.seq(0), 1);
  EXPECT_EQ(g.pos(1), 5);
  EXPECT_THROW(r.kept({1, 0}), error);
  EXPECT_THROW(r.gathered({9}), error);
}

TEST(ActiveRows, CompactMovesKeptRowsForwardInOrder) {
  host_backend be;
  std::vector<float> buf(5 * 2), tmp(5 * 2);
  std::iota(buf.begin(), buf.end(), 0.0f);
  engine::compact_rows(be, buf.data(), 2, {0, 1, 0, 1, 1}, tmp.data());
  EXPECT_EQ(std::vector<float>(buf.begin(), buf.begin() + 6), (std::vector<float>{2, 3, 6, 7, 8, 9}));
}

TEST(KvCache, HuginnSlotsFollowExecutedLayersAndBudget) {
  const kv_layout lay{2, 4, 2, 8};
  context_limits lim;
  lim.max_steps = 32;
  using P = kv_cache::per_layer_slot;
  EXPECT_EQ(P::num_slots(lay, lim), 2 + 4 * 32 + 2);
  EXPECT_EQ(P::slot_id(lay, lim, layer_group::prelude, 0, 1), 1);
  EXPECT_EQ(P::slot_id(lay, lim, layer_group::core, 3, 2), 2 + 4 * 3 + 2);
  lim.kv_budget = 2;  // step s reuses the slots of s mod 2
  EXPECT_EQ(P::num_slots(lay, lim), 2 + 4 * 2 + 2);
  EXPECT_EQ(P::slot_id(lay, lim, layer_group::core, 3, 2), 2 + 4 * 1 + 2);
  EXPECT_EQ(P::slot_id(lay, lim, layer_group::coda, 0, 1), 2 + 4 * 2 + 1);
  EXPECT_EQ(kv_cache::per_layer::slot_id(lay, lim, layer_group::coda, 7, 1), 2 + 4 + 1);
}

TEST(KvCache, LatestFallbackCopiesTheLastStepForward) {
  host_backend be;
  const kv_layout lay{0, 1, 0, 2};
  context_limits lim;
  lim.max_tokens = 4;
  lim.max_steps = 3;
  engine::executed_layer_cache<host_backend, float, kv_cache::per_layer_slot> c(be, lay, lim);
  auto s0 = c.slot(layer_group::core, 0, 0);
  s0.k[2 * 2] = 7.0f;  // position 2 ran step 0 only
  c.on_exit(2, 1, 1);
  EXPECT_EQ(c.slot(layer_group::core, 1, 0).k[2 * 2], 7.0f);
  EXPECT_EQ(c.slot(layer_group::core, 2, 0).k[2 * 2], 7.0f);
  EXPECT_EQ(c.slot(layer_group::core, 1, 0).k[0], 0.0f);  // other positions untouched
}

TEST(KvCache, NoneFallbackLeavesOutTokensThatSkippedTheStep) {
  host_backend be;
  const kv_layout lay{0, 1, 0, 1};
  context_limits lim;
  lim.max_tokens = 4;
  lim.max_steps = 2;
  lim.fallback = kv_fallback::none;
  engine::executed_layer_cache<host_backend, float, kv_cache::per_layer_slot> c(be, lay, lim);
  auto s1 = c.slot(layer_group::core, 1, 0);
  for (int p = 0; p < 4; ++p) s1.k[p] = float(p + 1);
  const std::vector<std::int32_t> steps = {2, 1, 2};  // position 1 exited after step 0
  const engine::row_run run{0, 0, 1, 3};               // position 3 runs step 1 now
  const kv_read<float> r = c.read(layer_group::core, 1, 0, run, steps);
  ASSERT_EQ(r.nkv, 3);
  EXPECT_EQ(std::vector<float>(r.k, r.k + 3), (std::vector<float>{1, 3, 4}));
}

// A plain stack whose context keeps no cache sees only the rows of its call: over a whole prompt
// in one call that is exactly what the per-layer cache gives.
TEST(KvCache, NoCacheEqualsPerLayerCacheOnOneWholeCall) {
  using with_cache = model<host_backend, float, llama_arch>;
  using without = model<host_backend, float, llama_arch::with<kv_cache::none>>;
  const std::string dir = std::string(MUNINN_TEST_DATA) + "/llama/tiny_untied_gqa";
  const std::vector<std::int32_t> ids = {3, 14, 15, 92, 65, 35, 89, 79};
  const auto a = with_cache::load(dir).forward(ids);
  const auto m = without::load(dir);
  EXPECT_EQ(m.kv_slots(0), 0);
  EXPECT_LE(muninn_test::max_abs_diff(m.forward(ids), a), 1e-6);
}

}  // namespace

namespace {

// A router's round trip: pick rows, run f on the dense subset, add g·f back into the full stack.
TEST(Routing, GatherThenGatedScatterAddUpdatesOnlyPickedRows) {
  host_backend be;
  engine::active_rows rows;
  rows.append(0, 0, 3);
  rows.append(1, 4, 2);
  const auto sub = engine::pick_rows(rows, {0, 1, 0, 1, 1});
  ASSERT_EQ(sub.rows.size(), 3);
  EXPECT_EQ(sub.rows.pos(0), 1);  // RoPE would use the original positions
  EXPECT_EQ(sub.rows.seq(2), 1);
  EXPECT_EQ(sub.rows.pos(2), 5);
  std::vector<float> x = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};  // [5, 2]
  std::vector<float> dense(3 * 2);
  std::vector<std::int32_t> idx(3);
  engine::gather(be, sub, x.data(), 2, idx.data(), dense.data());
  EXPECT_EQ(dense, (std::vector<float>{1, 1, 3, 3, 4, 4}));
  for (auto& v : dense) v *= 10;  // f
  const std::vector<float> gate = {0.5f, 1.0f, 0.0f};
  engine::scatter_add(be, sub, x.data(), 2, dense.data(), gate.data(), idx.data());
  EXPECT_EQ(x, (std::vector<float>{0, 0, 6, 6, 2, 2, 33, 33, 4, 4}));
}

}  // namespace

namespace {

// A cache whose reads hand attention the rows in reverse order, each with its position: attention
// must mask by position, not by row order, and give what the plain per-layer cache gives. This is
// the path a ragged cache (only some tokens per recursion) takes.
template <class Backend, class T>
class reversed_cache : public engine::slot_cache<Backend, T, kv_cache::per_layer> {
  using base = engine::slot_cache<Backend, T, kv_cache::per_layer>;

 public:
  reversed_cache(const Backend& be, const kv_layout& lay, const context_limits& lim)
      : base(be, lay, lim), be_(be), kvd_(lay.kv_dim), k_(be.template alloc<T>(std::size_t(lim.max_tokens * lay.kv_dim))),
        v_(be.template alloc<T>(std::size_t(lim.max_tokens * lay.kv_dim))),
        pos_(be.template alloc<std::int32_t>(std::size_t(lim.max_tokens))) {}
  kv_read<T> read(layer_group g, std::int64_t step, std::int64_t layer, const engine::row_run& run,
                  const std::vector<std::int32_t>&) {
    const kv_slot<T> s = this->slot(g, step, layer);
    const std::int64_t n = run.pos0 + run.n;
    std::vector<std::int32_t> pos(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t p = n - 1 - i;
      be_.copy(k_.data() + i * kvd_, s.k + p * kvd_, std::size_t(kvd_));
      be_.copy(v_.data() + i * kvd_, s.v + p * kvd_, std::size_t(kvd_));
      pos[std::size_t(i)] = std::int32_t(p);
    }
    be_.upload(pos_.data(), pos.data(), pos.size());
    return kv_read<T>{k_.data(), v_.data(), n, pos_.data()};
  }

 private:
  Backend be_;
  std::int64_t kvd_;
  typename Backend::template buffer<T> k_, v_;
  typename Backend::template buffer<std::int32_t> pos_;
};

struct reversed_kv {
  using slot = muninn::slot::kv_cache;
  static constexpr const char* name = "reversed";
  template <class Backend, class T>
  using storage = reversed_cache<Backend, T>;
  static std::int64_t num_slots(const kv_layout& l, const context_limits& lim) {
    return kv_cache::per_layer::num_slots(l, lim);
  }
};

TEST(KvCache, ReadsWithKeyPositionsMaskByPosition) {
  using plain = model<host_backend, float, llama_arch>;
  using reversed = model<host_backend, float, llama_arch::with<reversed_kv>>;
  const std::string dir = std::string(MUNINN_TEST_DATA) + "/llama/tiny_untied_gqa";
  const std::vector<std::int32_t> a = {3, 14, 15, 92, 65}, b = {35, 89, 79};
  const plain p = plain::load(dir);
  const reversed r = reversed::load(dir);
  auto pc = p.make_context(16);
  auto rc = r.make_context(16);
  // A prefill (several queries against their own keys) and a continuation against the cache.
  EXPECT_LE(muninn_test::max_abs_diff(r.forward(rc, a), p.forward(pc, a)), 1e-5);
  EXPECT_LE(muninn_test::max_abs_diff(r.forward(rc, b), p.forward(pc, b)), 1e-5);
}

}  // namespace

}  // namespace test_engine
