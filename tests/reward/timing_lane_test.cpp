// A GPU's timing lane (reward/timing_lane.hpp): the file's name from the PCI bus id (the worker
// and the sampler must agree on it), and that a second holder waits until the first lets go.
#include "sparserl/reward/timing_lane.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "catch.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;

TEST_CASE("a timing lane's file is named after the GPU's PCI bus id", "[reward][timing_lane]") {
  CHECK(timing_lane_path("0000:00:06.0").filename() == "sparserl-timing-0000-00-06-0.lock");
  CHECK(timing_lane_path("device1").filename() == "sparserl-timing-device1.lock");
  CHECK(timing_lane_path("0000:00:06.0").parent_path() == std::filesystem::temp_directory_path());
}

TEST_CASE("a timing lane has one holder at a time", "[reward][timing_lane]") {
  const auto path = sparserl::testing::scratch_dir("timing_lane") / "lane.lock";
  TimingLaneLock first(path);
  TimingLaneLock second(path);  // its own open file: flock sets them against each other
  std::atomic<bool> first_released{false};
  first.lock();
  auto waiter = std::async(std::launch::async, [&] {
    second.lock();
    const bool after = first_released.load();
    second.unlock();
    return after;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  first_released = true;
  first.unlock();
  CHECK(waiter.get());  // the second holder got the lane only once the first had let it go
  CHECK(first.try_lock());
  CHECK_FALSE(second.try_lock());
  first.unlock();
  CHECK(second.try_lock());
  second.unlock();
  // Taken and given back again, as a sampler does every step.
  for (int i = 0; i < 3; ++i) {
    first.lock();
    first.unlock();
  }
  CHECK_THROWS_WITH(TimingLaneLock(path / "no" / "such"),
                    sparserl::testing::has_substring("timing lane "));
}

TEST_CASE("a lane turn holds the lane for its scope", "[reward][timing_lane]") {
  const auto path = sparserl::testing::scratch_dir("timing_lane_turn") / "lane.lock";
  TimingLaneLock worker(path);
  TimingLaneLock other(path);
  {
    const TimingLaneTurn turn(&worker);
    CHECK_FALSE(other.try_lock());
  }
  CHECK(other.try_lock());  // let go at the end of the scope
  other.unlock();
  const TimingLaneTurn none(nullptr);  // no lane: nothing held, nothing to fail
}
