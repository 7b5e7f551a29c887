// Generated matrices: the structured and random families that the environment trains on besides the
// SuiteSparse collection, and the awkward shapes (empty rows, one huge row, a single column) that
// the evaluator's tests need. A generator is named by a gen-v1 URI, `gen-v1/KIND?key=value&...`
// (task.hpp), whose parameters are parsed and checked here. The same URI gives the same matrix -
// bit for bit, digest for digest - on every platform: all randomness comes from random.hpp (no
// std:: distributions), and no floating-point result depends on libm.
//
// Every matrix is built in two steps: its pattern (from the kind's keys, the `seed`, then the
// modifiers), then its values, drawn uniformly from [-1, 1) in row-major order from a stream of the
// same seed. Patterns are built directly in CSR order where the kind allows (stencils, bands,
// blocks) and by a counting sort where it does not (uniform, rmat), so tens of millions of nonzeros
// take seconds.
//
// Kinds and their keys (defaults in brackets; all integers are decimal, reals as in 0.25 or 1e-3):
//
//   stencil2d  nx [64], ny [nx], points [5]: 5 or 9
//              The nx*ny grid Laplacian pattern: row y*nx + x couples to its 4 (5-point) or 8
//              (9-point) grid neighbours and itself; no wrap-around, so boundary rows are shorter.
//   stencil3d  nx [16], ny [nx], nz [nx], points [7]: 7 or 27
//              The same on an nx*ny*nz grid; row (z*ny + y)*nx + x.
//   banded     n [1000], bandwidth [4], fill [1]: in [0, 1]
//              n x n; the diagonal always, each other entry with |i - j| <= bandwidth kept with
//              probability fill.
//   uniform    rows [1000], cols [rows], nnz_per_row [8] | nnz
//              Uniformly random columns, distinct within a row. With nnz_per_row every row holds
//              exactly that many (at most cols); with nnz (which excludes nnz_per_row) the matrix
//              holds exactly nnz entries, each row chosen uniformly (a full row is drawn again).
//   rmat       scale [10], edge_factor [16], a [0.57], b [0.19], c [0.19], d [1 - a - b - c],
//              permute [0]: 0 or 1
//              R-MAT power-law graph (Chakrabarti et al.; Graph500's defaults): 2^scale x 2^scale,
//              edge_factor * 2^scale edges, each placed by descending the quadrants (a top-left, b
//              top-right, c bottom-left, d bottom-right) with 32-bit integer thresholds; duplicate
//              edges are folded into one entry, so nnz is at most the edge count. a, b, c, d lie in
//              [0, 1] and sum to 1 (within 1e-9). permute = 1 relabels the vertices by a seeded
//              random permutation (as Graph500 does), which spreads the heavy rows over the matrix;
//              by default the heaviest rows are the first.
//   blockdiag  blocks [16], block_size [8]
//              blocks dense block_size x block_size blocks on the diagonal.
//   arrow      n [1000], width [1]: in [0, n]
//              The first `width` rows and the first `width` columns dense, plus the diagonal.
//   diagonal   n [1000]
//   column     n [1000]
//              The n x 1 matrix with every row holding its one entry.
//
// Keys every kind accepts:
//   seed        [0]  an unsigned 64-bit integer: the pattern's random draws, the modifiers and the
//                    values each use their own stream of it.
//   huge_row    [0]  LENGTH > 0: one row, chosen uniformly from the seed, is replaced by
//                    L = min(LENGTH, cols) entries spread evenly over the columns (column
//                    floor(k * cols / L) for k < L).
//   empty_rows  [0]  FRACTION in [0, 1]: round(FRACTION * rows) rows, chosen uniformly from the
//                    seed among the rows other than the huge row, lose all their entries.
// Dimensions may be 0 (diagonal?n=0 is the 0 x 0 matrix). Matrices whose rows, columns or nonzeros
// exceed the ABI's 32-bit index range are refused before anything is allocated.
//
// Errors: an unknown kind, an unknown key, a value that does not parse or lies outside its range,
// or conflicting keys throw std::invalid_argument naming the URI and the key.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::datasets {

// A generator and its parameters as written in a gen-v1 URI (values kept as text: that is what the
// URI holds and what the digest of the task depends on).
struct GeneratorSpec {
  std::string kind;
  std::map<std::string, std::string> params;

  // From a parsed gen-v1 URI; throws std::invalid_argument for another scheme or version, or for a
  // spec that validate() rejects.
  static GeneratorSpec from_uri(const MatrixUri& uri);
  // "gen-v1/KIND" or "gen-v1/KIND?k1=v1&k2=v2" with the keys sorted: the canonical URI.
  [[nodiscard]] std::string uri() const;
};

// Throws std::invalid_argument (naming the URI and the key) unless every key is known to the kind
// and every value parses and lies in its range.
void validate(const GeneratorSpec& spec);

// The matrix a spec describes (validated first).
SparseMatrix generate(const GeneratorSpec& spec);
// The entry point of the matrix store: a gen-v1 URI to its matrix.
SparseMatrix generate(const MatrixUri& uri);

// The kinds with their keys, defaults and meanings, as documented above (for help texts).
struct GeneratorKey {
  std::string name;
  std::string default_value;  // as text; "" where the default is derived from other keys
  std::string meaning;
};
struct GeneratorKind {
  std::string name;
  std::string summary;
  std::vector<GeneratorKey> keys;  // the kind's own keys; common_generator_keys() apply as well
};
const std::vector<GeneratorKind>& generator_kinds();
const std::vector<GeneratorKey>& common_generator_keys();

}  // namespace sparserl::datasets
