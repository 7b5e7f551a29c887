// Collecting run.json's facts and reading / writing the file atomically (run_info.hpp). Versions of
// CUDA pieces come from headers and nvrtcVersion only: this process must not create a CUDA context.
#include "sparserl/experiments/run_info.hpp"

#include <cuda_runtime_api.h>  // CUDART_VERSION only: no runtime call is made from here
#include <cusparse.h>          // CUSPARSE_VER_* only
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <utility>
#include <variant>
#include <vector>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/protocol.hpp"
#include "subprocess.hpp"

#ifndef SPARSERL_VERSION
#define SPARSERL_VERSION "unknown"
#endif
#ifndef SPARSERL_SOURCE_DIR
#define SPARSERL_SOURCE_DIR ""
#endif

namespace sparserl::experiments {
namespace {

constexpr std::string_view kFormat = "sparserl-run";
constexpr std::int64_t kFormatVersion = 1;

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version_string(int v) {
  if (v <= 0) return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The value of the first "KEY<sep>value" line of a text file whose key is one of `keys`.
std::string first_field(const std::filesystem::path& file, const std::vector<std::string>& keys,
                        char sep) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find(sep);
    if (at == std::string::npos) continue;
    const std::string key = trim(line.substr(0, at));
    for (const std::string& k : keys) {
      if (key == k) {
        std::string v = trim(line.substr(at + 1));
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        return v;
      }
    }
  }
  return {};
}

const Json& member(const Json& object, std::string_view key, const std::string& source) {
  const Json* v = find_member(object, key);
  if (v == nullptr) throw RunInfoError(source + ": missing member '" + std::string(key) + "'");
  return *v;
}

// Reads optional members, naming the member when its kind is wrong.
class Fields {
 public:
  Fields(const Json& object, std::string source, std::string prefix)
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}

  template <typename F>
  auto wrap(std::string_view key, F f) const {
    try {
      return f();
    } catch (const JsonError& e) {
      throw RunInfoError(source_ + ": member '" + prefix_ + std::string(key) + "': " + e.what());
    }
  }
  void str(std::string_view key, std::string& out) const {
    if (const Json* v = get(key)) out = wrap(key, [&] { return as_string(*v); });
  }
  void integer(std::string_view key, int& out) const {
    if (const Json* v = get(key)) out = static_cast<int>(wrap(key, [&] { return as_integer(*v); }));
  }
  void integer64(std::string_view key, std::int64_t& out) const {
    if (const Json* v = get(key)) out = wrap(key, [&] { return as_integer(*v); });
  }
  void boolean(std::string_view key, bool& out) const {
    if (const Json* v = get(key)) out = wrap(key, [&] { return as_bool(*v); });
  }
  // By the type of `out`: what read_section needs.
  void read(std::string_view key, std::string& out) const { str(key, out); }
  void read(std::string_view key, int& out) const { integer(key, out); }
  void read(std::string_view key, std::int64_t& out) const { integer64(key, out); }
  void read(std::string_view key, bool& out) const { boolean(key, out); }
  [[nodiscard]] const Json* get(std::string_view key) const {
    const Json* v = find_member(object_, key);
    return v != nullptr && !v->is_null() ? v : nullptr;
  }
  [[nodiscard]] Fields nested(std::string_view key) const {
    static const Json kEmpty = Json::object();
    const Json* v = get(key);
    if (v != nullptr && !v->is_object()) {
      throw RunInfoError(source_ + ": member '" + prefix_ + std::string(key) +
                         "': expected an object, found " + std::string(kind_name(*v)));
    }
    return Fields(v != nullptr ? *v : kEmpty, source_, prefix_ + std::string(key) + ".");
  }

 private:
  const Json& object_;
  std::string source_;
  std::string prefix_;
};

// The members of a run.json section (host, gpu, versions, split) in the file's order, each with its
// key: to_json writes and from_json reads a section from one list, so each key is spelt once.
template <class S>
using Member = std::variant<std::string S::*, int S::*, std::int64_t S::*, bool S::*>;
template <class S>
using Section = std::vector<std::pair<const char*, Member<S>>>;

const Section<HostInfo> kHostSection = {{"name", &HostInfo::host_name},
                                        {"os", &HostInfo::os},
                                        {"cpu_model", &HostInfo::cpu_model},
                                        {"cpu_cores", &HostInfo::cpu_cores}};
const Section<GpuSummary> kGpuSection = {{"name", &GpuSummary::name},
                                         {"arch", &GpuSummary::arch},
                                         {"count", &GpuSummary::count},
                                         {"driver_version", &GpuSummary::driver_version},
                                         {"cuda_runtime_version", &GpuSummary::runtime_version},
                                         {"note", &GpuSummary::note}};
const Section<SoftwareVersions> kVersionsSection = {
    {"sparserl", &SoftwareVersions::sparserl}, {"cuda_toolkit", &SoftwareVersions::cuda_toolkit},
    {"nvrtc", &SoftwareVersions::nvrtc},       {"cusparse", &SoftwareVersions::cusparse},
    {"libtorch", &SoftwareVersions::libtorch}, {"compiler", &SoftwareVersions::compiler}};
const Section<SplitRecord> kSplitSection = {{"name", &SplitRecord::name},
                                            {"file", &SplitRecord::file},
                                            {"digest", &SplitRecord::digest},
                                            {"part", &SplitRecord::part},
                                            {"selection", &SplitRecord::selection},
                                            {"test_touched", &SplitRecord::test_touched},
                                            {"test_matrices", &SplitRecord::test_matrices},
                                            {"test_split", &SplitRecord::test_split},
                                            {"matrices", &SplitRecord::matrices},
                                            {"absent", &SplitRecord::absent}};

template <class S>
Json section_json(const S& s, const Section<S>& section) {
  Json j = Json::object();
  for (const auto& [key, member] : section) {
    std::visit([&](auto m) { j[key] = s.*m; }, member);
  }
  return j;
}

template <class S>
void read_section(const Fields& f, S& s, const Section<S>& section) {
  for (const auto& [key, member] : section) {
    std::visit([&](auto m) { f.read(key, s.*m); }, member);
  }
}

constexpr auto kRunStatusNames = datasets::enum_names<RunStatus::running, RunStatus::interrupted>(
    {"running", "completed", "failed", "interrupted"});

}  // namespace

std::string_view to_string(RunStatus status) { return kRunStatusNames.name(status); }

RunStatus parse_run_status(std::string_view text) {
  if (const auto status = kRunStatusNames.parse(text)) return *status;
  if (text == "finished") return RunStatus::completed;  // the name before 0.1.0's runner
  throw RunInfoError("unknown run status '" + std::string(text) + "' (expected " +
                     kRunStatusNames.list() + ")");
}

HostInfo collect_host_info() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') h.host_name = name;
  utsname u{};
  std::string kernel;
  if (::uname(&u) == 0) kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  const std::string distro = first_field("/etc/os-release", {"PRETTY_NAME"}, '=');
  if (!distro.empty() && !kernel.empty())
    h.os = distro + "; " + kernel;
  else if (!kernel.empty())
    h.os = kernel;
  else if (!distro.empty())
    h.os = distro;
  // x86 names the model; ARM kernels (Grace hosts) often give only implementer / part numbers.
  std::string model =
      first_field("/proc/cpuinfo", {"model name", "Model", "Hardware", "cpu model"}, ':');
  if (model.empty()) {
    const std::string part = first_field("/proc/cpuinfo", {"CPU part"}, ':');
    if (!part.empty())
      model = "CPU part " + part + (kernel.empty() ? "" : " (" + std::string(u.machine) + ")");
  }
  if (!model.empty()) h.cpu_model = model;
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cpu_cores = n > 0 ? static_cast<int>(n) : 0;
  return h;
}

SoftwareVersions collect_software_versions() {
  SoftwareVersions v;
  v.sparserl = SPARSERL_VERSION;
  v.cuda_toolkit = cuda_version_string(CUDART_VERSION);
  v.nvrtc = reward::nvrtc_version();
  v.cusparse = std::to_string(CUSPARSE_VER_MAJOR) + "." + std::to_string(CUSPARSE_VER_MINOR) + "." +
               std::to_string(CUSPARSE_VER_PATCH);
#if defined(__clang__)
  v.compiler = std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
  v.compiler = std::string("GCC ") + __VERSION__;
#else
  v.compiler = "unknown";
#endif
  return v;
}

std::filesystem::path project_source_dir() {
  const std::filesystem::path dir = SPARSERL_SOURCE_DIR;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return {};
  return dir;
}

GitState query_git(const std::filesystem::path& project_dir, std::chrono::milliseconds timeout) {
  GitState g;
  if (project_dir.empty() || detail::find_program("git").empty()) return g;
  const std::string dir = project_dir.string();
  auto git = [&](std::vector<std::string> args) -> std::optional<std::string> {
    args.insert(args.begin(), {"git", "-C", dir});
    const detail::ProcessOutcome o = detail::run_process(args, timeout);
    if (!o.started || o.timed_out || o.exit_code != 0) return std::nullopt;
    return o.output;
  };
  const auto head = git({"rev-parse", "--verify", "HEAD"});
  if (!head) return g;
  const std::string commit = trim(*head);
  if (commit.size() < 40 || commit.find_first_not_of("0123456789abcdef") != std::string::npos)
    return g;
  g.commit = commit;
  // Untracked files do not make a build differ from its commit; changed tracked files do.
  if (const auto status = git({"status", "--porcelain", "--untracked-files=no"})) {
    g.dirty = !trim(*status).empty();
  }
  if (const auto d = git({"describe", "--always", "--dirty"})) g.describe = trim(*d);
  return g;
}

GpuSummary summarize_gpu(const reward::GpuInfo& info) {
  GpuSummary s;
  s.count = static_cast<int>(info.devices.size());
  if (!info.devices.empty()) {
    s.name = info.devices.front().name;
    s.arch = info.devices.front().arch;
    for (std::size_t i = 1; i < info.devices.size(); ++i) {
      if (info.devices[i].name != s.name) s.name += ", " + info.devices[i].name;
    }
  }
  if (info.driver_version > 0) s.driver_version = cuda_version_string(info.driver_version);
  if (info.runtime_version > 0) s.runtime_version = cuda_version_string(info.runtime_version);
  s.note = info.error;
  return s;
}

std::string iso_utc(std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(time.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  long frac = static_cast<long>(ms % 1000);
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

std::chrono::system_clock::time_point parse_iso_utc(std::string_view text) {
  std::tm tm{};
  int ms = 0;
  int consumed = 0;
  const std::string s(text);
  const int n = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &consumed);
  if (n < 7 || static_cast<std::size_t>(consumed) != s.size()) {
    throw RunInfoError("'" + s + "' is not a UTC time like 2025-03-14T15:30:12.345Z");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t secs = ::timegm(&tm);
  return std::chrono::system_clock::from_time_t(secs) + std::chrono::milliseconds(ms);
}

Json RunInfo::to_json() const {
  Json j = Json::object();
  j["format"] = std::string(kFormat);
  j["format_version"] = kFormatVersion;
  j["run_id"] = run_id;
  j["experiment"] = experiment;
  j["description"] = description;
  j["command"] = command;
  j["status"] = std::string(to_string(status));
  j["error"] = error;
  j["start_time"] = start_time;
  j["end_time"] = end_time.empty() ? Json() : Json(end_time);
  j["resumed_at"] = resumed_at;
  Json s = Json::object();
  for (const auto& [name, seed] : seeds) s[name] = seed;
  j["seeds"] = std::move(s);

  j["host"] = section_json(host, kHostSection);
  j["gpu"] = section_json(gpu, kGpuSection);
  j["versions"] = section_json(versions, kVersionsSection);

  Json gi = Json::object();
  gi["commit"] = git.commit;
  gi["dirty"] = git.dirty ? Json(*git.dirty) : Json();
  gi["describe"] = git.describe;
  j["git"] = std::move(gi);
  if (split) j["split"] = section_json(*split, kSplitSection);
  j["extra"] = extra.is_object() ? extra : Json::object();
  return j;
}

RunInfo RunInfo::from_json(const Json& json, const std::string& source) {
  if (!json.is_object()) throw RunInfoError(source + ": expected a JSON object");
  const Json& format = member(json, "format", source);
  if (!format.is_string() || as_string(format) != kFormat) {
    throw RunInfoError(source + ": member 'format' is not \"" + std::string(kFormat) +
                       "\": not a run.json");
  }
  Fields f(json, source, "");
  int version = 0;
  f.integer("format_version", version);
  if (version != kFormatVersion) {
    throw RunInfoError(source + ": format_version " + std::to_string(version) +
                       " is not supported (expected " + std::to_string(kFormatVersion) + ")");
  }
  RunInfo r;
  f.str("run_id", r.run_id);
  f.str("experiment", r.experiment);
  f.str("description", r.description);
  f.str("command", r.command);
  std::string status;
  f.str("status", status);
  r.status = f.wrap("status", [&] {
    try {
      return parse_run_status(status);
    } catch (const RunInfoError& e) {
      throw JsonError(e.what());
    }
  });
  f.str("error", r.error);
  f.str("start_time", r.start_time);
  f.str("end_time", r.end_time);
  if (const Json* a = f.get("resumed_at")) {
    f.wrap("resumed_at", [&] {
      for (const Json& t : as_array(*a)) r.resumed_at.push_back(as_string(t));
      return 0;
    });
  }
  if (const Json* s = f.get("seeds")) {
    f.wrap("seeds", [&] {
      for (const auto& [name, seed] : as_object(*s)) {
        r.seeds.emplace_back(name, as_unsigned(seed));
      }
      return 0;
    });
  }
  read_section(f.nested("host"), r.host, kHostSection);
  read_section(f.nested("gpu"), r.gpu, kGpuSection);
  read_section(f.nested("versions"), r.versions, kVersionsSection);
  const Fields gi = f.nested("git");
  gi.str("commit", r.git.commit);
  if (const Json* d = gi.get("dirty")) r.git.dirty = gi.wrap("dirty", [&] { return as_bool(*d); });
  gi.str("describe", r.git.describe);
  if (f.get("split") != nullptr) read_section(f.nested("split"), r.split.emplace(), kSplitSection);
  if (const Json* e = f.get("extra")) {
    if (!e->is_object()) throw RunInfoError(source + ": member 'extra': expected an object");
    r.extra = *e;
  }
  return r;
}

void write_file_atomically(const std::filesystem::path& file, std::string_view text) {
  const std::filesystem::path dir =
      file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  const std::filesystem::path temp =
      dir / ("." + file.filename().string() + ".tmp." + std::to_string(::getpid()));
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(file.string() + ": cannot write (" + what + ": " + std::strerror(err) +
                             ")");
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("open " + temp.string());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(temp.c_str(), file.c_str()) != 0) fail("rename");
}

void write_run_info(const std::filesystem::path& file, const RunInfo& info) {
  write_file_atomically(file, dump_json(info.to_json(), 2) + "\n");
}

RunInfo read_run_info(const std::filesystem::path& file) {
  const std::optional<std::string> text = datasets::read_file_bytes(file);
  if (!text)
    throw RunInfoError(file.string() + ": cannot open run.json (" + std::strerror(errno) + ")");
  Json json;
  try {
    json = parse_json(*text, file.string());
  } catch (const JsonError& e) {
    throw RunInfoError(e.what());
  }
  return RunInfo::from_json(json, file.string());
}

}  // namespace sparserl::experiments
