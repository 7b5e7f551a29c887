// WorkerPool (worker_pool.hpp). One io thread owns every worker: it spawns them (Boost.Process,
// with the sandbox applied between fork and exec), keeps one read pending on each worker's protocol
// socket and stderr pipe, runs the deadlines, and ends workers. All worker state is touched on that
// thread only; submit() posts to it, and the few figures other threads may read sit behind a mutex.
//
// Ending a worker always goes the same way, whatever the cause (deadline, crash, protocol error,
// recycling, shutdown): wait until the worker process has exited (polled with waitid(WNOWAIT), so
// it stays a zombie and its pid, which is also its process group id, cannot be reused), SIGKILL its
// process group so nothing it spawned survives, reap it, collect the last of its stderr, answer its
// request if it still has one, and start a replacement. Deadlines and protocol errors SIGKILL the
// group first. Workers are spawned from the io thread, which lives as long as the pool, because
// PR_SET_PDEATHSIG fires when the spawning *thread* exits.
#include "sparserl/reward/worker_pool.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace sparserl::reward {

namespace asio = boost::asio;
namespace bp = boost::process;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// A role whose workers fail to start this many times in a row is marked broken.
constexpr int kMaxConsecutiveStartupFailures = 3;
// After a worker has exited, how long to wait for the rest of its stderr (a descendant that escaped
// the process group could hold the pipe open forever).
constexpr milliseconds kStderrDrain{100};
// After a worker has exited, how long its protocol channel may take to deliver what it wrote
// before.
constexpr milliseconds kExitLinger{100};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int role_index(WorkerRole role) { return role == WorkerRole::compile ? 0 : 1; }

// Applies the sandbox in the child, between fork and exec. When the exec (or the sandbox) fails,
// Boost.Process reports the error but forgets the forked child: on_error keeps its pid for reaping.
struct SandboxInitializer : bp::extend::handler {
  const ChildSandbox* plan;
  pid_t* failed_child;
  SandboxInitializer(const ChildSandbox* p, pid_t* failed) : plan(p), failed_child(failed) {}
  template <class Executor>
  void on_error(Executor& exec, const std::error_code&) const {
    if (exec.pid > 0) *failed_child = exec.pid;
  }
  template <class Executor>
  void on_exec_setup(Executor& exec) const {
    const char* step = "";
    const int err = apply_child_sandbox(*plan, &step);
    if (err != 0) {
      exec.set_error(std::error_code(err, std::system_category()), step);
      ::_exit(126);
    }
  }
};

struct Job {
  WorkerRole role = WorkerRole::compile;
  MessageType request_type = MessageType::compile_request;
  std::vector<std::uint8_t> frame;
  milliseconds deadline{0};
  std::promise<WorkerReply> promise;
  Clock::time_point submitted, dispatched;
};

enum class WorkerState { starting, idle, busy, retiring, ending };

struct Worker {
  explicit Worker(asio::io_context& io)
      : channel(io), err(io), exit_watch(io), deadline(io), poll(io), linger(io) {}

  std::uint64_t id = 0;
  WorkerRole role = WorkerRole::compile;
  int slot = 0;
  bool probe = false;  // the GPU probe: reports the devices, then retires
  pid_t pid = -1;
  asio::local::stream_protocol::socket channel;
  asio::posix::stream_descriptor err;
  asio::posix::stream_descriptor exit_watch;  // a pidfd: readable once the process has exited
  asio::steady_timer deadline;                // startup, request, retirement grace or stderr drain
  asio::steady_timer poll;                    // exit polling where there is no pidfd
  asio::steady_timer linger;  // after the exit: time for the channel to deliver its last bytes
  WorkerState state = WorkerState::starting;
  std::array<std::uint8_t, 4> header{};
  std::vector<std::uint8_t> payload;
  std::array<char, 4096> err_buf{};
  std::string err_tail;
  bool err_open = true;
  std::unique_ptr<Job> job;
  int served = 0;
  std::uint64_t last_dispatch = 0;  // the pool's dispatch count when it last got a request
  std::chrono::steady_clock::time_point spawned_at = std::chrono::steady_clock::now();

  // Set when ending.
  ErrorKind end_error = ErrorKind::none;
  std::string end_reason;
  bool startup_failure = false;
  bool exited = false;
  bool finished = false;
  bool replaced = false;
  int status = 0;
  int polls = 0;
};

// A descriptor that becomes readable when the process exits (Linux 5.3+), or -1 where there is
// none.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// SIGKILL to the worker's whole process group. Guarded: kill(-(-1)) would signal every process we
// may.
void kill_group(const Worker& w) {
  if (w.pid > 1) ::kill(-w.pid, SIGKILL);
}

}  // namespace

void WorkerPoolConfig::validate() const {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("WorkerPoolConfig." + what);
  };
  if (worker_path.empty()) fail("worker_path: is empty (expected the sparserl-worker executable)");
  if (::access(worker_path.c_str(), X_OK) != 0) {
    fail("worker_path: '" + worker_path.string() + "' is not an executable file");
  }
  if (compile_workers < 0) fail("compile_workers: must be >= 0 (0: one per core)");
  if (gpu_workers < -1) fail("gpu_workers: must be -1 (one per GPU), 0 (none) or a count");
  if (compile_deadline.count() <= 0) fail("compile_deadline: must be positive");
  if (gpu_deadline.count() <= 0) fail("gpu_deadline: must be positive");
  if (startup_deadline.count() <= 0) fail("startup_deadline: must be positive");
  if (shutdown_grace.count() < 0) fail("shutdown_grace: must not be negative");
  if (recycle_after < 0) fail("recycle_after: must be >= 0 (0: never)");
  if (max_frame_bytes < 1024) fail("max_frame_bytes: must be at least 1024");
  if (const auto problem = gpu_caches.problem()) fail("gpu_caches: " + *problem);
}

struct WorkerPool::Impl {
  explicit Impl(WorkerPoolConfig c) : cfg(std::move(c)), work(asio::make_work_guard(io)) {}

  WorkerPoolConfig cfg;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::thread thread;
  std::atomic<bool> shut{false};

  // io-thread state.
  std::vector<std::shared_ptr<Worker>> workers;  // every worker not yet finished
  std::array<std::deque<std::unique_ptr<Job>>, 2> queues;
  std::array<int, 2> targets{0, 0};  // serving workers each role should have
  std::array<int, 2> consecutive_failures{0, 0};
  std::array<std::optional<std::string>, 2> broken;
  std::array<bool, 2> logged_table{false, false};
  std::array<std::string, 2> last_problems;
  std::vector<std::string> gpu_devices;  // CUDA_VISIBLE_DEVICES value per GPU slot
  enum class GpuState { disabled, probing, ready, none } gpu_state = GpuState::disabled;
  std::uint64_t next_id = 1;
  std::uint64_t dispatches = 0;
  // Per device: the dispatch count of its last request.
  std::vector<std::uint64_t> device_dispatches;
  bool stopping = false;

  // Shared with other threads.
  mutable std::mutex mutex;
  std::condition_variable cv;
  bool gpu_known = false;
  GpuInfo gpu;
  WorkerPoolStats stats;
  std::vector<pid_t> pids;
  int serving[2] = {0, 0};
  bool all_reaped = false;

  // ---- helpers ---------------------------------------------------------------------------------

  void log(const std::string& line) {
    if (cfg.log) {
      cfg.log(line);
    } else {
      std::cerr << "sparserl pool: " << line << '\n';
    }
  }

  template <typename F>
  void update(F&& f) {
    std::lock_guard<std::mutex> lock(mutex);
    f();
  }

  void publish_workers() {
    std::vector<pid_t> now;
    int counts[2] = {0, 0};
    for (const auto& w : workers) {
      if (w->pid > 0 && !w->exited) now.push_back(w->pid);
      if (!w->probe && (w->state == WorkerState::idle || w->state == WorkerState::busy)) {
        ++counts[role_index(w->role)];
      }
    }
    update([&] {
      pids = std::move(now);
      serving[0] = counts[0];
      serving[1] = counts[1];
    });
  }

  void set_gpu(GpuInfo info) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gpu = std::move(info);
      gpu_known = true;
    }
    cv.notify_all();
  }

  static void answer(std::unique_ptr<Job>& job, ErrorKind error, std::string message,
                     std::optional<Message> response, pid_t pid) {
    if (!job) return;
    const auto now = Clock::now();
    WorkerReply reply;
    reply.error = error;
    reply.message = std::move(message);
    reply.response = std::move(response);
    reply.worker_pid = pid;
    const bool was_dispatched = job->dispatched != Clock::time_point{};
    reply.queue_ms = ms_between(job->submitted, was_dispatched ? job->dispatched : now);
    reply.run_ms = was_dispatched ? ms_between(job->dispatched, now) : 0.0;
    job->promise.set_value(std::move(reply));
    job.reset();
  }

  // ---- lifecycle --------------------------------------------------------------------------------

  void start() {
    // The CPUs this process may run on (affinity, containers), not the machine's.
    const int cores = std::max(1, static_cast<int>(allowed_cpus().size()));
    targets[0] = cfg.compile_workers > 0 ? cfg.compile_workers : cores;
    for (int i = 0; i < targets[0]; ++i) spawn(WorkerRole::compile, i, false);
    if (cfg.gpu_workers == 0) {
      gpu_state = GpuState::disabled;
      GpuInfo none;
      none.error = "GPU workers are disabled (gpu_workers = 0)";
      set_gpu(std::move(none));
    } else {
      gpu_state = GpuState::probing;
      spawn(WorkerRole::gpu, 0, true);
    }
    publish_workers();
  }

  void spawn(WorkerRole role, int slot, bool probe) {
    auto w = std::make_shared<Worker>(io);
    w->id = next_id++;
    w->role = role;
    w->slot = slot;
    w->probe = probe;
    update([&] { ++stats.spawned; });

    int sv[2] = {-1, -1};
    int ep[2] = {-1, -1};
    std::string failure;
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      failure = std::string("socketpair: ") + std::strerror(errno);
    } else if (::pipe2(ep, O_CLOEXEC) != 0) {
      failure = std::string("pipe2: ") + std::strerror(errno);
      ::close(sv[0]);
      ::close(sv[1]);
    }
    if (failure.empty()) {
      try {
        std::vector<std::string> args = {"--role", std::string(to_string(role)), "--max-frame",
                                         std::to_string(cfg.max_frame_bytes)};
        if (cfg.test_mode) args.emplace_back("--test-mode");
        if (role == WorkerRole::gpu)
          args.insert(args.end(), {"--gpu-caches", cfg.gpu_caches.str()});
        bp::environment env = boost::this_process::environment();
        if (role == WorkerRole::gpu && !probe && !gpu_devices.empty()) {
          env["CUDA_VISIBLE_DEVICES"] =
              gpu_devices[static_cast<std::size_t>(slot) % gpu_devices.size()];
        }
        const ChildSandbox plan = plan_child_sandbox(cfg.sandbox, role, slot);
        pid_t failed_child = -1;
        std::error_code spawn_error;
        bp::child child(bp::exe = cfg.worker_path.string(), bp::args = args, env,
                        bp::posix::fd.bind(0, sv[1]), bp::posix::fd.bind(1, sv[1]),
                        bp::posix::fd.bind(2, ep[1]), SandboxInitializer(&plan, &failed_child),
                        spawn_error);
        if (spawn_error) {
          if (failed_child > 0) ::waitpid(failed_child, nullptr, 0);  // it exits right after
          failure = "cannot start " + cfg.worker_path.string() + ": " + spawn_error.message();
        } else {
          w->pid = child.id();
          child.detach();  // reaped here, by waitid / waitpid
        }
      } catch (const std::exception& e) {
        failure = std::string("cannot start ") + cfg.worker_path.string() + ": " + e.what();
      }
      ::close(sv[1]);
      ::close(ep[1]);
      if (failure.empty()) {
        w->channel.assign(asio::local::stream_protocol(), sv[0]);
        w->err.assign(ep[0]);
        const int pidfd = open_pidfd(w->pid);
        if (pidfd >= 0) w->exit_watch.assign(pidfd);
      } else {
        ::close(sv[0]);
        ::close(ep[0]);
      }
    }
    workers.push_back(w);
    if (!failure.empty()) {
      // Nothing to reap: count it as a startup failure and decide about the role at once.
      w->exited = true;
      w->err_open = false;
      w->state = WorkerState::ending;
      w->startup_failure = true;
      w->end_error = ErrorKind::internal_error;
      w->end_reason = failure;
      finish(w);
      return;
    }
    read_header(w);
    read_stderr(w);
    watch_exit(w);
    w->deadline.expires_after(cfg.startup_deadline);
    w->deadline.async_wait([this, w](const boost::system::error_code& ec) {
      if (ec || w->state != WorkerState::starting) return;
      fail(w, ErrorKind::internal_error,
           "no Hello within the startup deadline of " +
               std::to_string(cfg.startup_deadline.count()) + " ms",
           true);
    });
    publish_workers();
  }

  // ---- reading ----------------------------------------------------------------------------------

  void read_header(const std::shared_ptr<Worker>& w) {
    asio::async_read(w->channel, asio::buffer(w->header),
                     [this, w](const boost::system::error_code& ec, std::size_t) {
                       if (ec) return on_channel_closed(w, ec);
                       std::uint32_t n = 0;
                       try {
                         n = decode_frame_length(w->header, cfg.max_frame_bytes);
                       } catch (const ProtocolError& e) {
                         return protocol_error(w, e.what());
                       }
                       w->payload.resize(n);
                       read_payload(w);
                     });
  }

  void read_payload(const std::shared_ptr<Worker>& w) {
    asio::async_read(w->channel, asio::buffer(w->payload),
                     [this, w](const boost::system::error_code& ec, std::size_t) {
                       if (ec) return on_channel_closed(w, ec);
                       std::optional<Message> message;
                       try {
                         message = decode_payload(w->payload);
                       } catch (const ProtocolError& e) {
                         return protocol_error(w, e.what());
                       }
                       w->payload.clear();
                       on_message(w, std::move(*message));
                       if (w->state != WorkerState::ending) read_header(w);
                     });
  }

  void read_stderr(const std::shared_ptr<Worker>& w) {
    w->err.async_read_some(asio::buffer(w->err_buf),
                           [this, w](const boost::system::error_code& ec, std::size_t n) {
                             if (n > 0) {
                               w->err_tail.append(w->err_buf.data(), n);
                               if (w->err_tail.size() > 2 * cfg.stderr_tail_bytes) {
                                 w->err_tail.erase(0, w->err_tail.size() - cfg.stderr_tail_bytes);
                               }
                             }
                             if (ec) {
                               w->err_open = false;
                               if (w->state == WorkerState::ending && w->exited) finish(w);
                               return;
                             }
                             read_stderr(w);
                           });
  }

  void on_channel_closed(const std::shared_ptr<Worker>& w, const boost::system::error_code&) {
    lost(w);
  }

  // The worker's channel closed or its process exited, whichever was seen first: the status read
  // when it is reaped says how it ended.
  void lost(const std::shared_ptr<Worker>& w) {
    switch (w->state) {
      case WorkerState::starting:
        return fail(w, ErrorKind::internal_error, "ended before its Hello", false);
      case WorkerState::idle:
        return fail(w, ErrorKind::crash, "ended while idle", false);
      case WorkerState::busy:
        return fail(w, ErrorKind::crash,
                    "ended while serving " + std::string(to_string(w->job->request_type)), false);
      case WorkerState::retiring:
      case WorkerState::ending:
        return;
    }
  }

  // True once the worker process has exited; it stays a zombie until poll_exit reaps it.
  static bool has_exited(const Worker& w) {
    siginfo_t info{};
    const int rc = ::waitid(P_PID, static_cast<id_t>(w.pid), &info, WEXITED | WNOHANG | WNOWAIT);
    return (rc == 0 && info.si_pid == w.pid) || (rc != 0 && errno == ECHILD);
  }

  // Notices the exit of a worker whose channel stays open (a grandchild may hold it): with a pidfd
  // at once, otherwise by polling. A pidfd wake-up is only a hint: Asio recycles its per-descriptor
  // state, so a readiness event of a closed pidfd can complete the wait of a new one that reused
  // the number. Hence the waitid check, and the wait re-armed while the process lives (no exit can
  // be missed: it is either seen by this check or completes the re-armed wait).
  void watch_exit(const std::shared_ptr<Worker>& w) {
    if (w->exit_watch.is_open()) {
      w->exit_watch.async_wait(asio::posix::stream_descriptor::wait_read,
                               [this, w](const boost::system::error_code& ec) {
                                 if (ec || w->exited) return;
                                 if (!has_exited(*w)) return watch_exit(w);
                                 on_exit_seen(w);
                               });
      return;
    }
    w->poll.expires_after(milliseconds(50));
    w->poll.async_wait([this, w](const boost::system::error_code& ec) {
      if (ec || w->exited || w->state == WorkerState::ending || w->state == WorkerState::retiring) {
        return;
      }
      if (has_exited(*w)) return on_exit_seen(w);
      watch_exit(w);
    });
  }

  // The process has exited. What it wrote before exiting may still be on its way through the
  // channel (an answer followed by an announced exit): the channel's end of stream decides. Only if
  // the channel stays open (a descendant holds it) does the linger timer declare the worker lost.
  void on_exit_seen(const std::shared_ptr<Worker>& w) {
    if (w->state == WorkerState::ending || w->state == WorkerState::retiring) return poll_exit(w);
    w->linger.expires_after(kExitLinger);
    w->linger.async_wait([this, w](const boost::system::error_code& ec) {
      if (ec) return;
      lost(w);
      poll_exit(w);
    });
  }

  void protocol_error(const std::shared_ptr<Worker>& w, const std::string& what) {
    if (w->state == WorkerState::ending) return;
    update([&] { ++stats.protocol_errors; });
    fail(w, w->state == WorkerState::starting ? ErrorKind::internal_error : ErrorKind::crash,
         "protocol error: " + what, true);
  }

  static bool answers(MessageType request, const Message& response) {
    if (std::holds_alternative<ErrorResponse>(response)) return true;
    switch (request) {
      case MessageType::compile_request:
        return std::holds_alternative<CompileResponse>(response);
      case MessageType::gpu_request:
        return std::holds_alternative<GpuResponse>(response);
      case MessageType::test_request:
        return std::holds_alternative<TestResponse>(response);
      default:
        return false;
    }
  }

  void on_message(const std::shared_ptr<Worker>& w, Message message) {
    if (w->state == WorkerState::starting) {
      auto* hello = std::get_if<Hello>(&message);
      if (hello == nullptr) {
        return protocol_error(
            w, "expected Hello, got " + std::string(to_string(message_type(message))));
      }
      return on_hello(w, *hello);
    }
    if (w->state != WorkerState::busy || !w->job) {
      return protocol_error(w, "unsolicited " + std::string(to_string(message_type(message))));
    }
    if (!answers(w->job->request_type, message)) {
      return protocol_error(w, "answered " + std::string(to_string(w->job->request_type)) +
                                   " with " + std::string(to_string(message_type(message))));
    }
    bool exits = false;
    if (auto* g = std::get_if<GpuResponse>(&message)) exits = g->worker_exits;
    if (auto* t = std::get_if<TestResponse>(&message)) exits = t->worker_exits;
    w->deadline.cancel();
    ++w->served;
    update([&] { ++stats.answered; });
    answer(w->job, ErrorKind::none, "", std::move(message), w->pid);
    if (exits) {
      begin_retire(w, false);
    } else if (cfg.recycle_after > 0 && w->served >= cfg.recycle_after) {
      update([&] { ++stats.recycled; });
      begin_retire(w, true);
    } else {
      w->state = WorkerState::idle;
      dispatch(w->role);
    }
  }

  void on_hello(const std::shared_ptr<Worker>& w, const Hello& hello) {
    if (hello.protocol_version != kProtocolVersion || hello.role != w->role ||
        hello.pid != w->pid) {
      return protocol_error(w, "Hello does not match (protocol " +
                                   std::to_string(hello.protocol_version) + ", role " +
                                   std::string(to_string(hello.role)) + ", pid " +
                                   std::to_string(hello.pid) + ")");
    }
    w->deadline.cancel();
    const int r = role_index(w->role);
    consecutive_failures[r] = 0;
    const double startup_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w->spawned_at).count();
    update([&] {
      ++stats.started;
      if (w->role == WorkerRole::gpu && !w->probe) {
        ++stats.gpu_started;
        stats.gpu_startup_ms += startup_ms;
      }
    });

    const SandboxCheck check = check_sandbox(cfg.sandbox, hello);
    if (!logged_table[r]) {
      logged_table[r] = true;
      log("sandbox of " + std::string(to_string(w->role)) + " workers (worker " +
          std::to_string(w->pid) + "):");
      for (const auto& line : check.lines) log("  " + line);
    }
    std::string problems;
    for (const auto& p : check.problems) problems += p + "; ";
    if (problems != last_problems[r]) {
      last_problems[r] = problems;
      for (const auto& p : check.problems)
        log("sandbox problem in worker " + std::to_string(w->pid) + ": " + p);
    }

    if (w->probe) return on_probe_hello(w, hello);
    if (w->role == WorkerRole::gpu && hello.gpu.devices.empty()) {
      return fail(w, ErrorKind::internal_error, "a GPU worker sees no device: " + hello.gpu.error,
                  false);
    }
    w->state = WorkerState::idle;
    publish_workers();
    dispatch(w->role);
  }

  void on_probe_hello(const std::shared_ptr<Worker>& w, const Hello& hello) {
    const GpuInfo info = hello.gpu;
    const int n = static_cast<int>(info.devices.size());
    set_gpu(info);
    if (n == 0) {
      gpu_state = GpuState::none;
      log("no GPU visible (" + info.error + "): GPU requests answer no_gpu");
      fail_queue(WorkerRole::gpu, ErrorKind::no_gpu, no_gpu_message());
    } else {
      // Each serving worker sees exactly one device; honour a CUDA_VISIBLE_DEVICES we were given.
      gpu_devices.clear();
      if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
        std::string_view list(visible);
        while (!list.empty() && static_cast<int>(gpu_devices.size()) < n) {
          const std::size_t comma = list.find(',');
          gpu_devices.emplace_back(list.substr(0, comma));
          list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        }
      }
      while (static_cast<int>(gpu_devices.size()) < n) {
        gpu_devices.push_back(std::to_string(gpu_devices.size()));
      }
      gpu_state = GpuState::ready;
      targets[1] = cfg.gpu_workers > 0 ? cfg.gpu_workers : n;
      std::string names;
      for (const auto& d : info.devices)
        names += (names.empty() ? "" : ", ") + d.name + " " + d.arch;
      log(std::to_string(n) + " GPU(s) visible (" + names + "): starting " +
          std::to_string(targets[1]) + " GPU worker(s)");
      if (targets[1] > n) {
        // Seen on the GPU host, not reasoned: docs/evaluator.md, "Workers sharing a GPU".
        log("warning: " + std::to_string(targets[1]) + " GPU workers share " + std::to_string(n) +
            " GPU(s): a hung candidate's worker ended beside other workers' contexts has put "
            "H200s (driver 580.159.04) into a full-chip reset twice in hostile soaks; one worker "
            "per GPU (gpu_workers = -1, the default) has not so far (docs/evaluator.md, \"Workers "
            "sharing a GPU\")");
      }
      for (int i = 0; i < targets[1]; ++i) spawn(WorkerRole::gpu, i, false);
    }
    begin_retire(w, true);
  }

  std::string no_gpu_message() {
    std::lock_guard<std::mutex> lock(mutex);
    return "no GPU: " + gpu.error;
  }

  // ---- requests ---------------------------------------------------------------------------------

  void on_submit(std::unique_ptr<Job> job) {
    const int r = role_index(job->role);
    if (stopping) {
      return answer(job, ErrorKind::internal_error, "the worker pool is shut down", std::nullopt,
                    0);
    }
    if (job->role == WorkerRole::gpu) {
      if (gpu_state == GpuState::disabled || gpu_state == GpuState::none) {
        return answer(job, ErrorKind::no_gpu, no_gpu_message(), std::nullopt, 0);
      }
    }
    if (broken[r]) return answer(job, ErrorKind::internal_error, *broken[r], std::nullopt, 0);
    queues[static_cast<std::size_t>(r)].push_back(std::move(job));
    dispatch(r == 0 ? WorkerRole::compile : WorkerRole::gpu);
  }

  // The GPU slot's device (an index into gpu_devices; -1 for a compile worker).
  [[nodiscard]] int device_of(const Worker& w) const {
    if (w.role != WorkerRole::gpu || gpu_devices.empty()) return -1;
    return w.slot % static_cast<int>(gpu_devices.size());
  }
  [[nodiscard]] std::uint64_t device_last_dispatch(const Worker& w) const {
    const int d = device_of(w);
    return d < 0 || static_cast<std::size_t>(d) >= device_dispatches.size()
               ? 0
               : device_dispatches[static_cast<std::size_t>(d)];
  }

  // The idle worker of `role` to serve the next request (null: none is idle). GPU requests go to
  // the device that has waited longest - so requests that come one at a time go round every GPU -
  // and there to the worker that served last, whose converted formats and baselines are warm (a
  // second worker of one device takes requests only while the first is busy). Compile requests go
  // to the worker that has waited longest.
  std::shared_ptr<Worker> next_idle(WorkerRole role) const {
    std::shared_ptr<Worker> best;
    for (const auto& w : workers) {
      if (w->role != role || w->probe || w->state != WorkerState::idle) continue;
      if (!best) {
        best = w;
      } else if (role == WorkerRole::gpu) {
        const std::uint64_t dw = device_last_dispatch(*w), db = device_last_dispatch(*best);
        if (dw < db || (dw == db && w->last_dispatch > best->last_dispatch)) best = w;
      } else if (w->last_dispatch < best->last_dispatch) {
        best = w;
      }
    }
    return best;
  }

  void dispatch(WorkerRole role) {
    auto& queue = queues[static_cast<std::size_t>(role_index(role))];
    while (!queue.empty()) {
      const std::shared_ptr<Worker> w = next_idle(role);
      if (!w) return;
      w->last_dispatch = ++dispatches;
      if (const int d = device_of(*w); d >= 0) {
        if (device_dispatches.size() < gpu_devices.size())
          device_dispatches.resize(gpu_devices.size());
        device_dispatches[static_cast<std::size_t>(d)] = w->last_dispatch;
      }
      w->job = std::move(queue.front());
      queue.pop_front();
      w->state = WorkerState::busy;
      w->job->dispatched = Clock::now();
      asio::async_write(
          w->channel, asio::buffer(w->job->frame),
          [this, w, job = w->job.get()](const boost::system::error_code& ec, std::size_t) {
            if (ec && w->state == WorkerState::busy && w->job.get() == job) {
              fail(w, ErrorKind::crash, "could not send the request: " + ec.message(), false);
            }
          });
      w->deadline.expires_after(w->job->deadline);
      w->deadline.async_wait([this, w, job = w->job.get()](const boost::system::error_code& ec) {
        if (ec || w->state != WorkerState::busy || w->job.get() != job) return;
        update([&] { ++stats.timeouts; });
        const std::string message = std::string(to_string(job->request_type)) +
                                    " exceeded its deadline of " +
                                    std::to_string(job->deadline.count()) + " ms; worker " +
                                    std::to_string(w->pid) + " and its process group were killed";
        kill_group(*w);
        answer(w->job, ErrorKind::timeout, message, std::nullopt, w->pid);
        fail(w, ErrorKind::timeout, message, true);
      });
    }
  }

  void fail_queue(WorkerRole role, ErrorKind error, const std::string& message) {
    auto& queue = queues[static_cast<std::size_t>(role_index(role))];
    while (!queue.empty()) {
      answer(queue.front(), error, message, std::nullopt, 0);
      queue.pop_front();
    }
  }

  // ---- ending -----------------------------------------------------------------------------------

  // A failure: kill now (when `kill_now`, or always for a worker that is still running later), then
  // end. The job, if any, is answered once the worker is reaped, with its status and stderr.
  void fail(const std::shared_ptr<Worker>& w, ErrorKind error, std::string reason, bool kill_now) {
    if (w->state == WorkerState::ending) return;
    w->startup_failure = w->state == WorkerState::starting;
    if (w->job && error == ErrorKind::crash) update([&] { ++stats.crashes; });
    w->end_error = error;
    w->end_reason = std::move(reason);
    w->state = WorkerState::ending;
    w->deadline.cancel();
    if (kill_now) kill_group(*w);
    if (!w->startup_failure) replace(w);
    // A worker that closed its channel but lives on is killed after a short grace.
    w->deadline.expires_after(milliseconds(500));
    w->deadline.async_wait([w](const boost::system::error_code& ec) {
      if (!ec && !w->exited) kill_group(*w);
    });
    publish_workers();
    poll_exit(w);
  }

  // Retirement: ask it to leave (send_shutdown) or let it leave on its own (it announced so),
  // SIGKILL after the grace.
  void begin_retire(const std::shared_ptr<Worker>& w, bool send_shutdown) {
    w->state = WorkerState::retiring;
    w->deadline.cancel();
    if (send_shutdown) {
      auto frame = std::make_shared<std::vector<std::uint8_t>>(encode_frame(Shutdown{}));
      asio::async_write(w->channel, asio::buffer(*frame),
                        [frame](const boost::system::error_code&, std::size_t) {});
    }
    w->deadline.expires_after(cfg.shutdown_grace);
    w->deadline.async_wait([w](const boost::system::error_code& ec) {
      if (!ec && !w->exited) kill_group(*w);
    });
    publish_workers();
    // A replacement starts now, not when this one is gone: recycling costs no throughput.
    replace(w);
    poll_exit(w);
  }

  void poll_exit(const std::shared_ptr<Worker>& w) {
    if (w->exited) return;
    if (!has_exited(*w)) {
      if (w->exit_watch.is_open()) return;  // watch_exit calls again once the pidfd is readable
      w->poll.cancel();
      const int step = std::min(20, 1 << std::min(w->polls++, 5));
      w->poll.expires_after(milliseconds(step));
      w->poll.async_wait([this, w](const boost::system::error_code& ec) {
        if (!ec) poll_exit(w);
      });
      return;
    }
    // Exited and still a zombie: its pid (= its group id) cannot be reused yet. Kill whatever is
    // left of the group, then reap.
    kill_group(*w);
    int status = 0;
    if (::waitpid(w->pid, &status, 0) == w->pid) {
      w->status = status;
      update([&] { ++stats.reaped; });
    } else {
      w->status = -1;  // reaped elsewhere (SIGCHLD ignored by the host process)
    }
    w->exited = true;
    w->deadline.cancel();
    boost::system::error_code ignored;
    w->channel.close(ignored);
    if (w->state == WorkerState::retiring) w->state = WorkerState::ending;
    publish_workers();
    if (!w->err_open) return finish(w);
    w->deadline.expires_after(kStderrDrain);
    w->deadline.async_wait([this, w](const boost::system::error_code& ec) {
      if (!ec) finish(w);
    });
  }

  void finish(const std::shared_ptr<Worker>& w) {
    if (w->finished) return;
    w->finished = true;
    boost::system::error_code ignored;
    w->deadline.cancel();
    w->poll.cancel();
    w->linger.cancel();
    w->err.close(ignored);
    w->channel.close(ignored);
    w->exit_watch.close(ignored);
    workers.erase(std::remove(workers.begin(), workers.end(), w), workers.end());

    if (w->end_error != ErrorKind::none) {
      std::string message = w->end_reason;
      if (w->pid > 0) {
        message = "worker " + std::to_string(w->pid) + " (" + std::string(to_string(w->role)) +
                  ") " + message;
        if (w->status >= 0) message += "; " + describe_wait_status(w->status);
      }
      std::string tail = w->err_tail.size() > cfg.stderr_tail_bytes
                             ? w->err_tail.substr(w->err_tail.size() - cfg.stderr_tail_bytes)
                             : w->err_tail;
      while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
      if (!tail.empty()) message += "; stderr: " + tail;
      if (w->job) answer(w->job, w->end_error, message, std::nullopt, w->pid);
      if (w->startup_failure) on_startup_failure(w, message);
    }
    if (w->job) {
      answer(w->job, ErrorKind::internal_error, "the worker ended without answering", std::nullopt,
             w->pid);
    }
    // After a startup failure the replacement waits until now: on_startup_failure may have marked
    // the role broken.
    if (w->startup_failure) replace(w);
    publish_workers();
    if (stopping && workers.empty()) {
      update([&] { all_reaped = true; });
      cv.notify_all();
      work.reset();
    }
  }

  void on_startup_failure(const std::shared_ptr<Worker>& w, const std::string& message) {
    update([&] { ++stats.startup_failures; });
    const int r = role_index(w->role);
    if (w->probe) {
      log("the GPU probe worker failed: " + message);
      gpu_state = GpuState::none;
      GpuInfo none;
      none.error = "the GPU probe worker failed: " + message;
      set_gpu(std::move(none));
      fail_queue(WorkerRole::gpu, ErrorKind::no_gpu, no_gpu_message());
      return;
    }
    if (++consecutive_failures[r] >= kMaxConsecutiveStartupFailures && !broken[r]) {
      broken[r] = std::string(to_string(w->role)) + " workers fail to start (" +
                  std::to_string(consecutive_failures[r]) + " times in a row); last: " + message;
      log(*broken[r]);
      fail_queue(w->role, ErrorKind::internal_error, *broken[r]);
    }
  }

  // Starts a worker in the slot of one that is leaving (once per worker), unless the pool stops or
  // the role is broken.
  void replace(const std::shared_ptr<Worker>& w) {
    if (w->replaced || stopping || w->probe) return;
    w->replaced = true;
    if (broken[role_index(w->role)]) return;
    if (w->role == WorkerRole::gpu && gpu_state != GpuState::ready) return;
    spawn(w->role, w->slot, false);
  }

  // ---- shutdown ---------------------------------------------------------------------------------

  void begin_shutdown() {
    stopping = true;
    fail_queue(WorkerRole::compile, ErrorKind::internal_error, "the worker pool is shut down");
    fail_queue(WorkerRole::gpu, ErrorKind::internal_error, "the worker pool is shut down");
    const auto snapshot = workers;
    for (const auto& w : snapshot) {
      switch (w->state) {
        case WorkerState::idle:
          begin_retire(w, true);
          break;
        case WorkerState::starting:
        case WorkerState::busy:
          kill_group(*w);
          answer(w->job, ErrorKind::internal_error, "the worker pool is shut down", std::nullopt,
                 w->pid);
          fail(w, ErrorKind::none, "", true);
          break;
        case WorkerState::retiring:
        case WorkerState::ending:
          break;
      }
    }
    if (workers.empty()) {
      update([&] { all_reaped = true; });
      cv.notify_all();
      work.reset();
    }
  }
};

WorkerPool::WorkerPool(WorkerPoolConfig config) {
  config.validate();
  impl_ = std::make_unique<Impl>(std::move(config));
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl] { impl->start(); });
  impl->thread = std::thread([impl] { impl->io.run(); });
}

WorkerPool::~WorkerPool() { shutdown(); }

std::future<WorkerReply> WorkerPool::submit(WorkerRole role, WorkerRequest request,
                                            std::optional<milliseconds> deadline) {
  auto job = std::make_unique<Job>();
  std::future<WorkerReply> future = job->promise.get_future();
  job->role = role;
  job->submitted = Clock::now();
  job->deadline = deadline.value_or(role == WorkerRole::compile ? impl_->cfg.compile_deadline
                                                                : impl_->cfg.gpu_deadline);
  std::string refusal;
  try {
    Message message = std::visit(
        [](auto&& r) -> Message { return std::forward<decltype(r)>(r); }, std::move(request));
    job->request_type = message_type(message);
    job->frame = encode_frame(message);
    if (job->frame.size() - 4 > impl_->cfg.max_frame_bytes) {
      refusal = "request of " + std::to_string(job->frame.size() - 4) +
                " bytes exceeds the frame cap of " + std::to_string(impl_->cfg.max_frame_bytes);
    }
  } catch (const ProtocolError& e) {
    refusal = e.what();
  }
  if (job->deadline.count() <= 0) refusal = "a deadline must be positive";
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    ++impl_->stats.requests;
  }
  if (refusal.empty() && impl_->shut.load()) refusal = "the worker pool is shut down";
  if (!refusal.empty()) {
    Impl::answer(job, ErrorKind::internal_error, refusal, std::nullopt, 0);
    return future;
  }
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl, j = std::shared_ptr<Job>(job.release())]() mutable {
    impl->on_submit(std::unique_ptr<Job>(new Job(std::move(*j))));
  });
  return future;
}

GpuInfo WorkerPool::gpu_info() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->cv.wait_for(lock, impl_->cfg.startup_deadline + milliseconds(1000),
                     [this] { return impl_->gpu_known || impl_->all_reaped; });
  if (!impl_->gpu_known) {
    GpuInfo none;
    none.error = "the GPU probe has not answered";
    return none;
  }
  return impl_->gpu;
}

int WorkerPool::gpu_worker_count() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->serving[1];
}

int WorkerPool::compile_worker_count() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->serving[0];
}

WorkerPoolStats WorkerPool::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

std::vector<pid_t> WorkerPool::worker_pids() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->pids;
}

void WorkerPool::shutdown() {
  if (!impl_ || impl_->shut.exchange(true)) return;
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl] { impl->begin_shutdown(); });
  if (impl->thread.joinable()) impl->thread.join();
}

}  // namespace sparserl::reward
