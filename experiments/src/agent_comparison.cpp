// Agents compared over seeds from several run directories (agent_comparison.hpp): reading the runs,
// grouping an agent's rows of different run directories into its runs, choosing the common
// matrices, the estimates per regime, and compare.md / compare.csv / intervals.png.
#include "sparserl/experiments/agent_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/plots.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "text_format.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

using detail::cell;
using detail::code;
using detail::csv_field;
using detail::csv_number;
using detail::num;
using detail::percent;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kUntested = "not tested on a GPU (tested = 0)";

// The folder's own name, also for "runs/x/" (a trailing slash).
std::string folder_name(const fs::path& dir) {
  const fs::path normal = dir.lexically_normal();
  const fs::path name =
      normal.filename().empty() ? normal.parent_path().filename() : normal.filename();
  return name.empty() ? dir.string() : name.string();
}

void read_run_json(ComparedRun& run) {
  const fs::path file = run.dir / "run.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  const std::optional<std::string> text = datasets::read_file_bytes(file);
  if (!text) throw ComparisonError(file.string() + ": cannot open run.json");
  try {
    const Json json = parse_json(*text, file.string());
    const RunInfo info = RunInfo::from_json(json, file.string());
    run.has_run_json = true;
    if (!info.run_id.empty()) run.run_id = info.run_id;
    if (!info.experiment.empty()) run.experiment = info.experiment;
    for (const auto& [name, seed] : info.seeds) {
      if (name == "experiment") run.seed = seed;
    }
    run.commit = info.git.commit;
    run.dirty = info.git.dirty;
    run.device = info.gpu.name;
    // The split the run read, where the runner records it; tolerated in any shape or absent.
    if (const Json* split = find_member(json, "split"); split != nullptr && split->is_object()) {
      if (const Json* n = find_member(*split, "name"); n != nullptr && n->is_string())
        run.split_name = as_string(*n);
      if (const Json* d = find_member(*split, "digest"); d != nullptr && d->is_string())
        run.split_digest = as_string(*d);
    }
  } catch (const JsonError& e) {
    throw ComparisonError(e.what());
  } catch (const RunInfoError& e) {
    throw ComparisonError(e.what());
  }
}

// A correct answer this much slower than cuSPARSE's best path is a slow one (slow_share): what the
// IQM drops and the geomean shows without saying how many (a study's SFT and PPO rows each had one
// answer at 0.001x on a matrix with dense rows).
constexpr double kSlowSpeedup = 0.5;

// A failed answer counts 1.0: the user falls back to cuSPARSE.
double speedup_or_one(const MatrixResult& r) {
  return r.correct && std::isfinite(r.speedup) && r.speedup > 0 ? r.speedup : 1.0;
}

// One figure of the tables: how a row scores and which statistic aggregates the scores.
struct MetricSpec {
  std::string id;
  Statistic statistic;
  bool needs_gpu;
  std::function<double(const MatrixResult&)> score;
};

// Where each (agent, run, matrix) row is: rows[agent][run][matrix] -> the MatrixResult.
using RowIndex = std::vector<std::vector<std::map<std::string, const MatrixResult*>>>;

std::string join(const std::vector<std::string>& items, std::size_t max_items = 10) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > max_items)
    out += ", ... (" + std::to_string(items.size() - max_items) + " more)";
  return out;
}

// Labels: an agent name held by runs of more than one experiment becomes EXPERIMENT/NAME.
std::vector<ComparedAgent> group_agents(const std::vector<ComparedRun>& runs, bool seeds_in_names) {
  auto name_of = [&](const std::string& agent) {
    return seeds_in_names ? agent_of_seed_name(agent) : agent;
  };
  std::map<std::string, std::set<std::string>> experiments_of;  // name -> experiments
  for (const ComparedRun& run : runs)
    for (const MatrixResult& r : run.results.rows)
      experiments_of[name_of(r.agent)].insert(run.experiment);
  std::vector<ComparedAgent> agents;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const MatrixResult& r : runs[i].results.rows) {
      const std::string name = name_of(r.agent);
      const bool collides = experiments_of[name].size() > 1;
      const std::string label = collides ? runs[i].experiment + "/" + name : name;
      auto it = std::find_if(agents.begin(), agents.end(),
                             [&](const ComparedAgent& a) { return a.label == label; });
      if (it == agents.end()) it = agents.insert(agents.end(), ComparedAgent{label, name, {}});
      const AgentRun run{i, r.agent};
      if (std::find(it->runs.begin(), it->runs.end(), run) == it->runs.end())
        it->runs.push_back(run);
    }
  }
  return agents;
}

std::string resolve_reference(const std::vector<ComparedAgent>& agents, const std::string& wanted) {
  if (wanted.empty()) return agents.front().label;
  std::vector<std::string> labels, by_name;
  for (const ComparedAgent& a : agents) {
    if (a.label == wanted) return a.label;
    labels.push_back(a.label);
    if (a.name == wanted) by_name.push_back(a.label);
  }
  if (by_name.size() == 1) return by_name.front();
  if (by_name.size() > 1) {
    throw ComparisonError("--reference '" + wanted +
                          "' is ambiguous: runs of several experiments "
                          "hold an agent of that name (" +
                          join(by_name) + "); name one of them");
  }
  throw ComparisonError("--reference '" + wanted + "': no such agent in the runs read (agents: " +
                        join(labels, labels.size()) + ")");
}

// The scores of `agent` on `tasks` as a [run][task] table; `tested` false if a row was not.
ScoreTable score_table(const std::vector<std::map<std::string, const MatrixResult*>>& rows,
                       const std::vector<std::string>& tasks,
                       const std::function<double(const MatrixResult&)>& score, bool& tested) {
  ScoreTable table(rows.size(), std::vector<double>(tasks.size()));
  tested = true;
  for (std::size_t run = 0; run < rows.size(); ++run) {
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const MatrixResult& r = *rows[run].at(tasks[t]);
      tested = tested && r.tested;
      table[run][t] = score(r);
    }
  }
  return table;
}

constexpr auto kRegimeScopeNames =
    datasets::enum_names<RegimeScope::all, RegimeScope::small>({"all", "large", "medium", "small"});
// The report's section title of each regime, in the same order.
constexpr auto kRegimeTitles = datasets::enum_names<RegimeScope::all, RegimeScope::small>(
    {"All matrices", "Large matrices (>= 1,000,000 nonzeros)",
     "Medium matrices (200,000 to 999,999 nonzeros)", "Small matrices (< 200,000 nonzeros)"});

}  // namespace

std::string_view to_string(RegimeScope regime) { return kRegimeScopeNames.name(regime); }

RegimeScope parse_regime(std::string_view text) {
  if (const auto regime = kRegimeScopeNames.parse(text)) return *regime;
  throw ComparisonError("regime '" + std::string(text) + "' is not all, small, medium or large");
}

std::string agent_of_seed_name(const std::string& name) {
  const auto dash = name.rfind("-s");
  if (dash == std::string::npos || dash == 0 || dash + 2 == name.size()) return name;
  for (std::size_t i = dash + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, dash);
}

RegimeScope regime_of_nnz(std::int64_t nnz) {
  switch (datasets::regime_of(nnz)) {
    case datasets::Regime::large:
      return RegimeScope::large;
    case datasets::Regime::medium:
      return RegimeScope::medium;
    case datasets::Regime::small:
      break;
  }
  return RegimeScope::small;
}

ComparedRun read_compared_run(const fs::path& dir) {
  ComparedRun run;
  run.dir = dir;
  run.run_id = run.experiment = folder_name(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ComparisonError(dir.string() + ": not a run directory (no such folder)");
  const fs::path csv = dir / "results.csv";
  if (!fs::exists(csv, ec)) {
    throw ComparisonError(dir.string() + ": no results.csv (sparserl compare reads the run " +
                          "directories of `sparserl bench` and `sparserl eval`)");
  }
  try {
    run.results = read_results_table(csv);
  } catch (const ResultsError& e) {
    throw ComparisonError(e.what());
  }
  if (run.results.rows.empty()) throw ComparisonError(csv.string() + ": no rows");
  std::map<std::pair<std::string, std::string>, std::size_t> seen;  // (agent, matrix) -> line
  for (std::size_t i = 0; i < run.results.rows.size(); ++i) {
    const MatrixResult& r = run.results.rows[i];
    const std::string where = csv.string() + ":" + std::to_string(run.results.lines[i]);
    const auto [it, fresh] = seen.emplace(std::make_pair(r.agent, r.matrix), run.results.lines[i]);
    if (!fresh) {
      throw ComparisonError(where + ": a second row for matrix '" + r.matrix + "' and agent '" +
                            r.agent + "' (the first is on line " + std::to_string(it->second) +
                            ")");
    }
    if (r.samples_correct > r.samples || r.samples_compiled > r.samples) {
      throw ComparisonError(where + ": samples_correct (" + std::to_string(r.samples_correct) +
                            ") or samples_compiled (" + std::to_string(r.samples_compiled) +
                            ") exceeds samples (" + std::to_string(r.samples) + ")");
    }
  }
  read_run_json(run);
  return run;
}

namespace {

// Everything compare_agents works out before the estimates.
struct Layout {
  RowIndex rows;                                        // rows[agent][run][matrix]
  std::map<std::string, std::optional<RegimeScope>> regime;  // of each common matrix
};

// The common matrices, the dropped ones and each matrix's regime; notes for the reader.
Layout lay_out(Comparison& c) {
  Layout layout;
  std::vector<std::string> all;  // every matrix, in order of first appearance
  std::set<std::string> known;
  layout.rows.resize(c.agents.size());
  for (std::size_t a = 0; a < c.agents.size(); ++a) {
    for (const AgentRun& run : c.agents[a].runs) {
      std::map<std::string, const MatrixResult*> m;
      for (const MatrixResult& r : c.runs[run.run_dir].results.rows) {
        if (r.agent != run.agent) continue;
        m.emplace(r.matrix, &r);
        if (known.insert(r.matrix).second) all.push_back(r.matrix);
      }
      layout.rows[a].push_back(std::move(m));
    }
  }
  for (const std::string& matrix : all) {
    bool everywhere = true;
    for (const auto& agent : layout.rows)
      for (const auto& run : agent) everywhere = everywhere && run.count(matrix) > 0;
    (everywhere ? c.matrices : c.dropped).push_back(matrix);
  }
  if (c.matrices.empty()) {
    std::string which;
    for (const ComparedRun& run : c.runs)
      which += "\n  " + (run.dir / "results.csv").string() + ": " +
               std::to_string(run.results.rows.size()) + " rows";
    throw ComparisonError("no matrix is answered by every agent in every run directory, so " +
                          std::string("there is nothing to compare:") + which);
  }
  if (!c.dropped.empty()) {
    c.notes.push_back(std::to_string(c.dropped.size()) + " of " + std::to_string(all.size()) +
                      " matrices are not answered in every run of every agent and were left out: " +
                      join(c.dropped) + ".");
  }
  // RegimeScope: the first `regime` tag of the matrix in any run, else its nnz.
  std::size_t tagged = 0, unknown = 0;
  for (const std::string& matrix : c.matrices) {
    std::optional<RegimeScope> tag, by_nnz;
    for (const auto& agent : layout.rows) {
      for (const auto& run : agent) {
        const MatrixResult& r = *run.at(matrix);
        if (!tag && !r.regime.empty()) tag = parse_regime(r.regime);
        if (!by_nnz && r.nnz > 0) by_nnz = regime_of_nnz(r.nnz);
      }
    }
    tagged += tag ? 1 : 0;
    unknown += tag || by_nnz ? 0 : 1;
    layout.regime[matrix] = tag ? tag : by_nnz;
  }
  if (tagged < c.matrices.size()) {
    c.notes.push_back(
        std::to_string(c.matrices.size() - tagged) + " of " + std::to_string(c.matrices.size()) +
        " matrices have no `regime` tag: their regime comes from nnz (small < 200,000 <= medium < "
        "1,000,000 <= large).");
  }
  if (unknown > 0) {
    c.notes.push_back(std::to_string(unknown) +
                      " matrices have neither a regime tag nor an nnz: they count under all "
                      "matrices only.");
  }
  return layout;
}

// k = the fewest samples a row of a sampling agent has (bench.samples: pass@8 for 8 samples, as
// the bench's own summary says); agents without any sample answer deterministically, and their
// pass@k is their pass@1.
void choose_k(Comparison& c, const Layout& layout) {
  std::int64_t k = std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> deterministic;
  for (std::size_t a = 0; a < c.agents.size(); ++a) {
    bool sampled = false;
    std::int64_t agent_k = std::numeric_limits<std::int64_t>::max();
    for (const auto& run : layout.rows[a]) {
      for (const std::string& matrix : c.matrices) {
        const MatrixResult& r = *run.at(matrix);
        sampled = sampled || r.samples > 0;
        agent_k = std::min(agent_k, r.samples);
      }
    }
    if (sampled)
      k = std::min(k, agent_k);
    else
      deterministic.push_back(c.agents[a].label);
  }
  c.k = k == std::numeric_limits<std::int64_t>::max() ? 1 : k;
  if (c.k > 1 && !deterministic.empty()) {
    c.notes.push_back(join(deterministic, deterministic.size()) +
                      (deterministic.size() == 1 ? " has" : " have") +
                      " no samples (one deterministic answer per matrix): pass@" +
                      std::to_string(c.k) + " is pass@1 there.");
  }
}

std::vector<MetricSpec> metric_specs(const Comparison& c) {
  std::vector<MetricSpec> specs;
  specs.push_back({"speedup_iqm", Statistic::interquartile_mean, true, speedup_or_one});
  if (c.oracle_fraction) {
    specs.push_back(
        {"oracle_fraction_iqm", Statistic::interquartile_mean, true, [](const MatrixResult& r) {
           return r.correct && std::isfinite(r.oracle_fraction) ? r.oracle_fraction : 0.0;
         }});
  }
  specs.push_back({"speedup_geomean", Statistic::geometric_mean, true, speedup_or_one});
  specs.push_back({"slow_share", Statistic::mean, true, [](const MatrixResult& r) {
                     return speedup_or_one(r) < kSlowSpeedup ? 1.0 : 0.0;
                   }});
  specs.push_back({"pass@1", Statistic::mean, true,
                   [](const MatrixResult& r) { return row_pass_at_k(r, 1); }});
  if (c.k > 1) {
    const std::int64_t k = c.k;
    // row_pass_at_k: a row without samples (one deterministic answer) has pass@k = pass@1.
    specs.push_back({"pass@" + std::to_string(k), Statistic::mean, true,
                     [k](const MatrixResult& r) { return row_pass_at_k(r, k); }});
  }
  specs.push_back({"compile_rate", Statistic::mean, false,
                   [](const MatrixResult& r) { return r.compiled ? 1.0 : 0.0; }});
  // The answer's correctness alone (pass@1 counts the samples too): the study's greedy aim.
  specs.push_back({"correct_rate", Statistic::mean, true,
                   [](const MatrixResult& r) { return r.correct ? 1.0 : 0.0; }});
  if (c.novel) {
    specs.push_back({"novel_correct_share", Statistic::mean, true, [](const MatrixResult& r) {
                       return r.correct && r.novel.value_or(false) ? 1.0 : 0.0;
                     }});
  }
  return specs;
}

// One agent's estimates over `tasks`.
AgentEstimates estimate_agent(const Comparison& c, const Layout& layout, std::size_t a,
                              std::size_t ref, const std::vector<std::string>& tasks) {
  AgentEstimates e;
  e.agent = c.agents[a].label;
  e.runs = c.agents[a].runs.size();
  e.matrices = tasks.size();
  const auto& rows = layout.rows[a];
  for (const MetricSpec& spec : metric_specs(c)) {
    MetricEstimate m;
    m.metric = spec.id;
    bool tested = true;
    const ScoreTable table = score_table(rows, tasks, spec.score, tested);
    bool applies = true;
    if (spec.id == "novel_correct_share") {
      applies = false;  // n/a when none of the agent's answers has a novelty value
      for (const auto& run : rows)
        for (const std::string& t : tasks) applies = applies || run.at(t)->novel.has_value();
    }
    if (spec.needs_gpu && !tested) {
      m.value = {kNaN, kNaN, kNaN};
      m.na = kUntested;
    } else if (!applies) {
      m.value = {kNaN, kNaN, kNaN};
      m.na = "no answer has a `novel` value";
    } else {
      m.value = stratified_bootstrap(table, spec.statistic, c.options.bootstrap);
    }
    e.metrics.push_back(std::move(m));
  }
  // Paired: run i of both from one run directory (timed side by side), for every i.
  const auto& runs_a = c.agents[a].runs;
  const auto& runs_ref = c.agents[ref].runs;
  e.paired =
      runs_a.size() == runs_ref.size() &&
      std::equal(runs_a.begin(), runs_a.end(), runs_ref.begin(),
                 [](const AgentRun& x, const AgentRun& y) { return x.run_dir == y.run_dir; });
  std::set<std::size_t> dirs_a, dirs_ref;
  for (const AgentRun& r : runs_a) dirs_a.insert(r.run_dir);
  for (const AgentRun& r : runs_ref) dirs_ref.insert(r.run_dir);
  e.same_run_dirs = !e.paired && dirs_a == dirs_ref;
  if (a != ref) {
    MetricEstimate m;
    m.metric = "probability_of_improvement";
    bool tested_a = true, tested_ref = true;
    const ScoreTable x = score_table(rows, tasks, speedup_or_one, tested_a);
    const ScoreTable y = score_table(layout.rows[ref], tasks, speedup_or_one, tested_ref);
    if (tested_a && tested_ref) {
      m.value = probability_of_improvement_interval(x, y, c.options.bootstrap, e.paired);
    } else {
      m.value = {kNaN, kNaN, kNaN};
      m.na = kUntested;
    }
    e.improvement = std::move(m);
  }
  return e;
}

// Notes on the runs themselves: devices, splits, agents of one run, untested rows.
void describe_runs(Comparison& c, const Layout& layout) {
  std::set<std::string> devices, splits;
  for (const ComparedRun& run : c.runs) {
    if (run.has_run_json) devices.insert(run.device);
    if (!run.split_digest.empty()) splits.insert(run.split_name + " " + run.split_digest);
    if (!run.has_run_json) {
      c.notes.push_back(run.dir.string() + " has no run.json: its seed, commit and device are " +
                        "unknown.");
    }
  }
  if (devices.size() > 1) {
    c.notes.push_back("The runs were timed on different GPUs (" +
                      join(std::vector<std::string>(devices.begin(), devices.end())) +
                      "): every speedup is over cuSPARSE on its own GPU, but the spread between "
                      "runs mixes seeds with machines.");
  }
  if (splits.size() > 1) {
    c.notes.push_back("The runs read different splits (" +
                      join(std::vector<std::string>(splits.begin(), splits.end())) +
                      "): only the matrices common to all are compared.");
  }
  std::vector<std::string> single, untested;
  for (std::size_t a = 0; a < c.agents.size(); ++a) {
    if (c.agents[a].runs.size() == 1) single.push_back(c.agents[a].label);
    bool tested = true;
    for (const auto& run : layout.rows[a])
      for (const std::string& m : c.matrices) tested = tested && run.at(m)->tested;
    if (!tested) untested.push_back(c.agents[a].label);
  }
  if (!single.empty()) {
    c.notes.push_back(join(single, single.size()) + (single.size() == 1 ? " has" : " have") +
                      " one run: with a single run per matrix there is nothing to resample, so " +
                      "the interval collapses to the point and says nothing about seeds.");
  }
  if (!untested.empty()) {
    c.notes.push_back(join(untested, untested.size()) +
                      ": rows not tested on a GPU (tested = 0), so everything but the compile " +
                      "rate is n/a.");
  }
}

}  // namespace

Comparison compare_agents(const std::vector<fs::path>& run_dirs, const CompareOptions& options) {
  if (run_dirs.empty()) throw ComparisonError("no run directory to compare (give at least one)");
  Comparison c;
  c.options = options;
  for (const fs::path& dir : run_dirs) c.runs.push_back(read_compared_run(dir));
  c.agents = group_agents(c.runs, options.seeds_in_names);
  c.reference = resolve_reference(c.agents, options.reference);
  const Layout layout = lay_out(c);
  // A yardstick is shown when every run has its column and some row holds a value (benches write
  // the columns always, empty where no oracle or novelty was measured).
  c.oracle_fraction = c.novel = true;
  bool any_oracle = false, any_novel = false;
  for (const ComparedRun& run : c.runs) {
    c.oracle_fraction = c.oracle_fraction && run.results.has_column("oracle_fraction");
    c.novel = c.novel && run.results.has_column("novel");
    for (const MatrixResult& r : run.results.rows) {
      any_oracle = any_oracle || std::isfinite(r.oracle_fraction);
      any_novel = any_novel || r.novel.has_value();
    }
  }
  c.oracle_fraction = c.oracle_fraction && any_oracle;
  c.novel = c.novel && any_novel;
  choose_k(c, layout);
  describe_runs(c, layout);
  const auto ref = static_cast<std::size_t>(
      std::find_if(c.agents.begin(), c.agents.end(),
                   [&](const ComparedAgent& a) { return a.label == c.reference; }) -
      c.agents.begin());
  const std::vector<RegimeScope> regimes =
      options.regime
          ? std::vector<RegimeScope>{*options.regime}
          : std::vector<RegimeScope>{RegimeScope::all, RegimeScope::large, RegimeScope::medium, RegimeScope::small};
  for (RegimeScope regime : regimes) {
    RegimeSection section;
    section.regime = regime;
    std::vector<std::string> tasks;
    for (const std::string& m : c.matrices) {
      if (regime == RegimeScope::all || layout.regime.at(m) == regime) tasks.push_back(m);
    }
    section.matrices = tasks.size();
    if (!tasks.empty()) {
      for (std::size_t a = 0; a < c.agents.size(); ++a)
        section.agents.push_back(estimate_agent(c, layout, a, ref, tasks));
    }
    c.sections.push_back(std::move(section));
  }
  return c;
}

namespace {

std::string_view regime_title(RegimeScope regime) { return kRegimeTitles.name(regime); }

bool is_share(const std::string& metric) {
  return metric.rfind("pass@", 0) == 0 || metric == "compile_rate" || metric == "correct_rate" ||
         metric == "novel_correct_share" || metric == "slow_share";
}

// "1.234 [1.102, 1.351]", "72.5% [61.0%, 83.3%]", or "n/a".
std::string estimate_cell(const MetricEstimate& m) {
  if (!std::isfinite(m.value.point)) return "n/a";
  auto f = [&](double v) {
    if (is_share(m.metric)) return percent(v);
    return num(v, m.metric == "probability_of_improvement" ? 3 : 4);
  };
  return f(m.value.point) + " [" + f(m.value.low) + ", " + f(m.value.high) + "]";
}

const MetricEstimate* find_metric(const AgentEstimates& e, const std::string& metric) {
  for (const MetricEstimate& m : e.metrics)
    if (m.metric == metric) return &m;
  return nullptr;
}

std::string metric_header(const std::string& metric) {
  if (metric == "speedup_iqm") return "IQM speedup (failures as 1)";
  if (metric == "oracle_fraction_iqm") return "IQM oracle fraction (failures as 0)";
  if (metric == "speedup_geomean") return "geomean speedup (failures as 1)";
  if (metric == "slow_share") return "answers < 0.5x";
  if (metric == "compile_rate") return "compile rate";
  if (metric == "correct_rate") return "correct answers";
  if (metric == "novel_correct_share") return "novel correct answers";
  return metric;  // pass@1, pass@k
}

void table(std::ostringstream& md, const RegimeSection& s, const std::vector<std::string>& metrics,
           const std::string& reference, bool improvement) {
  md << "| agent | runs |";
  for (const std::string& m : metrics) md << " " << metric_header(m) << " |";
  if (improvement) md << " P(agent > " << cell(reference) << ") | paired |";
  md << "\n|---|---|";
  for (std::size_t i = 0; i < metrics.size() + (improvement ? 2 : 0); ++i) md << "---|";
  md << "\n";
  for (const AgentEstimates& e : s.agents) {
    md << "| " << cell(e.agent) << " | " << e.runs << " |";
    for (const std::string& m : metrics) {
      const MetricEstimate* est = find_metric(e, m);
      md << " " << (est ? estimate_cell(*est) : "n/a") << " |";
    }
    if (improvement) {
      if (e.improvement)
        md << " " << estimate_cell(*e.improvement) << " | " << e.pairing() << " |";
      else
        md << " (reference) | |";
    }
    md << "\n";
  }
  md << "\n";
}

void section_tables(std::ostringstream& md, const Comparison& c, const RegimeSection& s) {
  md << "## " << regime_title(s.regime) << ": " << s.matrices << " matri"
     << (s.matrices == 1 ? "x" : "ces") << "\n\n";
  if (s.agents.empty()) {
    md << "No compared matrix falls in this regime.\n\n";
    return;
  }
  if (s.regime != RegimeScope::all && s.matrices == c.matrices.size() && c.sections.size() > 1 &&
      c.sections.front().regime == RegimeScope::all) {
    md << "Every compared matrix falls in this regime: the tables of all matrices above are its "
          "tables (compare.csv repeats them under `"
       << to_string(s.regime) << "`).\n\n";
    return;
  }
  std::vector<std::string> speed = {"speedup_iqm"};
  if (c.oracle_fraction) speed.emplace_back("oracle_fraction_iqm");
  speed.emplace_back("speedup_geomean");
  speed.emplace_back("slow_share");
  table(md, s, speed, c.reference, true);
  std::vector<std::string> correctness = {"pass@1"};
  if (c.k > 1) correctness.emplace_back("pass@" + std::to_string(c.k));
  correctness.emplace_back("compile_rate");
  correctness.emplace_back("correct_rate");
  if (c.novel) correctness.emplace_back("novel_correct_share");
  table(md, s, correctness, c.reference, false);
}

void method_section(std::ostringstream& md, const Comparison& c) {
  const BootstrapOptions& b = c.options.bootstrap;
  md << "## Method\n\n";
  md << "- **Runs and tasks.** An agent's runs are its rows from different run directories (its "
        "seeds)";
  if (c.options.seeds_in_names)
    md << ", and (--seeds-in-names) its NAME-sN rows, run N of NAME, wherever they are";
  md << "; the tasks are the matrices every run of every agent answered. Scores are per "
        "(run, matrix).\n";
  md << "- **Speedup** = cuSPARSE time / kernel time of the agent's answer (CUPTI kernel time, "
        "L2 flushed, the evaluator's protocol, in the run's GPU worker). A failed answer (did not "
        "compile, wrong, not timed) counts 1.0: the user falls back to cuSPARSE.";
  if (c.oracle_fraction)
    md << " The **oracle fraction** is the results.csv column (the answer's speed as a share of "
          "the template search's best program); a failed answer counts 0.";
  md << "\n";
  md << "- **IQM**: the mean of the middle half of all (run, matrix) scores - sorted, floor(n/4) "
        "dropped from each end (scipy.stats.trim_mean(x, 0.25), rliable's IQM); robust to a few "
        "extreme matrices, less noisy than the median. The **geomean** is exp(mean log). "
        "**Answers < 0.5x**: the share of (run, matrix) answers correct but slower than half "
        "cuSPARSE's time (a failure counts 1.0, so it is none) - the rare catastrophic design "
        "choice that the IQM drops and the geomean only hints at.\n";
  md << "- **Intervals**: " << num(100 * b.confidence, 3)
     << "% percentile intervals of a stratified bootstrap (rliable): " << b.replicates
     << " replicates, each drawing for every matrix on its own as many runs as the agent has, "
        "with replacement, and recomputing the figure; seed "
     << b.seed
     << " (the project's xoshiro256** generator: the same intervals on every platform). They "
        "show the spread over seeds on these matrices, not over other matrices.\n";
  md << "- **pass@k** (unbiased, Chen et al. 2021): per (run, matrix), n = 1 + samples programs "
        "(the answer and its samples), c = how many were correct, 1 - C(n-c, k) / C(n, k); the "
        "mean "
        "over runs and matrices. k = "
     << c.k
     << ", the largest every row of a sampling agent allows. This pass@1 counts the samples too "
        "(the bench's \"correct rate\" counts the answer alone).\n";
  md << "- **Compile rate**: answers that compiled (samples not counted).";
  if (c.novel)
    md << " **Novel correct answers**: answers both correct and novel (the `novel` column), over "
          "all answers; n/a for an agent none of whose answers has a `novel` value.";
  md << "\n";
  md << "- **P(agent > " << cell(c.reference)
     << ")**: for each matrix, the share of (run of the agent, run of the reference) pairs in "
        "which the agent's speedup is higher, a tie counting 1/2 (answers with the same program in "
        "one bench share one measurement and tie); the mean over matrices (rliable's probability "
        "of improvement). **Paired**: both agents' runs come from the same run directories, so "
        "each matrix's answers were timed back to back in one GPU worker; the bootstrap then "
        "draws the same runs for both. **Same run dirs**: every run of both comes from the same "
        "run directories, but not one to one (three seeds named grpo-s1..s3 benched beside one "
        "sft): timed side by side, resampled independently. **No**: independently.\n";
  md << "- **Regimes**: the `regime` column where present, else nnz (small < 200,000 <= medium < "
        "1,000,000 <= large). Large matrices are the headline: small ones are launch-bound.\n";
  md << "- Without a GPU (rows with tested = 0) nothing was checked or timed: everything but the "
        "compile rate is n/a, never 0.\n\n";
}

void runs_section(std::ostringstream& md, const Comparison& c) {
  md << "## Runs read\n\n| run directory | experiment | seed | git commit | device | split | "
        "agents | rows |\n|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const ComparedRun& run = c.runs[i];
    std::vector<std::string> agents;  // "sft", or "grpo (grpo-s1, grpo-s2)" under seeds_in_names
    for (const ComparedAgent& a : c.agents) {
      std::vector<std::string> names;
      for (const AgentRun& r : a.runs)
        if (r.run_dir == i) names.push_back(r.agent);
      if (names.empty()) continue;
      agents.push_back(names.size() == 1 && names[0] == a.name
                           ? a.label
                           : a.label + " (" + join(names, names.size()) + ")");
    }
    std::string commit = run.has_run_json ? run.commit.substr(0, 12) : "unknown";
    if (run.dirty.value_or(false)) commit += " (with local changes)";
    std::string split = run.split_name;
    if (!run.split_digest.empty()) split += " " + run.split_digest.substr(0, 12);
    md << "| " << code(run.dir.string()) << " | " << cell(run.experiment) << " | "
       << (run.seed ? std::to_string(*run.seed) : "unknown") << " | " << code(commit) << " | "
       << cell(run.has_run_json ? run.device : "unknown") << " | "
       << (split.empty() ? "not recorded" : cell(split)) << " | "
       << cell(join(agents, agents.size())) << " | " << run.results.rows.size() << " |\n";
  }
  md << "\n";
}

}  // namespace

std::string AgentEstimates::pairing() const {
  return paired ? "yes" : same_run_dirs ? "same run dirs" : "no";
}

std::string Comparison::to_markdown(const std::string& plot_line) const {
  std::ostringstream md;
  md << "# Agents compared over seeds\n\n";
  md << agents.size() << " agents, " << runs.size() << " run director"
     << (runs.size() == 1 ? "y" : "ies") << ", " << matrices.size()
     << " matrices answered in every run";
  if (!dropped.empty()) md << " (" << dropped.size() << " others left out: see the notes)";
  md << "; reference agent **" << cell(reference)
     << "**. Every figure is a point estimate with its "
     << num(100 * options.bootstrap.confidence, 3)
     << "% stratified bootstrap interval [low, high] (" << options.bootstrap.replicates
     << " replicates, seed " << options.bootstrap.seed << "); the method is at the end.\n\n";
  const RegimeSection* headline = nullptr;
  for (const RegimeSection& s : sections)
    if (s.regime == (options.regime ? *options.regime : RegimeScope::large)) headline = &s;
  md << "## Headline: " << regime_title(headline ? headline->regime : RegimeScope::large) << "\n\n";
  if (headline == nullptr || headline->agents.empty()) {
    md << "None of the " << matrices.size()
       << " compared matrices is large (>= 1,000,000 nonzeros): there is no headline; the "
          "sections below give every regime present.\n\n";
  } else {
    table(md, *headline, {"speedup_iqm"}, reference, true);
  }
  md << plot_line << "\n\n";
  for (const RegimeSection& s : sections) section_tables(md, *this, s);
  if (!notes.empty()) {
    md << "## Notes\n\n";
    for (const std::string& n : notes) md << "- " << n << "\n";
    md << "\n";
  }
  method_section(md, *this);
  runs_section(md, *this);
  return md.str();
}

std::string Comparison::to_csv() const {
  std::ostringstream out;
  out << "agent,regime,metric,point,low,high,runs,matrices,versus,paired\n";
  auto line = [&](const AgentEstimates& e, RegimeScope regime, const MetricEstimate& m,
                  const std::string& versus, const std::string& paired) {
    out << csv_field(e.agent) << ',' << to_string(regime) << ',' << csv_field(m.metric) << ','
        << csv_number(m.value.point) << ',' << csv_number(m.value.low) << ','
        << csv_number(m.value.high) << ',' << e.runs << ',' << e.matrices << ','
        << csv_field(versus) << ',' << paired << '\n';
  };
  for (const RegimeSection& s : sections) {
    for (const AgentEstimates& e : s.agents) {
      for (const MetricEstimate& m : e.metrics) line(e, s.regime, m, "", "");
      if (e.improvement) line(e, s.regime, *e.improvement, reference, e.pairing());
    }
  }
  return out.str();
}

ComparisonOutcome write_comparison(const Comparison& c, const fs::path& out,
                                   const std::string& gnuplot, bool plots) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ComparisonError(out.string() + ": cannot create the folder (" + ec.message() + ")");
  ComparisonOutcome outcome;
  outcome.report = out / "compare.md";
  outcome.csv = out / "compare.csv";
  write_file_atomically(outcome.csv, c.to_csv());

  std::string plot_line;
  if (!plots) {
    outcome.plot_skipped = "--no-plots";
  } else if (const GnuplotProbe probe = find_gnuplot(gnuplot); !probe.gnuplot) {
    outcome.plot_skipped = probe.reason;
  } else {
    IntervalPlot plot;
    plot.title = "IQM speedup over cuSPARSE (failures as 1), " +
                 num(100 * c.options.bootstrap.confidence, 3) + "% stratified bootstrap intervals";
    plot.xlabel = "speedup (cuSPARSE time / kernel time), log scale";
    plot.log_x = true;
    plot.reference_x = 1.0;
    for (const RegimeSection& s : c.sections) {
      // A regime holding every matrix repeats the panel of all matrices.
      const bool repeats = s.regime != RegimeScope::all && s.matrices == c.matrices.size() &&
                           c.sections.front().regime == RegimeScope::all;
      if (s.agents.empty() || repeats) continue;
      IntervalPanel panel;
      panel.title = std::string(to_string(s.regime)) + " (" + std::to_string(s.matrices) +
                    (s.matrices == 1 ? " matrix)" : " matrices)");
      for (const AgentEstimates& e : s.agents) {
        const MetricEstimate* m = find_metric(e, "speedup_iqm");
        panel.rows.push_back({e.agent, m->value.point, m->value.low, m->value.high});
      }
      plot.panels.push_back(std::move(panel));
    }
    const bool timed = std::any_of(plot.panels.begin(), plot.panels.end(), [](const auto& p) {
      return std::any_of(p.rows.begin(), p.rows.end(),
                         [](const IntervalRow& r) { return std::isfinite(r.point); });
    });
    if (!timed) {
      outcome.plot_skipped = "no agent has a timed speedup (rows not tested on a GPU)";
    } else {
      try {
        draw_interval_plot(*probe.gnuplot, plot, out / "intervals.png");
        outcome.plot = out / "intervals.png";
      } catch (const PlotError& e) {
        outcome.plot_skipped = e.what();
      }
    }
  }
  plot_line = outcome.plot ? "![IQM speedup with its intervals, per regime](intervals.png)"
                           : "(intervals.png not drawn: " + cell(outcome.plot_skipped) + ")";
  write_file_atomically(outcome.report, c.to_markdown(plot_line));
  return outcome;
}

}  // namespace sparserl::experiments
