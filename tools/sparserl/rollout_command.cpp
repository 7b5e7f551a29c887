// `sparserl rollout`: runs an agent's episodes through the environment (VectorEnv, asynchronous,
// the evaluator's worker pool behind it) and prints a summary - episodes, compile rate, correct
// rate, mean reward, steps/s, evaluations/s - optionally recording every episode to an HDF5
// trajectory file. The agents: `random` (uniform over the action mask) and `template` (the kernel
// design space's template search, agents/kernels, emitting its best program token by token). The
// template agent's adapter lives here because env/ may not depend on agents/.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "options.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/env/vector_env.hpp"
#if __has_include("sparserl/kernels/evaluator_backend.hpp")
#include "sparserl/experiments/json.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/template_search.hpp"
#define SPARSERL_ROLLOUT_HAVE_KERNELS 1
#endif

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The template search as an env::Agent: the first action of an episode runs (or looks up) the
// search for the task; the episode then spells the best program's tokens.
#ifdef SPARSERL_ROLLOUT_HAVE_KERNELS
class TemplateAgent : public env::Agent {
 public:
  TemplateAgent(kernels::TemplateSearchAgent& search,
                std::shared_ptr<const env::Tokenizer> tokenizer)
      : search_(search), tokenizer_(std::move(tokenizer)) {}

  [[nodiscard]] std::string name() const override { return "template"; }
  [[nodiscard]] std::string policy_id() const override { return "template_search"; }

  env::ActionBatch act(std::span<const env::Observation> observations) override {
    env::ActionBatch batch;
    for (const env::Observation& o : observations) {
      const std::vector<env::TokenId>& plan = plan_for(o.task);
      const std::size_t at = o.tokens.size();
      // A plan longer than the episode's budget is cut by max_tokens (truncated).
      batch.tokens.push_back(at < plan.size() ? plan[at] : tokenizer_->vocabulary().eos());
      batch.log_probs.push_back(0.0f);  // deterministic: probability 1
      batch.values.push_back(0.0f);
    }
    return batch;
  }
  void save(const fs::path& dir) const override {
    fs::create_directories(dir);
    std::ofstream(dir / "agent.txt") << "sparserl-agent template 1\n";
  }
  void load(const fs::path&) override {}

  [[nodiscard]] const std::map<std::string, std::string>& programs() const { return programs_; }

 private:
  const std::vector<env::TokenId>& plan_for(const datasets::Task& task) {
    const std::string key = task.str();
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      const std::string program = search_.act(task);
      programs_[key] = program;
      it = plans_.emplace(key, tokenizer_->encode(program).tokens).first;
    }
    return it->second;
  }

  kernels::TemplateSearchAgent& search_;
  std::shared_ptr<const env::Tokenizer> tokenizer_;
  std::map<std::string, std::vector<env::TokenId>> plans_;
  std::map<std::string, std::string> programs_;
};
#endif

struct Summary {
  long long episodes = 0, terminated = 0, truncated = 0, evaluated = 0, compiled = 0, correct = 0;
  double reward_sum = 0, length_sum = 0, speedup_log_sum = 0;
  long long timed = 0;
  std::map<std::string, long long> errors;
};

std::string number(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

struct RolloutArgs {
  std::string agent;
  std::optional<std::string> split;
  datasets::SplitPart part = datasets::SplitPart::train;
  std::vector<std::string> matrices;
  long long episodes = 0;
  std::string mask = "syntax";
  bool compile_only = false;
  std::optional<std::string> out;
  bool json = false;
  std::uint64_t seed = 0;
  std::optional<int> envs;
  int max_tokens = env::EnvConfig{}.max_tokens;
  std::string op = "spmv";
  std::string dtype = "f32";
  datasets::Index k = 8;
  std::string order = "sequential";
  MatrixLocations where;
  std::optional<std::string> worker;
  int compile_workers = 0;
  std::optional<std::string> vocab;
  std::optional<std::string> run_id;
  int template_budget = 8;
};

env::TaskSource rollout_tasks(const RolloutArgs& a) {
  env::TaskTemplate what;
  what.op = *datasets::parse_op(a.op);
  what.dtype = *datasets::parse_dtype(a.dtype);
  what.k = a.k;
  const env::TaskOrder order = *env::parse_task_order(a.order);
  if (a.split) return env::TaskSource::from_split(*a.split, a.part, what, order);
  if (a.matrices.empty()) throw UsageError("give --split FILE or --matrix URI");
  return env::TaskSource::from_uris(a.matrices, what, order);
}

// The agent and, for the template agent, the search it spells out (which must outlive it).
struct RolloutAgent {
#ifdef SPARSERL_ROLLOUT_HAVE_KERNELS
  std::unique_ptr<kernels::EvaluatorBackend> search_evaluator;
  std::unique_ptr<kernels::TemplateSearchAgent> search;
#endif
  std::unique_ptr<env::Agent> agent;
};

RolloutAgent make_agent(const RolloutArgs& a, env::EvaluatorBackend& backend,
                        datasets::MatrixStore& store,
                        const std::shared_ptr<const env::Vocabulary>& vocabulary,
                        const std::shared_ptr<const env::Tokenizer>& tokenizer) {
  RolloutAgent out;
  if (a.agent == "random") {
    out.agent = std::make_unique<env::RandomAgent>(a.seed, vocabulary);
    return out;
  }
#ifdef SPARSERL_ROLLOUT_HAVE_KERNELS
    // The search measures its candidates on the same Evaluator (one worker pool).
  out.search_evaluator = std::make_unique<kernels::EvaluatorBackend>(backend.evaluator());
  kernels::SearchOptions so;
  so.budget = a.template_budget;
  so.finalists = std::min(so.finalists, so.budget);
  out.search = std::make_unique<kernels::TemplateSearchAgent>(*out.search_evaluator, store, so);
  out.agent = std::make_unique<TemplateAgent>(*out.search, tokenizer);
  return out;
#else
  (void)backend;
  (void)store;
  (void)tokenizer;
  throw std::runtime_error(
      "--agent template needs the kernel design space (agents/kernels), which "
      "this build does not have");
#endif
}

// --out FILE.h5: a recorder of every episode, or null without the option.
std::unique_ptr<env::TrajectoryWriter> trajectory_writer(const RolloutArgs& a,
                                                         const std::vector<std::string>& argv,
                                                         const env::EvaluatorBackend& backend,
                                                         const env::TaskSource& tasks,
                                                         const env::EnvConfig& config,
                                                         const env::Vocabulary& vocabulary) {
  if (!a.out) return nullptr;
  env::TrajectoryFileInfo info;
  info.run_id = a.run_id.value_or("rollout-" + a.agent + "-" + std::to_string(a.seed) + "-" +
                                  std::to_string(static_cast<long long>(std::time(nullptr))));
  std::ostringstream cmd;
  cmd << command_line("rollout", argv) << "\n# evaluator: " << backend.describe()
      << "\n# tasks: " << tasks.describe() << "\n# max_tokens " << config.max_tokens << ", mask "
      << env::to_string(config.mask) << ", K " << config.observation.nnz_samples << ", D "
      << config.observation.embedding_dim << "\n";
  info.config = cmd.str();
  info.vocabulary_name = vocabulary.name();
  info.vocabulary_digest = vocabulary.digest();
  info.created_by = "sparserl rollout";
  return std::make_unique<env::TrajectoryWriter>(*a.out, info);
}

// Drives `episodes` episodes of `agent` through `venv` (each recorded to `writer`, if any).
Summary run_episodes(env::VectorEnv& venv, env::Agent& agent, long long episodes, int envs,
                     std::uint64_t seed, env::TrajectoryWriter* writer) {
  Summary summary;
  venv.on_episode([&](const env::Episode& e) {
    if (summary.episodes >= episodes) return;  // an extra episode of the last round
    ++summary.episodes;
    summary.reward_sum += e.reward;
    summary.length_sum += static_cast<double>(e.tokens.size());
    if (e.terminated) ++summary.terminated;
    if (e.truncated) ++summary.truncated;
    if (e.eval) {
      ++summary.evaluated;
      if (e.eval->compiled) ++summary.compiled;
      if (e.eval->correct) ++summary.correct;
      if (e.eval->timed && e.eval->timing.speedup > 0) {
        ++summary.timed;
        summary.speedup_log_sum += std::log(e.eval->timing.speedup);
      }
      ++summary.errors[std::string(reward::to_string(e.eval->error))];
    }
    if (writer != nullptr) writer->append(e, agent.policy_id());
  });
  env::VectorStep step = venv.reset(seed);
  long long started = envs;
  while (summary.episodes < episodes) {
    std::vector<int> ids;
    std::vector<env::Observation> observations;
    for (std::size_t i = 0; i < step.size(); ++i) {
      if (step.step_types[i] == env::StepType::last) {
        // same_step: the observation is the next episode's first; drive it only if needed.
        if (started >= episodes) continue;
        ++started;
      }
      ids.push_back(step.env_ids[i]);
      observations.push_back(std::move(step.observations[i]));
    }
    if (!ids.empty()) {
      const env::ActionBatch actions = agent.act(observations);
      std::vector<env::StepAnnotation> notes;
      for (std::size_t i = 0; i < actions.size(); ++i) notes.push_back(actions.annotation(i));
      venv.send(actions.tokens, ids, notes);
    }
    step = venv.recv();
    if (step.size() == 0 && summary.episodes < episodes) {
      throw std::logic_error("rollout stalled: no environment has a step in flight");
    }
  }
  return summary;
}

int run_rollout(const RolloutArgs& a, const std::vector<std::string>& argv) {
  const int envs = a.envs.value_or(static_cast<int>(std::min<long long>(4, a.episodes)));
  env::TaskSource tasks = rollout_tasks(a);
  env::EnvConfig config;
  config.max_tokens = a.max_tokens;
  config.mask = *env::parse_mask_mode(a.mask);
  config.seed = a.seed;
  if (auto problem = config.validate()) throw UsageError(*problem);

  // The pieces.
  const fs::path data_dir = a.where.data_dir_or_default();
  datasets::StoreOptions store_options;
  store_options.indexes = a.where.index_paths();
  store_options.cache_capacity = 4;
  auto store = std::make_shared<datasets::MatrixStore>(data_dir, store_options);
  auto vocabulary = a.vocab
                        ? std::make_shared<const env::Vocabulary>(env::Vocabulary::load(*a.vocab))
                        : std::make_shared<const env::Vocabulary>(env::Vocabulary::standard());
  auto tokenizer = std::make_shared<const env::Tokenizer>(vocabulary);

  env::EvaluatorBackendOptions evaluator;
  if (a.worker) evaluator.worker = *a.worker;
  evaluator.compile_workers = a.compile_workers;
  evaluator.compile_only = a.compile_only;
  evaluator.data_dir = data_dir;
  evaluator.indexes = store_options.indexes;
  auto backend = env::make_evaluator_backend(evaluator);
  const RolloutAgent made = make_agent(a, *backend, *store, vocabulary, tokenizer);
  const std::unique_ptr<env::Agent>& agent = made.agent;
  const std::unique_ptr<env::TrajectoryWriter> writer =
      trajectory_writer(a, argv, *backend, tasks, config, *vocabulary);

  // The run.
  env::VectorEnvConfig vc;
  vc.num_envs = envs;
  vc.batch_size = 1;
  vc.autoreset = env::AutoReset::same_step;
  vc.seed = a.seed;
  env::VectorEnv venv(vc, [&](int id) {
    env::TaskSource mine = tasks;
    if (mine.order() == env::TaskOrder::sequential) mine.shard(id, envs);
    return std::make_unique<env::SparseCudaEnv>(config, tokenizer, mine, store, backend, id);
  });
  const auto start = Clock::now();
  const Summary summary = run_episodes(venv, *agent, a.episodes, envs, a.seed, writer.get());
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const auto steps = static_cast<double>(venv.stats().steps);
  const bool gpu = backend->gpu_available();

  const double n = static_cast<double>(summary.episodes);
  const double evaluated = static_cast<double>(std::max<long long>(summary.evaluated, 1));
  const double compile_rate = static_cast<double>(summary.compiled) / evaluated;
  const double correct_rate = static_cast<double>(summary.correct) / evaluated;
  const double geomean_speedup =
      summary.timed > 0 ? std::exp(summary.speedup_log_sum / static_cast<double>(summary.timed))
                        : 0.0;
  if (a.json) {
    std::cout << "{\"agent\":" << experiments::json_quote(agent->policy_id())
              << ",\"episodes\":" << summary.episodes << ",\"terminated\":" << summary.terminated
              << ",\"truncated\":" << summary.truncated << ",\"evaluated\":" << summary.evaluated
              << ",\"compiled\":" << summary.compiled << ",\"correct\":" << summary.correct
              << ",\"compile_rate\":" << number(compile_rate, 6)
              << ",\"correct_rate\":" << number(correct_rate, 6)
              << ",\"mean_reward\":" << number(summary.reward_sum / n, 6)
              << ",\"mean_length\":" << number(summary.length_sum / n, 6)
              << ",\"geomean_speedup\":" << number(geomean_speedup, 6)
              << ",\"steps\":" << venv.stats().steps << ",\"wall_s\":" << number(wall, 6)
              << ",\"steps_per_s\":" << number(steps / wall, 6) << ",\"evaluations_per_s\":"
              << number(static_cast<double>(summary.evaluated) / wall, 6)
              << ",\"gpu\":" << (gpu ? "true" : "false")
              << ",\"evaluator\":" << experiments::json_quote(backend->describe())
              << ",\"errors\":{";
    bool first = true;
    for (const auto& [kind, count] : summary.errors) {
      std::cout << (first ? "" : ",") << experiments::json_quote(kind) << ":" << count;
      first = false;
    }
    std::cout << "}";
    if (writer)
      std::cout << ",\"out\":" << experiments::json_quote(writer->path().string())
                << ",\"rows\":" << writer->rows();
    std::cout << "}\n";
  } else {
    std::cout << "rollout: agent " << agent->policy_id() << ", " << tasks.describe() << ", " << envs
              << " environments, mask " << env::to_string(config.mask) << "\n"
              << backend->describe() << "\n"
              << "episodes        " << summary.episodes << " (" << summary.terminated
              << " ended with <eos>, " << summary.truncated << " truncated at " << config.max_tokens
              << " tokens)\n"
              << "compile rate    " << number(100 * compile_rate) << "% (" << summary.compiled
              << " of " << summary.evaluated << " evaluated)\n"
              << "correct rate    "
              << (gpu ? number(100 * correct_rate) + "% (" + std::to_string(summary.correct) + ")"
                      : std::string("n/a (no GPU stages: compile only)"))
              << "\n"
              << "mean reward     " << number(summary.reward_sum / n) << "\n"
              << "mean length     " << number(summary.length_sum / n) << " tokens\n";
    if (summary.timed > 0)
      std::cout << "geomean speedup " << number(geomean_speedup) << "x over cuSPARSE\n";
    std::cout << "steps/s         " << number(steps / wall) << " (" << venv.stats().steps
              << " steps in " << number(wall) << " s)\n"
              << "evaluations/s   " << number(static_cast<double>(summary.evaluated) / wall) << "\n"
              << "errors         ";
    for (const auto& [kind, count] : summary.errors) std::cout << " " << kind << "=" << count;
    std::cout << "\n";
    if (writer)
      std::cout << "recorded        " << writer->rows() << " episodes to "
                << writer->path().string() << "\n";
  }
  return 0;
}

Run declare_rollout(CLI::App& app) {
  app.description(
      "Runs N episodes of an agent through SparseCudaEnv (a VectorEnv of --envs environments,\n"
      "evaluations in the evaluator's sandboxed worker pool) and prints: episodes, compile rate,\n"
      "correct rate, mean reward, steps/s, evaluations/s.");
  app.footer("exit status: 0 done, 1 a failure (named), 2 bad arguments");
  auto a = std::make_shared<RolloutArgs>();
  one_of(app.add_option("--agent", a->agent,
                        "random: uniform over the action mask; template: the kernel design "
                        "space's template search (its best program per task, token by token)"),
         {"random", "template"})
      ->required();
  CLI::Option* split = app.add_option("--split", a->split, "tasks from a split file (its --part)")
                           ->type_name("FILE");
  add_non_test_part(app, a->part, "rollout")->needs(split);
  matrix_argument(repeatable(app.add_option(
      "--matrix", a->matrices,
      "a task matrix: a Matrix Market file, file:PATH, suitesparse-v1/... or gen-v1/...; may "
      "repeat")))
      ->excludes(split);
  app.add_option("--episodes", a->episodes, "episodes to finish")
      ->type_name("N")
      ->required()
      ->check(CLI::Range(1LL, 100'000'000LL));
  one_of(app.add_option("--mask", a->mask, "the action mask"), {"none", "syntax"});
  app.add_flag("--compile-only", a->compile_only,
               "stop after the compile stage even where a GPU is present");
  app.add_option("--out", a->out, "record every episode (docs/trajectories.md)")
      ->type_name("FILE.h5");
  app.add_flag("--json", a->json, "print the summary as one JSON object");
  non_negative(app.add_option("--seed", a->seed, "base seed (environment i uses S + i)"))
      ->type_name("S");
  app.add_option("--envs", a->envs, "environments (default min(4, N))")
      ->type_name("N")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-tokens", a->max_tokens, "tokens per episode")
      ->type_name("T")
      ->check(CLI::Range(1, 1 << 20));
  one_of(app.add_option("--op", a->op, "the operation of the tasks"), {"spmv", "spmm"});
  one_of(app.add_option("--dtype", a->dtype, "the value type of the tasks"), {"f32", "f64"});
  app.add_option("--k", a->k, "dense columns of SpMM tasks")
      ->type_name("K")
      ->check(CLI::Range(datasets::Index{1}, datasets::Index{1 << 20}));
  one_of(app.add_option("--order", a->order, "task order"), {"sequential", "shuffled"});
  add_matrix_locations(app, a->where);
  app.add_option("--worker", a->worker, "the sparserl-worker executable (default: beside sparserl)")
      ->type_name("PATH");
  app.add_option("--compile-workers", a->compile_workers,
                 "compile worker processes (default 0: one per core)")
      ->type_name("N")
      ->check(CLI::Range(0, 1024));
  app.add_option("--vocab", a->vocab, "a vocabulary file (default: the standard cuda-c-v1)")
      ->type_name("FILE");
  app.add_option("--run-id", a->run_id,
                 "recorded in the trajectory file (default rollout-AGENT-SEED-TIME)")
      ->type_name("ID");
  app.add_option("--template-budget", a->template_budget,
                 "programs the template search measures per task")
      ->type_name("B")
      ->check(CLI::Range(1, 100000));
  return [a](const std::vector<std::string>& argv) { return run_rollout(*a, argv); };
}

const CommandRegistration kRegistration(Command{
    .name = "rollout",
    .summary = "run an agent's episodes through the environment and summarise them",
    .declare = declare_rollout});

}  // namespace
}  // namespace sparserl::tools
