// results.csv: the per-matrix table of an evaluation or a benchmark, one row per (matrix, agent) -
// the kernel that agent answered with for that matrix - and the per-agent summary the report shows:
//
//   matrix,nnz,agent,compiled,correct,candidate_us,cusparse_us,speedup,gflops,bandwidth_fraction,
//     tested,samples,samples_compiled,samples_correct,best_speedup,program
//   suitesparse-v1/HB/west0067,294,template,1,1,2.91,3.40,1.168,0.202,0.012,1,0,0,0,1.168,3a07...
//
// Plain RFC 4180 CSV with a header; columns are found by name, so their order is free and extra
// columns (op, dtype, ...) are allowed and ignored here. Three optional columns of the benchmark
// (DESIGN.md, "Benchmark and statistics") are read when present and written when a row has them:
// `regime` (small / medium / large), `oracle_fraction` (the answer's share of the template search's
// best speed) and `novel` (1 / 0: the program is not in the training corpus; empty where that does
// not apply). `matrix` and `agent` are required; a
// missing or empty number is NaN (a kernel that did not compile has no time); a file without the
// sample columns reads as tested, without samples, and one without best_speedup / program as
// having neither. Booleans are 1/0 or true/false. Bad input is a ResultsError naming the file, the
// line and the column.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparserl::experiments {

class ResultsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MatrixResult {
  std::string matrix;  // the task's matrix URI or name
  std::int64_t nnz = 0;
  std::string agent;  // "template", "sft", "grpo", ...
  bool compiled = false;
  bool correct = false;
  double candidate_us = 0;        // the agent's kernel, median time per run (us)
  double cusparse_us = 0;         // cuSPARSE's best algorithm, same protocol (us)
  double speedup = 0;             // cusparse_us / candidate_us
  double gflops = 0;              // of the agent's kernel
  double bandwidth_fraction = 0;  // of the device's measured copy bandwidth
  // Whether the GPU stages ran (false without a GPU: `correct` and the figures mean nothing).
  bool tested = true;
  // pass@k: k further programs the agent sampled for this matrix (0: none), how many of them
  // compiled and how many were correct.
  std::int64_t samples = 0, samples_compiled = 0, samples_correct = 0;
  // The fastest correct program of the answer and its samples (best of 1 + k; NaN when none is
  // correct or nothing was timed).
  double best_speedup = std::numeric_limits<double>::quiet_NaN();
  // The answer's program digest (empty when no program reached the evaluator): two agents with the
  // same digest for a matrix answered with the same kernel.
  std::string program;
  // The benchmark's regime tag of the matrix: "small", "medium", "large", or empty (no tag).
  std::string regime;
  // The answer's speed as a share of the oracle's (the template search's best program); NaN when
  // absent or the answer failed.
  double oracle_fraction = std::numeric_limits<double>::quiet_NaN();
  // Whether the answer is absent from the training corpus (nullopt: not applicable or not known).
  std::optional<bool> novel;
};

// The column names in the order write_results_csv uses.
const std::vector<std::string>& results_columns();

// Writes results_columns(), then `regime`, `oracle_fraction` and `novel` for each of them that some
// row has.
void write_results_csv(const std::filesystem::path& file, const std::vector<MatrixResult>& rows);
std::vector<MatrixResult> read_results_csv(const std::filesystem::path& file);

// The rows with the header they were read under (to tell a column that is absent from one that is
// empty in every row).
struct ResultsTable {
  std::vector<std::string> columns;  // the header, in file order
  std::vector<MatrixResult> rows;
  // The record's first line in the file for each row (for messages naming file:line).
  std::vector<std::size_t> lines;
  [[nodiscard]] bool has_column(const std::string& name) const;
};
ResultsTable read_results_table(const std::filesystem::path& file);

// One agent's line of the summary table.
struct AgentSummary {
  std::string agent;
  std::int64_t matrices = 0;
  double compile_rate = 0;  // compiled / matrices
  double correct_rate = 0;  // correct / matrices (pass@1 when each row is one sample)
  // Geometric mean of the speedup over the correct rows (NaN when none is correct).
  double geomean_speedup = 0;
  // The same over every row with a failed kernel counted as 1.0 - the user falls back to cuSPARSE.
  double geomean_speedup_fallback = 0;
  double faster_share = 0;             // correct and speedup > 1, over all matrices
  double median_gflops = 0;            // over the correct rows
  double mean_bandwidth_fraction = 0;  // over the correct rows
  // Every row was tested on a GPU. When not, everything that needs the GPU stages (correct rate,
  // pass@1, pass@k, speedups, faster share, GFLOP/s, bandwidth) is NaN: n/a, never a made-up 0.
  bool tested = true;
  double pass_at_1 = 0;  // the answer (the row's own kernel) correct, over all matrices
  // The answer or one of the k samples correct, over all matrices (NaN when no row has samples).
  double pass_at_k = 0;
  std::int64_t k = 0;  // the largest number of samples of a row
  // Sampled programs that compiled, over all samples (NaN when no row has samples).
  double sample_compile_rate = 0;
  // Geometric mean over all matrices of best_speedup, a matrix without a correct program counted
  // as 1.0 (NaN when no row has samples or nothing was tested).
  double geomean_best_speedup = 0;
};

// One summary per agent, in order of first appearance.
std::vector<AgentSummary> summarize_results(const std::vector<MatrixResult>& rows);

// One agent against a reference agent over the matrices both answered: a paired comparison, which
// means something when both were timed in one bench (docs/experiments.md, "Matrix by matrix").
struct PairedComparison {
  std::string agent;
  std::int64_t matrices = 0;            // matrices both answered
  std::int64_t different_programs = 0;  // of those, answered with a program other than the
                                        // reference's (by digest; no program on both sides is
                                        // the same answer)
  std::int64_t faster = 0, slower = 0;  // of those, speedup (failures as 1) above / below
  // Geometric mean over those matrices of speedup / reference speedup, a failure counting as 1
  // (NaN when a row was not tested).
  double speedup_ratio = 0;
};

// Every other agent against `reference`, in order of first appearance; empty when `reference` is
// empty, absent from the rows or the only agent.
std::vector<PairedComparison> compare_with_reference(const std::vector<MatrixResult>& rows,
                                                     const std::string& reference);

}  // namespace sparserl::experiments
