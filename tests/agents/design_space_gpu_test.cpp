// Every design-space point computes the right answer on the GPU, as the evaluator judges it (fresh
// random inputs, NaN-filled outputs, guard zones, the fp64 reference): all points of SpMV and SpMM
// (K = 8 and K = 5, the latter exercising the scalar column path of the vector tiles) in f32 and
// f64 on generated matrices with empty rows, one huge row, a single column and a power-law
// pattern; the designs of issue 25, csr_nnzsplit and coo_tiled also on matrices that reach every
// path of theirs (rows past each split threshold, dense rows and columns, long runs of empty rows;
// SpMM K = 8, 32, 5), csr_nnzsplit and coo_tiled also where rows end at their tile and slab edges
// and on power-law rows; and the representative subset (one point per generator and code path) on
// every shared SuiteSparse matrix, and every SpMV point on four of them. Each case skips itself
// where the evaluator sees no GPU. Failures are listed together (design, matrix, error kind,
// message) so one run shows every broken design. SPARSERL_KERNELS_SEQUENTIAL=1 evaluates one
// program at a time instead of compiling a batch concurrently (to tell an evaluator race from a
// broken design).
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "catch.hpp"
#include "sparserl/datasets/suitesparse_index.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/evaluator_backend.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "test_support.hpp"

using namespace sparserl;
using kernels::DesignPoint;
using kernels::DesignSpace;

namespace {

// The shared matrices folder when it exists (no skip: the generated-matrix cases run without it).
std::filesystem::path shared_matrices() {
  std::filesystem::path dir = std::filesystem::path(SPARSERL_TEST_SHARED_DIR) / "matrices";
  if (const char* env = std::getenv("SPARSERL_SHARED_DIR"); env != nullptr && *env != '\0') {
    dir = std::filesystem::path(env) / "matrices";
  }
  return std::filesystem::exists(dir / "INDEX.csv") ? dir : std::filesystem::path();
}

// One evaluator for the whole executable (its workers start once).
reward::Evaluator& shared_evaluator() {
  static reward::Evaluator instance([] {
    reward::EvaluatorConfig c;
    c.worker_path = SPARSERL_WORKER_PATH;
    c.data_dir = sparserl::testing::scratch_dir("kernels_gpu_data");
    if (const auto shared = shared_matrices(); !shared.empty()) c.index_dirs.push_back(shared);
    c.result_cache_entries = 0;
    return c;
  }());
  return instance;
}

kernels::EvaluatorBackend& evaluator() {
  // SPARSERL_KERNELS_SEQUENTIAL=1: one evaluation at a time (to tell evaluator races apart).
  static kernels::EvaluatorBackend backend(shared_evaluator(),
                                           std::getenv("SPARSERL_KERNELS_SEQUENTIAL") == nullptr);
  return backend;
}

void require_gpu() {
  if (!evaluator().gpu_available()) sparserl::testing::skip("no GPU");
}

// A check-only protocol: two fresh inputs plus the timed-run recheck is what the evaluator does;
// without timing it checks the inputs alone.
reward::GpuProtocol check_only() {
  reward::GpuProtocol p;
  p.seed = 11;
  p.random_inputs = 2;
  p.warmup_runs = 1;
  p.timed_runs = 1;
  p.time = false;
  return p;
}

// The points a case evaluated and one line per point that was not correct; report() prints them
// all and fails the case when there is one.
struct CorrectnessTally {
  std::vector<std::string> failures;
  std::size_t evaluated = 0;

  // Evaluates the points on the task.
  void check(const datasets::Task& task, const std::vector<DesignPoint>& points) {
    std::vector<std::string> programs;
    for (const DesignPoint& p : points) programs.push_back(kernels::render_program(p));
    const auto results = evaluator().evaluate(task, programs, check_only());
    for (std::size_t i = 0; i < points.size(); ++i) {
      const reward::EvalResult& r = results[i];
      if (r.correct) continue;
      // A format the evaluator refuses as too large for this matrix is not a wrong program.
      if (r.error == reward::ErrorKind::resource_limit) continue;
      std::ostringstream line;
      line << task.str() << " | " << points[i].id() << " | " << reward::to_string(r.error) << " | "
           << r.message.substr(0, 300);
      failures.push_back(line.str());
    }
    evaluated += points.size();
  }

  void report() const {
    for (const std::string& l : failures) std::cout << "FAIL " << l << "\n";
    std::cout << evaluated << " evaluations, " << failures.size() << " not correct\n";
    CHECK(failures.empty());
  }
};

const std::vector<std::string> kAwkwardMatrices = {
    "gen-v1/uniform?rows=3000&cols=2000&nnz_per_row=7&empty_rows=0.3&huge_row=1900&seed=5",
    "gen-v1/column?n=4097",
    "gen-v1/rmat?scale=12&edge_factor=8&seed=3",
    "gen-v1/stencil2d?nx=61&ny=37&points=9",
    "gen-v1/blockdiag?blocks=301&block_size=3",
    "gen-v1/diagonal?n=1",
};

// Matrices that reach every path of the issue-25 designs (csr_split, csr_segscan, spmm_csr_split)
// and of csr_nnzsplit and coo_tiled: rows past each split threshold, dense rows and columns, a
// single long row, runs of empty rows longer than 32 rows per 32 nonzeros, a row exactly as long
// as a chunk.
const std::vector<std::string> kSplitMatrices = {
    "gen-v1/arrow?n=3000&width=2",
    "gen-v1/uniform?rows=20000&cols=20000&nnz_per_row=3&huge_row=15000&seed=6",
    "gen-v1/uniform?rows=5000&cols=100&nnz_per_row=1&empty_rows=0.9&seed=7",
    "gen-v1/uniform?rows=1&cols=5000&nnz_per_row=5000",
    "gen-v1/uniform?rows=600&cols=600&nnz_per_row=2&huge_row=512&seed=8",
};

// csr_nnzsplit's tile and slab edges: every row ends at a slab (32 entries) or tile (64) boundary;
// power-law rows (log-normal, Pareto); a skewed R-MAT without permutation (long runs of empty
// rows, which its head-flag loop jumps over).
const std::vector<std::string> kNnzSplitMatrices = {
    "gen-v1/uniform?rows=300&cols=400&nnz_per_row=32&seed=2",
    "gen-v1/uniform?rows=100&cols=400&nnz_per_row=64&seed=2",
    "gen-v1/lognormal?rows=4000&median=8&sigma=1.5",
    "gen-v1/lp?rows=3000&alpha=1.2",
    "gen-v1/rmat?a=0.65&b=0.15&c=0.15&edge_factor=8&scale=14&seed=5",
};

std::vector<DesignPoint> issue25_points(const DesignSpace& space) {
  std::vector<DesignPoint> out;
  for (const DesignPoint& p : space.points()) {
    if (p.generator == "csr_split" || p.generator == "csr_segscan" ||
        p.generator == "spmm_csr_split" || p.generator == "csr_nnzsplit" ||
        p.generator == "coo_tiled") {
      out.push_back(p);
    }
  }
  return out;
}

std::vector<std::string> shared_uris() {
  const auto dir = shared_matrices();
  if (dir.empty()) sparserl::testing::skip("no shared matrices");
  datasets::StoreOptions options;
  options.indexes = {dir};
  datasets::MatrixStore store(dir, options);
  return store.indexed_uris();
}

}  // namespace

TEST_CASE("every SpMV design point is correct on awkward generated matrices", "[kernels][gpu]") {
  require_gpu();
  CorrectnessTally tally;
  for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
    const DesignSpace space(datasets::Op::spmv, dtype);
    for (const std::string& uri : kAwkwardMatrices) {
      const datasets::Task task{uri, datasets::Op::spmv, dtype, 1};
      tally.check(task, space.points());
    }
  }
  tally.report();
}

TEST_CASE("every SpMM design point is correct on awkward generated matrices", "[kernels][gpu]") {
  require_gpu();
  CorrectnessTally tally;
  for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
    const DesignSpace space(datasets::Op::spmm, dtype);
    for (std::int64_t k : {8, 5}) {
      for (const std::string& uri : kAwkwardMatrices) {
        const datasets::Task task{uri, datasets::Op::spmm, dtype, static_cast<datasets::Index>(k)};
        tally.check(task, space.points());
      }
    }
  }
  tally.report();
}

TEST_CASE("every issue-25 design point is correct on matrices with long rows and empty-row runs",
          "[kernels][gpu]") {
  require_gpu();
  CorrectnessTally tally;
  for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
    const auto spmv = issue25_points(DesignSpace(datasets::Op::spmv, dtype));
    const auto spmm = issue25_points(DesignSpace(datasets::Op::spmm, dtype));
    for (const std::string& uri : kSplitMatrices) {
      tally.check({uri, datasets::Op::spmv, dtype, 1}, spmv);
      for (datasets::Index k : {8, 32, 5}) tally.check({uri, datasets::Op::spmm, dtype, k}, spmm);
    }
  }
  tally.report();
}

TEST_CASE(
    "every csr_nnzsplit and coo_tiled point is correct where rows end at its tile and slab edges",
    "[kernels][gpu]") {
  require_gpu();
  CorrectnessTally tally;
  for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
    const DesignSpace space(datasets::Op::spmv, dtype);
    std::vector<DesignPoint> points;
    for (const DesignPoint& p : space.points()) {
      if (p.generator == "csr_nnzsplit" || p.generator == "coo_tiled") points.push_back(p);
    }
    REQUIRE(points.size() == 8 + 10);
    for (const std::string& uri : kNnzSplitMatrices) {
      tally.check({uri, datasets::Op::spmv, dtype, 1}, points);
    }
  }
  tally.report();
}

TEST_CASE("the representative design points are correct on every shared SuiteSparse matrix",
          "[kernels][gpu]") {
  require_gpu();
  const auto uris = shared_uris();
  CorrectnessTally tally;
  for (const std::string& uri : uris) {
    for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
      tally.check({uri, datasets::Op::spmv, dtype, 1},
                  DesignSpace(datasets::Op::spmv, dtype).representatives());
      tally.check({uri, datasets::Op::spmm, dtype, 8},
                  DesignSpace(datasets::Op::spmm, dtype).representatives());
    }
  }
  tally.report();
}

TEST_CASE("every SpMV design point is correct on a few shared SuiteSparse matrices",
          "[kernels][gpu]") {
  require_gpu();
  auto uris = shared_uris();
  if (uris.size() > 4) uris.resize(4);
  CorrectnessTally tally;
  for (const std::string& uri : uris) {
    for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
      const DesignSpace space(datasets::Op::spmv, dtype);
      tally.check({uri, datasets::Op::spmv, dtype, 1}, space.points());
    }
  }
  tally.report();
}
