// The sandbox every `sparserl-worker` runs in, nsjail style: a declarative SandboxLimits with
// explicit defaults (the `[sandbox]` table of an experiment config maps onto it key by key),
// applied one limit at a time in the child between fork and exec, reported back by the worker in
// its Hello (what it really runs under), and checked and logged by the pool. What a worker gets:
//
//   core dumps       RLIMIT_CORE = core_bytes (0: a crashing NVRTC or kernel writes no core file)
//   CPU time         RLIMIT_CPU = cpu_seconds over the worker's lifetime (a backstop behind the
//                    per-request deadlines; SIGXCPU at the limit, the hard limit one second later)
//   file size        RLIMIT_FSIZE = file_size_bytes (SIGXFSZ on a larger write)
//   open files       RLIMIT_NOFILE = open_files
//   address space    RLIMIT_AS = address_space_bytes, compile workers only: CUDA reserves huge
//   virtual
//                    ranges, so a GPU worker never gets one
//   parent death     PR_SET_PDEATHSIG = SIGKILL, and the child exits at once if its parent already
//   died descriptors      every descriptor above 2 is closed at exec (marked close-on-exec in the
//   child),
//                    so a worker inherits only stdin, stdout and stderr
//   process group    its own (setpgid), so that the pool kills it and everything it spawned at once
//   signals          every signal back to its default disposition and unblocked
//   CPU affinity     optional: worker i of a role pinned to cpu_affinity[i % size]
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/protocol.hpp"

namespace sparserl::reward {

struct SandboxLimits {
  static constexpr std::uint64_t kUnlimited = ResourceLimit::kUnlimited;

  std::uint64_t core_bytes = 0;
  std::uint64_t cpu_seconds = 3600;
  std::uint64_t file_size_bytes = std::uint64_t{64} << 20;
  std::uint64_t open_files = 256;
  std::uint64_t address_space_bytes = std::uint64_t{16} << 30;  // compile workers only
  bool die_with_parent = true;
  bool close_descriptors = true;  // false only to debug a worker by hand
  std::vector<int> cpu_affinity;  // empty: no pinning

  // The `[sandbox]` table as key -> value text. Keys (every one optional; the defaults above):
  //   core_bytes, cpu_seconds, file_size_bytes, open_files, address_space_bytes
  //       a non-negative integer with an optional binary suffix K, M, G or T ("64M"), or
  //       "unlimited"
  //   die_with_parent, close_descriptors   "true" or "false"
  //   cpu_affinity   CPU numbers and ranges, "0,2,4-7"; "" for none
  // Unknown keys and bad values throw std::invalid_argument naming "<table>.<key>" and what was
  // expected.
  static SandboxLimits from_key_values(const std::map<std::string, std::string>& table,
                                       std::string_view table_name = "sandbox");
  // The inverse: every key, in the spelling from_key_values reads.
  [[nodiscard]] std::map<std::string, std::string> to_key_values() const;

  friend bool operator==(const SandboxLimits&, const SandboxLimits&) = default;
};

// What one child is set up with, computed in the parent: between fork and exec the child may only
// make system calls (another thread of the parent may hold the allocator's lock at fork time).
struct ChildSandbox {
  struct Limit {
    int resource = 0;
    std::uint64_t value = 0;
    const char* step = "";  // "setrlimit(RLIMIT_CPU)", for the error message
  };
  std::array<Limit, 5> limits{};
  int limit_count = 0;
  bool die_with_parent = true;
  pid_t parent_pid = 0;
  bool close_descriptors = true;
  bool pin_cpu = false;
  cpu_set_t cpus{};
};

ChildSandbox plan_child_sandbox(const SandboxLimits& limits, WorkerRole role, int worker_index);

// Applies the plan in the child (async-signal-safe: system calls only). Returns 0, or the errno of
// the step that failed with *failed_step naming it. A parent that already died makes the child
// _exit(0).
int apply_child_sandbox(const ChildSandbox& plan, const char** failed_step) noexcept;

// The worker's side: what this process really runs under, for its Hello and test reports.
std::vector<ResourceLimit> current_limits();
std::vector<OpenDescriptor> open_descriptors();
std::vector<std::int32_t> allowed_cpus();

// The pool's side: one line per limit comparing what was asked with what the worker reports
// ("cpu_seconds 3600 -> RLIMIT_CPU 3600 ok"), and the deviations among them (a limit looser than
// asked, a missing parent-death signal, a foreign process group, an inherited descriptor).
struct SandboxCheck {
  std::vector<std::string> lines;
  std::vector<std::string> problems;
};
SandboxCheck check_sandbox(const SandboxLimits& limits, const Hello& hello);

}  // namespace sparserl::reward
