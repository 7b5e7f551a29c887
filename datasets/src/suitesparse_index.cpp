// Reading a SuiteSparse INDEX.csv (suitesparse_index.hpp): a small RFC 4180 field splitter, columns
// found by header name, and checks whose messages name the file and line.
#include "sparserl/datasets/suitesparse_index.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "fnv1a.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::datasets {

namespace {

[[noreturn]] void fail(const std::string& source, std::int64_t line, const std::string& what) {
  throw IndexError(source + ":" + std::to_string(line) + ": " + what);
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split_csv(std::string_view line, const std::string& source,
                                   std::int64_t at) {
  std::vector<std::string> fields;
  std::size_t p = 0;
  for (;;) {
    std::string field;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    if (p < line.size() && line[p] == '"') {
      ++p;
      for (;;) {
        if (p >= line.size()) fail(source, at, "a quoted field is not closed on its line");
        if (line[p] == '"') {
          if (p + 1 < line.size() && line[p + 1] == '"') {
            field += '"';
            p += 2;
            continue;
          }
          ++p;
          break;
        }
        field += line[p++];
      }
      while (p < line.size() && line[p] != ',') {
        if (line[p] != ' ' && line[p] != '\t' && line[p] != '\r') {
          fail(source, at, "text after a closing quote (expected ',')");
        }
        ++p;
      }
    } else {
      const std::size_t comma = std::min(line.find(',', p), line.size());
      field = trim(line.substr(p, comma - p));
      p = comma;
    }
    fields.push_back(std::move(field));
    if (p >= line.size()) break;
    ++p;  // the comma
  }
  return fields;
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace

SuiteSparseIndex SuiteSparseIndex::parse(std::string_view text, const std::string& source,
                                         std::filesystem::path folder) {
  SuiteSparseIndex index;
  index.folder_ = std::move(folder);
  index.source_ = source;
  std::map<std::string, std::string> columns_of;  // column name -> canonical role
  std::vector<std::string> roles;                 // role of each column position
  std::map<std::string, std::int64_t> seen;       // GROUP/NAME -> line
  bool have_header = false;
  std::int64_t line_no = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++line_no;
    if (trim(line).empty() || trim(line).front() == '#') continue;
    const auto fields = split_csv(line, source, line_no);
    if (!have_header) {
      have_header = true;
      for (const std::string& raw : fields) {
        std::string name = lower(raw);
        if (name == "nnz") name = "stored_entries";
        if (std::find(roles.begin(), roles.end(), name) != roles.end() && !name.empty()) {
          fail(source, line_no, "the header names the column '" + raw + "' twice");
        }
        roles.push_back(name);
      }
      for (const char* required : {"name", "group"}) {
        if (std::find(roles.begin(), roles.end(), required) == roles.end()) {
          fail(source, line_no,
               std::string("the header has no '") + required +
                   "' column (expected a header like "
                   "'file,name,group,rows,cols,stored_entries,field,symmetry')");
        }
      }
      continue;
    }
    if (fields.size() != roles.size()) {
      fail(source, line_no,
           "expected " + std::to_string(roles.size()) + " fields as in the header, found " +
               std::to_string(fields.size()));
    }
    IndexEntry e;
    e.line = line_no;
    for (std::size_t i = 0; i < roles.size(); ++i) {
      const std::string& role = roles[i];
      const std::string& value = fields[i];
      auto number = [&]() -> std::optional<std::int64_t> {
        if (value.empty()) return std::nullopt;
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v < 0) {
          fail(source, line_no,
               "expected a non-negative integer in the column '" + role + "', found '" + value +
                   "'");
        }
        return v;
      };
      if (role == "file") e.file = value;
      if (role == "name") e.name = value;
      if (role == "group") e.group = value;
      if (role == "field") e.field = value;
      if (role == "symmetry") e.symmetry = value;
      if (role == "rows") e.rows = number();
      if (role == "cols") e.cols = number();
      if (role == "stored_entries") e.stored_entries = number();
    }
    if (e.name.empty()) fail(source, line_no, "the name is empty");
    if (e.group.empty()) e.group = std::string(kUngroupedGroup);
    try {
      (void)MatrixUri::parse(e.uri());
    } catch (const InvalidUri& err) {
      fail(source, line_no, err.what());
    }
    if (e.file.empty()) e.file = e.name + ".mtx";
    const auto [it, inserted] = seen.emplace(e.key(), line_no);
    if (!inserted) {
      fail(source, line_no,
           "the matrix " + e.key() + " is listed twice (also on line " +
               std::to_string(it->second) + ")");
    }
    index.entries_.push_back(std::move(e));
  }
  if (!have_header) {
    throw IndexError(source + ": empty index (expected a header line naming the columns)");
  }
  return index;
}

SuiteSparseIndex SuiteSparseIndex::read(const std::filesystem::path& csv) {
  const std::optional<std::string> text = read_file_bytes(csv);
  if (!text) throw IndexError(csv.string() + ": cannot open the index");
  return parse(*text, csv.string(), csv.parent_path());
}

const IndexEntry* SuiteSparseIndex::find(std::string_view group, std::string_view name) const {
  for (const IndexEntry& e : entries_) {
    if (e.group == group && e.name == name) return &e;
  }
  return nullptr;
}

std::filesystem::path SuiteSparseIndex::file_path(const IndexEntry& entry) const {
  std::filesystem::path direct = folder_ / entry.file;
  std::error_code ec;
  if (std::filesystem::exists(direct, ec)) return direct;
  std::filesystem::path nested = folder_ / "suitesparse" / entry.file;
  if (std::filesystem::exists(nested, ec)) return nested;
  return direct;
}

std::string SuiteSparseIndex::digest() const {
  std::vector<std::string> keys;
  keys.reserve(entries_.size());
  for (const IndexEntry& e : entries_) keys.push_back(e.key());
  std::sort(keys.begin(), keys.end());
  std::uint64_t h = detail::kFnvOffset;
  for (const std::string& k : keys) h = detail::fnv1a64(k + "\n", h);
  return detail::hex16(h);
}

std::filesystem::path index_csv_path(const std::filesystem::path& folder_or_csv) {
  std::error_code ec;
  if (std::filesystem::is_directory(folder_or_csv, ec)) return folder_or_csv / "INDEX.csv";
  return folder_or_csv;
}

}  // namespace sparserl::datasets
