// The tuning outputs (tuning_output.hpp): CSV rows, the Markdown summary and the HDF5 dataset
// through the HDF5 C API, one 1-D chunked, resizable dataset per column.
#include "sparserl/kernels/tuning_output.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <variant>

#include "sparserl/datasets/text.hpp"
#include "sparserl/kernels/design_space.hpp"

namespace sparserl::kernels {
namespace {

using datasets::fixed;

std::string csv_field(std::string_view text) {
  const bool quote = text.find_first_of(",\"\n\r") != std::string_view::npos;
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string first_line(const std::string& text, std::size_t limit = 300) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit) line = line.substr(0, limit) + "...";
  return line;
}

double nan_if_untimed(const reward::EvalResult& r, double v) {
  return r.timed ? v : std::numeric_limits<double>::quiet_NaN();
}

// -------------------------------------------------------------------------------------------------
// HDF5 plumbing

using Value = std::variant<std::string, std::int64_t, double>;
enum class Kind { str, i64, u8, f64 };
struct Column {
  const char* name;
  Kind kind;
};

constexpr hsize_t kChunkRows = 64;

void check(herr_t status, const std::string& what, const std::filesystem::path& file) {
  if (status < 0) throw std::runtime_error("HDF5: " + what + " failed for " + file.string());
}
hid_t check_id(hid_t id, const std::string& what, const std::filesystem::path& file) {
  if (id < 0) throw std::runtime_error("HDF5: " + what + " failed for " + file.string());
  return id;
}

hid_t string_type() {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

void write_string_attribute(hid_t object, const char* name, const std::string& value,
                            const std::filesystem::path& file) {
  const hid_t type = string_type();
  const hid_t space = H5Screate(H5S_SCALAR);
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  const hid_t attr =
      check_id(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), name, file);
  const char* data = value.c_str();
  check(H5Awrite(attr, type, &data), std::string("writing attribute ") + name, file);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

void write_int_attribute(hid_t object, const char* name, std::int64_t value,
                         const std::filesystem::path& file) {
  const hid_t space = H5Screate(H5S_SCALAR);
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  const hid_t attr = check_id(
      H5Acreate2(object, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), name, file);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value), std::string("writing attribute ") + name, file);
  H5Aclose(attr);
  H5Sclose(space);
}

// A group of equally long column datasets.
class ColumnGroup {
 public:
  ColumnGroup(hid_t file_id, const char* name, std::vector<Column> columns,
              const std::filesystem::path& file)
      : columns_(std::move(columns)), file_(file) {
    group_ = check_id(H5Gcreate2(file_id, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      std::string("creating group ") + name, file);
    for (const Column& c : columns_) {
      const hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = kChunkRows;
      const hid_t space = H5Screate_simple(1, &dims, &maxdims);
      const hid_t props = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(props, 1, &chunk);
      if (c.kind == Kind::str) H5Pset_deflate(props, 4);  // programs compress well
      const hid_t type = file_type(c.kind);
      datasets_.push_back(
          check_id(H5Dcreate2(group_, c.name, type, space, H5P_DEFAULT, props, H5P_DEFAULT),
                   std::string("creating dataset ") + name + "/" + c.name, file));
      H5Tclose(type);
      H5Pclose(props);
      H5Sclose(space);
    }
    write_int_attribute(group_, "rows", 0, file_);
  }
  ~ColumnGroup() {
    for (hid_t d : datasets_) H5Dclose(d);
    if (group_ >= 0) H5Gclose(group_);
  }
  ColumnGroup(const ColumnGroup&) = delete;
  ColumnGroup& operator=(const ColumnGroup&) = delete;

  // rows[i] holds one value per column, in column order.
  void append(const std::vector<std::vector<Value>>& rows) {
    if (rows.empty()) return;
    const hsize_t start = rows_, count = rows.size(), total = rows_ + rows.size();
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const hid_t ds = datasets_[c];
      check(H5Dset_extent(ds, &total), std::string("extending ") + columns_[c].name, file_);
      const hid_t fspace = H5Dget_space(ds);
      H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
      const hid_t mspace = H5Screate_simple(1, &count, nullptr);
      herr_t status = 0;
      switch (columns_[c].kind) {
        case Kind::str: {
          std::vector<const char*> data;
          for (const auto& row : rows) data.push_back(std::get<std::string>(row[c]).c_str());
          const hid_t type = string_type();
          status = H5Dwrite(ds, type, mspace, fspace, H5P_DEFAULT, data.data());
          H5Tclose(type);
          break;
        }
        case Kind::i64: {
          std::vector<std::int64_t> data;
          for (const auto& row : rows) data.push_back(std::get<std::int64_t>(row[c]));
          status = H5Dwrite(ds, H5T_NATIVE_INT64, mspace, fspace, H5P_DEFAULT, data.data());
          break;
        }
        case Kind::u8: {
          std::vector<std::uint8_t> data;
          for (const auto& row : rows) data.push_back(std::get<std::int64_t>(row[c]) != 0 ? 1 : 0);
          status = H5Dwrite(ds, H5T_NATIVE_UINT8, mspace, fspace, H5P_DEFAULT, data.data());
          break;
        }
        case Kind::f64: {
          std::vector<double> data;
          for (const auto& row : rows) data.push_back(std::get<double>(row[c]));
          status = H5Dwrite(ds, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, data.data());
          break;
        }
      }
      H5Sclose(mspace);
      H5Sclose(fspace);
      check(status, std::string("writing ") + columns_[c].name, file_);
    }
    rows_ = total;
    write_int_attribute(group_, "rows", static_cast<std::int64_t>(rows_), file_);
  }

  [[nodiscard]] std::int64_t rows() const { return static_cast<std::int64_t>(rows_); }

 private:
  static hid_t file_type(Kind kind) {
    switch (kind) {
      case Kind::str:
        return string_type();
      case Kind::i64:
        return H5Tcopy(H5T_STD_I64LE);
      case Kind::u8:
        return H5Tcopy(H5T_STD_U8LE);
      case Kind::f64:
        return H5Tcopy(H5T_IEEE_F64LE);
    }
    return H5Tcopy(H5T_STD_I64LE);
  }

  std::vector<Column> columns_;
  std::filesystem::path file_;
  hid_t group_ = -1;
  std::vector<hid_t> datasets_;
  hsize_t rows_ = 0;
};

const std::vector<Column>& candidate_column_defs() {
  static const std::vector<Column> c = {
      {"task", Kind::str},         {"uri", Kind::str},         {"op", Kind::str},
      {"dtype", Kind::str},        {"k", Kind::i64},           {"rows", Kind::i64},
      {"cols", Kind::i64},         {"nnz", Kind::i64},         {"design_id", Kind::str},
      {"generator", Kind::str},    {"format", Kind::str},      {"program", Kind::str},
      {"round", Kind::i64},        {"protocol", Kind::str},    {"compiled", Kind::u8},
      {"correct", Kind::u8},       {"timed", Kind::u8},        {"error", Kind::str},
      {"message", Kind::str},      {"median_us", Kind::f64},   {"p10_us", Kind::f64},
      {"p90_us", Kind::f64},       {"baseline_us", Kind::f64}, {"baseline_algorithm", Kind::str},
      {"speedup", Kind::f64},      {"gflops", Kind::f64},      {"bandwidth_fraction", Kind::f64},
      {"predicted_us", Kind::f64}, {"learned_us", Kind::f64},  {"registers", Kind::i64},
      {"best", Kind::u8},
  };
  return c;
}

const std::vector<Column>& sft_column_defs() {
  static const std::vector<Column> c = {
      {"task", Kind::str},
      {"uri", Kind::str},
      {"op", Kind::str},
      {"dtype", Kind::str},
      {"k", Kind::i64},
      {"design_id", Kind::str},
      {"program", Kind::str},
      {"median_us", Kind::f64},
      {"baseline_us", Kind::f64},
      {"speedup", Kind::f64},
      {"bandwidth_fraction", Kind::f64},
      {"correct", Kind::u8},
      {"candidate_row", Kind::i64},
      {"rank", Kind::i64},
  };
  return c;
}

const std::vector<Column>& corpus_column_defs() {
  static const std::vector<Column> c = {
      {"op", Kind::str},      {"dtype", Kind::str}, {"design_id", Kind::str},
      {"program", Kind::str}, {"tasks", Kind::i64}, {"best_of", Kind::i64},
  };
  return c;
}

std::vector<std::string> names_of(const std::vector<Column>& columns) {
  std::vector<std::string> out;
  for (const Column& c : columns) out.emplace_back(c.name);
  return out;
}

}  // namespace

std::string best_program_file_name(const datasets::Task& task) {
  std::string name;
  try {
    const datasets::MatrixUri uri = datasets::MatrixUri::parse(task.uri);
    switch (uri.scheme) {
      case datasets::MatrixUri::Scheme::suitesparse:
        name = uri.name;
        break;
      case datasets::MatrixUri::Scheme::generated: {
        name = uri.kind;
        for (const auto& [k, v] : uri.params) name += "_" + k + "_" + v;
        break;
      }
      case datasets::MatrixUri::Scheme::file:
        name = std::filesystem::path(uri.path).stem().string();
        break;
    }
  } catch (const std::exception&) {
    name = task.uri;
  }
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  name += "." + std::string(to_string(task.op)) + "." + std::string(to_string(task.dtype));
  if (task.op == Op::spmm) name += ".k" + std::to_string(task.k);
  return name + ".cu";
}

TaskSummary summarize(const SearchResult& r) {
  TaskSummary s;
  s.task = r.task;
  s.nnz = r.features.nnz;
  s.search_seconds = r.wall_seconds;
  s.budget = r.budget;
  s.strategy = r.strategy;
  for (const CandidateResult& c : r.candidates) {
    ++s.evaluations;
    s.compiled += c.result.compiled ? 1 : 0;
    s.correct_candidates += c.result.correct ? 1 : 0;
  }
  if (const CandidateResult* b = r.best_candidate()) {
    s.best_design = b->point.id();
    s.correct = b->result.correct;
    s.timed = b->result.timed;
    if (s.timed) {
      s.best_us = b->result.timing.median_us;
      s.baseline_us = b->result.timing.baseline_median_us;
      s.baseline_algorithm = b->result.timing.baseline_algorithm;
      s.speedup = b->result.timing.speedup;
      s.bandwidth_fraction = b->result.timing.bandwidth_fraction;
    }
  }
  return s;
}

double geomean_speedup(const std::vector<TaskSummary>& tasks, bool small, int* count) {
  double log_sum = 0;
  int n = 0;
  for (const TaskSummary& t : tasks) {
    if (!t.timed || t.speedup <= 0) continue;
    if ((t.nnz < kSmallMatrixNnz) != small) continue;
    log_sum += std::log(t.speedup);
    ++n;
  }
  if (count) *count = n;
  return n == 0 ? 0.0 : std::exp(log_sum / n);
}

std::string candidates_csv_header() {
  return "task,uri,op,dtype,k,nnz,design_id,generator,format,round,protocol,compiled,correct,"
         "timed,error,median_us,p10_us,p90_us,baseline_us,baseline_algorithm,speedup,gflops,"
         "bandwidth_fraction,predicted_us,learned_us,registers,best,message\n";
}

std::string candidates_csv_rows(const SearchResult& r) {
  std::ostringstream out;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    const reward::EvalResult& e = c.result;
    const auto num = [&](double v) { return e.timed ? fixed(v, 3) : std::string(); };
    out << csv_field(r.task.str()) << ',' << csv_field(r.task.uri) << ',' << to_string(r.task.op)
        << ',' << to_string(r.task.dtype) << ',' << (r.task.op == Op::spmm ? r.task.k : 1) << ','
        << r.features.nnz << ',' << csv_field(c.point.id()) << ',' << c.point.generator << ','
        << csv_field(c.point.format().str()) << ',' << c.round << ',' << c.protocol << ','
        << (e.compiled ? 1 : 0) << ',' << (e.correct ? 1 : 0) << ',' << (e.timed ? 1 : 0) << ','
        << reward::to_string(e.error) << ',' << num(e.timing.median_us) << ','
        << num(e.timing.p10_us) << ',' << num(e.timing.p90_us) << ','
        << num(e.timing.baseline_median_us) << ',' << csv_field(e.timing.baseline_algorithm) << ','
        << num(e.timing.speedup) << ',' << num(e.timing.gflops) << ','
        << num(e.timing.bandwidth_fraction) << ',' << fixed(c.predicted_us, 3) << ','
        << (std::isfinite(c.learned_us) ? fixed(c.learned_us, 3) : std::string()) << ','
        << e.compile.max_registers << ',' << (r.best && *r.best == i ? 1 : 0) << ','
        << csv_field(first_line(e.message)) << '\n';
  }
  return out.str();
}

std::string summary_markdown(const std::vector<TaskSummary>& tasks, const TuningRunInfo& info) {
  std::ostringstream out;
  const bool gpu = !info.device.empty();
  out << "# Template search results\n\n";
  out << "- command: `" << info.command << "`\n";
  out << "- device: " << (gpu ? info.device : std::string("none (compile-only)")) << "\n";
  out << "- started: " << info.started_utc << "\n";
  out << "- budget: " << info.budget << " programs measured per task (first round)\n";
  out << "- protocol: " << info.protocol << "\n";
  out << "- times: CUPTI kernel time per run, median over the repetitions, L2 flushed before "
         "each; cuSPARSE: the best of its CSR algorithms, same protocol, same worker\n\n";
  if (!gpu) {
    out << "No GPU: every candidate went through the static checks and NVRTC only; nothing was "
           "ranked by time. Timing needs a GPU.\n\n";
  }
  const auto regime = [&](bool small) {
    int n = 0;
    const double g = geomean_speedup(tasks, small, &n);
    std::string line = small ? "small (< 200k nonzeros, launch-bound)" : "large (>= 200k nonzeros)";
    line += ": ";
    if (n == 0) return line + "no timed tasks";
    int wins = 0;
    double worst = 1e300;
    for (const TaskSummary& t : tasks) {
      if (!t.timed || (t.nnz < kSmallMatrixNnz) != small) continue;
      wins += t.speedup > 1.0 ? 1 : 0;
      worst = std::min(worst, t.speedup);
    }
    return line + "geomean speedup " + fixed(g, 3) + "x over " + std::to_string(n) + " tasks, " +
           std::to_string(wins) + " faster than cuSPARSE, slowest " + fixed(worst, 3) + "x";
  };
  out << "## Geomean speedup over cuSPARSE\n\n";
  out << "- " << regime(false) << "\n";
  out << "- " << regime(true) << "\n\n";
  out << "## Per task\n\n";
  out << "| matrix | op | dtype | k | nnz | cuSPARSE us | best us | speedup | bandwidth | "
         "design | evaluated | correct | search s | cuSPARSE path |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const TaskSummary& t : tasks) {
    out << "| " << t.task.uri << " | " << to_string(t.task.op) << " | " << to_string(t.task.dtype)
        << " | " << (t.task.op == Op::spmm ? t.task.k : 1) << " | " << t.nnz << " | "
        << (t.timed ? fixed(t.baseline_us, 2) : "-") << " | "
        << (t.timed ? fixed(t.best_us, 2) : "-") << " | "
        << (t.timed ? fixed(t.speedup, 2) + "x" : "-") << " | "
        << (t.timed ? fixed(100.0 * t.bandwidth_fraction, 0) + "%" : "-") << " | `"
        << (t.best_design.empty() ? "none" : t.best_design) << "` | " << t.evaluations << " | "
        << t.correct_candidates << " | " << fixed(t.search_seconds, 1) << " | "
        << (t.baseline_algorithm.empty() ? "-" : t.baseline_algorithm) << " |\n";
  }
  out << "\nsearch s: the template search's wall time for the task (matrix load, cost models, "
         "compiles and every evaluation).\n";
  std::map<std::string, int> strategies;
  for (const TaskSummary& t : tasks) ++strategies[t.strategy.substr(0, t.strategy.find(';'))];
  for (const auto& [strategy, count] : strategies) {
    if (!strategy.empty())
      out << "Candidates chosen by: " << strategy << " (" << count << " tasks).\n";
  }
  return out.str();
}

const std::vector<std::string>& candidate_columns() {
  static const std::vector<std::string> n = names_of(candidate_column_defs());
  return n;
}
const std::vector<std::string>& sft_columns() {
  static const std::vector<std::string> n = names_of(sft_column_defs());
  return n;
}
const std::vector<std::string>& corpus_columns() {
  static const std::vector<std::string> n = names_of(corpus_column_defs());
  return n;
}

struct TuningDataset::Impl {
  std::filesystem::path path;
  hid_t file = -1;
  std::unique_ptr<ColumnGroup> candidates, sft;
  struct CorpusEntry {
    std::string op, dtype, design_id, program;
    std::int64_t tasks = 0, best_of = 0;
  };
  std::vector<CorpusEntry> corpus;
  std::map<std::string, std::size_t> corpus_index;  // by op, dtype and program text
  SftSelection selection;
  bool closed = false;
};

std::vector<std::size_t> sft_candidates(const SearchResult& r, const SftSelection& selection) {
  const CandidateResult* best = r.best_candidate();
  if (best == nullptr || !best->result.correct) return {};
  std::vector<std::size_t> out = {*r.best};
  if (selection.per_task <= 1 || !best->result.timed) return out;
  const double limit_us = best->result.timing.median_us / selection.within;
  std::vector<std::size_t> near;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    if (i == *r.best || !c.result.correct || !c.result.timed || c.protocol != best->protocol ||
        c.result.timing.median_us > limit_us) {
      continue;
    }
    near.push_back(i);
  }
  std::stable_sort(near.begin(), near.end(), [&](std::size_t a, std::size_t b) {
    return r.candidates[a].result.timing.median_us < r.candidates[b].result.timing.median_us;
  });
  for (std::size_t i : near) {
    if (static_cast<int>(out.size()) >= selection.per_task) break;
    const bool seen = std::any_of(out.begin(), out.end(), [&](std::size_t j) {
      return r.candidates[j].program == r.candidates[i].program;
    });
    if (!seen) out.push_back(i);
  }
  return out;
}

std::optional<StoredTeacherPairs> stored_sft_pairs(const MeasurementStore& store,
                                                   const datasets::Task& task,
                                                   const SftSelection& selection,
                                                   const std::string& device) {
  const std::string key = MeasuredTask{task.uri, task.op, task.dtype, task.k, ""}.task_key();
  const SearchRecord* search = nullptr;
  for (const SearchRecord& s : store.searches()) {
    if (s.task_key() == key && (device.empty() || s.device == device)) search = &s;
  }
  if (search == nullptr) return std::nullopt;
  // The recorded search as a search result, its candidates' programs standing as their design ids
  // (one program a design) until the chosen ones are rendered: sft_candidates() chooses.
  SearchResult recorded;
  for (const Measurement& m : store.measurements()) {
    if (m.device != search->device || m.task_key() != key) continue;
    CandidateResult c;
    c.program = m.design;
    c.protocol = m.protocol;
    c.result.correct = m.correct;
    c.result.timed = m.usable();
    c.result.timing.median_us = m.median_us;
    // The best: its design's measurement under the full protocol where there is one (the search
    // picks among its finalists' full runs), the one nearest the recorded best time.
    const auto rank = [&](const CandidateResult& x) {
      return std::make_pair(x.protocol == "full" ? 0 : 1,
                            std::abs(x.result.timing.median_us - search->best_us));
    };
    if (m.design == search->best_design &&
        (!recorded.best || rank(c) < rank(recorded.candidates[*recorded.best]))) {
      recorded.best = recorded.candidates.size();
    }
    recorded.candidates.push_back(std::move(c));
  }
  StoredTeacherPairs out;
  out.device = search->device;
  for (std::size_t i : sft_candidates(recorded, selection)) {
    const std::string& design = recorded.candidates[i].program;
    try {
      out.programs.push_back(render_program(DesignPoint::parse(task.op, task.dtype, design)));
    } catch (const std::invalid_argument& e) {
      throw MeasurementStoreError(store.path().string() + ": " + key + ": design \"" + design +
                                  "\" is not in this build's design space (" + e.what() + ")");
    }
    out.designs.push_back(design);
    out.median_us.push_back(recorded.candidates[i].result.timing.median_us);
  }
  return out;
}

TuningDataset::TuningDataset(const std::filesystem::path& file, const TuningRunInfo& info,
                             SftSelection selection)
    : impl_(std::make_unique<Impl>()) {
  if (selection.per_task < 1 || !(selection.within > 0 && selection.within <= 1)) {
    throw std::invalid_argument("SFT selection: per_task must be >= 1 and within in (0, 1], not " +
                                std::to_string(selection.per_task) + " and " +
                                std::to_string(selection.within));
  }
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions with the file name
  impl_->path = file;
  impl_->selection = selection;
  impl_->file = check_id(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                         "creating the file", file);
  write_string_attribute(impl_->file, "format", "sparserl-tuning", file);
  write_int_attribute(impl_->file, "format_version", 1, file);
  write_string_attribute(impl_->file, "created_by", "sparserl tune", file);
  write_string_attribute(impl_->file, "command", info.command, file);
  write_string_attribute(impl_->file, "device", info.device, file);
  write_string_attribute(impl_->file, "started_utc", info.started_utc, file);
  write_string_attribute(impl_->file, "protocol", info.protocol, file);
  write_int_attribute(impl_->file, "budget", info.budget, file);
  write_int_attribute(impl_->file, "sft_per_task", selection.per_task, file);
  write_string_attribute(impl_->file, "sft_within", std::to_string(selection.within), file);
  impl_->candidates =
      std::make_unique<ColumnGroup>(impl_->file, "candidates", candidate_column_defs(), file);
  impl_->sft = std::make_unique<ColumnGroup>(impl_->file, "sft", sft_column_defs(), file);
  H5Fflush(impl_->file, H5F_SCOPE_GLOBAL);
}

TuningDataset::~TuningDataset() {
  try {
    close();
  } catch (const std::exception&) {
    // A destructor must not throw; close() reports failures to callers that call it.
  }
}

void TuningDataset::append(const SearchResult& r) {
  if (impl_->closed) throw std::logic_error("TuningDataset::append after close");
  const std::string task = r.task.str();
  const std::string op(to_string(r.task.op)), dtype(to_string(r.task.dtype));
  const std::int64_t k = r.task.op == Op::spmm ? r.task.k : 1;
  std::vector<std::vector<Value>> rows;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    const reward::EvalResult& e = c.result;
    const bool best = r.best && *r.best == i;
    rows.push_back({task,
                    r.task.uri,
                    op,
                    dtype,
                    k,
                    r.features.rows,
                    r.features.cols,
                    r.features.nnz,
                    c.point.id(),
                    c.point.generator,
                    c.point.format().str(),
                    c.program,
                    std::int64_t{c.round},
                    c.protocol,
                    std::int64_t{e.compiled},
                    std::int64_t{e.correct},
                    std::int64_t{e.timed},
                    std::string(reward::to_string(e.error)),
                    first_line(e.message, 2000),
                    nan_if_untimed(e, e.timing.median_us),
                    nan_if_untimed(e, e.timing.p10_us),
                    nan_if_untimed(e, e.timing.p90_us),
                    nan_if_untimed(e, e.timing.baseline_median_us),
                    e.timing.baseline_algorithm,
                    nan_if_untimed(e, e.timing.speedup),
                    nan_if_untimed(e, e.timing.gflops),
                    nan_if_untimed(e, e.timing.bandwidth_fraction),
                    c.predicted_us,
                    c.learned_us,
                    std::int64_t{e.compile.max_registers},
                    std::int64_t{best}});
    if (e.correct) {
      const std::string key = op + "|" + dtype + "|" + c.program;
      auto it = impl_->corpus_index.find(key);
      if (it == impl_->corpus_index.end()) {
        it = impl_->corpus_index.emplace(key, impl_->corpus.size()).first;
        impl_->corpus.push_back({op, dtype, c.point.id(), c.program, 0, 0});
      }
      // A program counts once per task, however many rounds measured it.
      bool seen = false;
      for (std::size_t j = 0; j < i; ++j) {
        seen |= r.candidates[j].result.correct && r.candidates[j].program == c.program;
      }
      if (!seen) impl_->corpus[it->second].tasks += 1;
      if (best) impl_->corpus[it->second].best_of += 1;
    }
  }
  const std::int64_t first_row = impl_->candidates->rows();
  impl_->candidates->append(rows);
  candidate_rows_ = impl_->candidates->rows();
  const std::vector<std::size_t> chosen = sft_candidates(r, impl_->selection);
  std::vector<std::vector<Value>> pairs;
  for (std::size_t rank = 0; rank < chosen.size(); ++rank) {
    const CandidateResult& c = r.candidates[chosen[rank]];
    const reward::EvalResult& e = c.result;
    pairs.push_back({task, r.task.uri, op, dtype, k, c.point.id(), c.program,
                     nan_if_untimed(e, e.timing.median_us),
                     nan_if_untimed(e, e.timing.baseline_median_us),
                     nan_if_untimed(e, e.timing.speedup),
                     nan_if_untimed(e, e.timing.bandwidth_fraction), std::int64_t{1},
                     first_row + static_cast<std::int64_t>(chosen[rank]),
                     static_cast<std::int64_t>(rank)});
  }
  if (!pairs.empty()) {
    impl_->sft->append(pairs);
    sft_rows_ = impl_->sft->rows();
  }
  H5Fflush(impl_->file, H5F_SCOPE_GLOBAL);
}

void TuningDataset::close() {
  if (impl_->closed) return;
  impl_->closed = true;
  {
    ColumnGroup corpus(impl_->file, "corpus", corpus_column_defs(), impl_->path);
    std::vector<std::vector<Value>> rows;
    for (const Impl::CorpusEntry& e : impl_->corpus) {
      rows.push_back({e.op, e.dtype, e.design_id, e.program, e.tasks, e.best_of});
    }
    corpus.append(rows);
    corpus_rows_ = corpus.rows();
    write_int_attribute(impl_->file, "corpus_rows", corpus_rows_, impl_->path);
  }
  write_int_attribute(impl_->file, "candidate_rows", candidate_rows_, impl_->path);
  write_int_attribute(impl_->file, "sft_rows", sft_rows_, impl_->path);
  impl_->candidates.reset();
  impl_->sft.reset();
  check(H5Fclose(impl_->file), "closing the file", impl_->path);
  impl_->file = -1;
}

}  // namespace sparserl::kernels
