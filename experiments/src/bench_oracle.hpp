// The oracle step of `sparserl bench` (oracle.hpp has the cache and the arithmetic): which cache
// file the bench uses (its split's digest, the GPU, op, dtype, k, bench.oracle_budget), filling it
// from the bench's own template agent when that searched with at least the oracle's budget,
// searching the matrices still missing when bench.oracle = "compute" (a GPU only), and the rows'
// oracle_speedup / oracle_fraction. What it did is one sentence, said on the log and kept in
// run.json ("extra": {"oracle": {...}}) for the report. Internal to experiments/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "session.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/oracle.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/split_tasks.hpp"
#include "sparserl/experiments/stop_signals.hpp"
#if __has_include("sparserl/kernels/template_search.hpp")
#include "sparserl/kernels/template_search.hpp"
#define SPARSERL_ORACLE_HAVE_KERNELS 1
#endif

namespace sparserl::experiments {

#ifdef SPARSERL_ORACLE_HAVE_KERNELS
// The oracle entry of a search: its best candidate when that is correct and timed (nullopt
// otherwise). `full`: the protocol of the run's figures.
std::optional<OracleEntry> oracle_entry(const kernels::SearchResult& result,
                                        const reward::GpuProtocol& full);
#endif

class BenchOracle {
 public:
  // Opens the cache of this bench (an OracleError for a malformed file, before anything runs).
  BenchOracle(Session& session, const PartTasks& part);

  // After the agents answered: fills and computes what bench.oracle asks for, then sets the rows'
  // oracle columns. `template_entries`: the template agent's best answers by matrix.
  void finish(std::vector<MatrixResult>& rows,
              const std::map<std::string, OracleEntry>& template_entries, const StopSignals& stop);

  // run.json's "oracle": mode, budget, device, file, matrices, known, filled, computed, summary.
  [[nodiscard]] Json record() const;
  [[nodiscard]] const std::string& summary() const { return summary_; }

 private:
  std::vector<OracleEntry> compute(const std::vector<MatrixResult>& rows, const StopSignals& stop);

  Session& s_;
  const PartTasks& part_;
  std::string mode_;
  std::int64_t budget_ = 0;
  std::string device_;
  std::string protocol_;  // the run's full protocol, GpuProtocol::str()
  std::optional<OracleCache> cache_;
  std::size_t known_ = 0, filled_ = 0, computed_ = 0;
  std::string summary_;
};

}  // namespace sparserl::experiments
