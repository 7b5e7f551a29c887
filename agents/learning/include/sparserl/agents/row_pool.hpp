// RowPool: a few threads that share out the rows of a batch, for host work that is per row and
// costly - a BPE vocabulary's grammar masks, filled in generate() and replayed for an update
// (docs/bpe.md). Why not at::parallel_for:
// with LibTorch's OpenMP backend that template's `#pragma omp parallel` lives in a header, and a
// translation unit built without -fopenmp (ours) runs it on the calling thread alone - measured:
// one thread did all the masks' work with LibTorch set to 2 and 16 threads. A second OpenMP runtime
// beside LibTorch's bundled one is what -fopenmp would bring in, so the pool is plain std::thread.
//
// run(n, fn) calls fn(row) for every row in [0, n) once, each row on one of the threads (the
// caller's among them), handed out one at a time (rows cost unevenly), and returns when all are
// done; the first exception a row throws is rethrown (the other rows still run). The workers live
// as long as the pool and sleep between runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sparserl::agents {

class RowPool {
 public:
  // `threads` in all, the caller's included (1: run() works in the caller alone).
  explicit RowPool(int threads) {
    for (int t = 1; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~RowPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
  }
  RowPool(const RowPool&) = delete;
  RowPool& operator=(const RowPool&) = delete;

  [[nodiscard]] int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void run(std::int64_t rows, const std::function<void(std::int64_t)>& fn) {
    if (workers_.empty() || rows <= 1) {
      for (std::int64_t r = 0; r < rows; ++r) fn(r);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      rows_ = rows;
      next_.store(0);
      busy_ = static_cast<int>(workers_.size());
      error_ = nullptr;
      ++round_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Takes rows until none is left.
  void drain() {
    for (std::int64_t r = next_.fetch_add(1); r < rows_; r = next_.fetch_add(1)) {
      try {
        (*job_)(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || round_ != seen; });
        if (stop_) return;
        seen = round_;
      }
      drain();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --busy_;
      }
      done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t)>* job_ = nullptr;
  std::int64_t rows_ = 0;
  std::atomic<std::int64_t> next_{0};
  int busy_ = 0;
  std::uint64_t round_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace sparserl::agents
