// results.csv: the per-matrix table of an evaluation or a benchmark, one row per (matrix, agent) -
// the kernel that agent answered with for that matrix - and the per-agent summary the report shows:
//
//   matrix,nnz,agent,compiled,correct,candidate_us,cusparse_us,speedup,gflops,bandwidth_fraction,
//     tested,samples,samples_compiled,samples_correct,best_speedup,program,regime,family,
//     oracle_speedup,oracle_fraction,novel,corpus_distance,cusparse_path,cusparse_paths,
//     search_seconds,design
//   suitesparse-v1/HB/west0067,294,template,1,1,2.91,3.40,1.168,0.202,0.012,1,0,0,0,1.168,3a07...,
//     small,HB,1.168,1,0,0
//
// Each answer is measured three ways (DESIGN.md, "Benchmark and statistics"): against cuSPARSE
// (speedup), against the roofline (bandwidth_fraction: compulsory bytes over the device's measured
// copy bandwidth) and against the oracle, the template search's best program for the matrix
// (oracle_fraction = speedup / oracle_speedup); and its program against the training corpus
// (novel, corpus_distance; novelty.hpp).
//
// Plain RFC 4180 CSV with a header; columns are found by name, so their order is free and extra
// columns (op, dtype, ...) are allowed and ignored here. Three optional columns of the benchmark
// (DESIGN.md, "Benchmark and statistics") are read when present and written when a row has them:
// `regime` (small / medium / large), `oracle_fraction` (the answer's share of the template search's
// best speed) and `novel` (1 / 0: the program is not in the training corpus; empty where that does
// not apply). `matrix` and `agent` are required; a
// missing or empty number is NaN (a kernel that did not compile has no time); a file without the
// sample columns reads as tested, without samples, one without best_speedup / program as having
// neither, and one without the benchmark's columns (regime ... corpus_distance) as having no tags,
// no oracle and no novelty (regime_name() then falls back to the nonzeros). Booleans are 1/0 or
// true/false. Bad input is a ResultsError naming the file, the line and the column.
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
  double cusparse_us = 0;         // cuSPARSE's best path, same protocol (us)
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
  // The matrix's regime ("small", "medium", "large": the split entry's tag, else by nnz) and
  // family (the entry's; else the collection group or the generator kind); "" when unknown.
  std::string regime;
  std::string family;
  // The oracle's speedup over cuSPARSE for the matrix (the template search's best program under
  // bench.oracle_budget; NaN when unknown), and the answer's speedup as a fraction of it: 0 for a
  // failed answer, NaN when there is no oracle or the answer was not tested.
  double oracle_speedup = std::numeric_limits<double>::quiet_NaN();
  double oracle_fraction = std::numeric_limits<double>::quiet_NaN();
  // For a correct answer: whether its normalised program is absent from the training corpus
  // (nullopt for an incorrect answer, or when no corpus was measured).
  std::optional<bool> novel;
  // Token edit distance from the answer to the nearest corpus program (NaN when no program).
  double corpus_distance = std::numeric_limits<double>::quiet_NaN();
  // The cuSPARSE path that set cusparse_us ("CSR_ALG2", "SELL_ALG1", "BSR_ALG1(4x4)", ...) and every
  // path the baseline tried with its median in us (reward::TimingFigures::baseline_paths); empty
  // when nothing was timed.
  std::string cusparse_path;
  std::string cusparse_paths;
  // The template search's wall time for the matrix (the template agent; NaN for the others).
  double search_seconds = std::numeric_limits<double>::quiet_NaN();
  // The design point of the template search's answer ("csr_split lanes=1 split=2048"; the
  // template agent; empty for the others).
  std::string design;
};

// The row's regime: its tag, else the regime of its nonzeros.
std::string regime_name(const MatrixResult& row);

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
  // pass@1 and pass@k by the unbiased estimator over each row's programs (row_pass_at_k), the
  // mean over all matrices; pass@k is NaN when no row has samples. k = the largest number of
  // samples of a row (bench.samples / eval.samples).
  double pass_at_1 = 0;
  double pass_at_k = 0;
  std::int64_t k = 0;
  // Sampled programs that compiled, over all samples (NaN when no row has samples).
  double sample_compile_rate = 0;
  // Geometric mean over all matrices of best_speedup, a matrix without a correct program counted
  // as 1.0 (NaN when no row has samples or nothing was tested).
  double geomean_best_speedup = 0;
  // Geometric mean of oracle_fraction over the correct answers that have one (NaN when none):
  // how close the agent comes to the template search where it succeeds (failures are in pass@1).
  double geomean_oracle_fraction = 0;
  // Correct answers whose program is novel, over the correct answers whose novelty was measured
  // (NaN when none).
  double novel_share = 0;
};

// pass@k of one row by the unbiased estimator 1 - C(n-c, k) / C(n, k) (statistics.hpp): the row's
// programs are its answer and its samples (n = 1 + samples), c of them correct; a k above n is
// taken as n. The one definition the bench's and eval's summaries and `sparserl compare` share.
double row_pass_at_k(const MatrixResult& row, std::int64_t k);

// One summary per agent, in order of first appearance.
std::vector<AgentSummary> summarize_results(const std::vector<MatrixResult>& rows);

// The summaries of one regime's rows ("all": every row).
struct RegimeSummary {
  std::string regime;  // "all", "large", "medium", "small"
  std::vector<AgentSummary> agents;
};
// "all", then large, medium and small where some row is of that regime (regime_name()).
std::vector<RegimeSummary> summarize_by_regime(const std::vector<MatrixResult>& rows);
// The rows of one regime ("all": every row), in order.
std::vector<MatrixResult> rows_of_regime(const std::vector<MatrixResult>& rows,
                                         const std::string& regime);

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

// summary.csv of a benchmark: one row per (regime, agent) - every figure of AgentSummary and the
// comparison with `reference` computed over that regime's rows - regimes in summarize_by_regime's
// order:
//   regime,agent,matrices,tested,compile_rate,pass@1,pass@k,k,geomean_speedup,...,
//     speedup_vs_reference,answers_differing,geomean_oracle_fraction,novel_share
void write_summary_csv(const std::filesystem::path& file, const std::vector<MatrixResult>& rows,
                       const std::string& reference);

}  // namespace sparserl::experiments
