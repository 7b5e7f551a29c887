// run.json: what a reader needs to trust a run and to reproduce it - the host and its GPU, the
// versions of everything that shapes the numbers (CUDA runtime, NVRTC, cuSPARSE, the driver,
// LibTorch), the project's git commit and whether the tree had local changes, the seeds, when the
// run started and ended, and how it ended (running, completed, failed, interrupted). The file is
// replaced atomically (write a temporary file, fsync, rename), so a reader or a kill never sees
// half of it.
//
// This process never calls the CUDA runtime or driver (DESIGN.md: only the GPU worker does): the
// GPU, its driver and the runtime the worker loaded come from the evaluator's GpuInfo; cuSPARSE's
// version is the one of the header this build was compiled against; NVRTC is asked with
// nvrtcVersion (no device needed). LibTorch's version is filled in by whoever links it (agents),
// since torch headers stay out of experiments/.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/experiments/json.hpp"

namespace sparserl::reward {
struct GpuInfo;
}

namespace sparserl::experiments {

class RunInfoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class RunStatus { running, completed, failed, interrupted };
std::string_view to_string(RunStatus status);
// RunInfoError naming the text when it is not one of the four ("finished", the older name of
// completed, reads as completed).
RunStatus parse_run_status(std::string_view text);

struct HostInfo {
  std::string host_name = "unknown";
  std::string os = "unknown";  // "Debian GNU/Linux 12 (bookworm); Linux 6.1.0-18-amd64 x86_64"
  std::string cpu_model = "unknown";  // /proc/cpuinfo "model name"
  int cpu_cores = 0;                  // logical CPUs online
};

struct GpuSummary {
  std::string name = "none";                // "NVIDIA H100 80GB HBM3", or "none"
  std::string arch;                         // "sm_90"
  int count = 0;                            // visible devices
  std::string driver_version = "none";      // "13.0" (CUDA driver API version), or "none"
  std::string runtime_version = "unknown";  // the CUDA runtime the GPU worker loaded
  std::string note;  // why there is no GPU ("no CUDA-capable device"), if known
};

struct SoftwareVersions {
  std::string sparserl;      // project version, "0.1.0"
  std::string cuda_toolkit;  // the toolkit this build compiled against (CUDART_VERSION), "13.0"
  std::string nvrtc;         // nvrtcVersion(), "13.0"
  std::string cusparse;      // CUSPARSE_VERSION of the build's header, "12.6.3"
  std::string libtorch = "none";  // filled in by the agents library; "none" when not linked
  std::string compiler;           // the C++ compiler of this build, "GCC 12.2.0"
};

struct GitState {
  std::string commit = "unknown";  // full SHA-1, or "unknown" when not a git checkout / no git
  std::optional<bool> dirty;       // tracked files differ from the commit; unknown without git
  std::string describe;            // `git describe --always --dirty`, or ""
};

// The split a run read (run.json "split", the report's header): which file, its content digest
// (datasets::Split::digest()), the part and the selection (data.regimes / sources / families) the
// run took, and whether it read test matrices. A run over data.uris has no split: name, file and
// digest are empty. `sparserl compare` reads name and digest to refuse comparing runs on different
// splits.
struct SplitRecord {
  std::string name;       // "bench-v2"
  std::string file;       // the split file, absolute
  std::string digest;     // 16 hex digits
  std::string part;       // "val"
  std::string selection;  // datasets::SplitSelection::describe(): "all", "regime large"
  bool test_touched = false;
  std::int64_t test_matrices = 0;  // test matrices the run read (only with `--part test`)
  std::string test_split;          // the split whose test part they belong to
  std::int64_t matrices = 0;       // matrices the run took
  std::int64_t absent = 0;         // catalogue matrices of the part not on this machine, skipped
  friend bool operator==(const SplitRecord&, const SplitRecord&) = default;
};

struct RunInfo {
  std::string run_id;       // the run directory's name
  std::string experiment;   // experiment.name
  std::string description;  // experiment.description
  std::string command;      // the command line that started the run
  HostInfo host;
  GpuSummary gpu;
  SoftwareVersions versions;
  GitState git;
  std::vector<std::pair<std::string, std::uint64_t>> seeds;  // "experiment" first, then any others
  std::string start_time;               // ISO 8601 UTC, "2025-03-14T15:30:12.345Z"
  std::string end_time;                 // empty while running
  std::vector<std::string> resumed_at;  // one time per resume
  RunStatus status = RunStatus::running;
  std::string error;            // failed: the message
  std::optional<SplitRecord> split;  // absent in run.json files written before splits were recorded
  Json extra = Json::object();  // what a runner adds (steps done, checkpoints, ...), kept as is

  [[nodiscard]] Json to_json() const;
  // RunInfoError naming `source` and the member when a member is missing or of the wrong kind.
  static RunInfo from_json(const Json& json, const std::string& source);
};

HostInfo collect_host_info();
// Versions known without a GPU: the build's CUDA toolkit and cuSPARSE headers, nvrtcVersion, the
// compiler, the project version. libtorch stays "none".
SoftwareVersions collect_software_versions();
// git rev-parse / status / describe in `project_dir`, each bounded by `timeout`; "unknown" on any
// failure (no git, not a checkout, a hung git).
GitState query_git(const std::filesystem::path& project_dir,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
// The source tree this build came from (for query_git); empty when it no longer exists.
std::filesystem::path project_source_dir();
GpuSummary summarize_gpu(const reward::GpuInfo& info);

// "2025-03-14T15:30:12.345Z".
std::string iso_utc(std::chrono::system_clock::time_point time);
// Parses iso_utc's format back (RunInfoError naming the text otherwise).
std::chrono::system_clock::time_point parse_iso_utc(std::string_view text);

// Replaces FILE atomically with the JSON of `info` (temporary file in the same folder, fsync,
// rename).
void write_run_info(const std::filesystem::path& file, const RunInfo& info);
// RunInfoError naming the file for a missing, unreadable or malformed run.json.
RunInfo read_run_info(const std::filesystem::path& file);

// Writes `text` to FILE through a temporary file in the same folder, fsync and rename: readers see
// the old or the new content, never a mix. std::runtime_error naming the file on failure.
void write_file_atomically(const std::filesystem::path& file, std::string_view text);

}  // namespace sparserl::experiments
