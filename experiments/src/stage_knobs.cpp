// The declarations of the runner's [train], [eval] and [checkpoints] knobs (stage_knobs.hpp).
#include "sparserl/experiments/stage_knobs.hpp"

#include <stdexcept>

namespace sparserl::experiments {
namespace {

using datasets::KnobValue;

// train.stages, a list of stage names. Its text is the TOML literal a config file holds
// (["pretrain", "sft"]), read back by the config's own parser, which checks the names.
datasets::KnobBinding<TrainConfig> stages_knob() {
  return {.spec = {"stages",
                   datasets::KnobType::string_list,
                   {},
                   "stages to run, in this order (rl is skipped when agent.algorithm = sft)",
                   {},
                   {},
                   {"pretrain", "sft", "rl", "eval"},
                   {}},
          .get = [](const TrainConfig& t) { return KnobValue(t.stages); },
          .set = [](TrainConfig& t,
                    const KnobValue& v) { t.stages = std::get<std::vector<std::string>>(v); },
          .text = [](const TrainConfig& t) { return to_toml_literal(Value(t.stages)); },
          .parse =
              [](TrainConfig& t, std::string_view text) {
                Config config;
                try {
                  config.set("train.stages=" + std::string(text));
                } catch (const ConfigError& e) {
                  throw std::invalid_argument(e.what());
                }
                t.stages = config.string_list("train.stages");
              }};
}

}  // namespace

CheckpointPolicy CheckpointConfig::policy() const {
  CheckpointPolicy p;
  p.keep_last = static_cast<int>(keep_last);
  p.best_metric = best_metric;
  p.higher_is_better = best_mode == "max";
  return p;
}

const datasets::Knobs<TrainConfig>& train_knobs() {
  using C = TrainConfig;
  static const datasets::Knobs<C> knobs =
      datasets::Knobs<C>()
          .add(stages_knob())
          .string("init_checkpoint", &C::init_checkpoint,
                  "a policy checkpoint folder the first learning stage starts from (empty: fresh "
                  "weights); e.g. an SFT run's checkpoints/best for an rl-only run")
          .string(
              "corpus", &C::corpus,
              "pretraining programs: \"design-space\" (rendered in-process from the kernel design "
              "space of data.op / data.dtype) or a dataset.h5 of `sparserl tune` (/corpus)")
          .integer("corpus_programs", &C::corpus_programs,
                   "design-space corpus: at most this many points, drawn with the seed (0: all)", 0,
                   1e9)
          .string_list("text_corpus", &C::text_corpus,
                       "pretraining text beside the programs, for agent.model.kind = \"hf\": every "
                       "C/C++/CUDA source under these folders (relative to the root), e.g. "
                       "[\"../shared/corpus/cuda\"], cut into sequences of env.max_tokens tokens")
          .integer("text_corpus_files", &C::text_corpus_files,
                   "text corpus: at most this many files, drawn with the seed (0: all)", 0, 1e9)
          .string("sft_pairs", &C::sft_pairs,
                  "SFT (matrix -> program) pairs: \"design-space\" (the template search over the "
                  "training matrices, in-process; saved as the run's sft-pairs.json), a "
                  "dataset.h5 of `sparserl tune` (/sft), or another run's sft-pairs.json")
          .string("teacher_store", &C::teacher_store,
                  "design-space pairs: a measurement store (`sparserl tune --measurements`, "
                  "relative to the root) whose recorded searches stand in for the template search "
                  "on the training matrices they cover - the same best and near-best programs, "
                  "as measured on the store's GPU, with no search again; the other matrices are "
                  "searched (\"\": search every one)")
          .integer("search_budget", &C::search_budget,
                   "design-space pairs: programs the template search measures per matrix (with a "
                   "GPU the fastest correct one wins; without one, nothing is timed and the cost "
                   "model's favourite among those that compile is the target)",
                   1, 100000)
          .integer("search_refine", &C::search_refine,
                   "design-space pairs: after its first screening round the template search "
                   "screens up to this many more points of the two fastest design families (more "
                   "near-best programs of the winning family for sft_per_task; 0: none)",
                   0, 100000)
          .integer("search_parallel", &C::search_parallel,
                   "design-space pairs: matrices searched at once (each search times one program "
                   "at a time, so several keep several GPUs busy and overlap one matrix's "
                   "generation with another's timing; 0: the GPU workers, from 2 to 4; 1: one "
                   "after another)",
                   0, 1024)
          .integer(
              "sft_per_task", &C::sft_per_task,
              "design-space pairs per matrix: the fastest, and up to this many minus one next "
              "fastest distinct correct programs within sft_within of it (a spread of near-best "
              "programs; `sparserl tune --sft-per-task`); only the fastest without a GPU",
              1, 1000)
          .real("sft_within", &C::sft_within,
                "design-space pairs: the other programs' speedup is at least this fraction of the "
                "fastest's",
                1e-6, 1.0)
          .integer("pretrain_steps", &C::pretrain_steps, "optimiser steps of pretraining", 1, 1e12)
          .integer("pretrain_batch_size", &C::pretrain_batch_size, "programs per pretraining step",
                   1, 1 << 20)
          .integer("sft_steps", &C::sft_steps, "optimiser steps of SFT", 1, 1e12)
          .integer("sft_batch_size", &C::sft_batch_size, "pairs per SFT step", 1, 1 << 20)
          .integer("rl_updates", &C::rl_updates, "RL updates", 1, 1e12)
          .integer("tasks_per_update", &C::tasks_per_update, "tasks (matrices) per RL update", 1,
                   1 << 20)
          .integer("samples_per_task", &C::samples_per_task, "G: completions per task (one group)",
                   1, 1 << 20)
          .integer("log_every", &C::log_every,
                   "pretraining and SFT: a metrics line every this many steps", 1, 1e12)
          .integer("rl_log_every", &C::rl_log_every, "RL: a metrics line every this many updates",
                   1, 1e12)
          .boolean("overlap_generation", &C::overlap_generation,
                   "RL: sample the next update's batch while the last one is evaluated (one update "
                   "stale; PPO and GRPO only, which weigh it by the ratio to the log-probabilities "
                   "recorded at sampling; on one GPU it slowed a GRPO run 2.3x, the sampling and "
                   "the timed runs taking turns: docs/agents.md)")
          .boolean("record_trajectories", &C::record_trajectories,
                   "write every RL episode to trajectories.h5 (docs/trajectories.md)");
  return knobs;
}

const datasets::Knobs<EvalConfig>& eval_knobs() {
  using C = EvalConfig;
  static const datasets::Knobs<C> knobs =
      datasets::Knobs<C>()
          .string("part", &C::part,
                  "part of data.split evaluated (test only by `sparserl eval --part test`)",
                  {"train", "val", "test"})
          .boolean("greedy", &C::greedy, "one greedy completion per task")
          .integer("samples", &C::samples, "k sampled completions per task for pass@k (0: none)", 0,
                   1 << 20)
          .real("temperature", &C::temperature, "temperature of the k samples", 1e-6, 100)
          .integer("tasks_per_batch", &C::tasks_per_batch, "tasks generated together", 1, 1 << 20)
          .integer("max_tasks", &C::max_tasks, "evaluate at most this many tasks (0: all)", 0, 1e9);
  return knobs;
}

const datasets::Knobs<CheckpointConfig>& checkpoint_knobs() {
  using C = CheckpointConfig;
  static const datasets::Knobs<C> knobs =
      datasets::Knobs<C>()
          .integer("every", &C::every,
                   "pretraining and SFT: a checkpoint every this many steps (0: only at the end of "
                   "a stage)",
                   0, 1e12)
          .integer("rl_every", &C::rl_every,
                   "RL: a checkpoint every this many updates (0: only at the end)", 0, 1e12)
          .integer("keep_last", &C::keep_last,
                   "keep the newest N checkpoints (the best one is kept as well)", 0, 1e6)
          .string("best_metric", &C::best_metric,
                  "statistic that picks the best checkpoint, as named in metrics.jsonl (empty: "
                  "keep no best)")
          .string("best_mode", &C::best_mode,
                  "whether the largest or the smallest value of best_metric is best",
                  {"max", "min"});
  return knobs;
}

}  // namespace sparserl::experiments
