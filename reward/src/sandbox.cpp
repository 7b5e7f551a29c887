// SandboxLimits' key-value form, the child-side setup run between fork and exec, the worker's view
// of its own limits, and the pool's check of a worker's Hello against what it asked for
// (sandbox.hpp). The child-side code makes system calls only: the parent is multithreaded, and
// after fork the child must not touch the allocator or any lock.
#include "sparserl/reward/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <stdexcept>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace sparserl::reward {

namespace {

const std::vector<std::string_view>& known_keys() {
  static const std::vector<std::string_view> keys = {
      "core_bytes",          "cpu_seconds",     "file_size_bytes",   "open_files",
      "address_space_bytes", "die_with_parent", "close_descriptors", "cpu_affinity"};
  return keys;
}

[[noreturn]] void bad_value(std::string_view table, std::string_view key, std::string_view expected,
                            std::string_view got) {
  throw std::invalid_argument(std::string(table) + "." + std::string(key) + ": expected " +
                              std::string(expected) + ", got \"" + std::string(got) + "\"");
}

std::uint64_t parse_amount(std::string_view table, std::string_view key, std::string_view text) {
  constexpr std::string_view kExpected =
      "a non-negative integer with an optional suffix K, M, G or T, or \"unlimited\"";
  if (text == "unlimited") return SandboxLimits::kUnlimited;
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) bad_value(table, key, kExpected, text);
  std::string_view rest(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
  int shift = 0;
  if (rest == "K")
    shift = 10;
  else if (rest == "M")
    shift = 20;
  else if (rest == "G")
    shift = 30;
  else if (rest == "T")
    shift = 40;
  else if (!rest.empty())
    bad_value(table, key, kExpected, text);
  if (shift > 0 && value > (SandboxLimits::kUnlimited >> shift)) {
    bad_value(table, key, "a value below 2^64", text);
  }
  return value << shift;
}

bool parse_bool(std::string_view table, std::string_view key, std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  bad_value(table, key, "true or false", text);
}

std::vector<int> parse_cpus(std::string_view table, std::string_view key, std::string_view text) {
  constexpr std::string_view kExpected = "CPU numbers and ranges such as \"0,2,4-7\"";
  std::vector<int> cpus;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    pos = comma + 1;
    const std::size_t dash = item.find('-');
    auto number = [&](std::string_view s) {
      int v = -1;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || v < 0 ||
          v >= CPU_SETSIZE) {
        bad_value(table, key, kExpected, text);
      }
      return v;
    };
    if (dash == std::string_view::npos) {
      cpus.push_back(number(item));
    } else {
      const int lo = number(item.substr(0, dash));
      const int hi = number(item.substr(dash + 1));
      if (hi < lo) bad_value(table, key, kExpected, text);
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
  }
  return cpus;
}

std::string amount_text(std::uint64_t v) {
  return v == SandboxLimits::kUnlimited ? "unlimited" : std::to_string(v);
}

}  // namespace

SandboxLimits SandboxLimits::from_key_values(const std::map<std::string, std::string>& table,
                                             std::string_view table_name) {
  SandboxLimits out;
  for (const auto& [key, value] : table) {
    const auto& keys = known_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string list;
      for (auto k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
      throw std::invalid_argument(std::string(table_name) + "." + key +
                                  ": unknown key (known: " + list + ")");
    }
    if (key == "core_bytes")
      out.core_bytes = parse_amount(table_name, key, value);
    else if (key == "cpu_seconds")
      out.cpu_seconds = parse_amount(table_name, key, value);
    else if (key == "file_size_bytes")
      out.file_size_bytes = parse_amount(table_name, key, value);
    else if (key == "open_files")
      out.open_files = parse_amount(table_name, key, value);
    else if (key == "address_space_bytes") {
      out.address_space_bytes = parse_amount(table_name, key, value);
    } else if (key == "die_with_parent")
      out.die_with_parent = parse_bool(table_name, key, value);
    else if (key == "close_descriptors")
      out.close_descriptors = parse_bool(table_name, key, value);
    else if (key == "cpu_affinity")
      out.cpu_affinity = parse_cpus(table_name, key, value);
  }
  if (out.cpu_seconds == 0) {
    bad_value(table_name, "cpu_seconds", "at least 1 (0 would kill every worker at once)", "0");
  }
  if (out.open_files < 8) {
    bad_value(table_name, "open_files", "at least 8 (the worker needs its own descriptors)",
              std::to_string(out.open_files));
  }
  return out;
}

std::map<std::string, std::string> SandboxLimits::to_key_values() const {
  std::string cpus;
  for (int c : cpu_affinity) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  return {
      {"core_bytes", amount_text(core_bytes)},
      {"cpu_seconds", amount_text(cpu_seconds)},
      {"file_size_bytes", amount_text(file_size_bytes)},
      {"open_files", amount_text(open_files)},
      {"address_space_bytes", amount_text(address_space_bytes)},
      {"die_with_parent", die_with_parent ? "true" : "false"},
      {"close_descriptors", close_descriptors ? "true" : "false"},
      {"cpu_affinity", cpus},
  };
}

ChildSandbox plan_child_sandbox(const SandboxLimits& limits, WorkerRole role, int worker_index) {
  ChildSandbox plan;
  auto add = [&plan](int resource, std::uint64_t value, const char* step) {
    plan.limits[static_cast<std::size_t>(plan.limit_count++)] = {resource, value, step};
  };
  add(RLIMIT_CORE, limits.core_bytes, "setrlimit(RLIMIT_CORE)");
  add(RLIMIT_CPU, limits.cpu_seconds, "setrlimit(RLIMIT_CPU)");
  add(RLIMIT_FSIZE, limits.file_size_bytes, "setrlimit(RLIMIT_FSIZE)");
  add(RLIMIT_NOFILE, limits.open_files, "setrlimit(RLIMIT_NOFILE)");
  if (role == WorkerRole::compile)
    add(RLIMIT_AS, limits.address_space_bytes, "setrlimit(RLIMIT_AS)");
  plan.die_with_parent = limits.die_with_parent;
  plan.parent_pid = ::getpid();
  plan.close_descriptors = limits.close_descriptors;
  CPU_ZERO(&plan.cpus);
  if (!limits.cpu_affinity.empty()) {
    const int cpu =
        limits.cpu_affinity[static_cast<std::size_t>(worker_index) % limits.cpu_affinity.size()];
    CPU_SET(cpu, &plan.cpus);
    plan.pin_cpu = true;
  }
  return plan;
}

int apply_child_sandbox(const ChildSandbox& plan, const char** failed_step) noexcept {
  auto fail = [failed_step](const char* step) {
    *failed_step = step;
    return errno != 0 ? errno : EINVAL;
  };
  if (plan.die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return fail("prctl(PR_SET_PDEATHSIG)");
    // The parent may have died between fork and prctl: then nobody would ever send the signal.
    if (::getppid() != plan.parent_pid) ::_exit(0);
  }
  if (::setpgid(0, 0) != 0) return fail("setpgid");

  // Signals: a disposition of SIG_IGN and the blocked mask survive exec; a worker must die of
  // SIGXCPU, SIGXFSZ and SIGPIPE like any process.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);  // EINVAL for reserved
  }
  sigset_t none;
  sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return fail("sigprocmask");

  if (plan.close_descriptors) {
    // Marking instead of closing keeps Boost.Process' own close-on-exec error pipe working until
    // exec.
    bool done = false;
#ifdef SYS_close_range
    done = ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0;
#endif
    if (!done) {
      const long open_max = ::sysconf(_SC_OPEN_MAX);
      const long max_fd = std::min<long>(open_max > 0 ? open_max : 1024, 1 << 20);
      for (int fd = 3; fd < max_fd; ++fd) {
        const int flags = ::fcntl(fd, F_GETFD);
        if (flags >= 0 && (flags & FD_CLOEXEC) == 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
      }
    }
  }

  for (int i = 0; i < plan.limit_count; ++i) {
    const ChildSandbox::Limit& l = plan.limits[static_cast<std::size_t>(i)];
    struct rlimit current {};
    if (::getrlimit(l.resource, &current) != 0) return fail(l.step);
    rlim_t want =
        l.value == SandboxLimits::kUnlimited ? RLIM_INFINITY : static_cast<rlim_t>(l.value);
    // Without privileges a hard limit can only be lowered: never ask for more than it allows.
    if (current.rlim_max != RLIM_INFINITY && (want == RLIM_INFINITY || want > current.rlim_max)) {
      want = current.rlim_max;
    }
    // At the hard CPU limit the kernel sends SIGKILL, at the soft one SIGXCPU: a hard limit one
    // second higher lets the worker's death name its cause.
    rlim_t hard = want;
    if (l.resource == RLIMIT_CPU && want != RLIM_INFINITY &&
        (current.rlim_max == RLIM_INFINITY || want < current.rlim_max)) {
      hard = want + 1;
    }
    struct rlimit next {
      want, hard
    };
    if (::setrlimit(l.resource, &next) != 0) return fail(l.step);
  }

  if (plan.pin_cpu && ::sched_setaffinity(0, sizeof(plan.cpus), &plan.cpus) != 0) {
    return fail("sched_setaffinity");
  }
  return 0;
}

std::vector<ResourceLimit> current_limits() {
  const std::array<std::pair<int, const char*>, 5> resources = {{{RLIMIT_CORE, "core"},
                                                                 {RLIMIT_CPU, "cpu"},
                                                                 {RLIMIT_FSIZE, "fsize"},
                                                                 {RLIMIT_NOFILE, "nofile"},
                                                                 {RLIMIT_AS, "as"}}};
  std::vector<ResourceLimit> out;
  for (const auto& [resource, name] : resources) {
    struct rlimit l {};
    ::getrlimit(resource, &l);
    auto conv = [](rlim_t v) {
      return v == RLIM_INFINITY ? ResourceLimit::kUnlimited : static_cast<std::uint64_t>(v);
    };
    out.push_back({name, conv(l.rlim_cur), conv(l.rlim_max)});
  }
  return out;
}

std::vector<OpenDescriptor> open_descriptors() {
  std::vector<OpenDescriptor> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    int fd = -1;
    const std::string_view name(entry->d_name);
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (ec != std::errc() || ptr != name.data() + name.size() || fd == own) continue;
    std::array<char, 512> target{};
    const std::string link = "/proc/self/fd/" + std::string(name);
    const ssize_t n = ::readlink(link.c_str(), target.data(), target.size() - 1);
    out.push_back({fd, n > 0 ? std::string(target.data(), static_cast<std::size_t>(n)) : ""});
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.fd < b.fd; });
  return out;
}

std::vector<std::int32_t> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<std::int32_t> out;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

SandboxCheck check_sandbox(const SandboxLimits& limits, const Hello& hello) {
  SandboxCheck out;
  auto find = [&hello](std::string_view name) -> const ResourceLimit* {
    for (const auto& l : hello.limits) {
      if (l.name == name) return &l;
    }
    return nullptr;
  };
  auto compare = [&](std::string_view key, std::string_view name, std::uint64_t asked) {
    const ResourceLimit* got = find(name);
    std::string upper(name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string line = std::string(key) + " " + amount_text(asked) + " -> RLIMIT_" + upper + " ";
    if (got == nullptr) {
      line += "not reported";
      out.problems.push_back(line);
    } else {
      line += amount_text(got->soft);
      if (got->soft > asked) {
        line += " LOOSER THAN ASKED";
        out.problems.push_back(line);
      } else if (got->soft < asked) {
        line += " (capped by the inherited hard limit)";
      } else {
        line += " ok";
      }
    }
    out.lines.push_back(std::move(line));
  };
  compare("core_bytes", "core", limits.core_bytes);
  compare("cpu_seconds", "cpu", limits.cpu_seconds);
  compare("file_size_bytes", "fsize", limits.file_size_bytes);
  compare("open_files", "nofile", limits.open_files);
  if (hello.role == WorkerRole::compile) {
    compare("address_space_bytes", "as", limits.address_space_bytes);
  } else {
    out.lines.emplace_back("address_space_bytes not applied to GPU workers");
  }

  const bool own_group = hello.pgid == hello.pid;
  out.lines.push_back("process group " + std::to_string(hello.pgid) +
                      (own_group ? " (own) ok" : ""));
  if (!own_group) out.problems.push_back("worker is not the leader of its own process group");

  if (limits.die_with_parent) {
    const bool ok = hello.parent_death_signal == SIGKILL;
    out.lines.push_back("die_with_parent -> PR_GET_PDEATHSIG " +
                        std::to_string(hello.parent_death_signal) + (ok ? " ok" : ""));
    if (!ok) out.problems.emplace_back("parent-death signal is not SIGKILL");
  }

  if (limits.close_descriptors) {
    std::string fds;
    bool extra = false;
    for (const auto& d : hello.descriptors) {
      fds += (fds.empty() ? "" : " ") + std::to_string(d.fd);
      if (d.fd > 2) {
        extra = true;
        out.problems.push_back("inherited descriptor " + std::to_string(d.fd) + " -> " + d.target);
      }
    }
    out.lines.push_back("descriptors at start: " + fds + (extra ? "" : " ok"));
  }

  if (!limits.cpu_affinity.empty()) {
    std::string cpus;
    for (int c : hello.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
    const bool pinned = hello.cpus.size() == 1;
    out.lines.push_back("cpu_affinity -> " + cpus + (pinned ? " ok" : ""));
    if (!pinned) out.problems.push_back("worker is not pinned to one CPU (runs on " + cpus + ")");
  }
  return out;
}

}  // namespace sparserl::reward
