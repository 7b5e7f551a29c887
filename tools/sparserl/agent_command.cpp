// `sparserl agent`: the learned agents' stages from the command line - pretraining on the tuning
// corpus, SFT on its (matrix -> best program) pairs, RL with REINFORCE / PPO / GRPO against the
// environment and its evaluator, and the greedy / pass@k evaluation of a checkpoint - one stage at
// a time (`sparserl train CONFIG`, the experiment runner, drives them from a TOML file). Each
// subcommand is a thin wrapper over one entry point of
// agents/learning/include/sparserl/agents/training.hpp; the statistics go to stdout or a JSON-lines
// file. Built only with LibTorch (sparserl::agents).
#if defined(SPARSERL_HAVE_AGENTS)

#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/agents/tuning_data.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/stop_signals.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: sparserl agent pretrain --corpus DATASET.h5 --out DIR [common options]\n"
    "       sparserl agent sft --pairs DATASET.h5 --out DIR [--init CKPT] [--val-pairs "
    "DATASET.h5]\n"
    "                          [--fixed-observations] [common options] [data options]\n"
    "       sparserl agent rl --algorithm reinforce|ppo|grpo --init CKPT --out DIR\n"
    "                         (--split FILE [--part P] | --matrix URI...) [--generator URI...]\n"
    "                         [--generated-share X] [--updates N]\n"
    "                         [--tasks-per-update N] [--samples G] [--trajectories FILE.h5]\n"
    "                         [common options] [env options]\n"
    "       sparserl agent eval --checkpoint CKPT (--split FILE [--part P] | --matrix URI...)\n"
    "                           [--samples K] [--no-greedy] [--temperature T] [--tasks-out "
    "FILE.csv]\n"
    "                           [--trajectories FILE.h5] [--json] [env options]\n"
    "\n"
    "The learned agents' stages (docs/agents.md). DATASET.h5 is what `sparserl tune` writes\n"
    "(/corpus: the pretraining programs, /sft: the best program per task). Every stage writes\n"
    "DIR/latest and DIR/final checkpoints and resumes from DIR/latest when it exists. Ctrl-C or\n"
    "SIGTERM ends a stage at the next step with DIR/latest saved (exit status 130 / 143).\n"
    "\n"
    "Common options:\n"
    "  --preset P          policy size of a new policy: tiny, small (default) or medium\n"
    "  --max-tokens N      code tokens per program (default 1024; the env's max_tokens)\n"
    "  --device D          auto (default: CUDA when LibTorch sees it), cpu, cuda, cuda:N\n"
    "  --seed N            weights, sampling and data order (default 0)\n"
    "  --steps N           optimiser steps of pretrain / sft (default 1000)\n"
    "  --batch N           sequences per step of pretrain / sft (default 32)\n"
    "  --lr X              peak learning rate (default 3e-4 pretrain / sft, 1e-5 rl)\n"
    "  --set KEY=VALUE     any agent key (repeatable): policy.layers, optimizer.warmup_steps,\n"
    "                      sampling.temperature, ppo.kl_coef, grpo.beta, reinforce.kl_coef, ...\n"
    "  --metrics FILE      append the statistics as JSON lines (default: print them)\n"
    "  --log-every N       statistics every N steps (default 10; rl 1)\n"
    "  --checkpoint-every N  DIR/latest every N steps (default 0: at the end; rl 10)\n"
    "Data options (sft) and env options (rl, eval):\n"
    "  --op spmv|spmm --dtype f32|f64 --k K   the operation of split / matrix tasks (default spmv "
    "f32)\n"
    "  --mask syntax|none  the action mask (default syntax)\n"
    "  --data-dir DIR      where suitesparse-v1 matrices are (default $SPARSERL_DATA_DIR or "
    "./data)\n"
    "  --index DIR         a folder with an INDEX.csv (repeatable), e.g. ../shared/matrices\n"
    "  --worker PATH --compile-workers N --compile-only   the evaluator (as `sparserl rollout`)\n"
    "  --generator URI     (rl) a gen-v1 URI (repeatable): tasks are also fresh matrices of\n"
    "                      these generators, each with a drawn seed= (alone: only generated)\n"
    "  --generated-share X (rl) the share of tasks that are generated when a split or\n"
    "                      --matrix list is given too (default 0.5)\n"
    "  --trajectories FILE.h5  (rl, eval) record every scored episode (docs/trajectories.md);\n"
    "                      eval's policy ids end in :greedy or :sampled\n"
    "\n"
    "A full run on the GPU host:\n"
    "  sparserl tune --split datasets/splits/shared-v1.split --part train --index "
    "../shared/matrices \\\n"
    "      --out runs/tune\n"
    "  sparserl agent pretrain --corpus runs/tune/dataset.h5 --out runs/pretrain --steps 2000\n"
    "  sparserl agent sft --pairs runs/tune/dataset.h5 --init runs/pretrain/final --out runs/sft "
    "\\\n"
    "      --index ../shared/matrices\n"
    "  sparserl agent rl --algorithm grpo --init runs/sft/final --out runs/grpo \\\n"
    "      --split datasets/splits/shared-v1.split --part train --index ../shared/matrices\n"
    "  sparserl agent eval --checkpoint runs/grpo/final --split datasets/splits/shared-v1.split "
    "\\\n"
    "      --part val --samples 8 --index ../shared/matrices\n"
    "\n"
    "Exit status: 0 on success, 1 on an error, 2 for bad arguments.\n";

std::string statistics_json(std::string_view stage, std::int64_t step,
                            const env::Statistics& stats) {
  std::string out =
      "{\"stage\": " + experiments::json_quote(stage) + ", \"step\": " + std::to_string(step);
  for (const auto& [name, value] : stats)
    out += ", " + experiments::json_quote(name) + ": " + experiments::json_number(value);
  return out + "}";
}

// Where statistics go: a JSON-lines file, or stdout.
class MetricsSink {
 public:
  explicit MetricsSink(const std::optional<std::string>& file) {
    if (file) {
      out_.open(*file, std::ios::app);
      if (!out_) throw std::runtime_error(*file + ": cannot open for appending");
    }
  }
  agents::StatisticsCallback callback() {
    return [this](std::string_view stage, std::int64_t step, const env::Statistics& stats) {
      const std::string line = statistics_json(stage, step, stats);
      if (out_.is_open()) {
        out_ << line << "\n";
        out_.flush();
        std::cerr << stage << " step " << step << ": " << summary(stats) << "\n";
      } else {
        std::cout << line << "\n" << std::flush;
      }
    };
  }

 private:
  static std::string summary(const env::Statistics& stats) {
    std::string out;
    for (const char* key : {"loss", "loss/policy", "reward/mean", "env/compile_rate", "kl",
                            "perf/tokens_per_second"}) {
      for (const auto& [name, value] : stats) {
        if (name == key) out += std::string(key) + "=" + experiments::json_number(value) + " ";
      }
    }
    return out;
  }
  std::ofstream out_;
};

// The agent config of a stage: the init checkpoint's (its shape must be kept) or a preset, then the
// command line's options and --set overrides.
agents::AgentConfig agent_config(const Args& args, const std::optional<std::string>& init,
                                 double default_lr) {
  agents::AgentConfig config;
  if (init) {
    config = agents::PolicyAgent::checkpoint_config(*init);
    config.optimizer = agents::OptimizerConfig{};
    config.optimizer.lr = default_lr;
  } else {
    config.policy = agents::PolicyConfig::preset(args.option_or("preset", "small"));
    config.policy.max_tokens = static_cast<int>(args.integer("max-tokens", 1024, 16, 1 << 20));
    config.optimizer.lr = default_lr;
  }
  if (init && args.option("preset"))
    throw UsageError("--preset applies to new policies, not to --init");
  config.device = args.option_or("device", "auto");
  config.seed = static_cast<std::uint64_t>(args.integer("seed", 0, 0, 9200000000000000000LL));
  if (auto lr = args.option("lr")) config.optimizer.lr = args.real("lr", default_lr);
  if (auto mask = args.option("mask")) {
    const auto m = env::parse_mask_mode(*mask);
    if (!m) throw UsageError("--mask must be none or syntax");
    config.mask = *m;
  }
  for (const std::string& assignment : args.all("set")) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos) throw UsageError("--set " + assignment + ": expected KEY=VALUE");
    try {
      agents::apply_key_value(config, assignment.substr(0, eq), assignment.substr(eq + 1));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--set ") + assignment + ": " + e.what());
    }
  }
  if (auto problem = config.validate()) throw UsageError(*problem);
  return config;
}

env::TaskTemplate task_template(const Args& args) {
  env::TaskTemplate what;
  const auto op = datasets::parse_op(args.option_or("op", "spmv"));
  const auto dtype = datasets::parse_dtype(args.option_or("dtype", "f32"));
  if (!op) throw UsageError("--op must be spmv or spmm");
  if (!dtype) throw UsageError("--dtype must be f32 or f64");
  what.op = *op;
  what.dtype = *dtype;
  what.k = static_cast<datasets::Index>(args.integer("k", 8, 1, 1 << 20));
  return what;
}

// The tasks of rl / eval: a split part or a URI list; for rl also --generator URIs, alone (only
// generated matrices) or mixed into the list at --generated-share.
env::TaskSource task_source(const Args& args, env::TaskOrder order,
                            const std::string& default_part) {
  const std::vector<std::string> uris = args.all("matrix");
  const std::vector<std::string> generators = args.all("generator");
  const auto split = args.option("split");
  if (!uris.empty() && split) throw UsageError("give either --split FILE or --matrix URI (not both)");
  const env::TaskTemplate what = task_template(args);
  const bool share_given = args.option("generated-share").has_value();
  // A bad generator URI is a usage error that names it.
  const auto generated = [&](std::optional<env::TaskSource> fixed, double share) {
    try {
      return fixed ? env::TaskSource::mixed(std::move(*fixed), generators, what, share)
                   : env::TaskSource::generated(generators, what);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--generator: ") + e.what());
    }
  };
  if (uris.empty() && !split) {
    if (generators.empty()) throw UsageError("give --split FILE or --matrix URI");
    if (share_given) throw UsageError("--generated-share needs --split or --matrix to mix into");
    return generated(std::nullopt, 1.0);
  }
  env::TaskSource fixed = [&] {
    if (split) {
      const auto part = non_test_part(args, "agent", default_part);
      return env::TaskSource::from_split(*split, part, what, order);
    }
    return env::TaskSource::from_uris(uris, what, order);
  }();
  if (generators.empty()) {
    if (share_given) throw UsageError("--generated-share needs --generator URI");
    return fixed;
  }
  const double share = args.real("generated-share", 0.5);
  if (!(share > 0 && share <= 1)) throw UsageError("--generated-share must be in (0, 1]");
  return generated(std::move(fixed), share);
}

std::shared_ptr<datasets::MatrixStore> matrix_store(const Args& args) {
  const fs::path data_dir =
      args.option("data-dir") ? fs::path(*args.option("data-dir")) : datasets::default_data_dir();
  datasets::StoreOptions options;
  for (const std::string& index : args.all("index")) options.indexes.emplace_back(index);
  options.cache_capacity = 16;
  return std::make_shared<datasets::MatrixStore>(data_dir, options);
}

// The environment of rl and eval, shaped after the agent (mask, max_tokens, K, D).
std::unique_ptr<env::SparseCudaEnv> make_env(const Args& args, const agents::AgentConfig& agent,
                                             env::TaskSource tasks,
                                             std::shared_ptr<datasets::MatrixStore> store) {
  env::EvaluatorBackendOptions evaluator;
  if (auto worker = args.option("worker")) evaluator.worker = *worker;
  evaluator.compile_workers = static_cast<int>(args.integer("compile-workers", 0, 0, 1024));
  evaluator.compile_only = args.flag("compile-only");
  evaluator.data_dir = store->data_dir();
  for (const std::string& index : args.all("index")) evaluator.indexes.emplace_back(index);
  auto backend = env::make_evaluator_backend(evaluator);
  std::cerr << "evaluator: " << backend->describe() << "\ntasks: " << tasks.describe() << "\n";
  env::EnvConfig config;
  config.max_tokens = agent.policy.max_tokens;
  config.mask = agent.mask;
  config.observation.nnz_samples = agent.policy.nnz_samples;
  config.observation.embedding_dim = agent.policy.embedding_dim;
  config.seed = agent.seed;
  if (auto problem = config.validate()) throw UsageError(*problem);
  auto vocabulary = std::make_shared<const env::Vocabulary>(env::Vocabulary::standard());
  return std::make_unique<env::SparseCudaEnv>(
      config, std::make_shared<const env::Tokenizer>(vocabulary), std::move(tasks),
      std::move(store), std::move(backend));
}

// Ctrl-C (SIGINT) or SIGTERM ends a stage at the next step boundary with DIR/latest saved, so that
// the same command resumes from there; the exit status is the shell's for that signal (130, 143).
agents::StageHooks stop_hooks(const experiments::StopSignals& stop) {
  agents::StageHooks hooks;
  hooks.stop_requested = [&stop] { return stop.requested(); };
  return hooks;
}

int print_result(const std::string& stage, const agents::StageResult& result,
                 const experiments::StopSignals& stop) {
  std::cerr << stage << ": " << result.steps << " steps" << (result.resumed ? " (resumed)" : "")
            << ", checkpoint " << result.checkpoint.string() << "\n";
  if (!result.stopped) return 0;
  const int sig = stop.signal() != 0 ? stop.signal() : SIGINT;
  std::cerr << stage << ": stopped by " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << "; the same command resumes from the checkpoint\n";
  return 128 + sig;
}

const std::vector<std::string> kCommon = {
    "preset",  "max-tokens", "device",           "seed", "steps", "batch", "lr", "set",
    "metrics", "log-every",  "checkpoint-every", "out",  "init",  "mask"};
const std::vector<std::string> kEnv = {"split", "part",     "matrix", "op",     "dtype",
                                       "k",     "data-dir", "index",  "worker", "compile-workers"};

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b,
                                const std::vector<std::string>& c = {}) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

int run_pretrain(const Args& args) {
  args.allow_only(joined(kCommon, {"corpus"}));
  agents::PretrainConfig config;
  const auto init = args.option("init");
  config.agent = agent_config(args, init, 3e-4);
  config.steps = static_cast<int>(args.integer("steps", 1000, 1, 1LL << 40));
  config.batch_size = static_cast<int>(args.integer("batch", 32, 1, 1 << 20));
  config.log_every = static_cast<int>(args.integer("log-every", 10, 1, 1LL << 40));
  config.checkpoint_every = static_cast<int>(args.integer("checkpoint-every", 0, 0, 1LL << 40));
  config.output_dir = args.required("out");
  if (init) config.init_checkpoint = *init;
  const std::vector<std::string> corpus = agents::read_corpus(args.required("corpus"));
  std::cerr << "pretraining corpus: " << corpus.size() << " programs from "
            << args.required("corpus") << "\n";
  MetricsSink sink(args.option("metrics"));
  const env::Tokenizer tokenizer;
  const experiments::StopSignals stop;
  config.hooks = stop_hooks(stop);
  return print_result(
      "pretrain", agents::run_pretraining(config, corpus, tokenizer, sink.callback()), stop);
}

int run_sft_command(const Args& args) {
  args.allow_only(joined(kCommon, kEnv, {"pairs", "val-pairs"}));
  agents::SftConfig config;
  const auto init = args.option("init");
  config.agent = agent_config(args, init, 3e-4);
  config.steps = static_cast<int>(args.integer("steps", 1000, 1, 1LL << 40));
  config.batch_size = static_cast<int>(args.integer("batch", 32, 1, 1 << 20));
  config.log_every = static_cast<int>(args.integer("log-every", 10, 1, 1LL << 40));
  config.checkpoint_every = static_cast<int>(args.integer("checkpoint-every", 0, 0, 1LL << 40));
  config.output_dir = args.required("out");
  config.resample_observations = !args.flag("fixed-observations");
  config.observation_seed = config.agent.seed;
  if (init) config.init_checkpoint = *init;
  const std::vector<agents::SftPair> pairs = agents::read_sft_pairs(args.required("pairs"));
  std::vector<agents::SftPair> validation;
  if (auto val = args.option("val-pairs")) validation = agents::read_sft_pairs(*val);
  std::cerr << "SFT pairs: " << pairs.size() << " (validation " << validation.size() << ")\n";
  env::ObservationConfig observation;
  observation.nnz_samples = config.agent.policy.nnz_samples;
  observation.embedding_dim = config.agent.policy.embedding_dim;
  MetricsSink sink(args.option("metrics"));
  const env::Tokenizer tokenizer;
  const experiments::StopSignals stop;
  config.hooks = stop_hooks(stop);
  return print_result(
      "sft",
      agents::run_sft(config, pairs, agents::store_observer(matrix_store(args), observation),
                      tokenizer, sink.callback(), validation),
      stop);
}

// --trajectories FILE.h5: a recorder of every scored episode (appended to when FILE exists), or
// null without the option.
std::unique_ptr<env::TrajectoryWriter> trajectory_writer(const Args& args,
                                                         const env::SparseCudaEnv& env,
                                                         const agents::AgentConfig& agent,
                                                         const std::string& run_id,
                                                         const std::string& created_by) {
  const auto file = args.option("trajectories");
  if (!file) return nullptr;
  env::TrajectoryFileInfo info;
  info.run_id = run_id;
  std::ostringstream text;
  for (const auto& [key, value] : agents::to_key_values(agent)) text << key << " = " << value << "\n";
  info.config = text.str();
  info.vocabulary_name = env.tokenizer().vocabulary().name();
  info.vocabulary_digest = env.tokenizer().vocabulary().digest();
  info.created_by = created_by;
  return std::make_unique<env::TrajectoryWriter>(*file, info, fs::exists(*file));
}

int run_rl_command(const Args& args) {
  args.allow_only(joined(kCommon, kEnv,
                         {"algorithm", "updates", "tasks-per-update", "samples", "trajectories",
                          "generator", "generated-share"}));
  const auto algorithm = agents::parse_algorithm(args.required("algorithm"));
  if (!algorithm || *algorithm == agents::Algorithm::sft)
    throw UsageError("--algorithm must be reinforce, ppo or grpo");
  agents::RlConfig config;
  const auto init = args.option("init");
  if (!init)
    throw UsageError("rl needs --init CKPT (the SFT checkpoint: the policy and the KL reference)");
  config.agent = agent_config(args, init, 1e-5);
  config.agent.algorithm = *algorithm;
  config.updates = static_cast<int>(args.integer("updates", 100, 1, 1LL << 40));
  config.tasks_per_update = static_cast<int>(args.integer("tasks-per-update", 8, 1, 1 << 20));
  config.samples_per_task = static_cast<int>(args.integer("samples", 8, 1, 1 << 20));
  config.log_every = static_cast<int>(args.integer("log-every", 1, 1, 1LL << 40));
  config.checkpoint_every = static_cast<int>(args.integer("checkpoint-every", 10, 0, 1LL << 40));
  config.output_dir = args.required("out");
  config.init_checkpoint = *init;
  config.seed = config.agent.seed;
  auto env = make_env(args, config.agent, task_source(args, env::TaskOrder::shuffled, "train"),
                      matrix_store(args));
  std::unique_ptr<env::TrajectoryWriter> writer = trajectory_writer(
      args, *env, config.agent,
      "agent-rl-" + std::string(agents::to_string(*algorithm)) + "-" + std::to_string(config.seed),
      "sparserl agent rl");
  MetricsSink sink(args.option("metrics"));
  agents::EpisodeCallback on_episode;
  if (writer) on_episode = [&](const env::Episode& e) { writer->append(e); };
  const experiments::StopSignals stop;
  config.hooks = stop_hooks(stop);
  return print_result("rl", agents::run_rl(config, *env, sink.callback(), on_episode), stop);
}

int run_eval(const Args& args) {
  args.allow_only(joined(
      kEnv, {"checkpoint", "samples", "temperature", "tasks-out", "device", "seed", "mask",
             "trajectories"}));
  auto agent = agents::PolicyAgent::from_checkpoint(args.required("checkpoint"),
                                                    args.option_or("device", "auto"));
  agents::EvaluationConfig config;
  config.greedy = !args.flag("no-greedy");
  config.samples = static_cast<int>(args.integer("samples", 8, 0, 1 << 20));
  config.sampling.temperature = args.real("temperature", 1.0);
  config.seed = static_cast<std::uint64_t>(args.integer("seed", 0, 0, 9200000000000000000LL));
  const env::TaskSource tasks = task_source(args, env::TaskOrder::sequential, "val");
  auto env = make_env(args, agent->config(), tasks, matrix_store(args));
  std::unique_ptr<env::TrajectoryWriter> writer =
      trajectory_writer(args, *env, agent->config(),
                        "agent-eval-" + agent->policy_id() + "-" + std::to_string(config.seed),
                        "sparserl agent eval");
  agents::EpisodeCallback on_episode;
  if (writer) on_episode = [&](const env::Episode& e) { writer->append(e); };
  const agents::EvaluationSummary summary =
      agents::run_evaluation(*agent, *env, tasks.tasks(), config, on_episode);
  if (auto file = args.option("tasks-out")) {
    std::ofstream out(*file);
    out << "task,greedy_compiled,greedy_correct,greedy_speedup,sampled,sampled_compiled,sampled_"
           "correct,best_speedup\n";
    for (const auto& t : summary.tasks) {
      out << experiments::json_quote(t.task.str()) << "," << t.greedy_compiled << ","
          << t.greedy_correct << "," << experiments::json_number(t.greedy_speedup) << ","
          << t.sampled << "," << t.sampled_compiled << "," << t.sampled_correct << ","
          << experiments::json_number(t.best_speedup) << "\n";
    }
    if (!out) throw std::runtime_error(*file + ": cannot write");
  }
  if (args.flag("json")) {
    std::cout << statistics_json("eval", agent->counters().optimizer_steps, summary.statistics)
              << "\n";
  } else {
    std::cout << "checkpoint " << args.required("checkpoint") << " (" << agent->policy_id() << ", "
              << agent->parameter_count() << " parameters, " << agent->device() << ")\n";
    for (const auto& [name, value] : summary.statistics)
      std::cout << name << " " << experiments::json_number(value) << "\n";
  }
  return 0;
}

int run_agent(const std::vector<std::string>& argv) {
  const Args args(argv, {"compile-only", "json", "no-greedy", "fixed-observations"});
  if (args.positional().size() != 1)
    throw UsageError("expected one subcommand: pretrain, sft, rl or eval");
  const std::string& sub = args.positional(0, "subcommand");
  if (args.option("part")) (void)non_test_part(args, "agent");  // before any checkpoint is read
  if (sub == "pretrain") return run_pretrain(args);
  if (sub == "sft") return run_sft_command(args);
  if (sub == "rl") return run_rl_command(args);
  if (sub == "eval") return run_eval(args);
  throw UsageError("unknown subcommand '" + sub + "': expected pretrain, sft, rl or eval");
}

const CommandRegistration kRegistration(Command{
    "agent", "train and evaluate the learned agents (pretrain, sft, rl, eval)", kUsage, run_agent});

}  // namespace
}  // namespace sparserl::tools

#endif  // SPARSERL_HAVE_AGENTS
