// `sparserl train` with a Hugging Face-format policy ([agent.model] kind = "hf"), as a user runs
// it: `sparserl agent init-hf` makes a tiny random Qwen2 folder from the committed
// experiments/models/qwen2-tiny.json and tokenizer.json; a tiny config pretrains it on plain CUDA
// text and the design space's programs, fine-tunes it on the template search's pairs, runs GRPO
// updates and evaluates it - every masked sample a program that parses, SFT lowering its loss, a
// run stopped by SIGINT in RL resuming from its checkpoint to the end. Then the same with LoRA, and
// `sparserl agent export-hf` merging its adapters into a Hugging Face folder; and issue 28's
// compile rate of the random-weight model's masked samples, 256 of them, above a floor. Needs the
// learned agents (LibTorch); the compile stage is NVRTC's, nothing launches.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli_child.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/experiments/checkpoints.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/runner.hpp"
#include "test_support.hpp"
#include "tiny_train_config.hpp"

namespace fs = std::filesystem;
using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

// Every stage on generated matrices with a 0.6M-parameter Qwen2; @MODEL@ and @TEXT@ are filled in.
// max_tokens 640: the BPE grammar mask's least budget is 603 tokens, and the design space's
// heuristic programs for these matrices fit.
const std::string kHfConfig = R"(
[experiment]
name = "hf-tiny"
seed = 3

[data]
)" + kTinyMatrices + R"(
[env]
max_tokens = 640
nnz_samples = 8
embedding_dim = 8

[agent]
algorithm = "grpo"
device = "cpu"

[agent.model]
kind = "hf"
path = "@MODEL@"
dtype = "float32"

[agent.pretrain]
lr = 3e-3

[agent.sft]
lr = 3e-3

[train]
corpus_programs = 6
text_corpus = ["@TEXT@"]
text_corpus_files = 1
search_budget = 1
pretrain_steps = 2
pretrain_batch_size = 2
sft_steps = 8
sft_batch_size = 2
rl_updates = 3
tasks_per_update = 1
samples_per_task = 2
log_every = 1

)" + kTinyRunSections;

// Two small CUDA sources: the plain-text part of pretraining.
void write_text_corpus(const fs::path& dir) {
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "saxpy.cu") << R"(// y = a * x + y
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";
  std::ofstream(dir / "sub" / "reduce.cuh") << R"(#pragma once
template <int BLOCK>
__device__ float block_sum(float v) {
  __shared__ float partial[BLOCK];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  return partial[0];
}
)";
  std::ofstream(dir / "notes.txt") << "not a source file: left out\n";
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// DIR/model (random weights from the committed shape and tokenizer) and DIR/hf.toml over it.
fs::path write_model_and_config(const fs::path& dir) {
  const fs::path models = source_dir() / "experiments" / "models";
  const pid_t init = start_cli(
      {"agent", "init-hf", "--config", (models / "qwen2-tiny.json").string(), "--tokenizer",
       (models / "tokenizer.json").string(), "--out", (dir / "model").string(), "--seed", "5"},
      dir / "init.log");
  INFO(read_if_present(dir / "init.log"));
  REQUIRE(finish(init, std::chrono::seconds(60)) == 0);
  CHECK_THAT(read_if_present(dir / "init.log"), has_substring("qwen2, 2 layers, hidden 64"));
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json"}) {
    CHECK(fs::exists(dir / "model" / file));
  }
  write_text_corpus(dir / "text");
  std::string config = replace_all(kHfConfig, "@MODEL@", (dir / "model").string());
  config = replace_all(config, "@TEXT@", (dir / "text").string());
  std::ofstream(dir / "hf.toml") << config;
  return dir / "hf.toml";
}

// The RL episodes of a run (trajectories.h5): each masked sample ended with eos and its program got
// past the parse stage (directives and launch lines read); returns how many compiled.
int check_masked_samples(const fs::path& run, std::size_t expected_rows) {
  const sparserl::env::TrajectoryFile episodes =
      sparserl::env::read_trajectories(run / "trajectories.h5");
  CHECK(episodes.rows == static_cast<std::int64_t>(expected_rows));
  // The file names the tokens its episodes hold: the model's BPE tokenizer.
  CHECK(episodes.info.vocabulary_name == "bpe-8192 tokenizer.json");
  int compiled = 0;
  for (const sparserl::env::Episode& e : episodes.episodes) {
    INFO(e.source);
    CHECK(e.terminated);
    REQUIRE(e.eval.has_value());
    CHECK(e.eval->error != sparserl::reward::ErrorKind::bad_program);
    CHECK(e.eval->stage != sparserl::reward::Stage::parse);
    compiled += e.eval->compiled ? 1 : 0;
  }
  return compiled;
}

}  // namespace

TEST_CASE("sparserl agent init-hf names the input it cannot use", "[experiments][train][hf]") {
  if (!have_learned_agents()) skip("this build has no LibTorch agents");
  const fs::path dir = scratch_dir("hf_init_refusals");
  const fs::path models = source_dir() / "experiments" / "models";
  const pid_t missing =
      start_cli({"agent", "init-hf", "--config", (models / "qwen2-tiny.json").string(),
                 "--tokenizer", (dir / "absent.json").string(), "--out", (dir / "model").string()},
                dir / "missing.log");
  CHECK(finish(missing, std::chrono::seconds(60)) == 2);
  CHECK_THAT(read_if_present(dir / "missing.log"),
             has_substring("--tokenizer " + (dir / "absent.json").string() + ": no such file"));
  // A tokenizer.json is no config.json: the key it lacks is named.
  const pid_t wrong = start_cli(
      {"agent", "init-hf", "--config", (models / "tokenizer.json").string(), "--tokenizer",
       (models / "tokenizer.json").string(), "--out", (dir / "model").string()},
      dir / "wrong.log");
  CHECK(finish(wrong, std::chrono::seconds(60)) == 1);
  CHECK_THAT(read_if_present(dir / "wrong.log"), has_substring("key 'model_type': missing"));
  CHECK_FALSE(fs::exists(dir / "model" / "model.safetensors"));
}

TEST_CASE("sparserl train: an HF model pretrains, SFTs, runs GRPO and resumes",
          "[experiments][train][hf]") {
  if (!have_learned_agents()) skip("this build has no LibTorch agents");
  const fs::path dir = scratch_dir("hf_train");
  const fs::path config = write_model_and_config(dir);

  // Stopped by SIGINT once the first RL update is checkpointed...
  const pid_t first =
      start_cli({"train", config.string(), "--runs-dir", (dir / "runs").string()}, dir / "cut.log");
  fs::path run;
  const int code = interrupt_in_rl(first, dir / "runs", run);
  INFO(read_if_present(dir / "cut.log"));
  CHECK(code == 130);
  CHECK(read_run_info(run / "run.json").status == RunStatus::interrupted);
  CHECK_THAT(read_if_present(dir / "cut.log"),
             has_substring("pretrain: 1 text files of 2 ("));  // notes.txt is no source
  const auto latest = CheckpointStore(run / "checkpoints").latest();
  REQUIRE(latest);
  CHECK(latest->step > 2 + 8);  // in RL

  // ... then resumed from that checkpoint to the end.
  const pid_t second = start_cli({"train", "--resume", run.string()}, dir / "resume.log");
  const int resumed = finish(second, std::chrono::seconds(240));
  INFO(read_if_present(dir / "resume.log"));
  REQUIRE(resumed == 0);
  const RunInfo info = read_run_info(run / "run.json");
  CHECK(info.status == RunStatus::completed);
  CHECK(info.resumed_at.size() == 1);
  for (const char* stage : {"pretrain", "sft", "rl"}) {
    CHECK(fs::exists(run / "policies" / stage / "checkpoint.txt"));
  }
  CHECK(fs::exists(run / "report.md"));

  // Pretraining read both kinds of text; SFT lowered its loss.
  const MetricsLog metrics = read_metrics(run / "metrics.jsonl");
  const MetricsRecord* pretrain = nullptr;
  for (const MetricsRecord& r : metrics.records) {
    if (r.stage == "pretrain" && r.get("corpus/text_sequences")) pretrain = &r;
  }
  REQUIRE(pretrain != nullptr);
  CHECK(*pretrain->get("corpus/text_sequences") >= 1);
  CHECK(*pretrain->get("corpus/programs") >= 1);
  const auto sft = metrics.series("loss", "sft");
  REQUIRE(sft.size() == 8);
  CHECK(sft.back().second < sft.front().second);
  CHECK(metrics.series("env/compile_rate", "rl").size() == 3);
  CHECK(metrics.last_with("eval/greedy_compile_rate") != nullptr);
  check_masked_samples(run, 3 * 2);  // 3 updates x 2 samples
}

TEST_CASE("a random-weight HF model's masked samples compile: issue 28's metric",
          "[experiments][train][hf]") {
  // The issue's figure as docs/agents.md ("Compile rate of the tiny model's masked samples") states
  // it: qwen2-tiny of random weights (init-hf --seed 5), RL with a learning rate that moves
  // nothing, 4 updates x 4 tasks x 16 samples = 256 programs through NVRTC's compile stage. The aim
  // is 99% (254); the floor here, 245 (95.7%), catches a mask that lost rules, not the noise of one
  // more: a rule moves every sample after the first token it changes (seeds 3-5 read 246-251 at
  // 413c1de). 16 minibatches: one pass over 64 samples of 640 tokens holds their 8,192-way logits
  // and gradients at once (10 GB, which the OOM killer ended beside other tests); at lr 1e-12 no
  // parameter moves either way, so the samples are the same.
  if (!have_learned_agents()) skip("this build has no LibTorch agents");
  const fs::path dir = scratch_dir("hf_compile_rate");
  const fs::path config = write_model_and_config(dir);
  const pid_t run_pid =
      start_cli({"train", config.string(), "--runs-dir", (dir / "runs").string(), "--set",
                 R"(train.stages=["rl"])", "--set", "agent.rl.lr=1e-12", "--set",
                 "train.rl_updates=4", "--set", "train.tasks_per_update=4", "--set",
                 "train.samples_per_task=16", "--set", "agent.grpo.minibatches=16"},
                dir / "metric.log");
  const int code = finish(run_pid, std::chrono::seconds(1200));
  INFO(read_if_present(dir / "metric.log"));
  REQUIRE(code == 0);
  const int compiled = check_masked_samples(only_run(dir / "runs"), 256);
  WARN("issue 28's metric: " << compiled << " of 256 random-weight samples compiled");
  CHECK(compiled >= 245);
}

TEST_CASE("sparserl train: an HF model trains with LoRA", "[experiments][train][hf]") {
  if (!have_learned_agents()) skip("this build has no LibTorch agents");
  const fs::path dir = scratch_dir("hf_train_lora");
  const fs::path config = write_model_and_config(dir);
  const pid_t run_pid =
      start_cli({"train", config.string(), "--runs-dir", (dir / "runs").string(), "--set",
                 "agent.model.lora_rank=4", "--set", "train.sft_steps=4", "--set",
                 "train.rl_updates=2", "--set", R"(train.stages=["pretrain","sft","rl"])"},
                dir / "lora.log");
  const int code = finish(run_pid, std::chrono::seconds(240));
  INFO(read_if_present(dir / "lora.log"));
  REQUIRE(code == 0);
  const fs::path run = only_run(dir / "runs");
  CHECK(read_run_info(run / "run.json").status == RunStatus::completed);
  // The checkpoint keeps the adapters unmerged beside the base's digest.
  const std::string checkpoint = read_if_present(run / "policies" / "rl" / "checkpoint.txt");
  CHECK_THAT(checkpoint, has_substring("model.lora_rank = 4"));
  CHECK_THAT(checkpoint, has_substring("model.base_digest = "));
  const auto sft = read_metrics(run / "metrics.jsonl").series("loss", "sft");
  REQUIRE(sft.size() == 4);
  CHECK(sft.back().second < sft.front().second);
  check_masked_samples(run, 2 * 2);

  // export-hf merges the trained adapters into the base's weights: a folder transformers loads.
  const pid_t exported =
      start_cli({"agent", "export-hf", "--checkpoint", (run / "policies" / "rl").string(), "--out",
                 (dir / "exported").string()},
                dir / "export.log");
  CHECK(finish(exported, std::chrono::seconds(60)) == 0);
  CHECK_THAT(read_if_present(dir / "export.log"), has_substring("LoRA merged"));
  for (const char* file : {"config.json", "tokenizer.json", "sparserl_policy.safetensors"}) {
    CHECK(fs::exists(dir / "exported" / file));
  }
  REQUIRE(fs::exists(dir / "exported" / "model.safetensors"));
  CHECK(fs::file_size(dir / "exported" / "model.safetensors") ==
        fs::file_size(dir / "model" / "model.safetensors"));
  CHECK(read_bytes(dir / "exported" / "model.safetensors") !=
        read_bytes(dir / "model" / "model.safetensors"));

  // sparserl bench answers with the HF policy through its own tokenizer beside the
  // closed-vocabulary random agent, and refuses to write both into one trajectories file.
  const std::string policy = "hf=" + (run / "policies" / "rl").string();
  const std::vector<std::string> bench = {"bench",      config.string(),
                                          "--runs-dir", (dir / "bench").string(),
                                          "--set",      R"(bench.agents=["random"])",
                                          "--set",      "bench.policies=[\"" + policy + "\"]",
                                          "--set",      "bench.samples=1"};
  std::vector<std::string> refused = bench;
  refused.insert(refused.end(), {"--set", "bench.record_trajectories=true"});
  CHECK(finish(start_cli(refused, dir / "bench-refused.log"), std::chrono::seconds(120)) != 0);
  CHECK_THAT(read_if_present(dir / "bench-refused.log"),
             has_substring("bench.record_trajectories: hf ("));
  std::vector<std::string> plain = bench;
  plain.insert(plain.end(), {"--set", "bench.record_trajectories=false"});
  const int benched = finish(start_cli(plain, dir / "bench.log"), std::chrono::seconds(120));
  INFO(read_if_present(dir / "bench.log"));
  REQUIRE(benched == 0);
  std::size_t hf_rows = 0;
  for (const fs::path& r : fs::directory_iterator(dir / "bench")) {
    if (!fs::exists(r / "results.csv")) continue;
    std::istringstream rows(read_bytes(r / "results.csv"));
    for (std::string line; std::getline(rows, line);)
      hf_rows += line.find(",hf,") != std::string::npos;
  }
  CHECK(hf_rows == 4);  // one per matrix of data.uris
}

TEST_CASE("sparserl train refuses a text corpus for the closed vocabulary",
          "[experiments][train][hf]") {
  if (!have_learned_agents()) skip("this build has no LibTorch agents");
  const fs::path dir = scratch_dir("hf_text_corpus_small");
  write_text_corpus(dir / "text");
  std::ofstream(dir / "tiny.toml") << kTinyConfig;
  const pid_t pid =
      start_cli({"train", (dir / "tiny.toml").string(), "--runs-dir", (dir / "runs").string(),
                 "--set", "train.text_corpus=[\"" + (dir / "text").string() + "\"]"},
                dir / "small.log");
  CHECK(finish(pid, std::chrono::seconds(60)) == 1);
  CHECK_THAT(read_if_present(dir / "small.log"),
             has_substring("train.text_corpus: plain text needs agent.model.kind = \"hf\""));
}
