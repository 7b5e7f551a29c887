// Data-parallel training (agents/distributed.hpp): the world read from the environment (bad values
// refused naming the variable), the shares each rank takes (batches, tasks, minibatch rows, sampled
// rows), episodes carried between ranks, and two real processes on gloo (tests/agents/
// rank_program.cpp) against one process on the union of their data: the same SFT step, the same
// GRPO (with and without dynamic sampling) / PPO / REINFORCE updates (through run_rl against an
// env whose evaluator "compiles" half the programs), the same episodes recorded by rank 0 alone,
// the same weights on both ranks, and nothing written by rank 1.
//
// The tolerance: the ranks and one process compute the same sums in another order (a gradient is
// rank 0's half plus rank 1's half instead of one sum over the batch; a loss is a weighted mean of
// two means), so float32 rounding differs at ~1e-7 of each value. The tests require the two runs'
// weights to lie within 1% of the Euclidean distance training moved them (measured: ~1e-5 of it);
// averaging the ranks' gradients with equal weights instead of their token counts lands 15-18% of
// it away in the SFT and GRPO cases. Statistics must agree to 1e-4 relative.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "sparserl/agents/distributed.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/env/action_mask.hpp"

namespace fs = std::filesystem;
using namespace sparserl;
using namespace sparserl::agents;
using sparserl::testing::has_substring;

namespace {

// The rank program's episode budget (rank_program.cpp): six tokens beyond the shortest program.
constexpr int kMaxTokens = sparserl::env::kMinSyntaxTokens + 6;

EnvironmentLookup lookup_in(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> const char* {
    const auto found = env.find(name);
    return found == env.end() ? nullptr : found->second.c_str();
  };
}

std::map<std::string, std::string> two_ranks() {
  return {{"RANK", "1"},
          {"WORLD_SIZE", "2"},
          {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29511"}};
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Runs the rank program (`mode`) as one process, or as `ranks` ranks of a gloo world on this host,
// each writing its output to OUT/log<R>; returns once all ended, requiring each to succeed.
void run_ranks(const std::string& mode, const fs::path& out, int ranks) {
  fs::create_directories(out);
  const int port = free_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (entry.rfind("RANK=", 0) == 0 || entry.rfind("WORLD_SIZE=", 0) == 0) continue;
      env.push_back(entry);
    }
    if (ranks > 1) {
      const std::vector<std::string> world = {
          "RANK=" + std::to_string(r),           "WORLD_SIZE=" + std::to_string(ranks),
          "LOCAL_RANK=" + std::to_string(r),     "MASTER_ADDR=127.0.0.1",
          "MASTER_PORT=" + std::to_string(port), "OMP_NUM_THREADS=1"};
      env.insert(env.end(), world.begin(), world.end());
    }
    std::vector<std::string> args = {SPARSERL_RANK_PROGRAM, mode, out.string()};
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string log = (out / ("log" + std::to_string(r))).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  for (std::size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    ::waitpid(pids[r], &status, 0);
    INFO("rank " << r << " of " << mode << ": "
                 << sparserl::testing::read_bytes(out / ("log" + std::to_string(r))));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
}

// What a rank reported: "step name" -> value, the episodes and the other tagged lines in order.
struct Report {
  std::map<std::string, double> statistics;
  std::vector<std::string> lines;  // "episode ...", "token ...", "digest ...", "update-digest ..."
};

Report read_report(const fs::path& file) {
  Report r;
  std::ifstream in(file);
  REQUIRE(in.good());
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string first, name;
    words >> first;
    if (first == "episode" || first == "token" || first.find("digest") != std::string::npos) {
      r.lines.push_back(line);
      continue;
    }
    double value = 0;
    words >> name >> value;
    r.statistics[first + " " + name] = value;
  }
  return r;
}

// Every statistic of one process equals the ranks' within the rounding of summing in another order;
// the wall times (perf/*) are left out.
void require_same_statistics(const Report& one, const Report& ranks) {
  REQUIRE(one.statistics.size() == ranks.statistics.size());
  for (const auto& [key, value] : one.statistics) {
    if (key.find(" perf/") != std::string::npos) continue;
    INFO(key);
    REQUIRE(ranks.statistics.count(key) == 1);
    CHECK(ranks.statistics.at(key) == Approx(value).epsilon(1e-4).margin(1e-6));
  }
}

std::vector<torch::Tensor> weights(const fs::path& checkpoint) {
  std::vector<torch::Tensor> out;
  for (const auto& p : PolicyAgent::from_checkpoint(checkpoint)->learner().policy->parameters()) {
    out.push_back(p.detach().clone());
  }
  return out;
}

// The Euclidean distance between two sets of weights.
double distance(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double squares = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    squares += (a[i] - b[i]).to(torch::kDouble).pow(2).sum().item<double>();
  }
  return std::sqrt(squares);
}

// Two ranks' weights equal one process's within 1% of how far training moved them from `start`
// (Euclidean distances over every parameter: AdamW's step is about lr x sign(gradient), so a
// parameter whose gradient is ~0 may step either way on rounding alone; a few such parameters
// barely move the distance, a gradient averaged wrongly moves all of them).
void require_same_weights(const fs::path& one, const fs::path& ranks,
                          const std::vector<torch::Tensor>& start) {
  const auto a = weights(one);
  const auto b = weights(ranks);
  const double moved = distance(a, start);
  const double apart = distance(a, b);
  INFO("moved " << moved << ", apart " << apart);
  REQUIRE(moved > 1e-3);
  CHECK(apart < 0.01 * moved);
}

std::vector<torch::Tensor> initial_weights(const AgentConfig& config) {
  PolicyAgent agent(config, agents::testing::vocabulary());
  std::vector<torch::Tensor> out;
  for (const auto& p : agent.learner().policy->parameters()) out.push_back(p.detach().clone());
  return out;
}

bool empty_or_absent(const fs::path& dir) { return !fs::exists(dir) || fs::is_empty(dir); }

}  // namespace

TEST_CASE(
    "the world comes from the environment, a bad value refused naming "
    "its variable",
    "[agents][distributed]") {
  CHECK_FALSE(world_from_environment(lookup_in({})).has_value());
  const World w = *world_from_environment(lookup_in(two_ranks()));
  CHECK(w.rank == 1);
  CHECK(w.size == 2);
  CHECK(w.local_rank == 1);
  CHECK(w.local_size == 2);  // LOCAL_WORLD_SIZE unset: WORLD_SIZE
  CHECK(w.master_addr == "127.0.0.1");
  CHECK(w.master_port == 29511);
  CHECK(w.distributed());
  CHECK_FALSE(world_from_environment(lookup_in({{"WORLD_SIZE", "1"},
                                                {"RANK", "0"},
                                                {"LOCAL_RANK", "0"},
                                                {"MASTER_ADDR", "h"},
                                                {"MASTER_PORT", "1"}}))
                  ->distributed());
  const auto refused = [](const std::string& name, const std::string& value) {
    auto env = two_ranks();
    if (value == "<unset>") {
      env.erase(name);
    } else {
      env[name] = value;
    }
    return [env] { (void)world_from_environment(lookup_in(env)); };
  };
  CHECK_THROWS_WITH(refused("RANK", "2")(),
                    has_substring("RANK = '2'") && has_substring("WORLD_SIZE = 2"));
  CHECK_THROWS_WITH(refused("RANK", "one")(), has_substring("RANK = 'one'"));
  CHECK_THROWS_WITH(refused("WORLD_SIZE", "0")(), has_substring("WORLD_SIZE = '0'"));
  CHECK_THROWS_WITH(refused("WORLD_SIZE", "2x")(), has_substring("WORLD_SIZE = '2x'"));
  CHECK_THROWS_WITH(refused("LOCAL_RANK", "-1")(), has_substring("LOCAL_RANK = '-1'"));
  CHECK_THROWS_WITH(refused("LOCAL_RANK", "<unset>")(), has_substring("LOCAL_RANK: not set"));
  CHECK_THROWS_WITH(refused("MASTER_PORT", "70000")(), has_substring("MASTER_PORT = '70000'"));
  CHECK_THROWS_WITH(refused("MASTER_PORT", "<unset>")(), has_substring("MASTER_PORT: not set"));
  CHECK_THROWS_WITH(refused("MASTER_ADDR", "")(), has_substring("MASTER_ADDR: empty"));
  CHECK_THROWS_WITH(refused("LOCAL_WORLD_SIZE", "3")(), has_substring("LOCAL_WORLD_SIZE = '3'"));
  CHECK_THROWS_WITH(refused("LOCAL_WORLD_SIZE", "1")(),
                    has_substring("LOCAL_RANK = '1'") && has_substring("LOCAL_WORLD_SIZE = 1"));
}

TEST_CASE("each rank takes an equal, consecutive share of a batch", "[agents][distributed]") {
  CHECK(shard_of(8, 0, 2).begin == 0);
  CHECK(shard_of(8, 0, 2).end == 4);
  CHECK(shard_of(8, 1, 2).begin == 4);
  CHECK(shard_of(8, 1, 2).end == 8);
  CHECK(shard_of(12, 2, 4).begin == 6);
  CHECK(shard_of(12, 2, 4).size() == 3);
  CHECK(shard_of(5, 0, 1).size() == 5);
  CHECK_NOTHROW(require_divisible("train.tasks_per_update", 8, 4));
  CHECK_NOTHROW(require_divisible("train.tasks_per_update", 3, 1));
  CHECK_THROWS_WITH(require_divisible("train.tasks_per_update", 6, 4),
                    "train.tasks_per_update = 6 does not divide by the world "
                    "size 4 (each rank "
                    "takes an equal share)");
  CHECK(batch_share(6, nullptr, "k").size() == 6);
  // The device of each rank: its local GPU, or the CPU it was told to use.
  World w;
  w.rank = w.local_rank = 1;
  w.size = w.local_size = 2;
  CHECK(rank_device("cuda", w, "agent.device") == "cuda:1");
  CHECK(rank_device("cpu", w, "agent.device") == "cpu");
  CHECK_THROWS_WITH(rank_device("cuda:0", w, "agent.device"),
                    has_substring("agent.device = cuda:0"));
  CHECK(choose_backend("auto", "cpu", "--backend") == CollectiveBackend::gloo);
  CHECK_THROWS_WITH(choose_backend("nccl", "cpu", "--backend"), has_substring("--backend = nccl"));
  CHECK_THROWS_WITH(choose_backend("mpi", "cpu", "--backend"), has_substring("--backend = 'mpi'"));
}

TEST_CASE("a rank's minibatches are its rows of the permutation one process draws",
          "[agents][distributed]") {
  PolicyAgent whole(agents::testing::tiny_config(), agents::testing::vocabulary());
  const std::vector<torch::Tensor> one = minibatch_indices(whole.learner(), 10, 3);
  std::vector<std::vector<std::int64_t>> merged(one.size());
  // Rank 0 holds rows 0..3, rank 1 rows 4..9 (uneven, as when completions were dropped).
  for (const auto& [offset, count] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 4}, {4, 6}}) {
    PolicyAgent rank(agents::testing::tiny_config(), agents::testing::vocabulary());
    rank.learner().rows = {offset, 10};
    const std::vector<torch::Tensor> parts = minibatch_indices(rank.learner(), count, 3);
    REQUIRE(parts.size() == one.size());
    CHECK(rank.learner().rng.counter == whole.learner().rng.counter);
    for (std::size_t p = 0; p < parts.size(); ++p) {
      for (std::int64_t i = 0; i < parts[p].numel(); ++i) {
        const std::int64_t local = parts[p][i].item<std::int64_t>();
        CHECK(local < count);
        merged[p].push_back(local + offset);
      }
    }
  }
  for (std::size_t p = 0; p < one.size(); ++p) {
    std::vector<std::int64_t> expected(one[p].data_ptr<std::int64_t>(),
                                       one[p].data_ptr<std::int64_t>() + one[p].numel());
    std::sort(expected.begin(), expected.end());
    std::sort(merged[p].begin(), merged[p].end());
    CHECK(merged[p] == expected);
  }
}

TEST_CASE("generating a window of rows samples what one process samples for them",
          "[agents][distributed]") {
  const auto config = agents::testing::tiny_config(env::MaskMode::syntax, 48);
  std::vector<std::shared_ptr<const env::MatrixObservation>> prompts;
  for (std::uint64_t p = 0; p < 4; ++p)
    prompts.push_back(agents::testing::synthetic_observation(p));
  PolicyAgent whole(config, agents::testing::vocabulary());
  const std::vector<Completion> all = whole.generate(prompts, 2, SamplingConfig{});
  std::vector<Completion> halves;
  for (std::size_t half = 0; half < 2; ++half) {
    PolicyAgent rank(config, agents::testing::vocabulary());
    const std::vector<std::shared_ptr<const env::MatrixObservation>> mine(
        prompts.begin() + static_cast<std::ptrdiff_t>(2 * half),
        prompts.begin() + static_cast<std::ptrdiff_t>(2 * half + 2));
    for (Completion& c : rank.generate(mine, 2, SamplingConfig{},
                                       RowWindow{static_cast<std::int64_t>(4 * half), 8})) {
      halves.push_back(std::move(c));
    }
  }
  REQUIRE(halves.size() == all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    INFO("row " << i);
    CHECK(halves[i].tokens == all[i].tokens);
    CHECK(halves[i].log_probs == all[i].log_probs);
  }
}

TEST_CASE("episodes cross between ranks with every field the trajectory file records",
          "[agents][distributed]") {
  env::Episode e;
  e.task = datasets::Task::parse("gen-v1/diagonal?n=50 spmm f64 k=8");
  e.env_id = 3;
  e.env_seed = 0xfedcba9876543210ULL;
  e.episode_index = 41;
  e.episode_seed = 7;
  e.observation_digest = "abc";
  e.tokens = {5, 9, 2};
  e.log_probs = {-0.125f, -1.0e-7f, -3.5f};
  e.values = {0.5f, 0.25f, 1.0f / 3.0f};
  e.source = "//@format csr\n";
  e.terminated = true;
  e.reward = 0.3;
  e.breakdown.compiled = true;
  e.breakdown.speedup = 1.25;
  e.breakdown.total = 0.3;
  e.episode_seconds = 0.5;
  e.evaluation_seconds = 0.25;
  e.policy_id = "grpo:step=3";
  e.group = 1;
  reward::EvalResult r;
  r.compiled = r.correct = r.timed = true;
  r.timing.speedup = 1.25;
  r.device = "NVIDIA H100 80GB HBM3";
  r.device_pci_bus_id = "0000:18:00.0";
  r.phases = {{"compile", 1.5}};
  e.eval = r;
  env::Episode bare;
  bare.task = datasets::Task::parse("gen-v1/diagonal?n=10 spmv f32");
  bare.truncated = true;
  const std::vector<env::Episode> both = {e, bare};
  const std::vector<env::Episode> back = decode_episodes(encode_episodes(both));
  REQUIRE(back.size() == 2);
  const env::Episode& b = back[0];
  CHECK(b.task.str() == e.task.str());
  CHECK(b.env_seed == e.env_seed);
  CHECK(b.episode_index == 41);
  CHECK(b.tokens == e.tokens);
  CHECK(b.log_probs == e.log_probs);
  CHECK(b.values == e.values);
  CHECK(b.source == e.source);
  CHECK(b.terminated);
  CHECK(b.breakdown.speedup == 1.25);
  CHECK(b.policy_id == e.policy_id);
  CHECK(b.group == 1);
  REQUIRE(b.eval.has_value());
  CHECK(b.eval->to_json() == r.to_json());
  CHECK_FALSE(back[1].eval.has_value());
  CHECK(back[1].truncated);
  CHECK_THROWS_WITH(decode_episodes("not cbor"), has_substring("decode_episodes"));
}

TEST_CASE("two ranks on gloo take the SFT steps one process takes on the whole batch",
          "[agents][distributed]") {
  const fs::path root = sparserl::testing::scratch_dir("agents_distributed_sft");
  run_ranks("sft", root / "one", 1);
  run_ranks("sft", root / "two", 2);
  require_same_statistics(read_report(root / "one" / "rank0.txt"),
                          read_report(root / "two" / "rank0.txt"));
  require_same_statistics(read_report(root / "two" / "rank0.txt"),
                          read_report(root / "two" / "rank1.txt"));
  require_same_weights(root / "one" / "stage-rank0" / "final",
                       root / "two" / "stage-rank0" / "final",
                       initial_weights(agents::testing::tiny_config(env::MaskMode::none, 400)));
  CHECK(empty_or_absent(root / "two" / "stage-rank1"));  // rank 0 alone writes checkpoints
}

TEST_CASE(
    "two ranks on gloo make the RL updates one process makes on all "
    "their tasks",
    "[agents][distributed][rl]") {
  const std::string mode = GENERATE("grpo", "grpo-dynamic", "ppo", "reinforce");
  const fs::path root = sparserl::testing::scratch_dir("agents_distributed_" + mode);
  run_ranks(mode, root / "one", 1);
  run_ranks(mode, root / "two", 2);
  const Report one = read_report(root / "one" / "rank0.txt");
  const Report two = read_report(root / "two" / "rank0.txt");
  require_same_statistics(one, two);
  require_same_statistics(two, read_report(root / "two" / "rank1.txt"));
  if (mode == "grpo-dynamic") {
    // The coin's rewards left a group of 3 flat somewhere, so the ranks filtered for real.
    double skipped = 0;
    for (const auto& [key, value] : one.statistics) {
      if (key.find(" dynamic_sampling/skipped_groups") != std::string::npos) skipped += value;
    }
    CHECK(skipped > 0);
  }
  // Rank 0 recorded every rank's episodes, in one process's order (the same samples: each row drew
  // what one process draws for it); rank 1 recorded none.
  std::vector<std::string> episodes_one, episodes_two;
  for (const auto& l : one.lines) {
    if (l.rfind("episode", 0) == 0) episodes_one.push_back(l);
  }
  for (const auto& l : two.lines) {
    if (l.rfind("episode", 0) == 0) episodes_two.push_back(l);
  }
  CHECK(episodes_one.size() == 2 * 2 * 3);
  CHECK(episodes_two == episodes_one);
  CHECK(read_report(root / "two" / "rank1.txt").lines.empty());
  auto config = agents::testing::tiny_config(env::MaskMode::syntax, kMaxTokens);
  require_same_weights(root / "one" / "stage-rank0" / "final",
                       root / "two" / "stage-rank0" / "final", initial_weights(config));
  CHECK(empty_or_absent(root / "two" / "stage-rank1"));
}

TEST_CASE(
    "after an update from their shares of a batch every rank holds the "
    "same weights",
    "[agents][distributed][rl]") {
  const fs::path root = sparserl::testing::scratch_dir("agents_distributed_update");
  run_ranks("update", root / "one", 1);
  run_ranks("update", root / "two", 2);
  const Report one = read_report(root / "one" / "rank0.txt");
  const Report rank0 = read_report(root / "two" / "rank0.txt");
  const Report rank1 = read_report(root / "two" / "rank1.txt");
  const auto tagged = [](const Report& r, const std::string& tag) {
    std::vector<std::string> out;
    for (const auto& l : r.lines) {
      if (l.rfind(tag, 0) == 0) out.push_back(l);
    }
    return out;
  };
  // The ranks sampled one process's rows between them, and ended with the same weights.
  std::vector<std::string> sampled = tagged(rank0, "token ");
  for (const auto& t : tagged(rank1, "token ")) sampled.push_back(t);
  CHECK(sampled == tagged(one, "token "));
  REQUIRE(tagged(rank0, "update-digest").size() == 1);
  CHECK(tagged(rank0, "update-digest") == tagged(rank1, "update-digest"));
  require_same_statistics(rank0, rank1);
  require_same_statistics(one, rank0);
  auto config = agents::testing::tiny_config(env::MaskMode::syntax, kMaxTokens);
  require_same_weights(root / "one" / "update-rank0", root / "two" / "update-rank0",
                       initial_weights(config));
}
