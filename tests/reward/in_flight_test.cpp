// InFlight (in_flight.hpp): callers of one key that overlap share the leader's computation (and
// its exception); callers of other keys, and callers after the leader is done, compute their own.
#include "sparserl/reward/in_flight.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "catch.hpp"

using sparserl::reward::InFlight;

namespace {

// A latch the leader's computation waits on, so the other callers surely arrive while it runs.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

// Waits until `flight` has handed out `n` shared answers' worth of waiters; InFlight counts a
// waiter when it joins, before it blocks.
void wait_for_waiters(const InFlight<int>& flight, std::uint64_t n) {
  while (flight.shared() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

TEST_CASE("Overlapping callers of one key share one computation", "[reward][in_flight]") {
  InFlight<int> flight;
  Gate gate;
  std::atomic<int> computations{0};
  constexpr int kCallers = 8;
  std::vector<InFlight<int>::Answer> answers(kCallers);
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    answers[0] = flight.run("k", [&] {
      ++computations;
      gate.wait();
      return 42;
    });
  });
  // The leader is in flight once its computation has started.
  while (computations.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 1; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      answers[static_cast<std::size_t>(i)] = flight.run("k", [&] {
        ++computations;
        return -1;
      });
    });
  }
  wait_for_waiters(flight, kCallers - 1);
  gate.release();
  for (auto& t : threads) t.join();
  REQUIRE(computations.load() == 1);
  REQUIRE_FALSE(answers[0].shared);
  for (const auto& a : answers) REQUIRE(a.value == 42);
  for (int i = 1; i < kCallers; ++i) REQUIRE(answers[static_cast<std::size_t>(i)].shared);
  REQUIRE(flight.shared() == kCallers - 1);

  // Nothing is remembered: the next caller of the key computes again.
  const auto later = flight.run("k", [] { return 7; });
  REQUIRE(later.value == 7);
  REQUIRE_FALSE(later.shared);
}

TEST_CASE("Other keys are not shared", "[reward][in_flight]") {
  InFlight<int> flight;
  Gate gate;
  std::atomic<bool> started{false};
  int first = 0;
  std::thread leader([&] {
    first = flight.run("a", [&] {
      started = true;
      gate.wait();
      return 1;
    }).value;
  });
  while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto other = flight.run("b", [] { return 2; });  // does not wait for "a"
  gate.release();
  leader.join();
  REQUIRE(first == 1);
  REQUIRE(other.value == 2);
  REQUIRE_FALSE(other.shared);
  REQUIRE(flight.shared() == 0);
}

TEST_CASE("The leader's exception reaches every waiter, and the key is free again",
          "[reward][in_flight]") {
  InFlight<int> flight;
  Gate gate;
  std::atomic<bool> started{false};
  bool leader_threw = false, waiter_threw = false;
  std::thread leader([&] {
    try {
      flight.run("k", [&]() -> int {
        started = true;
        gate.wait();
        throw std::runtime_error("worker died");
      });
    } catch (const std::runtime_error& e) {
      leader_threw = std::string(e.what()) == "worker died";
    }
  });
  while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread waiter([&] {
    try {
      flight.run("k", [] { return 0; });
    } catch (const std::runtime_error& e) {
      waiter_threw = std::string(e.what()) == "worker died";
    }
  });
  wait_for_waiters(flight, 1);
  gate.release();
  leader.join();
  waiter.join();
  REQUIRE(leader_threw);
  REQUIRE(waiter_threw);
  REQUIRE(flight.run("k", [] { return 5; }).value == 5);
}
