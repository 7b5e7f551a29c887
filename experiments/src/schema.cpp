// The schema of every configurable part of SparseRL Gym, section by section. Each key maps onto one
// field of the C++ struct that part already has (reward::EvaluatorConfig, reward::SandboxLimits,
// reward::GpuProtocol, reward::RewardConfig, env::EnvConfig, agents::AgentConfig and the stage
// configs of agents/training.hpp): runner.cpp fills those structs from these keys and nothing else,
// and the defaults here are the structs' own (tests/experiments/runner_test.cpp compares them), so
// a resolved config (config.resolved.toml) states every choice a run made. Where a library declares
// its knobs (datasets/knobs.hpp: the env's, the agents' and each registered algorithm's), the
// schema lists those declarations - key, default, range, help - rather than restating them; the
// rest are declared here. docs/config.md is rendered from this table (`sparserl config
// --markdown`).
#include <algorithm>
#include <cctype>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agent_sections.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/stage_knobs.hpp"

#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/training.hpp"
#endif
#include "sparserl/env/env_knobs.hpp"
#include "sparserl/reward/reward_knobs.hpp"

namespace sparserl::experiments {
namespace {

// data.generators: each a valid gen-v1 URI (its seed= is replaced per task, so any is dropped).
std::optional<std::string> generator_uris(const Value& value) {
  const auto& uris = std::get<std::vector<std::string>>(value);
  for (std::size_t i = 0; i < uris.size(); ++i) {
    const std::string where = "element " + std::to_string(i) + " '" + uris[i] + "': ";
    try {
      datasets::MatrixUri uri = datasets::MatrixUri::parse(uris[i]);
      if (uri.scheme != datasets::MatrixUri::Scheme::generated)
        return where + "not a gen-v1 URI (gen-v1/KIND?key=value&...)";
      uri.params.erase("seed");
      (void)datasets::GeneratorSpec::from_uri(uri);
    } catch (const std::exception& e) {
      return where + e.what();
    }
  }
  return std::nullopt;
}

// The learned agents bench.agents can name, each with its bench.NAME_checkpoint: the registered
// algorithms where this build has them, else the library's own (whose runs it then refuses).
std::vector<std::string> learned_agent_names() {
#if defined(SPARSERL_HAVE_AGENTS)
  return agents::AlgorithmRegistry::names();
#else
  return {"sft", "reinforce", "ppo", "grpo"};
#endif
}

// Every name bench.agents accepts: the template search, the random agent and the learned agents.
std::vector<std::string> bench_agent_names() {
  std::vector<std::string> names = {"template", "random"};
  for (std::string& name : learned_agent_names()) names.push_back(std::move(name));
  return names;
}

// bench.policies: NAME=CHECKPOINT, NAME a new agent name (letters, digits, '-', '_', '.'), no name
// twice. Whether CHECKPOINT is a checkpoint is checked when the bench starts (paths resolve against
// the root then).
std::optional<std::string> bench_policies(const Value& value) {
  const auto& entries = std::get<std::vector<std::string>>(value);
  const std::vector<std::string> builtin = bench_agent_names();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "element " + std::to_string(i) + " '" + entries[i] + "': ";
    const std::size_t eq = entries[i].find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entries[i].size())
      return where + "not NAME=CHECKPOINT (e.g. \"grpo-seed2=runs/grpo-2/final\")";
    const std::string name = entries[i].substr(0, eq);
    for (char c : name) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
        return where + "the name may hold letters, digits, '-', '_' and '.' only";
    }
    if (std::find(builtin.begin(), builtin.end(), name) != builtin.end())
      return where + "'" + name + "' is a bench.agents name; give the policy another";
    if (std::find(names.begin(), names.end(), name) != names.end())
      return where + "the name '" + name + "' is given twice";
    names.push_back(name);
  }
  return std::nullopt;
}

// [env]: the environment's knobs (env_knobs.hpp) and the order of the training tasks.
void add_env_section(Schema& s) {
  s.section("env",
            "The environment (env::EnvConfig and its ObservationConfig). The policy reads what the "
            "env shows, so max_tokens, mask, nnz_samples and embedding_dim are also the policy's.");
  const datasets::Knobs<env::EnvConfig>& knobs = env::env_knobs();
  s.knobs(knobs
              .section("", {"max_tokens", "mask", "nnz_samples", "embedding_dim", "index_scaling",
                            "index_scale", "stratification"})
              .specs());
  s.string("task_order", "shuffled",
           "order of the training tasks in RL (shuffled: a new seeded permutation each pass)",
           {"sequential", "shuffled"});
  s.knobs(knobs.section("", {"truncation_reward"}).specs());
}

// [agent]'s own keys, in every build: the rl stage's algorithm (one of `algorithms`; any name where
// the build has none to name, and the run is refused for want of LibTorch) and the agent's seed.
Schema& add_agent_keys(Schema& s, std::vector<std::string> algorithms) {
  return s
      .section(
          "agent",
          "The learned agent (agents::AgentConfig): the RL algorithm, its seed and device. The "
          "stage sections below hold each stage's optimiser settings and knobs.")
      .string("algorithm", "grpo",
              "the algorithm of the rl stage; sft: no RL (the SFT policy is the result)",
              std::move(algorithms))
      .integer("seed", -1, "weights, sampling and data order (-1: experiment.seed)", -1, 9.2e18);
}

#if defined(SPARSERL_HAVE_AGENTS)
// The learned agent's sections: the config's own keys (the policy's preset and its overrides, the
// rl stage's algorithm, the seed) beside the agents' knobs, placed by agent_knob_sections().
void add_agent_sections(Schema& s) {
  const std::vector<AgentKnobSection> sections = agent_knob_sections();
  const auto knobs = [&](const std::string& name) {
    for (const AgentKnobSection& section : sections) {
      if (section.name == name) return section.knobs.specs(section.defaults);
    }
    return std::vector<datasets::KnobSpec>();
  };
  s.section("policy",
            "The policy network (agents::PolicyConfig): a decoder-only transformer over [K matrix "
            "slots][feature slot][<bos>][code]. Shape keys at 0 take the preset's value.")
      .string("preset", "small", "size: tiny (~0.2M parameters, CI), small (~4M), medium (~28M)",
              {"tiny", "small", "medium"})
      .integer("layers", 0, "transformer blocks (0: the preset's)", 0, 1024)
      .integer("heads", 0, "attention heads (0: the preset's); d_model must be a multiple", 0, 1024)
      .integer("d_model", 0, "model width (0: the preset's)", 0, 65536)
      .integer("d_ff", 0, "feed-forward width (0: the preset's)", 0, 262144)
      .knobs(knobs("policy"));
  add_agent_keys(s, agents::AlgorithmRegistry::names()).knobs(knobs("agent"));
  s.section("agent.model",
            "The network the agent runs (agents::ModelConfig): the transformer of [policy] (small) "
            "or a Llama / Qwen2 decoder loaded from a Hugging Face folder (hf), with its dtype, "
            "LoRA, gradient checkpointing and prompt form; the hf keys apply to kind = hf "
            "(docs/agents.md, \"HF-format models\").")
      .knobs(knobs("agent.model"));
  s.section("agent.optimizer",
            "AdamW settings every stage shares (each stage sets its own learning rate and "
            "schedule). Weight decay applies to matrices only.")
      .knobs(knobs("agent.optimizer"));
  s.section(
       "agent.sampling",
       "How the policy samples in RL and in pass@k evaluation (the action mask applies first). "
       "Keep top_k = 0 and top_p = 1 for RL: log-probabilities are of the untruncated "
       "distribution.")
      .knobs(knobs("agent.sampling"));
  s.section("agent.pretrain",
            "Pretraining: next-token loss on the kernel corpus (programs without a matrix).")
      .knobs(knobs("agent.pretrain"));
  s.section("agent.sft", std::string(agents::AlgorithmRegistry::find("sft")->summary()))
      .knobs(knobs("agent.sft"))
      .knobs(agents::sft_stage_knobs().specs());
  s.section("agent.rl", "The RL stage's optimiser (the algorithm's knobs are in its own section).")
      .knobs(knobs("agent.rl"));
  for (const std::string& name : agents::AlgorithmRegistry::names()) {
    const agents::Algorithm* algorithm = agents::AlgorithmRegistry::find(name);
    if (algorithm->knobs().empty()) continue;  // sft: its section is the stage's, above
    s.section("agent." + name, std::string(algorithm->summary())).knobs(knobs("agent." + name));
  }
}
#endif

// [experiment] and [data]: what the run is and what it trains on.
void add_run_sections(Schema& s) {
  s.section(
       "experiment",
       "What the run is called, its seed, and where its paths start. Relative paths anywhere in "
       "a config (data.split, data.index_dirs, data.data_dir, train.corpus, train.sft_pairs, "
       "train.teacher_store, "
       "train.init_checkpoint, bench.*_checkpoint, experiment.output_dir) resolve against the "
       "root: `--root DIR` when given, else `root` below, itself relative to the config file's "
       "folder.")
      .string("name", "experiment",
              "name of the experiment; the run directory is <output_dir>/<name>__<seed>__<time>")
      .integer("seed", 0, "the seed every random choice of the run derives from", 0, 9.2e18)
      .string("root", "",
              "the project root, relative to the config file's folder (empty: that folder); "
              "`--root DIR` overrides it")
      .string("output_dir", "runs",
              "folder that receives run directories (relative to the root); `--runs-dir DIR` "
              "overrides it")
      .string("description", "", "free text copied into run.json");

  s.section("data", "Which matrices the run trains on and which operation it asks for.")
      .string("split", "", "split file (datasets/splits/*.split); empty: use `uris`")
      .string("part", "train",
              "part of the split the training stages use (never test: training refuses it)",
              {"train", "val", "test"})
      .string_list("uris", {},
                   "task matrix URIs (suitesparse-v1/..., gen-v1/..., file:...) used when `split` "
                   "is empty")
      .string("data_dir", "data",
              "where downloaded and converted matrices live; when the file does not set it, "
              "$SPARSERL_DATA_DIR wins over the default")
      .string_list("index_dirs", {"../shared/matrices"},
                   "folders holding an INDEX.csv and the Matrix Market files it lists (missing "
                   "folders are skipped)")
      .string("op", "spmv", "the operation", {"spmv", "spmm"})
      .string("dtype", "f32", "value type of the kernel's arrays", {"f32", "f64"})
      .integer("k", 8, "dense columns of X and Y for SpMM", 1, 1024)
      .integer("max_tasks", 0, "use at most this many matrices of the split or list (0: all)", 0,
               1e9)
      .string_list("generators", {},
                   "gen-v1 URIs whose fresh matrices (a drawn seed= each) the rl stage mixes into "
                   "its tasks, e.g. \"gen-v1/rmat?scale=9&edge_factor=6&permute=1\" (empty: none)")
      .validate(generator_uris)
      .real("generated_share", 0.5,
            "share of the rl stage's tasks that are generated matrices when `generators` is set",
            1e-9, 1.0)
      .string_list("regimes", {},
                   "take only the split's matrices of these regimes (small < 200,000 <= medium < "
                   "1,000,000 <= large nonzeros; version-2 splits only); empty: all",
                   {"small", "medium", "large"})
      .string_list(
          "sources", {},
          "take only the split's matrices from these sources (shared: real matrices at "
          "hand, catalogue: the collection's, present where fetched, generated); empty: all",
          {"shared", "catalogue", "generated"})
      .string_list("families", {},
                   "take only the split's matrices of these families (the collection group, or the "
                   "generator family of version-2 entries; checked against the split's); empty: "
                   "all")
      .integer("matrix_cache_mib", 12288,
               "MiB of loaded matrices the run keeps in memory for its observations (SFT's and "
               "RL's prompts; the newest one always): 36 of bench-v2's 40 large train matrices hold "
               "6.4 GiB; when they do not fit, every step reads or generates most of its matrices "
               "again",
               1, 1e7);
}

// [train], [eval] and [bench]: what the runner does and with what budgets.
void add_stage_sections(Schema& s) {
  s.section("train",
            "What `sparserl train` runs: the stages in order, their budgets, and where the first "
            "two stages' data come from.")
      .knobs(train_knobs().specs());

  s.section("eval",
            "The eval stage of `sparserl train` and `sparserl eval`: greedy and pass@k on a part "
            "of the split (or on data.uris).")
      .knobs(eval_knobs().specs());

  s.section("bench",
            "`sparserl bench`: agents x matrices of a split part -> per-matrix and summary tables.")
      .string_list("agents", {"template", "sft"}, "agents compared, in table order",
                   bench_agent_names())
      .string("part", "val",
              "part of data.split benchmarked (test only by `sparserl bench --part test`)",
              {"train", "val", "test"})
      .integer("samples", 8,
               "k: sampled programs per matrix for pass@k (learned and random agents; the "
               "template search answers once)",
               1, 1 << 20)
      .integer("template_budget", 16, "programs the template search measures per matrix", 1, 100000)
      .integer("template_parallel", 0,
               "matrices the template search works on at once, within a batch of "
               "eval.tasks_per_batch (each search times one program at a time; 0: the GPU workers, "
               "from 2 to 4; 1: one after another)",
               0, 1024)
      .string("template_measurements", "",
              "a measurement store (`sparserl tune --measurements`, docs/design-space.md), "
              "relative to the root: the template search fits its learned cost model on the "
              "store's measurements of this GPU and spends its budget by the matrix; the bench "
              "never writes to it (\"\": the analytic model alone)")
      .boolean("template_halving", false,
               "the template search screens the faster half of its candidates again with twice "
               "the repetitions until at most 2 x 4 finalists remain (successive halving)")
      .integer("template_refine", 0,
               "after its first screening round the template search screens up to this many "
               "more points of the two design families that were fastest (their next points by "
               "predicted time, in turn); 0: none",
               0, 100000)
      .string("oracle", "cache",
              "the oracle every answer is measured against, the template search's best program "
              "per matrix (DATA_DIR/oracle/<split digest>/<device>/): cache (read what is there; "
              "a template agent with at least oracle_budget fills it), compute (also search the "
              "missing matrices; needs a GPU) or off",
              {"cache", "compute", "off"})
      .integer("oracle_budget", 16, "programs the oracle's template search measures per matrix", 1,
               100000);
  for (const std::string& name : learned_agent_names()) {
    s.string(name + "_checkpoint", "", "policy checkpoint of the " + name + " agent");
  }
  s.string_list("policies", {},
                "more learned agents, each \"NAME=CHECKPOINT\" (e.g. one per seed: "
                "\"grpo-seed2=runs/grpo-2/final\"), compared after bench.agents")
      .validate(bench_policies)
      .boolean("record_trajectories", true,
               "write every program of the learned and random agents (answers and samples, "
               "policy ids AGENT:greedy / AGENT:sampled / random) to RUN_DIR/trajectories.h5")
      .integer("max_tasks", 0, "benchmark at most this many matrices (0: all)", 0, 1e9);
}

// [evaluator] and [sandbox]: the evaluator's workers and their limits (reward_knobs.hpp), and
// compile_only, the runner's own: it starts no GPU worker (gpu_workers = 0), listed beside
// gpu_workers.
void add_evaluator_sections(Schema& s) {
  const std::vector<datasets::KnobSpec> evaluator = reward::evaluator_knobs().specs();
  const auto after_gpu_workers =
      std::find_if(evaluator.begin(), evaluator.end(),
                   [](const datasets::KnobSpec& k) { return k.path == "gpu_workers"; }) +
      1;
  s.section(
       "evaluator",
       "The evaluator (reward::EvaluatorConfig): compile and GPU workers, deadlines, caches and "
       "program limits.")
      .knobs({evaluator.begin(), after_gpu_workers})
      .boolean("compile_only", false, "stop after the compile stage even where a GPU is present")
      .knobs({after_gpu_workers, evaluator.end()});

  s.section(
       "sandbox",
       "Limits every worker process runs under (reward::SandboxLimits, set one by one, checked "
       "and logged). Amounts: -1 means unlimited.")
      .knobs(reward::sandbox_knobs().specs());
}

// [check], [timing] and [reward]: the GPU protocol's and the reward's knobs (reward_knobs.hpp).
void add_reward_sections(Schema& s) {
  const datasets::Knobs<reward::GpuProtocol>& protocol = reward::gpu_protocol_knobs();
  s.section("check", "The correctness stage on the GPU (reward::GpuProtocol).")
      .knobs(protocol.section("check").specs());
  s.section("timing",
            "The timing stage: CUPTI kernel time, candidate and cuSPARSE interleaved "
            "(reward::GpuProtocol).")
      .knobs(protocol.section("timing").specs());
  s.section("reward",
            "The hierarchical reward (reward::RewardConfig): R = R_compile + 1[compiled] R_test + "
            "1[correct] r_eff shape(speedup) - r_pen 1[resource limit], clipped.")
      .knobs(protocol.section("", {"baseline"}).specs())
      .knobs(reward::reward_knobs().specs());
}

// [checkpoints], [report] and [progress]: what a run writes.
void add_output_sections(Schema& s) {
  s.section(
       "checkpoints",
       "Checkpoints in the run directory's checkpoints/ folder: step-NNNNNN/ with the policy's "
       "files, stage.json and meta.json. Steps count through the stages (pretrain, then sft, "
       "then rl). A stop (SIGINT, SIGTERM, SIGHUP) and the end of every stage always save one.")
      .knobs(checkpoint_knobs().specs());

  s.section("report",
            "report.md and its PNG plots (gnuplot); `sparserl plot RUN_DIR` redraws them.")
      .boolean("plots", true,
               "draw PNG plots with gnuplot (skipped, and said so in the report, when gnuplot is "
               "absent)")
      .string("gnuplot", "gnuplot", "the gnuplot program (a name on PATH or a path)")
      .string_list(
          "curves",
          {"loss", "reward/mean", "env/compile_rate", "env/correct_rate", "env/speedup_geomean"},
          "statistics of metrics.jsonl drawn as training curves, one plot each (absent "
          "ones are listed as absent)")
      .integer("bar_matrices", 60,
               "at most this many matrices in the per-matrix speedup bars (the slowest and fastest "
               "are shown)",
               2, 100000)
      .string("reference", "sft",
              "the agent of results.csv every other agent is compared with matrix by matrix "
              "(answers that differ, speedup ratio); empty, or an agent the results lack: none");

  s.section("progress",
            "Progress lines of long work (train, bench, tune) on stderr: done / total, rate, time "
            "left.")
      .real("interval_s", 10,
            "seconds between progress lines when stderr is not a terminal (a terminal gets one "
            "line redrawn in place)",
            0.5, 86400);
}

Schema build_schema() {
  Schema s;
  add_run_sections(s);
  add_env_section(s);

#if defined(SPARSERL_HAVE_AGENTS)
  add_agent_sections(s);
#else
  add_agent_keys(s, {});
  for (const char* section : {"policy", "agent"}) {
    s.unavailable(section,
                  "this build has no LibTorch: the learned agents and their keys are absent");
  }
#endif
  add_stage_sections(s);
  add_evaluator_sections(s);
  add_reward_sections(s);
  add_output_sections(s);
  return s;
}

}  // namespace

#if defined(SPARSERL_HAVE_AGENTS)
std::vector<AgentKnobSection> agent_knob_sections() {
  const datasets::Knobs<agents::AgentConfig> knobs = agents::agent_knobs();
  const agents::AgentConfig defaults;
  agents::AgentConfig rl = defaults;
  rl.optimizer.lr = agents::kRlLearningRate;
  const std::vector<std::string> schedule = {"lr", "warmup_steps", "schedule", "decay_steps"};
  std::vector<AgentKnobSection> out = {
      {"policy", "", knobs.section("policy", {"dropout", "tie_embeddings", "matrix_input"}),
       defaults},
      {"agent", "", knobs.section("agent", {"device"}), defaults},
      {"agent.model", "", knobs.section("model"), defaults},
      {"agent.optimizer", "",
       knobs.section("optimizer",
                     {"beta1", "beta2", "eps", "weight_decay", "max_grad_norm", "min_lr_ratio"}),
       defaults},
      {"agent.sampling", "",
       knobs.section("sampling",
                     {"temperature", "top_k", "top_p", "decode_graphs", "overlap_steps",
                      "draw_graphs"}),
       defaults},
      {"agent.pretrain", "pretrain", knobs.section("optimizer", schedule), defaults},
      {"agent.sft", "sft", knobs.section("optimizer", schedule), defaults},
      {"agent.rl", "rl", knobs.section("optimizer", schedule), rl},
  };
  for (const std::string& name : agents::AlgorithmRegistry::names()) {
    datasets::Knobs<agents::AgentConfig> algorithm = knobs.section(name);
    if (!algorithm.empty()) out.push_back({"agent." + name, "", std::move(algorithm), defaults});
  }
  return out;
}
#endif

const Schema& experiment_schema() {
  static const Schema schema = build_schema();
  return schema;
}

}  // namespace sparserl::experiments
