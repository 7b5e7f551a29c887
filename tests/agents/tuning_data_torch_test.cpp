// The agents read their pretraining corpus and SFT pairs from the dataset.h5 that the template
// search writes: checked against the real writer (kernels::TuningDataset), not a hand-made file, so
// a change of layout on either side shows here.
#include "catch.hpp"
#include "sparserl/agents/tuning_data.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/tuning_output.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl;

kernels::CandidateResult candidate(const kernels::DesignSpace& space,
                                   const kernels::DesignPoint& point, bool correct) {
  kernels::CandidateResult c;
  c.point = point;
  c.program = space.render(point);
  c.protocol = "full";
  c.result.compiled = true;
  c.result.correct = correct;
  c.result.stage = correct ? reward::Stage::check : reward::Stage::compile;
  return c;
}

}  // namespace

TEST_CASE("the corpus and the SFT pairs are read from the tuning dataset", "[agents][data]") {
  const auto dir = sparserl::testing::scratch_dir("agents_tuning_data");
  const kernels::DesignSpace space(datasets::Op::spmv, datasets::DType::f32);
  const std::vector<kernels::DesignPoint> points = space.points();
  REQUIRE(points.size() >= 3);

  kernels::SearchResult first;
  first.task = datasets::Task::parse("gen-v1/diagonal?n=50 spmv f32");
  first.candidates = {candidate(space, points[0], true), candidate(space, points[1], true),
                      candidate(space, points[2], false)};
  first.best = 1;
  kernels::SearchResult second;
  second.task = datasets::Task::parse("gen-v1/stencil2d?nx=12 spmv f32");
  second.candidates = {candidate(space, points[0], true)};
  second.best = 0;
  kernels::SearchResult failed;  // nothing correct: no SFT pair
  failed.task = datasets::Task::parse("gen-v1/diagonal?n=7 spmv f32");
  failed.candidates = {candidate(space, points[2], false)};
  failed.best = 0;
  {
    kernels::TuningDataset dataset(dir / "dataset.h5", kernels::TuningRunInfo{});
    dataset.append(first);
    dataset.append(second);
    dataset.append(failed);
    dataset.close();
  }

  const std::vector<std::string> corpus = agents::read_corpus(dir / "dataset.h5");
  CHECK(corpus.size() == 2);  // points 0 and 1; the incorrect point 2 is not in the corpus
  CHECK(std::find(corpus.begin(), corpus.end(), space.render(points[0])) != corpus.end());
  CHECK(std::find(corpus.begin(), corpus.end(), space.render(points[1])) != corpus.end());
  CHECK(agents::read_corpus(dir / "dataset.h5", datasets::Op::spmm).empty());

  const std::vector<agents::SftPair> pairs = agents::read_sft_pairs(dir / "dataset.h5");
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].task.str() == first.task.str());
  CHECK(pairs[0].program == space.render(points[1]));
  CHECK(pairs[1].task.str() == second.task.str());
  CHECK(pairs[1].program == space.render(points[0]));

  CHECK_THROWS_WITH(agents::read_corpus(dir / "missing.h5"),
                    sparserl::testing::has_substring("missing.h5"));
}
