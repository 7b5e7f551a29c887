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
//              by default the heaviest rows are the first. rmat's permute is its own: applied to
//              the edges before they are folded, from its own stream, before the modifiers.
//   blockdiag  blocks [16], block_size [8]
//              blocks dense block_size x block_size blocks on the diagonal.
//   arrow      n [1000], width [1]: in [0, n]
//              The first `width` rows and the first `width` columns dense, plus the diagonal.
//   diagonal   n [1000]
//   column     n [1000]
//              The n x 1 matrix with every row holding its one entry.
//
// The families of the large benchmark regime (generator_families.cpp gives the order of every
// draw; docs/formats.md the same in prose):
//
//   road        nx [64], ny [nx], keep [0.7], long_range [0.001]
//               Road-network-like: the nx*ny grid graph (vertex y*nx + x), each grid edge kept with
//               probability keep (degrees 0-4, mean about 4*keep), plus round(long_range * nx*ny)
//               edges between uniformly drawn vertex pairs; symmetric pattern with the diagonal.
//   circuit     n [10000], near [2], spread [8], far [1], dense_rows [2], dense_cols [2],
//               dense_len [0.1]
//               Circuit-like (rajat, circuit5M): the diagonal, `near` entries per row at offsets
//               uniform in [-spread, spread] (outside the matrix: dropped), `far` uniform columns
//               per row; then dense row k (k = 0 .. dense_rows-1, at seeded distinct rows) gains
//               floor(dense_len * n / (k + 1)) distinct uniform columns, and dense column k the
//               same number of distinct uniform rows: power and ground nets. Duplicates are folded.
//   lp          rows [1000], cols [4 * rows], min_len [2], alpha [1.5], max_len [cols]
//               LP-like and wide: row i holds L_i = min(max_len, floor(min_len * U^(-1/alpha)))
//               distinct uniform columns, U uniform in (0, 1]: Pareto row lengths, heavy-tailed
//               for small alpha.
//   lognormal   rows [1000], cols [rows], median [8], sigma [1], max_len [cols]
//               Row i holds L_i = min(max_len, max(1, round(median * exp(sigma * Z_i)))) distinct
//               uniform columns, Z_i standard normal (Marsaglia's polar method).
//   blocksparse block [4], block_rows [256], block_cols [block_rows], blocks_per_row [4],
//               align [1], fill [1]
//               (block_rows * block) x (block_cols * block); each block row holds blocks_per_row
//               dense block x block blocks at distinct uniform block columns. align = 1: blocks on
//               the block grid (to_bsr with block x block adds no fill); align = 0: each block
//               shifted down and right by offsets uniform in [0, block), cut at the matrix edge,
//               overlaps folded (a BSR conversion pays fill). fill < 1 keeps each cell with that
//               probability.
//   kron        group [HB], name [west0067], n [64], per_row [4], outer [real]: real or random
//               The Kronecker product of the pattern of suitesparse-v1/GROUP/NAME (loaded through
//               the MatrixLoader, normally the matrix store's) with a seeded random n x n pattern
//               of per_row distinct uniform columns per row; outer = real: real (x) random,
//               outer = random: random (x) real. nnz = nnz(real) * n * per_row.
//
// lp and lognormal need exp and log: they are computed from IEEE + - * / and sqrt alone (a series
// on a reduced argument for each), and generator_families.cpp is compiled with -ffp-contract=off
// so that no compiler fuses a multiply and an add on a CPU that has FMA. The nnz of lp and
// lognormal is known once the row lengths are drawn, kron's once its base is loaded: the 32-bit
// limit is checked then, before the entries are allocated.
//
// Keys every kind accepts:
//   seed        [0]  an unsigned 64-bit integer: the pattern's random draws, the modifiers and the
//                    values each use their own stream of it.
//   huge_row    [0]  LENGTH > 0: one row, chosen uniformly from the seed, is replaced by
//                    L = min(LENGTH, cols) entries spread evenly over the columns (column
//                    floor(k * cols / L) for k < L).
//   empty_rows  [0]  FRACTION in [0, 1]: round(FRACTION * rows) rows, chosen uniformly from the
//                    seed among the rows other than the huge row, lose all their entries.
//   permute     [0]  1: after the other modifiers, rows and columns are relabelled by seeded random
//                    permutations (permute_relabelling): the same one on both sides of a square
//                    matrix (P A P^T, a symmetric permutation: a randomly numbered FEM mesh), two
//                    independent ones for a rectangular matrix. rmat keeps its own permute key
//                    (above), whose meaning and digests predate this modifier.
// Dimensions may be 0 (diagonal?n=0 is the 0 x 0 matrix). Matrices whose rows, columns or nonzeros
// exceed the ABI's 32-bit index range are refused before anything is allocated.
//
// Errors: an unknown kind, an unknown key, a value that does not parse or lies outside its range,
// or conflicting keys throw std::invalid_argument naming the URI and the key; so does kron without
// a loader, naming the URI and the matrix it needs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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

// How a generator that builds on a real matrix (kron) gets it: a suitesparse-v1 URI to its matrix.
// MatrixStore passes its own load; a loader may throw (MatrixNotFound, ...), and generate() lets
// that through.
using MatrixLoader = std::function<std::shared_ptr<const SparseMatrix>(const std::string& uri)>;

// The matrix a spec describes (validated first). `loader` is needed by kron only.
SparseMatrix generate(const GeneratorSpec& spec, const MatrixLoader& loader = {});
// The entry point of the matrix store: a gen-v1 URI to its matrix.
SparseMatrix generate(const MatrixUri& uri, const MatrixLoader& loader = {});

// The suitesparse-v1 URIs that generating the spec loads (kron's base; empty for every other
// kind), known without loading anything; the spec is validated first.
std::vector<std::string> loaded_matrices(const GeneratorSpec& spec);

// The relabelling of the common `permute` key for a rows x cols matrix: the entry (i, j) moves to
// (rows_to[i], cols_to[j]). Fisher-Yates with the unbiased draws of random.hpp, rows first; for a
// square matrix cols_to == rows_to.
struct Relabelling {
  std::vector<Index> rows_to, cols_to;
};
Relabelling permute_relabelling(std::uint64_t seed, Index rows, Index cols);

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
