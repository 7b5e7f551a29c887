// env_bench: how fast the environment itself is, apart from the evaluator, and how many episodes
// per second VectorEnv pushes through the real evaluator.
//
//   1. env steps per second without evaluation: SparseCudaEnv driven by the random agent
//   (observation,
//      action mask, agent), with an evaluator that answers at once; syntax and none masks. The
//      figure is the environment's overhead per token, the ceiling for any policy.
//   2. episodes per second through VectorEnv with the evaluator's compile-only pipeline (static
//      checks + NVRTC in sandboxed compile workers): the reference programs of reward/programs
//      played token by token (every episode compiles), asynchronous (send/recv) over N
//      environments.
//   3. the same with the full evaluator (run, check, time against cuSPARSE) where a GPU is present.
//
// usage: env_bench [--steps N] [--episodes N] [--envs N] [--compile-workers N] [--worker PATH]
//                  [--data-dir DIR]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sparserl/env/agent.hpp"
#include "sparserl/env/evaluator_backend.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/vector_env.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::env;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Answers every program at once (not compiled): the env's own cost.
class InstantBackend : public EvaluationBackend {
 public:
  std::future<reward::EvalResult> submit(const datasets::Task&, std::string) override {
    std::promise<reward::EvalResult> p;
    reward::EvalResult r;
    r.stage = reward::Stage::compile;
    r.compiled = true;
    p.set_value(r);
    return p.get_future();
  }
  [[nodiscard]] std::string describe() const override { return "instant (no evaluation)"; }
};

const std::vector<std::string> kUris = {"gen-v1/banded?bandwidth=4&n=20000",
                                        "gen-v1/rmat?edge_factor=8&scale=14",
                                        "gen-v1/stencil2d?nx=150"};

std::unique_ptr<SparseCudaEnv> make_env(const EnvConfig& config,
                                        std::shared_ptr<EvaluationBackend> backend,
                                        std::shared_ptr<datasets::MatrixStore> store, int id,
                                        int count, std::shared_ptr<const Tokenizer> tokenizer) {
  TaskSource tasks = TaskSource::from_uris(kUris, {}, TaskOrder::sequential);
  tasks.shard(id % static_cast<int>(kUris.size()), static_cast<int>(kUris.size()));
  (void)count;
  return std::make_unique<SparseCudaEnv>(config, std::move(tokenizer), tasks, std::move(store),
                                         std::move(backend), id);
}

void bench_steps(long long steps, MaskMode mask, std::shared_ptr<const Tokenizer> tokenizer,
                 std::shared_ptr<datasets::MatrixStore> store) {
  EnvConfig config;
  config.max_tokens = 512;
  config.mask = mask;
  auto env = make_env(config, std::make_shared<InstantBackend>(), store, 0, 1, tokenizer);
  RandomAgent agent(1, tokenizer->vocabulary_ptr());
  Observation o = env->reset(1).observation;
  long long done = 0, episodes = 0;
  double agent_s = 0;
  const auto start = Clock::now();
  while (done < steps) {
    const auto a0 = Clock::now();
    const ActionBatch a = agent.act(std::span<const Observation>(&o, 1));
    agent_s += seconds(a0);
    StepResult r = env->step(a.tokens[0], a.annotation(0));
    ++done;
    if (r.done()) {
      ++episodes;
      o = env->reset().observation;
    } else {
      o = std::move(r.observation);
    }
  }
  const double total = seconds(start);
  std::printf(
      "  mask %-6s  %lld steps, %lld episodes in %.2f s: %.0f steps/s (env alone %.0f steps/s; "
      "the agent took %.0f%%)\n",
      std::string(to_string(mask)).c_str(), done, episodes, total, done / total,
      done / (total - agent_s), 100.0 * agent_s / total);
}

// Plays the encoded reference program of the task's (op, format csr) - every episode compiles.
struct Player {
  std::vector<TokenId> program;
  ActionBatch act(std::span<const Observation> observations) const {
    ActionBatch a;
    for (const Observation& o : observations) a.tokens.push_back(program[o.tokens.size()]);
    return a;
  }
};

void bench_vector(int episodes, int num_envs, std::shared_ptr<EvaluationBackend> backend,
                  std::shared_ptr<const Tokenizer> tokenizer,
                  std::shared_ptr<datasets::MatrixStore> store, const std::string& program_text) {
  EnvConfig config;
  config.max_tokens = 2048;
  VectorEnvConfig vc;
  vc.num_envs = num_envs;
  vc.batch_size = 1;
  vc.autoreset = AutoReset::same_step;
  VectorEnv venv(vc,
                 [&](int id) { return make_env(config, backend, store, id, num_envs, tokenizer); });
  Player player{tokenizer->encode(program_text).tokens};
  int finished = 0, compiled = 0, correct = 0;
  std::map<std::string, int> errors;
  venv.on_episode([&](const Episode& e) {
    ++finished;
    if (e.eval && e.eval->compiled) ++compiled;
    if (e.eval && e.eval->correct) ++correct;
    if (e.eval) ++errors[std::string(reward::to_string(e.eval->error))];
  });
  VectorStep s = venv.reset(3);
  const auto start = Clock::now();
  std::vector<int> ids = s.env_ids;
  std::vector<Observation> obs = std::move(s.observations);
  long long steps = 0;
  while (finished < episodes) {
    const ActionBatch a = player.act(obs);
    venv.send(a.tokens, ids);
    steps += static_cast<long long>(ids.size());
    s = venv.recv();
    ids = s.env_ids;
    obs = std::move(s.observations);
  }
  const double total = seconds(start);
  (void)venv.reset();
  std::string kinds;
  for (const auto& [kind, n] : errors) kinds += " " + kind + "=" + std::to_string(n);
  std::printf(
      "  %d envs: %d episodes (%d compiled, %d correct; errors:%s) in %.2f s: %.2f episodes/s, "
      "%.0f steps/s, max %d evaluations in flight\n",
      num_envs, finished, compiled, correct, kinds.c_str(), total, finished / total, steps / total,
      venv.stats().max_in_flight);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  long long steps = 200000;
  int episodes = 40, envs = 4, compile_workers = 0;
  std::string worker,
      data_dir = (std::filesystem::temp_directory_path() / "sparserl-env-bench").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--steps")
      steps = std::stoll(value);
    else if (flag == "--episodes")
      episodes = std::stoi(value);
    else if (flag == "--envs")
      envs = std::stoi(value);
    else if (flag == "--compile-workers")
      compile_workers = std::stoi(value);
    else if (flag == "--worker")
      worker = value;
    else if (flag == "--data-dir")
      data_dir = value;
    else {
      std::cerr << "unknown option " << flag << "\n";
      return 2;
    }
  }
  auto tokenizer = std::make_shared<const Tokenizer>();
  auto store = std::make_shared<datasets::MatrixStore>(data_dir, datasets::StoreOptions{.cache_capacity = 8});
  std::printf("env_bench: vocabulary %s (%zu tokens), %u hardware threads\n",
              tokenizer->vocabulary().name().c_str(), tokenizer->vocabulary().size(),
              std::thread::hardware_concurrency());
  std::printf(
      "1. env steps per second without evaluation (random agent, max_tokens 512, K=128, D=64):\n");
  bench_steps(steps, MaskMode::syntax, tokenizer, store);
  bench_steps(steps, MaskMode::none, tokenizer, store);

  if (worker.empty()) {
    // The worker this build made, beside the benchmark's build tree.
    const auto beside =
        std::filesystem::path(argv[0]).parent_path() / ".." / ".." / "reward" / "sparserl-worker";
    if (std::filesystem::exists(beside)) worker = beside.lexically_normal().string();
  }
  const std::string program = read_file(std::filesystem::path(SPARSERL_BENCH_SOURCE_DIR) /
                                        "reward" / "programs" / "spmv_csr.cu");
  EvaluatorBackendOptions options;
  options.worker = worker;
  options.compile_workers = compile_workers;
  options.data_dir = data_dir;
  options.compile_only = true;
  options.cache_entries =
      0;  // every episode plays the same program: measure compiles, not cache hits
  {
    auto backend = make_evaluator_backend(options);
    std::printf(
        "2. episodes per second through VectorEnv, %s (reward/programs/spmv_csr.cu played, "
        "%zu tokens per episode):\n",
        backend->describe().c_str(), tokenizer->encode(program).tokens.size());
    bench_vector(episodes, envs, backend, tokenizer, store, program);
  }
  options.compile_only = false;
  auto full = make_evaluator_backend(options);
  if (!full->gpu_available()) {
    std::printf("3. full evaluator: no GPU here, skipped\n");
    return 0;
  }
  std::printf("3. episodes per second through VectorEnv, %s:\n", full->describe().c_str());
  bench_vector(episodes, envs, full, tokenizer, store, program);
  return 0;
}
