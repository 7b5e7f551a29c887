// The RL stage and the evaluation of a policy against the environment, and the checkpoint helpers
// every stage uses. No LibTorch here: the loop drives PolicyAgent's public calls (generate, update)
// and the env's EpisodePipeline, so it reads as the algorithm's outer loop: start a batch of
// episodes (tasks in, prompts out), generate G completions each, finish them (the env decodes,
// evaluates and rewards them), update. With several ranks each starts, generates and finishes its
// share of the update's tasks; the update averages over all of them, rank 0 alone writes
// checkpoints and receives every rank's episodes (docs/distributed.md).
#include "sparserl/agents/training.hpp"

#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <optional>
#include <stdexcept>

#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/device_memory.hpp"
#include "sparserl/agents/distributed.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/knobs.hpp"
#include "sparserl/env/episode_pipeline.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/seeding.hpp"
#include "sparserl/reward/timing_lane.hpp"

namespace sparserl::agents {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check_env_matches(const env::SparseCudaEnv& env, const AgentConfig& agent,
                       const std::string& stage) {
  const env::EnvConfig& e = env.config();
  auto mismatch = [&](const std::string& what, const std::string& env_value,
                      const std::string& agent_value) {
    throw std::invalid_argument(stage + ": the env's " + what + " = " + env_value +
                                " but the agent's is " + agent_value);
  };
  if (e.mask != agent.mask) {
    mismatch("mask", std::string(env::to_string(e.mask)), std::string(env::to_string(agent.mask)));
  }
  if (e.max_tokens != agent.policy.max_tokens) {
    mismatch("max_tokens", std::to_string(e.max_tokens), std::to_string(agent.policy.max_tokens));
  }
  if (e.observation.nnz_samples != agent.policy.nnz_samples) {
    mismatch("observation.nnz_samples", std::to_string(e.observation.nnz_samples),
             std::to_string(agent.policy.nnz_samples));
  }
  if (e.observation.embedding_dim != agent.policy.embedding_dim) {
    mismatch("observation.embedding_dim", std::to_string(e.observation.embedding_dim),
             std::to_string(agent.policy.embedding_dim));
  }
}

// The episodes' prompts, for generate().
std::vector<std::shared_ptr<const env::MatrixObservation>> prompt_matrices(
    std::span<const env::Prompt> prompts) {
  std::vector<std::shared_ptr<const env::MatrixObservation>> matrices;
  matrices.reserve(prompts.size());
  for (const env::Prompt& p : prompts) matrices.push_back(p.matrix);
  return matrices;
}

double speedup_of(const env::Episode& e) {
  return e.eval && e.eval->correct && e.eval->timed ? e.eval->timing.speedup : 0.0;
}

bool distributed(const std::shared_ptr<ProcessGroup>& group) { return group && group->size() > 1; }

// Several ranks: on rank 0 the other ranks' episodes of this update, in rank order (ranks hold
// consecutive tasks, so rank 0's own then these are the order of one process); none elsewhere.
std::vector<env::Episode> other_ranks_episodes(ProcessGroup& group,
                                               std::span<const env::Episode> mine) {
  const std::vector<std::string> parts = group.gather(encode_episodes(mine));
  std::vector<env::Episode> theirs;
  for (std::size_t r = 1; r < parts.size(); ++r) {
    for (env::Episode& e : decode_episodes(parts[r])) theirs.push_back(std::move(e));
  }
  return theirs;
}

// Several ranks: the wall times of an update are the slowest rank's (the update waits for it), the
// sampling rate is every rank's tokens over that time.
void reduce_timings(ProcessGroup& group, env::Statistics& stats, double generated,
                    double generation_seconds) {
  std::vector<double> seconds;
  for (const auto& [key, value] : stats) {
    if (key.rfind("perf/", 0) == 0 && key.size() > 8 && key.ends_with("_seconds")) {
      seconds.push_back(value);
    }
  }
  seconds.push_back(generation_seconds);
  seconds = group.max(std::move(seconds));
  const double tokens = group.sum({generated})[0];
  std::size_t i = 0;
  for (auto& [key, value] : stats) {
    if (key.rfind("perf/", 0) == 0 && key.size() > 8 && key.ends_with("_seconds")) {
      value = seconds[i++];
    }
    if (key == "perf/tokens_per_second") value = seconds.back() > 0 ? tokens / seconds.back() : 0;
  }
}

// The policy's device memory since the last record (device_memory.hpp), where it is a CUDA device:
// "perf/cuda_peak_allocated_mib" (the tensors) and "perf/cuda_peak_reserved_mib" (the allocator's
// hold on the device).
void add_device_memory(const PolicyAgent& agent, env::Statistics& stats) {
  if (const auto peak = take_device_memory_peak(agent.device())) {
    stats.emplace_back("perf/cuda_peak_allocated_mib", peak->allocated_mib);
    stats.emplace_back("perf/cuda_peak_reserved_mib", peak->reserved_mib);
  }
}

// The update's evaluations that ended without a verdict on the program: "env/timeouts" (a stage
// overran its deadline - a hung kernel, the worker killed and replaced) and "env/worker_crashes"
// (the worker process died). Each costs the evaluator a replacement worker and its caches, so an
// update that took minutes names its cause here (docs/study.md's slow updates).
void add_evaluation_failures(const std::vector<env::Episode>& episodes, env::Statistics& stats) {
  int timeouts = 0, crashes = 0;
  for (const env::Episode& e : episodes) {
    if (!e.eval) continue;
    timeouts += e.eval->error == reward::ErrorKind::timeout ? 1 : 0;
    crashes += e.eval->error == reward::ErrorKind::crash ? 1 : 0;
  }
  stats.emplace_back("env/timeouts", timeouts);
  stats.emplace_back("env/worker_crashes", crashes);
}

}  // namespace

double find_statistic(const env::Statistics& statistics, std::string_view name) {
  for (const auto& [key, value] : statistics) {
    if (key == name) return value;
  }
  throw std::out_of_range("no statistic named '" + std::string(name) + "'");
}

std::filesystem::path latest_checkpoint(const std::filesystem::path& output_dir) {
  return output_dir / "latest";
}
std::filesystem::path final_checkpoint(const std::filesystem::path& output_dir) {
  return output_dir / "final";
}

void save_checkpoint(const PolicyAgent& agent, const std::filesystem::path& output_dir,
                     const std::string& name) {
  const auto target = output_dir / name;
  const auto temporary = output_dir / (name + ".tmp");
  datasets::remove_tree(temporary);
  agent.save(temporary);
  datasets::remove_tree(target);
  std::filesystem::rename(temporary, target);
}

bool end_of_step(const PolicyAgent& agent, const std::filesystem::path& output_dir,
                 const StageHooks& hooks, std::int64_t done, std::int64_t total,
                 int checkpoint_every, const env::Statistics& statistics) {
  bool stop = done < total && hooks.stop_requested && hooks.stop_requested();
  // Every rank stops at the same step: the one after which any rank saw the request.
  if (done < total && distributed(agent.process_group())) stop = agent.process_group()->any(stop);
  const bool periodic = checkpoint_every > 0 && done % checkpoint_every == 0 && done < total;
  if ((stop || periodic) && agent.main_rank()) {
    save_checkpoint(agent, output_dir, "latest");
    if (hooks.on_checkpoint) hooks.on_checkpoint(latest_checkpoint(output_dir), done, statistics);
  }
  return stop;
}

StageResult finish_stage(const PolicyAgent& agent, const std::filesystem::path& output_dir,
                         const StageHooks& hooks, StageResult result) {
  result.steps = agent.counters().updates;
  if (result.stopped) {
    result.checkpoint = latest_checkpoint(output_dir);
    return result;
  }
  result.checkpoint = final_checkpoint(output_dir);
  if (!agent.main_rank()) return result;  // rank 0 writes for every rank
  save_checkpoint(agent, output_dir, "latest");
  save_checkpoint(agent, output_dir, "final");
  if (hooks.on_checkpoint) {
    hooks.on_checkpoint(latest_checkpoint(output_dir), result.steps, result.last);
  }
  return result;
}

std::unique_ptr<PolicyAgent> open_stage_agent(
    const std::filesystem::path& output_dir, const AgentConfig& config,
    std::shared_ptr<const env::Vocabulary> vocabulary,
    const std::optional<std::filesystem::path>& init_checkpoint, StageResult& result,
    const std::shared_ptr<ProcessGroup>& group) {
  // Several ranks: rank 0 has written what the stage starts from before any rank reads it.
  if (distributed(group)) group->barrier();
  std::unique_ptr<PolicyAgent> agent;
  if (std::filesystem::exists(latest_checkpoint(output_dir) / "checkpoint.txt")) {
    result.resumed = true;
    agent = PolicyAgent::from_checkpoint(latest_checkpoint(output_dir), config.device);
  } else {
    agent = std::make_unique<PolicyAgent>(config, std::move(vocabulary));
    if (init_checkpoint) agent->load_weights(*init_checkpoint);
  }
  agent->join(group);
  return agent;
}

StageResult run_stage_steps(PolicyAgent& agent, const StageLoop& loop, StageResult result,
                            const StageStep& step, const StageLogAddition& on_log,
                            const StatisticsCallback& on_statistics) {
  for (std::int64_t index = agent.counters().updates; index < loop.steps; ++index) {
    env::Statistics stats = step(index);
    const std::int64_t done = index + 1;
    if (on_statistics && (done % std::max(1, loop.log_every) == 0 || done == loop.steps)) {
      if (on_log) on_log(done, stats);
      on_statistics(loop.stage, done, stats);
    }
    result.last = std::move(stats);
    if (end_of_step(agent, loop.output_dir, loop.hooks, done, loop.steps, loop.checkpoint_every,
                    result.last)) {
      result.stopped = true;
      break;
    }
  }
  return finish_stage(agent, loop.output_dir, loop.hooks, std::move(result));
}

StageResult run_supervised_steps(PolicyAgent& agent, const StageLoop& loop, int batch_size,
                                 std::size_t examples, StageResult result, const StageStep& step,
                                 const std::function<void(env::Statistics&)>& on_log,
                                 const StatisticsCallback& on_statistics) {
  const auto start = std::chrono::steady_clock::now();
  std::int64_t tokens_since = 0;
  const auto counted_step = [&](std::int64_t index) {
    env::Statistics stats = step(index);
    tokens_since += static_cast<std::int64_t>(find_statistic(stats, "tokens"));
    return stats;
  };
  const auto add_to_log = [&](std::int64_t done, env::Statistics& stats) {
    const double seconds = seconds_since(start);
    stats.emplace_back("epoch",
                       static_cast<double>(done * batch_size) / static_cast<double>(examples));
    if (on_log) on_log(stats);
    stats.emplace_back("perf/tokens_per_second",
                       seconds > 0 ? static_cast<double>(tokens_since) / seconds : 0.0);
    add_device_memory(agent, stats);
  };
  return run_stage_steps(agent, loop, std::move(result), counted_step, add_to_log, on_statistics);
}

std::optional<std::vector<env::TokenId>> tokens_within(const env::Tokenizer& tokenizer,
                                                       const std::string& program, int max_tokens) {
  try {
    env::EncodedProgram encoded = tokenizer.encode(program);
    if (static_cast<int>(encoded.tokens.size()) <= max_tokens) return std::move(encoded.tokens);
  } catch (const env::TokenizeError&) {
  }
  return std::nullopt;
}

const env::EpisodePipeline& agent_pipeline(const PolicyAgent& agent, const env::SparseCudaEnv& env,
                                           std::unique_ptr<env::EpisodePipeline>& own) {
  if (agent.tokens().kind() == "closed") return env.pipeline();
  own = env.pipeline().with_tokenizer(agent.tokens().program_tokenizer());
  return *own;
}

ObservationFn store_observer(std::shared_ptr<datasets::MatrixStore> store,
                             env::ObservationConfig config) {
  // The env's own observer: SFT's examples are sampled as RL's episodes are.
  auto observer = std::make_shared<const env::TaskObserver>(std::move(store), config);
  return [observer](const datasets::Task& task, std::uint64_t seed) {
    return observer->observe(task, seed).observation;
  };
}

namespace {

// The timing lane of the GPU `agent` samples on, when the pipeline's evaluator times candidates on
// that GPU (its GPU workers, this process's or another's on the host); null otherwise.
std::shared_ptr<reward::TimingLaneLock> sampling_lane(const PolicyAgent& agent,
                                                      const env::EpisodePipeline& pipeline) {
  const std::string device = agent.device();  // "cpu", "cuda:0"
  if (!device.starts_with("cuda")) return nullptr;
  const auto backend = std::dynamic_pointer_cast<env::EvaluatorBackend>(pipeline.backend());
  if (!backend || !backend->gpu_available()) return nullptr;
  const reward::GpuInfo info = backend->evaluator().gpu_info();
  const std::size_t index = device.size() > 5 ? std::stoul(device.substr(5)) : 0;
  if (index >= info.devices.size() || info.devices[index].pci_bus_id.empty()) return nullptr;
  return std::make_shared<reward::TimingLaneLock>(
      reward::timing_lane_path(info.devices[index].pci_bus_id));
}

// train.overlap_generation samples with the policy of one update before: refused for an
// algorithm that does not correct for that, naming those that do.
void check_overlap(const std::string& algorithm) {
  if (const Algorithm* a = AlgorithmRegistry::find(algorithm);
      a != nullptr && a->corrects_stale_samples()) {
    return;
  }
  std::vector<std::string> correcting;
  for (const std::string& name : AlgorithmRegistry::rollout_learners()) {
    if (AlgorithmRegistry::find(name)->corrects_stale_samples()) correcting.push_back(name);
  }
  throw std::invalid_argument(
      "rl: train.overlap_generation samples each batch with the policy of one update before, "
      "which agent.algorithm = " +
      algorithm + " does not correct for: expected one of " +
      datasets::knob_text::one_of(correcting) + ", or overlap_generation = false");
}

// One update's batch: its prompts, and its completions once sampled (by the policy `policy`).
struct Batch {
  std::vector<env::Prompt> prompts;
  std::vector<Completion> completions;
  std::string policy;
  double start_seconds = 0, generation_seconds = 0, generated = 0;
  GenerationProfile profile;  // where generate()'s time went
};

// What run_rl refuses before it starts: its settings, and episodes asked of some ranks only.
void check_rl(const RlConfig& config, const EpisodeCallback& on_episode, int ranks) {
  if (config.output_dir.empty()) throw std::invalid_argument("rl: output_dir is required");
  if (const Algorithm* algorithm = AlgorithmRegistry::find(config.agent.algorithm);
      algorithm != nullptr && !algorithm->learns_from_rollouts()) {
    throw std::invalid_argument("rl: agent.algorithm = " + config.agent.algorithm +
                                " learns from examples, not rollouts: expected one of " +
                                datasets::knob_text::one_of(AlgorithmRegistry::rollout_learners()));
  }
  if (config.updates < 1 || config.tasks_per_update < 1 || config.samples_per_task < 1) {
    throw std::invalid_argument(
        "rl: updates, tasks_per_update and samples_per_task must be positive");
  }
  if (config.overlap_generation) check_overlap(config.agent.algorithm);
  require_divisible("rl: tasks_per_update", config.tasks_per_update, ranks);
  if (ranks > 1 &&
      config.group->any(static_cast<bool>(on_episode)) != static_cast<bool>(on_episode)) {
    throw std::invalid_argument("rl: on_episode must be given on every rank or on none");
  }
}

}  // namespace

StageResult run_rl(const RlConfig& config, env::SparseCudaEnv& env,
                   const StatisticsCallback& on_statistics, const EpisodeCallback& on_episode) {
  const int ranks = distributed(config.group) ? config.group->size() : 1;
  check_rl(config, on_episode, ranks);
  StageResult result;
  std::unique_ptr<PolicyAgent> agent =
      open_stage_agent(config.output_dir, config.agent, env.tokenizer().vocabulary_ptr(),
                       config.init_checkpoint, result, config.group);
  if (!result.resumed)
    agent->set_reference_to_current();  // the KL anchor: the policy RL starts from
  check_env_matches(env, agent->config(), "rl");
  env.tokenizer().vocabulary().require_digest(agent->vocabulary().digest(), "the env's tokenizer");

  // The task stream is a seeded copy of the env's source, replayed up to where a resumed run was.
  env::TaskSource tasks = env.task_source();
  tasks.seed(config.seed);
  const std::int64_t start_update = agent->counters().updates;
  for (std::int64_t i = 0; i < start_update * config.tasks_per_update; ++i) (void)tasks.next();

  std::unique_ptr<env::EpisodePipeline> own_pipeline;
  const env::EpisodePipeline& pipeline = agent_pipeline(*agent, env, own_pipeline);
  // This rank's tasks of each update (all of them in one process) and its rows of the batch.
  const std::size_t tasks_per_update = static_cast<std::size_t>(config.tasks_per_update);
  const Shard mine = shard_of(tasks_per_update, ranks > 1 ? config.group->rank() : 0, ranks);
  const RowWindow rows =
      ranks > 1 ? RowWindow{static_cast<std::int64_t>(mine.begin) * config.samples_per_task,
                            config.tasks_per_update * config.samples_per_task}
                : RowWindow{};
  // Every rank draws every task of the update (the stream stays the same on all) and starts its
  // own; episode indices and seeds are those of one process.
  const auto start_batch = [&](std::int64_t update) {
    const auto started = std::chrono::steady_clock::now();
    Batch batch;
    std::vector<env::EpisodeStart> starts;
    for (std::size_t i = 0; i < tasks_per_update; ++i) {
      datasets::Task task = tasks.next();
      if (i < mine.begin || i >= mine.end) continue;
      env::EpisodeStart& s = starts.emplace_back();
      s.task = std::move(task);
      s.env_id = env.env_id();
      s.env_seed = config.seed;
      s.episode_index = static_cast<std::uint64_t>(update * config.tasks_per_update) + i;
      s.episode_seed = env::episode_seed(config.seed, s.episode_index);
    }
    batch.prompts = pipeline.start(starts);
    batch.start_seconds = seconds_since(started);
    return batch;
  };
  const auto sample = [&](Batch& batch) {
    const std::int64_t tokens_before = agent->counters().generated_tokens;
    const auto generation_start = std::chrono::steady_clock::now();
    batch.policy = agent->policy_id();
    batch.completions = agent->generate(prompt_matrices(batch.prompts), config.samples_per_task,
                                        agent->config().sampling, rows);
    batch.generation_seconds = seconds_since(generation_start);
    batch.generated = static_cast<double>(agent->counters().generated_tokens - tokens_before);
    batch.profile = agent->last_generation();
  };
  // With overlap_generation, the batch sampled during the last update's evaluation: this update's,
  // from the policy before the last update. A run's first batch (a resumed run's too) is sampled in
  // its step.
  std::optional<Batch> ahead;
  agent->set_old_log_probs_recorded(config.overlap_generation);
  // Sampling then runs while the evaluator may time candidates on the same GPU: it takes the
  // GPU's timing lane while its kernels run, so timed kernels never share the GPU with it.
  if (config.overlap_generation) agent->set_timing_lane(sampling_lane(*agent, pipeline));
  const auto update_step = [&](std::int64_t update) {
    const auto step_start = std::chrono::steady_clock::now();
    Batch batch;
    if (ahead) {
      batch = std::move(*ahead);
      ahead.reset();
    } else {
      batch = start_batch(update);
      sample(batch);
    }
    const double start_seconds = batch.start_seconds;
    double generation_seconds = batch.generation_seconds;
    double generated = batch.generated;
    GenerationProfile profile = batch.profile;

    // Evaluation (the pipeline: decode, evaluator, reward); with overlap_generation in the
    // background while the next update's batch is started (before: the pipeline is not asked two
    // things at once) and sampled.
    const auto evaluation_start = std::chrono::steady_clock::now();
    std::vector<env::Episode> episodes;
    double evaluation_wait_seconds = 0;
    if (config.overlap_generation && update + 1 < config.updates) {
      Batch next = start_batch(update + 1);
      std::future<std::vector<env::Episode>> evaluated =
          std::async(std::launch::async, [&pipeline, &batch] {
            return pipeline.run(batch.prompts, std::move(batch.completions));
          });
      sample(next);  // on an exception the future's destructor waits for the evaluation
      generation_seconds = next.generation_seconds;
      generated = next.generated;
      profile = next.profile;
      const auto waited = std::chrono::steady_clock::now();
      episodes = evaluated.get();
      evaluation_wait_seconds = seconds_since(waited);
      ahead = std::move(next);
    } else {
      episodes = pipeline.run(batch.prompts, std::move(batch.completions));
      evaluation_wait_seconds = seconds_since(evaluation_start);
    }
    const double evaluation_seconds = seconds_since(evaluation_start);
    for (env::Episode& e : episodes) {
      e.policy_id = batch.policy;
      if (on_episode && agent->main_rank()) on_episode(e);
    }
    if (on_episode && ranks > 1) {
      for (const env::Episode& e : other_ranks_episodes(*config.group, episodes)) on_episode(e);
    }

    env::Statistics stats = agent->update(episodes);  // carries perf/update_seconds (learning)
    // The wall time of each phase of the update: start (tasks, observations, prompts), generation
    // (of the next update's batch when overlapped), evaluation (from its start to its episodes;
    // overlapped, it runs beside the generation and the wait is what the generation left of it),
    // the agent's update, and the whole step.
    stats.emplace_back("perf/start_seconds", start_seconds);
    stats.emplace_back("perf/generation_seconds", generation_seconds);
    stats.emplace_back("perf/evaluation_seconds", evaluation_seconds);
    stats.emplace_back("perf/evaluation_wait_seconds", evaluation_wait_seconds);
    stats.emplace_back("perf/tokens_per_second",
                       generation_seconds > 0 ? generated / generation_seconds : 0.0);
    // Inside the generation: the action masks on the CPU, the waits for the device's draws, and
    // the decode steps taken (the longest row's length).
    stats.emplace_back("perf/generation_mask_seconds", profile.mask_seconds);
    stats.emplace_back("perf/generation_readback_seconds", profile.readback_seconds);
    stats.emplace_back("perf/generation_steps", static_cast<double>(profile.steps));
    // Decode steps from CUDA graphs: graphs captured (0: every kernel issued) and their capture.
    stats.emplace_back("perf/generation_graphs", static_cast<double>(profile.graphs));
    stats.emplace_back("perf/generation_capture_seconds", profile.capture_seconds);
    stats.emplace_back("perf/step_seconds", seconds_since(step_start));
    add_evaluation_failures(episodes, stats);
    add_device_memory(*agent, stats);
    if (ranks > 1) reduce_timings(*config.group, stats, generated, generation_seconds);
    return stats;
  };
  return run_stage_steps(*agent, stage_loop("rl", config.updates, config), std::move(result),
                         update_step, nullptr, on_statistics);
}

EvaluationSummary run_evaluation(PolicyAgent& agent, env::SparseCudaEnv& env,
                                 const std::vector<datasets::Task>& tasks,
                                 const EvaluationConfig& config,
                                 const EpisodeCallback& on_episode) {
  check_env_matches(env, agent.config(), "evaluation");
  if (!config.greedy && config.samples < 1)
    throw std::invalid_argument("evaluation: neither greedy nor samples");
  EvaluationSummary summary;
  SamplingConfig greedy;
  greedy.greedy = true;
  const auto start = std::chrono::steady_clock::now();
  double generation_seconds = 0;
  std::int64_t generated = 0;
  const auto per_batch = static_cast<std::size_t>(std::max(1, config.tasks_per_batch));
  // Episode indices: per task, the greedy completion first, then the samples.
  const std::uint64_t per_task =
      (config.greedy ? 1 : 0) + static_cast<std::uint64_t>(std::max(0, config.samples));
  const std::string policy = on_episode ? agent.policy_id() : std::string();
  std::unique_ptr<env::EpisodePipeline> own_pipeline;
  const env::EpisodePipeline& pipeline = agent_pipeline(agent, env, own_pipeline);
  for (std::size_t first = 0; first < tasks.size(); first += per_batch) {
    const std::size_t last = std::min(tasks.size(), first + per_batch);
    std::vector<env::EpisodeStart> starts;
    for (std::size_t i = first; i < last; ++i) {
      env::EpisodeStart& s = starts.emplace_back();
      s.task = tasks[i];
      s.env_id = env.env_id();
      s.env_seed = config.seed;
      s.episode_index = i;
      s.episode_seed = env::episode_seed(config.seed, i);
    }
    const std::vector<env::Prompt> prompts = pipeline.start(starts);
    const auto matrices = prompt_matrices(prompts);
    const std::int64_t tokens_before = agent.counters().generated_tokens;
    const auto generation_start = std::chrono::steady_clock::now();
    std::vector<Completion> greedy_out, sampled_out;
    if (config.greedy) greedy_out = agent.generate(matrices, 1, greedy);
    if (config.samples > 0) sampled_out = agent.generate(matrices, config.samples, config.sampling);
    generation_seconds += seconds_since(generation_start);
    generated += agent.counters().generated_tokens - tokens_before;

    std::vector<env::Episode> greedy_episodes = pipeline.run(prompts, std::move(greedy_out));
    std::vector<env::Episode> sampled_episodes = pipeline.run(prompts, std::move(sampled_out));
    const auto k = static_cast<std::size_t>(std::max(0, config.samples));
    auto record = [&](env::Episode& e, std::size_t i, std::uint64_t within) {
      e.episode_index = (first + i) * per_task + within;
      e.policy_id = policy + (within == 0 && config.greedy ? ":greedy" : ":sampled");
      if (on_episode) on_episode(e);
    };
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      TaskEvaluation t;
      t.task = prompts[i].start.task;
      if (config.greedy) {
        env::Episode& e = greedy_episodes[i];
        record(e, i, 0);
        t.greedy_compiled = e.eval && e.eval->compiled;
        t.greedy_correct = e.eval && e.eval->correct;
        t.greedy_speedup = speedup_of(e);
        t.best_speedup = t.greedy_speedup;
      }
      for (std::size_t j = 0; j < k; ++j) {
        env::Episode& e = sampled_episodes[i * k + j];
        record(e, i, (config.greedy ? 1 : 0) + j);
        ++t.sampled;
        t.sampled_compiled += e.eval && e.eval->compiled ? 1 : 0;
        t.sampled_correct += e.eval && e.eval->correct ? 1 : 0;
        t.best_speedup = std::max(t.best_speedup, speedup_of(e));
      }
      summary.tasks.push_back(std::move(t));
    }
  }

  const double n = static_cast<double>(std::max<std::size_t>(summary.tasks.size(), 1));
  double greedy_compiled = 0, greedy_correct = 0, greedy_faster = 0, greedy_log = 0,
         greedy_log_all = 0;
  double pass_compiled = 0, pass_correct = 0, sample_compiled = 0, sample_correct = 0, samples = 0;
  double best_log = 0, best_log_all = 0;
  int greedy_timed = 0, best_timed = 0;
  for (const TaskEvaluation& t : summary.tasks) {
    greedy_compiled += t.greedy_compiled;
    greedy_correct += t.greedy_correct;
    greedy_faster += t.greedy_speedup > 1.0;
    if (t.greedy_speedup > 0) {
      greedy_log += std::log(t.greedy_speedup);
      ++greedy_timed;
    }
    // "_all": a task without a correct kernel falls back to cuSPARSE (speedup 1).
    greedy_log_all += t.greedy_speedup > 0 ? std::log(t.greedy_speedup) : 0.0;
    pass_compiled += t.sampled_compiled > 0;
    pass_correct += t.sampled_correct > 0;
    sample_compiled += t.sampled_compiled;
    sample_correct += t.sampled_correct;
    samples += t.sampled;
    if (t.best_speedup > 0) {
      best_log += std::log(t.best_speedup);
      ++best_timed;
    }
    best_log_all += t.best_speedup > 0 ? std::log(t.best_speedup) : 0.0;
  }
  env::Statistics& s = summary.statistics;
  s.emplace_back("eval/tasks", static_cast<double>(summary.tasks.size()));
  if (config.greedy) {
    s.emplace_back("eval/greedy_compile_rate", greedy_compiled / n);
    s.emplace_back("eval/greedy_correct_rate", greedy_correct / n);
    s.emplace_back("eval/greedy_faster_rate", greedy_faster / n);
    s.emplace_back("eval/greedy_speedup_geomean",
                   greedy_timed > 0 ? std::exp(greedy_log / greedy_timed) : 0.0);
    s.emplace_back("eval/greedy_speedup_geomean_all", std::exp(greedy_log_all / n));
  }
  if (config.samples > 0) {
    const std::string k = std::to_string(config.samples);
    s.emplace_back("eval/pass@" + k + "_compile", pass_compiled / n);
    s.emplace_back("eval/pass@" + k + "_correct", pass_correct / n);
    s.emplace_back("eval/sample_compile_rate", samples > 0 ? sample_compiled / samples : 0.0);
    s.emplace_back("eval/sample_correct_rate", samples > 0 ? sample_correct / samples : 0.0);
  }
  s.emplace_back("eval/best_speedup_geomean",
                 best_timed > 0 ? std::exp(best_log / best_timed) : 0.0);
  s.emplace_back("eval/best_speedup_geomean_all", std::exp(best_log_all / n));
  summary.tokens_per_second =
      generation_seconds > 0 ? static_cast<double>(generated) / generation_seconds : 0.0;
  s.emplace_back("perf/tokens_per_second", summary.tokens_per_second);
  s.emplace_back("perf/seconds", seconds_since(start));
  return summary;
}

}  // namespace sparserl::agents
