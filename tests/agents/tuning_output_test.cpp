// The tuning outputs: the HDF5 dataset read back with the plain HDF5 C API (what h5py sees: one
// 1-D dataset per column, all of one length, text as variable-length UTF-8), its SFT rows (the best
// correct program per task, or near-best ones ranked after it) and its deduplicated corpus; the
// CSV rows; the summary's two regimes; file names of best programs; and docs/design-space.md
// naming every column.
#include "sparserl/kernels/tuning_output.hpp"

#include <hdf5.h>

#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "test_support.hpp"

using namespace sparserl;
using kernels::CandidateResult;
using kernels::SearchResult;
using sparserl::testing::has_substring;

namespace {

CandidateResult candidate(const std::string& id, bool correct, double us, int round = 1) {
  CandidateResult c;
  c.point = kernels::DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, id);
  c.program = kernels::render_program(c.point);
  c.round = round;
  c.protocol = round == 1 ? "screen" : "full";
  c.predicted_us = us * 1.5;
  c.result.compiled = true;
  c.result.gpu_available = true;
  if (correct) {
    c.result.correct = c.result.timed = true;
    c.result.stage = reward::Stage::time;
    c.result.timing.median_us = us;
    c.result.timing.baseline_median_us = 40;
    c.result.timing.baseline_algorithm = "CSR_ALG1";
    c.result.timing.speedup = 40 / us;
    c.result.timing.bandwidth_fraction = 0.7;
  } else {
    c.result.stage = reward::Stage::check;
    c.result.error = reward::ErrorKind::wrong_answer;
    c.result.message = "3 of 100 outputs are outside the tolerance, \"first\" in row 7\nmore";
  }
  return c;
}

SearchResult result(const std::string& uri, std::int64_t nnz, std::vector<CandidateResult> cands,
                    std::optional<std::size_t> best) {
  SearchResult r;
  r.task = {uri, datasets::Op::spmv, datasets::DType::f32, 1};
  r.features.rows = 100;
  r.features.cols = 100;
  r.features.nnz = nnz;
  r.gpu = true;
  r.candidates = std::move(cands);
  r.best = best;
  return r;
}

struct H5File {
  hid_t id;
  explicit H5File(const std::filesystem::path& p)
      : id(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
  ~H5File() {
    if (id >= 0) H5Fclose(id);
  }
};

std::int64_t length(hid_t file, const std::string& path) {
  const hid_t ds = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
  if (ds < 0) return -1;
  const hid_t space = H5Dget_space(ds);
  hsize_t dims = 0, maxdims = 0;
  H5Sget_simple_extent_dims(space, &dims, &maxdims);
  H5Sclose(space);
  H5Dclose(ds);
  CHECK(maxdims == H5S_UNLIMITED);
  return static_cast<std::int64_t>(dims);
}

std::vector<std::string> strings(hid_t file, const std::string& path) {
  const hid_t ds = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
  REQUIRE(ds >= 0);
  const hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  std::vector<char*> raw(n, nullptr);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  if (n > 0) REQUIRE(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) >= 0);
  std::vector<std::string> out;
  for (char* s : raw) out.emplace_back(s ? s : "");
  if (n > 0) H5Dvlen_reclaim(type, space, H5P_DEFAULT, raw.data());
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(ds);
  return out;
}

// A numeric column read as `memory_type` (H5T_NATIVE_INT64, H5T_NATIVE_DOUBLE).
template <typename T>
std::vector<T> numbers(hid_t file, const std::string& path, hid_t memory_type) {
  const hid_t ds = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
  REQUIRE(ds >= 0);
  const hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  std::vector<T> out(n);
  if (n > 0) REQUIRE(H5Dread(ds, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0);
  H5Sclose(space);
  H5Dclose(ds);
  return out;
}

std::vector<std::int64_t> integers(hid_t file, const std::string& path) {
  return numbers<std::int64_t>(file, path, H5T_NATIVE_INT64);
}

std::vector<double> reals(hid_t file, const std::string& path) {
  return numbers<double>(file, path, H5T_NATIVE_DOUBLE);
}

const std::string kScalar = "csr_scalar block=256 unroll=4 ldg=1";
const std::string kVector = "csr_vector lanes=8 block=256 unroll=1 vec=1 ldg=1";
const std::string kMerge = "csr_merge block=256 items=7 steps=4";

}  // namespace

TEST_CASE("the HDF5 dataset holds every candidate, the SFT pairs and the deduplicated corpus",
          "[kernels][tuning][hdf5]") {
  const auto dir = sparserl::testing::scratch_dir("kernels_tuning_h5");
  kernels::TuningRunInfo info{"sparserl tune --test", "Fake GPU", "2026-01-01T00:00:00Z", "p", 7};
  {
    kernels::TuningDataset ds(dir / "dataset.h5", info);
    // Task 1: the vector design wins its full round; the scalar one answered wrong.
    ds.append(result("suitesparse-v1/HB/west0067", 299,
                     {candidate(kScalar, false, 0), candidate(kVector, true, 20),
                      candidate(kMerge, true, 30), candidate(kVector, true, 19, 2)},
                     3));
    // Task 2: nothing correct (no SFT row).
    ds.append(result("gen-v1/diagonal?n=5", 5, {candidate(kScalar, false, 0)}, std::nullopt));
    // Task 3: the same vector program is correct again (the corpus counts it twice).
    ds.append(result("gen-v1/stencil2d?nx=30", 4380, {candidate(kVector, true, 8)}, 0));
    CHECK(ds.candidate_rows() == 6);
    CHECK(ds.sft_rows() == 2);
    ds.close();
    CHECK(ds.corpus_rows() == 2);
  }
  H5File f(dir / "dataset.h5");
  REQUIRE(f.id >= 0);
  for (const std::string& c : kernels::candidate_columns()) {
    INFO(c);
    CHECK(length(f.id, "candidates/" + c) == 6);
  }
  for (const std::string& c : kernels::sft_columns()) CHECK(length(f.id, "sft/" + c) == 2);
  for (const std::string& c : kernels::corpus_columns()) CHECK(length(f.id, "corpus/" + c) == 2);

  const auto design = strings(f.id, "candidates/design_id");
  CHECK(design[0] == kScalar);
  CHECK(design[3] == kVector);
  const auto best = integers(f.id, "candidates/best");
  CHECK(best == std::vector<std::int64_t>{0, 0, 0, 1, 0, 1});
  const auto round = integers(f.id, "candidates/round");
  CHECK(round[3] == 2);
  const auto median = reals(f.id, "candidates/median_us");
  CHECK(std::isnan(median[0]));
  CHECK(median[3] == Approx(19));
  const auto programs = strings(f.id, "candidates/program");
  CHECK(programs[1] == kernels::render_program(kernels::DesignPoint::parse(
                           datasets::Op::spmv, datasets::DType::f32, kVector)));
  CHECK_THAT(strings(f.id, "candidates/message")[0], has_substring("\"first\" in row 7"));

  const auto sft_task = strings(f.id, "sft/task");
  CHECK(sft_task == std::vector<std::string>{"suitesparse-v1/HB/west0067 spmv f32",
                                             "gen-v1/stencil2d?nx=30 spmv f32"});
  CHECK(strings(f.id, "sft/program")[0] == programs[3]);
  CHECK(integers(f.id, "sft/candidate_row") == std::vector<std::int64_t>{3, 5});
  CHECK(reals(f.id, "sft/speedup")[0] == Approx(40.0 / 19));

  const auto corpus_design = strings(f.id, "corpus/design_id");
  CHECK(corpus_design == std::vector<std::string>{kVector, kMerge});
  CHECK(integers(f.id, "corpus/tasks") == std::vector<std::int64_t>{2, 1});
  CHECK(integers(f.id, "corpus/best_of") == std::vector<std::int64_t>{2, 0});

  CHECK_THROWS_WITH(kernels::TuningDataset("/nonexistent-folder/x.h5", info),
                    has_substring("/nonexistent-folder/x.h5"));
}

// Full-protocol finalists: vector 19 us (best), merge 20 us, scalar 25 us, and vector again at
// 19.5 us (the same text); a screened scalar variant at 18 us is not comparable (other protocol).
SearchResult spread_result() {
  const std::string kScalar128 = "csr_scalar block=128 unroll=4 ldg=1";
  return result("suitesparse-v1/HB/west0067", 299,
                {candidate(kScalar128, true, 18), candidate(kVector, true, 21),
                 candidate(kVector, true, 19, 2), candidate(kScalar, true, 25, 2),
                 candidate(kMerge, true, 20, 2), candidate(kVector, true, 19.5, 2)},
                2);
}

TEST_CASE("more SFT pairs per task: near-best distinct programs timed like the best, ranked",
          "[kernels][tuning][hdf5]") {
  const SearchResult r = spread_result();
  using Picks = std::vector<std::size_t>;
  CHECK(kernels::sft_candidates(r, {}) == Picks{2});                    // the best alone
  CHECK(kernels::sft_candidates(r, {3, 0.9}) == Picks{2, 4});           // 25 us > 19 / 0.9
  CHECK(kernels::sft_candidates(r, {4, 0.7}) == Picks{2, 4, 3});        // by time, text once
  CHECK(kernels::sft_candidates(r, {2, 0.7}) == Picks{2, 4});           // at most per_task
  SearchResult wrong = r;
  wrong.candidates[2].result.correct = false;
  CHECK(kernels::sft_candidates(wrong, {3, 0.9}).empty());  // no correct best: no pairs
  SearchResult untimed = r;
  for (auto& c : untimed.candidates) c.result.timed = false;
  CHECK(kernels::sft_candidates(untimed, {3, 0.5}) == Picks{2});  // compile-only: the best

  const auto dir = sparserl::testing::scratch_dir("kernels_tuning_sft_spread");
  kernels::TuningRunInfo info{"sparserl tune --test", "Fake GPU", "2026-01-01T00:00:00Z", "p", 7};
  {
    kernels::TuningDataset ds(dir / "dataset.h5", info, {4, 0.7});
    ds.append(r);
    CHECK(ds.sft_rows() == 3);
  }
  H5File f(dir / "dataset.h5");
  REQUIRE(f.id >= 0);
  CHECK(integers(f.id, "sft/rank") == std::vector<std::int64_t>{0, 1, 2});
  CHECK(integers(f.id, "sft/candidate_row") == std::vector<std::int64_t>{2, 4, 3});
  CHECK(strings(f.id, "sft/design_id") == std::vector<std::string>{kVector, kMerge, kScalar});
  CHECK(reals(f.id, "sft/median_us") == std::vector<double>{19, 20, 25});
  for (const kernels::SftSelection bad : {kernels::SftSelection{0, 0.9},
                                          kernels::SftSelection{2, 0},
                                          kernels::SftSelection{2, 1.5}}) {
    CHECK_THROWS_WITH(kernels::TuningDataset(dir / "bad.h5", info, bad),
                      has_substring("SFT selection"));
  }
}

TEST_CASE("a measurement store's search gives the SFT pairs the live search chose",
          "[kernels][tuning][measurements]") {
  SearchResult r = spread_result();
  r.device = "Fake GPU";
  const auto dir = sparserl::testing::scratch_dir("kernels_tuning_stored_pairs");
  const auto file = dir / "measurements.jsonl";
  kernels::MeasurementStore(file, true).append(r);
  const kernels::MeasurementStore store(file, false);
  for (const kernels::SftSelection selection :
       {kernels::SftSelection{1, 0.9}, {3, 0.9}, {4, 0.7}, {2, 0.7}, {4, 1.0}}) {
    INFO("per_task " << selection.per_task << " within " << selection.within);
    std::vector<std::string> designs, programs;
    for (std::size_t i : kernels::sft_candidates(r, selection)) {
      designs.push_back(r.candidates[i].point.id());
      programs.push_back(r.candidates[i].program);
    }
    const auto stored = kernels::stored_sft_pairs(store, r.task, selection);
    REQUIRE(stored);
    CHECK(stored->device == "Fake GPU");
    CHECK(stored->designs == designs);
    CHECK(stored->programs == programs);
    CHECK(stored->median_us.front() == 19);  // the best's full run, not its screening
  }
  CHECK(kernels::stored_sft_pairs(store, r.task, {3, 0.7})->designs.size() == 3);
  // Only the task's searches, on the device asked for.
  CHECK_FALSE(kernels::stored_sft_pairs(store, r.task, {}, "Another GPU"));
  CHECK(kernels::stored_sft_pairs(store, r.task, {}, "Fake GPU"));
  datasets::Task other = r.task;
  other.dtype = datasets::DType::f64;
  CHECK_FALSE(kernels::stored_sft_pairs(store, other, {}));

  // An incorrect best gives the task no pair (it is covered: the search is not run again).
  SearchResult wrong = spread_result();
  wrong.device = "Fake GPU";
  wrong.candidates[2].result.correct = false;
  const auto wrong_file = dir / "wrong.jsonl";
  kernels::MeasurementStore(wrong_file, true).append(wrong);
  const auto none =
      kernels::stored_sft_pairs(kernels::MeasurementStore(wrong_file, false), wrong.task, {3, 0.9});
  REQUIRE(none);
  CHECK(none->designs.empty());

  // A store made by another version of the design space: the design it cannot render is named.
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string edited = text.str();
  for (std::size_t at = edited.find(kMerge); at != std::string::npos; at = edited.find(kMerge)) {
    edited.replace(at, kMerge.size(), "csr_quantum block=256 items=7 steps=4");
  }
  const auto stale = dir / "stale.jsonl";
  std::ofstream(stale) << edited;
  CHECK_THROWS_WITH(
      kernels::stored_sft_pairs(kernels::MeasurementStore(stale, false), r.task, {3, 0.9}),
      has_substring(stale.string() + ": suitesparse-v1/HB/west0067 spmv f32: design "
                                     "\"csr_quantum block=256 items=7 steps=4\" is not in this "
                                     "build's design space"));
}

TEST_CASE("candidates.csv has one quoted row per evaluation", "[kernels][tuning]") {
  const SearchResult r = result("suitesparse-v1/HB/west0067", 299,
                                {candidate(kScalar, false, 0), candidate(kVector, true, 20)}, 1);
  const std::string header = kernels::candidates_csv_header();
  const std::string rows = kernels::candidates_csv_rows(r);
  std::istringstream lines(rows);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) ++n;
  CHECK(n == 2);
  CHECK(header.rfind("task,uri,op,dtype,k,nnz,design_id", 0) == 0);
  CHECK_THAT(rows, has_substring(
                       "\"3 of 100 outputs are outside the tolerance, \"\"first\"\" in row 7\""));
  CHECK_THAT(rows, has_substring(",wrong_answer,"));
  CHECK_THAT(rows, has_substring(kVector + ",csr_vector,csr,1,screen,1,1,1,none,20.000,"));
}

TEST_CASE("the summary reports the two regimes apart", "[kernels][tuning]") {
  std::vector<kernels::TaskSummary> tasks;
  tasks.push_back(kernels::summarize(
      result("suitesparse-v1/HB/west0067", 299, {candidate(kVector, true, 20)}, 0)));  // 2x
  tasks.push_back(kernels::summarize(
      result("gen-v1/stencil2d?nx=1000", 4'996'000, {candidate(kVector, true, 80)}, 0)));  // 0.5x
  tasks.push_back(kernels::summarize(
      result("gen-v1/banded?n=1000000", 3'000'000, {candidate(kVector, true, 20)}, 0)));  // 2x
  int n = 0;
  CHECK(kernels::geomean_speedup(tasks, true, &n) == Approx(2.0));
  CHECK(n == 1);
  CHECK(kernels::geomean_speedup(tasks, false, &n) == Approx(1.0));
  CHECK(n == 2);
  const std::string md = kernels::summary_markdown(tasks, {"cmd", "Fake GPU", "t", "p", 4});
  CHECK_THAT(md, has_substring("large (>= 200k nonzeros): geomean speedup 1.000x over 2 tasks, 1 "
                               "faster than cuSPARSE, slowest 0.500x"));
  CHECK_THAT(md, has_substring("small (< 200k nonzeros, launch-bound): geomean speedup 2.000x"));
  CHECK_THAT(md, has_substring("| gen-v1/stencil2d?nx=1000 | spmv | f32 | 1 | 4996000 | 40.00 | "
                               "80.00 | 0.50x | 70% | `" +
                               kVector + "` | 1 | 1 |"));
  // The search's wall time and cuSPARSE's path beside each result.
  CHECK_THAT(md, has_substring("| search s | cuSPARSE path |"));
  tasks[0].search_seconds = 12.3;
  tasks[0].baseline_algorithm = "COO_ALG1";
  CHECK_THAT(kernels::summary_markdown(tasks, {"cmd", "Fake GPU", "t", "p", 4}),
             has_substring("| 1 | 1 | 12.3 | COO_ALG1 |"));
  const std::string cpu = kernels::summary_markdown(tasks, {"cmd", "", "t", "p", 4});
  CHECK_THAT(cpu, has_substring("Timing needs a GPU"));
}

TEST_CASE("best programs get file names from their tasks", "[kernels][tuning]") {
  CHECK(kernels::best_program_file_name({"suitesparse-v1/HB/west0067", datasets::Op::spmv,
                                         datasets::DType::f32, 1}) == "west0067.spmv.f32.cu");
  CHECK(kernels::best_program_file_name(
            {"gen-v1/rmat?scale=20&seed=1", datasets::Op::spmm, datasets::DType::f64, 32}) ==
        "rmat_scale_20_seed_1.spmm.f64.k32.cu");
}

TEST_CASE("docs/design-space.md names every dataset column and every generator",
          "[kernels][tuning][docs]") {
  std::ifstream in(sparserl::testing::source_dir() / "docs" / "design-space.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for (const auto* columns :
       {&kernels::candidate_columns(), &kernels::sft_columns(), &kernels::corpus_columns()}) {
    for (const std::string& c : *columns) {
      INFO(c);
      CHECK_THAT(doc, has_substring("| `" + c + "` |"));
    }
  }
  for (const auto& g : kernels::generators()) {
    INFO(g.name);
    CHECK_THAT(doc, has_substring("`" + g.name + "`"));
  }
}
