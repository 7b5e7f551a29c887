// What the tests of `sparserl train` share: a config that runs every stage on generated matrices in
// seconds on one core (train_test.cpp, toy_algorithm_torch_test.cpp), and the one run directory a
// run leaves under its runs folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"

namespace sparserl::testing {

// The four generated matrices of the tiny runs' tasks (data.uris, no index).
inline const std::string kTinyMatrices = R"(
uris = ["gen-v1/diagonal?n=48", "gen-v1/banded?n=40&bandwidth=2",
        "gen-v1/uniform?rows=32&nnz_per_row=3", "gen-v1/stencil2d?nx=6&ny=6"]
index_dirs = []
)";

// What every tiny run ends with: a short evaluation, frequent checkpoints, one compile worker, no
// plots (kTinyConfig's last sections, and hf_train_test.cpp's).
inline const std::string kTinyRunSections = R"(
[eval]
samples = 1
max_tasks = 2

[checkpoints]
every = 2
rl_every = 1
keep_last = 2

[evaluator]
compile_workers = 1

[report]
plots = false
)";

// Two stages' worth of everything on generated matrices: seconds on one core.
inline const std::string kTinyConfig = R"(
[experiment]
name = "tiny"
seed = 3

[data]
)" + kTinyMatrices + R"(
# RL also on fresh matrices (a drawn seed= each): a resumed run must draw the same ones.
generators = ["gen-v1/rmat?scale=5&edge_factor=3&permute=1", "gen-v1/arrow?n=30&width=2"]
generated_share = 0.5

[env]
max_tokens = 400
nnz_samples = 8
embedding_dim = 8

[policy]
preset = "tiny"
layers = 1
heads = 2
d_model = 32
d_ff = 64

[agent]
algorithm = "grpo"
device = "cpu"

[train]
corpus_programs = 24
search_budget = 1
pretrain_steps = 2
pretrain_batch_size = 2
sft_steps = 3
sft_batch_size = 2
rl_updates = 12
tasks_per_update = 1
samples_per_task = 2
log_every = 1
)" + kTinyRunSections;

// The one run directory under RUNS.
inline std::filesystem::path only_run(const std::filesystem::path& runs) {
  std::vector<std::filesystem::path> found;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(runs)) {
    if (e.is_directory() && e.path().filename().string().front() != '.') found.push_back(e.path());
  }
  REQUIRE(found.size() == 1);
  return found.front();
}

}  // namespace sparserl::testing
