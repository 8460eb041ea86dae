// The host backend's threads: the pool runs every chunk once whoever claims it, nested and
// concurrent calls fall back to the calling thread, errors reach the caller, the thread-count
// settings are read as documented, and a model's logits are bitwise the same at 1, 2 and 3
// threads (every op splits work so that each output is summed in the same order on any split).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/families/huginn/random_weights.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_host_threads {

namespace {

using muninn::host_backend;
using muninn::thread_pool;
using i64 = std::int64_t;

TEST(ThreadPool, EveryChunkRunsExactlyOnce) {
  thread_pool pool(3);
  for (int job = 0; job < 300; ++job) {
    const i64 chunks = 1 + job % 37;
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(chunks));
    pool.run(chunks, 3, [&](i64 i) { hits[std::size_t(i)].fetch_add(1); });
    for (i64 i = 0; i < chunks; ++i) ASSERT_EQ(hits[std::size_t(i)].load(), 1) << "job " << job << " chunk " << i;
  }
}

// Back-to-back jobs, each one chunk longer than the last half the time: a worker still holding
// the previous job's claim word must not pair it with the new job's chunk count (it once claimed
// one chunk past the old job's end, ran it twice in the new job or counted it there, and the
// caller then waited for ever; before the fix 9 runs in 10 of this test failed or hung).
// A hang fails here within a minute instead of at ctest's timeout.
TEST(ThreadPool, AStaleWorkerNeverClaimsAChunkOfTheNextJob) {
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!finished.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "thread_pool::run hung: a job's caller never saw all its chunks finish\n");
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  {
    thread_pool pool(3);
    for (int job = 0; job < 100000; ++job) {
      const i64 chunks = 2 + job % 2;
      std::atomic<int> hits[3] = {{0}, {0}, {0}};
      pool.run(chunks, 3, [&](i64 i) { hits[i].fetch_add(1); });
      bool once = true;
      for (i64 i = 0; i < 3; ++i) once = once && hits[i].load() == (i < chunks ? 1 : 0);
      if (!once) {
        ADD_FAILURE() << "job " << job << " (" << chunks << " chunks) ran " << hits[0].load() << ","
                      << hits[1].load() << "," << hits[2].load() << " times";
        break;
      }
    }
  }
  finished.store(true);
  watchdog.join();
}

TEST(ThreadPool, HelpersBoundTheThreadsThatTakePart) {
  thread_pool pool(3);
  for (int helpers : {0, 1, 2, 3}) {
    std::mutex m;
    std::set<std::thread::id> ids;
    for (int job = 0; job < 50; ++job)
      pool.run(64, helpers, [&](i64) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        std::lock_guard<std::mutex> lk(m);
        ids.insert(std::this_thread::get_id());
      });
    EXPECT_LE(ids.size(), std::size_t(helpers + 1)) << "helpers " << helpers;
    EXPECT_EQ(ids.count(std::this_thread::get_id()), 1u) << "the caller takes part";
  }
}

TEST(ThreadPool, SleepingWorkersWakeForTheNextJob) {
  thread_pool pool(1);
  std::mutex m;
  std::set<std::thread::id> ids;
  // Long past the spin time: the worker is asleep when each job starts. Chunks that sleep leave
  // the core to it, so it must claim some of them once woken.
  for (int job = 0; job < 5; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.run(20, 1, [&](i64) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lk(m);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, NestedRunStaysOnTheChunksThread) {
  thread_pool pool(2);
  std::atomic<int> inner{0}, elsewhere{0};
  pool.run(8, 2, [&](i64) {
    const auto me = std::this_thread::get_id();
    pool.run(16, 2, [&](i64) {
      inner.fetch_add(1);
      if (std::this_thread::get_id() != me) elsewhere.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 8 * 16);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(ThreadPool, ConcurrentCallersEachGetAllTheirChunks) {
  thread_pool pool(2);
  std::atomic<i64> total[2] = {{0}, {0}};
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&, c] {
      for (int job = 0; job < 500; ++job) pool.run(10, 2, [&](i64 i) { total[c].fetch_add(i + 1); });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total[0].load(), 500 * 55);
  EXPECT_EQ(total[1].load(), 500 * 55);
}

TEST(ThreadPool, AChunksExceptionReachesTheCallerAndThePoolGoesOn) {
  thread_pool pool(2);
  EXPECT_THROW(pool.run(32, 2,
                        [&](i64 i) {
                          if (i == 7) throw std::runtime_error("chunk 7");
                        }),
               std::runtime_error);
  std::atomic<int> n{0};
  pool.run(32, 2, [&](i64) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 32);
}

TEST(HostBackend, ParallelForCoversTheRangeOnceInDisjointChunks) {
  for (int threads : {1, 2, 3, 5}) {
    const host_backend be{threads};
    for (i64 n : {1, 2, 7, 64, 1000, 4097})
      for (i64 grain : {1, 3, 100}) {
        std::vector<int> hits(std::size_t(n), 0);
        std::atomic<int> calls{0};
        be.parallel_for(n, grain, [&](i64 b, i64 e) {
          ASSERT_LT(b, e);
          calls.fetch_add(1);
          for (i64 i = b; i < e; ++i) ++hits[std::size_t(i)];
        });
        for (i64 i = 0; i < n; ++i) ASSERT_EQ(hits[std::size_t(i)], 1) << "n " << n << " grain " << grain;
        if (n < 2 * grain || threads == 1) {
          EXPECT_EQ(calls.load(), 1) << "too small to split: one call";
        }
        EXPECT_LE(calls.load(), threads * host_backend::chunks_per_thread());
      }
  }
}

TEST(HostThreads, EnvironmentCounts) {
  const char* name = "MUNINN_TEST_THREAD_COUNT";
  ::setenv(name, "3", 1);
  EXPECT_EQ(muninn::detail::env_thread_count(name, true), 3);
  for (const char* bad : {"0", "-2", "two", "2x", "99999"}) {
    ::setenv(name, bad, 1);
    try {
      muninn::detail::env_thread_count(name, true);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  // OpenMP's variable: its leading count is taken, anything else is not ours to reject.
  ::setenv(name, "4,2", 1);
  EXPECT_EQ(muninn::detail::env_thread_count(name, false), 4);
  ::setenv(name, "many", 1);
  EXPECT_EQ(muninn::detail::env_thread_count(name, false), 0);
  ::unsetenv(name);
  EXPECT_EQ(muninn::detail::env_thread_count(name, true), 0);
}

TEST(HostThreads, UsableCoresFollowsTheAffinityMaskAndTheQuota) {
  EXPECT_GE(muninn::usable_cores(), 1);
  EXPECT_EQ(muninn::detail::cores_of_quota(150000, 100000), 2);
  EXPECT_EQ(muninn::detail::cores_of_quota(50000, 100000), 1);
  EXPECT_EQ(muninn::detail::cores_of_quota(-1, 100000), 0);
#if defined(__linux__)
  int seen = 0;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mine)) {
        CPU_SET(c, &one);
        break;
      }
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    seen = muninn::usable_cores();
  });
  t.join();
  EXPECT_EQ(seen, 1);
#endif
}

// ------------------------------------------------------------ results do not depend on threads

TEST(ThreadCountInvariance, GemmIsBitwiseEqualOnEverySplit) {
  // Decode GEMV (threads split N), prefill (split N), a narrow N with a long K (threads split M,
  // and K is blocked: each share must use the K blocks of the whole call).
  const i64 shapes[][3] = {{1, 1000, 576}, {7, 300, 1536}, {64, 576, 576}, {200, 16, 4096}, {513, 40, 3000}};
  for (const auto& s : shapes) {
    const i64 M = s[0], N = s[1], K = s[2];
    std::vector<float> A(std::size_t(M * K)), B(std::size_t(N * K));
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = float((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    for (std::size_t i = 0; i < B.size(); ++i) B[i] = float((i * 40503u + 7) % 1999) / 999.0f - 1.0f;
    std::vector<float> one(std::size_t(M * N));
    muninn::gemm_nt(host_backend{1}, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, one.data(), N);
    for (int threads : {2, 3, 4}) {
      std::vector<float> many(one.size());
      muninn::gemm_nt(host_backend{threads}, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, many.data(), N);
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
          << M << " x " << N << " x " << K << " at " << threads << " threads";
    }
  }
}

// The stack's random weights; for a Huginn config also the concat adapter when it has one.
template <class Block>
muninn::model_weights<host_backend, float> random_weights(const host_backend& be, const muninn::model_config& cfg) {
  return muninn::make_random_weights<host_backend, float, Block>(be, cfg, 5);
}
template <class Block>
muninn::huginn_weights<host_backend, float> random_weights(const host_backend& be, const muninn::huginn_config& cfg) {
  return muninn::make_random_huginn_weights<host_backend, float, Block>(be, cfg, 5);
}

template <class Model, class Block>
Model random_model(const typename Model::config_type& cfg, int threads) {
  const host_backend one{1};
  return Model(host_backend{threads}, cfg, random_weights<Block>(one, cfg));
}

template <class Model>
std::vector<std::vector<float>> run_prefill_and_decode(const Model& m, const muninn::run_options& o) {
  std::vector<std::int32_t> ids(40);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t((i * 7919 + 3) % std::size_t(m.config().vocab_size));
  auto ctx = m.make_context(48, o.steps);
  std::vector<std::vector<float>> out{m.forward(ctx, ids, o)};
  for (int t = 0; t < 4; ++t)
    out.push_back(m.forward(ctx, {muninn::argmax_host(out.back().data() + out.back().size() - std::size_t(m.config().vocab_size),
                                                       m.config().vocab_size)},
                            o));
  return out;
}

template <class Model, class Block>
void expect_same_logits_at_1_2_3_threads(const typename Model::config_type& cfg, const muninn::run_options& o) {
  const auto one = run_prefill_and_decode(random_model<Model, Block>(cfg, 1), o);
  for (int threads : {2, 3}) {
    const auto many = run_prefill_and_decode(random_model<Model, Block>(cfg, threads), o);
    ASSERT_EQ(one.size(), many.size());
    for (std::size_t c = 0; c < one.size(); ++c) {
      ASSERT_EQ(one[c].size(), many[c].size());
      EXPECT_EQ(std::memcmp(one[c].data(), many[c].data(), one[c].size() * sizeof(float)), 0)
          << threads << " threads, call " << c << " (0 = prefill)";
    }
  }
}

template <class Config>
Config medium_config(const char* type) {
  Config c;
  c.model_type = type;
  c.n_embd = 256;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.head_dim = 64;
  c.intermediate_size = 768;
  c.vocab_size = 4096;
  c.block_size = 128;
  c.source = "test_host_threads";
  return c;
}

TEST(ThreadCountInvariance, LlamaLogitsAreBitwiseEqual) {
  auto c = medium_config<muninn::llama_config>("llama");
  c.n_kv_heads = 2;
  c.n_layers_in_prelude = 3;
  c.n_layers_in_recurrent_block = 0;
  c.n_layers_in_coda = 0;
  c.tie_embeddings = true;
  expect_same_logits_at_1_2_3_threads<muninn::model<host_backend, float, muninn::llama_arch>, muninn::block::pre_norm>(
      c, {});
}

TEST(ThreadCountInvariance, HuginnLogitsAreBitwiseEqual) {
  auto c = medium_config<muninn::huginn_config>("huginn_raven");
  c.n_layers_in_prelude = 1;
  c.n_layers_in_recurrent_block = 2;
  c.n_layers_in_coda = 1;
  muninn::run_options o;
  o.steps = 3;
  o.init = muninn::state_init::zero{};
  expect_same_logits_at_1_2_3_threads<muninn::model<host_backend, float>, muninn::block::sandwich>(c, o);
}

}  // namespace

}  // namespace test_host_threads
