// The worker's test mode (`--test-mode`): on a TestRequest it misbehaves for real - crashes, hangs,
// floods its channels, exits early, leaves a grandchild behind, runs into its limits - so that CPU
// tests exercise every failure path of the pool with the real process machinery. Without the flag
// the worker refuses TestRequests (main.cpp).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_runner.hpp"
#include "sparserl/reward/sandbox.hpp"
#include "worker/worker_io.hpp"

namespace sparserl::reward::worker {

namespace {

[[noreturn]] void spin_forever() {
  volatile std::uint64_t n = 0;
  for (;;) n = n + 1;
}

[[noreturn]] void sleep_forever() {
  for (;;) ::pause();
}

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

std::optional<GpuInfo> test_gpus() {
  const char* text = std::getenv("SPARSERL_WORKER_TEST_GPUS");
  if (text == nullptr || *text == '\0') return std::nullopt;
  const int count = std::atoi(text);
  GpuInfo info;
  for (int d = 0; d < count; ++d) {
    GpuDevice device;
    device.ordinal = d;
    device.name = "test GPU";
    device.arch = "sm_90";
    device.cc_major = 9;
    device.pci_bus_id = "test:" + std::to_string(d);
    info.devices.push_back(std::move(device));
  }
  if (info.devices.empty()) info.error = "SPARSERL_WORKER_TEST_GPUS = " + std::string(text);
  return info;
}

void run_test_request(const Channel& channel, const TestRequest& request) {
  TestResponse response;
  response.action = request.action;
  switch (request.action) {
    case TestAction::echo:
      response.value = request.amount;
      response.text = request.path;
      break;
    case TestAction::crash_segv:
      ::raise(SIGSEGV);
      break;
    case TestAction::crash_abort:
      std::abort();
    case TestAction::hang_busy:
      spin_forever();
    case TestAction::hang_sleep:
      sleep_forever();
    case TestAction::flood_protocol: {
      // amount 0: raw bytes (their "length prefix" is far over any cap); amount > 0: a plausible
      // length prefix, then garbage that never decodes.
      std::vector<char> junk(std::size_t{64} * 1024, static_cast<char>(0xab));
      if (request.amount > 0) {
        const auto n = static_cast<std::uint32_t>(request.amount);
        const char prefix[4] = {static_cast<char>(n), static_cast<char>(n >> 8),
                                static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
        write_all(channel.out, prefix, 4);
        std::fill(junk.begin(), junk.end(), 'x');
      }
      for (;;) {
        if (::write(channel.out, junk.data(), junk.size()) < 0 && errno != EINTR) sleep_forever();
      }
    }
    case TestAction::flood_stderr: {
      const std::string line(4096, 'E');
      for (;;) {
        if (::write(2, line.data(), line.size()) < 0 && errno != EINTR) sleep_forever();
      }
    }
    case TestAction::noise_stdout: {
      // Both through stdio and straight to fd 1, as device printf and libraries would.
      std::string noise(static_cast<std::size_t>(std::max<std::int64_t>(request.amount, 0)), 'N');
      std::fwrite(noise.data(), 1, noise.size(), stdout);
      std::fflush(stdout);
      write_all(1, noise.data(), noise.size());
      response.value = request.amount;
      break;
    }
    case TestAction::exit_early:
      std::_Exit(static_cast<int>(request.amount));
    case TestAction::reply_then_exit:
      response.worker_exits = true;
      channel.send(response);
      std::_Exit(0);
    case TestAction::spawn_grandchild: {
      const pid_t child = ::fork();
      if (child == 0)
        sleep_forever();  // keeps the protocol descriptors open, like an escapee would
      response.value = child;
      if (child < 0) response.text = std::strerror(errno);
      break;
    }
    case TestAction::report:
      response.descriptors = open_descriptors();
      response.limits = current_limits();
      break;
    case TestAction::write_file: {
      const int fd = ::open(request.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        response.text = std::strerror(errno);
        break;
      }
      const std::vector<char> block(1 << 16, 'F');
      std::int64_t written = 0;
      while (written < request.amount) {
        const auto n = static_cast<std::size_t>(std::min<std::int64_t>(
            request.amount - written, static_cast<std::int64_t>(block.size())));
        const ssize_t w = ::write(fd, block.data(), n);  // SIGXFSZ past the file-size limit
        if (w < 0) {
          if (errno == EINTR) continue;
          response.text = std::strerror(errno);
          break;
        }
        written += w;
      }
      ::close(fd);
      response.value = written;
      break;
    }
    case TestAction::open_files: {
      std::vector<int> fds;
      for (std::int64_t i = 0; i < request.amount; ++i) {
        const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          response.text = std::strerror(errno);
          break;
        }
        fds.push_back(fd);
      }
      response.value = static_cast<std::int64_t>(fds.size());
      for (int fd : fds) ::close(fd);
      break;
    }
    case TestAction::burn_cpu: {
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(request.amount);
      volatile std::uint64_t n = 0;
      while (std::chrono::steady_clock::now() < until) n = n + 1;
      response.value = request.amount;
      break;
    }
    case TestAction::stderr_then_crash:
      write_all(2, request.path.data(), request.path.size());
      ::raise(SIGSEGV);
      break;
    case TestAction::visible_devices: {
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      response.text = visible != nullptr ? visible : "";
      break;
    }
    case TestAction::gpu_caches:
      response.text = gpu::cache_limits().str();
      break;
  }
  channel.send(response);
}

}  // namespace sparserl::reward::worker
