// The learned side of the template search (issue 25), with synthetic measurements and a fake
// evaluator: the measurement store's round trip, its versioning and its refusal of malformed files
// (naming file and line); the learned cost model recovering planted relationships, falling back to
// the analytic prior where nothing was measured, ignoring other devices, and fitting the same model
// from the records in any order; familiarity and the budget by the matrix; and the search that,
// fed measurements in which one design is planted fastest, screens that design first, finds it
// with a smaller budget, halves its candidates round by round, and does the same twice.
#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include "catch.hpp"
#include "fake_candidate_evaluator.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/kernels/cost_model.hpp"
#include "sparserl/kernels/learned_cost_model.hpp"
#include "sparserl/kernels/measurement_store.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "test_support.hpp"

using namespace sparserl;
using namespace sparserl::kernels;
using sparserl::testing::FakeEvaluator;
using sparserl::testing::has_substring;
namespace fs = std::filesystem;

namespace {

datasets::MatrixStore& store() {
  static datasets::MatrixStore s(sparserl::testing::scratch_dir("kernels_learned_data"));
  return s;
}

datasets::MatrixFeatures features_of(const std::string& uri) {
  static std::map<std::string, datasets::MatrixFeatures> cache;
  auto it = cache.find(uri);
  if (it == cache.end()) {
    it = cache.emplace(uri, datasets::compute_features(*store().load(uri))).first;
  }
  return it->second;
}

// Uniform rows (low Gini) and power-law rows (high Gini) of several sizes and seeds.
std::string uniform_uri(int i) {
  return "gen-v1/uniform?rows=" + std::to_string(2000 + 500 * i) +
         "&nnz_per_row=" + std::to_string(6 + i % 3) + "&seed=" + std::to_string(10 + i);
}
std::string power_uri(int i) {
  return "gen-v1/lognormal?rows=" + std::to_string(2000 + 500 * i) +
         "&median=6&sigma=1.4&seed=" + std::to_string(40 + i);
}

// A measurement of `design` on the matrix `uri`, timed `factor` x base(m).
Measurement planted(const std::string& uri, const std::string& design, double factor,
                    const std::string& device = "Fake GPU", const std::string& protocol = "full") {
  Measurement m;
  m.uri = uri;
  m.features = features_of(uri);
  m.design = design;
  m.generator = design.substr(0, design.find(' '));
  m.protocol = protocol;
  m.device = device;
  m.compiled = m.correct = m.timed = true;
  m.error = "none";
  m.median_us = factor * LearnedCostModel::base_us(m.features, DType::f32, 1);
  m.p10_us = m.p90_us = m.median_us;
  m.baseline_us = 50;
  m.predicted_us = 2 * LearnedCostModel::base_us(m.features, DType::f32, 1);
  return m;
}

const std::string kA = "csr_vector lanes=8 block=256 unroll=1 vec=1 ldg=1";
const std::string kB = "csr_segscan slabs=16";

// A planted relationship: design A runs at 0.5 x base on uniform rows and 4 x on power-law rows,
// design B at 1.5 x everywhere.
std::vector<Measurement> planted_measurements() {
  std::vector<Measurement> out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(planted(uniform_uri(i), kA, 0.5));
    out.push_back(planted(uniform_uri(i), kB, 1.5));
    out.push_back(planted(power_uri(i), kA, 4.0));
    out.push_back(planted(power_uri(i), kB, 1.5));
  }
  return out;
}

DesignPoint point(const std::string& id) { return DesignPoint::parse(Op::spmv, DType::f32, id); }

fs::path store_file(const std::string& name) {
  return sparserl::testing::scratch_dir("kernels_measurements_" + name) / "measurements.jsonl";
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file, std::ios::binary);
  for (const std::string& l : lines) out << l << '\n';
}

const char* kHeader = R"({"format":"sparserl-measurements","format_version":1})";

}  // namespace

TEST_CASE("the measurement store keeps every candidate and search across runs",
          "[kernels][measurements]") {
  const fs::path file = store_file("round_trip");
  FakeEvaluator fake;
  SearchOptions options;
  options.budget = 6;
  options.finalists = 2;
  const datasets::Task task{uniform_uri(0), Op::spmv, DType::f32, 1};
  const SearchResult result = TemplateSearch(fake, store(), options).search(task);
  {
    MeasurementStore created(file, true, "a test");
    CHECK(created.measurements().empty());
    CHECK_FALSE(created.searched(task, "Fake GPU"));
    created.append(result);
    CHECK(created.searched(task, "Fake GPU"));
  }
  const MeasurementStore again(file, false);
  REQUIRE(again.measurements().size() == result.candidates.size());
  REQUIRE(again.searches().size() == 1);
  CHECK(again.searched(task, "Fake GPU"));
  CHECK_FALSE(again.searched(task, "Another GPU"));
  const Measurement& m = again.measurements().front();
  const CandidateResult& c = result.candidates.front();
  CHECK(m.uri == task.uri);
  CHECK(m.design == c.point.id());
  CHECK(m.generator == c.point.generator);
  CHECK(m.protocol == c.protocol);
  CHECK(m.round == c.round);
  CHECK(m.device == "Fake GPU");
  CHECK(m.correct);
  CHECK(m.median_us == c.result.timing.median_us);
  CHECK(m.baseline_algorithm == "COO_ALG1");
  CHECK(m.predicted_us == c.predicted_us);
  CHECK(m.features.nnz == result.features.nnz);
  CHECK(m.features.row_nnz_gini == result.features.row_nnz_gini);
  const SearchRecord& s = again.searches().front();
  CHECK(s.best_design == result.best_candidate()->point.id());
  CHECK(s.budget == 6);
  CHECK(s.evaluations == static_cast<int>(result.candidates.size()));
  CHECK(s.wall_seconds == result.wall_seconds);
  CHECK(s.strategy == "analytic");
  // A second run appends; the header stays the first line.
  MeasurementStore appended(file, true);
  appended.append(result);
  CHECK(MeasurementStore(file, false).measurements().size() == 2 * result.candidates.size());
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  CHECK_THAT(first, has_substring("\"format_version\":1"));
}

TEST_CASE("the measurement store refuses what it cannot read, naming file and line",
          "[kernels][measurements]") {
  const fs::path file = store_file("refusals");
  const std::string name = file.string();
  CHECK_THROWS_WITH(MeasurementStore(file, false),
                    has_substring(name + ": no such measurement store"));
  write_lines(file, {R"({"format":"sparserl-measurements","format_version":2})"});
  CHECK_THROWS_WITH(
      MeasurementStore(file, false),
      has_substring(name + ":1: format_version 2 is not supported (this build reads 1)"));
  write_lines(file, {R"({"format":"something-else","format_version":1})"});
  CHECK_THROWS_WITH(MeasurementStore(file, true),
                    has_substring(name + ":1: not a measurement store"));
  write_lines(file, {kHeader, R"({"kind":"search","uri":"gen-v1/diagonal?n=3")", "{}"});
  CHECK_THROWS_WITH(MeasurementStore(file, false), has_substring(name + ":2: not a JSON line"));
  write_lines(file, {kHeader, R"({"kind":"rumour"})"});
  CHECK_THROWS_WITH(MeasurementStore(file, false),
                    has_substring(name + ":2: unknown record kind \"rumour\""));
  write_lines(file, {kHeader, R"({"kind":"search","uri":"gen-v1/diagonal?n=3","op":"spmv"})"});
  CHECK_THROWS_WITH(MeasurementStore(file, false),
                    has_substring(name + ":2: missing field \"dtype\""));
  write_lines(file, {kHeader, R"({"kind":"search","uri":"u","op":"spmx","dtype":"f32"})"});
  CHECK_THROWS_WITH(MeasurementStore(file, false),
                    has_substring(name + ":2: \"op\" must be spmv or spmm"));
  write_lines(file, {kHeader, "[1, 2]"});
  CHECK_THROWS_WITH(MeasurementStore(file, false), has_substring(name + ":2: not a JSON object"));
  write_lines(file, {});
  CHECK_THROWS_WITH(MeasurementStore(file, false), has_substring(name + ":1: empty file"));
  {
    std::ofstream out(file, std::ios::binary);
    out << kHeader << "\n{\"kind\":\"search\"";  // cut off mid-line
  }
  CHECK_THROWS_WITH(MeasurementStore(file, false),
                    has_substring(name + ":2: the last line has no line end"));
  // A candidate whose features lack a field.
  FakeEvaluator fake;
  SearchOptions options;
  options.budget = 2;
  const SearchResult r =
      TemplateSearch(fake, store(), options).search({uniform_uri(1), Op::spmv, DType::f32, 1});
  fs::remove(file);
  MeasurementStore(file, true).append(r);
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  in.close();
  const std::size_t at = lines[1].find("\"row_nnz_gini\"");
  REQUIRE(at != std::string::npos);
  lines[1].replace(at, 14, "\"row_nnz_ginx\"");
  write_lines(file, lines);
  CHECK_THROWS_WITH(MeasurementStore(file, false),
                    has_substring(name + ":2: features: missing field \"row_nnz_gini\""));
}

TEST_CASE("the learned cost model recovers a planted relationship", "[kernels][learned]") {
  const LearnedCostModel model(planted_measurements(), "Fake GPU");
  CHECK(model.size() == 24);
  CHECK(model.matrices() == 12);
  CHECK_THAT(model.describe(), has_substring("24 measurements of 12 matrices, Fake GPU"));
  // New matrices of each kind, not among the measured ones, with the analytic model's prior as
  // the records had it (2 x base).
  const auto uniform = features_of(uniform_uri(9));
  const auto power = features_of(power_uri(9));
  const double base_uniform = LearnedCostModel::base_us(uniform, DType::f32, 1);
  const double base_power = LearnedCostModel::base_us(power, DType::f32, 1);
  const auto a_uniform = model.predict(point(kA), uniform, 1, 2 * base_uniform);
  const auto b_uniform = model.predict(point(kB), uniform, 1, 2 * base_uniform);
  const auto a_power = model.predict(point(kA), power, 1, 2 * base_power);
  const auto b_power = model.predict(point(kB), power, 1, 2 * base_power);
  INFO("weights " << a_uniform.weight << " " << a_power.weight);
  CHECK(a_uniform.us < b_uniform.us);
  CHECK(a_power.us > b_power.us);
  // Within 35% of the planted factors once several measurements lie near (the weight says so).
  CHECK(a_uniform.weight > 3);
  CHECK(a_power.weight > 3);
  CHECK(a_uniform.us / base_uniform == Approx(0.5).epsilon(0.35));
  CHECK(b_uniform.us / base_uniform == Approx(1.5).epsilon(0.35));
  CHECK(a_power.us / base_power == Approx(4.0).epsilon(0.35));
  CHECK(b_power.us / base_power == Approx(1.5).epsilon(0.35));
  // A prior far off is pulled toward the data, never past it: the measurements weigh W, the
  // prior 2.
  const auto far_prior = model.predict(point(kA), uniform, 1, 1000);
  CHECK(far_prior.us < 1000);
  CHECK(far_prior.us > a_uniform.us);
  // A design never measured, of a generator never measured: the analytic prior itself. One of a
  // measured generator: the prior corrected by the generator's analytic error nearby (csr_vector
  // ran at 0.5 x base on uniform rows where the analytic model said 2 x: the prior comes down).
  const auto unmeasured =
      model.predict(point("csr_scalar block=128 unroll=1 ldg=0"), uniform, 1, 80);
  CHECK(unmeasured.weight == 0);
  CHECK(unmeasured.us == Approx(80).epsilon(1e-9));
  const auto sibling =
      model.predict(point("csr_vector lanes=4 block=256 unroll=1 vec=1 ldg=1"), uniform, 1, 80);
  CHECK(sibling.weight == 0);
  CHECK(sibling.us < 80);
}

TEST_CASE("the learned cost model is deterministic and per device", "[kernels][learned]") {
  std::vector<Measurement> records = planted_measurements();
  const LearnedCostModel model(records, "Fake GPU");
  std::mt19937 rng(5);
  std::shuffle(records.begin(), records.end(), rng);
  const LearnedCostModel shuffled(records, "Fake GPU");
  const auto f = features_of(power_uri(7));
  for (const std::string& id : {kA, kB}) {
    CHECK(model.predict(point(id), f, 1, 100).us == shuffled.predict(point(id), f, 1, 100).us);
  }
  CHECK(model.familiarity(f, Op::spmv, DType::f32, 1) ==
        shuffled.familiarity(f, Op::spmv, DType::f32, 1));
  // Another device's measurements are not used; "" takes every device.
  std::vector<Measurement> other;
  for (Measurement m : planted_measurements()) {
    m.device = "Other GPU";
    other.push_back(m);
  }
  CHECK(LearnedCostModel(other, "Fake GPU").size() == 0);
  CHECK(LearnedCostModel(other, "").size() == 24);
  // A full-protocol measurement outweighs screening runs of the same design and matrix.
  std::vector<Measurement> mixed = {planted(uniform_uri(0), kA, 0.5),
                                    planted(uniform_uri(0), kA, 5.0, "Fake GPU", "screen")};
  const LearnedCostModel full_first(mixed, "Fake GPU");
  CHECK(full_first.size() == 1);
  std::reverse(mixed.begin(), mixed.end());
  const auto g = features_of(uniform_uri(0));
  CHECK(LearnedCostModel(mixed, "Fake GPU").predict(point(kA), g, 1, 10).us ==
        full_first.predict(point(kA), g, 1, 10).us);
}

TEST_CASE("familiarity and the budget by the matrix", "[kernels][learned]") {
  const LearnedCostModel model(planted_measurements(), "Fake GPU");
  const auto near = features_of(uniform_uri(9));
  const auto far = datasets::compute_features(
      datasets::generate(datasets::MatrixUri::parse("gen-v1/stencil3d?nx=12&points=27")));
  const double familiar = model.familiarity(near, Op::spmv, DType::f32, 1);
  const double novel = model.familiarity(far, Op::spmv, DType::f32, 1);
  CHECK(familiar > 3);
  CHECK(novel < 0.5);
  CHECK(model.familiarity(near, Op::spmv, DType::f64, 1) == 0);  // nothing measured in f64
  const std::vector<DesignPoint> points = {point(kA), point(kB)};
  const std::vector<LearnedPrediction> decisive = {{.us = 10, .weight = 5},
                                                   {.us = 30, .weight = 5}};
  const std::vector<LearnedPrediction> close = {{.us = 10, .weight = 5}, {.us = 11, .weight = 5}};
  const std::vector<LearnedPrediction> unsure = {{.us = 10, .weight = 0.5},
                                                 {.us = 30, .weight = 5}};
  CHECK(model.budget_for(16, 4, familiar, points, decisive) == 8);
  CHECK(model.budget_for(16, 4, familiar, points, close) == 16);
  CHECK(model.budget_for(16, 4, familiar, points, unsure) == 16);
  CHECK(model.budget_for(16, 4, novel, points, decisive) == 24);
  CHECK(model.budget_for(8, 4, familiar, points, decisive) == 6);  // never below finalists + 2
}

namespace {

const datasets::Task kSearchTask{power_uri(8), Op::spmv, DType::f32, 1};

// The planted best: the point the analytic model ranks last on the search's matrix, so that a
// search that only has the analytic model measures it last.
const std::string& planted_id() {
  static const std::string id = [] {
    const auto matrix = store().load(kSearchTask.uri);
    CostModel analytic(*matrix, Op::spmv, DType::f32, 1);
    const DesignSpace space(Op::spmv, DType::f32);
    return choose_candidates(space.pruned(analytic.features()), analytic, 0).back().id();
  }();
  return id;
}

// The fake GPU of the search tests: every design's time is base(m) x a hash factor in [1, 3),
// except the planted design, 0.2 x base on every matrix.
FakeEvaluator planted_fake() {
  FakeEvaluator fake;
  fake.time = [](const std::string& id, const datasets::Task& task) {
    const double base = LearnedCostModel::base_us(features_of(task.uri), task.dtype, 1);
    if (id == planted_id()) return 0.2 * base;
    return base * (1.0 + (FakeEvaluator::time_of(id) - 10.0) / 50.0);
  };
  return fake;
}

// Measurements of exhaustive searches on power-law training matrices, in a fresh store.
std::shared_ptr<const LearnedCostModel> trained_model() {
  const fs::path file = store_file("trained");
  fs::remove(file);
  MeasurementStore measurements(file, true);
  FakeEvaluator fake = planted_fake();
  SearchOptions options;
  options.budget = 1000;
  TemplateSearch search(fake, store(), options);
  for (int i = 0; i < 5; ++i)
    measurements.append(search.search({power_uri(i), Op::spmv, DType::f32, 1}));
  return std::make_shared<LearnedCostModel>(measurements.measurements(), "Fake GPU");
}

}  // namespace

TEST_CASE("a search with the learned model screens the planted best first with a smaller budget",
          "[kernels][learned][search]") {
  const auto model = trained_model();
  const datasets::Task& task = kSearchTask;
  INFO("planted: " << planted_id());
  const auto planted_prior = model->predict(point(planted_id()), features_of(task.uri), 1, 1.0);
  REQUIRE(planted_prior.weight > 2);  // the training searches measured it
  FakeEvaluator fake = planted_fake();
  SearchOptions options;
  options.budget = 10;
  options.finalists = 2;
  options.model = model;
  const SearchResult r = TemplateSearch(fake, store(), options).search(task);
  REQUIRE(r.best.has_value());
  CHECK(r.best_candidate()->point.id() == planted_id());
  CHECK(r.familiarity > 3);
  CHECK(r.budget == 5);  // familiar, confident and decisive: half the budget
  CHECK_THAT(r.strategy, has_substring("learned ("));
  CHECK_THAT(r.strategy, has_substring("budget 5"));
  CHECK(r.wall_seconds > 0);
  // The planted point has the smallest learned prediction of every screened candidate.
  double planted_prediction = 0;
  double others = 1e300;
  int screened = 0;
  for (const CandidateResult& c : r.candidates) {
    if (c.round != 1) continue;
    ++screened;
    CHECK(std::isfinite(c.learned_us));
    if (c.point.id() == planted_id()) {
      planted_prediction = c.learned_us;
    } else {
      others = std::min(others, c.learned_us);
    }
  }
  CHECK(screened == 5);
  REQUIRE(planted_prediction > 0);
  CHECK(planted_prediction < others);
  // Without the model the same budget does not find it (the analytic model ranks it last).
  FakeEvaluator plain = planted_fake();
  options.model = nullptr;
  options.budget = 5;
  const SearchResult analytic = TemplateSearch(plain, store(), options).search(task);
  CHECK(analytic.strategy == "analytic");
  CHECK(analytic.best_candidate()->point.id() != planted_id());
  // The same search twice: the same candidates in the same order.
  options.model = model;
  options.budget = 10;
  FakeEvaluator again = planted_fake();
  const SearchResult repeat = TemplateSearch(again, store(), options).search(task);
  REQUIRE(repeat.candidates.size() == r.candidates.size());
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    CHECK(repeat.candidates[i].point == r.candidates[i].point);
    CHECK(repeat.candidates[i].learned_us == r.candidates[i].learned_us);
  }
}

TEST_CASE("successive halving screens the better half again until 2 x finalists remain",
          "[kernels][search]") {
  FakeEvaluator fake;
  SearchOptions options;
  options.budget = 16;
  options.finalists = 2;
  options.halving = true;
  const datasets::Task task{"gen-v1/uniform?rows=2000&nnz_per_row=9&seed=2", Op::spmv, DType::f32,
                            1};
  const SearchResult r = TemplateSearch(fake, store(), options).search(task);
  std::map<int, int> per_round;
  std::map<int, int> runs;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    ++per_round[r.candidates[i].round];
  }
  for (const auto& [id, reps] : fake.calls) ++runs[reps];
  // 16 screened (10 runs), 8 again (20 runs), 4 again (40 runs), 2 finalists (full: 50 runs).
  CHECK(per_round == std::map<int, int>{{1, 16}, {2, 8}, {3, 4}, {4, 2}});
  CHECK(runs == std::map<int, int>{{10, 16}, {20, 8}, {40, 4}, {50, 2}});
  REQUIRE(r.best.has_value());
  CHECK(r.best_candidate()->round == 4);
  CHECK(r.best_candidate()->protocol == "full");
  // Each halving round keeps the fastest of the one before.
  double fastest_screened = 1e300;
  for (const CandidateResult& c : r.candidates) {
    if (c.round == 1) fastest_screened = std::min(fastest_screened, c.result.timing.median_us);
  }
  CHECK(r.best_candidate()->result.timing.median_us == fastest_screened);
}
