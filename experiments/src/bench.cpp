// `sparserl bench CONFIG`: every agent of bench.agents answers for every matrix of bench.part, and
// the answers are evaluated by the same evaluator and protocol. One row per (matrix, agent) goes to
// results.csv, one per agent to summary.csv, and report.md shows both.
//
// What each agent answers with, and what pass@k counts:
//   template          the template search's best program (bench.template_budget measurements);
//                     deterministic: one answer, no samples (pass@k = pass@1)
//   random            bench.samples episodes of uniform tokens under the action mask; the answer
//                     is the first, pass@k counts all k
//   sft, reinforce,   a policy checkpoint (bench.<agent>_checkpoint): the answer is its greedy
//   ppo, grpo         program, pass@k counts it and bench.samples sampled programs (temperature
//                     eval.temperature)
// The answer's figures fill the speed columns: kernel and cuSPARSE median times, speedup, GFLOP/s
// and bandwidth fraction, all from the evaluator's timing stage. Without a GPU nothing is checked
// or timed, every row says tested = 0, and the tables say n/a instead of numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <sstream>

#include "session.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/seeding.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/runner.hpp"
#if __has_include("sparserl/kernels/template_search.hpp")
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/template_search.hpp"
#define SPARSERL_BENCH_HAVE_KERNELS 1
#endif
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/policy_agent.hpp"
#endif

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_learned(const std::string& agent) { return agent != "template" && agent != "random"; }

// The answer's row; `eval` is absent for a program that never reached the evaluator (cut at
// max_tokens).
MatrixResult answer_row(const datasets::Task& task, std::int64_t nnz, const std::string& agent,
                        const std::optional<reward::EvalResult>& eval, bool gpu) {
  MatrixResult r;
  r.matrix = task.uri;
  r.nnz = nnz;
  r.agent = agent;
  r.tested = gpu;
  r.compiled = eval && eval->compiled;
  r.correct = gpu && eval && eval->correct;
  r.candidate_us = r.cusparse_us = r.speedup = r.gflops = r.bandwidth_fraction = kNaN;
  if (eval && eval->timed) {
    r.cusparse_us = eval->timing.baseline_median_us;
    if (eval->correct) {
      r.candidate_us = eval->timing.median_us;
      r.speedup = eval->timing.speedup;
      r.gflops = eval->timing.gflops;
      r.bandwidth_fraction = eval->timing.bandwidth_fraction;
    }
  }
  return r;
}

void count_sample(MatrixResult& row, const std::optional<reward::EvalResult>& eval, bool gpu) {
  ++row.samples;
  if (eval && eval->compiled) ++row.samples_compiled;
  if (gpu && eval && eval->correct) ++row.samples_correct;
}

std::string csv_cell(double v) { return std::isfinite(v) ? json_number(v) : std::string(); }

void write_summary_csv(const fs::path& file, const std::vector<MatrixResult>& rows) {
  std::ostringstream out;
  out << "agent,matrices,tested,compile_rate,pass@1,pass@k,k,geomean_speedup,"
         "geomean_speedup_fallback,faster_share,median_gflops,mean_bandwidth_fraction\n";
  for (const AgentSummary& s : summarize_results(rows)) {
    out << s.agent << ',' << s.matrices << ',' << (s.tested ? 1 : 0) << ','
        << csv_cell(s.compile_rate) << ',' << csv_cell(s.pass_at_1) << ',' << csv_cell(s.pass_at_k)
        << ',' << s.k << ',' << csv_cell(s.geomean_speedup) << ','
        << csv_cell(s.geomean_speedup_fallback) << ',' << csv_cell(s.faster_share) << ','
        << csv_cell(s.median_gflops) << ',' << csv_cell(s.mean_bandwidth_fraction) << '\n';
  }
  write_file_atomically(file, out.str());
}

class Bench {
 public:
  Bench(Session& session, std::vector<datasets::Task> tasks, const StopSignals& stop)
      : s_(session), config_(session.config), tasks_(std::move(tasks)), stop_(stop) {
    for (const datasets::Task& t : tasks_) nnz_.push_back(s_.store->load(t.uri)->nnz());
  }

  std::vector<MatrixResult> run() {
    const auto& agents = config_.string_list("bench.agents");
    Progress progress("bench", static_cast<std::int64_t>(agents.size() * tasks_.size()),
                      s_.notices->stream(), s_.progress());
    std::vector<MatrixResult> rows;
    for (const std::string& agent : agents) {
      if (stop_.requested()) break;
      std::vector<MatrixResult> mine;
      if (agent == "template") mine = template_search(progress);
      if (agent == "random") mine = random_agent(progress);
      if (is_learned(agent)) mine = learned(agent, progress);
      rows.insert(rows.end(), mine.begin(), mine.end());
    }
    progress.finish();
    return rows;
  }

 private:
  std::vector<MatrixResult> template_search(Progress& progress) {
    std::vector<MatrixResult> rows;
#ifdef SPARSERL_BENCH_HAVE_KERNELS
    kernels::EvaluatorBackend candidates(*s_.evaluator);
    kernels::SearchOptions options;
    options.budget = static_cast<int>(config_.integer("bench.template_budget"));
    options.finalists = std::min(options.finalists, options.budget);
    options.full = gpu_protocol(config_);
    kernels::TemplateSearch search(candidates, *s_.store, options);
    for (std::size_t i = 0; i < tasks_.size() && !stop_.requested(); ++i) {
      const kernels::SearchResult result = search.search(tasks_[i]);
      std::optional<reward::EvalResult> eval;
      if (const kernels::CandidateResult* best = result.best_candidate()) eval = best->result;
      rows.push_back(answer_row(tasks_[i], nnz_[i], "template", eval, s_.gpu));
      progress.advance(1, "template " + tasks_[i].uri);
    }
#else
    (void)progress;
    throw RunnerError(
        "bench.agents: template needs the kernel design space (agents/kernels), "
        "which this build does not have");
#endif
    return rows;
  }

  std::vector<MatrixResult> random_agent(Progress& progress) {
    std::vector<MatrixResult> rows;
    const auto seed = static_cast<std::uint64_t>(config_.integer("experiment.seed"));
    env::RandomAgent agent(seed, s_.tokenizer->vocabulary_ptr());
    auto env = s_.make_env(env_config(config_),
                           env::TaskSource::from_tasks(tasks_, env::TaskOrder::sequential));
    const auto k = static_cast<std::uint64_t>(config_.integer("bench.samples"));
    for (std::size_t i = 0; i < tasks_.size() && !stop_.requested(); ++i) {
      MatrixResult row;
      for (std::uint64_t j = 0; j < k; ++j) {
        env::ResetOptions options;
        options.task = tasks_[i];
        options.episode_seed = env::episode_seed(seed, i * k + j);
        env::Observation obs = env->reset(std::nullopt, options).observation;
        while (true) {
          const env::ActionBatch action = agent.act(std::span<const env::Observation>(&obs, 1));
          env::StepResult step = env->step(action.tokens.front(), action.annotation(0));
          if (step.done()) break;
          obs = std::move(step.observation);
        }
        const env::Episode* episode = env->last_episode();
        const std::optional<reward::EvalResult> eval =
            episode != nullptr ? episode->eval : std::nullopt;
        if (j == 0) row = answer_row(tasks_[i], nnz_[i], "random", eval, s_.gpu);
        count_sample(row, eval, s_.gpu);
      }
      rows.push_back(row);
      progress.advance(1, "random " + tasks_[i].uri);
    }
    return rows;
  }

  std::vector<MatrixResult> learned(const std::string& name, Progress& progress) {
    std::vector<MatrixResult> rows;
#if defined(SPARSERL_HAVE_AGENTS)
    const fs::path checkpoint =
        resolve_path(s_.root, config_.string("bench." + name + "_checkpoint"));
    auto agent = agents::PolicyAgent::from_checkpoint(checkpoint, config_.string("agent.device"));
    env::EnvConfig e = env_config(config_);
    e.max_tokens = agent->config().policy.max_tokens;
    e.mask = agent->config().mask;
    e.observation.nnz_samples = agent->config().policy.nnz_samples;
    e.observation.embedding_dim = agent->config().policy.embedding_dim;
    auto env = s_.make_env(e, env::TaskSource::from_tasks(tasks_, env::TaskOrder::sequential));
    const int k = static_cast<int>(config_.integer("bench.samples"));
    agents::SamplingConfig greedy;
    greedy.greedy = true;
    agents::SamplingConfig sampled;
    sampled.temperature = config_.real("eval.temperature");
    const auto seed = static_cast<std::uint64_t>(config_.integer("experiment.seed"));
    const auto per_batch = static_cast<std::size_t>(config_.integer("eval.tasks_per_batch"));
    // The outcomes of one task's completions, evaluated together (those that ended with <eos>).
    auto outcomes = [&](const datasets::Task& task,
                        const std::vector<const agents::Completion*>& completions) {
      std::vector<std::optional<reward::EvalResult>> out(completions.size());
      std::vector<std::vector<env::TokenId>> sequences;
      std::vector<std::size_t> where;
      for (std::size_t i = 0; i < completions.size(); ++i) {
        if (!completions[i]->terminated) continue;
        sequences.push_back(completions[i]->tokens);
        where.push_back(i);
      }
      if (sequences.empty()) return out;
      std::vector<env::EpisodeOutcome> evaluated = env->evaluate_group(task, sequences);
      for (std::size_t j = 0; j < where.size(); ++j) out[where[j]] = std::move(evaluated[j].eval);
      return out;
    };
    for (std::size_t first = 0; first < tasks_.size() && !stop_.requested(); first += per_batch) {
      const std::size_t last = std::min(tasks_.size(), first + per_batch);
      std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
      for (std::size_t i = first; i < last; ++i) {
        env::ResetOptions options;
        options.task = tasks_[i];
        options.episode_seed = env::episode_seed(seed, i);
        prompts.push_back(env->reset(std::nullopt, options).observation.matrix);
      }
      const std::vector<agents::Completion> answers = agent->generate(prompts, 1, greedy);
      const std::vector<agents::Completion> samples = agent->generate(prompts, k, sampled);
      for (std::size_t i = first; i < last; ++i) {
        const std::size_t b = i - first;
        std::vector<const agents::Completion*> completions = {&answers[b]};
        for (std::size_t j = 0; j < static_cast<std::size_t>(k); ++j) {
          completions.push_back(&samples[b * static_cast<std::size_t>(k) + j]);
        }
        const auto evals = outcomes(tasks_[i], completions);
        MatrixResult row = answer_row(tasks_[i], nnz_[i], name, evals[0], s_.gpu);
        for (std::size_t j = 1; j < evals.size(); ++j) count_sample(row, evals[j], s_.gpu);
        rows.push_back(row);
        progress.advance(1, name + " " + tasks_[i].uri);
      }
    }
#else
    (void)progress;
    throw RunnerError("bench.agents: " + name +
                      " is a learned agent and this build has no "
                      "LibTorch");
#endif
    return rows;
  }

  Session& s_;
  const Config& config_;
  std::vector<datasets::Task> tasks_;
  std::vector<std::int64_t> nnz_;
  const StopSignals& stop_;
};

void check_bench_config(const Config& config, const fs::path& root) {
  const auto& agents = config.string_list("bench.agents");
  if (agents.empty()) throw RunnerError("bench.agents: empty (name the agents to compare)");
  for (std::size_t i = 0; i < agents.size(); ++i) {
    if (std::find(agents.begin(), agents.begin() + static_cast<std::ptrdiff_t>(i), agents[i]) !=
        agents.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw RunnerError("bench.agents: '" + agents[i] + "' is listed twice");
    }
    if (!is_learned(agents[i])) continue;
    if (!have_learned_agents()) {
      throw RunnerError("bench.agents: '" + agents[i] +
                        "' is a learned agent and this build has "
                        "no LibTorch (template and random work without it)");
    }
    const std::string key = "bench." + agents[i] + "_checkpoint";
    const std::string& value = config.string(key);
    if (value.empty()) throw RunnerError(key + ": empty, but bench.agents lists " + agents[i]);
    const fs::path dir = resolve_path(root, value);
    std::error_code ec;
    if (!fs::exists(dir / "checkpoint.txt", ec)) {
      throw RunnerError(key + ": " + dir.string() +
                        " is not a policy checkpoint (no "
                        "checkpoint.txt; relative paths start at the root " +
                        root.string() + ")");
    }
  }
  (void)env_config(config);
}

}  // namespace

RunOutcome run_bench(Config config, const RunnerOptions& options) {
  std::ostream& log = log_stream(options);
  const fs::path root = resolve_root(config, options.root);
  pin_paths(config, root, options);
  check_bench_config(config, root);
  std::vector<datasets::Task> tasks =
      config_tasks(config, root, config.string("bench.part"), config.integer("bench.max_tasks"));
  auto session = Session::open(config, root, log);
  RunStart start = run_start(*session, options);
  const RunDirectory run = RunDirectory::create(session->config, start);
  session->record_to(run.root());
  session->say("run directory: " + run.root().string());
  session->say("bench: " + std::to_string(config.string_list("bench.agents").size()) +
               " agents x " + std::to_string(tasks.size()) + " matrices (" +
               config.string("bench.part") + " part)");
  RunStatus status = RunStatus::running;
  try {
    status = run.run([&](const StopSignals& stop) {
      Bench bench(*session, std::move(tasks), stop);
      const std::vector<MatrixResult> rows = bench.run();
      write_results_csv(run.results_path(), rows);
      write_summary_csv(run.root() / "summary.csv", rows);
    });
  } catch (const std::exception&) {
    finish_run(run, session->config, RunStatus::failed, log);
    throw;
  }
  return finish_run(run, session->config, status, log);
}

}  // namespace sparserl::experiments
