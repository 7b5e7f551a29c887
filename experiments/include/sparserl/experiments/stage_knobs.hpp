// The runner's own knobs, declared once (datasets/knobs.hpp) beside the structs they fill: [train]
// (the stages of `sparserl train` in order, where pretraining and SFT take their data from, and
// each stage's budget), [eval] (the eval stage and `sparserl eval`) and [checkpoints] (how often a
// run saves and what it keeps). The schema (schema.cpp) lists these declarations - key, default,
// range, help - and the runner reads the sections through them (train_config(), eval_config(),
// checkpoint_config() below), so no key is named twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sparserl/datasets/knobs.hpp"
#include "sparserl/experiments/checkpoints.hpp"
#include "sparserl/experiments/config.hpp"

namespace sparserl::experiments {

// A path or this word: data built in-process from the kernel design space.
inline constexpr const char* kDesignSpace = "design-space";

struct TrainConfig {
  std::vector<std::string> stages = {"pretrain", "sft", "rl", "eval"};
  std::string init_checkpoint;
  std::string corpus = kDesignSpace;
  std::int64_t corpus_programs = 0;
  std::vector<std::string> text_corpus;  // folders of C/C++/CUDA sources: plain text (kind = hf)
  std::int64_t text_corpus_files = 0;
  std::string sft_pairs = kDesignSpace;
  std::string teacher_store;  // "" or a measurement store standing in for the search
  std::int64_t search_budget = 4;
  std::int64_t search_refine = 0;  // design-space pairs: the search's refinement round (0: none)
  std::int64_t search_parallel = 0;  // design-space pairs: matrices searched at once (0: auto)
  std::int64_t sft_per_task = 1;
  double sft_within = 0.9;
  std::int64_t pretrain_steps = 1000;
  std::int64_t pretrain_batch_size = 32;
  std::int64_t sft_steps = 1000;
  std::int64_t sft_batch_size = 32;
  std::int64_t rl_updates = 100;
  std::int64_t tasks_per_update = 8;
  std::int64_t samples_per_task = 8;
  std::int64_t log_every = 10;
  std::int64_t rl_log_every = 1;
  bool overlap_generation = false;
  bool record_trajectories = true;
};

struct EvalConfig {
  std::string part = "val";
  bool greedy = true;
  std::int64_t samples = 8;
  double temperature = 1.0;
  std::int64_t tasks_per_batch = 8;
  std::int64_t max_tasks = 0;
};

struct CheckpointConfig {
  std::int64_t every = 100;
  std::int64_t rl_every = 10;
  std::int64_t keep_last = 3;
  std::string best_metric = "reward/mean";
  std::string best_mode = "max";

  // What the checkpoint store keeps: the last keep_last and the best by
  // best_metric.
  [[nodiscard]] CheckpointPolicy policy() const;
};

const datasets::Knobs<TrainConfig>& train_knobs();
const datasets::Knobs<EvalConfig>& eval_knobs();
const datasets::Knobs<CheckpointConfig>& checkpoint_knobs();

// The sections of a resolved config, read through the declarations above
// (wiring.cpp); RunnerError naming the key path for a value they refuse.
TrainConfig train_config(const Config& config);
EvalConfig eval_config(const Config& config);
CheckpointConfig checkpoint_config(const Config& config);

}  // namespace sparserl::experiments
