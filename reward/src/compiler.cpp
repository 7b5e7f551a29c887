// NVRTC in-process: create, compile with the fixed options plus the request's, read the log and the
// cubin, and parse ptxas' verbose report (NVRTC 12 and 13 pass --ptxas-options=-v through and put
// the report in the program log) for the per-kernel figures. Also the byte encoding of a
// CompileResult, shared by the disk cache and the worker protocol.
#include "sparserl/reward/compiler.hpp"

#include "sparserl/reward/cubin_info.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <sstream>

namespace sparserl::reward {
namespace {

// A hostile program can make NVRTC print megabytes of errors; the reward needs the first ones.
constexpr std::size_t kMaxLogBytes = 64 * 1024;

std::string truncate_log(std::string log) {
  if (log.size() > kMaxLogBytes) {
    const std::size_t dropped = log.size() - kMaxLogBytes;
    log.resize(kMaxLogBytes);
    log += "\n[... " + std::to_string(dropped) + " more bytes of compiler log dropped]\n";
  }
  return log;
}

// The integer that ends (before blanks) at position `at` of the line, or -1.
long long number_ending_at(std::string_view line, std::size_t at) {
  std::size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  std::size_t start = end;
  while (start > 0 && line[start - 1] >= '0' && line[start - 1] <= '9') --start;
  if (start == end) return -1;
  long long value = 0;
  for (std::size_t i = start; i < end && value < (1LL << 40); ++i)
    value = value * 10 + (line[i] - '0');
  return value;
}

// "... 1024 bytes smem" -> 1024: the integer right before `suffix`, or -1.
long long number_before(std::string_view line, std::string_view suffix) {
  const auto at = line.find(suffix);
  if (at == std::string_view::npos) return -1;
  return number_ending_at(line, at);
}

// The quoted name after `marker`: "Compiling entry function 'spmv' for 'sm_90'" -> spmv.
std::string quoted_after(std::string_view line, std::string_view marker) {
  const auto at = line.find(marker);
  if (at == std::string_view::npos) return {};
  const auto open = line.find('\'', at + marker.size());
  if (open == std::string_view::npos) return {};
  const auto close = line.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return std::string(line.substr(open + 1, close - open - 1));
}

int clamp_int(long long v) {
  return static_cast<int>(std::clamp<long long>(v, 0, std::numeric_limits<int>::max()));
}

// --- encoding -------------------------------------------------------------------------------

constexpr std::string_view kMagic = "sparserl-compile-result-v1";

class Writer {
 public:
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void field(const std::string& s) { str(s); }
  void field(int v) { i64(v); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u64(std::uint64_t& v) {
    if (in_.size() - pos_ < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i)
      v |= std::uint64_t{static_cast<unsigned char>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    return true;
  }
  bool i64(std::int64_t& v) {
    std::uint64_t u = 0;
    if (!u64(u)) return false;
    v = static_cast<std::int64_t>(u);
    return true;
  }
  bool i32(int& v) {
    std::int64_t w = 0;
    if (!i64(w) || w < std::numeric_limits<int>::min() || w > std::numeric_limits<int>::max()) {
      return false;
    }
    v = static_cast<int>(w);
    return true;
  }
  bool f64(double& v) {
    std::uint64_t u = 0;
    if (!u64(u)) return false;
    v = std::bit_cast<double>(u);
    return true;
  }
  bool str(std::string& s) {
    std::uint64_t n = 0;
    if (!u64(n) || n > in_.size() - pos_) return false;
    s.assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool field(std::string& s) { return str(s); }
  bool field(int& v) { return i32(v); }
  [[nodiscard]] bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

// A KernelFigures' fields in their encoded order: serialize and deserialize_compile_result walk
// this one list, `field` writing or reading each (false: stop, the bytes are malformed).
template <class Figures, class Field>  // Figures: KernelFigures or const KernelFigures
bool each_kernel_field(Figures& k, Field&& field) {
  return field(k.name) && field(k.registers) && field(k.static_smem_bytes) &&
         field(k.local_bytes) && field(k.spill_store_bytes) && field(k.spill_load_bytes) &&
         field(k.const_bytes);
}

}  // namespace

const KernelFigures* CompileResult::kernel(std::string_view name) const {
  for (const KernelFigures& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

CompileFigures CompileResult::figures() const {
  CompileFigures f;
  f.compile_ms = compile_ms;
  f.arch = arch;
  f.log = log;
  f.cached = cached;
  for (const KernelFigures& k : kernels) {
    f.max_registers = std::max(f.max_registers, k.registers);
    f.static_smem_bytes = std::max(f.static_smem_bytes, k.static_smem_bytes);
    f.local_bytes = std::max(f.local_bytes, k.local_bytes);
    f.spill_bytes += k.spill_store_bytes + k.spill_load_bytes;
  }
  return f;
}

std::vector<std::string> nvrtc_options(const CompileRequest& request) {
  std::vector<std::string> options = {"--gpu-architecture=" + request.arch, "-std=c++17",
                                      "--ptxas-options=-v"};
  options.insert(options.end(), request.options.begin(), request.options.end());
  return options;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

PtxasReport parse_ptxas_report(std::string_view log) {
  PtxasReport report;
  KernelFigures* entry = nullptr;    // the entry function the report is describing
  bool properties_of_entry = false;  // the next "stack frame" line belongs to it
  std::size_t start = 0;
  while (start <= log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(start, end - start);
    start = end + 1;
    if (line.find("ptxas") == std::string_view::npos) continue;
    if (line.find("Compiling entry function") != std::string_view::npos) {
      report.kernels.push_back({});
      entry = &report.kernels.back();
      entry->name = quoted_after(line, "Compiling entry function");
      properties_of_entry = false;
      continue;
    }
    if (line.find("Function properties for") != std::string_view::npos) {
      const auto name_at = line.find("Function properties for") + 23;
      std::string_view name = line.substr(name_at);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.remove_suffix(1);
      properties_of_entry = entry != nullptr && name == entry->name;
      continue;
    }
    if (line.find("bytes stack frame") != std::string_view::npos) {
      if (properties_of_entry) {
        entry->local_bytes = clamp_int(number_before(line, "bytes stack frame"));
        entry->spill_store_bytes = clamp_int(number_before(line, "bytes spill stores"));
        entry->spill_load_bytes = clamp_int(number_before(line, "bytes spill loads"));
      }
      properties_of_entry = false;
      continue;
    }
    if (line.find("Used ") != std::string_view::npos &&
        line.find("registers") != std::string_view::npos) {
      if (entry == nullptr) continue;
      entry->registers = clamp_int(number_before(line, "registers"));
      entry->static_smem_bytes = clamp_int(number_before(line, "bytes smem"));
      // Constant banks: "352 bytes cmem[0], 8 bytes cmem[2]" (older ptxas prints them).
      int cmem = 0;
      for (std::size_t at = line.find("bytes cmem["); at != std::string_view::npos;
           at = line.find("bytes cmem[", at + 1)) {
        cmem += clamp_int(number_ending_at(line, at));
      }
      entry->const_bytes = cmem;
      continue;
    }
    if (line.find("bytes gmem") != std::string_view::npos) {
      report.global_bytes =
          std::max(report.global_bytes, clamp_int(number_before(line, "bytes gmem")));
    }
  }
  return report;
}

CompileResult compile(const CompileRequest& request) {
  CompileResult result;
  result.arch = request.arch;
  result.nvrtc_version = nvrtc_version();
  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  nvrtcResult status = nvrtcCreateProgram(&program, request.source.c_str(), request.name.c_str(), 0,
                                          nullptr, nullptr);
  if (status != NVRTC_SUCCESS) {
    result.internal_error = true;
    result.log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(status);
    return result;
  }
  const std::vector<std::string> options = nvrtc_options(request);
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& o : options) argv.push_back(o.c_str());
  status = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    if (nvrtcGetProgramLog(program, log.data()) == NVRTC_SUCCESS) {
      log.resize(std::strlen(log.c_str()));
      result.log = truncate_log(std::move(log));
    }
  }
  if (status == NVRTC_SUCCESS) {
    std::size_t cubin_size = 0;
    if (nvrtcGetCUBINSize(program, &cubin_size) == NVRTC_SUCCESS && cubin_size > 0) {
      result.cubin.assign(cubin_size, '\0');
      if (nvrtcGetCUBIN(program, result.cubin.data()) == NVRTC_SUCCESS) {
        result.ok = true;
      } else {
        result.cubin.clear();
      }
    }
    if (!result.ok) {
      result.internal_error = true;
      result.log +=
          "\nNVRTC compiled the program but returned no cubin (is the arch a real sm_XX?)";
    }
  } else if (status != NVRTC_ERROR_COMPILATION) {
    // Bad options, out of memory, an NVRTC fault: the evaluator's problem, not the program's.
    result.internal_error = true;
    result.log = std::string("NVRTC failed: ") + nvrtcGetErrorString(status) +
                 (result.log.empty() ? "" : "\n" + result.log);
  }
  nvrtcDestroyProgram(&program);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (result.ok) {
    // The kernels and their registers, shared memory and stack come from the cubin itself; ptxas'
    // verbose log adds spills and constant bytes where NVRTC returns it (not every installation
    // does: the GPU hosts gave an empty log for successful compiles).
    const PtxasReport report = parse_ptxas_report(result.log);
    std::string why;
    const std::optional<CubinInfo> info = read_cubin_info(result.cubin, &why);
    if (!info) {
      result.ok = false;
      result.internal_error = true;
      result.log += "\nNVRTC returned a cubin that cannot be read: " + why;
      result.cubin.clear();
      return result;
    }
    for (const CubinKernel& k : info->kernels) {
      KernelFigures figures;
      figures.name = k.name;
      figures.registers = k.registers;
      figures.static_smem_bytes = k.static_smem_bytes;
      figures.local_bytes = k.frame_bytes;
      for (const KernelFigures& logged : report.kernels) {
        if (logged.name != k.name) continue;
        figures.spill_store_bytes = logged.spill_store_bytes;
        figures.spill_load_bytes = logged.spill_load_bytes;
        figures.const_bytes = logged.const_bytes;
      }
      result.kernels.push_back(std::move(figures));
    }
    result.global_bytes = static_cast<int>(std::max<std::int64_t>(info->global_bytes, report.global_bytes));
  }
  return result;
}

std::string serialize(const CompileResult& r) {
  Writer w;
  w.str(kMagic);
  w.u64(r.ok ? 1 : 0);
  w.u64(r.internal_error ? 1 : 0);
  w.str(r.log);
  w.str(r.cubin);
  w.u64(r.kernels.size());
  for (const KernelFigures& k : r.kernels) {
    each_kernel_field(k, [&w](const auto& v) {
      w.field(v);
      return true;
    });
  }
  w.i64(r.global_bytes);
  w.f64(r.compile_ms);
  w.str(r.arch);
  w.str(r.nvrtc_version);
  w.u64(r.cached ? 1 : 0);
  return w.take();
}

std::optional<CompileResult> deserialize_compile_result(std::string_view bytes) {
  Reader in(bytes);
  CompileResult r;
  std::string magic;
  std::uint64_t ok = 0, internal = 0, count = 0, cached = 0;
  if (!in.str(magic) || magic != kMagic) return std::nullopt;
  if (!in.u64(ok) || !in.u64(internal) || ok > 1 || internal > 1) return std::nullopt;
  r.ok = ok == 1;
  r.internal_error = internal == 1;
  if (!in.str(r.log) || !in.str(r.cubin) || !in.u64(count) || count > 4096) return std::nullopt;
  r.kernels.resize(count);
  for (KernelFigures& k : r.kernels) {
    if (!each_kernel_field(k, [&in](auto& v) { return in.field(v); })) return std::nullopt;
  }
  if (!in.i32(r.global_bytes) || !in.f64(r.compile_ms) || !in.str(r.arch) ||
      !in.str(r.nvrtc_version) || !in.u64(cached) || cached > 1 || !in.done()) {
    return std::nullopt;
  }
  r.cached = cached == 1;
  return r;
}

}  // namespace sparserl::reward
