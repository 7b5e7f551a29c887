// RowPool (sparserl/agents/row_pool.hpp), the threads generate() fills a BPE vocabulary's masks on:
// every row runs once per run, on several threads where the pool has them, run after run; a row's
// exception reaches the caller after the other rows ran; a pool of one thread works alone.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "sparserl/agents/row_pool.hpp"

using sparserl::agents::RowPool;

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
