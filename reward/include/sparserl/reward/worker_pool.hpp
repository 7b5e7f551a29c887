// WorkerPool: the evaluator's `sparserl-worker` processes and everything that can go wrong with
// them. Two roles: compile workers (NVRTC; one per core by default) and GPU workers (one per
// visible GPU by default; the pool learns the count from a probe worker's Hello, and with zero GPUs
// it runs none and answers GPU requests with no_gpu). Workers are spawned with Boost.Process inside
// the sandbox (sandbox.hpp) and spoken to over a socket with the length-prefixed protocol
// (protocol.hpp); one thread runs a Boost.Asio io_context that does all their I/O and deadlines.
//
// Failure handling, which is the point of the class:
//  - every request has a deadline for its stage; on expiry the worker's whole process group gets
//    SIGKILL, it is reaped, the request is answered ErrorKind::timeout and a fresh worker is
//    started;
//  - a worker that dies, exits early, sends a malformed or oversize frame or an unexpected message
//  is
//    killed (group) and reaped, the request is answered ErrorKind::crash with the signal or exit
//    status and the tail of the worker's stderr, and a fresh worker is started;
//  - a worker that announces it will exit (a GPU worker after a CUDA error) is replaced after its
//  answer;
//  - every worker is retired after `recycle_after` requests;
//  - a role whose workers fail to start three times in a row is marked broken and its requests are
//    answered internal_error with the last failure (no respawn loop).
// Requests queue when every worker of their role is busy. submit() is thread-safe and never throws
// for anything a worker does; the destructor shuts down and reaps every process. No zombie and no
// descriptor outlives the pool.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/protocol.hpp"
#include "sparserl/reward/sandbox.hpp"

namespace sparserl::reward {

struct WorkerPoolConfig {
  std::filesystem::path worker_path;  // the sparserl-worker executable
  int compile_workers = 0;            // 0: one per CPU this process may run on
  int gpu_workers = -1;               // -1: one per visible GPU; 0: none (GPU requests -> no_gpu)
  std::chrono::milliseconds compile_deadline{60'000};  // per compile request
  std::chrono::milliseconds gpu_deadline{300'000};     // per GPU request (check + time)
  std::chrono::milliseconds startup_deadline{60'000};  // spawn until Hello (CUDA init is slow)
  std::chrono::milliseconds shutdown_grace{2'000};     // Shutdown until SIGKILL
  int recycle_after = 500;  // requests per worker before it is replaced; 0: never
  SandboxLimits sandbox;
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;  // both directions
  std::size_t stderr_tail_bytes = 4096;                 // kept per worker for crash messages
  bool test_mode = false;  // start workers with --test-mode (tests only)
  GpuCacheLimits gpu_caches;  // GPU workers' --gpu-caches
  // Where the pool reports its sandbox table, deviations and worker failures (one line each, no
  // newline). Empty: standard error, prefixed "sparserl pool: ".
  std::function<void(std::string_view)> log;

  // Throws std::invalid_argument naming the field: a missing or non-executable worker, negative
  // counts, non-positive deadlines, a frame cap below 1 KiB.
  void validate() const;
};

// What a request may be; the role decides which workers take it.
using WorkerRequest = std::variant<CompileRequest, GpuRequest, TestRequest>;

struct WorkerReply {
  // none: `response` holds the worker's answer (which may itself be an ErrorResponse). Otherwise
  // timeout, crash, no_gpu or internal_error, with `message` saying what happened.
  ErrorKind error = ErrorKind::none;
  std::string message;
  std::optional<Message> response;
  std::int32_t worker_pid = 0;
  double queue_ms = 0;  // waiting for a free worker
  double run_ms = 0;    // from sending the request to the answer (or the failure)
};

struct WorkerPoolStats {
  std::uint64_t spawned = 0;
  std::uint64_t started = 0;  // workers whose Hello arrived
  std::uint64_t startup_failures = 0;
  std::uint64_t requests = 0;  // submitted
  std::uint64_t answered = 0;  // answered by a worker (error none)
  std::uint64_t timeouts = 0;
  std::uint64_t crashes = 0;          // deaths, early exits and protocol errors while serving
  std::uint64_t protocol_errors = 0;  // of which malformed, oversize or unexpected frames
  std::uint64_t recycled = 0;         // retired after recycle_after requests
  std::uint64_t reaped = 0;           // worker processes waited for
  // GPU workers (not the probe) whose Hello arrived, and the summed time from their spawn to it:
  // with one worker per GPU a replaced worker's GPU serves nothing for that long.
  std::uint64_t gpu_started = 0;
  double gpu_startup_ms = 0;
};

class WorkerPool {
 public:
  // Validates the config (std::invalid_argument) and starts the workers; returns without waiting
  // for their Hello.
  explicit WorkerPool(WorkerPoolConfig config);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a request for a worker of `role`. `deadline` overrides the role's deadline. The future
  // always gets a reply; after shutdown() it is internal_error at once.
  std::future<WorkerReply> submit(WorkerRole role, WorkerRequest request,
                                  std::optional<std::chrono::milliseconds> deadline = std::nullopt);

  // The GPUs the probe worker saw; waits for its Hello (at most startup_deadline). With gpu_workers
  // = 0 or a failed probe: no devices and `error` says why.
  GpuInfo gpu_info();
  // GPU workers serving requests (0 until the probe answered, and with no GPU).
  [[nodiscard]] int gpu_worker_count() const;
  [[nodiscard]] int compile_worker_count() const;

  [[nodiscard]] WorkerPoolStats stats() const;
  // The pids of the worker processes alive now (started, serving or being retired).
  [[nodiscard]] std::vector<pid_t> worker_pids() const;

  // Answers queued requests internal_error, stops every worker (Shutdown, then SIGKILL to its group
  // after shutdown_grace) and reaps them. Idempotent; the destructor calls it.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "signal 11 (SIGSEGV)", "exit status 3": how a wait status reads in messages.
std::string describe_wait_status(int status);

}  // namespace sparserl::reward
