// `sparserl train`, `train --resume` and `eval`: the stages of a config run into a run directory
// (runner.hpp has the contract). The stages' loops are agents/training.hpp's; this file decides
// what each stage gets (its AgentConfig, data, environment, where it starts from), files the
// checkpoints the stages save into checkpoints/ with a stage.json, numbers steps through the
// stages, and picks up where a stopped run left off. Started as one rank of several (the
// environment's WORLD_SIZE > 1: torchrun, Slurm, `sparserl train --gpus N`), it joins their group:
// rank 0 makes and writes the run directory, every rank trains its share (docs/distributed.md).
#include "sparserl/experiments/runner.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "policy_evaluation.hpp"
#include "session.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/checkpoints.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/progress.hpp"
#include "sparserl/experiments/report.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/run_directory.hpp"
#include "sparserl/experiments/split_tasks.hpp"
#include "sparserl/experiments/stage_knobs.hpp"
#include "training_corpus.hpp"

#if defined(SPARSERL_HAVE_AGENTS)
#include "sparserl/agents/distributed.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/agents/tuning_data.hpp"
#include "sparserl/env/bpe_trainer.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "sparserl/kernels/tuning_output.hpp"
#endif

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

const std::vector<std::string> kStageOrder = {"pretrain", "sft", "rl", "eval"};

// One stage of a run: its budget in steps and the global step it starts after.
struct StagePlan {
  std::string name;
  std::int64_t steps = 0;
  std::int64_t offset = 0;
};

std::vector<StagePlan> plan_stages(const Config& config) {
  const TrainConfig train = train_config(config);
  const std::vector<std::string>& stages = train.stages;
  if (stages.empty()) {
    throw RunnerError("train.stages: empty (expected some of pretrain, sft, rl, eval)");
  }
  std::vector<StagePlan> plan;
  std::int64_t offset = 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto at = static_cast<std::size_t>(
        std::find(kStageOrder.begin(), kStageOrder.end(), stages[i]) - kStageOrder.begin());
    if (i > 0 && at <= last) {
      throw RunnerError("train.stages: '" + stages[i] + "' after '" + stages[i - 1] +
                        "' (expected the order pretrain, sft, rl, eval, each at most once)");
    }
    last = at;
    if (stages[i] == "rl" && config.string("agent.algorithm") == "sft") continue;
    StagePlan s;
    s.name = stages[i];
    if (s.name == "pretrain") s.steps = train.pretrain_steps;
    if (s.name == "sft") s.steps = train.sft_steps;
    if (s.name == "rl") s.steps = train.rl_updates;
    s.offset = offset;
    offset += s.steps;
    plan.push_back(s);
  }
  return plan;
}

[[maybe_unused]] std::int64_t total_steps(const std::vector<StagePlan>& plan) {
  return plan.empty() ? 0 : plan.back().offset + plan.back().steps;
}

[[maybe_unused]] bool learning(const std::string& stage) { return stage != "eval"; }

// The name results.csv and the report give the trained policy.
[[maybe_unused]] std::string policy_label(const Config& config,
                                          const std::vector<StagePlan>& plan) {
  std::string last = "policy";
  for (const StagePlan& s : plan) {
    if (s.name == "rl") last = config.string("agent.algorithm");
    if (s.name == "sft") last = "sft";
    if (s.name == "pretrain") last = "pretrain";
  }
  return last;
}

#if defined(SPARSERL_HAVE_AGENTS)

using Group = std::shared_ptr<agents::ProcessGroup>;

bool is_main(const Group& group) { return !group || group->main(); }

// The SFT pairs as text and back, for rank 0 to hand the others the template search's answers
// (timings differ between searches, so each rank searching for itself could train on other data).
Json pairs_json(const std::vector<agents::SftPair>& pairs) {
  Json list = Json::array();
  for (const agents::SftPair& p : pairs) list.push_back(Json::array({p.task.str(), p.program}));
  return list;
}

std::string encode_pairs(const std::vector<agents::SftPair>& pairs) {
  return dump_json(pairs_json(pairs));
}

std::vector<agents::SftPair> decode_pairs(const std::string& text) {
  std::vector<agents::SftPair> pairs;
  const Json list = parse_json(text, "rank 0's SFT pairs");
  for (const Json& pair : as_array(list)) {
    pairs.push_back({datasets::Task::parse(as_string(pair.at(0))), as_string(pair.at(1))});
  }
  return pairs;
}

// The template search's pairs as a run saved them (RunDirectory::sft_pairs_path).
std::vector<agents::SftPair> read_saved_pairs(const fs::path& file) {
  std::vector<agents::SftPair> pairs;
  for (const auto& [task, program] : read_saved_sft_pairs(file)) {
    try {
      pairs.push_back({datasets::Task::parse(task), program});
    } catch (const std::invalid_argument& e) {
      throw RunnerError(file.string() + ": " + e.what());
    }
  }
  return pairs;
}

// Where a stopped run stands: the latest checkpoint and what its stage.json says.
struct Position {
  CheckpointInfo checkpoint;
  std::string stage;
  std::int64_t stage_step = 0;
  bool done = false;  // the stage had finished when this checkpoint was saved
};

std::optional<Position> read_position(const CheckpointStore& store) {
  const auto latest = store.latest();
  if (!latest) return std::nullopt;
  const fs::path file = latest->dir / "stage.json";
  const std::optional<std::string> text = datasets::read_file_bytes(file);
  if (!text)
    throw RunnerError(file.string() + ": missing (a checkpoint this runner did not write?)");
  const Json json = parse_json(*text, file.string());
  Position p;
  p.checkpoint = *latest;
  try {
    p.stage = as_string(json.at("stage"));
    p.stage_step = as_integer(json.at("stage_step"));
    p.done = as_bool(json.at("done"));
  } catch (const std::exception& e) {
    throw RunnerError(file.string() + ": expected stage, stage_step and done (" + e.what() + ")");
  }
  return p;
}

// The runs of the training stages inside RunDirectory::run.
class Trainer {
 public:
  Trainer(Session& session, const RunDirectory& run, const StopSignals& stop, Group group)
      : group_(std::move(group)),
        main_(is_main(group_)),
        s_(session),
        config_(session.config),
        train_(train_config(config_)),
        checkpoints_(checkpoint_config(config_)),
        run_(run),
        stop_(stop),
        plan_(plan_stages(config_)),
        store_(run.checkpoints(checkpoints_.policy())) {}

  void run() {
    const std::optional<Position> position = read_position(store_);
    // Rank 0 alone writes the run directory; the others read what it wrote (the stages start
    // together, agents::open_stage_agent).
    if (main_) {
      rewind(position);
      metrics_.emplace(run_.metrics_path());
    }
    std::optional<fs::path> previous;
    if (!train_.init_checkpoint.empty()) {
      previous = resolve_path(s_.root, train_.init_checkpoint);
    }
    const auto index_of = [](const std::string& stage) {
      return std::find(kStageOrder.begin(), kStageOrder.end(), stage) - kStageOrder.begin();
    };
    for (const StagePlan& stage : plan_) {
      if (stop_.requested()) return;
      if (!learning(stage.name)) {
        if (!main_) continue;  // the evaluation runs on rank 0 (its evaluator uses every GPU)
        if (!previous) {
          throw RunnerError(
              "train.stages: eval needs a policy: a learning stage before it or "
              "train.init_checkpoint");
        }
        evaluate(*previous);
        continue;
      }
      const fs::path kept = run_.root() / "policies" / stage.name;
      if (position && index_of(stage.name) < index_of(position->stage)) {
        previous = kept;
        continue;
      }
      const fs::path work = run_.root() / "work" / stage.name;
      const bool resuming = position && stage.name == position->stage;
      if (resuming && position->done) {
        // Finished, but perhaps stopped before its policy was set apart.
        if (main_ && !fs::exists(kept / "checkpoint.txt")) {
          fs::create_directories(kept);
          copy_folder_contents(position->checkpoint.dir, kept, {"meta.json", "stage.json"});
        }
        previous = kept;
        continue;
      }
      if (!main_) {
        if (run_stage(stage, work, previous, resuming ? position->stage_step : 0).stopped) return;
        previous = kept;
        continue;
      }
      datasets::remove_tree(work);
      if (resuming) {
        fs::create_directories(work / "latest");
        copy_folder_contents(position->checkpoint.dir, work / "latest",
                             {"meta.json", "stage.json"});
        s_.say(stage.name + ": resuming at step " + std::to_string(position->stage_step) + " of " +
               std::to_string(stage.steps) + " (checkpoint " +
               position->checkpoint.dir.filename().string() + ")");
      }
      fs::create_directories(work);
      const agents::StageResult result =
          run_stage(stage, work, previous, resuming ? position->stage_step : 0);
      if (result.stopped) return;
      datasets::remove_tree(kept);
      fs::create_directories(kept.parent_path());
      fs::rename(work / "final", kept);
      datasets::remove_tree(work);
      previous = kept;
    }
    if (!main_) return;
    datasets::remove_tree(run_.root() / "work");
    if (previous) {
      RunInfo info = run_.info();
      info.extra["policy"] = fs::relative(*previous, run_.root()).string();
      info.extra["steps"] = total_steps(plan_);
      run_.write_info(info);
    }
  }

 private:
  // Drops what was logged after the checkpoint a resumed run starts from.
  void rewind(const std::optional<Position>& position) {
    const std::int64_t step = position ? position->checkpoint.step : 0;
    const std::size_t dropped = rewind_metrics(run_.metrics_path(), step, "eval");
    if (dropped > 0) {
      s_.say("metrics.jsonl: dropped " + std::to_string(dropped) + " lines logged after step " +
             std::to_string(step));
    }
    std::int64_t rl_updates = 0;
    for (const StagePlan& stage : plan_) {
      if (stage.name == "rl") {
        rl_updates = std::clamp<std::int64_t>(step - stage.offset, 0, stage.steps);
      }
    }
    const fs::path file = run_.trajectories_path();
    std::error_code ec;
    if (!fs::exists(file, ec)) return;
    const std::int64_t keep = rl_updates * train_.tasks_per_update * train_.samples_per_task;
    env::TrajectoryFile existing = env::read_trajectories(file);
    if (existing.rows <= keep) return;
    const fs::path temporary = file.string() + ".rewind";
    {
      env::TrajectoryWriter writer(temporary, existing.info);
      for (std::int64_t i = 0; i < keep && i < static_cast<std::int64_t>(existing.episodes.size());
           ++i) {
        writer.append(existing.episodes[static_cast<std::size_t>(i)]);
      }
      writer.close();
    }
    fs::rename(temporary, file);
    s_.say("trajectories.h5: dropped " + std::to_string(existing.rows - keep) +
           " episodes recorded after step " + std::to_string(step));
  }

  agents::StageHooks hooks(const StagePlan& stage, Progress& progress) {
    agents::StageHooks h;
    // The stage polls this after every step: the one place that sees each step end.
    h.stop_requested = [this, &progress] {
      progress.advance(1, note_);
      return stop_.requested();
    };
    h.on_checkpoint = [this, stage](const fs::path& latest, std::int64_t steps,
                                    const env::Statistics& statistics) {
      store_.save(stage.offset + steps, statistics, [&](const fs::path& dir) {
        copy_folder_contents(latest, dir);
        Json json = Json::object();
        json["stage"] = stage.name;
        json["stage_step"] = steps;
        json["stage_steps"] = stage.steps;
        json["done"] = steps >= stage.steps;
        write_file_atomically(dir / "stage.json", dump_json(json, 2) + "\n");
      });
    };
    return h;
  }

  agents::StatisticsCallback statistics(const StagePlan& stage) {
    return [this, stage](std::string_view name, std::int64_t step, const env::Statistics& stats) {
      if (metrics_) metrics_->append(stage.offset + step, name, stats);
      note_.clear();
      for (const char* key : {"loss", "reward/mean", "env/compile_rate"}) {
        for (const auto& [k, v] : stats) {
          if (k == key) note_ += (note_.empty() ? "" : "  ") + k + " " + json_number(v);
        }
      }
    };
  }

  agents::StageResult run_stage(const StagePlan& stage, const fs::path& work,
                                const std::optional<fs::path>& init, std::int64_t start_step) {
    agents::AgentConfig agent = agent_config(config_, stage.name);
    // An HF model folder is named relative to the root, as every other path of the config.
    if (!agent.model.path.empty()) agent.model.path = resolve_path(s_.root, agent.model.path);
    if (group_) {
      agent.device = agents::rank_device(agent.device, group_->world(), "agent.device");
    }
    const int checkpoint_every = static_cast<int>(checkpoints_.every);
    const int log_every = static_cast<int>(train_.log_every);
    note_.clear();
    // The data first (it may take a while and shows its own progress), then the stage's line.
    std::vector<std::string> corpus, texts;
    std::vector<agents::SftPair> pairs;
    std::unique_ptr<env::SparseCudaEnv> env;
    if (stage.name == "pretrain") {
      corpus = pretraining_corpus();
      texts = pretraining_texts(agent);
    }
    if (stage.name == "sft") pairs = sft_pairs();
    if (stage.name == "rl") {
      const auto order = *env::parse_task_order(config_.string("env.task_order"));
      env::TaskSource tasks = env::TaskSource::from_tasks(train_tasks(), order);
      const auto& generators = config_.string_list("data.generators");
      if (!generators.empty()) {
        tasks = env::TaskSource::mixed(std::move(tasks), generators, task_template(config_),
                                       config_.real("data.generated_share"));
      }
      env = s_.make_env(env_config(config_), std::move(tasks));
    }
    Progress progress(stage.name, stage.steps, s_.notices->stream(), s_.progress());
    progress.set(start_step);
    agents::StageResult result;
    // The knobs the two supervised stages (PretrainConfig, SftConfig) share.
    const auto set_supervised = [&](auto& c, std::int64_t batch_size) {
      c.agent = agent;
      c.steps = static_cast<int>(stage.steps);
      c.batch_size = static_cast<int>(batch_size);
      c.log_every = log_every;
      c.checkpoint_every = checkpoint_every;
      c.output_dir = work;
      c.init_checkpoint = init;
      c.hooks = hooks(stage, progress);
      c.group = group_;
    };
    if (stage.name == "pretrain") {
      agents::PretrainConfig c;
      set_supervised(c, train_.pretrain_batch_size);
      result = agents::run_pretraining(c, corpus, *s_.tokenizer, statistics(stage), texts);
    } else if (stage.name == "sft") {
      agents::SftConfig c;
      set_supervised(c, train_.sft_batch_size);
      c.resample_observations = config_.boolean("agent.sft.resample_observations");
      c.observation_seed = agent.seed;
      result = agents::run_sft(c, pairs,
                               agents::store_observer(s_.store, env_config(config_).observation),
                               *s_.tokenizer, statistics(stage));
    } else {
      agents::RlConfig c;
      c.agent = agent;
      c.updates = static_cast<int>(stage.steps);
      c.tasks_per_update = static_cast<int>(train_.tasks_per_update);
      c.samples_per_task = static_cast<int>(train_.samples_per_task);
      c.overlap_generation = train_.overlap_generation;
      c.log_every = static_cast<int>(train_.rl_log_every);
      c.checkpoint_every = static_cast<int>(checkpoints_.rl_every);
      c.output_dir = work;
      c.init_checkpoint = init;
      c.seed = agent.seed;
      c.hooks = hooks(stage, progress);
      c.group = group_;
      std::unique_ptr<env::TrajectoryWriter> writer;
      agents::EpisodeCallback on_episode;
      if (train_.record_trajectories) {
        // Every rank passes on_episode; rank 0's receives every rank's episodes and writes them.
        on_episode = [&writer](const env::Episode& e) {
          if (writer) writer->append(e);
        };
      }
      if (train_.record_trajectories && main_) {
        env::TrajectoryFileInfo info;
        info.run_id = run_.run_id();
        info.config = config_.to_toml();
        // The tokens the episodes hold: the closed vocabulary, or an HF model's BPE tokenizer.
        const auto tokens = agents::make_token_space(agent, s_.tokenizer->vocabulary_ptr());
        info.vocabulary_name = tokens->name();
        info.vocabulary_digest = tokens->digest();
        info.created_by = "sparserl train";
        const fs::path file = run_.trajectories_path();
        writer = std::make_unique<env::TrajectoryWriter>(file, info, fs::exists(file));
      }
      result = agents::run_rl(c, *env, statistics(stage), on_episode);
    }
    if (!result.stopped) progress.set(stage.steps, note_);
    progress.finish();
    return result;
  }

  std::vector<datasets::Task> train_tasks() const {
    return config_tasks(config_, s_.root, config_.string("data.part"),
                        config_.integer("data.max_tasks"));
  }

  // train.text_corpus: the source files under its folders (at most text_corpus_files of them,
  // drawn with the seed), plain text for an HF model's pretraining.
  std::vector<std::string> pretraining_texts(const agents::AgentConfig& agent) const {
    if (train_.text_corpus.empty()) return {};
    if (agent.model.kind != agents::ModelKind::hf) {
      throw RunnerError(
          "train.text_corpus: plain text needs agent.model.kind = \"hf\" (the closed vocabulary "
          "reads programs only)");
    }
    std::vector<fs::path> folders;
    for (const std::string& f : train_.text_corpus) folders.push_back(resolve_path(s_.root, f));
    std::vector<env::SourceText> files;
    try {
      files = env::read_source_tree(folders);
    } catch (const std::invalid_argument& e) {
      throw RunnerError(std::string("train.text_corpus: ") + e.what());
    }
    const std::size_t total = files.size();
    const auto n = static_cast<std::size_t>(train_.text_corpus_files);
    if (n > 0 && n < files.size()) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(config_.integer("experiment.seed")));
      std::shuffle(files.begin(), files.end(), rng);
      files.resize(n);
      std::sort(files.begin(), files.end(),
                [](const env::SourceText& a, const env::SourceText& b) { return a.name < b.name; });
    }
    std::vector<std::string> texts;
    std::size_t bytes = 0;
    for (env::SourceText& f : files) {
      bytes += f.text.size();
      texts.push_back(std::move(f.text));
    }
    if (texts.empty()) throw RunnerError("train.text_corpus: no C/C++/CUDA source in its folders");
    s_.say("pretrain: " + std::to_string(texts.size()) + " text files of " + std::to_string(total) +
           " (" + std::to_string(bytes) + " bytes) from train.text_corpus");
    return texts;
  }

  std::vector<std::string> pretraining_corpus() const {
    const std::string& source = train_.corpus;
    if (source != kDesignSpace) {
      const fs::path file = resolve_path(s_.root, source);
      std::vector<std::string> corpus = agents::read_corpus(file, task_template(config_).op);
      s_.say("pretrain: " + std::to_string(corpus.size()) + " corpus programs from " +
             file.string());
      return corpus;
    }
    const env::TaskTemplate what = task_template(config_);
    const kernels::DesignSpace space(what.op, what.dtype);
    const std::int64_t n = train_.corpus_programs;
    const std::vector<kernels::DesignPoint> points =
        n > 0 ? space.sample(static_cast<std::size_t>(n),
                             static_cast<std::uint64_t>(config_.integer("experiment.seed")))
              : space.points();
    std::vector<std::string> corpus;
    corpus.reserve(points.size());
    for (const kernels::DesignPoint& p : points) corpus.push_back(space.render(p));
    s_.say("pretrain: " + std::to_string(corpus.size()) + " corpus programs rendered from the " +
           "kernel design space (" + std::to_string(space.size()) + " points for " +
           config_.string("data.op") + " " + config_.string("data.dtype") + ")");
    return corpus;
  }

  std::vector<agents::SftPair> sft_pairs() const {
    if (!group_ || group_->size() < 2) return own_sft_pairs();
    // Every rank trains on the pairs rank 0 found.
    const std::string text = group_->broadcast(main_ ? encode_pairs(own_sft_pairs()) : "");
    return decode_pairs(text);
  }

  std::vector<agents::SftPair> own_sft_pairs() const {
    const std::string& source = train_.sft_pairs;
    if (source != kDesignSpace) {
      const fs::path file = resolve_path(s_.root, source);
      std::vector<agents::SftPair> pairs = file.extension() == ".json"
                                               ? read_saved_pairs(file)
                                               : agents::read_sft_pairs(file);
      s_.say("sft: " + std::to_string(pairs.size()) + " pairs from " + file.string());
      return pairs;
    }
    if (const fs::path saved = run_.sft_pairs_path(); fs::exists(saved)) {
      std::vector<agents::SftPair> pairs = read_saved_pairs(saved);
      s_.say("sft: " + std::to_string(pairs.size()) + " pairs from " + saved.string() +
             " (the template search's, saved by this run before it stopped)");
      if (pairs.empty()) throw RunnerError(saved.string() + ": no pair");
      return pairs;
    }
    const std::vector<datasets::Task> tasks = train_tasks();
    kernels::SftSelection selection;
    selection.per_task = static_cast<int>(train_.sft_per_task);
    selection.within = train_.sft_within;
    std::vector<agents::SftPair> pairs;
    Json saved = Json::object();
    saved["source"] = "template search";
    std::vector<datasets::Task> to_search = tasks;
    if (!train_.teacher_store.empty()) {
      to_search = stored_pairs(tasks, selection, pairs, saved);
      saved["source"] =
          to_search.empty() ? "measurement store" : "measurement store + template search";
    }
    if (!to_search.empty()) searched_pairs(to_search, selection, pairs, saved);
    saved["per_task"] = selection.per_task;
    saved["within"] = selection.within;
    saved["matrices"] = static_cast<std::int64_t>(tasks.size());
    if (pairs.empty()) {
      throw RunnerError(
          train_.teacher_store.empty()
              ? "sft: the template search produced no pair"
              : "sft: neither train.teacher_store nor the template search gave a pair");
    }
    if (main_) {
      // Saved whole or not at all: a run stopped during the SFT steps resumes with these pairs
      // (a new search would time differently and could pick other programs, and costs minutes
      // a matrix on large ones).
      saved["pairs"] = pairs_json(pairs);
      write_file_atomically(run_.sft_pairs_path(), dump_json(saved, 1) + "\n");
    }
    return pairs;
  }

  // train.teacher_store: the pairs of the tasks the store has a search of (stored_sft_pairs(): the
  // search's own choice, as measured on the store's GPU), appended to `pairs`; returns the tasks it
  // has none of, for the search.
  std::vector<datasets::Task> stored_pairs(const std::vector<datasets::Task>& tasks,
                                           const kernels::SftSelection& selection,
                                           std::vector<agents::SftPair>& pairs, Json& saved) const {
    const fs::path file = resolve_path(s_.root, train_.teacher_store);
    if (!fs::exists(file)) {
      throw RunnerError("train.teacher_store: " + file.string() +
                        ": no such file (a measurement store of `sparserl tune --measurements`)");
    }
    const kernels::MeasurementStore store(file, false);
    std::vector<datasets::Task> missing;
    std::set<std::string> devices;
    std::int64_t covered = 0, no_best = 0;
    for (const datasets::Task& task : tasks) {
      const auto stored = kernels::stored_sft_pairs(store, task, selection);
      if (!stored) {
        missing.push_back(task);
        continue;
      }
      ++covered;
      devices.insert(stored->device);
      if (stored->programs.empty()) ++no_best;
      for (const std::string& program : stored->programs) pairs.push_back({task, program});
    }
    std::string on;
    for (const std::string& d : devices)
      on += (on.empty() ? "" : ", ") + (d.empty() ? "no GPU" : d);
    s_.say("sft: " + std::to_string(pairs.size()) + " pairs from the measurement store " +
           file.string() + " for " + std::to_string(covered) + " of " +
           std::to_string(tasks.size()) + " training matrices (searched on " +
           (on.empty() ? std::string("-") : on) + ")" +
           (no_best > 0 ? "; " + std::to_string(no_best) + " of them without a correct program"
                        : std::string()) +
           (missing.empty()
                ? std::string()
                : "; the template search takes the other " + std::to_string(missing.size())));
    saved["teacher_store"] = file.string();
    saved["store_matrices"] = covered;
    saved["store_devices"] = on;
    return missing;
  }

  // The template search over `tasks` (in-process, on this run's evaluator): its pairs appended.
  void searched_pairs(const std::vector<datasets::Task>& tasks,
                      const kernels::SftSelection& selection, std::vector<agents::SftPair>& pairs,
                      Json& saved) const {
    kernels::EvaluatorBackend candidates(*s_.evaluator);
    kernels::SearchOptions options;
    options.budget = static_cast<int>(train_.search_budget);
    options.finalists = std::min(options.finalists, options.budget);
    options.refine = static_cast<int>(train_.search_refine);
    options.full = gpu_protocol(config_);
    kernels::TemplateSearch search(candidates, *s_.store, options);
    Progress progress("sft pairs", static_cast<std::int64_t>(tasks.size()), s_.notices->stream(),
                      s_.progress());
    const std::size_t before = pairs.size();
    const int parallel = parallel_searches(s_, train_.search_parallel);
    const std::vector<kernels::SearchResult> results = search.search_all(
        tasks, parallel,
        [&progress](const kernels::SearchResult& r) { progress.advance(1, r.task.uri); });
    for (const kernels::SearchResult& result : results) {
      if (s_.gpu) {
        for (std::size_t i : kernels::sft_candidates(result, selection)) {
          pairs.push_back({result.task, result.candidates[i].program});
        }
      } else if (const std::string program = result.best_program(); !program.empty()) {
        pairs.push_back({result.task, program});  // untimed: the cost model's favourite
      }
    }
    progress.finish();
    s_.say(
        "sft: " + std::to_string(pairs.size() - before) + " pairs from the template search over " +
        std::to_string(tasks.size()) + " training matrices (budget " +
        std::to_string(options.budget) + ", " + std::to_string(parallel) + " at once)" +
        (s_.gpu ? std::string(selection.per_task > 1
                                  ? ": the fastest correct program of each, and up to " +
                                        std::to_string(selection.per_task - 1) + " more within " +
                                        json_number(selection.within) + " of its speedup"
                                  : ": the fastest correct program of each")
                : std::string(": no GPU, so nothing was timed or checked - the target is "
                              "the cost model's favourite among the programs that compiled")));
    saved["budget"] = options.budget;
    saved["parallel"] = parallel;
    saved["timed"] = s_.gpu;
    saved["searched_matrices"] = static_cast<std::int64_t>(tasks.size());
  }

  void evaluate(const fs::path& policy) {
    s_.say("eval: " + policy.string());
    auto agent = agents::PolicyAgent::from_checkpoint(
        policy, config_.string("agent.device"), agents::PolicyAgent::CheckpointUse::inference);
    const EvalConfig eval = eval_config(config_);
    const PartTasks tasks = part_tasks(config_, s_.root, eval.part, eval.max_tasks);
    const Json extra = evaluate_policy(s_, *agent, tasks, policy_label(config_, plan_),
                                       total_steps(plan_), *metrics_, run_.results_path(),
                                       training_corpus(config_, s_.root), {}, stop_);
    RunInfo info = run_.info();
    for (const auto& [key, value] : as_object(extra)) info.extra[key] = value;
    run_.write_info(info);
  }

 private:
  Group group_;  // data parallel: the ranks (null: one process)
  bool main_;    // this process writes the run directory (one process, or rank 0)
  Session& s_;
  const Config& config_;
  const TrainConfig train_;
  const CheckpointConfig checkpoints_;
  const RunDirectory& run_;
  const StopSignals& stop_;
  std::vector<StagePlan> plan_;
  CheckpointStore store_;
  std::optional<MetricsWriter> metrics_;  // rank 0's (one process's) metrics.jsonl
  std::string note_;
};

#endif  // SPARSERL_HAVE_AGENTS

// Everything that can be checked before a run directory is made; `ranks` processes share each
// batch.
void check_training_config(const Config& config, const fs::path& root, int ranks) {
  const std::vector<StagePlan> plan = plan_stages(config);
#if !defined(SPARSERL_HAVE_AGENTS)
  (void)root;
  (void)ranks;
  throw RunnerError(
      "this build has no learned agents (LibTorch was not found), so `sparserl "
      "train` has nothing to train; `sparserl bench` with the template and random "
      "agents works without it");
#else
  env_config(config);
  (void)sandbox_limits(config);
  check_training_data(config, root);
  const TrainConfig train = train_config(config);
  const EvalConfig eval = eval_config(config);
  bool has_policy = !train.init_checkpoint.empty();
  for (const StagePlan& stage : plan) {
    if (learning(stage.name)) {
      agent_config(config, stage.name);
      has_policy = true;
      try {
        if (stage.name == "pretrain") {
          agents::require_divisible("train.pretrain_batch_size", train.pretrain_batch_size, ranks);
        }
        if (stage.name == "sft") {
          agents::require_divisible("train.sft_batch_size", train.sft_batch_size, ranks);
        }
        if (stage.name == "rl") {
          agents::require_divisible("train.tasks_per_update", train.tasks_per_update, ranks);
        }
      } catch (const std::invalid_argument& e) {
        throw RunnerError(e.what());
      }
    }
    if (stage.name == "eval" && !has_policy) {
      throw RunnerError(
          "train.stages: eval needs a policy: a learning stage before it or "
          "train.init_checkpoint");
    }
    if (stage.name == "sft" || stage.name == "rl") {
      config_tasks(config, root, config.string("data.part"), config.integer("data.max_tasks"));
    }
    if (stage.name == "eval") {
      if (eval.part == "test") {
        throw RunnerError(
            "eval.part = \"test\": the eval stage of `sparserl train` never reads the test part; "
            "evaluate the trained policy with `sparserl eval CONFIG --checkpoint DIR --part test`");
      }
      config_tasks(config, root, eval.part, eval.max_tasks);
    }
  }
  const std::pair<const char*, std::string> sources[] = {
      {"train.corpus", train.corpus},
      {"train.sft_pairs", train.sft_pairs},
      {"train.init_checkpoint", train.init_checkpoint}};
  for (const auto& [key, value] : sources) {
    if (value.empty() || value == kDesignSpace) continue;
    const fs::path path = resolve_path(root, value);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      throw RunnerError(std::string(key) + ": " + path.string() +
                        " does not exist (relative "
                        "paths start at the root " +
                        root.string() + ")");
    }
  }
#endif
}

#if defined(SPARSERL_HAVE_AGENTS)
// The ranks of a data-parallel run when the environment describes several (WORLD_SIZE > 1), each
// rank's device and backend chosen as agents/distributed.hpp says; one process: none.
struct Ranks {
  std::optional<agents::World> world;
  Group group;
  [[nodiscard]] int size() const { return world ? world->size : 1; }
  [[nodiscard]] bool main() const { return is_main(group); }
};

Ranks world_of_environment() {
  Ranks ranks;
  try {
    ranks.world = agents::world_from_environment();
  } catch (const std::invalid_argument& e) {
    throw RunnerError(std::string("the world of this rank: ") + e.what());
  }
  if (ranks.world && !ranks.world->distributed()) ranks.world.reset();
  return ranks;
}

void join_ranks(Ranks& ranks, const Config& config, const RunnerOptions& options) {
  if (!ranks.world) return;
  try {
    const std::string device =
        agents::rank_device(config.string("agent.device"), *ranks.world, "agent.device");
    ranks.group = agents::ProcessGroup::join(
        *ranks.world, agents::choose_backend(options.backend, device, "--backend"));
  } catch (const std::invalid_argument& e) {
    throw RunnerError(e.what());
  }
}
#else
struct Ranks {
  [[nodiscard]] int size() const { return 1; }
  [[nodiscard]] bool main() const { return true; }
};
Ranks world_of_environment() { return {}; }
void join_ranks(Ranks&, const Config&, const RunnerOptions&) {}
#endif

RunOutcome train_in(const RunDirectory& run, Session& session, std::ostream& log,
                    const Ranks& ranks) {
  const auto body = [&](const StopSignals& stop) {
#if defined(SPARSERL_HAVE_AGENTS)
    Trainer trainer(session, run, stop, ranks.group);
    trainer.run();
#else
    (void)stop;
#endif
  };
  if (!ranks.main()) {
    // Rank 0 records the run's status and writes the report; the others only train.
    const StopSignals stop;
    body(stop);
    return {run.root(), stop.requested() ? RunStatus::interrupted : RunStatus::completed, {}, {}};
  }
  RunStatus status = RunStatus::running;
  try {
    status = run.run(body);
  } catch (const std::exception&) {
    finish_run(run, session.config, RunStatus::failed, log);
    throw;
  }
  return finish_run(run, session.config, status, log);
}

// Each rank's evaluator notices: evaluator.log for rank 0, evaluator.rank<R>.log for the others.
void record_evaluator(const Session& session, const RunDirectory& run, const Ranks& ranks) {
#if defined(SPARSERL_HAVE_AGENTS)
  if (!ranks.main()) {
    session.notices->record_to(run.root() /
                               ("evaluator.rank" + std::to_string(ranks.world->rank) + ".log"));
    return;
  }
#else
  (void)ranks;
#endif
  session.record_to(run.root());
}

// run.json's "split" of a training run: the part its learning stages read (data.part).
std::optional<SplitRecord> training_split(const Config& config, const fs::path& root,
                                          std::ostream& log) {
  if (config.string("data.split").empty() && config.string_list("data.uris").empty()) {
    SplitRecord none;  // pretraining alone needs no matrices
    none.part = config.string("data.part");
    none.selection = split_selection(config).describe();
    return none;
  }
  const PartTasks tasks =
      part_tasks(config, root, config.string("data.part"), config.integer("data.max_tasks"));
  if (!tasks.note.empty()) log << tasks.note << "\n";
  return split_record(tasks);
}

}  // namespace

RunOutcome run_training(Config config, const RunnerOptions& options) {
  std::ostream& log = log_stream(options);
  const fs::path root = resolve_root(config, options.root);
  pin_paths(config, root, options);
  Ranks ranks = world_of_environment();
  check_training_config(config, root, ranks.size());
  join_ranks(ranks, config, options);
  std::optional<SplitRecord> split = training_split(config, root, log);
  auto session = Session::open(config, root, log);
  std::optional<RunDirectory> run;
  if (ranks.main()) {
    RunStart start = run_start(*session, options);
    start.split = std::move(split);
    run.emplace(RunDirectory::create(session->config, start));
    // What the policy is trained on, for the novelty of its answers in later benches.
    RunInfo info = run->info();
    info.extra["corpus"] = training_corpus(session->config, root).to_json();
    run->write_info(info);
  }
#if defined(SPARSERL_HAVE_AGENTS)
  if (ranks.group) {
    // Rank 0 made the run directory; the others learn where.
    const std::string dir = ranks.group->broadcast(run ? run->root().string() : "");
    if (!run) run.emplace(RunDirectory::open(dir));
  }
#endif
  record_evaluator(*session, *run, ranks);
  session->say("run directory: " + run->root().string());
  return train_in(*run, *session, log, ranks);
}

RunOutcome resume_training(const fs::path& run_dir, const RunnerOptions& options) {
  std::ostream& log = log_stream(options);
  const RunDirectory run = RunDirectory::open(run_dir);
  const RunInfo info = run.info();
  if (info.status == RunStatus::completed) {
    throw RunnerError(run_dir.string() + ": the run completed; there is nothing to resume");
  }
  Config config = run.config();
  const fs::path root = resolve_root(config, options.root);
  Ranks ranks = world_of_environment();
  check_training_config(config, root, ranks.size());
  join_ranks(ranks, config, options);
  auto session = Session::open(config, root, log);
  record_evaluator(*session, run, ranks);
  if (ranks.main()) run.mark_resumed();
  session->say("resuming " + run.root().string() + " (it was " +
               std::string(to_string(info.status)) + ")");
  return train_in(run, *session, log, ranks);
}

RunOutcome run_checkpoint_evaluation(Config config, const fs::path& checkpoint,
                                     const RunnerOptions& options) {
#if !defined(SPARSERL_HAVE_AGENTS)
  (void)config;
  (void)checkpoint;
  (void)options;
  throw RunnerError(
      "this build has no learned agents (LibTorch was not found): no policy to "
      "evaluate");
#else
  const fs::path policy = fs::absolute(checkpoint).lexically_normal();
  PartCommand started =
      start_part_command(config, options, "eval", "sparserl eval", [&policy](const fs::path&) {
        if (!fs::exists(policy / "checkpoint.txt")) {
          throw RunnerError(policy.string() + ": not a policy checkpoint (no checkpoint.txt)");
        }
      });
  std::ostream& log = started.log;
  const fs::path& root = started.root;
  PartTasks& part = started.part;
  auto session = Session::open(config, root, log);
  RunStart start = run_start(*session, options);
  start.split = split_record(part);
  start.seeds.clear();
  const RunDirectory run = RunDirectory::create(session->config, start);
  session->record_to(run.root());
  session->say("run directory: " + run.root().string());
  RunStatus status = RunStatus::running;
  try {
    status = run.run([&](const StopSignals& stop) {
      auto agent = agents::PolicyAgent::from_checkpoint(
          policy, config.string("agent.device"), agents::PolicyAgent::CheckpointUse::inference);
      MetricsWriter metrics(run.metrics_path());
      const std::optional<CorpusSpec> recorded = recorded_corpus(policy);
      const Json extra = evaluate_policy(
          *session, *agent, part, agent->name(), agent->counters().updates, metrics,
          run.results_path(), recorded ? *recorded : design_space_corpus(session->config),
          recorded ? std::string()
                   : "the checkpoint's run recorded no corpus, so the design space stands for it",
          stop);
      RunInfo info = run.info();
      for (const auto& [key, value] : as_object(extra)) info.extra[key] = value;
      info.extra["policy"] = policy.string();
      run.write_info(info);
    });
  } catch (const std::exception&) {
    finish_run(run, session->config, RunStatus::failed, log);
    throw;
  }
  return finish_run(run, session->config, status, log);
#endif
}

}  // namespace sparserl::experiments
