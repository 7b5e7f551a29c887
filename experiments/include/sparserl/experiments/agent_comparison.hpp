// Agents compared over seeds, behind `sparserl compare RUN_DIR...`: several bench or eval run
// directories are read (results.csv and run.json), each agent's rows from different run directories
// become its runs (seeds), the matrices every run answered become the tasks, and each agent gets,
// per regime (all matrices, then large, medium, small), rliable's estimates with stratified
// bootstrap intervals (statistics.hpp): the interquartile mean of the speedup over cuSPARSE, the
// same of the oracle fraction, the geometric mean speedup, the share of answers slower than half
// cuSPARSE's time, unbiased pass@1 and pass@k, the compile
// rate, the share of novel correct answers, and the probability that it beats a reference agent on
// a random matrix. write_comparison renders compare.md, compare.csv and intervals.png.
//
// Agents: the `agent` column (NAME-sN as run N of NAME with seeds_in_names). When run directories
// of different experiments (run.json's `experiment`) both hold an agent of one name, each is
// labelled EXPERIMENT/AGENT. Regimes: the
// `regime` column when a row has one, else the matrix's nnz (small < 200,000 <= medium < 1,000,000
// <= large). Without a GPU (rows with tested = 0) everything that needs the GPU stages is n/a.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/statistics.hpp"

namespace sparserl::experiments {

// Bad input: the message names the run directory and the file.
class ComparisonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The matrices a table covers: all of them, or one regime (datasets::Regime, by nonzeros).
enum class RegimeScope { all, large, medium, small };
std::string_view to_string(RegimeScope regime);  // "all", "large", "medium", "small"
// ComparisonError naming the text when it is none of the four.
RegimeScope parse_regime(std::string_view text);
// The regime of a matrix of `nnz` nonzeros (datasets::regime_of: small < 200,000 <= medium <
// 1,000,000 <= large).
RegimeScope regime_of_nnz(std::int64_t nnz);

// One run directory as read.
struct ComparedRun {
  std::filesystem::path dir;
  std::string run_id;                    // run.json's run_id (the folder name without run.json)
  std::string experiment;                // run.json's experiment (the folder name without run.json)
  std::optional<std::uint64_t> seed;     // run.json's seeds.experiment
  std::string commit;                    // run.json's git commit ("unknown" without run.json)
  std::optional<bool> dirty;             // the tree had local changes
  std::string device;                    // run.json's GPU name ("none" without a GPU)
  std::string split_name, split_digest;  // run.json's optional "split" object (empty: absent)
  bool has_run_json = false;
  ResultsTable results;  // results.csv
};

// Reads DIR/results.csv and DIR/run.json (optional). ComparisonError naming the directory and the
// file: no such folder, no results.csv, a malformed line, a malformed run.json, or two rows for one
// (matrix, agent).
ComparedRun read_compared_run(const std::filesystem::path& dir);

struct CompareOptions {
  std::string reference;  // the agent others are compared with (empty: the first agent)
  BootstrapOptions bootstrap;
  std::optional<RegimeScope> regime;  // report only this section (nullopt: all, large, medium, small)
  // Agents named NAME-sN (a `bench.policies` entry per seed, "grpo-s1=runs/grpo-s1/final") are run
  // N of the agent NAME, wherever they appear: seeds benched side by side in one run directory.
  bool seeds_in_names = false;
};

// The agent a row belongs to under `seeds_in_names`: "grpo-s12" -> "grpo"; other names unchanged.
std::string agent_of_seed_name(const std::string& name);

// One figure of one agent in one regime. A NaN point is n/a; `na` then says why.
struct MetricEstimate {
  std::string metric;  // "speedup_iqm", "oracle_fraction_iqm", "speedup_geomean", "slow_share",
                       // "pass@1", "pass@K", "compile_rate", "novel_correct_share",
                       // "probability_of_improvement"
  Interval value;
  std::string na;
};

// One agent in one regime.
struct AgentEstimates {
  std::string agent;  // the label
  std::size_t runs = 0, matrices = 0;
  std::vector<MetricEstimate> metrics;  // in table order, without the probability of improvement
  // P(agent > reference) on a random matrix of the regime (speedups, failures as 1); absent for
  // the reference itself.
  std::optional<MetricEstimate> improvement;
  // Paired: as many runs as the reference, run i of both from one run directory (timed side by
  // side in one worker); the bootstrap of the improvement then draws the same runs for both.
  bool paired = false;
  // Not paired run by run, but every run of both comes from the same run directories (seeds named
  // in agent names: three grpo seeds benched beside one sft).
  bool same_run_dirs = false;
  // "yes", "same run dirs" or "no".
  [[nodiscard]] std::string pairing() const;
};

struct RegimeSection {
  RegimeScope regime = RegimeScope::all;
  std::size_t matrices = 0;
  std::vector<AgentEstimates> agents;  // empty when the regime has no matrix
};

// One run of an agent: the rows of `agent` in Comparison::runs[run_dir].
struct AgentRun {
  std::size_t run_dir = 0;
  std::string agent;  // the `agent` column ("grpo", or "grpo-s2" under seeds_in_names)
  friend bool operator==(const AgentRun&, const AgentRun&) = default;
};

struct ComparedAgent {
  std::string label;           // "sft", or "EXPERIMENT/sft" when the name collides
  std::string name;            // the agent (the `agent` column, less a -sN under seeds_in_names)
  std::vector<AgentRun> runs;  // its runs (seeds), in the order read
};

struct Comparison {
  std::vector<ComparedRun> runs;
  std::vector<ComparedAgent> agents;
  std::string reference;              // a label
  std::vector<std::string> matrices;  // the tasks: in every run of every agent
  std::vector<std::string> dropped;   // matrices some run lacks
  std::int64_t k = 1;                 // of pass@k
  bool oracle_fraction = false;       // every results.csv has the column
  bool novel = false;                 // every results.csv has the column
  CompareOptions options;
  std::vector<RegimeSection> sections;  // all, large, medium, small (or the one asked for)
  std::vector<std::string> notes;       // what a reader must know (dropped matrices, n/a, ...)

  // The Markdown report; `plot_line` is the image line or the note of why there is none.
  [[nodiscard]] std::string to_markdown(const std::string& plot_line) const;
  // One row per agent x regime x metric: agent,regime,metric,point,low,high,runs,matrices,versus,
  // paired (the last two for the probability of improvement only; paired as AgentEstimates::
  // pairing() spells it).
  [[nodiscard]] std::string to_csv() const;
};

// Reads the run directories and computes every estimate. ComparisonError for bad input (no run
// directory, a directory without results.csv, a malformed line, no matrix common to every run, an
// unknown or ambiguous reference agent).
Comparison compare_agents(const std::vector<std::filesystem::path>& run_dirs,
                          const CompareOptions& options);

struct ComparisonOutcome {
  std::filesystem::path report, csv;          // OUT/compare.md, OUT/compare.csv
  std::optional<std::filesystem::path> plot;  // OUT/intervals.png when drawn
  std::string plot_skipped;                   // why not, otherwise
};

// Writes OUT/compare.md, OUT/compare.csv and (with gnuplot, `plots` true) OUT/intervals.png with
// its .dat and .gp. OUT is created if needed.
ComparisonOutcome write_comparison(const Comparison& comparison, const std::filesystem::path& out,
                                   const std::string& gnuplot = "gnuplot", bool plots = true);

}  // namespace sparserl::experiments
