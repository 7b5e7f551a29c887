// results.csv reading and writing, and the per-agent summary (results.hpp).
#include "sparserl/experiments/results.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "csv.hpp"
#include "sparserl/datasets/file_tree.hpp"
#include "sparserl/datasets/splits.hpp"
#include "sparserl/experiments/json.hpp"
#include "sparserl/experiments/run_info.hpp"
#include "sparserl/experiments/statistics.hpp"
#include "text_format.hpp"

namespace sparserl::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using detail::csv_field;
using detail::csv_number;

// A record, with the reader's errors as ResultsErrors.
std::vector<std::string> next_record(const std::string& text, std::size_t& pos, std::size_t& line,
                                     const std::string& file) {
  try {
    return detail::next_csv_record(text, pos, line, file);
  } catch (const std::runtime_error& e) {
    throw ResultsError(e.what());
  }
}

double parse_number(const std::string& s, const std::string& where) {
  if (s.empty() || s == "nan" || s == "NaN") return kNaN;
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw ResultsError(where + ": '" + s + "' is not a number");
  return v;
}

bool parse_bool(const std::string& s, const std::string& where) {
  if (s == "1" || s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "0" || s == "false" || s == "False" || s == "FALSE" || s.empty()) return false;
  throw ResultsError(where + ": '" + s + "' is not a boolean (1/0 or true/false)");
}

// A speedup that counts: finite and positive (a failed or untimed kernel has none).
bool counts(double speedup) { return std::isfinite(speedup) && speedup > 0; }

// The row's speedup, a failed kernel counting as 1.0 (the user falls back to cuSPARSE).
double speedup_or_one(const MatrixResult& r) {
  return r.correct && counts(r.speedup) ? r.speedup : 1.0;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(v.size()));
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const std::vector<std::string>& results_columns() {
  // The benchmark's yardsticks (DESIGN.md, "Benchmark and statistics") come last.
  // clang-format off
  static const std::vector<std::string> columns = {
      "matrix",          "nnz",          "agent",           "compiled",        "correct",
      "candidate_us",    "cusparse_us",  "speedup",         "gflops",          "bandwidth_fraction",
      "tested",          "samples",      "samples_compiled", "samples_correct", "best_speedup",
      "program",         "regime",       "family",          "oracle_speedup",  "oracle_fraction",
      "novel",           "corpus_distance", "cusparse_path",  "cusparse_paths",  "search_seconds",
      "design"};
  // clang-format on
  return columns;
}

std::string regime_name(const MatrixResult& row) {
  if (!row.regime.empty()) return row.regime;
  return std::string(datasets::to_string(datasets::regime_of(row.nnz)));
}

void write_results_csv(const std::filesystem::path& file, const std::vector<MatrixResult>& rows) {
  std::ostringstream out;
  const auto& cols = results_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
  out << '\n';
  for (const MatrixResult& r : rows) {
    out << csv_field(r.matrix) << ',' << r.nnz << ',' << csv_field(r.agent) << ','
        << (r.compiled ? 1 : 0) << ',' << (r.correct ? 1 : 0) << ',' << csv_number(r.candidate_us)
        << ',' << csv_number(r.cusparse_us) << ',' << csv_number(r.speedup) << ','
        << csv_number(r.gflops) << ',' << csv_number(r.bandwidth_fraction) << ','
        << (r.tested ? 1 : 0) << ',' << r.samples << ',' << r.samples_compiled << ','
        << r.samples_correct << ',' << csv_number(r.best_speedup) << ',' << csv_field(r.program)
        << ',' << csv_field(r.regime) << ',' << csv_field(r.family) << ','
        << csv_number(r.oracle_speedup) << ',' << csv_number(r.oracle_fraction) << ','
        << (r.novel ? (*r.novel ? "1" : "0") : "") << ',' << csv_number(r.corpus_distance) << ','
        << csv_field(r.cusparse_path) << ',' << csv_field(r.cusparse_paths) << ','
        << csv_number(r.search_seconds) << ',' << csv_field(r.design) << '\n';
  }
  try {
    write_file_atomically(file, out.str());
  } catch (const std::runtime_error& e) {
    throw ResultsError(e.what());
  }
}

bool ResultsTable::has_column(const std::string& name) const {
  return std::find(columns.begin(), columns.end(), name) != columns.end();
}

std::vector<MatrixResult> read_results_csv(const std::filesystem::path& file) {
  return read_results_table(file).rows;
}

ResultsTable read_results_table(const std::filesystem::path& file) {
  const std::optional<std::string> bytes = datasets::read_file_bytes(file);
  if (!bytes) throw ResultsError(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  const std::string& text = *bytes;
  const std::string name = file.string();
  std::size_t pos = 0;
  std::size_t line = 1;
  if (text.empty())
    throw ResultsError(name + ":1: empty file (expected a header line: " + "matrix,nnz,agent,...)");
  const std::vector<std::string> header = next_record(text, pos, line, name);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.size(); ++i) column.emplace(header[i], i);
  for (const char* required : {"matrix", "agent"}) {
    if (column.count(required) == 0) {
      throw ResultsError(name + ":1: the header has no '" + required + "' column");
    }
  }
  ResultsTable table;
  table.columns = header;
  std::vector<MatrixResult>& rows = table.rows;
  while (pos < text.size()) {
    const std::size_t record_line = line;
    const std::vector<std::string> fields = next_record(text, pos, line, name);
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (fields.size() != header.size()) {
      throw ResultsError(name + ":" + std::to_string(record_line) + ": " +
                         std::to_string(fields.size()) + " fields, the header has " +
                         std::to_string(header.size()));
    }
    auto field = [&](const char* col) -> std::optional<std::string> {
      const auto it = column.find(col);
      if (it == column.end()) return std::nullopt;
      return fields[it->second];
    };
    auto where = [&](const char* col) {
      return name + ":" + std::to_string(record_line) + ": column '" + col + "'";
    };
    auto number = [&](const char* col) {
      const auto f = field(col);
      return f ? parse_number(*f, where(col)) : kNaN;
    };
    MatrixResult r;
    r.matrix = *field("matrix");
    r.agent = *field("agent");
    if (r.matrix.empty()) throw ResultsError(where("matrix") + ": empty");
    if (const auto f = field("nnz"); f && !f->empty()) {
      const double v = parse_number(*f, where("nnz"));
      if (!(v >= 0) || v != std::floor(v))
        throw ResultsError(where("nnz") + ": '" + *f + "' is not a count");
      r.nnz = static_cast<std::int64_t>(v);
    }
    auto count = [&](const char* col) -> std::int64_t {
      const auto f = field(col);
      if (!f || f->empty()) return 0;
      const double v = parse_number(*f, where(col));
      if (!(v >= 0) || v != std::floor(v))
        throw ResultsError(where(col) + ": '" + *f + "' is not a count");
      return static_cast<std::int64_t>(v);
    };
    r.samples = count("samples");
    r.samples_compiled = count("samples_compiled");
    r.samples_correct = count("samples_correct");
    if (const auto f = field("tested"); f && !f->empty()) r.tested = parse_bool(*f, where("tested"));
    if (const auto f = field("compiled")) r.compiled = parse_bool(*f, where("compiled"));
    if (const auto f = field("correct")) r.correct = parse_bool(*f, where("correct"));
    r.candidate_us = number("candidate_us");
    r.cusparse_us = number("cusparse_us");
    r.speedup = number("speedup");
    r.gflops = number("gflops");
    r.bandwidth_fraction = number("bandwidth_fraction");
    r.best_speedup = number("best_speedup");
    if (const auto f = field("program")) r.program = *f;
    if (const auto f = field("regime"); f && !f->empty()) {
      if (!datasets::parse_regime(*f))
        throw ResultsError(where("regime") + ": '" + *f + "' is not small, medium or large");
      r.regime = *f;
    }
    if (const auto f = field("family")) r.family = *f;
    r.oracle_speedup = number("oracle_speedup");
    r.oracle_fraction = number("oracle_fraction");
    if (const auto f = field("novel"); f && !f->empty()) r.novel = parse_bool(*f, where("novel"));
    r.corpus_distance = number("corpus_distance");
    if (const auto f = field("cusparse_path")) r.cusparse_path = *f;
    if (const auto f = field("cusparse_paths")) r.cusparse_paths = *f;
    r.search_seconds = number("search_seconds");
    if (const auto f = field("design")) r.design = *f;
    rows.push_back(std::move(r));
    table.lines.push_back(record_line);
  }
  return table;
}

double row_pass_at_k(const MatrixResult& row, std::int64_t k) {
  const std::int64_t n = 1 + row.samples;
  const std::int64_t c = std::min<std::int64_t>(n, (row.correct ? 1 : 0) + row.samples_correct);
  return pass_at_k(n, c, std::clamp<std::int64_t>(k, 1, n));
}

std::vector<AgentSummary> summarize_results(const std::vector<MatrixResult>& rows) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const MatrixResult*>> by_agent;
  for (const MatrixResult& r : rows) {
    auto& v = by_agent[r.agent];
    if (v.empty()) order.push_back(r.agent);
    v.push_back(&r);
  }
  std::vector<AgentSummary> out;
  for (const std::string& agent : order) {
    const auto& rs = by_agent[agent];
    AgentSummary s;
    s.agent = agent;
    s.matrices = static_cast<std::int64_t>(rs.size());
    std::int64_t compiled = 0, correct = 0, faster = 0;
    std::vector<double> speedups, fallback, gflops, bandwidth;
    for (const MatrixResult* r : rs) {
      compiled += r->compiled ? 1 : 0;
      const bool usable = r->correct && counts(r->speedup);
      if (r->correct) {
        ++correct;
        if (std::isfinite(r->gflops)) gflops.push_back(r->gflops);
        if (std::isfinite(r->bandwidth_fraction)) bandwidth.push_back(r->bandwidth_fraction);
      }
      if (usable) {
        speedups.push_back(r->speedup);
        if (r->speedup > 1) ++faster;
      }
      fallback.push_back(speedup_or_one(*r));
    }
    std::vector<double> oracle;
    std::int64_t novel = 0, novelty_known = 0;
    for (const MatrixResult* r : rs) {
      if (std::isfinite(r->oracle_fraction) && r->oracle_fraction > 0) {
        oracle.push_back(r->oracle_fraction);
      }
      if (r->correct && r->novel) {
        ++novelty_known;
        novel += *r->novel ? 1 : 0;
      }
    }
    s.geomean_oracle_fraction = geomean(oracle);
    s.novel_share =
        novelty_known > 0 ? static_cast<double>(novel) / static_cast<double>(novelty_known) : kNaN;
    std::int64_t samples = 0, samples_compiled = 0;
    std::vector<double> best;
    for (const MatrixResult* r : rs) {
      s.tested = s.tested && r->tested;
      s.k = std::max(s.k, r->samples);
      samples += r->samples;
      samples_compiled += r->samples_compiled;
      best.push_back(counts(r->best_speedup) ? r->best_speedup : 1.0);
    }
    const bool sampled = samples > 0;
    const auto n = static_cast<double>(rs.size());
    double pass_1 = 0, pass_k = 0;
    for (const MatrixResult* r : rs) {
      pass_1 += row_pass_at_k(*r, 1);
      if (sampled) pass_k += row_pass_at_k(*r, s.k);
    }
    s.pass_at_k = sampled ? pass_k / n : kNaN;
    s.sample_compile_rate =
        sampled ? static_cast<double>(samples_compiled) / static_cast<double>(samples) : kNaN;
    s.geomean_best_speedup = sampled ? geomean(best) : kNaN;
    s.correct_rate = static_cast<double>(correct) / n;
    s.geomean_speedup = geomean(speedups);
    s.geomean_speedup_fallback = geomean(fallback);
    s.faster_share = static_cast<double>(faster) / n;
    s.median_gflops = median(gflops);
    double bw = 0;
    for (double b : bandwidth) bw += b;
    s.mean_bandwidth_fraction =
        bandwidth.empty() ? kNaN : bw / static_cast<double>(bandwidth.size());
    s.compile_rate = static_cast<double>(compiled) / n;
    s.pass_at_1 = pass_1 / n;
    if (!s.tested) {
      for (double* v : {&s.correct_rate, &s.pass_at_1, &s.pass_at_k, &s.geomean_speedup,
                        &s.geomean_speedup_fallback, &s.faster_share, &s.median_gflops,
                        &s.mean_bandwidth_fraction, &s.geomean_best_speedup,
                        &s.geomean_oracle_fraction, &s.novel_share}) {
        *v = kNaN;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<PairedComparison> compare_with_reference(const std::vector<MatrixResult>& rows,
                                                     const std::string& reference) {
  std::vector<PairedComparison> out;
  if (reference.empty()) return out;
  std::map<std::string, const MatrixResult*> ref;
  for (const MatrixResult& r : rows) {
    if (r.agent == reference) ref.emplace(r.matrix, &r);
  }
  if (ref.empty()) return out;
  std::vector<std::string> order;
  std::map<std::string, std::vector<const MatrixResult*>> by_agent;
  for (const MatrixResult& r : rows) {
    if (r.agent == reference) continue;
    auto& v = by_agent[r.agent];
    if (v.empty()) order.push_back(r.agent);
    v.push_back(&r);
  }
  for (const std::string& agent : order) {
    PairedComparison p;
    p.agent = agent;
    bool tested = true;
    double log_sum = 0;
    for (const MatrixResult* r : by_agent[agent]) {
      const auto it = ref.find(r->matrix);
      if (it == ref.end()) continue;
      const MatrixResult& base = *it->second;
      ++p.matrices;
      if (r->program != base.program) ++p.different_programs;
      tested = tested && r->tested && base.tested;
      const double ratio = speedup_or_one(*r) / speedup_or_one(base);
      log_sum += std::log(ratio);
      if (ratio > 1) ++p.faster;
      if (ratio < 1) ++p.slower;
    }
    if (p.matrices == 0) continue;
    p.speedup_ratio = tested ? std::exp(log_sum / static_cast<double>(p.matrices)) : kNaN;
    if (!tested) p.faster = p.slower = 0;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<MatrixResult> rows_of_regime(const std::vector<MatrixResult>& rows,
                                         const std::string& regime) {
  if (regime == "all") return rows;
  std::vector<MatrixResult> out;
  for (const MatrixResult& r : rows) {
    if (regime_name(r) == regime) out.push_back(r);
  }
  return out;
}

std::vector<RegimeSummary> summarize_by_regime(const std::vector<MatrixResult>& rows) {
  std::vector<RegimeSummary> out;
  for (const char* regime : {"all", "large", "medium", "small"}) {
    const std::vector<MatrixResult> part = rows_of_regime(rows, regime);
    if (part.empty()) continue;
    out.push_back({regime, summarize_results(part)});
  }
  return out;
}

void write_summary_csv(const std::filesystem::path& file, const std::vector<MatrixResult>& rows,
                       const std::string& reference) {
  std::ostringstream out;
  out << "regime,agent,matrices,tested,compile_rate,pass@1,pass@k,k,geomean_speedup,"
         "geomean_speedup_fallback,faster_share,median_gflops,mean_bandwidth_fraction,"
         "sample_compile_rate,geomean_best_speedup,speedup_vs_reference,answers_differing,"
         "geomean_oracle_fraction,novel_share\n";
  for (const RegimeSummary& regime : summarize_by_regime(rows)) {
    std::map<std::string, PairedComparison> paired;
    for (const PairedComparison& p :
         compare_with_reference(rows_of_regime(rows, regime.regime), reference)) {
      paired[p.agent] = p;
    }
    for (const AgentSummary& s : regime.agents) {
      const auto p = paired.find(s.agent);
      out << regime.regime << ',' << csv_field(s.agent) << ',' << s.matrices << ','
          << (s.tested ? 1 : 0) << ',' << csv_number(s.compile_rate) << ','
          << csv_number(s.pass_at_1) << ',' << csv_number(s.pass_at_k) << ',' << s.k << ','
          << csv_number(s.geomean_speedup) << ',' << csv_number(s.geomean_speedup_fallback) << ','
          << csv_number(s.faster_share) << ',' << csv_number(s.median_gflops) << ','
          << csv_number(s.mean_bandwidth_fraction) << ',' << csv_number(s.sample_compile_rate)
          << ',' << csv_number(s.geomean_best_speedup) << ','
          << (p == paired.end() ? std::string() : csv_number(p->second.speedup_ratio)) << ','
          << (p == paired.end() ? std::string() : std::to_string(p->second.different_programs))
          << ',' << csv_number(s.geomean_oracle_fraction) << ',' << csv_number(s.novel_share)
          << '\n';
    }
  }
  try {
    write_file_atomically(file, out.str());
  } catch (const std::runtime_error& e) {
    throw ResultsError(e.what());
  }
}

}  // namespace sparserl::experiments
