// A policy's greedy and pass@k evaluation into results.csv (policy_evaluation.hpp).
#include "policy_evaluation.hpp"

#if defined(SPARSERL_HAVE_AGENTS)

#include <cmath>
#include <map>
#include <optional>

#include "bench_oracle.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/experiments/novelty.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/experiments/stage_knobs.hpp"

namespace sparserl::experiments {
namespace {

// What results.csv takes from a greedy episode: the program and its figures.
struct GreedyAnswer {
  std::optional<reward::EvalResult> eval;
  std::optional<TokenSequence> program;
};

void fill_figures(MatrixResult& r, const GreedyAnswer& answer) {
  if (!answer.eval) return;
  const reward::EvalResult& e = *answer.eval;
  r.program = e.program_digest;
  if (!e.timed) return;
  r.cusparse_us = e.timing.baseline_median_us;
  r.cusparse_path = e.timing.baseline_algorithm;
  r.cusparse_paths = e.timing.baseline_paths;
  if (e.correct) {
    r.candidate_us = e.timing.median_us;
    r.gflops = e.timing.gflops;
    r.bandwidth_fraction = e.timing.bandwidth_fraction;
  }
}

}  // namespace

Json evaluate_policy(Session& s, agents::PolicyAgent& agent, const PartTasks& part,
                     const std::string& label, std::int64_t step, MetricsWriter& metrics,
                     const std::filesystem::path& results, const CorpusSpec& corpus,
                     const std::string& corpus_note, const StopSignals& stop) {
  const std::vector<datasets::Task>& tasks = part.tasks;
  BenchOracle oracle(s, part);
  CorpusLibrary corpora(s.tokenizer);
  const ProgramCorpus& trained_on = corpora.get(corpus, corpus_note);
  // The env shows what this policy was trained to read.
  env::EnvConfig e = env_config(s.config);
  e.max_tokens = agent.config().policy.max_tokens;
  e.mask = agent.config().mask;
  e.observation.nnz_samples = agent.config().policy.nnz_samples;
  e.observation.embedding_dim = agent.config().policy.embedding_dim;
  auto env = s.make_env(e, env::TaskSource::from_tasks(tasks, env::TaskOrder::sequential));
  agents::EvaluationConfig c;
  const EvalConfig eval = eval_config(s.config);
  c.greedy = eval.greedy;
  c.samples = static_cast<int>(eval.samples);
  c.sampling.temperature = eval.temperature;
  c.tasks_per_batch = static_cast<int>(eval.tasks_per_batch);
  c.seed = static_cast<std::uint64_t>(s.config.integer("experiment.seed"));
  std::map<std::string, GreedyAnswer> greedy;
  const auto on_episode = [&](const env::Episode& episode) {
    if (!episode.policy_id.ends_with(":greedy")) return;
    GreedyAnswer& a = greedy[episode.task.uri];
    a.eval = episode.eval;
    a.program = normalised_episode(*s.tokenizer, episode);
  };
  const agents::EvaluationSummary summary =
      agents::run_evaluation(agent, *env, tasks, c, on_episode);
  metrics.append(step, "eval", summary.statistics);
  std::vector<MatrixResult> rows;
  for (const agents::TaskEvaluation& t : summary.tasks) {
    MatrixResult r;
    r.matrix = t.task.uri;
    r.nnz = s.store->load(t.task.uri)->nnz();
    r.agent = label;
    r.compiled = t.greedy_compiled;
    r.correct = t.greedy_correct;
    r.tested = s.gpu;
    r.candidate_us = r.cusparse_us = r.gflops = r.bandwidth_fraction = std::nan("");
    r.speedup = t.greedy_correct && t.greedy_speedup > 0 ? t.greedy_speedup : std::nan("");
    // The fastest correct answer among the greedy one and the samples (as the bench counts it).
    r.best_speedup = t.best_speedup > 0 ? t.best_speedup : std::nan("");
    r.samples = t.sampled;
    r.samples_compiled = t.sampled_compiled;
    r.samples_correct = t.sampled_correct;
    const auto answer = greedy.find(t.task.uri);
    if (answer != greedy.end()) {
      fill_figures(r, answer->second);
      const Novelty novelty = novelty_of(trained_on, answer->second.program, r.correct);
      r.novel = novelty.novel;
      r.corpus_distance = novelty.distance;
    }
    rows.push_back(r);
  }
  tag_results(rows, part);
  oracle.finish(rows, {}, stop);
  write_results_csv(results, rows);
  std::string line = "eval: " + std::to_string(tasks.size()) + " tasks";
  for (const auto& [name, value] : summary.statistics) {
    if (name == "eval/greedy_compile_rate" || name == "eval/greedy_correct_rate" ||
        name.rfind("eval/pass@", 0) == 0) {
      line += "  " + name + " " + json_number(value);
    }
  }
  s.say(line);
  Json extra = Json::object();
  extra["oracle"] = oracle.record();
  Json novelty = Json::object();
  novelty[label] = trained_on.description();
  extra["novelty"] = std::move(novelty);
  return extra;
}

}  // namespace sparserl::experiments

#endif  // SPARSERL_HAVE_AGENTS
