// `sparserl agent`: the learned agents' stages from the command line - pretraining on the tuning
// corpus, SFT on its (matrix -> best program) pairs, RL with REINFORCE / PPO / GRPO against the
// environment and its evaluator, and the greedy / pass@k evaluation of a checkpoint - one stage at
// a time (`sparserl train CONFIG`, the experiment runner, drives them from a TOML file). Each
// subcommand is a thin wrapper over one entry point of
// agents/learning/include/sparserl/agents/training.hpp; the statistics go to stdout or a JSON-lines
// file. Built only with LibTorch (sparserl::agents).
#if defined(SPARSERL_HAVE_AGENTS)

#include <cmath>
#include <csignal>
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
#include "options.hpp"
#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/hf_model.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/agents/tuning_data.hpp"
#include "sparserl/datasets/knobs.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/stop_signals.hpp"

namespace sparserl::tools {
namespace {

namespace fs = std::filesystem;

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

// The arguments of the four subcommands; each declares the ones it takes (with its own defaults)
// on its own AgentArgs.
struct AgentArgs {
  // The policy and its training (pretrain, sft, rl; eval: --device, --seed).
  std::string preset = "small";
  int max_tokens = 1024;
  std::string device = "auto";
  std::uint64_t seed = 0;
  int steps = 1000;
  int batch = 32;
  std::optional<double> lr;
  std::vector<std::string> overrides;  // --set KEY=VALUE
  std::optional<std::string> metrics;
  int log_every = 10;
  int checkpoint_every = 0;
  std::string out;
  std::optional<std::string> init;
  std::optional<std::string> mask;
  // The tasks and the environment (rl, eval; sft: --data-dir, --index).
  std::optional<std::string> split;
  datasets::SplitPart part = datasets::SplitPart::train;
  std::vector<std::string> matrices;
  std::vector<std::string> generators;
  std::optional<double> generated_share;
  std::string op = "spmv";
  std::string dtype = "f32";
  datasets::Index k = 8;
  MatrixLocations where;
  std::optional<std::string> worker;
  int compile_workers = 0;
  bool compile_only = false;
  std::optional<std::string> trajectories;
  // pretrain, sft
  std::string corpus;
  std::string pairs;
  std::optional<std::string> val_pairs;
  bool fixed_observations = false;
  // rl, eval
  std::string algorithm;
  int updates = 100;
  int tasks_per_update = 8;
  int samples = 8;
  std::string checkpoint;
  bool no_greedy = false;
  double temperature = 1.0;
  std::optional<std::string> tasks_out;
  bool json = false;
};

// The agent config of a stage: the init checkpoint's (its shape must be kept) or a preset, then the
// command line's options and --set overrides.
agents::AgentConfig agent_config(const AgentArgs& a, double default_lr) {
  agents::AgentConfig config;
  if (a.init) {
    config = agents::PolicyAgent::checkpoint_config(*a.init);
    config.optimizer = agents::OptimizerConfig{};
    config.optimizer.lr = default_lr;
  } else {
    config.policy = agents::PolicyConfig::preset(a.preset);
    config.policy.max_tokens = a.max_tokens;
    config.optimizer.lr = default_lr;
  }
  config.device = a.device;
  config.seed = a.seed;
  if (a.lr) config.optimizer.lr = *a.lr;
  if (a.mask) config.mask = *env::parse_mask_mode(*a.mask);
  for (const std::string& assignment : a.overrides) {
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

env::TaskTemplate task_template(const AgentArgs& a) {
  env::TaskTemplate what;
  what.op = *datasets::parse_op(a.op);
  what.dtype = *datasets::parse_dtype(a.dtype);
  what.k = a.k;
  return what;
}

// The tasks of rl / eval: a split part or a URI list; for rl also --generator URIs, alone (only
// generated matrices) or mixed into the list at --generated-share.
env::TaskSource task_source(const AgentArgs& a, env::TaskOrder order) {
  const std::vector<std::string>& uris = a.matrices;
  const std::vector<std::string>& generators = a.generators;
  const env::TaskTemplate what = task_template(a);
  const bool share_given = a.generated_share.has_value();
  // A bad generator URI is a usage error that names it.
  const auto generated = [&](std::optional<env::TaskSource> fixed, double share) {
    try {
      return fixed ? env::TaskSource::mixed(std::move(*fixed), generators, what, share)
                   : env::TaskSource::generated(generators, what);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--generator: ") + e.what());
    }
  };
  if (uris.empty() && !a.split) {
    if (generators.empty()) throw UsageError("give --split FILE or --matrix URI");
    if (share_given) throw UsageError("--generated-share needs --split or --matrix to mix into");
    return generated(std::nullopt, 1.0);
  }
  env::TaskSource fixed = a.split ? env::TaskSource::from_split(*a.split, a.part, what, order)
                                  : env::TaskSource::from_uris(uris, what, order);
  if (generators.empty()) {
    if (share_given) throw UsageError("--generated-share needs --generator URI");
    return fixed;
  }
  const double share = a.generated_share.value_or(0.5);
  if (!(share > 0 && share <= 1)) throw UsageError("--generated-share must be in (0, 1]");
  return generated(std::move(fixed), share);
}

std::shared_ptr<datasets::MatrixStore> matrix_store(const AgentArgs& a) {
  datasets::StoreOptions options;
  options.indexes = a.where.index_paths();
  options.cache_capacity = 16;
  return std::make_shared<datasets::MatrixStore>(a.where.data_dir_or_default(), options);
}

// The environment of rl and eval, shaped after the agent (mask, max_tokens, K, D).
std::unique_ptr<env::SparseCudaEnv> make_env(const AgentArgs& a, const agents::AgentConfig& agent,
                                             env::TaskSource tasks,
                                             std::shared_ptr<datasets::MatrixStore> store) {
  env::EvaluatorBackendOptions evaluator;
  if (a.worker) evaluator.worker = *a.worker;
  evaluator.compile_workers = a.compile_workers;
  evaluator.compile_only = a.compile_only;
  evaluator.data_dir = store->data_dir();
  evaluator.indexes = a.where.index_paths();
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

// Ctrl-C (SIGINT), SIGTERM or SIGHUP ends a stage at the next step boundary with DIR/latest saved,
// so that the same command resumes from there; the exit status is the shell's for that signal (130,
// 143, 129).
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
  std::cerr << stage << ": stopped by " << experiments::stop_signal_name(sig)
            << "; the same command resumes from the checkpoint\n";
  return 128 + sig;
}

// What pretraining and SFT take alike from the command line (their default lr is 3e-4).
template <class SupervisedConfig>
void set_supervised_stage(SupervisedConfig& config, const AgentArgs& a) {
  config.agent = agent_config(a, 3e-4);
  config.steps = a.steps;
  config.batch_size = a.batch;
  config.log_every = a.log_every;
  config.checkpoint_every = a.checkpoint_every;
  config.output_dir = a.out;
  if (a.init) config.init_checkpoint = *a.init;
}

int run_pretrain(const AgentArgs& a) {
  agents::PretrainConfig config;
  set_supervised_stage(config, a);
  const std::vector<std::string> corpus = agents::read_corpus(a.corpus);
  std::cerr << "pretraining corpus: " << corpus.size() << " programs from " << a.corpus << "\n";
  MetricsSink sink(a.metrics);
  const env::Tokenizer tokenizer;
  const experiments::StopSignals stop;
  config.hooks = stop_hooks(stop);
  return print_result("pretrain",
                      agents::run_pretraining(config, corpus, tokenizer, sink.callback()), stop);
}

int run_sft_command(const AgentArgs& a) {
  agents::SftConfig config;
  set_supervised_stage(config, a);
  config.resample_observations = !a.fixed_observations;
  config.observation_seed = config.agent.seed;
  const std::vector<agents::SftPair> pairs = agents::read_sft_pairs(a.pairs);
  std::vector<agents::SftPair> validation;
  if (a.val_pairs) validation = agents::read_sft_pairs(*a.val_pairs);
  std::cerr << "SFT pairs: " << pairs.size() << " (validation " << validation.size() << ")\n";
  env::ObservationConfig observation;
  observation.nnz_samples = config.agent.policy.nnz_samples;
  observation.embedding_dim = config.agent.policy.embedding_dim;
  MetricsSink sink(a.metrics);
  const env::Tokenizer tokenizer;
  const experiments::StopSignals stop;
  config.hooks = stop_hooks(stop);
  return print_result(
      "sft",
      agents::run_sft(config, pairs, agents::store_observer(matrix_store(a), observation),
                      tokenizer, sink.callback(), validation),
      stop);
}

// --trajectories FILE.h5: a recorder of every scored episode (appended to when FILE exists), or
// null without the option.
std::unique_ptr<env::TrajectoryWriter> trajectory_writer(const AgentArgs& a,
                                                         const env::SparseCudaEnv& env,
                                                         const agents::AgentConfig& agent,
                                                         const std::string& run_id,
                                                         const std::string& created_by) {
  const std::optional<std::string>& file = a.trajectories;
  if (!file) return nullptr;
  env::TrajectoryFileInfo info;
  info.run_id = run_id;
  std::ostringstream text;
  for (const auto& [key, value] : agents::to_key_values(agent))
    text << key << " = " << value << "\n";
  info.config = text.str();
  const auto tokens = agents::make_token_space(agent, env.tokenizer().vocabulary_ptr());
  info.vocabulary_name = tokens->name();
  info.vocabulary_digest = tokens->digest();
  info.created_by = created_by;
  return std::make_unique<env::TrajectoryWriter>(*file, info, fs::exists(*file));
}

int run_rl_command(const AgentArgs& a) {
  agents::RlConfig config;
  config.agent = agent_config(a, 1e-5);
  config.agent.algorithm = a.algorithm;
  config.updates = a.updates;
  config.tasks_per_update = a.tasks_per_update;
  config.samples_per_task = a.samples;
  config.log_every = a.log_every;
  config.checkpoint_every = a.checkpoint_every;
  config.output_dir = a.out;
  config.init_checkpoint = *a.init;
  config.seed = config.agent.seed;
  auto env = make_env(a, config.agent, task_source(a, env::TaskOrder::shuffled), matrix_store(a));
  std::unique_ptr<env::TrajectoryWriter> writer = trajectory_writer(
      a, *env, config.agent, "agent-rl-" + a.algorithm + "-" + std::to_string(config.seed),
      "sparserl agent rl");
  MetricsSink sink(a.metrics);
  agents::EpisodeCallback on_episode;
  if (writer) on_episode = [&](const env::Episode& e) { writer->append(e); };
  const experiments::StopSignals stop;
  config.hooks = stop_hooks(stop);
  return print_result("rl", agents::run_rl(config, *env, sink.callback(), on_episode), stop);
}

int run_eval(const AgentArgs& a) {
  auto agent = agents::PolicyAgent::from_checkpoint(a.checkpoint, a.device,
                                                    agents::PolicyAgent::CheckpointUse::inference);
  agents::EvaluationConfig config;
  config.greedy = !a.no_greedy;
  config.samples = a.samples;
  config.sampling.temperature = a.temperature;
  config.seed = a.seed;
  const env::TaskSource tasks = task_source(a, env::TaskOrder::sequential);
  auto env = make_env(a, agent->config(), tasks, matrix_store(a));
  std::unique_ptr<env::TrajectoryWriter> writer =
      trajectory_writer(a, *env, agent->config(),
                        "agent-eval-" + agent->policy_id() + "-" + std::to_string(config.seed),
                        "sparserl agent eval");
  agents::EpisodeCallback on_episode;
  if (writer) on_episode = [&](const env::Episode& e) { writer->append(e); };
  const agents::EvaluationSummary summary =
      agents::run_evaluation(*agent, *env, tasks.tasks(), config, on_episode);
  if (const auto& file = a.tasks_out) {
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
  if (a.json) {
    std::cout << statistics_json("eval", agent->counters().optimizer_steps, summary.statistics)
              << "\n";
  } else {
    std::cout << "checkpoint " << a.checkpoint << " (" << agent->policy_id() << ", "
              << agent->parameter_count() << " parameters, " << agent->device() << ")\n";
    for (const auto& [name, value] : summary.statistics)
      std::cout << name << " " << experiments::json_number(value) << "\n";
  }
  return 0;
}

// init-hf: a Hugging Face model folder of random weights from a config.json and a tokenizer.json
// (hf_model.hpp), for [agent.model] kind = "hf" path = OUT.
struct InitHfArgs {
  std::string config;
  std::string tokenizer;
  std::string out;
  std::uint64_t seed = 0;
};

int run_init_hf(const InitHfArgs& a) {
  for (const auto& [option, file] :
       {std::pair{"--config", &a.config}, {"--tokenizer", &a.tokenizer}}) {
    if (!fs::is_regular_file(*file))
      throw UsageError(std::string(option) + " " + *file + ": no such file");
  }
  const agents::HfModelConfig config = agents::init_hf_model(a.config, a.tokenizer, a.out, a.seed);
  std::cout << "wrote " << a.out << ": " << agents::to_string(config.family) << ", "
            << config.num_hidden_layers << " layers, hidden " << config.hidden_size
            << ", vocab_size " << config.vocab_size << ", " << config.parameter_count()
            << " parameters (" << config.torch_dtype << "), seed " << a.seed << "\n";
  return 0;
}

Run declare_init_hf(CLI::App& sub) {
  auto a = std::make_shared<InitHfArgs>();
  sub.add_option("--config", a->config,
                 "the model's shape: a config.json of the llama or qwen2 family "
                 "(experiments/models/)")
      ->type_name("CONFIG.json")
      ->required();
  sub.add_option("--tokenizer", a->tokenizer,
                 "a Hugging Face tokenizer.json with an eos token (`sparserl vocab bpe`)")
      ->type_name("TOKENIZER.json")
      ->required();
  sub.add_option("--out", a->out,
                 "the model folder to write (config.json, model.safetensors, "
                 "tokenizer.json)")
      ->type_name("DIR")
      ->required();
  non_negative(sub.add_option("--seed", a->seed, "the weights' seed"))->type_name("N");
  return [a](const std::vector<std::string>&) { return run_init_hf(*a); };
}

// export-hf: an HF policy's checkpoint as the Hugging Face folder transformers loads (LoRA merged;
// the soft prompt and value head in sparserl_policy.safetensors beside it).
struct ExportHfArgs {
  std::string checkpoint;
  std::string out;
  std::uint64_t shard_bytes = 0;
};

int run_export_hf(const ExportHfArgs& a) {
  auto agent = agents::PolicyAgent::from_checkpoint(a.checkpoint, "cpu",
                                                    agents::PolicyAgent::CheckpointUse::inference);
  if (agent->config().model.kind != agents::ModelKind::hf) {
    throw UsageError("--checkpoint " + a.checkpoint +
                     ": model.kind = small has no Hugging Face form (export-hf needs kind = hf)");
  }
  agent->export_model(a.out, a.shard_bytes);
  std::cout << "wrote " << a.out << ": " << agent->policy_id() << ", " << agent->parameter_count()
            << " parameters" << (agent->config().model.lora_rank > 0 ? ", LoRA merged" : "")
            << "\n";
  return 0;
}

Run declare_export_hf(CLI::App& sub) {
  auto a = std::make_shared<ExportHfArgs>();
  sub.add_option("--checkpoint", a->checkpoint, "a policy checkpoint of kind = hf")
      ->type_name("CKPT")
      ->required();
  sub.add_option("--out", a->out, "the Hugging Face folder to write")->type_name("DIR")->required();
  non_negative(sub.add_option("--shard-bytes", a->shard_bytes,
                              "shards of at most this many bytes (0: one model.safetensors)"))
      ->type_name("N");
  return [a](const std::vector<std::string>&) { return run_export_hf(*a); };
}

// --preset and --max-tokens (the shape of a new policy: not with --init), --steps and --batch: the
// options of pretrain and sft.
void add_new_policy_options(CLI::App& sub, AgentArgs& a, CLI::Option* init) {
  one_of(sub.add_option("--preset", a.preset, "policy size of a new policy"),
         {"tiny", "small", "medium"})
      ->excludes(init);
  sub.add_option("--max-tokens", a.max_tokens,
                 "code tokens per program of a new policy (the env's max_tokens)")
      ->type_name("N")
      ->check(CLI::Range(16, 1 << 20))
      ->excludes(init);
  sub.add_option("--steps", a.steps, "optimiser steps")->type_name("N")->check(at_least(1));
  sub.add_option("--batch", a.batch, "sequences per step")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 20));
}

// --device, --seed: the policy's device and seed (every subcommand).
void add_device_options(CLI::App& sub, AgentArgs& a) {
  sub.add_option("--device", a.device, "auto (CUDA when LibTorch sees it), cpu, cuda, cuda:N")
      ->type_name("D");
  non_negative(sub.add_option("--seed", a.seed, "weights, sampling and data order"))
      ->type_name("N");
}

// The training options of pretrain, sft and rl: --out, --init, --lr, --set, --metrics, --log-every,
// --checkpoint-every, --mask, with the stage's defaults (already in `a`). Returns --init.
CLI::Option* add_training_options(CLI::App& sub, AgentArgs& a, const std::string& default_lr) {
  sub.add_option("--out", a.out, "DIR/latest and DIR/final checkpoints; resumes from DIR/latest")
      ->type_name("DIR")
      ->required();
  CLI::Option* init =
      sub.add_option("--init", a.init, "the checkpoint to start from")->type_name("CKPT");
  add_device_options(sub, a);
  sub.add_option("--lr", a.lr, "peak learning rate (default " + default_lr + ")")->type_name("X");
  repeatable(sub.add_option("--set", a.overrides,
                            "any agent key (repeatable): policy.layers, optimizer.warmup_steps, "
                            "sampling.temperature, ppo.kl_coef, grpo.beta, reinforce.kl_coef, ..."))
      ->type_name("KEY=VALUE");
  sub.add_option("--metrics", a.metrics,
                 "append the statistics as JSON lines (default: print them)")
      ->type_name("FILE");
  sub.add_option("--log-every", a.log_every, "statistics every N steps")
      ->type_name("N")
      ->check(at_least(1));
  sub.add_option("--checkpoint-every", a.checkpoint_every,
                 "DIR/latest every N steps (0: at the end)")
      ->type_name("N")
      ->check(at_least(0));
  one_of(sub.add_option("--mask", a.mask, "the action mask (default: syntax, or the checkpoint's)"),
         {"syntax", "none"});
  return init;
}

// The tasks and the environment of rl and eval (--part's default already in `a`).
void add_env_options(CLI::App& sub, AgentArgs& a) {
  CLI::Option* split =
      sub.add_option("--split", a.split, "tasks from a split file (its --part)")->type_name("FILE");
  add_non_test_part(sub, a.part, "agent " + sub.get_name())->needs(split);
  matrix_argument(repeatable(sub.add_option("--matrix", a.matrices,
                                            "a task matrix: a file or a matrix URI (repeatable)")))
      ->excludes(split);
  one_of(sub.add_option("--op", a.op, "the operation of split / matrix tasks"), {"spmv", "spmm"});
  one_of(sub.add_option("--dtype", a.dtype, "the value type of split / matrix tasks"),
         {"f32", "f64"});
  sub.add_option("--k", a.k, "dense columns of SpMM tasks")
      ->type_name("K")
      ->check(CLI::Range(datasets::Index{1}, datasets::Index{1 << 20}));
  add_matrix_locations(sub, a.where);
  sub.add_option("--worker", a.worker, "the sparserl-worker executable (default: beside sparserl)")
      ->type_name("PATH");
  sub.add_option("--compile-workers", a.compile_workers,
                 "compile worker processes (default 0: one per core)")
      ->type_name("N")
      ->check(CLI::Range(0, 1024));
  sub.add_flag("--compile-only", a.compile_only, "stop every evaluation after the compile stage");
  sub.add_option("--trajectories", a.trajectories,
                 "record every scored episode (docs/trajectories.md; appended to when FILE exists)")
      ->type_name("FILE.h5");
}

Run declare_pretrain(CLI::App& sub) {
  auto a = std::make_shared<AgentArgs>();
  sub.add_option("--corpus", a->corpus, "the tuning dataset (its /corpus programs)")
      ->type_name("DATASET.h5")
      ->required();
  add_new_policy_options(sub, *a, add_training_options(sub, *a, "3e-4"));
  return [a](const std::vector<std::string>&) { return run_pretrain(*a); };
}

Run declare_sft(CLI::App& sub) {
  auto a = std::make_shared<AgentArgs>();
  sub.add_option("--pairs", a->pairs, "the tuning dataset (its /sft pairs)")
      ->type_name("DATASET.h5")
      ->required();
  sub.add_option("--val-pairs", a->val_pairs, "SFT pairs to report the validation loss on")
      ->type_name("DATASET.h5");
  sub.add_flag("--fixed-observations", a->fixed_observations,
               "one observation per pair (default: resampled every epoch)");
  add_new_policy_options(sub, *a, add_training_options(sub, *a, "3e-4"));
  add_matrix_locations(sub, a->where);
  return [a](const std::vector<std::string>&) { return run_sft_command(*a); };
}

Run declare_rl(CLI::App& sub) {
  auto a = std::make_shared<AgentArgs>();
  a->log_every = 1;
  a->checkpoint_every = 10;
  one_of(sub.add_option("--algorithm", a->algorithm, "the RL algorithm"),
         agents::AlgorithmRegistry::rollout_learners())
      ->required();
  add_training_options(sub, *a, "1e-5")
      ->description("the SFT checkpoint: the policy and the KL reference")
      ->required();
  sub.add_option("--updates", a->updates, "policy updates")->type_name("N")->check(at_least(1));
  sub.add_option("--tasks-per-update", a->tasks_per_update, "tasks per update")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 20));
  sub.add_option("--samples", a->samples, "episodes per task (the group of GRPO)")
      ->type_name("G")
      ->check(CLI::Range(1, 1 << 20));
  add_env_options(sub, *a);
  repeatable(sub.add_option("--generator", a->generators,
                            "a gen-v1 URI (repeatable): tasks are also fresh matrices of these "
                            "generators, each with a drawn seed= (alone: only generated)"))
      ->type_name("URI");
  sub.add_option("--generated-share", a->generated_share,
                 "the share of tasks that are generated when a split or --matrix list is given "
                 "too (default 0.5)")
      ->type_name("X");
  return [a](const std::vector<std::string>&) { return run_rl_command(*a); };
}

Run declare_eval(CLI::App& sub) {
  auto a = std::make_shared<AgentArgs>();
  a->part = datasets::SplitPart::val;
  sub.add_option("--checkpoint", a->checkpoint, "the policy to evaluate")
      ->type_name("CKPT")
      ->required();
  sub.add_option("--samples", a->samples, "sampled programs per task, for pass@k")
      ->type_name("K")
      ->check(CLI::Range(0, 1 << 20));
  sub.add_flag("--no-greedy", a->no_greedy, "no greedy program");
  sub.add_option("--temperature", a->temperature, "the sampling temperature")->type_name("T");
  sub.add_option("--tasks-out", a->tasks_out, "one CSV row per task")->type_name("FILE.csv");
  sub.add_flag("--json", a->json, "print the statistics as one JSON line");
  add_device_options(sub, *a);
  add_env_options(sub, *a);
  return [a](const std::vector<std::string>&) { return run_eval(*a); };
}

Run declare_agent(CLI::App& app) {
  app.description(
      "The learned agents' stages (docs/agents.md). DATASET.h5 is what `sparserl tune` writes\n"
      "(/corpus: the pretraining programs, /sft: the best program per task). Every stage writes\n"
      "DIR/latest and DIR/final checkpoints and resumes from DIR/latest when it exists. Ctrl-C or\n"
      "SIGTERM ends a stage at the next step with DIR/latest saved (exit status 130 / 143).");
  app.footer(
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
      "Exit status: 0 on success, 1 on an error, 2 for bad arguments.");
  Subcommands subcommands(app);
  subcommands.add("pretrain", "pretrains a new policy (or --init) on the tuning corpus",
                  declare_pretrain);
  subcommands.add("sft",
                  "supervised fine-tuning on the (matrix -> best program) pairs, observing each "
                  "pair's matrix",
                  declare_sft);
  subcommands.add("rl",
                  "RL (" +
                      datasets::knob_text::one_of(agents::AlgorithmRegistry::rollout_learners()) +
                      ") against the environment and its evaluator, from the SFT checkpoint",
                  declare_rl);
  subcommands.add("eval", "the greedy program and pass@k of a checkpoint on a split or matrices",
                  declare_eval);
  subcommands.add("init-hf",
                  "random weights in a Hugging Face model folder, for kind = \"hf\" from scratch",
                  declare_init_hf);
  subcommands.add("export-hf", "an HF policy's checkpoint as a Hugging Face folder (LoRA merged)",
                  declare_export_hf);
  return subcommands.run();
}

const CommandRegistration kRegistration(
    "agent", "train and evaluate the learned agents (pretrain, sft, rl, eval, init-hf, export-hf)",
    declare_agent);

}  // namespace
}  // namespace sparserl::tools

#endif  // SPARSERL_HAVE_AGENTS
