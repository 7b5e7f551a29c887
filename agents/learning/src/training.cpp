// The RL stage and the evaluation of a policy against the environment, and the checkpoint helpers
// every stage uses. No LibTorch here: the loop drives PolicyAgent's public calls (generate,
// update_rollouts) and the env's reset / evaluate_group, so it reads as the algorithm's outer loop:
// pick tasks, observe them, sample G completions each, score them with the evaluator, update.
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/agents/training.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "sparserl/datasets/features.hpp"
#include "sparserl/env/seeding.hpp"

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

struct Outcome {
  reward::EvalResult eval;
  reward::RewardBreakdown breakdown;
  std::string source;
  double reward = 0;
  bool evaluated = false;
  double seconds = 0;
};

// Rewards of one task's completions: evaluated together when they ended with <eos>, the env's
// truncation reward otherwise.
std::vector<Outcome> score_group(env::SparseCudaEnv& env, const datasets::Task& task,
                                 std::span<const Completion> completions) {
  std::vector<Outcome> out(completions.size());
  std::vector<std::vector<env::TokenId>> sequences;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < completions.size(); ++i) {
    if (completions[i].terminated) {
      sequences.push_back(completions[i].tokens);
      where.push_back(i);
    } else {
      out[i].source = env.tokenizer().decode(completions[i].tokens);
      out[i].reward = env.config().resolved_truncation_reward();
      out[i].breakdown.total = out[i].reward;
      out[i].breakdown.unclipped = out[i].reward;
    }
  }
  if (sequences.empty()) return out;
  const auto start = std::chrono::steady_clock::now();
  std::vector<env::EpisodeOutcome> outcomes = env.evaluate_group(task, sequences);
  const double seconds = seconds_since(start);
  for (std::size_t j = 0; j < outcomes.size(); ++j) {
    Outcome& o = out[where[j]];
    o.eval = std::move(outcomes[j].eval);
    o.breakdown = outcomes[j].breakdown;
    o.source = std::move(outcomes[j].source);
    o.reward = o.breakdown.total;
    o.evaluated = true;
    o.seconds = seconds;
  }
  return out;
}

double speedup_of(const Outcome& o) {
  return o.evaluated && o.eval.correct && o.eval.timed ? o.eval.timing.speedup : 0.0;
}

// The trajectory record of one scored completion (RL and evaluation episodes alike).
env::Episode make_episode(const env::SparseCudaEnv& env, std::uint64_t env_seed,
                          std::uint64_t episode_index, std::uint64_t episode_seed,
                          const env::MatrixObservation& matrix, const datasets::Task& task,
                          const Completion& completion, const Outcome& outcome,
                          const std::string& policy) {
  env::Episode e;
  e.task = task;
  e.env_id = env.env_id();
  e.env_seed = env_seed;
  e.episode_index = episode_index;
  e.episode_seed = episode_seed;
  e.observation_digest = env::observation_digest(matrix);
  e.tokens = completion.tokens;
  e.log_probs = completion.log_probs;
  e.values = completion.values;
  e.source = outcome.source;
  e.terminated = completion.terminated;
  e.truncated = !completion.terminated;
  e.reward = outcome.reward;
  e.breakdown = outcome.breakdown;
  if (outcome.evaluated) e.eval = outcome.eval;
  e.evaluation_seconds = outcome.seconds;
  e.policy_id = policy;
  return e;
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
  const bool stop = done < total && hooks.stop_requested && hooks.stop_requested();
  const bool periodic = checkpoint_every > 0 && done % checkpoint_every == 0 && done < total;
  if (stop || periodic) {
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
  save_checkpoint(agent, output_dir, "latest");
  save_checkpoint(agent, output_dir, "final");
  if (hooks.on_checkpoint) {
    hooks.on_checkpoint(latest_checkpoint(output_dir), result.steps, result.last);
  }
  result.checkpoint = final_checkpoint(output_dir);
  return result;
}

ObservationFn store_observer(std::shared_ptr<datasets::MatrixStore> store,
                             env::ObservationConfig config) {
  if (auto error = config.validate()) throw std::invalid_argument("observation config: " + *error);
  struct Cache {
    std::mutex mutex;
    std::unordered_map<std::string, datasets::MatrixFeatures> features;
  };
  auto cache = std::make_shared<Cache>();
  return [store = std::move(store), config, cache](const datasets::Task& task, std::uint64_t seed) {
    const auto matrix = store->load(task.uri);
    datasets::MatrixFeatures features;
    {
      std::lock_guard<std::mutex> lock(cache->mutex);
      auto found = cache->features.find(task.uri);
      if (found == cache->features.end()) {
        found = cache->features.emplace(task.uri, datasets::compute_features(*matrix)).first;
      }
      features = found->second;
    }
    return std::make_shared<const env::MatrixObservation>(
        env::observe_matrix(*matrix, features, task, config, seed));
  };
}

StageResult run_rl(const RlConfig& config, env::SparseCudaEnv& env,
                   const StatisticsCallback& on_statistics, const EpisodeCallback& on_episode) {
  if (config.output_dir.empty()) throw std::invalid_argument("rl: output_dir is required");
  if (config.agent.algorithm == "sft") {
    throw std::invalid_argument("rl: agent.algorithm = sft: expected reinforce, ppo or grpo");
  }
  if (config.updates < 1 || config.tasks_per_update < 1 || config.samples_per_task < 1) {
    throw std::invalid_argument(
        "rl: updates, tasks_per_update and samples_per_task must be positive");
  }
  StageResult result;
  std::unique_ptr<PolicyAgent> agent;
  if (std::filesystem::exists(latest_checkpoint(config.output_dir) / "checkpoint.txt")) {
    agent = PolicyAgent::from_checkpoint(latest_checkpoint(config.output_dir), config.agent.device);
    result.resumed = true;
  } else {
    agent = std::make_unique<PolicyAgent>(config.agent, env.tokenizer().vocabulary_ptr());
    if (config.init_checkpoint) agent->load_weights(*config.init_checkpoint);
    agent->set_reference_to_current();  // the KL anchor: the policy RL starts from
  }
  check_env_matches(env, agent->config(), "rl");
  env.tokenizer().vocabulary().require_digest(agent->vocabulary().digest(), "the env's tokenizer");

  // The task stream is a seeded copy of the env's source, replayed up to where a resumed run was.
  env::TaskSource tasks = env.task_source();
  tasks.seed(config.seed);
  const std::int64_t start_update = agent->counters().updates;
  for (std::int64_t i = 0; i < start_update * config.tasks_per_update; ++i) (void)tasks.next();

  for (std::int64_t update = start_update; update < config.updates; ++update) {
    const auto step_start = std::chrono::steady_clock::now();
    std::vector<datasets::Task> update_tasks;
    std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
    std::vector<std::uint64_t> seeds;
    for (int i = 0; i < config.tasks_per_update; ++i) {
      const auto index = static_cast<std::uint64_t>(update * config.tasks_per_update + i);
      env::ResetOptions options;
      options.task = tasks.next();
      options.episode_seed = env::episode_seed(config.seed, index);
      env::ResetResult reset = env.reset(std::nullopt, options);
      update_tasks.push_back(reset.observation.task);
      prompts.push_back(reset.observation.matrix);
      seeds.push_back(*options.episode_seed);
    }
    const std::int64_t tokens_before = agent->counters().generated_tokens;
    const auto generation_start = std::chrono::steady_clock::now();
    std::vector<Completion> completions =
        agent->generate(prompts, config.samples_per_task, agent->config().sampling);
    const double generation_seconds = seconds_since(generation_start);
    const double generated =
        static_cast<double>(agent->counters().generated_tokens - tokens_before);

    const auto evaluation_start = std::chrono::steady_clock::now();
    std::vector<Rollout> rollouts;
    std::vector<Outcome> outcomes;
    const auto g = static_cast<std::size_t>(config.samples_per_task);
    for (std::size_t i = 0; i < update_tasks.size(); ++i) {
      std::span<const Completion> group(completions.data() + i * g, g);
      std::vector<Outcome> scored = score_group(env, update_tasks[i], group);
      for (std::size_t s = 0; s < g; ++s) {
        Rollout r;
        r.task = update_tasks[i];
        r.matrix = prompts[i];
        r.group = static_cast<int>(i);
        r.completion = std::move(completions[i * g + s]);
        r.reward = scored[s].reward;
        r.evaluated = scored[s].evaluated;
        r.compiled = scored[s].evaluated && scored[s].eval.compiled;
        r.correct = scored[s].evaluated && scored[s].eval.correct;
        r.speedup = speedup_of(scored[s]);
        rollouts.push_back(std::move(r));
        outcomes.push_back(std::move(scored[s]));
      }
    }
    const double evaluation_seconds = seconds_since(evaluation_start);

    if (on_episode) {
      const std::string policy = agent->policy_id();
      for (std::size_t k = 0; k < rollouts.size(); ++k) {
        const auto index = static_cast<std::uint64_t>(update * config.tasks_per_update) * g + k;
        on_episode(make_episode(env, config.seed, index, seeds[k / g], *rollouts[k].matrix,
                                rollouts[k].task, rollouts[k].completion, outcomes[k], policy));
      }
    }

    env::Statistics stats = agent->update_rollouts(rollouts);
    stats.emplace_back("perf/generation_seconds", generation_seconds);
    stats.emplace_back("perf/evaluation_seconds", evaluation_seconds);
    stats.emplace_back("perf/tokens_per_second",
                       generation_seconds > 0 ? generated / generation_seconds : 0.0);
    stats.emplace_back("perf/step_seconds", seconds_since(step_start));
    const std::int64_t done = update + 1;
    if (on_statistics && (done % std::max(1, config.log_every) == 0 || done == config.updates)) {
      on_statistics("rl", done, stats);
    }
    result.last = std::move(stats);
    if (end_of_step(*agent, config.output_dir, config.hooks, done, config.updates,
                    config.checkpoint_every, result.last)) {
      result.stopped = true;
      break;
    }
  }
  return finish_stage(*agent, config.output_dir, config.hooks, std::move(result));
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
  for (std::size_t first = 0; first < tasks.size(); first += per_batch) {
    const std::size_t last = std::min(tasks.size(), first + per_batch);
    std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
    std::vector<datasets::Task> batch_tasks;
    std::vector<std::uint64_t> seeds;
    for (std::size_t i = first; i < last; ++i) {
      env::ResetOptions options;
      options.task = tasks[i];
      options.episode_seed = env::episode_seed(config.seed, i);
      seeds.push_back(*options.episode_seed);
      env::ResetResult reset = env.reset(std::nullopt, options);
      prompts.push_back(reset.observation.matrix);
      batch_tasks.push_back(reset.observation.task);
    }
    const std::int64_t tokens_before = agent.counters().generated_tokens;
    const auto generation_start = std::chrono::steady_clock::now();
    std::vector<Completion> greedy_out, sampled_out;
    if (config.greedy) greedy_out = agent.generate(prompts, 1, greedy);
    if (config.samples > 0) sampled_out = agent.generate(prompts, config.samples, config.sampling);
    generation_seconds += seconds_since(generation_start);
    generated += agent.counters().generated_tokens - tokens_before;

    auto record = [&](std::size_t i, std::uint64_t within, const Completion& c, const Outcome& o) {
      if (!on_episode) return;
      on_episode(make_episode(env, config.seed, (first + i) * per_task + within, seeds[i],
                              *prompts[i], batch_tasks[i], c, o,
                              policy + (within == 0 && config.greedy ? ":greedy" : ":sampled")));
    };
    for (std::size_t i = 0; i < batch_tasks.size(); ++i) {
      TaskEvaluation t;
      t.task = batch_tasks[i];
      if (config.greedy) {
        const Outcome o =
            score_group(env, t.task, std::span<const Completion>(&greedy_out[i], 1)).front();
        record(i, 0, greedy_out[i], o);
        t.greedy_compiled = o.evaluated && o.eval.compiled;
        t.greedy_correct = o.evaluated && o.eval.correct;
        t.greedy_speedup = speedup_of(o);
        t.best_speedup = t.greedy_speedup;
      }
      if (config.samples > 0) {
        const auto k = static_cast<std::size_t>(config.samples);
        const std::vector<Outcome> outs =
            score_group(env, t.task, std::span<const Completion>(sampled_out.data() + i * k, k));
        for (std::size_t j = 0; j < outs.size(); ++j) {
          const Outcome& o = outs[j];
          record(i, (config.greedy ? 1 : 0) + j, sampled_out[i * k + j], o);
          ++t.sampled;
          t.sampled_compiled += o.evaluated && o.eval.compiled ? 1 : 0;
          t.sampled_correct += o.evaluated && o.eval.correct ? 1 : 0;
          t.best_speedup = std::max(t.best_speedup, speedup_of(o));
        }
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
