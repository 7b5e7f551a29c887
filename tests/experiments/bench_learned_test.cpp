// `sparserl bench` with issue 25's learned template search, compile stage only here: the template
// agent fits its learned cost model on bench.template_measurements (the store is read, never
// written), says so in the log, and its rows carry the search's wall time (results.csv
// search_seconds); a store with nothing usable leaves the analytic model in charge.
#include <filesystem>
#include <sstream>

#include "catch.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/experiments/config.hpp"
#include "sparserl/experiments/results.hpp"
#include "sparserl/experiments/runner.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace ex = sparserl::experiments;
namespace kernels = sparserl::kernels;
namespace datasets = sparserl::datasets;
using sparserl::testing::has_substring;

namespace {

const char* kUri = "gen-v1/uniform?rows=300&nnz_per_row=5&seed=3";

// A store holding one finished search of kUri with one correct, timed candidate on `device`.
void write_store(const fs::path& file, const std::string& device) {
  kernels::SearchResult r;
  r.task = {kUri, datasets::Op::spmv, datasets::DType::f32, 1};
  r.features = datasets::compute_features(datasets::generate(datasets::MatrixUri::parse(kUri)));
  r.device = device;
  kernels::CandidateResult c;
  c.point = kernels::DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32,
                                        "csr_segscan slabs=16");
  c.protocol = "full";
  c.predicted_us = 4;
  c.result.compiled = c.result.correct = c.result.timed = true;
  c.result.timing.median_us = 2;
  r.candidates.push_back(c);
  r.best = 0;
  kernels::MeasurementStore(file, true).append(r);
}

ex::RunOutcome bench(const fs::path& root, const fs::path& store, std::ostringstream& log) {
  ex::RunnerOptions options;
  options.runs_dir = root / "runs";
  options.root = sparserl::testing::source_dir();
  options.log = &log;
  const ex::Config config = ex::Config::parse(
      "[experiment]\nname = \"learned\"\n[evaluator]\ncompile_only = true\n"
      "[bench]\nagents = [\"template\"]\ntemplate_budget = 2\noracle = \"off\"\n"
      "record_trajectories = false\ntemplate_measurements = \"" +
          store.string() + "\"\n[data]\nuris = [\"" + kUri + "\", \"gen-v1/diagonal?n=40\"]\n",
      "learned.toml");
  return ex::run_bench(config, options);
}

}  // namespace

TEST_CASE("the bench's template search uses a measurement store read-only and times itself",
          "[experiments][bench][learned]") {
  const fs::path root = sparserl::testing::scratch_dir("bench_learned");
  const fs::path store = root / "measurements.jsonl";
  write_store(store, "Some GPU");
  const auto size_before = fs::file_size(store);
  std::ostringstream log;
  const ex::RunOutcome outcome = bench(root, store, log);
  INFO(log.str());
  REQUIRE(outcome.status == ex::RunStatus::completed);
  // No GPU here: the model takes every device's measurements.
  CHECK_THAT(log.str(), has_substring("bench: template search with learned (1 measurements of 1 "
                                      "matrices, every device)"));
  CHECK(fs::file_size(store) == size_before);  // never written
  const auto rows = ex::read_results_csv(outcome.run_dir / "results.csv");
  REQUIRE(rows.size() == 2);
  for (const ex::MatrixResult& row : rows) {
    CHECK(row.agent == "template");
    CHECK(row.search_seconds > 0);
    CHECK_FALSE(row.design.empty());  // the search's answer (compile-only: the model's favourite)
  }
}

TEST_CASE("a measurement store without usable measurements leaves the analytic model in charge",
          "[experiments][bench][learned]") {
  const fs::path root = sparserl::testing::scratch_dir("bench_learned_empty");
  const fs::path store = root / "measurements.jsonl";
  kernels::MeasurementStore(store, true);  // the header alone
  std::ostringstream log;
  const ex::RunOutcome outcome = bench(root, store, log);
  INFO(log.str());
  REQUIRE(outcome.status == ex::RunStatus::completed);
  CHECK_THAT(log.str(), has_substring("learned (0 measurements of 0 matrices, every device)"));
  CHECK_THAT(log.str(), has_substring("none usable here, the analytic model chooses"));
}
