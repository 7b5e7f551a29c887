// The index of a folder of SuiteSparse matrices: a CSV file (like ../shared/matrices/INDEX.csv)
// whose header names the columns and whose rows list one matrix each. It tells the matrix store
// where a suitesparse-v1 URI's file lies, tells tests what each file must load as, and is the input
// from which versioned splits are made.
//
// Columns (by header name, any order, unknown columns ignored): name and group (required; an empty
// group becomes "ungrouped"), file (the Matrix Market file, relative to the index's folder or its
// suitesparse/ subfolder; default NAME.mtx), rows, cols, stored_entries (entries as written in the
// file; nnz is accepted as a synonym), field, symmetry. Fields may be double-quoted as in RFC 4180.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sparserl::datasets {

// A malformed index; what() starts "FILE:LINE: " (or "FILE: " for the file as a whole).
class IndexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kUngroupedGroup = "ungrouped";

struct IndexEntry {
  std::string file;  // as written in the index
  std::string name;
  std::string group;  // never empty: "ungrouped" for matrices without a group
  std::optional<std::int64_t> rows, cols, stored_entries;
  std::string field;      // "real", "integer", "pattern" (as written; may be empty)
  std::string symmetry;   // "general", "symmetric", ... (as written; may be empty)
  std::int64_t line = 0;  // of the index file, for messages

  // "GROUP/NAME"
  [[nodiscard]] std::string key() const { return group + "/" + name; }
  // "suitesparse-v1/GROUP/NAME"
  [[nodiscard]] std::string uri() const { return "suitesparse-v1/" + key(); }
};

class SuiteSparseIndex {
 public:
  // Reads an INDEX.csv; throws IndexError naming the file and line (a missing column, a number that
  // does not parse, a duplicate GROUP/NAME, a group or name that a URI cannot carry).
  static SuiteSparseIndex read(const std::filesystem::path& csv);
  // Parses index text; `source` names it in messages and `folder` is where its files lie.
  static SuiteSparseIndex parse(std::string_view text, const std::string& source,
                                std::filesystem::path folder);

  [[nodiscard]] const std::vector<IndexEntry>& entries() const { return entries_; }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] const std::filesystem::path& folder() const { return folder_; }
  [[nodiscard]] const std::string& source() const { return source_; }

  [[nodiscard]] const IndexEntry* find(std::string_view group, std::string_view name) const;
  // Where the entry's file is: FOLDER/FILE if it exists, else FOLDER/suitesparse/FILE if that
  // exists, else FOLDER/FILE (so a message names where it was expected).
  [[nodiscard]] std::filesystem::path file_path(const IndexEntry& entry) const;

  // 16 hex digits (64-bit FNV-1a) over the sorted "GROUP/NAME" keys: it identifies the set of
  // matrices, not the file's row order or other columns, so splits made from it do not depend on
  // either.
  [[nodiscard]] std::string digest() const;

 private:
  std::vector<IndexEntry> entries_;
  std::filesystem::path folder_;
  std::string source_;
};

// The SuiteSparse index of a folder: FOLDER/INDEX.csv, or the CSV file itself when given one.
std::filesystem::path index_csv_path(const std::filesystem::path& folder_or_csv);

}  // namespace sparserl::datasets
