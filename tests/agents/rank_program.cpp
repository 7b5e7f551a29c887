// What each process of the data-parallel tests runs (distributed_torch_test.cpp starts it once as a
// process of its own and as two ranks on gloo): one stage of a tiny policy through the stage
// functions of agents/training.hpp (RL against an env whose evaluator "compiles" half the
// programs), then a file of what this rank saw.
//
//   agents_rank_program sft|grpo|grpo-dynamic|ppo|reinforce|update OUT_DIR
//
// A stage writes into OUT_DIR/stage-rank<R> (a rank other than 0 should write nothing there); the
// program writes OUT_DIR/rank<R>.txt with every logged statistic ("step name value"), for RL every
// episode on_episode received ("episode index task tokens") and rank 0's final weights digest.
// grpo-dynamic is GRPO with dynamic sampling (each rank drops its own flat groups). `update` runs
// PolicyAgent's generate and update_rollouts alone (direct_update). One process is
// rank 0. The world comes from the environment (RANK, WORLD_SIZE, ...).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <iostream>
#include <string>

#include "agents_torch_test_support.hpp"
#include "sparserl/agents/distributed.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/env/action_mask.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;

// A made-up observation per (task, seed): no matrix store needed for SFT.
std::shared_ptr<const env::MatrixObservation> observe(const datasets::Task& task,
                                                      std::uint64_t seed) {
  return agents::testing::synthetic_observation(std::hash<std::string>{}(task.uri) ^ seed);
}

std::vector<SftPair> sft_pairs() {
  const auto programs = agents::testing::reference_programs();
  std::vector<SftPair> out;
  for (std::size_t i = 0; i < 6; ++i) {
    out.push_back(
        {datasets::Task::parse("gen-v1/diagonal?n=" + std::to_string(10 + i) + " spmv f32"),
         programs[i % programs.size()].text});
  }
  return out;
}

// "Compiles" half the programs, by a digest of their text: rewards differ within groups (every
// program the syntax mask lets through parses, so a parsing backend would reward all alike) and the
// updates have advantages to follow.
class CoinBackend : public env::EvaluationBackend {
 public:
  std::future<reward::EvalResult> submit(const datasets::Task&, std::string program) override {
    reward::EvalResult r;
    r.stage = reward::Stage::compile;
    r.compiled = std::hash<std::string>{}(program) % 2 == 0;
    if (!r.compiled) r.error = reward::ErrorKind::compile_error;
    std::promise<reward::EvalResult> promise;
    promise.set_value(std::move(r));
    return promise.get_future();
  }
  [[nodiscard]] std::string describe() const override { return "coin backend (tests)"; }
};

// Episodes of six tokens beyond the shortest program: short samples, a few of them free.
constexpr int kMaxTokens = env::kMinSyntaxTokens + 6;

std::unique_ptr<env::SparseCudaEnv> coin_env(const std::filesystem::path& store_dir) {
  env::EnvConfig c;
  c.max_tokens = kMaxTokens;
  c.mask = env::MaskMode::syntax;
  c.observation.nnz_samples = 8;
  c.observation.embedding_dim = 16;
  const std::vector<std::string> uris = {"gen-v1/banded?bandwidth=3&n=300", "gen-v1/diagonal?n=50",
                                         "gen-v1/stencil2d?nx=12"};
  return std::make_unique<env::SparseCudaEnv>(
      c, agents::testing::tokenizer(),
      env::TaskSource::from_uris(uris, {}, env::TaskOrder::shuffled),
      std::make_shared<datasets::MatrixStore>(store_dir, datasets::StoreOptions{.cache_capacity = 16}),
      std::make_shared<CoinBackend>());
}

// PolicyAgent's own calls, without a stage: this rank's share of 4 prompts x 2 samples generated
// (its rows of one process's batch), rewarded by a made-up rule, one GRPO update; the agent is
// saved to OUT_DIR/update-rank<R> and its weights digest reported, so that the ranks' weights can
// be compared with each other and with one process's.
void direct_update(const std::shared_ptr<ProcessGroup>& group, int rank, std::ostream& report,
                   const std::filesystem::path& out) {
  AgentConfig config = agents::testing::tiny_config(env::MaskMode::syntax, kMaxTokens);
  config.algorithm = "grpo";
  config.optimizer.lr = 1e-3;
  PolicyAgent agent(config, agents::testing::vocabulary());
  agent.join(group);
  const int ranks = group ? group->size() : 1;
  const Shard mine = shard_of(4, rank, ranks);
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
  for (std::size_t p = mine.begin; p < mine.end; ++p)
    prompts.push_back(agents::testing::synthetic_observation(p));
  const RowWindow rows =
      ranks > 1 ? RowWindow{static_cast<std::int64_t>(mine.begin) * 2, 8} : RowWindow{};
  const std::vector<Completion> completions = agent.generate(prompts, 2, SamplingConfig{}, rows);
  std::vector<Rollout> rollouts;
  for (std::size_t i = 0; i < completions.size(); ++i) {
    Rollout& r = rollouts.emplace_back();
    r.matrix = prompts[i / 2];
    r.group = static_cast<int>(i / 2);
    r.completion = completions[i];
    // A made-up reward that differs within groups: the tokens' sum modulo 5.
    std::int64_t sum = 0;
    for (env::TokenId t : r.completion.tokens) sum += t;
    r.reward = static_cast<double>(sum % 5) - 2.0;
    for (env::TokenId t : r.completion.tokens) report << "token " << t << "\n";
  }
  for (const auto& [name, value] : agent.update_rollouts(rollouts)) {
    report << "update " << name << " " << value << "\n";
  }
  report << "update-digest " << agent.weights_digest() << "\n";
  if (rank == 0) agent.save(out / "update-rank0");
}

int run(const std::string& mode, const std::filesystem::path& out) {
  const std::optional<World> world = world_from_environment();
  std::shared_ptr<ProcessGroup> group;
  if (world && world->distributed()) group = ProcessGroup::join(*world, CollectiveBackend::gloo);
  const int rank = world ? world->rank : 0;
  std::ofstream report(out / ("rank" + std::to_string(rank) + ".txt"));
  report << std::setprecision(17);
  const auto on_statistics = [&](std::string_view, std::int64_t step, const env::Statistics& s) {
    for (const auto& [name, value] : s) report << step << " " << name << " " << value << "\n";
  };
  const std::filesystem::path stage = out / ("stage-rank" + std::to_string(rank));
  if (mode == "update") {
    direct_update(group, rank, report, out);
    return 0;
  }
  StageResult result;
  if (mode == "sft") {
    SftConfig config;
    config.agent = agents::testing::tiny_config(env::MaskMode::none, 400);
    config.steps = 2;
    config.batch_size = 4;
    config.output_dir = stage;
    config.group = group;
    result = run_sft(config, sft_pairs(), observe, *agents::testing::tokenizer(), on_statistics);
  } else {
    RlConfig config;
    config.agent = agents::testing::tiny_config(env::MaskMode::syntax, kMaxTokens);
    config.agent.algorithm = mode == "grpo-dynamic" ? "grpo" : mode;
    config.agent.settings.get<GrpoConfig>().dynamic_sampling = mode == "grpo-dynamic";
    // Two passes of two minibatches: the ranks' rows split each minibatch unevenly.
    config.agent.settings.get<GrpoConfig>().epochs = 2;
    config.agent.settings.get<GrpoConfig>().minibatches = 2;
    config.agent.settings.get<PpoConfig>().epochs = 2;
    config.agent.settings.get<PpoConfig>().minibatches = 3;
    // Value clipping off: its branch at |V - V_old| = value_clip is a discontinuity that rounding
    // alone can tip one way in one process and the other way in two.
    config.agent.settings.get<PpoConfig>().value_clip = 0;
    config.agent.settings.get<ReinforceConfig>().minibatches = 2;
    config.agent.settings.get<ReinforceConfig>().normalize_advantages = true;
    config.agent.optimizer.lr = 1e-3;
    config.updates = 2;
    config.tasks_per_update = 2;
    config.samples_per_task = 3;
    config.seed = 4;
    config.output_dir = stage;
    config.group = group;
    auto env = coin_env(out / ("store-rank" + std::to_string(rank)));
    result = run_rl(config, *env, on_statistics, [&](const env::Episode& e) {
      report << "episode " << e.episode_index << " " << e.task.str();
      for (env::TokenId t : e.tokens) report << " " << t;
      report << "\n";
    });
  }
  if (rank == 0) {
    report << "digest " << PolicyAgent::from_checkpoint(result.checkpoint)->weights_digest()
           << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: agents_rank_program sft|grpo|grpo-dynamic|ppo|reinforce|update OUT_DIR\n";
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "agents_rank_program: " << e.what() << "\n";
    return 1;
  }
}
