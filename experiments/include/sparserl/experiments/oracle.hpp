// The oracle of a benchmark: per matrix, the best program the template search finds within a
// budget of measurements, timed against cuSPARSE like every answer. An answer's oracle fraction
// (its speedup over the oracle's) says how much of the reachable speed an agent found, where the
// speedup over cuSPARSE alone cannot tell a weak agent on a hard matrix from a strong one.
//
// Measuring the oracle costs a search per matrix, so it is cached, keyed by what it depends on:
//
//   DATA_DIR/oracle/<split digest>/<device slug>/<op>-<dtype>-k<k>-b<budget>.csv
//   matrix,oracle_us,baseline_us,oracle_speedup,program,design,protocol
//   suitesparse-v1/HB/west0067,2.91,3.4,1.168,3a07...,csr_vector lanes=4 block=128 ...,seed=2 ...
//
// (a bench over data.uris, which has no split, uses "no-split"). `program` is the best program's
// digest, `design` its design-space id, `protocol` the timing protocol of its figures
// (GpuProtocol::str()): an entry timed under another protocol than the run's is not used. The
// bench reads the file (bench.oracle = "cache"), fills it from its own template agent when that
// searched with at least the oracle's budget, and with bench.oracle = "compute" searches the
// matrices still missing (a GPU only). A malformed file is an OracleError naming file and line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/task.hpp"
#include "sparserl/experiments/results.hpp"

namespace sparserl::experiments {

class OracleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OracleEntry {
  std::string matrix;                                             // canonical URI
  double oracle_us = std::numeric_limits<double>::quiet_NaN();    // the best program's median
  double baseline_us = std::numeric_limits<double>::quiet_NaN();  // cuSPARSE's, same protocol
  double oracle_speedup = std::numeric_limits<double>::quiet_NaN();
  std::string program;   // the best program's digest
  std::string design;    // its design-space id
  std::string protocol;  // GpuProtocol::str() of the figures
  friend bool operator==(const OracleEntry&, const OracleEntry&) = default;
};

// What a cache file depends on.
struct OracleKey {
  std::string split_digest;  // Split::digest(); empty: a bench without a split ("no-split")
  std::string device;        // the GPU's name
  datasets::Op op = datasets::Op::spmv;
  datasets::DType dtype = datasets::DType::f32;
  std::int64_t k = 1;
  std::int64_t budget = 16;
};

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3": lower case, every run of other characters
// than letters and digits one '-'; "unknown-device" for a name without either.
std::string device_slug(std::string_view device);
// DATA_DIR/oracle/<split digest>/<device slug>/<op>-<dtype>-k<k>-b<budget>.csv
std::filesystem::path oracle_cache_file(const std::filesystem::path& data_dir,
                                        const OracleKey& key);

class OracleCache {
 public:
  // Reads FILE when it exists (an absent file is an empty cache). OracleError "FILE:LINE: ..."
  // for a malformed one: a missing column, a field that is not a number, a matrix twice.
  explicit OracleCache(std::filesystem::path file);

  [[nodiscard]] const std::filesystem::path& file() const { return file_; }
  [[nodiscard]] const std::vector<OracleEntry>& entries() const { return entries_; }
  // The entry of a matrix (canonical URI), or nullptr.
  [[nodiscard]] const OracleEntry* find(std::string_view matrix) const;
  // Adds the entries (replacing those of the same matrices) and rewrites the file atomically,
  // creating its folders.
  void store(const std::vector<OracleEntry>& entries);

 private:
  std::filesystem::path file_;
  std::vector<OracleEntry> entries_;
};

// The template agent's answers that go into the cache: none unless it searched with at least the
// oracle's budget; else those timed under `protocol` for matrices the cache lacks (or holds under
// another protocol). An entry already there is kept: the oracle of a matrix stays what it was.
std::vector<OracleEntry> entries_to_fill(const OracleCache& cache,
                                         const std::map<std::string, OracleEntry>& template_answers,
                                         std::int64_t template_budget, std::int64_t oracle_budget,
                                         const std::string& protocol);

// The answer's speedup as a fraction of the oracle's: NaN when the row was not tested or the
// oracle's speedup is not a positive number; 0 when the answer failed (not correct, or correct
// without a speedup); else speedup / oracle_speedup.
double oracle_fraction(const MatrixResult& row, double oracle_speedup);

// Sets oracle_speedup and oracle_fraction of every row whose matrix the cache knows under
// `protocol` (GpuProtocol::str(); entries of another protocol are ignored).
void apply_oracle(std::vector<MatrixResult>& rows, const OracleCache& cache,
                  const std::string& protocol);

}  // namespace sparserl::experiments
