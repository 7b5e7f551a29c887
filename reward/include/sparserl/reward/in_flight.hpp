// In-flight coalescing: concurrent requests for the same key share one computation. The first
// caller of a key leads and computes; callers that arrive while it runs wait for the leader's
// value instead of computing it again. Nothing is kept once the leader is done (remembering is the
// caches' job: compile_cache.hpp and the evaluator's result cache).
//
// Why the evaluator needs it: an RL update evaluates a group of G completions of one task at once,
// and a confident policy often writes the same program several times. Looked up in the caches
// together, every copy misses and is compiled, run and timed again - G measurements of one kernel
// whose rewards then differ only by timing noise, which group-normalised advantages turn into a
// learning signal that is pure noise. Coalesced, identical programs on the same task get one
// evaluation's verdict and figures, and the GPU does the work once.
#pragma once

#include <cstdint>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace sparserl::reward {

template <typename Value>
class InFlight {
 public:
  struct Answer {
    Value value;
    bool shared = false;  // computed by another caller that was already in flight
  };

  // compute() runs in this thread unless the key is in flight; its exception reaches the leader
  // and every caller waiting on it.
  template <typename Compute>
  Answer run(const std::string& key, Compute&& compute) {
    std::shared_future<Value> leader;
    std::promise<Value> promise;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = running_.find(key); it != running_.end()) {
        leader = it->second;
        ++shared_;
      } else {
        running_.emplace(key, promise.get_future().share());
      }
    }
    if (leader.valid()) return {leader.get(), true};
    try {
      Value value = compute();
      promise.set_value(value);
      finish(key);
      return {std::move(value), false};
    } catch (...) {
      promise.set_exception(std::current_exception());
      finish(key);
      throw;
    }
  }

  // Answers given by another caller's computation, since construction.
  [[nodiscard]] std::uint64_t shared() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return shared_;
  }

 private:
  void finish(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.erase(key);
  }

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_future<Value>> running_;
  std::uint64_t shared_ = 0;
};

}  // namespace sparserl::reward
