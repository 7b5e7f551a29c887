// The template search: exhaustive when the pruned space fits the budget, screening + finalists
// when it does not, every evaluation kept, the fastest correct finalist chosen, wrong answers never
// chosen, compile-only runs that rank nothing and say so; the cost model's candidate order; the
// template-search agent's per-task cache; and one real end-to-end search through the evaluator
// (compile-only here: the CPU machines have no GPU).
#include "sparserl/kernels/template_search.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "catch.hpp"
#include "fake_candidate_evaluator.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/kernels/cost_model.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "test_support.hpp"

using namespace sparserl;
using namespace sparserl::kernels;
using sparserl::testing::FakeEvaluator;
using sparserl::testing::has_substring;

namespace {

datasets::MatrixStore& store() {
  static datasets::MatrixStore s(sparserl::testing::scratch_dir("kernels_search_data"));
  return s;
}

const datasets::Task kTask{"gen-v1/uniform?rows=2000&nnz_per_row=9&seed=2", datasets::Op::spmv,
                           datasets::DType::f32, 1};

double fastest_time(const SearchResult& r, int round) {
  double best = 1e300;
  for (const CandidateResult& c : r.candidates) {
    if (c.round == round && c.result.correct) best = std::min(best, c.result.timing.median_us);
  }
  return best;
}

}  // namespace

TEST_CASE("a large space is screened cheaply and its finalists are measured in full",
          "[kernels][search]") {
  FakeEvaluator fake;
  kernels::SearchOptions options;
  options.budget = 10;
  options.finalists = 3;
  kernels::TemplateSearch search(fake, store(), options);
  const SearchResult r = search.search(kTask);
  REQUIRE(r.gpu);
  CHECK_FALSE(r.exhaustive);
  CHECK(r.pruned_size > 10);
  REQUIRE(r.candidates.size() == 13);
  int screened = 0, finals = 0;
  for (const CandidateResult& c : r.candidates) {
    if (c.round == 1) {
      ++screened;
      CHECK(c.protocol == "screen");
    } else {
      ++finals;
      CHECK(c.protocol == "full");
      CHECK(c.round == 2);
    }
  }
  CHECK(screened == 10);
  CHECK(finals == 3);
  REQUIRE(r.best.has_value());
  const CandidateResult& best = *r.best_candidate();
  CHECK(best.round == 2);
  // The three fastest screened designs go on, and the fastest of them wins.
  CHECK(best.result.timing.median_us == fastest_time(r, 1));
  CHECK(best.result.timing.median_us == fastest_time(r, 2));
  CHECK(r.best_program().rfind("// Design: " + best.point.id(), 0) == 0);
  CHECK(r.baseline_us() == 50.0);
  // Screening runs few repetitions, finalists the full protocol.
  for (const auto& [id, reps] : fake.calls) CHECK((reps == 10 || reps == 50));
  // Grouped by format: one batch per round.
  CHECK(fake.batches == 2);
  // The best of each design family is screened first: several generators were measured.
  std::set<std::string> generators;
  for (const CandidateResult& c : r.candidates) generators.insert(c.point.generator);
  CHECK(generators.size() >= 4);
}

TEST_CASE("refinement screens the fastest families' other points and finds a planted best",
          "[kernels][search]") {
  kernels::SearchOptions options;
  options.budget = 8;
  options.finalists = 2;
  FakeEvaluator probe;
  const SearchResult first = kernels::TemplateSearch(probe, store(), options).search(kTask);
  REQUIRE(first.best.has_value());
  const std::string family = first.best_candidate()->point.generator;
  std::set<std::string> measured;
  for (const CandidateResult& c : first.candidates) measured.insert(c.point.id());
  // A point of the winning family that the screen left out, planted fastest of all.
  const auto matrix = store().load(kTask.uri);
  const kernels::DesignSpace space(kTask.op, kTask.dtype);
  std::string planted;
  for (const DesignPoint& p : space.pruned(datasets::compute_features(*matrix), 1)) {
    if (p.generator == family && !measured.count(p.id())) planted = p.id();
  }
  REQUIRE_FALSE(planted.empty());
  const auto with_plant = [&](FakeEvaluator& fake) {
    fake.time = [planted](const std::string& id, const datasets::Task&) {
      return id == planted ? 1.0 : FakeEvaluator::time_of(id);
    };
  };
  FakeEvaluator without;
  with_plant(without);
  const SearchResult plain = kernels::TemplateSearch(without, store(), options).search(kTask);
  CHECK(plain.best_candidate()->point.id() == first.best_candidate()->point.id());
  CHECK(without.batches == 2);  // screening, finalists

  // Every unmeasured point of the two fastest families: the planted one among them, and it wins.
  options.refine = 1000;
  FakeEvaluator refined;
  with_plant(refined);
  const SearchResult r = kernels::TemplateSearch(refined, store(), options).search(kTask);
  CHECK(refined.batches == 3);  // screening, refinement, finalists
  REQUIRE(r.best.has_value());
  CHECK(r.best_candidate()->point.id() == planted);
  CHECK(r.best_candidate()->round == 2);
  std::set<std::string> families;
  for (const CandidateResult& c : r.candidates) {
    if (c.round == 1 && !measured.count(c.point.id())) families.insert(c.point.generator);
  }
  CHECK(families.count(family) == 1);
  CHECK(families.size() <= 2);

  // A small refinement: that many more screened points, the two families in turn.
  options.refine = 3;
  FakeEvaluator few;
  const SearchResult small = kernels::TemplateSearch(few, store(), options).search(kTask);
  std::vector<std::string> extra;
  for (const CandidateResult& c : small.candidates) {
    if (c.round == 1 && !measured.count(c.point.id())) extra.push_back(c.point.generator);
  }
  REQUIRE(extra.size() == 3);
  const std::set<std::string> two(extra.begin(), extra.end());
  CHECK(two.size() == 2);  // both families refined (each has more than one point left here)
  CHECK(std::count(extra.begin(), extra.end(), family) >= 1);
}

TEST_CASE("wrong answers are never chosen, even when fastest", "[kernels][search]") {
  FakeEvaluator probe;
  kernels::SearchOptions options;
  options.budget = 8;
  options.finalists = 2;
  const SearchResult first = kernels::TemplateSearch(probe, store(), options).search(kTask);
  const std::string winner = first.best_candidate()->point.id();

  FakeEvaluator fake;
  fake.wrong_in_full.insert(winner);  // passes screening, fails its full check
  const SearchResult r = kernels::TemplateSearch(fake, store(), options).search(kTask);
  REQUIRE(r.best.has_value());
  CHECK(r.best_candidate()->point.id() != winner);
  CHECK(r.best_candidate()->result.correct);
  bool kept = false;
  for (const CandidateResult& c : r.candidates) {
    kept |=
        c.point.id() == winner && c.round == 2 && c.result.error == reward::ErrorKind::wrong_answer;
  }
  CHECK(kept);  // the failed full run is part of the record
}

TEST_CASE("a space that fits the budget is measured exhaustively with the full protocol",
          "[kernels][search]") {
  FakeEvaluator fake;
  kernels::SearchOptions options;
  options.budget = 1000;
  const SearchResult r = kernels::TemplateSearch(fake, store(), options).search(kTask);
  CHECK(r.exhaustive);
  CHECK(static_cast<std::int64_t>(r.candidates.size()) == r.pruned_size);
  for (const CandidateResult& c : r.candidates) {
    CHECK(c.round == 1);
    CHECK(c.protocol == "full");
  }
  REQUIRE(r.best.has_value());
  CHECK(r.best_candidate()->result.timing.median_us == fastest_time(r, 1));
}

TEST_CASE("without a GPU the search compiles, ranks nothing and says so", "[kernels][search]") {
  FakeEvaluator fake;
  fake.gpu = false;
  kernels::SearchOptions options;
  options.budget = 6;
  const SearchResult r = kernels::TemplateSearch(fake, store(), options).search(kTask);
  CHECK_FALSE(r.gpu);
  CHECK(r.candidates.size() == 6);
  CHECK_THAT(r.note, has_substring("timing needs a GPU"));
  REQUIRE(r.best.has_value());
  CHECK(r.baseline_us() == 0.0);
  // The cost model's favourite: the lowest prediction among the compiled candidates.
  for (const CandidateResult& c : r.candidates) {
    CHECK(c.predicted_us >= r.best_candidate()->predicted_us);
    CHECK_FALSE(c.result.timed);
  }
}

TEST_CASE("the cost model prefers the designs that suit the matrix", "[kernels][search]") {
  const auto predicted_best = [](const std::string& uri) {
    const auto m = datasets::generate(datasets::MatrixUri::parse(uri));
    kernels::CostModel model(m, datasets::Op::spmv, datasets::DType::f32, 1);
    const kernels::DesignSpace space(datasets::Op::spmv, datasets::DType::f32);
    return kernels::choose_candidates(space.points(), model, 1).front().generator;
  };
  // One huge row: the load-balanced designs, never one thread or one group per row.
  const std::string huge = predicted_best("gen-v1/uniform?rows=20000&nnz_per_row=4&huge_row=20000");
  CHECK((huge == "csr_merge" || huge == "coo_segmented" || huge == "csr_binned" ||
         huge == "csr_split" || huge == "csr_segscan"));
  // Uniform short rows: a row-per-thread or row-per-group design.
  const std::string stencil = predicted_best("gen-v1/stencil2d?nx=300");
  CHECK((stencil == "csr_scalar" || stencil == "ell" || stencil == "csr_vector" ||
         stencil == "sell"));
  // A format that would pad tenfold is never a candidate.
  const auto m = datasets::generate(
      datasets::MatrixUri::parse("gen-v1/uniform?rows=5000&nnz_per_row=2&huge_row=3000"));
  kernels::CostModel model(m, datasets::Op::spmv, datasets::DType::f32, 1);
  const auto ell = kernels::DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32,
                                               "ell block=256 unroll=1 ldg=0");
  CHECK_FALSE(model.estimate(ell).feasible);
  CHECK_THAT(model.estimate(ell).why, has_substring("pads"));
}

TEST_CASE("a long row's time: the measured lane rate in DRAM, 4x that where the matrix fits L2",
          "[kernels][search]") {
  const auto longest = [](const std::string& uri, const char* design) {
    const auto m = datasets::generate(datasets::MatrixUri::parse(uri));
    kernels::CostModel model(m, datasets::Op::spmv, datasets::DType::f32, 1);
    return model.estimate(kernels::DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, design));
  };
  const char* scalar = "csr_scalar block=128 unroll=1 ldg=0";
  // 8M nonzeros, 80 MB with x: beyond the 50 MB L2, so each lane retires 0.0012 nonzeros a ns.
  const auto big = longest("gen-v1/uniform?rows=2000000&nnz_per_row=4&huge_row=3000", scalar);
  const auto small = longest("gen-v1/uniform?rows=20000&nnz_per_row=4&huge_row=3000", scalar);
  CHECK(big.longest_row_us == Approx(3000 / 1.2).epsilon(0.01));
  CHECK(small.longest_row_us == Approx(3000 / 4.8).epsilon(0.01));
  CHECK(big.us >= big.longest_row_us);
  // csr_split puts rows of up to SPLIT_ROW on a warp and splits the longer ones over warps.
  const auto split = longest("gen-v1/uniform?rows=2000000&nnz_per_row=4&huge_row=3000",
                             "csr_split lanes=1 split=2048");
  CHECK(split.longest_row_us == Approx(2048 / (32 * 1.2)).epsilon(0.01));
}

TEST_CASE("the template-search agent searches each task once", "[kernels][search][agent]") {
  FakeEvaluator fake;
  kernels::SearchOptions options;
  options.budget = 5;
  options.finalists = 2;
  kernels::TemplateSearchAgent agent(fake, store(), options);
  CHECK(agent.name() == "template_search");
  CHECK(agent.result(kTask) == nullptr);
  const std::string program = agent.act(kTask);
  const std::size_t calls = fake.calls.size();
  CHECK(agent.act(kTask) == program);
  CHECK(fake.calls.size() == calls);
  REQUIRE(agent.result(kTask) != nullptr);
  CHECK(agent.result(kTask)->best_program() == program);
  datasets::Task other = kTask;
  other.dtype = datasets::DType::f64;
  CHECK(agent.act(other) != program);  // another task, another search (f64 programs differ)
  CHECK(fake.calls.size() > calls);

  FakeEvaluator broken;
  const kernels::DesignSpace space(datasets::Op::spmv, datasets::DType::f32);
  for (const auto& p : space.points()) broken.wrong.insert(p.id());
  broken.gpu = true;
  kernels::TemplateSearchAgent hopeless(broken, store(), options);
  CHECK_THROWS_WITH(hopeless.act(kTask), has_substring("no design-space program"));
}

TEST_CASE("a search runs end to end through the evaluator (compile-only without a GPU)",
          "[kernels][search][evaluator]") {
  reward::EvaluatorConfig config;
  config.worker_path = SPARSERL_WORKER_PATH;
  config.gpu_workers = 0;
  config.compile_workers = 2;
  config.log = [](std::string_view) {};
  reward::Evaluator evaluator(config);
  kernels::EvaluatorBackend backend(evaluator);
  CHECK_FALSE(backend.gpu_available());
  kernels::SearchOptions options;
  options.budget = 4;
  const datasets::Task task{"gen-v1/banded?n=3000&bandwidth=3&seed=1", datasets::Op::spmm,
                            datasets::DType::f64, 8};
  const SearchResult r = kernels::TemplateSearch(backend, store(), options).search(task);
  CHECK_FALSE(r.gpu);
  REQUIRE(r.candidates.size() == 4);
  for (const CandidateResult& c : r.candidates) {
    INFO(c.point.id() << ": " << c.result.message);
    CHECK(c.result.compiled);
    CHECK(c.result.error == reward::ErrorKind::none);
    CHECK_FALSE(c.result.gpu_available);
    CHECK(c.result.compile.arch == "sm_90");
  }
  REQUIRE(r.best.has_value());
  CHECK_THAT(r.note, has_substring("compile-only"));
}

namespace {

// FakeEvaluator behind a lock, holding each batch a while so that searches on several threads
// overlap, and counting how many batches were in flight at once.
class SharedFake : public kernels::CandidateEvaluator {
 public:
  FakeEvaluator fake;
  int in_flight = 0, most_in_flight = 0;

  bool gpu_available() override { return fake.gpu; }
  std::string device() override { return fake.device(); }
  std::vector<reward::EvalResult> evaluate(const datasets::Task& task,
                                           const std::vector<std::string>& programs,
                                           const reward::GpuProtocol& protocol) override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      most_in_flight = std::max(most_in_flight, ++in_flight);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const std::lock_guard<std::mutex> lock(mutex_);
    --in_flight;
    return fake.evaluate(task, programs, protocol);
  }

 private:
  std::mutex mutex_;
};

}  // namespace

TEST_CASE("search_all searches several tasks at once and answers in the tasks' order",
          "[kernels][search]") {
  const std::vector<datasets::Task> tasks = {
      {"gen-v1/uniform?rows=2000&nnz_per_row=9&seed=2", datasets::Op::spmv, datasets::DType::f32, 1},
      {"gen-v1/uniform?rows=1500&nnz_per_row=4&seed=3", datasets::Op::spmv, datasets::DType::f32, 1},
      {"gen-v1/banded?n=3000&bandwidth=5", datasets::Op::spmv, datasets::DType::f32, 1},
      {"gen-v1/uniform?rows=1000&nnz_per_row=16&seed=4", datasets::Op::spmv, datasets::DType::f64, 1}};
  kernels::SearchOptions options;
  options.budget = 6;
  options.finalists = 2;
  SharedFake one, several;
  std::vector<std::string> done;
  const std::vector<SearchResult> a = kernels::TemplateSearch(one, store(), options).search_all(tasks, 1);
  const std::vector<SearchResult> b = kernels::TemplateSearch(several, store(), options)
                                          .search_all(tasks, 3, [&](const SearchResult& r) {
                                            done.push_back(r.task.str());
                                          });
  CHECK(one.most_in_flight == 1);
  CHECK(several.most_in_flight >= 2);  // several searches' batches at once
  REQUIRE(a.size() == tasks.size());
  REQUIRE(b.size() == tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    INFO(tasks[i].str());
    CHECK(b[i].task.str() == tasks[i].str());
    // The fake's times depend on the design alone: the same choices either way.
    CHECK(b[i].best_program() == a[i].best_program());
    CHECK(b[i].candidates.size() == a[i].candidates.size());
  }
  CHECK(std::set<std::string>(done.begin(), done.end()).size() == tasks.size());
  // A search that fails stops the rest and its error comes back.
  const std::vector<datasets::Task> broken = {tasks[0], {"gen-v1/nosuch?x=1", datasets::Op::spmv,
                                                         datasets::DType::f32, 1}, tasks[1]};
  SharedFake third;
  CHECK_THROWS(kernels::TemplateSearch(third, store(), options).search_all(broken, 2));
}
