// Generated matrices kept as files. A gen-v1 matrix of many nonzeros takes seconds to generate (an
// R-MAT of 42M nonzeros: 52 s on the 2-core CI machine, 1.1M nonzeros a second), and every process
// that meets it generates it again: each GPU worker, again after every replacement (a faulting
// candidate ends its worker), each run, each bench. The matrix store (matrix_store.hpp) writes such
// a matrix once into DATA_DIR/generated/ and reads it back from then on: the CSR arrays as they are
// in memory (4 bytes a row, 12 a nonzero), behind a header naming the format's revision, the
// canonical URI and the sizes.
//
// A file is only a cache: one that is missing, truncated, of another revision or of another URI
// (a hash collision of the file name) reads as absent, and its arrays pass SparseMatrix::from_csr's
// checks like any other input. Whoever consumes the matrix checks its digest as before (the GPU
// worker against the evaluator's). kGeneratedFileRevision goes up whenever a generator's output
// changes - which the pinned digests of tests/datasets/generators_test.cpp show - so that files
// written by an older build are not read as the new generator's matrices.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "sparserl/datasets/sparse_matrix.hpp"

namespace sparserl::datasets {

inline constexpr std::uint32_t kGeneratedFileRevision = 1;

// DATA_DIR/generated/<16 hex digits of the canonical URI's FNV-1a hash>.csr
std::filesystem::path generated_file_path(const std::filesystem::path& data_dir,
                                          const std::string& canonical_uri);

// Writes `matrix` as `canonical_uri`'s file at `path`: into a temporary file beside it, then renamed
// over it, so that a reader sees the whole file or none. std::runtime_error naming the path when
// the folder cannot be made or the file written (a read-only data directory), or when the file would
// exceed the process's file size limit (RLIMIT_FSIZE, which a sandboxed worker has: the write
// would end it with SIGXFSZ).
void write_generated_file(const std::filesystem::path& path, const std::string& canonical_uri,
                          const SparseMatrix& matrix);

// The matrix of `canonical_uri` kept at `path`, or nullopt when there is no such file or it is not
// a whole file of this revision and URI.
std::optional<SparseMatrix> read_generated_file(const std::filesystem::path& path,
                                                const std::string& canonical_uri);

}  // namespace sparserl::datasets
