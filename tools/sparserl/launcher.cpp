// The rank launcher of `sparserl train --gpus N` (launcher.hpp). Plain fork and exec: the launcher
// runs no other thread (it starts before any session), builds every argument and environment before
// forking, and the child only moves into its own process group, redirects its output and executes.
// Signals are taken synchronously (blocked, then sigtimedwait) so that the loop that forwards them
// is also the loop that reaps the ranks.
#include "launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>

#include "sparserl/reward/worker_pool.hpp"
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/distributed.hpp"
#endif

namespace sparserl::tools {

namespace {

struct RankProcess {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // the wait status once it ended
  std::filesystem::path log;
};

int exit_code_of(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// The last `lines` lines of a file.
std::string tail_of(const std::filesystem::path& file, std::size_t lines) {
  std::ifstream in(file);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& line : last) out += "  | " + line + "\n";
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Forks rank `p.rank`: its own process group (a terminal's Ctrl-C reaches the launcher alone, which
// forwards it once), killed with the launcher, output to its log for ranks > 0.
void start_rank(RankProcess& p, std::vector<std::string> argv, std::vector<std::string> env,
                const sigset_t& original_mask) {
  int log_fd = -1;
  if (p.rank > 0) {
    log_fd = ::open(p.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      throw std::runtime_error("cannot write " + p.log.string() + ": " + std::strerror(errno));
    }
  }
  const std::vector<char*> args = pointers(argv);
  const std::vector<char*> envp = pointers(env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (log_fd >= 0) ::close(log_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, STDIN_FILENO);
    }
    // The rank receives what the launcher forwards, even when the launcher itself was started
    // with SIGINT ignored (a background job of a script).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &default_action, nullptr);
    ::sigaction(SIGTERM, &default_action, nullptr);
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    ::execve(args[0], args.data(), envp.data());
    const char message[] = "sparserl train: cannot execute the rank's program\n";
    (void)!::write(STDERR_FILENO, message, sizeof message - 1);
    ::_exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  p.pid = pid;
  p.running = true;
}

// `sig` to every rank still running; with `whole_group` to everything each rank started in its
// process group too (the evaluator's workers live in groups of their own and die with their rank).
void signal_all(std::vector<RankProcess>& ranks, int sig, bool whole_group = false) {
  for (const RankProcess& p : ranks) {
    if (p.running && p.pid > 1) ::kill(whole_group ? -p.pid : p.pid, sig);
  }
}

// Reaps every rank that has ended; returns the ranks that ended in this call.
std::vector<RankProcess*> reap(std::vector<RankProcess>& ranks) {
  std::vector<RankProcess*> ended;
  for (RankProcess& p : ranks) {
    if (!p.running) continue;
    int status = 0;
    const pid_t got = ::waitpid(p.pid, &status, WNOHANG);
    if (got == p.pid) {
      p.running = false;
      p.status = status;
      ended.push_back(&p);
    }
  }
  return ended;
}

bool any_running(const std::vector<RankProcess>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankProcess& p) { return p.running; });
}

// After a failure: SIGTERM to every rank still running, SIGKILL to those that outlive the grace.
void stop_the_others(std::vector<RankProcess>& ranks, std::chrono::milliseconds grace) {
  signal_all(ranks, SIGTERM, true);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (any_running(ranks) && std::chrono::steady_clock::now() < deadline) {
    ::usleep(20'000);
    (void)reap(ranks);
  }
  signal_all(ranks, SIGKILL, true);
  while (any_running(ranks)) {
    ::usleep(5'000);
    (void)reap(ranks);
  }
}

bool failed(int status, bool stopping) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    return code != 0 && !(stopping && (code == 130 || code == 143));
  }
  return true;
}

}  // namespace

std::vector<std::string> rank_environment(const std::vector<std::string>& caller, int rank,
                                          int ranks, int port, int cores) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  for (const std::string& entry : caller) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (env.emplace(name, entry.substr(eq + 1)).second) order.push_back(name);
  }
  const auto set = [&](const std::string& name, const std::string& value) {
    if (env.find(name) == env.end()) order.push_back(name);
    env[name] = value;
  };
  if (env.find("OMP_NUM_THREADS") == env.end()) {
    set("OMP_NUM_THREADS", std::to_string(std::max(1, cores / std::max(1, ranks))));
  }
  set("RANK", std::to_string(rank));
  set("WORLD_SIZE", std::to_string(ranks));
  set("LOCAL_RANK", std::to_string(rank));
  set("LOCAL_WORLD_SIZE", std::to_string(ranks));
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", std::to_string(port));
#if defined(SPARSERL_HAVE_AGENTS)
  for (const auto& [name, value] : agents::multicast_off_environment()) set(name, value);
#else
  throw std::logic_error("rank_environment: this build has no learned agents to train");
#endif
  std::vector<std::string> out;
  for (const std::string& name : order) out.push_back(name + "=" + env[name]);
  return out;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string error = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("no free TCP port on 127.0.0.1: " + error);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::vector<std::string> without_option(const std::vector<std::string>& argv,
                                        const std::string& option) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == option) {
      ++i;  // and its value
      continue;
    }
    if (argv[i].rfind(option + "=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  return out;
}

int launch_ranks(const LaunchPlan& plan) {
  std::ostream& say = plan.notices != nullptr ? *plan.notices : std::cerr;
  if (plan.argv.empty() || plan.ranks < 1) throw std::invalid_argument("launch_ranks: no program");
  std::filesystem::create_directories(plan.log_dir);
  std::vector<std::string> caller;
  for (char** e = environ; *e != nullptr; ++e) caller.emplace_back(*e);
  const int port = free_port();
  const int cores = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));

  // Signals are taken by sigtimedwait below, never by a handler.
  sigset_t waited, original;
  sigemptyset(&waited);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&waited, sig);
  // A hang-up (the terminal or ssh session went away) stops the ranks as SIGTERM does, unless the
  // launcher was started to outlive it (`nohup`: SIGHUP ignored). The ranks, in process groups of
  // their own, get no hang-up of their own.
  struct sigaction hup {};
  ::sigaction(SIGHUP, nullptr, &hup);
  if (hup.sa_handler != SIG_IGN) sigaddset(&waited, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &waited, &original);
  struct Restore {
    const sigset_t& mask;
    ~Restore() { ::sigprocmask(SIG_SETMASK, &mask, nullptr); }
  } restore{original};

  std::vector<RankProcess> ranks(static_cast<std::size_t>(plan.ranks));
  for (int r = 0; r < plan.ranks; ++r) {
    RankProcess& p = ranks[static_cast<std::size_t>(r)];
    p.rank = r;
    p.log = plan.log_dir / ("rank" + std::to_string(r) + ".log");
    try {
      start_rank(p, plan.argv, rank_environment(caller, r, plan.ranks, port, cores), original);
    } catch (const std::exception&) {
      stop_the_others(ranks, plan.grace);
      throw;
    }
  }
  say << "sparserl train: " << plan.ranks << " ranks on this host (MASTER_PORT " << port
      << "); ranks 1.." << plan.ranks - 1 << " write to " << plan.log_dir.string() << "\n"
      << std::flush;

  bool stopping = false;
  while (any_running(ranks)) {
    siginfo_t info{};
    const timespec tick{0, 200'000'000};
    const int sig = ::sigtimedwait(&waited, &info, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      stopping = true;
      // Each rank stops at the next step boundary (a second signal: at once).
      signal_all(ranks, sig == SIGHUP ? SIGTERM : sig);
    }
    for (RankProcess* p : reap(ranks)) {
      if (!failed(p->status, stopping)) continue;
      say << "sparserl train: rank " << p->rank << " of " << plan.ranks << " failed ("
          << reward::describe_wait_status(p->status) << "); stopping the other ranks\n";
      if (p->rank == 0) {
        say << "sparserl train: rank 0's output is above\n";
      } else {
        say << "sparserl train: the end of its log, " << p->log.string() << ":\n"
            << tail_of(p->log, 30);
      }
      say << std::flush;
      stop_the_others(ranks, plan.grace);
      return exit_code_of(p->status);
    }
  }
  return exit_code_of(ranks.front().status);
}

}  // namespace sparserl::tools
