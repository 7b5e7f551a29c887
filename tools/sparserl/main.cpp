// `sparserl`: the project's command line. Each command group lives in its own file and registers
// itself (cli.hpp); this file only hands the arguments to run_sparserl (cli.cpp), which runs the
// command named and turns failures into exit codes: 0 success, 1 a failure with a message naming
// the input, 2 bad arguments (usage printed). A fatal
// signal (a bug of ours, or of a library) prints a raw backtrace before the process dies the way
// it would have, so a crash in a long run leaves something to report.
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>

#include <string>
#include <vector>

#include "cli.hpp"

namespace {

// Only async-signal-safe calls: write(2), open/read of /proc/self/maps, backtrace_symbols_fd
// (backtrace() itself is primed in main so that its first call, which may allocate, does not happen
// inside the handler). The faulting instruction and the mapping that holds it are printed first:
// the unwinder cannot always step out of the signal frame (code without unwind tables).
void write_text(const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  (void)!write(STDERR_FILENO, text, n);
}

void write_hex(std::uintptr_t value) {
  char buffer[2 + 16 + 1];
  buffer[0] = '0';
  buffer[1] = 'x';
  for (int i = 0; i < 16; ++i) buffer[2 + i] = "0123456789abcdef"[(value >> (60 - 4 * i)) & 0xF];
  buffer[18] = '\0';
  write_text(buffer);
}

// Prints the line of /proc/self/maps whose range holds `address`.
void write_mapping_of(std::uintptr_t address) {
  const int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return;
  char line[512];
  std::size_t used = 0;
  char c = 0;
  while (read(fd, &c, 1) == 1) {
    if (c != '\n') {
      if (used + 1 < sizeof line) line[used++] = c;
      continue;
    }
    line[used] = '\0';
    std::uintptr_t low = 0, high = 0;
    std::size_t i = 0;
    for (; i < used && line[i] != '-'; ++i) low = low * 16 + static_cast<std::uintptr_t>(line[i] <= '9' ? line[i] - '0' : line[i] - 'a' + 10);
    for (++i; i < used && line[i] != ' '; ++i) high = high * 16 + static_cast<std::uintptr_t>(line[i] <= '9' ? line[i] - '0' : line[i] - 'a' + 10);
    if (address >= low && address < high) {
      write_text("  in ");
      write_text(line);
      write_text("\n");
      break;
    }
    used = 0;
  }
  close(fd);
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  write_text("sparserl: fatal signal ");
  write_text(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
             : sig == SIGILL ? "SIGILL" : "SIGABRT");
  write_text(", fault address ");
  write_hex(reinterpret_cast<std::uintptr_t>(info->si_addr));
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  write_text(", instruction ");
  write_hex(pc);
  write_text("\n");
  write_mapping_of(pc);
  // A jump to a bad address leaves the caller's return address on top of the stack.
  const auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  const std::uintptr_t top = *reinterpret_cast<const std::uintptr_t*>(sp);
  write_text("return address on the stack ");
  write_hex(top);
  write_text("\n");
  write_mapping_of(top);
#else
  (void)context;
  write_text("\n");
#endif
  write_text("backtrace (binary+offset):\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_crash_backtrace() {
  void* prime[1];
  (void)backtrace(prime, 1);
  // Its own stack, so that a stack overflow is reported too.
  static char alternate_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction action{};
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_backtrace();
  return sparserl::tools::run_sparserl(std::vector<std::string>(argv + 1, argv + argc));
}
