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
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
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

constexpr const char* kUsage =
    "usage: sparserl rollout --agent random|template (--split FILE | --matrix URI...) --episodes "
    "N\n"
    "                        [--mask none|syntax] [--compile-only] [--out FILE.h5] [--json] "
    "[--seed S]\n"
    "\n"
    "Runs N episodes of an agent through SparseCudaEnv (a VectorEnv of --envs environments, "
    "evaluations\n"
    "in the evaluator's sandboxed worker pool) and prints: episodes, compile rate, correct rate, "
    "mean\n"
    "reward, steps/s, evaluations/s.\n"
    "\n"
    "  --agent random|template  random: uniform over the action mask; template: the kernel design\n"
    "                           space's template search (its best program per task, token by "
    "token)\n"
    "  --split FILE             tasks from a split file (--part train|val, default train)\n"
    "  --matrix URI             a task matrix (suitesparse-v1/..., gen-v1/..., file:...); may "
    "repeat\n"
    "  --episodes N             episodes to finish\n"
    "  --mask none|syntax       the action mask (default syntax)\n"
    "  --compile-only           stop after the compile stage even where a GPU is present\n"
    "  --out FILE.h5            record every episode (docs/trajectories.md)\n"
    "  --json                   print the summary as one JSON object\n"
    "  --seed S                 base seed (environment i uses S + i; default 0)\n"
    "\n"
    "more options:\n"
    "  --envs N                 environments (default min(4, N))\n"
    "  --max-tokens T           tokens per episode (default 4096)\n"
    "  --op spmv|spmm --dtype f32|f64 --k K   the task (default spmv f32, k 8 for spmm)\n"
    "  --order sequential|shuffled            task order (default sequential)\n"
    "  --data-dir DIR           where suitesparse-v1 matrices are (default $SPARSERL_DATA_DIR or "
    "./data)\n"
    "  --index DIR              a SuiteSparse index folder, e.g. ../shared/matrices; may repeat\n"
    "  --worker PATH            the sparserl-worker executable (default: beside sparserl)\n"
    "  --compile-workers N      compile worker processes (default: one per core)\n"
    "  --vocab FILE             a vocabulary file (default: the standard cuda-c-v1)\n"
    "  --run-id ID              recorded in the trajectory file (default rollout-AGENT-SEED-TIME)\n"
    "  --template-budget B      programs the template search measures per task (default 8)\n"
    "\n"
    "exit status: 0 done, 1 a failure (named), 2 bad arguments\n";

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

int run_rollout(const std::vector<std::string>& argv) {
  const Args args(argv, {"compile-only", "json"});
  args.allow_only({"agent", "split",  "part",           "matrix",     "episodes", "mask",
                   "out",   "seed",   "envs",           "max-tokens", "op",       "dtype",
                   "k",     "order",  "data-dir",       "index",      "worker",   "compile-workers",
                   "vocab", "run-id", "template-budget"});
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional().front() + "'");
  const std::string agent_name = args.required("agent");
  if (agent_name != "random" && agent_name != "template") {
    throw UsageError("--agent must be random or template, not '" + agent_name + "'");
  }
  const long long episodes = args.integer("episodes", -1, 1, 100000000);
  if (episodes < 1) throw UsageError("--episodes N is required");
  const auto mask = env::parse_mask_mode(args.option_or("mask", "syntax"));
  if (!mask) throw UsageError("--mask must be none or syntax");
  const auto seed = static_cast<std::uint64_t>(args.integer("seed", 0, 0, 9200000000000000000LL));
  const int envs =
      static_cast<int>(args.integer("envs", std::min<long long>(4, episodes), 1, 4096));
  const bool compile_only = args.flag("compile-only");
  env::TaskTemplate what;
  const auto op = datasets::parse_op(args.option_or("op", "spmv"));
  const auto dtype = datasets::parse_dtype(args.option_or("dtype", "f32"));
  if (!op) throw UsageError("--op must be spmv or spmm");
  if (!dtype) throw UsageError("--dtype must be f32 or f64");
  what.op = *op;
  what.dtype = *dtype;
  what.k = static_cast<datasets::Index>(args.integer("k", 8, 1, 1 << 20));
  const auto order = env::parse_task_order(args.option_or("order", "sequential"));
  if (!order || *order == env::TaskOrder::weighted)
    throw UsageError("--order must be sequential or shuffled");

  // Tasks.
  const std::vector<std::string> uris = args.all("matrix");
  const auto split = args.option("split");
  if (uris.empty() == !split)
    throw UsageError("give either --split FILE or --matrix URI (not both)");
  env::TaskSource tasks = [&] {
    if (split) {
      const auto part = non_test_part(args, "rollout");
      return env::TaskSource::from_split(*split, part, what, *order);
    }
    return env::TaskSource::from_uris(uris, what, *order);
  }();

  env::EnvConfig config;
  config.max_tokens = static_cast<int>(args.integer("max-tokens", config.max_tokens, 1, 1 << 20));
  config.mask = *mask;
  config.seed = seed;
  if (auto problem = config.validate()) throw UsageError(*problem);

  // The pieces.
  const fs::path data_dir =
      args.option("data-dir") ? fs::path(*args.option("data-dir")) : datasets::default_data_dir();
  datasets::StoreOptions store_options;
  for (const std::string& index : args.all("index")) store_options.indexes.emplace_back(index);
  store_options.cache_capacity = 4;
  auto store = std::make_shared<datasets::MatrixStore>(data_dir, store_options);
  auto vocabulary =
      args.option("vocab")
          ? std::make_shared<const env::Vocabulary>(env::Vocabulary::load(*args.option("vocab")))
          : std::make_shared<const env::Vocabulary>(env::Vocabulary::standard());
  auto tokenizer = std::make_shared<const env::Tokenizer>(vocabulary);

  env::EvaluatorBackendOptions evaluator;
  if (auto worker = args.option("worker")) evaluator.worker = *worker;
  evaluator.compile_workers = static_cast<int>(args.integer("compile-workers", 0, 0, 1024));
  evaluator.compile_only = compile_only;
  evaluator.data_dir = data_dir;
  evaluator.indexes = store_options.indexes;
  auto backend = env::make_evaluator_backend(evaluator);


  // The agent.
  std::unique_ptr<env::Agent> agent;
#ifdef SPARSERL_ROLLOUT_HAVE_KERNELS
  std::unique_ptr<kernels::EvaluatorBackend> search_evaluator;
  std::unique_ptr<kernels::TemplateSearchAgent> search;
#endif
  if (agent_name == "random") {
    agent = std::make_unique<env::RandomAgent>(seed, vocabulary);
  } else {
#ifdef SPARSERL_ROLLOUT_HAVE_KERNELS
    // The search measures its candidates on the same Evaluator (one worker pool).
    search_evaluator = std::make_unique<kernels::EvaluatorBackend>(backend->evaluator());
    kernels::SearchOptions so;
    so.budget = static_cast<int>(args.integer("template-budget", 8, 1, 100000));
    so.finalists = std::min(so.finalists, so.budget);
    search = std::make_unique<kernels::TemplateSearchAgent>(*search_evaluator, *store, so);
    agent = std::make_unique<TemplateAgent>(*search, tokenizer);
#else
    throw std::runtime_error(
        "--agent template needs the kernel design space (agents/kernels), which "
        "this build does not have");
#endif
  }

  // The recorder.
  const std::string run_id =
      args.option_or("run-id", "rollout-" + agent_name + "-" + std::to_string(seed) + "-" +
                                   std::to_string(static_cast<long long>(std::time(nullptr))));
  std::unique_ptr<env::TrajectoryWriter> writer;
  if (auto out = args.option("out")) {
    env::TrajectoryFileInfo info;
    info.run_id = run_id;
    std::ostringstream cmd;
    cmd << "sparserl rollout";
    for (const std::string& a : argv) cmd << " " << a;
    cmd << "\n# evaluator: " << backend->describe() << "\n# tasks: " << tasks.describe()
        << "\n# max_tokens " << config.max_tokens << ", mask " << env::to_string(config.mask)
        << ", K " << config.observation.nnz_samples << ", D " << config.observation.embedding_dim
        << "\n";
    info.config = cmd.str();
    info.vocabulary_name = vocabulary->name();
    info.vocabulary_digest = vocabulary->digest();
    info.created_by = "sparserl rollout";
    writer = std::make_unique<env::TrajectoryWriter>(*out, info);
  }

  // The run.
  env::VectorEnvConfig vc;
  vc.num_envs = envs;
  vc.batch_size = 1;
  vc.autoreset = env::AutoReset::same_step;
  vc.seed = seed;
  env::VectorEnv venv(vc, [&](int id) {
    env::TaskSource mine = tasks;
    if (mine.order() == env::TaskOrder::sequential) mine.shard(id, envs);
    return std::make_unique<env::SparseCudaEnv>(config, tokenizer, mine, store, backend, id);
  });
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
    if (writer) writer->append(e, agent->policy_id());
  });
  const auto start = Clock::now();
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
      const env::ActionBatch actions = agent->act(observations);
      std::vector<env::StepAnnotation> notes;
      for (std::size_t i = 0; i < actions.size(); ++i) notes.push_back(actions.annotation(i));
      venv.send(actions.tokens, ids, notes);
    }
    step = venv.recv();
    if (step.size() == 0 && summary.episodes < episodes) {
      throw std::logic_error("rollout stalled: no environment has a step in flight");
    }
  }
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
  if (args.flag("json")) {
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

const CommandRegistration kRegistration(Command{
    "rollout", "run an agent's episodes through the environment and summarise them", kUsage,
    run_rollout});

}  // namespace
}  // namespace sparserl::tools
