// The worker pool against real worker processes: `sparserl-worker --test-mode` crashes, hangs,
// floods its channels, exits early, leaves grandchildren and runs into its limits on request, and
// each time the pool must answer with the right error kind and message and carry on with a fresh
// worker. The last case sends 1000 mixed requests and then checks, through /proc, that the test
// process has exactly the children it should and no more descriptors than before.
#include "sparserl/reward/worker_pool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "child_processes.hpp"
#include "test_support.hpp"

using namespace sparserl::reward;
using sparserl::reward::testing::children_of_self;
using sparserl::reward::testing::process_stat;
using sparserl::testing::has_substring;
using std::chrono::milliseconds;

namespace {

WorkerPoolConfig test_config(int compile_workers = 1) {
  WorkerPoolConfig c;
  c.worker_path = SPARSERL_WORKER_PATH;
  c.compile_workers = compile_workers;
  c.gpu_workers = 0;
  c.compile_deadline = milliseconds(10'000);
  c.test_mode = true;
  c.log = [](std::string_view) {};
  return c;
}

WorkerReply run(WorkerPool& pool, TestAction action, std::int64_t amount = 0, std::string path = {},
                std::optional<milliseconds> deadline = std::nullopt) {
  return pool.submit(WorkerRole::compile, TestRequest{action, amount, std::move(path)}, deadline)
      .get();
}

const TestResponse& test_response(const WorkerReply& reply) {
  REQUIRE(reply.response.has_value());
  REQUIRE(std::holds_alternative<TestResponse>(*reply.response));
  return std::get<TestResponse>(*reply.response);
}

int open_descriptor_count() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  REQUIRE(dir != nullptr);
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // the directory's own descriptor
}

// True while the process exists and is not a zombie.
bool running(pid_t pid) {
  const auto stat = process_stat(pid);
  return stat && stat->state != 'Z';
}

bool wait_until(const std::function<bool()>& condition, milliseconds limit = milliseconds(5000)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return condition();
}

// The reply failed with `kind`, its message saying each of `parts`.
void require_failed(const WorkerReply& reply, ErrorKind kind,
                    std::initializer_list<const char*> parts) {
  REQUIRE(reply.error == kind);
  for (const char* part : parts) REQUIRE_THAT(reply.message, has_substring(part));
}

// Made-up devices for the GPU workers of the pools made while it lives (the worker's test mode).
class TestGpus {
 public:
  explicit TestGpus(const char* count) { ::setenv("SPARSERL_WORKER_TEST_GPUS", count, 1); }
  ~TestGpus() { ::unsetenv("SPARSERL_WORKER_TEST_GPUS"); }
  TestGpus(const TestGpus&) = delete;
  TestGpus& operator=(const TestGpus&) = delete;
};

// The workers that served `count` GPU requests given at once, each holding its worker for 300 ms.
std::set<pid_t> workers_of_busy_requests(WorkerPool& pool, int count) {
  std::vector<std::future<WorkerReply>> busy;
  for (int i = 0; i < count; ++i) {
    busy.push_back(pool.submit(WorkerRole::gpu, TestRequest{TestAction::burn_cpu, 300, {}}));
  }
  std::set<pid_t> workers;
  for (auto& f : busy) workers.insert(f.get().worker_pid);
  return workers;
}

// Waits until the pool has exactly `workers` processes and they are exactly our children.
void require_settled(const WorkerPool& pool, std::size_t workers) {
  const bool settled = wait_until([&] {
    const auto pids = pool.worker_pids();
    if (pids.size() != workers) return false;
    return children_of_self() == std::set<pid_t>(pids.begin(), pids.end());
  });
  INFO("pool pids " << pool.worker_pids().size() << ", children " << children_of_self().size());
  REQUIRE(settled);
}

}  // namespace

TEST_CASE("A compile worker answers Hello and compiles with NVRTC", "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply good =
      pool.submit(WorkerRole::compile,
                  CompileRequest{"extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 1; }",
                                 "sm_80",
                                 {},
                                 "program.cu"})
          .get();
  REQUIRE(good.error == ErrorKind::none);
  const auto& ok = std::get<CompileResponse>(*good.response).result;
  REQUIRE(ok.ok);
  REQUIRE(ok.cubin.substr(1, 3) == "ELF");
  REQUIRE(good.worker_pid > 0);

  const WorkerReply bad =
      pool.submit(WorkerRole::compile, CompileRequest{"__global__ void k( {", "sm_80", {}, "p.cu"})
          .get();
  REQUIRE(bad.error == ErrorKind::none);
  const auto& broken = std::get<CompileResponse>(*bad.response).result;
  REQUIRE_FALSE(broken.ok);
  REQUIRE_THAT(broken.log, has_substring("error"));
  REQUIRE(bad.worker_pid == good.worker_pid);  // a compile error is no reason to replace a worker
}

TEST_CASE("Crashes are answered crash with the signal and the stderr tail", "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply segv = run(pool, TestAction::crash_segv);
  require_failed(segv, ErrorKind::crash, {"killed by signal 11 (SIGSEGV)"});

  const WorkerReply abrt = run(pool, TestAction::crash_abort);
  require_failed(abrt, ErrorKind::crash, {"SIGABRT"});
  REQUIRE(abrt.worker_pid != segv.worker_pid);  // a fresh worker

  const WorkerReply said = run(pool, TestAction::stderr_then_crash, 0, "last words before dying");
  require_failed(said, ErrorKind::crash, {"stderr: last words before dying"});

  const WorkerReply after = run(pool, TestAction::echo, 5, "still here");
  REQUIRE(after.error == ErrorKind::none);
  REQUIRE(test_response(after).text == "still here");
  REQUIRE(pool.stats().crashes == 3);
}

TEST_CASE("Early exits are answered crash with the exit status", "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply gone = run(pool, TestAction::exit_early, 3);
  require_failed(gone, ErrorKind::crash,
                 {"ended while serving TestRequest", "exited with status 3"});
  const WorkerReply zero = run(pool, TestAction::exit_early, 0);
  require_failed(zero, ErrorKind::crash, {"exited with status 0"});
  REQUIRE(run(pool, TestAction::echo).error == ErrorKind::none);
}

TEST_CASE("Hangs are answered timeout and the worker is replaced", "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply busy = run(pool, TestAction::hang_busy, 0, {}, milliseconds(150));
  require_failed(busy, ErrorKind::timeout, {"exceeded its deadline of 150 ms"});

  const WorkerReply sleeping = run(pool, TestAction::hang_sleep, 0, {}, milliseconds(150));
  REQUIRE(sleeping.error == ErrorKind::timeout);
  REQUIRE(sleeping.worker_pid != busy.worker_pid);

  const WorkerReply after = run(pool, TestAction::echo);
  REQUIRE(after.error == ErrorKind::none);
  REQUIRE(wait_until([&] { return !running(busy.worker_pid) && !running(sleeping.worker_pid); }));
  REQUIRE(pool.stats().timeouts == 2);
}

TEST_CASE("Floods of the protocol channel are protocol errors; stderr floods time out",
          "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply raw = run(pool, TestAction::flood_protocol, 0);
  require_failed(raw, ErrorKind::crash, {"protocol error: frame of", "exceeds the cap"});

  const WorkerReply framed = run(pool, TestAction::flood_protocol, 100);
  require_failed(framed, ErrorKind::crash, {"protocol error: unknown message type 120"});

  const WorkerReply err = run(pool, TestAction::flood_stderr, 0, {}, milliseconds(300));
  REQUIRE(err.error == ErrorKind::timeout);

  REQUIRE(run(pool, TestAction::echo).error == ErrorKind::none);
  REQUIRE(pool.stats().protocol_errors == 2);
}

TEST_CASE("Output on stdout cannot corrupt the protocol", "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply noisy = run(pool, TestAction::noise_stdout, 100'000);
  REQUIRE(noisy.error == ErrorKind::none);
  REQUIRE(test_response(noisy).value == 100'000);
  const WorkerReply again = run(pool, TestAction::echo, 1);
  REQUIRE(again.error == ErrorKind::none);
  REQUIRE(again.worker_pid == noisy.worker_pid);
}

TEST_CASE("A worker that announces its exit is replaced without charging anyone",
          "[reward][pool]") {
  WorkerPool pool(test_config());
  const WorkerReply last = run(pool, TestAction::reply_then_exit);
  REQUIRE(last.error == ErrorKind::none);
  REQUIRE(test_response(last).worker_exits);
  const WorkerReply next = run(pool, TestAction::echo);
  REQUIRE(next.error == ErrorKind::none);
  REQUIRE(next.worker_pid != last.worker_pid);
  REQUIRE(pool.stats().crashes == 0);
}

TEST_CASE("Workers are recycled after N requests", "[reward][pool]") {
  auto config = test_config();
  config.recycle_after = 3;
  WorkerPool pool(config);
  std::set<pid_t> pids;
  for (int i = 0; i < 7; ++i) {
    const WorkerReply r = run(pool, TestAction::echo, i);
    REQUIRE(r.error == ErrorKind::none);
    pids.insert(r.worker_pid);
  }
  REQUIRE(pids.size() == 3);
  REQUIRE(pool.stats().recycled == 2);
  require_settled(pool, 1);
}

TEST_CASE("The whole process group dies: no grandchild survives its worker", "[reward][pool]") {
  WorkerPool pool(test_config());
  SECTION("on a timeout") {
    const WorkerReply spawned = run(pool, TestAction::spawn_grandchild);
    const auto grandchild = static_cast<pid_t>(test_response(spawned).value);
    REQUIRE(grandchild > 0);
    REQUIRE(running(grandchild));
    REQUIRE(run(pool, TestAction::hang_sleep, 0, {}, milliseconds(100)).error ==
            ErrorKind::timeout);
    REQUIRE(wait_until([&] { return !running(grandchild); }));
  }
  SECTION("on a crash") {
    const auto grandchild =
        static_cast<pid_t>(test_response(run(pool, TestAction::spawn_grandchild)).value);
    REQUIRE(run(pool, TestAction::crash_segv).error == ErrorKind::crash);
    REQUIRE(wait_until([&] { return !running(grandchild); }));
  }
  SECTION("on shutdown") {
    const auto grandchild =
        static_cast<pid_t>(test_response(run(pool, TestAction::spawn_grandchild)).value);
    pool.shutdown();
    REQUIRE(wait_until([&] { return !running(grandchild); }));
    REQUIRE(children_of_self().empty());
  }
}

TEST_CASE("Workers run inside the sandbox they were given", "[reward][pool][sandbox]") {
  // A descriptor this process leaks without close-on-exec must not reach the worker.
  const auto canary = sparserl::testing::scratch_dir("sandbox_canary") / "canary";
  const int leaked = ::open(canary.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(leaked >= 0);

  std::vector<std::string> log;
  auto config = test_config();
  config.sandbox.cpu_seconds = 77;
  config.sandbox.file_size_bytes = 1 << 20;
  config.sandbox.open_files = 64;
  config.sandbox.address_space_bytes = std::uint64_t{8} << 30;
  config.log = [&log](std::string_view line) { log.emplace_back(line); };
  WorkerPool pool(config);
  const TestResponse report = test_response(run(pool, TestAction::report));
  ::close(leaked);

  auto limit = [&report](const std::string& name) {
    for (const auto& l : report.limits) {
      if (l.name == name) return l;
    }
    FAIL("no limit " << name);
    return ResourceLimit{};
  };
  REQUIRE(limit("core").soft == 0);
  REQUIRE(limit("cpu").soft == 77);
  REQUIRE(limit("cpu").hard == 78);  // SIGXCPU at the soft limit, SIGKILL a second later
  REQUIRE(limit("fsize").soft == 1 << 20);
  REQUIRE(limit("nofile").soft == 64);
  REQUIRE(limit("as").soft == std::uint64_t{8} << 30);

  int sockets = 0;
  for (const auto& d : report.descriptors) {
    INFO("fd " << d.fd << " -> " << d.target);
    REQUIRE(d.target.find("canary") == std::string::npos);
    if (d.fd > 2) {
      REQUIRE_THAT(d.target, has_substring("socket:"));
      ++sockets;
    }
  }
  REQUIRE(sockets == 2);  // the private protocol channel: requests in, responses out

  bool table = false, cpu_line = false;
  for (const auto& line : log) {
    table = table || line.find("sandbox of compile workers") != std::string::npos;
    cpu_line = cpu_line || line.find("cpu_seconds 77 -> RLIMIT_CPU 77 ok") != std::string::npos;
    REQUIRE(line.find("sandbox problem") == std::string::npos);
  }
  REQUIRE(table);
  REQUIRE(cpu_line);
}

TEST_CASE("Limits stop a worker that exceeds them", "[reward][pool][sandbox]") {
  auto config = test_config();
  config.sandbox.file_size_bytes = 1 << 20;
  config.sandbox.open_files = 64;
  config.sandbox.cpu_seconds = 1;
  WorkerPool pool(config);
  const auto dir = sparserl::testing::scratch_dir("sandbox_limits");

  const WorkerReply files = run(pool, TestAction::open_files, 1000);
  REQUIRE(files.error == ErrorKind::none);
  REQUIRE(test_response(files).value < 64);
  REQUIRE_THAT(test_response(files).text, has_substring("Too many open files"));

  const WorkerReply big = run(pool, TestAction::write_file, 4 << 20, (dir / "big").string());
  require_failed(big, ErrorKind::crash, {"SIGXFSZ"});

  const WorkerReply small = run(pool, TestAction::write_file, 1000, (dir / "small").string());
  REQUIRE(small.error == ErrorKind::none);
  REQUIRE(test_response(small).value == 1000);

  // One CPU second may take several wall seconds on a loaded machine: a generous deadline.
  const WorkerReply burn = run(pool, TestAction::burn_cpu, 60'000, {}, milliseconds(90'000));
  require_failed(burn, ErrorKind::crash, {"SIGXCPU"});
}

TEST_CASE("A worker dies with its parent", "[reward][pool][sandbox]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t middle = ::fork();
  REQUIRE(middle >= 0);
  if (middle == 0) {
    // The middle process owns a pool and dies abruptly, without any cleanup.
    ::close(fds[0]);
    pid_t worker = -1;
    {
      auto config = test_config();
      auto* pool = new WorkerPool(config);  // never destroyed
      worker =
          pool->submit(WorkerRole::compile, TestRequest{TestAction::echo, 0, ""}).get().worker_pid;
    }
    (void)!::write(fds[1], &worker, sizeof(worker));
    ::kill(::getpid(), SIGKILL);
  }
  ::close(fds[1]);
  pid_t worker = -1;
  REQUIRE(::read(fds[0], &worker, sizeof(worker)) == sizeof(worker));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(middle, &status, 0) == middle);
  REQUIRE(worker > 0);
  REQUIRE(wait_until([&] { return !running(worker); }));
}

TEST_CASE("Test requests are refused without --test-mode", "[reward][pool]") {
  auto config = test_config();
  config.test_mode = false;
  WorkerPool pool(config);
  const WorkerReply r = run(pool, TestAction::crash_segv);
  REQUIRE(r.error == ErrorKind::none);
  REQUIRE(std::holds_alternative<ErrorResponse>(*r.response));
  REQUIRE_THAT(std::get<ErrorResponse>(*r.response).message, has_substring("--test-mode"));
}

TEST_CASE("Without GPU workers GPU requests answer no_gpu", "[reward][pool]") {
  SECTION("disabled") {
    WorkerPool pool(test_config());
    const WorkerReply r = pool.submit(WorkerRole::gpu, GpuRequest{}).get();
    require_failed(r, ErrorKind::no_gpu, {"gpu_workers = 0"});
    REQUIRE(pool.gpu_info().devices.empty());
  }
  SECTION("probed") {
    std::vector<std::string> log;
    auto config = test_config();
    config.gpu_workers = -1;
    config.log = [&log](std::string_view line) { log.emplace_back(line); };
    WorkerPool pool(config);
    const GpuInfo info = pool.gpu_info();
    if (!info.devices.empty()) {
      // A GPU host: one GPU worker per device, each answering (whatever the runner's verdict).
      const auto n = static_cast<int>(info.devices.size());
      REQUIRE(wait_until([&] { return pool.gpu_worker_count() == n; }, milliseconds(60'000)));
      REQUIRE(info.devices.front().arch.rfind("sm_", 0) == 0);
      const WorkerReply r = pool.submit(WorkerRole::gpu, GpuRequest{}).get();
      INFO(r.message);
      REQUIRE(r.error == ErrorKind::none);
      REQUIRE(std::holds_alternative<GpuResponse>(*r.response));
      REQUIRE(run(pool, TestAction::echo).error == ErrorKind::none);
      for (const auto& line : log) REQUIRE(line.find("sandbox problem") == std::string::npos);
      return;
    }
    REQUIRE_FALSE(info.error.empty());
    const WorkerReply r = pool.submit(WorkerRole::gpu, GpuRequest{}).get();
    require_failed(r, ErrorKind::no_gpu, {"no GPU"});
    REQUIRE(pool.gpu_worker_count() == 0);
    require_settled(pool, 1);  // the probe is gone, the compile worker remains
  }
}

TEST_CASE("GPU requests go round every GPU worker, one device each", "[reward][pool]") {
  // Three made-up devices (test mode): the pool starts one GPU worker per device, each seeing its
  // own CUDA_VISIBLE_DEVICES, and requests - one at a time or many at once - reach all of them.
  const TestGpus gpus("3");
  auto config = test_config();
  config.gpu_workers = -1;
  WorkerPool pool(config);
  REQUIRE(pool.gpu_info().devices.size() == 3);
  CHECK(pool.gpu_info().devices[2].pci_bus_id == "test:2");
  REQUIRE(wait_until([&] { return pool.gpu_worker_count() == 3; }, milliseconds(20'000)));
  // Their startup (spawn to Hello) is counted, the probe's is not: it serves nothing.
  const WorkerPoolStats started = pool.stats();
  CHECK(started.gpu_started == 3);
  CHECK(started.started == 1 + 1 + 3);  // the compile worker, the probe, three GPU workers
  CHECK(started.gpu_startup_ms > 0);
  CHECK(started.gpu_startup_ms < 3 * 20'000.0);
  const auto device_of = [](const WorkerReply& r) { return test_response(r).text; };
  std::map<std::string, int> one_at_a_time;
  for (int i = 0; i < 6; ++i) {
    ++one_at_a_time[device_of(
        pool.submit(WorkerRole::gpu, TestRequest{TestAction::visible_devices, 0, {}}).get())];
  }
  CHECK(one_at_a_time == std::map<std::string, int>{{"0", 2}, {"1", 2}, {"2", 2}});
  // Together: three requests that each hold a worker for 300 ms land on three devices.
  CHECK(workers_of_busy_requests(pool, 3).size() == 3);
}

TEST_CASE("GPU workers start with the pool's cache limits", "[reward][pool]") {
  // (`--gpu-caches`: what each GPU worker's session keeps between requests.) A compile worker
  // gets none and reports the defaults.
  const TestGpus gpus("1");
  auto config = test_config();
  config.gpu_workers = 1;
  config.gpu_caches = {.resident_fraction = 0.3, .matrix_entries = 48, .matrix_bytes = 3ull << 30};
  WorkerPool pool(config);
  const auto limits_of = [&](WorkerRole role) {
    return test_response(pool.submit(role, TestRequest{TestAction::gpu_caches, 0, {}}).get()).text;
  };
  CHECK(limits_of(WorkerRole::gpu) == "0.29999999999999999,48,3221225472");
  CHECK(limits_of(WorkerRole::compile) == GpuCacheLimits{}.str());
}

TEST_CASE("A worker given bad cache limits stops with its usage, naming them", "[reward][pool]") {
  const std::string command =
      test_config().worker_path.string() + " --role gpu --gpu-caches 0.9,16,8589934592 2>&1";
  FILE* out = ::popen(command.c_str(), "r");
  REQUIRE(out != nullptr);
  std::string text;
  char buffer[512];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, out)) text.append(buffer, n);
  const int status = ::pclose(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(text, has_substring("--gpu-caches expects FRACTION,ENTRIES,BYTES"));
  CHECK_THAT(text, has_substring("got '0.9,16,8589934592'"));
}

TEST_CASE("More GPU workers than GPUs start with a warning; one per GPU starts without",
          "[reward][pool]") {
  const TestGpus gpus("2");
  for (const int workers : {-1, 2, 3}) {
    INFO("gpu_workers " << workers);
    std::vector<std::string> log;
    std::mutex guard;
    auto config = test_config();
    config.gpu_workers = workers;
    config.log = [&](std::string_view line) {
      const std::lock_guard<std::mutex> lock(guard);
      log.emplace_back(line);
    };
    WorkerPool pool(config);
    const int expected = workers < 0 ? 2 : workers;
    REQUIRE(wait_until([&] { return pool.gpu_worker_count() == expected; },
                       milliseconds(20'000)));
    const std::lock_guard<std::mutex> lock(guard);
    bool started = false, warned = false;
    for (const auto& line : log) {
      started = started || line.find("starting " + std::to_string(expected) + " GPU worker(s)") !=
                               std::string::npos;
      warned = warned || line.find("GPU workers share 2 GPU(s)") != std::string::npos;
    }
    CHECK(started);
    CHECK(warned == (expected > 2));
  }
}

TEST_CASE("One device's requests that come one at a time stay with its warm worker",
          "[reward][pool]") {
  // Two GPU workers on one made-up device: the second takes requests only while the first is busy,
  // so converted formats and baselines resident in the first are not converted again elsewhere.
  const TestGpus gpus("1");
  auto config = test_config();
  config.gpu_workers = 2;
  WorkerPool pool(config);
  REQUIRE(wait_until([&] { return pool.gpu_worker_count() == 2; }, milliseconds(20'000)));
  std::set<pid_t> sequential;
  for (int i = 0; i < 5; ++i) {
    sequential.insert(
        pool.submit(WorkerRole::gpu, TestRequest{TestAction::echo, i, {}}).get().worker_pid);
  }
  CHECK(sequential.size() == 1);
  CHECK(workers_of_busy_requests(pool, 2).size() == 2);
}

TEST_CASE("A worker that cannot start marks its role broken instead of respawning forever",
          "[reward][pool]") {
  auto config = test_config();
  SECTION("it exits at once") {
    config.worker_path = "/bin/false";
    WorkerPool pool(config);
    const WorkerReply r = run(pool, TestAction::echo);
    require_failed(r, ErrorKind::internal_error, {"fail to start", "exited with status 1"});
    REQUIRE(pool.stats().startup_failures == 3);
    REQUIRE(run(pool, TestAction::echo).error == ErrorKind::internal_error);
  }
  SECTION("it cannot be executed, and the failed child is reaped") {
    const auto path = sparserl::testing::scratch_dir("pool_not_executable") / "worker";
    std::ofstream(path) << "not a program\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    config.worker_path = path;
    WorkerPool pool(config);
    const WorkerReply r = run(pool, TestAction::echo);
    require_failed(r, ErrorKind::internal_error, {"cannot start"});
    REQUIRE(children_of_self().empty());
  }
  SECTION("it never says Hello") {
    const auto path = sparserl::testing::scratch_dir("pool_silent") / "worker";
    std::ofstream(path) << "#!/bin/sh\nexec sleep 60\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    config.worker_path = path;
    config.startup_deadline = milliseconds(200);
    WorkerPool pool(config);
    const WorkerReply r = run(pool, TestAction::echo);
    require_failed(r, ErrorKind::internal_error,
                   {"no Hello within the startup deadline of 200 ms"});
    require_settled(pool, 0);
  }
}

TEST_CASE("Bad configurations and oversize requests are refused", "[reward][pool]") {
  auto config = test_config();
  config.worker_path = "/nonexistent/sparserl-worker";
  REQUIRE_THROWS_WITH(WorkerPool(config), has_substring("worker_path"));
  config = test_config();
  config.compile_deadline = milliseconds(0);
  REQUIRE_THROWS_WITH(WorkerPool(config), has_substring("compile_deadline"));
  config = test_config();
  config.gpu_caches.resident_fraction = 0.9;
  REQUIRE_THROWS_WITH(WorkerPool(config), has_substring("gpu_caches: the resident fraction"));

  config = test_config();
  config.max_frame_bytes = 4096;
  WorkerPool pool(config);
  const WorkerReply r = run(pool, TestAction::echo, 0, std::string(10'000, 'x'));
  require_failed(r, ErrorKind::internal_error, {"exceeds the frame cap"});
  pool.shutdown();
  REQUIRE(run(pool, TestAction::echo).error == ErrorKind::internal_error);
}

TEST_CASE("submit is thread-safe and requests queue when every worker is busy", "[reward][pool]") {
  WorkerPool pool(test_config(2));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, &ok, t] {
      std::vector<std::future<WorkerReply>> futures;
      for (int i = 0; i < 25; ++i) {
        futures.push_back(
            pool.submit(WorkerRole::compile, TestRequest{TestAction::echo, t * 100 + i, ""}));
      }
      for (int i = 0; i < 25; ++i) {
        const WorkerReply r = futures[static_cast<std::size_t>(i)].get();
        if (r.error == ErrorKind::none &&
            std::get<TestResponse>(*r.response).value == t * 100 + i) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(ok == 100);
}

TEST_CASE("1000 mixed requests leave no zombie, no stray child and no descriptor behind",
          "[reward][pool][stress]") {
  const int fds_before = open_descriptor_count();
  REQUIRE(children_of_self().empty());
  {
    auto config = test_config(2);
    config.recycle_after = 50;
    WorkerPool pool(config);
    const std::string kernel = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 2; }";
    std::vector<std::pair<int, std::future<WorkerReply>>> futures;
    for (int i = 0; i < 1000; ++i) {
      const int kind = i % 10;
      switch (kind) {
        case 0:
          futures.emplace_back(
              kind, pool.submit(WorkerRole::compile, CompileRequest{kernel, "sm_80", {}, "p.cu"}));
          break;
        case 1:
          futures.emplace_back(
              kind, pool.submit(WorkerRole::compile, TestRequest{TestAction::crash_segv, 0, ""}));
          break;
        case 2:
          futures.emplace_back(
              kind, pool.submit(WorkerRole::compile, TestRequest{TestAction::hang_busy, 0, ""},
                                milliseconds(30)));
          break;
        case 3:
          futures.emplace_back(kind, pool.submit(WorkerRole::compile,
                                                 TestRequest{TestAction::flood_protocol, 0, ""}));
          break;
        case 4:
          futures.emplace_back(
              kind, pool.submit(WorkerRole::compile, TestRequest{TestAction::exit_early, 1, ""}));
          break;
        default:
          futures.emplace_back(
              kind, pool.submit(WorkerRole::compile, TestRequest{TestAction::echo, i, ""}));
      }
    }
    int wrong = 0;
    for (auto& [kind, future] : futures) {
      const WorkerReply r = future.get();
      const ErrorKind want = kind == 2                  ? ErrorKind::timeout
                             : (kind >= 1 && kind <= 4) ? ErrorKind::crash
                                                        : ErrorKind::none;
      if (r.error != want) {
        ++wrong;
        UNSCOPED_INFO("kind " << kind << ": " << to_string(r.error) << " " << r.message);
      }
    }
    REQUIRE(wrong == 0);
    const WorkerPoolStats s = pool.stats();
    REQUIRE(s.crashes == 300);
    REQUIRE(s.timeouts == 100);
    require_settled(pool, 2);
  }
  REQUIRE(children_of_self().empty());
  REQUIRE(open_descriptor_count() == fds_before);
}
