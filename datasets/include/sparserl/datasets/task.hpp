// Tasks: what one episode asks for. A task names a matrix by a versioned URI, the operation (SpMV,
// or SpMM with K dense columns) and the value type. URIs:
//   suitesparse-v1/GROUP/NAME   a SuiteSparse collection matrix (GROUP "ungrouped" for matrices
//                               that belong to none)
//   gen-v1/KIND?key=value&...   a generated matrix (generators.hpp), e.g.
//                               gen-v1/rmat?scale=16&edge_factor=8&seed=3
//   file:PATH                   a local Matrix Market file (.mtx, .mtx.gz, .tar.gz); also
//                               file:///ABSOLUTE/PATH
// The matrix store (matrix_store.hpp) resolves a URI to a SparseMatrix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sparserl/datasets/sparse_matrix.hpp"

namespace sparserl::datasets {

enum class Op { spmv, spmm };
enum class DType { f32, f64 };

std::string_view to_string(Op op);
std::string_view to_string(DType dtype);
// Parse "spmv" / "spmm" and "f32" / "f64"; nullopt for anything else.
std::optional<Op> parse_op(std::string_view text);
std::optional<DType> parse_dtype(std::string_view text);
inline std::size_t dtype_bytes(DType d) { return d == DType::f32 ? 4 : 8; }

class InvalidUri : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A parsed task URI. Parsing checks the scheme and shape; resolving checks that the matrix exists.
struct MatrixUri {
  enum class Scheme { suitesparse, generated, file };
  Scheme scheme = Scheme::suitesparse;
  std::string version;                        // "v1"
  std::string group, name;                    // suitesparse
  std::string kind;                           // generated: "rmat", "stencil2d", ...
  std::map<std::string, std::string> params;  // generated: key=value, sorted
  std::string path;                           // file

  // Throws InvalidUri naming the URI and what is wrong with it.
  static MatrixUri parse(std::string_view uri);
  // A matrix as a command line names it: the path of an existing file (made absolute, a file:
  // URI), a file: URI or a matrix URI alike. InvalidUri naming the argument when it is none.
  static MatrixUri from_argument(std::string_view text);
  // The canonical spelling (generator parameters sorted): equal matrices have equal URIs.
  [[nodiscard]] std::string str() const;
};

struct Task {
  std::string uri;  // MatrixUri::str() of the matrix
  Op op = Op::spmv;
  DType dtype = DType::f32;
  Index k = 1;  // dense columns for SpMM (1 for SpMV)

  // "suitesparse-v1/HB/west0067 spmv f32" or "... spmm f64 k=32": for logs and tables.
  [[nodiscard]] std::string str() const;
  // The inverse of str() (the URI is canonicalised); std::invalid_argument (InvalidUri for the URI)
  // naming the text otherwise.
  static Task parse(std::string_view text);
};

}  // namespace sparserl::datasets
