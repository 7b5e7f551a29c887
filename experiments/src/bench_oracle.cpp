// The oracle step of `sparserl bench` (bench_oracle.hpp).
#include "bench_oracle.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "sparserl/experiments/progress.hpp"
#include "sparserl/experiments/runner.hpp"
#ifdef SPARSERL_ORACLE_HAVE_KERNELS
#include "sparserl/kernels/evaluator_backend.hpp"
#endif

namespace sparserl::experiments {

#ifdef SPARSERL_ORACLE_HAVE_KERNELS
std::optional<OracleEntry> oracle_entry(const kernels::SearchResult& result,
                                        const reward::GpuProtocol& full) {
  const kernels::CandidateResult* best = result.best_candidate();
  if (best == nullptr || !best->correct() || !best->timed()) return std::nullopt;
  OracleEntry e;
  e.matrix = result.task.uri;
  e.oracle_us = best->result.timing.median_us;
  e.baseline_us = best->result.timing.baseline_median_us;
  e.oracle_speedup = best->result.timing.speedup;
  e.program = best->result.program_digest;
  e.design = best->point.id();
  e.protocol = best->protocol == "full" ? full.str() : "screen " + best->protocol;
  return e;
}
#endif

BenchOracle::BenchOracle(Session& session, const PartTasks& part) : s_(session), part_(part) {
  const Config& c = s_.config;
  mode_ = c.string("bench.oracle");
  budget_ = c.integer("bench.oracle_budget");
  protocol_ = gpu_protocol(c).str();
  if (!s_.gpu_info.devices.empty()) device_ = s_.gpu_info.devices.front().name;
  if (mode_ == "off") {
    summary_ = "off (bench.oracle = \"off\"): oracle_speedup and oracle_fraction are n/a";
    return;
  }
  if (device_.empty()) {
    summary_ = mode_ == "compute"
                   ? "bench.oracle = \"compute\", but there is no GPU: the template search cannot "
                     "time anything, so oracle_speedup and oracle_fraction are n/a"
                   : "no GPU, so no device to key DATA_DIR/oracle by: oracle_speedup and "
                     "oracle_fraction are n/a";
    return;
  }
  OracleKey key;
  key.split_digest = part.split ? part.split->digest() : std::string();
  key.device = device_;
  const env::TaskTemplate what = task_template(c);
  key.op = what.op;
  key.dtype = what.dtype;
  key.k = what.k;
  key.budget = budget_;
  cache_.emplace(oracle_cache_file(data_dir(c, s_.root), key));
}

std::vector<OracleEntry> BenchOracle::compute(const std::vector<MatrixResult>& rows,
                                              const StopSignals& stop) {
  std::vector<OracleEntry> out;
  std::vector<datasets::Task> missing;
  std::set<std::string> seen;
  for (const datasets::Task& t : part_.tasks) {
    const OracleEntry* e = cache_->find(t.uri);
    const bool answered = std::any_of(rows.begin(), rows.end(),
                                      [&](const MatrixResult& r) { return r.matrix == t.uri; });
    if ((e == nullptr || e->protocol != protocol_) && answered && seen.insert(t.uri).second) {
      missing.push_back(t);
    }
  }
  if (missing.empty()) return out;
#ifdef SPARSERL_ORACLE_HAVE_KERNELS
  kernels::EvaluatorBackend candidates(*s_.evaluator);
  kernels::SearchOptions options;
  options.budget = static_cast<int>(budget_);
  options.finalists = std::min(options.finalists, options.budget);
  options.full = gpu_protocol(s_.config);
  kernels::TemplateSearch search(candidates, *s_.store, options);
  Progress progress("oracle", static_cast<std::int64_t>(missing.size()), s_.notices->stream(),
                    s_.progress());
  for (const datasets::Task& t : missing) {
    if (stop.requested()) break;
    if (auto e = oracle_entry(search.search(t), options.full)) out.push_back(std::move(*e));
    progress.advance(1, t.uri);
  }
  progress.finish();
#else
  (void)stop;
#endif
  return out;
}

void BenchOracle::finish(std::vector<MatrixResult>& rows,
                         const std::map<std::string, OracleEntry>& template_entries,
                         const StopSignals& stop) {
  if (!cache_) {
    s_.say("oracle: " + summary_);
    return;
  }
  const Config& c = s_.config;
  const auto& agents = c.string_list("bench.agents");
  const bool template_ran = std::find(agents.begin(), agents.end(), "template") != agents.end();
  const std::vector<OracleEntry> fresh =
      template_ran ? entries_to_fill(*cache_, template_entries, c.integer("bench.template_budget"),
                                     budget_, protocol_)
                   : std::vector<OracleEntry>();
  filled_ = fresh.size();
  if (!fresh.empty()) cache_->store(fresh);
  std::string compute_note;
  if (mode_ == "compute") {
    if (!s_.gpu) {
      compute_note = "; bench.oracle = \"compute\" needs the GPU stages: nothing computed";
    } else {
      const std::vector<OracleEntry> computed = compute(rows, stop);
      computed_ = computed.size();
      if (!computed.empty()) cache_->store(computed);
    }
  }
  apply_oracle(rows, *cache_, protocol_);
  std::set<std::string> matrices, known;
  for (const MatrixResult& r : rows) {
    matrices.insert(r.matrix);
    if (std::isfinite(r.oracle_speedup)) known.insert(r.matrix);
  }
  known_ = known.size();
  summary_ = "the template search's best program (budget " + std::to_string(budget_) + ") on " +
             device_ + ": " + std::to_string(known_) + " of " + std::to_string(matrices.size()) +
             " matrices known (" + std::to_string(filled_) +
             " filled from this run's template agent, " + std::to_string(computed_) +
             " computed; bench.oracle = \"" + mode_ + "\"), cache " + cache_->file().string() +
             compute_note;
  s_.say("oracle: " + summary_);
}

Json BenchOracle::record() const {
  Json j = Json::object();
  j["mode"] = mode_;
  j["budget"] = budget_;
  j["device"] = device_;
  j["file"] = cache_ ? cache_->file().string() : std::string();
  j["known"] = known_;
  j["filled"] = filled_;
  j["computed"] = computed_;
  j["summary"] = summary_;
  return j;
}

}  // namespace sparserl::experiments
