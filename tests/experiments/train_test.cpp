// `sparserl train` as a user runs it, in a child process: a tiny config on generated matrices runs
// every stage into a complete run directory; a SIGINT after the first RL checkpoint leaves a
// readable, interrupted run directory (run.json, metrics.jsonl, trajectories.h5, checkpoints/) that
// `sparserl train --resume` completes with the same numbers as an uninterrupted run; and the
// quickstart (shortened with --set) runs end to end; `agent rl` trains on generated matrices; and
// `sparserl bench` compares several policies (bench.policies), recording their programs; SFT takes
// its pairs from a measurement store (train.teacher_store) where the store covers a matrix. Needs
// the learned agents (LibTorch).
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_split_fixture.hpp"
#include "catch.hpp"
#include "cli_child.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/env/trajectory.hpp"
#include "sparserl/experiments/checkpoints.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/metrics.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "test_support.hpp"
#include "tiny_train_config.hpp"

namespace fs = std::filesystem;
using namespace sparserl::experiments;
using namespace sparserl::testing;

namespace {

// What must agree between two runs of one config: every statistic but the timings.
std::vector<std::string> comparable(const MetricsLog& log) {
  std::vector<std::string> out;
  for (const MetricsRecord& r : log.records) {
    std::string line = std::to_string(r.step) + " " + r.stage;
    for (const auto& [name, value] : r.values) {
      if (name.rfind("perf/", 0) == 0) continue;
      line += " " + name + "=" + json_number(value);
    }
    out.push_back(line);
  }
  return out;
}

// Writes DIR/tiny.toml and runs its first two stages (pretrain, SFT) into DIR/runs: the SFT
// policy's folder.
std::string tiny_sft_policy(const fs::path& dir) {
  std::ofstream(dir / "tiny.toml") << kTinyConfig;
  const pid_t sft =
      start_cli({"train", (dir / "tiny.toml").string(), "--runs-dir", (dir / "runs").string(),
                 "--set", R"(train.stages=["pretrain","sft"])"},
                dir / "sft.log");
  INFO(read_if_present(dir / "sft.log"));
  REQUIRE(finish(sft, std::chrono::seconds(120)) == 0);
  return (only_run(dir / "runs") / "policies" / "sft").string();
}

void require_agents() {
  if (!have_learned_agents()) sparserl::testing::skip("this build has no LibTorch agents");
}

}  // namespace

TEST_CASE("sparserl train: SIGINT leaves a readable run that resumes to the same numbers",
          "[experiments][train]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("train_sigint");
  std::ofstream(dir / "tiny.toml") << kTinyConfig;

  // The uninterrupted run.
  const pid_t whole =
      start_cli({"train", (dir / "tiny.toml").string(), "--runs-dir", (dir / "whole").string()},
                dir / "whole.log");
  INFO(read_if_present(dir / "whole.log"));
  REQUIRE(finish(whole, std::chrono::seconds(120)) == 0);
  const fs::path reference = only_run(dir / "whole");
  CHECK(read_run_info(reference / "run.json").status == RunStatus::completed);

  // The same config, stopped after the first RL checkpoint.
  const pid_t first =
      start_cli({"train", (dir / "tiny.toml").string(), "--runs-dir", (dir / "cut").string()},
                dir / "cut.log");
  fs::path run;
  const int code = interrupt_in_rl(first, dir / "cut", run);
  INFO(read_if_present(dir / "cut.log"));
  CHECK(code == 130);

  // Everything readable, and it says how it ended.
  const RunInfo info = read_run_info(run / "run.json");
  CHECK(info.status == RunStatus::interrupted);
  CHECK(info.error == "stopped by SIGINT");
  const MetricsLog cut = read_metrics(run / "metrics.jsonl");
  CHECK_FALSE(cut.truncated_last_line);
  REQUIRE_FALSE(cut.records.empty());
  CHECK(cut.records.back().stage == "rl");
  const auto latest = CheckpointStore(run / "checkpoints").latest();
  REQUIRE(latest);
  CHECK(latest->step == cut.records.back().step);  // the stop saved the step it ended on
  CHECK(latest->step < 2 + 3 + 12);
  const Json stage = parse_json(read_if_present(latest->dir / "stage.json"), "stage.json");
  CHECK(stage.at("stage") == "rl");
  CHECK_FALSE(stage.at("done").get<bool>());
  const sparserl::env::TrajectoryFile episodes =
      sparserl::env::read_trajectories(run / "trajectories.h5");
  CHECK(episodes.rows == 2 * (latest->step - 5));  // two samples per update so far
  CHECK(fs::exists(run / "policies" / "pretrain" / "checkpoint.txt"));
  CHECK(fs::exists(run / "policies" / "sft" / "checkpoint.txt"));
  CHECK(fs::exists(run / "report.md"));
  CHECK_THAT(read_if_present(run / "report.md"), has_substring("**interrupted**"));
  CHECK_THAT(read_if_present(dir / "cut.log"),
             has_substring("sparserl train --resume " + run.string()));

  // Resume to the end: the same numbers as the run that was never stopped.
  const pid_t second = start_cli({"train", "--resume", run.string()}, dir / "resume.log");
  const int resumed = finish(second, std::chrono::seconds(120));
  INFO(read_if_present(dir / "resume.log"));
  REQUIRE(resumed == 0);
  CHECK(read_run_info(run / "run.json").status == RunStatus::completed);
  CHECK(read_run_info(run / "run.json").resumed_at.size() == 1);
  CHECK(comparable(read_metrics(run / "metrics.jsonl")) ==
        comparable(read_metrics(reference / "metrics.jsonl")));
  const sparserl::env::TrajectoryFile all =
      sparserl::env::read_trajectories(run / "trajectories.h5");
  CHECK(all.rows == 2 * 12);
  int generated = 0;  // RL episodes on the generators' matrices, each with its drawn seed=
  for (const sparserl::env::Episode& e : all.episodes) {
    if (e.task.uri.rfind("gen-v1/rmat", 0) == 0 || e.task.uri.rfind("gen-v1/arrow", 0) == 0) {
      CHECK_THAT(e.task.uri, has_substring("seed="));
      ++generated;
    }
  }
  CHECK(generated >= 4);  // 12 tasks at a share of 0.5: 6 expected (P(< 2) = 0.3%)
  CHECK(generated <= 20);
  const auto a = read_results_csv(run / "results.csv");
  const auto b = read_results_csv(reference / "results.csv");
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].matrix == b[i].matrix);
    CHECK(a[i].compiled == b[i].compiled);
    CHECK(a[i].samples_compiled == b[i].samples_compiled);
  }
  CHECK_FALSE(fs::exists(run / "work"));

  // A completed run has nothing to resume.
  const pid_t again = start_cli({"train", "--resume", run.string()}, dir / "again.log");
  CHECK(finish(again, std::chrono::seconds(60)) == 1);
  CHECK_THAT(read_if_present(dir / "again.log"), has_substring("the run completed"));
}

TEST_CASE("a run stopped in SFT resumes with the template search's pairs it saved",
          "[experiments][train]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("train_sft_pairs");
  std::ofstream(dir / "tiny.toml") << kTinyConfig;
  // Long enough an SFT stage to stop in, with a checkpoint at every step.
  const pid_t first = start_cli({"train", (dir / "tiny.toml").string(), "--runs-dir",
                                 (dir / "runs").string(), "--set", "train.sft_steps=400",
                                 "--set", "checkpoints.every=1"},
                                dir / "cut.log");
  fs::path run;
  const int code = interrupt_when(first, [&] {
    std::error_code ec;
    if (!fs::exists(dir / "runs", ec)) return false;
    for (const fs::directory_entry& e : fs::directory_iterator(dir / "runs", ec)) {
      if (e.path().filename().string().front() == '.') continue;
      run = e.path();
      for (const CheckpointInfo& c : CheckpointStore(run / "checkpoints").list()) {
        if (read_if_present(c.dir / "stage.json").find("\"sft\"") != std::string::npos) {
          return true;
        }
      }
    }
    return false;
  });
  INFO(read_if_present(dir / "cut.log"));
  REQUIRE(code == 130);
  // The pairs were saved as the stage began: how they were made, and the pairs.
  const fs::path saved = run / "sft-pairs.json";
  REQUIRE(fs::exists(saved));
  Json pairs = parse_json(read_if_present(saved), saved.string());
  CHECK(pairs.at("source") == "template search");
  CHECK(pairs.at("budget") == 1);
  CHECK(pairs.at("parallel") == 2);  // train.search_parallel = 0 without GPU workers: 2 at once
  CHECK_FALSE(pairs.at("timed").get<bool>());  // no GPU here
  REQUIRE(pairs.at("pairs").size() >= 2);
  CHECK_THAT(read_if_present(dir / "cut.log"), has_substring("pairs from the template search"));
  // Keep one pair: the resumed stage trains on the file, not on a new search.
  pairs["pairs"] = Json::array({pairs.at("pairs").at(0)});
  std::ofstream(saved) << dump_json(pairs);
  const pid_t second = start_cli({"train", "--resume", run.string()}, dir / "resume.log");
  const int resumed = finish(second, std::chrono::seconds(240));
  INFO(read_if_present(dir / "resume.log"));
  CHECK(resumed == 0);
  CHECK_THAT(read_if_present(dir / "resume.log"),
             has_substring("sft: 1 pairs from " + saved.string()));
  CHECK(read_if_present(dir / "resume.log").find("pairs from the template search") ==
        std::string::npos);
  CHECK(read_run_info(run / "run.json").status == RunStatus::completed);

  // Another run trains on them through train.sft_pairs (study.sh shares a table's first SFT run's
  // pairs with its later ones), and records them as its SFT corpus.
  const auto sft_only = [&](const std::string& name, const fs::path& pairs_file) {
    const pid_t pid = start_cli(
        {"train", (dir / "tiny.toml").string(), "--runs-dir", (dir / name).string(), "--set",
         R"(train.stages=["pretrain","sft"])", "--set", "train.sft_pairs=" + pairs_file.string()},
        dir / (name + ".log"));
    return finish(pid, std::chrono::seconds(180));
  };
  REQUIRE(sft_only("shared", saved) == 0);
  CHECK_THAT(read_if_present(dir / "shared.log"),
             has_substring("sft: 1 pairs from " + saved.string()));
  const fs::path shared = only_run(dir / "shared");
  CHECK_FALSE(fs::exists(shared / "sft-pairs.json"));  // not searched: nothing of its own to save
  CHECK_THAT(read_if_present(shared / "run.json"), has_substring(saved.string()));
  // A file that is not a run's pairs stops the stage, naming the file and what it expected.
  std::ofstream(dir / "bad.json") << "[1, 2]";
  CHECK(sft_only("bad", dir / "bad.json") == 1);
  CHECK_THAT(read_if_present(dir / "bad.log"),
             has_substring((dir / "bad.json").string() + ": expected an object with \"pairs\""));
}

namespace {

// Every file and folder name in a run directory, recursively, relative to it.
std::set<std::string> listing(const fs::path& run) {
  std::set<std::string> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(run)) {
    out.insert(fs::relative(e.path(), run).string());
  }
  return out;
}

}  // namespace

TEST_CASE(
    "sparserl train --gpus 2 --backend gloo: two ranks write one run of one process's numbers",
    "[experiments][train][distributed]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("train_two_ranks");
  std::ofstream(dir / "tiny.toml") << kTinyConfig;
  const std::vector<std::string> shorter = {"--set", "train.tasks_per_update=2", "--set",
                                            "train.rl_updates=3"};
  const auto train = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", (dir / "tiny.toml").string(), "--runs-dir",
                                     (dir / name).string()};
    args.insert(args.end(), shorter.begin(), shorter.end());
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t pid = start_cli(args, dir / (name + ".log"));
    return finish(pid, std::chrono::seconds(180));
  };
  REQUIRE(train("one", {}) == 0);
  const int two = train("two", {"--gpus", "2", "--backend", "gloo"});
  INFO(read_if_present(dir / "two.log"));
  REQUIRE(two == 0);
  const fs::path a = only_run(dir / "one");
  const fs::path b = only_run(dir / "two");  // one run directory for both ranks
  CHECK(read_run_info(b / "run.json").status == RunStatus::completed);
  // Rank 0 wrote what one process writes; rank 1 only its evaluator log.
  std::set<std::string> expected = listing(a);
  expected.insert("evaluator.rank1.log");
  CHECK(listing(b) == expected);
  // Every step logged once, with the numbers of one process on the whole batch (the sums of two
  // ranks round differently: docs/distributed.md).
  const MetricsLog one = read_metrics(a / "metrics.jsonl");
  const MetricsLog ranks = read_metrics(b / "metrics.jsonl");
  REQUIRE(one.records.size() == ranks.records.size());
  for (std::size_t i = 0; i < one.records.size(); ++i) {
    CHECK(one.records[i].step == ranks.records[i].step);
    CHECK(one.records[i].stage == ranks.records[i].stage);
    REQUIRE(one.records[i].values.size() == ranks.records[i].values.size());
    for (std::size_t k = 0; k < one.records[i].values.size(); ++k) {
      const auto& [name, value] = one.records[i].values[k];
      if (name.rfind("perf/", 0) == 0) continue;
      INFO("step " << one.records[i].step << " " << name);
      CHECK(ranks.records[i].values[k].first == name);
      CHECK(ranks.records[i].values[k].second == Approx(value).epsilon(1e-4).margin(1e-6));
    }
  }
  // Rank 0 recorded both ranks' episodes, in one process's order, the same samples.
  const auto episodes_a = sparserl::env::read_trajectories(a / "trajectories.h5");
  const auto episodes_b = sparserl::env::read_trajectories(b / "trajectories.h5");
  REQUIRE(episodes_a.rows == 3 * 2 * 2);
  REQUIRE(episodes_b.rows == episodes_a.rows);
  for (std::size_t i = 0; i < episodes_a.episodes.size(); ++i) {
    CHECK(episodes_b.episodes[i].task.str() == episodes_a.episodes[i].task.str());
    CHECK(episodes_b.episodes[i].episode_index == episodes_a.episodes[i].episode_index);
    CHECK(episodes_b.episodes[i].tokens == episodes_a.episodes[i].tokens);
  }
  // A batch that does not split evenly is refused before anything runs, naming the key.
  CHECK(train("odd", {"--gpus", "2", "--backend", "gloo", "--set", "train.tasks_per_update=3"}) ==
        1);
  CHECK_THAT(read_if_present(dir / "odd.log"),
             has_substring("train.tasks_per_update = 3 does not divide by the world size 2"));
  CHECK_FALSE(fs::exists(dir / "odd"));
}

TEST_CASE("train.teacher_store: SFT takes the store's pairs where it covers a matrix",
          "[experiments][train]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("train_teacher_store");
  std::ofstream(dir / "tiny.toml") << kTinyConfig;
  // One recorded search of the first training matrix on a GPU: 2 us (best), 2.2 us, 5 us, a
  // wrong 2.1 us and a screened 1.9 us.
  const std::string uri = "gen-v1/diagonal?n=48";
  namespace kernels = sparserl::kernels;
  namespace datasets = sparserl::datasets;
  kernels::SearchResult r;
  r.task = {uri, datasets::Op::spmv, datasets::DType::f32, 1};
  r.features = datasets::compute_features(datasets::generate(datasets::MatrixUri::parse(uri)));
  r.device = "Some GPU";
  const auto add = [&](const std::string& id, const std::string& protocol, double us, bool ok) {
    kernels::CandidateResult c;
    c.point = kernels::DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, id);
    c.protocol = protocol;
    c.result.compiled = c.result.timed = true;
    c.result.correct = ok;
    c.result.timing.median_us = us;
    r.candidates.push_back(c);
  };
  const std::string best = "csr_vector lanes=2 block=128 unroll=1 vec=1 ldg=0";
  const std::string near = "csr_scalar block=128 unroll=1 ldg=0";
  add("ell block=128 unroll=1 ldg=0", "screen", 1.9, true);
  add(best, "full", 2.0, true);
  add(near, "full", 2.2, true);
  add("csr_merge block=128 items=5 steps=1", "full", 5.0, true);
  add("csr_scalar block=256 unroll=1 ldg=0", "full", 2.1, false);
  r.best = 1;
  kernels::MeasurementStore(dir / "store.jsonl", true).append(r);

  const auto sft = [&](const std::string& name, const std::string& store) {
    const pid_t pid = start_cli(
        {"train", (dir / "tiny.toml").string(), "--runs-dir", (dir / name).string(), "--set",
         R"(train.stages=["pretrain","sft"])", "--set", "train.teacher_store=" + store, "--set",
         "train.sft_per_task=3", "--set", "train.sft_within=0.8"},
        dir / (name + ".log"));
    return finish(pid, std::chrono::seconds(180));
  };
  REQUIRE(sft("stored", (dir / "store.jsonl").string()) == 0);
  const std::string log = read_if_present(dir / "stored.log");
  INFO(log);
  CHECK_THAT(log, has_substring("sft: 2 pairs from the measurement store " +
                                (dir / "store.jsonl").string() +
                                " for 1 of 4 training matrices (searched on Some GPU); the "
                                "template search takes the other 3"));
  CHECK_THAT(log, has_substring("pairs from the template search over 3 training matrices"));
  const fs::path run = only_run(dir / "stored");
  const Json saved = parse_json(read_if_present(run / "sft-pairs.json"), "sft-pairs.json");
  CHECK(saved.at("source") == "measurement store + template search");
  CHECK(saved.at("store_matrices") == 1);
  CHECK(saved.at("searched_matrices") == 3);
  std::vector<std::string> stored_programs;
  for (const Json& pair : saved.at("pairs")) {
    if (pair.at(0) == uri + " spmv f32") stored_programs.push_back(pair.at(1).get<std::string>());
  }
  const auto program = [](const std::string& id) {
    return kernels::render_program(
        kernels::DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, id));
  };
  CHECK(stored_programs == std::vector<std::string>{program(best), program(near)});

  // A store that is not there stops the stage, naming the key and the file.
  CHECK(sft("missing", (dir / "none.jsonl").string()) == 1);
  CHECK_THAT(
      read_if_present(dir / "missing.log"),
      has_substring("train.teacher_store: " + (dir / "none.jsonl").string() + ": no such file"));
}

TEST_CASE("sparserl quickstart runs end to end (shortened)", "[experiments][train]") {
  require_agents();
  (void)sparserl::testing::shared_matrices_dir();  // the quickstart's split; skips when absent
  const fs::path dir = sparserl::testing::scratch_dir("train_quickstart");
  // The real quickstart.toml with smaller budgets: every stage, the real data and paths.
  const pid_t pid = start_cli({"quickstart",
                               "--root",
                               sparserl::testing::source_dir().string(),
                               "--runs-dir",
                               (dir / "runs").string(),
                               "--set",
                               "train.pretrain_steps=2",
                               "--set",
                               "train.sft_steps=2",
                               "--set",
                               "train.rl_updates=1",
                               "--set",
                               "eval.max_tasks=1",
                               "--set",
                               "eval.samples=1",
                               "--set",
                               "data.max_tasks=2",
                               "--set",
                               "env.max_tokens=480",
                               "--set",
                               "report.plots=false"},
                              dir / "quickstart.log");
  const int code = finish(pid, std::chrono::seconds(240));
  const std::string log = read_if_present(dir / "quickstart.log");
  INFO(log);
  REQUIRE(code == 0);
  const fs::path run = only_run(dir / "runs");
  CHECK_THAT(log, has_substring("The quickstart's report: " + (run / "report.md").string()));
  CHECK_THAT(log, has_substring("no GPU: only the compile stage of the reward runs"));
  CHECK(read_run_info(run / "run.json").status == RunStatus::completed);
  const std::string report = read_if_present(run / "report.md");
  CHECK_THAT(report, has_substring("**completed**"));
  CHECK_THAT(report, has_substring("| grpo | 1 |"));
  const MetricsLog metrics = read_metrics(run / "metrics.jsonl");
  CHECK(metrics.records.back().stage == "eval");
  CHECK(metrics.records.back().step == 2 + 2 + 1);
  const std::string resolved = read_if_present(run / "config.resolved.toml");
  CHECK_THAT(resolved, has_substring("root = \"" + sparserl::testing::source_dir().string()));
  CHECK_THAT(resolved, has_substring("split = \"datasets/splits/shared-v1.split\""));
}

TEST_CASE("sparserl agent rl trains on generated matrices, alone or mixed into a list",
          "[experiments][train]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("agent_rl_generated");
  const std::string init = tiny_sft_policy(dir);
  const std::vector<std::string> common = {"agent",
                                           "rl",
                                           "--algorithm",
                                           "grpo",
                                           "--init",
                                           init,
                                           "--updates",
                                           "3",
                                           "--tasks-per-update",
                                           "2",
                                           "--samples",
                                           "2",
                                           "--device",
                                           "cpu",
                                           "--compile-only",
                                           "--compile-workers",
                                           "1",
                                           "--log-every",
                                           "3"};
  const auto rl = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--out", (dir / name).string(), "--trajectories",
                             (dir / (name + ".h5")).string()});
    args.insert(args.end(), extra.begin(), extra.end());
    return finish(start_cli(args, dir / (name + ".log")), std::chrono::seconds(120));
  };
  const auto uris = [&](const std::string& name) {
    std::vector<std::string> out;
    for (const auto& e : sparserl::env::read_trajectories(dir / (name + ".h5")).episodes)
      out.push_back(e.task.uri);
    return out;
  };

  SECTION("only generated matrices") {
    const int code = rl("alone", {"--generator", "gen-v1/banded?n=40&bandwidth=2&seed=9",
                                  "--generator", "gen-v1/uniform?rows=30&nnz_per_row=3"});
    INFO(read_if_present(dir / "alone.log"));
    REQUIRE(code == 0);
    const std::vector<std::string> seen = uris("alone");
    CHECK(seen.size() == 3 * 2 * 2);
    std::set<std::string> tasks(seen.begin(), seen.end());
    CHECK(tasks.size() == 6);  // a fresh matrix per task, shared by its group's 2 samples
    for (const std::string& uri : tasks) {
      CHECK(uri.rfind("gen-v1/", 0) == 0);
      CHECK_THAT(uri, has_substring("seed="));
      CHECK(uri.find("seed=9") == std::string::npos);  // the URI's own seed= is replaced
    }
  }
  SECTION("mixed into a --matrix list at --generated-share") {
    const int code =
        rl("mixed", {"--matrix", "gen-v1/diagonal?n=48", "--generator", "gen-v1/arrow?n=30&width=2",
                     "--generated-share", "0.5", "--updates", "8"});
    INFO(read_if_present(dir / "mixed.log"));
    REQUIRE(code == 0);
    CHECK_THAT(read_if_present(dir / "mixed.log"),
               has_substring("tasks: 1 task, shuffled; 50% generated from 1 generator"));
    int listed = 0, generated = 0;
    for (const std::string& uri : uris("mixed")) {
      if (uri == "gen-v1/diagonal?n=48")
        ++listed;
      else if (uri.rfind("gen-v1/arrow?", 0) == 0)
        ++generated;
    }
    CHECK(listed + generated == 8 * 2 * 2);
    CHECK(listed >= 4);  // 16 tasks at 0.5 each way: fewer than 2 of either has P < 0.1%
    CHECK(generated >= 4);
  }
  SECTION("SIGINT ends the stage at a step boundary with latest saved; the command resumes") {
    std::vector<std::string> args = common;
    const fs::path metrics = dir / "cut.jsonl";
    args.insert(args.end(), {"--out", (dir / "cut").string(), "--updates", "1000", "--metrics",
                             metrics.string(), "--log-every", "1", "--generator",
                             "gen-v1/uniform?rows=30&nnz_per_row=3"});
    const pid_t pid = start_cli(args, dir / "cut.log");
    const int code = interrupt_when(
        pid, [&] { return read_if_present(metrics).find("\"step\": 2,") != std::string::npos; });
    INFO(read_if_present(dir / "cut.log"));
    CHECK(code == 130);
    CHECK_THAT(read_if_present(dir / "cut.log"), has_substring("rl: stopped by SIGINT"));
    const MetricsLog cut = read_metrics(metrics);
    REQUIRE_FALSE(cut.records.empty());
    const std::string saved = read_if_present(dir / "cut" / "latest" / "checkpoint.txt");
    CHECK_THAT(saved, has_substring(
                          "counters.updates = " + std::to_string(cut.records.back().step) + "\n"));
    // The same command with a budget just past the stop resumes there and finishes.
    args[args.size() - 7] = std::to_string(cut.records.back().step + 1);  // --updates
    REQUIRE(finish(start_cli(args, dir / "resume.log"), std::chrono::seconds(60)) == 0);
    CHECK_THAT(read_if_present(dir / "resume.log"), has_substring("(resumed)"));
    CHECK(read_metrics(metrics).records.back().step == cut.records.back().step + 1);
  }
  SECTION("bad generator options are usage errors") {
    CHECK(rl("bad1", {"--generator", "suitesparse-v1/HB/west0067"}) == 2);
    CHECK_THAT(read_if_present(dir / "bad1.log"),
               has_substring("--generator: generated task source: "
                             "'suitesparse-v1/HB/west0067' is not"));
    CHECK(rl("bad2", {"--matrix", "gen-v1/diagonal?n=48", "--generated-share", "0.5"}) == 2);
    CHECK_THAT(read_if_present(dir / "bad2.log"),
               has_substring("--generated-share needs --generator"));
    CHECK(rl("bad3", {"--matrix", "gen-v1/diagonal?n=48", "--generator", "gen-v1/diagonal?n=9",
                      "--generated-share", "1.5"}) == 2);
    CHECK_THAT(read_if_present(dir / "bad3.log"),
               has_substring("--generated-share must be in (0, 1]"));
    CHECK(rl("bad4", {"--generator", "gen-v1/diagonal?n=9", "--generated-share", "0.5"}) == 2);
    CHECK_THAT(read_if_present(dir / "bad4.log"), has_substring("needs --split or --matrix"));
  }
}

TEST_CASE("sparserl bench compares several policies matrix by matrix (bench.policies)",
          "[experiments][train][bench]") {
  require_agents();
  const fs::path dir = sparserl::testing::scratch_dir("bench_policies");
  const std::string policy = tiny_sft_policy(dir);
  const auto bench = [&](const std::string& name, const std::string& policies) {
    return finish(
        start_cli({"bench", (dir / "tiny.toml").string(), "--runs-dir", (dir / name).string(),
                   "--set", R"(bench.agents=["template","sft"])", "--set",
                   "bench.sft_checkpoint=" + policy, "--set", "bench.policies=" + policies, "--set",
                   "bench.samples=2", "--set", "bench.template_budget=1"},
                  dir / (name + ".log")),
        std::chrono::seconds(180));
  };

  SECTION("every agent answers every matrix; one checkpoint twice answers the same programs") {
    const int code = bench("cmp", R"(["sft-again=)" + policy + R"("])");
    INFO(read_if_present(dir / "cmp.log"));
    REQUIRE(code == 0);
    CHECK_THAT(read_if_present(dir / "cmp.log"), has_substring("bench: 3 agents x 4 matrices"));
    const fs::path run = only_run(dir / "cmp");
    const std::vector<MatrixResult> rows = read_results_csv(run / "results.csv");
    REQUIRE(rows.size() == 3 * 4);
    // Agent-major rows, agents in table order, matrices in the same order for each.
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(rows[i].agent == std::vector<std::string>{"template", "sft", "sft-again"}[i / 4]);
      CHECK(rows[i].matrix == rows[i % 4].matrix);
      CHECK_FALSE(rows[i].tested);  // no GPU here: compile stage only
      CHECK(std::isnan(rows[i].best_speedup));
    }
    for (std::size_t m = 0; m < 4; ++m) {
      const MatrixResult& a = rows[4 + m];
      const MatrixResult& b = rows[8 + m];
      CHECK(a.samples == 2);
      CHECK(b.samples == 2);
      CHECK(a.samples_compiled == b.samples_compiled);
      if (a.compiled) CHECK(a.program.size() == 64);  // the answer's SHA-256
      CHECK(a.program == b.program);
      CHECK(a.compiled == b.compiled);
    }
    const std::string summary = read_if_present(run / "summary.csv");
    CHECK_THAT(summary, has_substring("sample_compile_rate"));
    CHECK_THAT(summary, has_substring("\nall,sft-again,4,0,"));
    // Compared with report.reference (sft): the same programs; no ratio without a GPU (and so no
    // oracle fraction or novelty of correct answers either).
    CHECK_THAT(summary, has_substring("speedup_vs_reference,answers_differing,"));
    CHECK_THAT(summary, has_substring(",,0,,\n"));  // sft-again: no ratio, 0 answers differ
    CHECK_THAT(read_if_present(run / "report.md"),
               has_substring("| sft-again | 4 | 0 | 0 / 0 | n/a |"));
    const std::vector<AgentSummary> s = summarize_results(rows);
    REQUIRE(s.size() == 3);
    CHECK(s[1].sample_compile_rate == s[2].sample_compile_rate);
    CHECK(std::isnan(s[0].sample_compile_rate));   // the template search answers once
    CHECK(std::isnan(s[1].geomean_best_speedup));  // nothing timed without a GPU
    CHECK_THAT(read_if_present(run / "report.md"), has_substring("| sft-again | 4 |"));
    // Novelty: the checkpoints' run recorded its corpus (24 sampled design-space programs for
    // pretraining, template-search pairs for SFT); the template search is measured against the
    // design space.
    const RunInfo info = read_run_info(run / "run.json");
    const Json& novelty = info.extra.at("novelty");
    CHECK(novelty.at("sft") ==
          "pretraining: 24 of the 216 design-space programs of spmv f32 (seed 3); SFT pairs: "
          "template-search programs, stood for by all 216 design-space programs of spmv f32");
    CHECK(novelty.at("sft-again") == novelty.at("sft"));
    CHECK(novelty.at("template") == "the design space of spmv f32 (216 programs)");
    const RunInfo trained =
        read_run_info(fs::path(policy).parent_path().parent_path() / "run.json");
    REQUIRE(trained.extra.contains("corpus"));
    CHECK(trained.extra.at("corpus").at("pretrain") == "design-space");
    CHECK(trained.extra.at("corpus").at("corpus_programs") == 24);
    for (const MatrixResult& r : rows) {
      CHECK_FALSE(r.novel.has_value());  // nothing is correct without a GPU
      if (!r.program.empty()) CHECK(std::isfinite(r.corpus_distance));
      if (r.agent == "template") CHECK(r.corpus_distance == 0);
    }
    // Every program of the two learned agents, answers and samples, is in trajectories.h5.
    const sparserl::env::TrajectoryFile t =
        sparserl::env::read_trajectories(run / "trajectories.h5");
    CHECK(t.info.created_by == "sparserl bench");
    REQUIRE(t.episodes.size() == 4 * 2 * (1 + 2));
    std::map<std::string, int> per_policy;
    std::map<std::string, std::string> greedy;  // "policy task" -> the answer's source
    for (const auto& e : t.episodes) {
      ++per_policy[e.policy_id];
      CHECK(e.terminated != e.truncated);
      CHECK(e.eval.has_value() == e.terminated);
      if (e.policy_id.ends_with(":greedy")) greedy[e.policy_id + " " + e.task.uri] = e.source;
    }
    CHECK(per_policy == std::map<std::string, int>{{"sft:greedy", 4},
                                                   {"sft:sampled", 8},
                                                   {"sft-again:greedy", 4},
                                                   {"sft-again:sampled", 8}});
    for (std::size_t m = 0; m < 4; ++m) {
      CHECK(greedy.at("sft:greedy " + rows[4 + m].matrix) ==
            greedy.at("sft-again:greedy " + rows[4 + m].matrix));
    }
  }
  SECTION("a bad entry is named before anything runs") {
    CHECK(bench("bad1", R"(["grpo=)" + policy + R"("])") == 1);
    CHECK_THAT(
        read_if_present(dir / "bad1.log"),
        has_substring("override 'bench.policies=[\"grpo=" + policy +
                      "\"]': element 0 'grpo=" + policy + "': 'grpo' is a bench.agents name"));
    CHECK(bench("bad2", R"(["seed2"])") == 1);
    CHECK_THAT(read_if_present(dir / "bad2.log"),
               has_substring("element 0 'seed2': not NAME=CHECKPOINT"));
    CHECK(bench("bad3", R"(["a=)" + policy + R"(", "a=)" + policy + R"("])") == 1);
    CHECK_THAT(read_if_present(dir / "bad3.log"), has_substring("the name 'a' is given twice"));
    const int missing = bench("bad4", R"(["seed2=)" + (dir / "nowhere").string() + R"("])");
    CHECK(missing == 1);
    CHECK_THAT(read_if_present(dir / "bad4.log"),
               has_substring("bench.policies[0] 'seed2=" + (dir / "nowhere").string() +
                             "': " + (dir / "nowhere").string() + " is not a policy checkpoint"));
  }
}

TEST_CASE("sparserl eval reads the test part only with --part test, and says so",
          "[experiments][train][eval]") {
  require_agents();
  const fs::path shared = sparserl::testing::shared_matrices_dir();
  const fs::path dir = sparserl::testing::scratch_dir("eval_test_part");
  const std::string policy = tiny_sft_policy(dir);
  const auto f = sparserl::testing::write_bench_split(dir / "project");
  std::ofstream(dir / "t2.toml") << sparserl::testing::bench_split_config(
      f, shared.string(), "[eval]\nsamples = 1\ntasks_per_batch = 4\n[agent]\ndevice = \"cpu\"\n");
  const auto eval = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"eval",         (dir / "t2.toml").string(),
                                     "--checkpoint", policy,
                                     "--runs-dir",   (dir / name).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return finish(start_cli(args, dir / (name + ".log")), std::chrono::seconds(180));
  };
  CHECK(eval("set", {"--set", "eval.part=test"}) == 1);
  CHECK_THAT(read_if_present(dir / "set.log"),
             has_substring("eval.part = \"test\": the test part is read only when the command "
                           "line says so - `sparserl eval CONFIG --part test`"));
  CHECK_FALSE(fs::exists(dir / "set"));

  const int code = eval("test", {"--part", "test"});
  INFO(read_if_present(dir / "test.log"));
  REQUIRE(code == 0);
  const fs::path run = only_run(dir / "test");
  const RunInfo info = read_run_info(run / "run.json");
  REQUIRE(info.split);
  CHECK(info.split->part == "test");
  CHECK(info.split->test_touched);
  CHECK(info.split->test_matrices == 3);
  CHECK_THAT(read_if_present(run / "report.md"),
             has_substring("Test part: 3 matrices of bench-t2 test read (--part test)."));
  // The policy's novelty is measured against the corpus its run recorded.
  CHECK_THAT(info.extra.at("novelty").at("sft").get<std::string>(),
             has_substring("pretraining: 24 of the 216 design-space programs of spmv f32"));
  const std::vector<MatrixResult> rows = read_results_csv(run / "results.csv");
  REQUIRE(rows.size() == 3);
  std::set<std::string> families;
  for (const MatrixResult& r : rows) {
    families.insert(r.family);
    CHECK(r.regime == "small");
    if (r.compiled) {
      CHECK(r.program.size() == 64);
      CHECK(std::isfinite(r.corpus_distance));
    }
  }
  CHECK(families == std::set<std::string>{"arrow", "stencil", "Gset"});
}
