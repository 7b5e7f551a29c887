// Fixtures shared by the reward tests of the kernel ABI: a small matrix with every row shape the
// formats care about (an empty row, a full row, rows reaching the last column), the reference
// programs of reward/programs, and a helper that puts a program through the whole CPU pipeline.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/reward/abi.hpp"
#include "test_support.hpp"

namespace sparserl::reward::testing {

// 7 x 6, row lengths 3 0 1 6 2 1 4 (nnz 17); rows 5 and 6 reach the last column.
inline datasets::SparseMatrix small_matrix() {
  std::vector<datasets::Triplet> t = {
      {0, 0, 1.0},  {0, 2, -2.0}, {0, 5, 0.5},                                           // row 0
      {2, 3, 4.0},                                                                       // row 2
      {3, 0, 1.5},  {3, 1, 2.5},  {3, 2, -1.0}, {3, 3, 3.0}, {3, 4, 0.25}, {3, 5, 7.0},  // row 3
      {4, 1, -3.0}, {4, 4, 2.0},                                                         // row 4
      {5, 5, 9.0},                                                                       // row 5
      {6, 0, 1.0},  {6, 2, 1.0},  {6, 4, 1.0},  {6, 5, 1.0},                             // row 6
  };
  return datasets::SparseMatrix::from_triplets(7, 6, std::move(t));
}

inline std::string program_name(Op op, Format format) {
  return std::string(datasets::to_string(op)) + "_" + std::string(to_string(format));
}

// The text of reward/programs/<op>_<format>.cu.
inline std::string reference_program(Op op, Format format) {
  const auto path =
      sparserl::testing::source_dir() / "reward" / "programs" / (program_name(op, format) + ".cu");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read reference program " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace sparserl::reward::testing
