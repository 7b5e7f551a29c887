// RowPool (sparserl/agents/row_pool.hpp), the threads generate() fills a BPE vocabulary's masks on
// and an update replays them on: every row runs once per run, on several threads where the pool
// has them, run after run; a row's exception reaches the caller after the other rows ran; a pool of
// one thread works alone; the replayed masks do not depend on the number of threads.
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/row_pool.hpp"
#include "sparserl/agents/torch/learner.hpp"

using namespace sparserl;
using namespace sparserl::agents;

TEST_CASE("RowPool runs every row once a run, on its threads, run after run", "[agents][pool]") {
  RowPool pool(4);
  CHECK(pool.threads() == 4);
  for (int round = 0; round < 50; ++round) {
    const std::int64_t rows = round == 0 ? 8 : 1 + round % 17;
    std::vector<std::atomic<int>> calls(static_cast<std::size_t>(rows));
    std::mutex mutex;
    std::set<std::thread::id> threads;
    pool.run(rows, [&](std::int64_t r) {
      calls[static_cast<std::size_t>(r)].fetch_add(1);
      if (round == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let all join
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    for (std::int64_t r = 0; r < rows; ++r) {
      INFO("round " << round << ", row " << r);
      CHECK(calls[static_cast<std::size_t>(r)].load() == 1);
    }
    // The first round's rows sleep, so the workers take some: more than the caller ran them.
    if (round == 0) CHECK(threads.size() > 1);
  }
}

TEST_CASE("RowPool rethrows a row's exception after the other rows ran", "[agents][pool]") {
  RowPool pool(3);
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH(pool.run(12,
                             [&](std::int64_t r) {
                               ran.fetch_add(1);
                               if (r == 5) throw std::runtime_error("row 5 failed");
                             }),
                    "row 5 failed");
  CHECK(ran.load() == 12);
  // The pool still works afterwards.
  std::atomic<int> again{0};
  pool.run(7, [&](std::int64_t) { again.fetch_add(1); });
  CHECK(again.load() == 7);
}

TEST_CASE("RowPool of one thread runs the rows in order in the caller", "[agents][pool]") {
  RowPool pool(1);
  CHECK(pool.threads() == 1);
  std::vector<std::int64_t> order;
  std::set<std::thread::id> threads;
  pool.run(5, [&](std::int64_t r) {
    order.push_back(r);
    threads.insert(std::this_thread::get_id());
  });
  CHECK(order == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(threads == std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("a BPE vocabulary's masks replayed for an update are the same on one thread and three",
          "[agents][pool][hf]") {
  // sequence_batch() replays the masks generate() did not keep (a BPE vocabulary's), a row per
  // thread: the qwen2-tiny fixture's samples under the grammar mask, replayed at 1 and 3 threads.
  const std::filesystem::path model =
      std::filesystem::path(SPARSERL_TEST_SOURCE_DIR) / "tests/fixtures/hf/qwen2-tiny";
  if (!std::filesystem::exists(model / "config.json"))
    sparserl::testing::skip("no tests/fixtures/hf/qwen2-tiny");
  AgentConfig config = agents::testing::tiny_config(env::MaskMode::syntax, 640);
  config.model.kind = ModelKind::hf;
  config.model.path = model.string();
  PolicyAgent agent(config, agents::testing::vocabulary());
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts = {
      agents::testing::synthetic_observation(3), agents::testing::synthetic_observation(4)};
  const std::vector<Completion> sampled = agent.generate(prompts, 3, config.sampling);
  std::vector<const env::MatrixObservation*> matrices;
  std::vector<const std::vector<env::TokenId>*> sequences;
  std::vector<const std::vector<std::uint8_t>*> masks;
  for (std::size_t i = 0; i < sampled.size(); ++i) {
    CHECK(sampled[i].action_masks.empty());  // not kept: replayed
    matrices.push_back(prompts[i / 3].get());
    sequences.push_back(&sampled[i].tokens);
    masks.push_back(&sampled[i].action_masks);
  }
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const torch::Tensor one = agent.learner().sequence_batch(matrices, sequences, masks).action_masks;
  at::set_num_threads(3);
  const torch::Tensor three =
      agent.learner().sequence_batch(matrices, sequences, masks).action_masks;
  at::set_num_threads(threads);
  REQUIRE(one.defined());
  CHECK(one.sizes() == three.sizes());
  CHECK(torch::equal(one, three));
  // Each drawn token is allowed where it was drawn.
  for (std::size_t i = 0; i < sampled.size(); ++i) {
    for (std::size_t t = 0; t < sampled[i].tokens.size(); t += 37) {
      CHECK(one[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(t)][sampled[i].tokens[t]]
                .item<bool>());
    }
  }
}
