// `sparserl bench CONFIG`: every agent of bench.agents (and every NAME=CHECKPOINT of
// bench.policies) answers for every matrix of bench.part, and the answers are evaluated by the same
// evaluator and protocol, matrix by matrix (Bench says why). One row per (matrix, agent) goes to
// results.csv (tagged with the matrix's regime and family), one per (regime, agent) to
// summary.csv, and report.md shows them, the large regime first; every program the learned
// and random agents wrote goes to trajectories.h5 (bench.record_trajectories).
//
// What each agent answers with, and what pass@k counts:
//   template          the template search's best program (bench.template_budget measurements;
//                     with bench.template_measurements its learned cost model chooses them);
//                     deterministic: one answer, no samples (pass@k = pass@1); its row carries
//                     the search's wall time (search_seconds) and its answer's design point (design)
//   random            bench.samples episodes of uniform tokens under the action mask; the answer
//                     is the first, pass@k counts all k
//   sft, reinforce,   a policy checkpoint (bench.<agent>_checkpoint, or a bench.policies entry):
//   ppo, grpo, NAME   the answer is its greedy program, pass@k counts it and bench.samples sampled
//                     programs (temperature eval.temperature)
// The answer's figures fill the speed columns: kernel and cuSPARSE median times, speedup, GFLOP/s
// and bandwidth fraction, all from the evaluator's timing stage; best_speedup is the fastest
// correct program of the answer and its samples, and program the answer's digest. Without a GPU
// nothing is checked or timed, every row says tested = 0, and the tables say n/a instead of
// numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <sstream>

#include "bench_oracle.hpp"
#include "session.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/seeding.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/experiments/split_tasks.hpp"
#include "sparserl/experiments/stage_knobs.hpp"
#include "training_corpus.hpp"
#if __has_include("sparserl/kernels/template_search.hpp")
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/learned_cost_model.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#define SPARSERL_BENCH_HAVE_KERNELS 1
#endif
#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/training.hpp"
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
  r.best_speedup = kNaN;
  if (eval) r.program = eval->program_digest;
  if (eval && eval->timed) {
    r.cusparse_us = eval->timing.baseline_median_us;
    r.cusparse_path = eval->timing.baseline_algorithm;
    r.cusparse_paths = eval->timing.baseline_paths;
    if (eval->correct) {
      r.candidate_us = eval->timing.median_us;
      r.speedup = r.best_speedup = eval->timing.speedup;
      r.gflops = eval->timing.gflops;
      r.bandwidth_fraction = eval->timing.bandwidth_fraction;
    }
  }
  return r;
}

// Counts one of the k sampled programs into the answer's row (and its speedup into best of 1 + k).
void count_sample(MatrixResult& row, const std::optional<reward::EvalResult>& eval, bool gpu) {
  ++row.samples;
  if (eval && eval->compiled) ++row.samples_compiled;
  if (gpu && eval && eval->correct) ++row.samples_correct;
  if (gpu && eval && eval->correct && eval->timed && std::isfinite(eval->timing.speedup) &&
      !(eval->timing.speedup <= row.best_speedup)) {
    row.best_speedup = eval->timing.speedup;
  }
}

// One agent of the comparison: its table name and what it answers with.
struct Contender {
  enum class Kind { template_search, random, learned };
  std::string name;
  Kind kind = Kind::learned;
  std::string checkpoint;  // learned agents: the checkpoint folder as configured
  std::unique_ptr<env::SparseCudaEnv> env;  // random and learned agents
#if defined(SPARSERL_HAVE_AGENTS)
  std::unique_ptr<agents::PolicyAgent> policy;
  // The env's episode pipeline over the policy's tokens (an HF model's BPE ids are decoded by its
  // tokenizer, as in training): agent_pipeline() sets it, own_pipeline holds one made for it.
  const env::EpisodePipeline* pipeline = nullptr;
  std::unique_ptr<env::EpisodePipeline> own_pipeline;
  // The current batch of tasks' observations and completions: one greedy answer and k samples
  // per task.
  std::vector<env::Prompt> prompts;
  std::vector<agents::Completion> answers, samples;
#endif
  std::vector<MatrixResult> rows;
  // What its answers' novelty is measured against (training_corpus.hpp).
  const ProgramCorpus* corpus = nullptr;
};

// bench.agents, then bench.policies' NAME=CHECKPOINT entries, in table order.
std::vector<Contender> contenders_of(const Config& config) {
  std::vector<Contender> out;
  for (const std::string& agent : config.string_list("bench.agents")) {
    Contender c;
    c.name = agent;
    if (agent == "template") c.kind = Contender::Kind::template_search;
    if (agent == "random") c.kind = Contender::Kind::random;
    if (is_learned(agent)) c.checkpoint = config.string("bench." + agent + "_checkpoint");
    out.push_back(std::move(c));
  }
  for (const std::string& entry : config.string_list("bench.policies")) {
    Contender c;
    const std::size_t eq = entry.find('=');
    c.name = entry.substr(0, eq);
    c.checkpoint = entry.substr(eq + 1);
    out.push_back(std::move(c));
  }
  return out;
}

// The comparison runs matrix by matrix: for each batch of tasks every learned agent generates, then
// for each matrix every agent's programs go to the evaluator one agent after the other. So all the
// answers for one matrix are timed back to back (with one GPU, in one worker, against one set-up
// of the cuSPARSE baseline), and two agents that answer with the same program share one
// measurement (the evaluator's result cache): a difference between two agents is a difference of
// programs timed side by side, not of the runs or machines they were timed in.
class Bench {
 public:
  // `trajectories`: where every program of the learned and random agents goes (or nullptr).
  Bench(Session& session, std::vector<datasets::Task> tasks, const StopSignals& stop,
        env::TrajectoryWriter* trajectories)
      : s_(session),
        config_(session.config),
        tasks_(std::move(tasks)),
        stop_(stop),
        trajectories_(trajectories) {
    for (const datasets::Task& t : tasks_) nnz_.push_back(s_.store->load(t.uri)->nnz());
  }

  // Per agent, what its answers' novelty was measured against (run.json "novelty").
  [[nodiscard]] const Json& novelty_corpora() const { return novelty_corpora_; }

  // The template agent's answers as oracle entries (correct and timed ones), by matrix.
  [[nodiscard]] const std::map<std::string, OracleEntry>& template_entries() const {
    return template_entries_;
  }

  std::vector<MatrixResult> run() {
    std::vector<Contender> contenders = contenders_of(config_);
    for (Contender& c : contenders) prepare(c);
    Progress progress("bench", static_cast<std::int64_t>(contenders.size() * tasks_.size()),
                      s_.notices->stream(), s_.progress());
    const auto per_batch =
        static_cast<std::size_t>(std::max<std::int64_t>(1, eval_config(config_).tasks_per_batch));
    for (std::size_t first = 0; first < tasks_.size() && !stop_.requested(); first += per_batch) {
      const std::size_t last = std::min(tasks_.size(), first + per_batch);
      for (Contender& c : contenders) {
        if (c.kind == Contender::Kind::learned) generate(c, first, last);
        if (c.kind == Contender::Kind::template_search) search_batch(first, last);
      }
      for (std::size_t i = first; i < last && !stop_.requested(); ++i) {
        for (Contender& c : contenders) {
          if (stop_.requested()) break;
          c.rows.push_back(answer(c, i, i - first));
          progress.advance(1, c.name + " " + tasks_[i].uri);
        }
      }
    }
    progress.finish();
    // Agent-major rows: each agent's matrices in split order, agents in table order. An
    // interrupted bench keeps the matrices every agent answered.
    std::size_t complete = tasks_.size();
    for (const Contender& c : contenders) complete = std::min(complete, c.rows.size());
    std::vector<MatrixResult> rows;
    for (const Contender& c : contenders) {
      rows.insert(rows.end(), c.rows.begin(),
                  c.rows.begin() + static_cast<std::ptrdiff_t>(complete));
    }
    return rows;
  }

 private:
  // The corpus an agent was trained on: a checkpoint's as its run recorded it, else (and for the
  // template and random agents) the design space.
  const ProgramCorpus& corpus_of(const Contender& c) {
    if (c.kind == Contender::Kind::learned) {
      if (auto spec = recorded_corpus(resolve_path(s_.root, c.checkpoint))) {
        return corpora_.get(*spec);
      }
      return corpora_.get(design_space_corpus(config_),
                          "the checkpoint's run recorded no corpus, so the design space stands "
                          "for it");
    }
    return corpora_.get(design_space_corpus(config_));
  }

  void prepare(Contender& c) {
    c.corpus = &corpus_of(c);
    novelty_corpora_[c.name] = c.corpus->description();
    const auto seed = static_cast<std::uint64_t>(config_.integer("experiment.seed"));
    switch (c.kind) {
      case Contender::Kind::template_search:
#ifdef SPARSERL_BENCH_HAVE_KERNELS
        if (!search_) {
          candidates_ = std::make_unique<kernels::EvaluatorBackend>(*s_.evaluator);
          kernels::SearchOptions options;
          options.budget = static_cast<int>(config_.integer("bench.template_budget"));
          options.finalists = std::min(options.finalists, options.budget);
          options.full = gpu_protocol(config_);
          options.halving = config_.boolean("bench.template_halving");
          options.refine = static_cast<int>(config_.integer("bench.template_refine"));
          options.model = learned_model();
          search_ = std::make_unique<kernels::TemplateSearch>(*candidates_, *s_.store, options);
        }
#else
        throw RunnerError(
            "bench.agents: template needs the kernel design space (agents/kernels), "
            "which this build does not have");
#endif
        return;
      case Contender::Kind::random:
        random_ = std::make_unique<env::RandomAgent>(seed, s_.tokenizer->vocabulary_ptr());
        c.env = s_.make_env(env_config(config_),
                            env::TaskSource::from_tasks(tasks_, env::TaskOrder::sequential));
        return;
      case Contender::Kind::learned:
#if defined(SPARSERL_HAVE_AGENTS)
      {
        c.policy = agents::PolicyAgent::from_checkpoint(
            resolve_path(s_.root, c.checkpoint), config_.string("agent.device"),
            agents::PolicyAgent::CheckpointUse::inference);
        if (trajectories_ != nullptr && c.policy->tokens().kind() != "closed") {
          // One trajectories file names one vocabulary, the closed one the other agents write.
          throw RunnerError("bench.record_trajectories: " + c.name + " (" + c.checkpoint +
                            ") is an HF-model policy whose episodes hold its own tokenizer's ids; "
                            "set bench.record_trajectories = false to bench it");
        }
        env::EnvConfig e = env_config(config_);
        e.max_tokens = c.policy->config().policy.max_tokens;
        e.mask = c.policy->config().mask;
        e.observation.nnz_samples = c.policy->config().policy.nnz_samples;
        e.observation.embedding_dim = c.policy->config().policy.embedding_dim;
        c.env = s_.make_env(e, env::TaskSource::from_tasks(tasks_, env::TaskOrder::sequential));
        c.pipeline = &agents::agent_pipeline(*c.policy, *c.env, c.own_pipeline);
        return;
      }
#else
        throw RunnerError("bench.agents: " + c.name +
                          " is a learned agent and this build has no LibTorch");
#endif
    }
  }

#ifdef SPARSERL_BENCH_HAVE_KERNELS
  // The template search's learned cost model, fitted on bench.template_measurements (read only:
  // the bench never adds to the store, so no val or test measurement reaches a later fit);
  // nullptr without a store or without a usable measurement of this GPU.
  std::shared_ptr<const kernels::LearnedCostModel> learned_model() {
    const std::string& path = config_.string("bench.template_measurements");
    if (path.empty()) return nullptr;
    const fs::path file = resolve_path(s_.root, path);
    std::optional<kernels::MeasurementStore> store;
    try {
      store.emplace(file, false);
    } catch (const kernels::MeasurementStoreError& e) {
      throw RunnerError("bench.template_measurements: " + std::string(e.what()));
    }
    const std::string device = candidates_->gpu_available() ? candidates_->device() : "";
    auto model = std::make_shared<const kernels::LearnedCostModel>(store->measurements(), device);
    s_.say("bench: template search with " + model->describe() + " from " + file.string() +
           (model->size() == 0 ? " - none usable here, the analytic model chooses" : ""));
    return model->size() > 0 ? model : nullptr;
  }
#endif

  // The learned agent's greedy answer and k samples for tasks [first, last), nothing evaluated.
  void generate(Contender& c, std::size_t first, std::size_t last) {
#if defined(SPARSERL_HAVE_AGENTS)
    const auto seed = static_cast<std::uint64_t>(config_.integer("experiment.seed"));
    std::vector<env::EpisodeStart> starts;
    for (std::size_t i = first; i < last; ++i) {
      env::EpisodeStart& s = starts.emplace_back();
      s.task = tasks_[i];
      s.env_id = c.env->env_id();
      s.env_seed = seed;
      s.episode_index = i;
      s.episode_seed = env::episode_seed(seed, i);
    }
    c.prompts = c.pipeline->start(starts);
    std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
    for (const env::Prompt& p : c.prompts) prompts.push_back(p.matrix);
    agents::SamplingConfig greedy;
    greedy.greedy = true;
    agents::SamplingConfig sampled;
    sampled.temperature = eval_config(config_).temperature;
    c.answers = c.policy->generate(prompts, 1, greedy);
    c.samples = c.policy->generate(prompts, static_cast<int>(config_.integer("bench.samples")),
                                   sampled);
#else
    (void)c, (void)first, (void)last;
#endif
  }

  // Agent c's row for task i (b: the task's place in the current batch).
  // With the answer's novelty against the agent's training corpus.
  MatrixResult answer(Contender& c, std::size_t i, std::size_t b) {
    std::optional<TokenSequence> program;
    MatrixResult row;
    switch (c.kind) {
      case Contender::Kind::template_search:
        row = template_answer(i, program);
        break;
      case Contender::Kind::random:
        row = random_answer(c, i, program);
        break;
      case Contender::Kind::learned:
        row = learned_answer(c, i, b, program);
        break;
    }
    const Novelty novelty = novelty_of(*c.corpus, program, row.correct);
    row.novel = novelty.novel;
    row.corpus_distance = novelty.distance;
    return row;
  }

  // The template search over the batch's tasks, several at once (bench.template_parallel): each
  // search times one program at a time, so several keep the GPU workers busy. Answered per task
  // by template_answer() in the batch's order.
  void search_batch(std::size_t first, std::size_t last) {
#ifdef SPARSERL_BENCH_HAVE_KERNELS
    searched_.clear();
    const std::vector<datasets::Task> batch(tasks_.begin() + static_cast<std::ptrdiff_t>(first),
                                            tasks_.begin() + static_cast<std::ptrdiff_t>(last));
    std::vector<kernels::SearchResult> results = search_->search_all(
        batch, parallel_searches(s_, config_.integer("bench.template_parallel")));
    for (std::size_t i = first; i < last; ++i) searched_[i] = std::move(results[i - first]);
#else
    (void)first, (void)last;
#endif
  }

  MatrixResult template_answer(std::size_t i, std::optional<TokenSequence>& program) {
    std::optional<reward::EvalResult> eval;
#ifdef SPARSERL_BENCH_HAVE_KERNELS
    auto found = searched_.find(i);
    const kernels::SearchResult result =
        found != searched_.end() ? std::move(found->second) : search_->search(tasks_[i]);
    if (const kernels::CandidateResult* best = result.best_candidate()) {
      eval = best->result;
      program = normalised_program(*s_.tokenizer, best->program);
    }
    if (auto entry = oracle_entry(result, gpu_protocol(config_))) {
      template_entries_[tasks_[i].uri] = std::move(*entry);
    }
    MatrixResult row = answer_row(tasks_[i], nnz_[i], "template", eval, s_.gpu);
    row.search_seconds = result.wall_seconds;
    if (const kernels::CandidateResult* best = result.best_candidate()) {
      row.design = best->point.id();
    }
    return row;
#else
    (void)program;
    return answer_row(tasks_[i], nnz_[i], "template", eval, s_.gpu);
#endif
  }

  MatrixResult random_answer(Contender& c, std::size_t i, std::optional<TokenSequence>& program) {
    const auto seed = static_cast<std::uint64_t>(config_.integer("experiment.seed"));
    const auto k = static_cast<std::uint64_t>(config_.integer("bench.samples"));
    MatrixResult row;
    for (std::uint64_t j = 0; j < k; ++j) {
      env::ResetOptions options;
      options.task = tasks_[i];
      options.episode_seed = env::episode_seed(seed, i * k + j);
      env::Observation obs = c.env->reset(std::nullopt, options).observation;
      while (true) {
        const env::ActionBatch action = random_->act(std::span<const env::Observation>(&obs, 1));
        env::StepResult step = c.env->step(action.tokens.front(), action.annotation(0));
        if (step.done()) break;
        obs = std::move(step.observation);
      }
      const env::Episode* episode = c.env->last_episode();
      const std::optional<reward::EvalResult> eval =
          episode != nullptr ? episode->eval : std::nullopt;
      if (episode != nullptr && trajectories_ != nullptr) trajectories_->append(*episode, "random");
      if (j == 0) {
        row = answer_row(tasks_[i], nnz_[i], "random", eval, s_.gpu);
        if (episode != nullptr) program = normalised_episode(*s_.tokenizer, *episode);
      }
      count_sample(row, eval, s_.gpu);
    }
    return row;
  }

  MatrixResult learned_answer(Contender& c, std::size_t i, std::size_t b,
                              std::optional<TokenSequence>& program) {
#if defined(SPARSERL_HAVE_AGENTS)
    // The greedy answer and its k samples are one group of the task's prompt, finished by the
    // env's pipeline as in training (a program cut at max_tokens is not evaluated).
    const auto k = c.samples.size() / std::max<std::size_t>(1, c.answers.size());
    std::vector<agents::Completion> completions = {std::move(c.answers[b])};
    for (std::size_t j = 0; j < k; ++j) completions.push_back(std::move(c.samples[b * k + j]));
    std::vector<env::Episode> episodes =
        c.pipeline->run(std::span<const env::Prompt>(&c.prompts[b], 1), std::move(completions));
    for (std::size_t j = 0; j < episodes.size(); ++j) {
      episodes[j].policy_id = c.name + (j == 0 ? ":greedy" : ":sampled");
    }
    MatrixResult row = answer_row(tasks_[i], nnz_[i], c.name, episodes[0].eval, s_.gpu);
    program = normalised_episode(*s_.tokenizer, episodes[0]);
    for (std::size_t j = 1; j < episodes.size(); ++j) count_sample(row, episodes[j].eval, s_.gpu);
    if (trajectories_ != nullptr) {
      for (const env::Episode& e : episodes) trajectories_->append(e);
    }
    return row;
#else
    (void)c, (void)b, (void)program;
    return answer_row(tasks_[i], nnz_[i], c.name, std::nullopt, s_.gpu);
#endif
  }

  Session& s_;
  const Config& config_;
  std::vector<datasets::Task> tasks_;
  std::vector<std::int64_t> nnz_;
  const StopSignals& stop_;
  env::TrajectoryWriter* trajectories_;
  std::map<std::string, OracleEntry> template_entries_;
  CorpusLibrary corpora_{s_.tokenizer};
  Json novelty_corpora_ = Json::object();
  std::unique_ptr<env::RandomAgent> random_;
#ifdef SPARSERL_BENCH_HAVE_KERNELS
  std::unique_ptr<kernels::EvaluatorBackend> candidates_;
  std::unique_ptr<kernels::TemplateSearch> search_;
  std::map<std::size_t, kernels::SearchResult> searched_;  // the batch's searches, by task index
#endif
};

void check_bench_config(const Config& config, const fs::path& root) {
  const auto& agents = config.string_list("bench.agents");
  const auto& policies = config.string_list("bench.policies");
  if (agents.empty() && policies.empty())
    throw RunnerError("bench.agents and bench.policies: both empty (name the agents to compare)");
  auto require_checkpoint = [&](const std::string& key, const std::string& value) {
    const fs::path dir = resolve_path(root, value);
    std::error_code ec;
    if (!fs::exists(dir / "checkpoint.txt", ec)) {
      throw RunnerError(key + ": " + dir.string() +
                        " is not a policy checkpoint (no checkpoint.txt; relative paths start at "
                        "the root " +
                        root.string() + ")");
    }
  };
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const std::string key = "bench.policies[" + std::to_string(i) + "] '" + policies[i] + "'";
    if (!have_learned_agents())
      throw RunnerError(key + ": a learned agent, and this build has no LibTorch");
    require_checkpoint(key, policies[i].substr(policies[i].find('=') + 1));
  }
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
    require_checkpoint(key, value);
  }
  if (const std::string& store = config.string("bench.template_measurements"); !store.empty()) {
    std::error_code ec;
    if (!fs::exists(resolve_path(root, store), ec)) {
      throw RunnerError("bench.template_measurements: " + resolve_path(root, store).string() +
                        " does not exist (relative paths start at the root " + root.string() +
                        "; `sparserl tune --measurements FILE` makes one)");
    }
  }
  (void)env_config(config);
}

}  // namespace

RunOutcome run_bench(Config config, const RunnerOptions& options) {
  PartCommand started =
      start_part_command(config, options, "bench", "sparserl bench",
                         [&config](const fs::path& at) { check_bench_config(config, at); });
  std::ostream& log = started.log;
  const fs::path& root = started.root;
  PartTasks& part = started.part;
  std::vector<datasets::Task> tasks = part.tasks;
  auto session = Session::open(config, root, log);
  BenchOracle oracle(*session, part);
  RunStart start = run_start(*session, options);
  start.split = split_record(part);
  const RunDirectory run = RunDirectory::create(session->config, start);
  session->record_to(run.root());
  session->say("run directory: " + run.root().string());
  session->say("bench: " +
               std::to_string(config.string_list("bench.agents").size() +
                              config.string_list("bench.policies").size()) +
               " agents x " + std::to_string(tasks.size()) + " matrices (" +
               config.string("bench.part") + " part" +
               (part.split ? " of " + part.split->name + ", selection " + part.selection.describe()
                           : std::string()) +
               "), matrix by matrix");
  RunStatus status = RunStatus::running;
  try {
    status = run.run([&](const StopSignals& stop) {
      std::unique_ptr<env::TrajectoryWriter> trajectories;
      if (session->config.boolean("bench.record_trajectories")) {
        env::TrajectoryFileInfo info;
        info.run_id = run.run_id();
        info.config = session->config.to_toml();
        info.vocabulary_name = session->tokenizer->vocabulary().name();
        info.vocabulary_digest = session->tokenizer->vocabulary().digest();
        info.created_by = "sparserl bench";
        trajectories = std::make_unique<env::TrajectoryWriter>(run.trajectories_path(), info);
      }
      Bench bench(*session, std::move(tasks), stop, trajectories.get());
      std::vector<MatrixResult> rows = bench.run();
      tag_results(rows, part);
      oracle.finish(rows, bench.template_entries(), stop);
      RunInfo info = run.info();
      info.extra["oracle"] = oracle.record();
      info.extra["novelty"] = bench.novelty_corpora();
      run.write_info(info);
      write_results_csv(run.results_path(), rows);
      write_summary_csv(run.root() / "summary.csv", rows,
                        session->config.string("report.reference"));
    });
  } catch (const std::exception&) {
    finish_run(run, session->config, RunStatus::failed, log);
    throw;
  }
  return finish_run(run, session->config, status, log);
}

}  // namespace sparserl::experiments
