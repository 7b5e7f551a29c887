// `sparserl-worker --role compile|gpu [--test-mode] [--max-frame BYTES] [--gpu-caches F,N,B]`: one
// evaluator worker process. The pool starts it inside the sandbox (sandbox.hpp) with a socket on
// stdin and stdout and a pipe on stderr. First the worker moves its protocol channel onto private
// descriptors and points fd 0 and 1 at /dev/null, so that nothing else in the process (device
// printf, a library's banner) can read requests or corrupt responses; stderr stays with the pool,
// which keeps its last few KB for crash reports. Then it sends Hello (role, pid, the limits it
// really runs under, the descriptors it inherited, the GPUs it sees) and serves one request at a
// time until Shutdown or end of input. Compile workers run NVRTC (compiler.hpp); GPU workers run
// gpu/gpu_runner.hpp, with the cache limits of --gpu-caches, and exit after a CUDA error that may
// have poisoned their context.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "gpu/gpu_runner.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/protocol.hpp"
#include "sparserl/reward/sandbox.hpp"
#include "worker/worker_io.hpp"

namespace {

using namespace sparserl::reward;

constexpr int kExitUsage = 2;
constexpr int kExitProtocol = 3;
constexpr int kExitOutOfMemory = 4;
constexpr int kExitInternal = 5;

[[noreturn]] void usage(std::string_view why) {
  std::fprintf(stderr,
               "sparserl-worker: %.*s\n"
               "usage: sparserl-worker --role compile|gpu [--test-mode] [--max-frame BYTES]\n"
               "                       [--gpu-caches FRACTION,ENTRIES,BYTES]\n"
               "Started by the evaluator's worker pool; speaks the length-prefixed protocol of\n"
               "sparserl/reward/protocol.hpp on stdin/stdout.\n",
               static_cast<int>(why.size()), why.data());
  std::exit(kExitUsage);
}

struct Options {
  WorkerRole role = WorkerRole::compile;
  bool test_mode = false;
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;
};

Options parse_options(int argc, char** argv) {
  Options o;
  bool have_role = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--test-mode") {
      o.test_mode = true;
    } else if (a == "--role" && i + 1 < argc) {
      auto role = parse_worker_role(argv[++i]);
      if (!role) usage("--role must be compile or gpu");
      o.role = *role;
      have_role = true;
    } else if (a == "--max-frame" && i + 1 < argc) {
      const std::string_view v = argv[++i];
      std::size_t n = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || ptr != v.data() + v.size() || n < 1024) {
        usage("--max-frame expects a byte count of at least 1024");
      }
      o.max_frame_bytes = n;
    } else if (a == "--gpu-caches" && i + 1 < argc) {
      // The GPU session's resident share of the device and its matrix store (GpuCacheLimits).
      const std::string_view v = argv[++i];
      const auto limits = GpuCacheLimits::parse(v);
      if (!limits) {
        usage("--gpu-caches expects FRACTION,ENTRIES,BYTES (fraction in (0, 0.45], entries >= 1, "
              "bytes >= 1 MiB), got '" + std::string(v) + "'");
      }
      gpu::set_cache_limits(*limits);
    } else {
      usage("unknown argument '" + std::string(a) + "'");
    }
  }
  if (!have_role) usage("--role is required");
  return o;
}

// Moves the protocol off fd 0 and 1. Returns the private channel.
worker::Channel take_protocol_channel(std::size_t max_frame_bytes) {
  worker::Channel ch;
  ch.max_frame_bytes = max_frame_bytes;
  ch.in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  ch.out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (ch.in < 0 || ch.out < 0 || null < 0 || ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0) {
    std::fprintf(stderr, "sparserl-worker: cannot set up the protocol channel: %s\n",
                 std::strerror(errno));
    std::exit(kExitInternal);
  }
  ::close(null);
  return ch;
}

Hello make_hello(const Options& o, std::vector<OpenDescriptor> inherited) {
  Hello h;
  h.role = o.role;
  h.pid = static_cast<std::int32_t>(::getpid());
  h.pgid = static_cast<std::int32_t>(::getpgrp());
  int sig = 0;
  if (::prctl(PR_GET_PDEATHSIG, &sig) == 0) h.parent_death_signal = sig;
  h.test_mode = o.test_mode;
  h.limits = current_limits();
  h.descriptors = std::move(inherited);
  h.cpus = allowed_cpus();
  if (o.role == WorkerRole::compile) {
    h.compiler_version = "nvrtc " + nvrtc_version();
  } else {
    std::optional<GpuInfo> made_up = o.test_mode ? worker::test_gpus() : std::nullopt;
    h.gpu = made_up ? *made_up : gpu::probe_gpus();
  }
  return h;
}

void serve(const Options& o, const worker::Channel& ch) {
  // A hung candidate kernel (the request's wait limit): answer and leave at once, without the
  // runtime's teardown or any cudaFree, which would wait for it; the driver stops the kernel as the
  // process ends, and the pool starts a fresh worker (the answer says this one exits).
  gpu::set_hung_kernel_handler([&ch](const EvalResult& hung) {
    ch.send(GpuResponse{hung, true});
    std::_Exit(0);
  });
  std::vector<std::uint8_t> payload;
  for (;;) {
    if (!read_frame(ch.in, payload, ch.max_frame_bytes)) return;  // the pool closed the channel
    Message request = decode_payload(payload);
    if (std::holds_alternative<Shutdown>(request)) return;
    if (auto* c = std::get_if<CompileRequest>(&request)) {
      if (o.role != WorkerRole::compile) {
        ch.send(ErrorResponse{"a gpu worker does not compile"});
        continue;
      }
      ch.send(CompileResponse{compile(*c)});
    } else if (auto* g = std::get_if<GpuRequest>(&request)) {
      if (o.role != WorkerRole::gpu) {
        ch.send(ErrorResponse{"a compile worker does not run kernels"});
        continue;
      }
      gpu::GpuRunOutcome outcome = gpu::run_gpu_request(*g);
      ch.send(GpuResponse{std::move(outcome.result), outcome.must_exit});
      if (outcome.must_exit) return;
    } else if (auto* t = std::get_if<TestRequest>(&request)) {
      if (!o.test_mode) {
        ch.send(
            ErrorResponse{"test requests are refused: the worker was not started with "
                          "--test-mode"});
        continue;
      }
      worker::run_test_request(ch, *t);
    } else {
      ch.send(ErrorResponse{"unexpected message " + std::string(to_string(message_type(request))) +
                            " sent to a worker"});
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a descriptor of its own: what the sandbox let through.
  std::vector<OpenDescriptor> inherited = open_descriptors();
  const Options options = parse_options(argc, argv);
  const worker::Channel channel = take_protocol_channel(options.max_frame_bytes);
  try {
    channel.send(make_hello(options, std::move(inherited)));
    serve(options, channel);
  } catch (const ProtocolError& e) {
    std::fprintf(stderr, "sparserl-worker: protocol error: %s\n", e.what());
    return kExitProtocol;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sparserl-worker: out of memory (address-space limit?)\n");
    return kExitOutOfMemory;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparserl-worker: internal error: %s\n", e.what());
    return kExitInternal;
  }
  return 0;
}
