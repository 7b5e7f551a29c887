// The measurement store (measurement_store.hpp): JSON lines through nlohmann-json, a header line
// with the format and its version, strict reading that names the file and line of anything wrong,
// and appends of one search at a time.
#include "sparserl/kernels/measurement_store.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sparserl/datasets/text.hpp"
#include "sparserl/kernels/template_search.hpp"
#include "sparserl/reward/eval_result.hpp"

namespace sparserl::kernels {
namespace {

using json = nlohmann::ordered_json;

// A field of a record; MeasurementStoreError naming where when it is missing or of another type.
class RecordReader {
 public:
  RecordReader(const json& record, std::string where) : record_(record), where_(std::move(where)) {}

  [[nodiscard]] const json& field(const char* name) const {
    const auto it = record_.find(name);
    if (it == record_.end()) fail(std::string("missing field \"") + name + "\"");
    return *it;
  }
  [[nodiscard]] std::string text(const char* name) const {
    return typed<std::string>(name, &json::is_string, "a string");
  }
  [[nodiscard]] double number(const char* name) const {
    return typed<double>(name, &json::is_number, "a number");
  }
  [[nodiscard]] std::int64_t integer(const char* name) const {
    return typed<std::int64_t>(name, &json::is_number_integer, "an integer");
  }
  [[nodiscard]] bool flag(const char* name) const {
    return typed<bool>(name, &json::is_boolean, "true or false");
  }
  [[nodiscard]] Op op() const {
    const auto op = datasets::parse_op(text("op"));
    if (!op) fail("\"op\" must be spmv or spmm");
    return *op;
  }
  [[nodiscard]] DType dtype() const {
    const auto dtype = datasets::parse_dtype(text("dtype"));
    if (!dtype) fail("\"dtype\" must be f32 or f64");
    return *dtype;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw MeasurementStoreError(where_ + ": " + what);
  }

 private:
  // The field `name` as a T, where `is_type` holds for it; otherwise "\"name\" must be <type>".
  template <class T>
  [[nodiscard]] T typed(const char* name, bool (json::*is_type)() const noexcept,
                        const char* type) const {
    const json& v = field(name);
    if (!(v.*is_type)()) fail(std::string("\"") + name + "\" must be " + type);
    return v.get<T>();
  }

  const json& record_;
  std::string where_;
};

// JSON has no NaN or infinity (nlohmann writes null, which reads back as no number): a figure that
// is not finite is stored as 0, the value of a figure that was not measured.
double finite(double v) { return std::isfinite(v) ? v : 0.0; }

json features_json(const datasets::MatrixFeatures& f) {
  json out = json::object();
  const std::vector<double> values = f.to_vector();
  const auto& names = datasets::feature_names();
  for (std::size_t i = 0; i < names.size(); ++i) out[names[i]] = finite(values[i]);
  return out;
}

datasets::MatrixFeatures read_features(const RecordReader& record) {
  const json& v = record.field("features");
  if (!v.is_object()) record.fail("\"features\" must be an object");
  const RecordReader in(v, "");
  const auto number = [&](const char* name) {
    try {
      return in.number(name);
    } catch (const MeasurementStoreError& e) {
      record.fail(std::string("features") + e.what());
    }
  };
  datasets::MatrixFeatures f;
  const auto count = [&](const char* name) { return static_cast<std::int64_t>(number(name)); };
  f.rows = count("rows");
  f.cols = count("cols");
  f.nnz = count("nnz");
  f.density = number("density");
  f.row_nnz_min = count("row_nnz_min");
  f.row_nnz_mean = number("row_nnz_mean");
  f.row_nnz_max = count("row_nnz_max");
  f.row_nnz_std = number("row_nnz_std");
  f.row_nnz_gini = number("row_nnz_gini");
  f.empty_rows = count("empty_rows");
  f.empty_row_share = number("empty_row_share");
  f.bandwidth = count("bandwidth");
  f.profile = number("profile");
  f.diagonal_share = number("diagonal_share");
  f.dense_block_share = number("dense_block_share");
  return f;
}

json task_json(const std::string& kind, const MeasuredTask& t) {
  return {{"kind", kind},
          {"uri", t.uri},
          {"op", std::string(to_string(t.op))},
          {"dtype", std::string(to_string(t.dtype))},
          {"k", t.k},
          {"device", t.device}};
}

// The fields of a record after its task (and a candidate's features), in the file's order, each
// with its key: the writer and the reader below walk one list, so each key is spelt once.
template <class M, class Visit>  // M: Measurement or const Measurement
void measurement_fields(M& m, Visit&& visit) {
  visit("design", m.design);
  visit("generator", m.generator);
  visit("round", m.round);
  visit("protocol", m.protocol);
  visit("compiled", m.compiled);
  visit("correct", m.correct);
  visit("timed", m.timed);
  visit("error", m.error);
  visit("median_us", m.median_us);
  visit("p10_us", m.p10_us);
  visit("p90_us", m.p90_us);
  visit("baseline_us", m.baseline_us);
  visit("baseline_algorithm", m.baseline_algorithm);
  visit("predicted_us", m.predicted_us);
}

template <class S, class Visit>  // S: SearchRecord or const SearchRecord
void search_fields(S& s, Visit&& visit) {
  visit("budget", s.budget);
  visit("evaluations", s.evaluations);
  visit("best_design", s.best_design);
  visit("best_us", s.best_us);
  visit("baseline_us", s.baseline_us);
  visit("speedup", s.speedup);
  visit("wall_seconds", s.wall_seconds);
  visit("strategy", s.strategy);
}

// Writes one field of such a list (a figure that is not finite as 0, see finite()).
struct FieldWriter {
  json& out;
  void operator()(const char* key, const std::string& v) const { out[key] = v; }
  void operator()(const char* key, int v) const { out[key] = v; }
  void operator()(const char* key, bool v) const { out[key] = v; }
  void operator()(const char* key, double v) const { out[key] = finite(v); }
};

// Reads one field of such a list, strictly typed (RecordReader's errors).
struct FieldReader {
  const RecordReader& in;
  void operator()(const char* key, std::string& v) const { v = in.text(key); }
  void operator()(const char* key, int& v) const { v = static_cast<int>(in.integer(key)); }
  void operator()(const char* key, bool& v) const { v = in.flag(key); }
  void operator()(const char* key, double& v) const { v = in.number(key); }
};

json measurement_json(const Measurement& m) {
  json out = task_json("candidate", m);
  out["features"] = features_json(m.features);
  measurement_fields(m, FieldWriter{out});
  return out;
}

json search_json(const SearchRecord& s) {
  json out = task_json("search", s);
  search_fields(s, FieldWriter{out});
  return out;
}

MeasuredTask read_task(const RecordReader& r) {
  MeasuredTask t;
  t.uri = r.text("uri");
  t.op = r.op();
  t.dtype = r.dtype();
  t.k = r.integer("k");
  t.device = r.text("device");
  return t;
}

Measurement read_measurement(const RecordReader& r) {
  Measurement m;
  static_cast<MeasuredTask&>(m) = read_task(r);
  m.features = read_features(r);
  measurement_fields(m, FieldReader{r});
  return m;
}

SearchRecord read_search(const RecordReader& r) {
  SearchRecord s;
  static_cast<MeasuredTask&>(s) = read_task(r);
  search_fields(s, FieldReader{r});
  return s;
}

datasets::Task task_of(const std::string& uri, Op op, DType dtype, std::int64_t k) {
  return {uri, op, dtype, static_cast<datasets::Index>(op == Op::spmm ? k : 1)};
}

MeasuredTask measured_task(const SearchResult& r) {
  return {r.task.uri, r.task.op, r.task.dtype, r.task.op == Op::spmm ? r.task.k : 1, r.device};
}

}  // namespace

std::string MeasuredTask::task_key() const { return task_of(uri, op, dtype, k).str(); }

std::vector<Measurement> measurements_of(const SearchResult& r) {
  std::vector<Measurement> out;
  for (const CandidateResult& c : r.candidates) {
    const reward::EvalResult& e = c.result;
    Measurement m;
    static_cast<MeasuredTask&>(m) = measured_task(r);
    m.features = r.features;
    m.design = c.point.id();
    m.generator = c.point.generator;
    m.round = c.round;
    m.protocol = c.protocol;
    m.compiled = e.compiled;
    m.correct = e.correct;
    m.timed = e.timed;
    m.error = std::string(reward::to_string(e.error));
    if (e.timed) {
      m.median_us = e.timing.median_us;
      m.p10_us = e.timing.p10_us;
      m.p90_us = e.timing.p90_us;
      m.baseline_us = e.timing.baseline_median_us;
      m.baseline_algorithm = e.timing.baseline_algorithm;
    }
    m.predicted_us = c.predicted_us;
    out.push_back(std::move(m));
  }
  return out;
}

SearchRecord search_record_of(const SearchResult& r) {
  SearchRecord s;
  static_cast<MeasuredTask&>(s) = measured_task(r);
  s.budget = r.budget;
  s.evaluations = static_cast<int>(r.candidates.size());
  if (const CandidateResult* b = r.best_candidate()) {
    s.best_design = b->point.id();
    if (b->result.timed) {
      s.best_us = b->result.timing.median_us;
      s.baseline_us = b->result.timing.baseline_median_us;
      s.speedup = b->result.timing.speedup;
    }
  }
  s.wall_seconds = r.wall_seconds;
  s.strategy = r.strategy;
  return s;
}

MeasurementStore::MeasurementStore(std::filesystem::path path, bool create, std::string created_by)
    : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    if (!create) throw MeasurementStoreError(path_.string() + ": no such measurement store");
    std::ofstream out(path_, std::ios::binary);
    const json header = {{"format", kFormatName},
                         {"format_version", kFormatVersion},
                         {"created_by", std::move(created_by)},
                         {"created_utc", datasets::utc_text(std::chrono::system_clock::now())}};
    out << header.dump() << '\n';
    if (!out) throw MeasurementStoreError(path_.string() + ": cannot create the measurement store");
    return;
  }
  read();
}

void MeasurementStore::read() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw MeasurementStoreError(path_.string() + ": cannot open the measurement store");
  std::string line;
  std::int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = path_.string() + ":" + std::to_string(number);
    if (in.eof()) {
      throw MeasurementStoreError(where +
                                  ": the last line has no line end (an interrupted write?); "
                                  "remove it to use the file");
    }
    json record;
    try {
      record = json::parse(line);
    } catch (const json::exception& e) {
      throw MeasurementStoreError(where + ": not a JSON line (" + e.what() + ")");
    }
    if (!record.is_object()) throw MeasurementStoreError(where + ": not a JSON object");
    const RecordReader r(record, where);
    if (number == 1) {
      if (!record.contains("format") || record["format"] != kFormatName) {
        r.fail(std::string("not a measurement store (the first line has no \"format\": \"") +
               kFormatName + "\")");
      }
      const std::int64_t version = r.integer("format_version");
      if (version != kFormatVersion) {
        r.fail("format_version " + std::to_string(version) +
               " is not supported (this build reads " + std::to_string(kFormatVersion) + ")");
      }
      continue;
    }
    const std::string kind = r.text("kind");
    if (kind == "candidate") {
      measurements_.push_back(read_measurement(r));
    } else if (kind == "search") {
      searches_.push_back(read_search(r));
      searched_.insert(searches_.back().task_key() + "\n" + searches_.back().device);
    } else {
      r.fail("unknown record kind \"" + kind + "\" (candidate or search)");
    }
  }
  if (number == 0) throw MeasurementStoreError(path_.string() + ":1: empty file, no header line");
}

bool MeasurementStore::searched(const datasets::Task& task, const std::string& device) const {
  return searched_.count(task_of(task.uri, task.op, task.dtype, task.k).str() + "\n" + device) != 0;
}

void MeasurementStore::append(const SearchResult& result) {
  std::vector<Measurement> added = measurements_of(result);
  const SearchRecord search = search_record_of(result);
  std::string text;
  for (const Measurement& m : added) text += measurement_json(m).dump() + '\n';
  text += search_json(search).dump() + '\n';
  {
    std::ofstream out(path_, std::ios::binary | std::ios::app);
    out << text;
    out.flush();
    if (!out)
      throw MeasurementStoreError(path_.string() + ": cannot append to the measurement store");
  }
  for (Measurement& m : added) measurements_.push_back(std::move(m));
  searches_.push_back(search);
  searched_.insert(search.task_key() + "\n" + search.device);
}

}  // namespace sparserl::kernels
