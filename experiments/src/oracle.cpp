// The oracle cache and the oracle fraction (oracle.hpp).
#include "sparserl/experiments/oracle.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "csv.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/experiments/run_info.hpp"

namespace fs = std::filesystem;

namespace sparserl::experiments {
namespace {

const std::vector<std::string>& columns() {
  static const std::vector<std::string> c = {
      "matrix", "oracle_us", "baseline_us", "oracle_speedup", "program", "design", "protocol"};
  return c;
}

double parse_number(const std::string& s, const std::string& where) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    throw OracleError(where + ": '" + s + "' is not a number");
  }
  return v;
}

std::vector<OracleEntry> read_entries(const fs::path& file) {
  const std::optional<std::string> bytes = datasets::read_file_bytes(file);
  if (!bytes) throw OracleError(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  const std::string& text = *bytes;
  const std::string name = file.string();
  std::size_t pos = 0, line = 1;
  auto record = [&]() {
    try {
      return detail::next_csv_record(text, pos, line, name);
    } catch (const std::runtime_error& e) {
      throw OracleError(e.what());
    }
  };
  if (text.empty()) throw OracleError(name + ":1: empty file (expected the header line)");
  const std::vector<std::string> header = record();
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < header.size(); ++i) at.emplace(header[i], i);
  for (const std::string& c : columns()) {
    if (at.count(c) == 0) throw OracleError(name + ":1: the header has no '" + c + "' column");
  }
  std::vector<OracleEntry> out;
  std::map<std::string, std::size_t> seen;
  while (pos < text.size()) {
    const std::size_t record_line = line;
    const std::vector<std::string> f = record();
    if (f.size() == 1 && f[0].empty()) continue;
    const std::string where = name + ":" + std::to_string(record_line);
    if (f.size() != header.size()) {
      throw OracleError(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                        std::to_string(header.size()));
    }
    OracleEntry e;
    e.matrix = f[at["matrix"]];
    if (e.matrix.empty()) throw OracleError(where + ": column 'matrix': empty");
    if (const auto [it, fresh] = seen.emplace(e.matrix, record_line); !fresh) {
      throw OracleError(where + ": the matrix " + e.matrix + " is listed twice (first on line " +
                        std::to_string(it->second) + ")");
    }
    e.oracle_us = parse_number(f[at["oracle_us"]], where + ": column 'oracle_us'");
    e.baseline_us = parse_number(f[at["baseline_us"]], where + ": column 'baseline_us'");
    e.oracle_speedup = parse_number(f[at["oracle_speedup"]], where + ": column 'oracle_speedup'");
    e.program = f[at["program"]];
    e.design = f[at["design"]];
    e.protocol = f[at["protocol"]];
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::string device_slug(std::string_view device) {
  std::string out;
  for (char c : device) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown-device" : out;
}

fs::path oracle_cache_file(const fs::path& data_dir, const OracleKey& key) {
  const std::string name = std::string(datasets::to_string(key.op)) + "-" +
                           std::string(datasets::to_string(key.dtype)) + "-k" +
                           std::to_string(key.k) + "-b" + std::to_string(key.budget) + ".csv";
  return data_dir / "oracle" / (key.split_digest.empty() ? "no-split" : key.split_digest) /
         device_slug(key.device) / name;
}

OracleCache::OracleCache(fs::path file) : file_(std::move(file)) {
  std::error_code ec;
  if (fs::exists(file_, ec)) entries_ = read_entries(file_);
}

const OracleEntry* OracleCache::find(std::string_view matrix) const {
  for (const OracleEntry& e : entries_) {
    if (e.matrix == matrix) return &e;
  }
  return nullptr;
}

void OracleCache::store(const std::vector<OracleEntry>& entries) {
  for (const OracleEntry& e : entries) {
    const auto it = std::find_if(entries_.begin(), entries_.end(),
                                 [&](const OracleEntry& x) { return x.matrix == e.matrix; });
    if (it != entries_.end()) {
      *it = e;
    } else {
      entries_.push_back(e);
    }
  }
  std::ostringstream out;
  for (std::size_t i = 0; i < columns().size(); ++i) out << (i ? "," : "") << columns()[i];
  out << '\n';
  for (const OracleEntry& e : entries_) {
    out << detail::csv_field(e.matrix) << ',' << detail::csv_number(e.oracle_us) << ','
        << detail::csv_number(e.baseline_us) << ',' << detail::csv_number(e.oracle_speedup) << ','
        << detail::csv_field(e.program) << ',' << detail::csv_field(e.design) << ','
        << detail::csv_field(e.protocol) << '\n';
  }
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  if (ec)
    throw OracleError(file_.parent_path().string() + ": cannot create (" + ec.message() + ")");
  try {
    write_file_atomically(file_, out.str());
  } catch (const std::runtime_error& e) {
    throw OracleError(e.what());
  }
}

std::vector<OracleEntry> entries_to_fill(const OracleCache& cache,
                                         const std::map<std::string, OracleEntry>& template_answers,
                                         std::int64_t template_budget, std::int64_t oracle_budget,
                                         const std::string& protocol) {
  std::vector<OracleEntry> out;
  if (template_budget < oracle_budget) return out;
  for (const auto& [matrix, entry] : template_answers) {
    const OracleEntry* known = cache.find(matrix);
    if (entry.protocol == protocol && (known == nullptr || known->protocol != protocol)) {
      out.push_back(entry);
    }
  }
  return out;
}

double oracle_fraction(const MatrixResult& row, double oracle_speedup) {
  if (!row.tested || !std::isfinite(oracle_speedup) || !(oracle_speedup > 0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!row.correct || !std::isfinite(row.speedup) || !(row.speedup > 0)) return 0.0;
  return row.speedup / oracle_speedup;
}

void apply_oracle(std::vector<MatrixResult>& rows, const OracleCache& cache,
                  const std::string& protocol) {
  for (MatrixResult& r : rows) {
    const OracleEntry* e = cache.find(r.matrix);
    if (e == nullptr || e->protocol != protocol) continue;
    r.oracle_speedup = e->oracle_speedup;
    r.oracle_fraction = oracle_fraction(r, e->oracle_speedup);
  }
}

}  // namespace sparserl::experiments
