// Creating run directories atomically, opening them for resume, and recording how a run ended
// (run_directory.hpp).
#include "sparserl/experiments/run_directory.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/text.hpp"
#include "sparserl/experiments/stage_knobs.hpp"
#include "sparserl/reward/protocol.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

std::string compact_utc(std::chrono::system_clock::time_point time) {
  return datasets::utc_text(time, datasets::kCompactUtc);
}

void touch(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw RunDirectoryError(file.string() + ": cannot create (" + std::strerror(errno) + ")");
  ::close(fd);
}

// Moves the prepared folder to `target` unless something already has that name. Returns false on a
// name clash. Filesystems without RENAME_NOREPLACE get an exclusive mkdir and a move of each entry.
bool move_into_place(const fs::path& prepared, const fs::path& target) {
  if (::renameat2(AT_FDCWD, prepared.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0)
    return true;
  if (errno == EEXIST || errno == ENOTEMPTY) return false;
  if (errno != EINVAL && errno != ENOSYS) {
    throw RunDirectoryError(target.string() + ": cannot create the run directory (" +
                            std::strerror(errno) + ")");
  }
  if (::mkdir(target.c_str(), 0755) != 0) {
    if (errno == EEXIST) return false;
    throw RunDirectoryError(target.string() + ": cannot create the run directory (" +
                            std::strerror(errno) + ")");
  }
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(prepared)) {
    fs::rename(e.path(), target / e.path().filename(), ec);
    if (ec)
      throw RunDirectoryError(target.string() + ": cannot move " + e.path().filename().string() +
                              " in (" + ec.message() + ")");
  }
  fs::remove(prepared, ec);
  return true;
}

}  // namespace

std::string run_directory_name(const std::string& experiment, std::uint64_t seed,
                               std::chrono::system_clock::time_point time) {
  std::string name = experiment.empty() ? std::string("experiment") : experiment;
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (name.front() == '.') name.front() = '_';  // not a hidden folder
  return name + "__" + std::to_string(seed) + "__" + compact_utc(time);
}

CheckpointPolicy checkpoint_policy(const Config& config) {
  return checkpoint_config(config).policy();
}

RunDirectory RunDirectory::create(const Config& config, const RunStart& start) {
  const fs::path output_dir = config.string("experiment.output_dir");
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec)
    throw RunDirectoryError(output_dir.string() + ": cannot create the output folder (" +
                            ec.message() + ")");

  const auto seed = static_cast<std::uint64_t>(config.integer("experiment.seed"));
  const std::string base = run_directory_name(config.string("experiment.name"), seed, start.now);
  static std::atomic<int> counter{0};
  const fs::path prepared = output_dir / ("." + base + ".tmp-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(counter++));
  datasets::remove_tree(prepared, ec);
  if (!fs::create_directory(prepared, ec) || ec) {
    throw RunDirectoryError(prepared.string() + ": cannot create (" +
                            (ec ? ec.message() : "exists") + ")");
  }

  RunInfo info;
  info.experiment = config.string("experiment.name");
  info.description = config.string("experiment.description");
  info.command = start.command;
  info.host = collect_host_info();
  if (start.gpu != nullptr) info.gpu = summarize_gpu(*start.gpu);
  info.versions = collect_software_versions();
  if (!start.libtorch_version.empty()) info.versions.libtorch = start.libtorch_version;
  info.git = query_git(start.project_dir.empty() ? project_source_dir() : start.project_dir);
  info.seeds.emplace_back("experiment", seed);
  for (const auto& s : start.seeds) info.seeds.push_back(s);
  info.start_time = iso_utc(start.now);
  info.split = start.split;

  try {
    write_file_atomically(prepared / "config.resolved.toml", config.to_toml());
    touch(prepared / "metrics.jsonl");
    fs::create_directory(prepared / "checkpoints");
    fs::create_directory(prepared / "plots");
    for (int attempt = 1; attempt <= 1000; ++attempt) {
      const std::string name = attempt == 1 ? base : base + "-" + std::to_string(attempt);
      info.run_id = name;
      write_run_info(prepared / "run.json", info);
      if (move_into_place(prepared, output_dir / name)) return RunDirectory(output_dir / name);
    }
  } catch (const std::runtime_error& e) {
    datasets::remove_tree(prepared, ec);
    throw RunDirectoryError(e.what());
  }
  datasets::remove_tree(prepared, ec);
  throw RunDirectoryError((output_dir / base).string() +
                          ": 1000 run directories of this name exist already");
}

RunDirectory RunDirectory::open(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw RunDirectoryError(dir.string() + ": not a folder");
  RunDirectory run(dir);
  for (const fs::path& needed : {run.config_path(), run.run_info_path()}) {
    if (!fs::exists(needed, ec)) {
      throw RunDirectoryError(dir.string() + ": not a run directory (no " +
                              needed.filename().string() + ")");
    }
  }
  return run;
}

Config RunDirectory::config(const std::vector<std::string>& overrides) const {
  return Config::load(config_path(), overrides);
}

RunInfo RunDirectory::info() const { return read_run_info(run_info_path()); }

void RunDirectory::write_info(const RunInfo& info) const { write_run_info(run_info_path(), info); }

void RunDirectory::mark(RunStatus status, const std::string& error) const {
  RunInfo i = info();
  i.status = status;
  i.error = error;
  i.end_time =
      status == RunStatus::running ? std::string() : iso_utc(std::chrono::system_clock::now());
  write_info(i);
}

void RunDirectory::mark_resumed() const {
  RunInfo i = info();
  i.status = RunStatus::running;
  i.error.clear();
  i.end_time.clear();
  i.resumed_at.push_back(iso_utc(std::chrono::system_clock::now()));
  write_info(i);
}

CheckpointStore RunDirectory::checkpoints(const CheckpointPolicy& policy) const {
  return CheckpointStore(checkpoints_dir(), policy);
}

CheckpointStore RunDirectory::checkpoints() const {
  return checkpoints(checkpoint_policy(config()));
}

std::optional<CheckpointInfo> RunDirectory::latest_checkpoint() const {
  return CheckpointStore(checkpoints_dir()).latest();
}

RunStatus RunDirectory::run(const std::function<void(const StopSignals& stop)>& body) const {
  StopSignals stop;
  try {
    body(stop);
  } catch (const std::exception& e) {
    mark(RunStatus::failed, e.what());
    throw;
  } catch (...) {
    mark(RunStatus::failed, "an exception that is not a std::exception");
    throw;
  }
  if (stop.requested()) {
    const int sig = stop.signal();
    const char* name = stop_signal_name(sig);
    mark(RunStatus::interrupted, name == nullptr
                                     ? std::string("stop requested")
                                     : std::string("stopped by ") + name +
                                           (sig == SIGHUP ? " (its terminal went away)" : ""));
    return RunStatus::interrupted;
  }
  mark(RunStatus::completed);
  return RunStatus::completed;
}

}  // namespace sparserl::experiments
