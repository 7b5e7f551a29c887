// The design space: every point of every (op, dtype) renders a program that passes the evaluator's
// static checks and resolves its launch geometry on awkward matrices (empty, single column, one
// huge row, dense rows and columns, a single row); the representative subset (one point per
// generator and code path) compiles with NVRTC for f32 and f64; ids are unique, parse back and are
// pinned, and the earlier generators' programs byte for byte; sampling is deterministic; pruning
// keeps the general designs.
#include "sparserl/kernels/design_space.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>

#include "catch.hpp"
#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/generators.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/static_checks.hpp"
#include "test_support.hpp"

using namespace sparserl;
using namespace sparserl::kernels;
using sparserl::testing::has_substring;

namespace {

datasets::SparseMatrix generated(const std::string& uri) {
  return datasets::generate(datasets::MatrixUri::parse(uri));
}

// Rows of every shape the formats care about: empty rows, a long row, rows at the last column.
datasets::SparseMatrix awkward_matrix() {
  return generated(
      "gen-v1/uniform?rows=300&cols=200&nnz_per_row=5&empty_rows=0.2&huge_row=150&seed=4");
}

std::vector<datasets::SparseMatrix> geometry_matrices() {
  std::vector<datasets::SparseMatrix> out;
  out.push_back(datasets::SparseMatrix());         // 0 x 0
  out.push_back(generated("gen-v1/column?n=50"));  // a single column
  out.push_back(awkward_matrix());
  out.push_back(generated("gen-v1/blockdiag?blocks=20&block_size=4"));
  out.push_back(generated("gen-v1/arrow?n=300&width=2"));  // dense rows and columns
  out.push_back(generated("gen-v1/uniform?rows=1&cols=500&nnz_per_row=500"));  // 1 x N
  return out;
}

}  // namespace

TEST_CASE("design space sizes and ids are pinned", "[kernels][design_space]") {
  // A deliberate change of the space changes these numbers: update them, and say so in the docs
  // (docs/design-space.md), because corpus files and SFT pairs are keyed by design id.
  // Issue 25 added csr_split (12 points), csr_segscan (3) and spmm_csr_split (12 per dtype);
  // csr_nnzsplit (8 points per dtype) came after it, then coo_tiled (10 per dtype).
  CHECK(DesignSpace(datasets::Op::spmv, datasets::DType::f32).size() == 216);
  CHECK(DesignSpace(datasets::Op::spmv, datasets::DType::f64).size() == 216);
  CHECK(DesignSpace(datasets::Op::spmm, datasets::DType::f32).size() == 134);
  CHECK(DesignSpace(datasets::Op::spmm, datasets::DType::f64).size() == 114);

  const DesignSpace spmv(datasets::Op::spmv, datasets::DType::f32);
  CHECK(spmv.points().front().id() == "csr_scalar block=128 unroll=1 ldg=0");
  CHECK(spmv.find("csr_vector lanes=8 block=256 unroll=2 vec=1 ldg=1").has_value());
  CHECK(spmv.find("csr_merge block=256 items=7 steps=4").has_value());
  CHECK(spmv.find("sell C=8 sigma=256 block=256").has_value());
  CHECK(spmv.find("csr_binned classes=1:8,8:64,32:* block=256").has_value());
  CHECK_FALSE(spmv.find("csr_vector lanes=3 block=256 unroll=1 vec=1 ldg=0").has_value());
  const DesignSpace spmm64(datasets::Op::spmm, datasets::DType::f64);
  CHECK(spmm64.find("spmm_csr_rowgroup lanes=8 cols=2 cache=1 block=256").has_value());
  CHECK_FALSE(spmm64.find("spmm_csr_rowgroup lanes=8 cols=4 cache=1 block=256").has_value());
  CHECK(spmv.find("csr_split lanes=4 split=2048").has_value());
  CHECK(spmv.find("csr_segscan slabs=16").has_value());
  CHECK(spmm64.find("spmm_csr_split lanes=8 cols=2 split=64").has_value());
  CHECK(spmv.find("csr_segscan slabs=64").has_value());
  CHECK(spmv.find("csr_nnzsplit items=4 block=128").has_value());
  CHECK(spmv.find("csr_nnzsplit items=16 block=256").has_value());
  CHECK(spmv.points().back().id() == "coo_tiled items=16 block=256");
}

// The generators of the space before issue 25, and those of issue 25: their points' programs are
// pinned byte for byte (an FNV-1a digest over every id and program text of each space and set),
// because the corpus, the SFT pairs and earlier measurements are keyed by design id. Newer
// generators (csr_nnzsplit) add points; they never change these.
const std::set<std::string> kGeneratorsBeforeIssue25 = {
    "csr_scalar",     "csr_vector", "csr_xstage", "csr_adaptive", "csr_binned", "csr_merge",
    "coo_segmented",  "ell",        "sell",       "bsr_row",      "bsr_warp",   "spmm_csr_rowgroup",
    "spmm_csr_merge", "spmm_coo",   "spmm_ell",   "spmm_sell",    "spmm_bsr"};
const std::set<std::string> kIssue25Generators = {"csr_split", "csr_segscan", "spmm_csr_split"};

std::string points_digest(datasets::Op op, datasets::DType dtype,
                          const std::set<std::string>& generators, std::size_t& count) {
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](const std::string& text) {
    for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  };
  count = 0;
  const DesignSpace space(op, dtype);
  for (const DesignPoint& p : space.points()) {
    if (generators.count(p.generator) == 0) continue;
    mix(p.id() + "\n" + space.render(p) + "\n");
    ++count;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

TEST_CASE("the programs of the earlier design points are byte-identical",
          "[kernels][design_space]") {
  struct Pinned {
    datasets::Op op;
    datasets::DType dtype;
    const std::set<std::string>* generators;
    const char* digest;
    std::size_t points;
  };
  const auto* before = &kGeneratorsBeforeIssue25;
  const auto* issue25 = &kIssue25Generators;
  for (const Pinned& pinned :
       {Pinned{datasets::Op::spmv, datasets::DType::f32, before, "8ca6e1b7bc725feb", 183},
        Pinned{datasets::Op::spmv, datasets::DType::f64, before, "67345d393c6b7b26", 183},
        Pinned{datasets::Op::spmm, datasets::DType::f32, before, "d38316735b8da552", 122},
        Pinned{datasets::Op::spmm, datasets::DType::f64, before, "b193bc5629f158bd", 102},
        Pinned{datasets::Op::spmv, datasets::DType::f32, issue25, "da7edcbbafdd4d52", 15},
        Pinned{datasets::Op::spmv, datasets::DType::f64, issue25, "13c51cb40b88ffef", 15},
        Pinned{datasets::Op::spmm, datasets::DType::f32, issue25, "00ae8a8b08761d63", 12},
        Pinned{datasets::Op::spmm, datasets::DType::f64, issue25, "504ebb67b0082377", 12}}) {
    std::size_t count = 0;
    CHECK(points_digest(pinned.op, pinned.dtype, *pinned.generators, count) == pinned.digest);
    CHECK(count == pinned.points);
  }
}

TEST_CASE("design ids are unique and parse back to their points", "[kernels][design_space]") {
  for (auto op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
      const DesignSpace space(op, dtype);
      std::set<std::string> ids;
      for (const DesignPoint& p : space.points()) {
        INFO(p.id());
        CHECK(ids.insert(p.id()).second);
        CHECK(DesignPoint::parse(op, dtype, p.id()) == p);
      }
    }
  }
  CHECK_THROWS_WITH(DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, "warp_magic x=1"),
                    has_substring("unknown generator warp_magic"));
  CHECK_THROWS_WITH(
      DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, "spmm_ell lanes=1 cols=1"),
      has_substring("is a spmm design"));
  CHECK_THROWS_WITH(
      DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32, "csr_merge block=256"),
      has_substring("expected csr_merge block=... items=... steps=..."));
  CHECK_THROWS_WITH(DesignPoint::parse(datasets::Op::spmv, datasets::DType::f32,
                                       "csr_merge block=256 items=99 steps=4"),
                    has_substring("is not a point"));
}

TEST_CASE("every design point passes the static checks and resolves its launches",
          "[kernels][design_space]") {
  const auto matrices = geometry_matrices();
  for (auto op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
      const DesignSpace space(op, dtype);
      for (const DesignPoint& p : space.points()) {
        const std::string text = space.render(p);
        INFO(p.id() << "\n" << text);
        CHECK(text.rfind("// Design: " + p.id(), 0) == 0);
        const reward::StaticCheckResult checked = reward::check_program(text, op);
        REQUIRE(checked.ok());
        REQUIRE(checked.program->format == p.format());
        for (const auto& m : matrices) {
          for (std::int64_t k : {std::int64_t{1}, std::int64_t{8}, std::int64_t{33}}) {
            if (op == datasets::Op::spmv && k > 1) continue;
            const reward::Constants c = reward::compute_constants(m, op, k, p.format());
            const reward::GeometryResult g = reward::resolve_launches(*checked.program, c);
            INFO(m.rows() << " x " << m.cols() << " k=" << k);
            CHECK(g.ok());
          }
        }
      }
    }
  }
}

TEST_CASE("the representative points compile with NVRTC for f32 and f64",
          "[kernels][design_space][nvrtc]") {
  // One point per generator and code path (DesignSpace::representatives), for both dtypes and both
  // ops, compiled against the awkward matrix's prelude (K = 8 for SpMM, a multiple of every vector
  // width; a second compile with K = 3 covers the scalar column path of the wider tiles). The whole
  // space takes minutes to compile here; the GPU tests compile and run every point.
  const auto matrix = awkward_matrix();
  const auto start = std::chrono::steady_clock::now();
  int compiled = 0;
  for (auto op : {datasets::Op::spmv, datasets::Op::spmm}) {
    for (auto dtype : {datasets::DType::f32, datasets::DType::f64}) {
      const DesignSpace space(op, dtype);
      for (const DesignPoint& p : space.representatives()) {
        const std::string text = space.render(p);
        for (std::int64_t k : {std::int64_t{8}, std::int64_t{3}}) {
          if (k == 3 && (op == datasets::Op::spmv || p.param("cols") == "1")) continue;
          reward::CompileRequest request;
          request.source = reward::compile_source(
              dtype, reward::compute_constants(matrix, op, k, p.format()), text);
          const reward::CompileResult r = reward::compile(request);
          INFO(p.id() << " " << to_string(dtype) << " k=" << k << "\n" << r.log);
          REQUIRE(r.ok);
          const auto checked = reward::check_program(text, op);
          for (const auto& name : checked.program->kernel_names()) CHECK(r.kernel(name) != nullptr);
          CHECK(r.figures().spill_bytes == 0);
          ++compiled;
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "compiled " << compiled << " representative programs in " << seconds << " s\n";
  CHECK(compiled > 60);
}

TEST_CASE("sampling is deterministic and without repeats", "[kernels][design_space]") {
  const DesignSpace space(datasets::Op::spmv, datasets::DType::f32);
  const auto a = space.sample(20, 7);
  const auto b = space.sample(20, 7);
  const auto c = space.sample(20, 8);
  REQUIRE(a.size() == 20);
  CHECK(a == b);
  CHECK(a != c);
  std::set<std::string> ids;
  for (const auto& p : a) ids.insert(p.id());
  CHECK(ids.size() == 20);
  CHECK(space.sample(100000, 1).size() == space.size());
  // Pinned: the same seed draws the same points on every platform (csr_nnzsplit's points changed
  // the draw, then coo_tiled's).
  CHECK(a.front().id() == "csr_vector lanes=2 block=128 unroll=1 vec=1 ldg=1");
}

TEST_CASE("pruning keeps the general designs and drops the hopeless ones",
          "[kernels][design_space]") {
  const DesignSpace space(datasets::Op::spmv, datasets::DType::f32);
  const auto stencil = datasets::compute_features(generated("gen-v1/stencil2d?nx=64"));
  const auto power =
      datasets::compute_features(generated("gen-v1/rmat?scale=12&edge_factor=8&seed=1"));
  const auto pick = [&](const datasets::MatrixFeatures& f) {
    std::set<std::string> generators;
    for (const auto& p : space.pruned(f)) generators.insert(p.generator);
    return generators;
  };
  const auto on_stencil = pick(stencil);
  CHECK(on_stencil.count("csr_merge") == 1);
  CHECK(on_stencil.count("csr_scalar") == 1);
  CHECK(on_stencil.count("ell") == 1);
  CHECK(on_stencil.count("coo_segmented") == 0);
  const auto on_power = pick(power);
  CHECK(on_power.count("csr_merge") == 1);
  CHECK(on_power.count("csr_binned") == 1);
  CHECK(on_power.count("ell") == 0);
  const auto uniform =
      datasets::compute_features(generated("gen-v1/uniform?rows=4000&nnz_per_row=6"));
  CHECK(pick(uniform).count("bsr_row") == 0);
  CHECK(pick(uniform).count("bsr_warp") == 0);
  CHECK(space.pruned(stencil).size() < space.size());

  const DesignSpace spmm(datasets::Op::spmm, datasets::DType::f32);
  for (const auto& p : spmm.pruned(stencil, 32)) {
    INFO(p.id());
    CHECK(p.int_param("lanes") * p.int_param("cols") <= 32);
  }
  CHECK_FALSE(spmm.pruned(stencil, 8).empty());
}
