// A tiny version-2 benchmark split for the runner's tests, written into a scratch project root:
// ROOT/datasets/splits/bench-t2.split over shared matrices (../shared/matrices), small gen-v1
// matrices, a medium and two large diagonal ones, and two catalogue matrices of which one is
// present (ROOT/data/suitesparse/Cat/present.mtx, written here) and one is not.
//
//   train  diagonal n=1000000 (large), banded (small), HB/494_bus (shared)
//   val    diagonal n=1000001 (large), diagonal n=300000 (medium), uniform (small),
//          Pajek/Erdos971 (shared), Cat/present and Cat/absent (catalogue)
//   test   stencil2d 6x6, arrow (generated), Gset/G51 (shared)
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sparserl/datasets/splits.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::testing {

struct BenchSplitFixture {
  std::filesystem::path root;
  std::filesystem::path split;     // ROOT/datasets/splits/bench-t2.split
  std::filesystem::path data_dir;  // ROOT/data
};

inline BenchSplitFixture write_bench_split(const std::filesystem::path& root) {
  namespace ds = sparserl::datasets;
  BenchSplitFixture f{root, root / "datasets" / "splits" / "bench-t2.split", root / "data"};
  std::filesystem::create_directories(f.split.parent_path());
  std::filesystem::create_directories(f.data_dir / "suitesparse" / "Cat");
  std::ofstream(f.data_dir / "suitesparse" / "Cat" / "present.mtx")
      << "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.0\n2 2 2.0\n3 3 3.0\n"
         "1 3 0.5\n";
  struct Line {
    const char* part;
    const char* uri;
    const char* family;
    std::int64_t nnz;
    const char* source;
  };
  const std::vector<Line> lines = {
      {"train", "gen-v1/diagonal?n=1000000", "diagonal", 1'000'000, "generated"},
      {"train", "gen-v1/banded?n=40&bandwidth=2", "banded", 194, "generated"},
      {"train", "suitesparse-v1/HB/494_bus", "HB", 1666, "shared"},
      {"val", "gen-v1/diagonal?n=1000001", "diagonal", 1'000'001, "generated"},
      {"val", "gen-v1/diagonal?n=300000", "diagonal", 300'000, "generated"},
      {"val", "gen-v1/uniform?rows=32&nnz_per_row=3", "uniform", 96, "generated"},
      {"val", "suitesparse-v1/Pajek/Erdos971", "Pajek", 2628, "shared"},
      {"val", "suitesparse-v1/Cat/present", "Cat", 4, "catalogue"},
      {"val", "suitesparse-v1/Cat/absent", "Cat", 10, "catalogue"},
      {"test", "gen-v1/stencil2d?nx=6&ny=6", "stencil", 156, "generated"},
      {"test", "gen-v1/arrow?n=30&width=2", "arrow", 146, "generated"},
      {"test", "suitesparse-v1/Gset/G51", "Gset", 11818, "shared"},
  };
  std::vector<std::string> rows[3];
  for (const Line& l : lines) {
    const std::string uri = ds::MatrixUri::parse(l.uri).str();
    const auto part = ds::parse_split_part(l.part);
    rows[static_cast<int>(*part)].push_back(
        std::string(l.part) + " " + uri + " " + std::string(ds::to_string(ds::regime_of(l.nnz))) +
        " " + l.family + " " + std::to_string(l.nnz) + " " + l.source);
  }
  std::ofstream out(f.split);
  out << "# split bench-t2\n# version 2\n# seed 1\n# ratios 0.5,0.25,0.25\n"
         "# source shared INDEX.csv 53 0123456789abcdef\n"
         "# source catalogue catalogue-t2.csv 2 fedcba9876543210\n"
         "# source generated gen-t2 7 00000000000000ff\n"
      << "# counts train " << rows[0].size() << " val " << rows[1].size() << " test "
      << rows[2].size() << "\n";
  for (auto& part : rows) {
    // Sorted by URI within a part (the second word).
    std::sort(part.begin(), part.end(), [](const std::string& a, const std::string& b) {
      return a.substr(a.find(' ') + 1) < b.substr(b.find(' ') + 1);
    });
    for (const std::string& line : part) out << line << "\n";
  }
  return f;
}

// A config over the fixture: its split, the shared index, the data directory; TOML text.
inline std::string bench_split_config(const BenchSplitFixture& f,
                                      const std::string& shared_matrices,
                                      const std::string& extra = "") {
  return "[experiment]\nname = \"t2\"\nseed = 1\nroot = \"" + f.root.string() +
         "\"\n[data]\nsplit = \"datasets/splits/bench-t2.split\"\nindex_dirs = [\"" +
         shared_matrices + "\"]\ndata_dir = \"data\"\n[evaluator]\ncompile_workers = 1\n" +
         "[report]\nplots = false\n" + extra;
}

}  // namespace sparserl::testing
