// Reading a trajectory file's columns with the HDF5 C API and summarising them
// (trajectory_summary.hpp). Numeric columns of any integer or float type are read converted to
// double (HDF5 converts); text columns may be variable-length or fixed-length strings. HDF5's own
// error printing is silenced while we probe, and restored after, so a missing column is a note
// rather than a screen of stack traces.
#include "sparserl/experiments/trajectory_summary.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace sparserl::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Silences HDF5's automatic error printing for the lifetime of the object.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// An hid_t closed with the right H5*close when it goes out of scope.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  Closer close_;
};

// A string attribute's value, variable- or fixed-length (a fixed one cut at its first NUL).
std::optional<std::string> string_value(hid_t attr, hid_t type) {
  if (H5Tis_variable_str(type) > 0) {
    const Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type));
    char* value = nullptr;
    if (H5Aread(attr, mem.get(), &value) < 0) return std::nullopt;
    std::string s = value != nullptr ? value : "";
    H5free_memory(value);
    return s;
  }
  const std::size_t size = H5Tget_size(type);
  std::string s(size, '\0');
  if (H5Aread(attr, type, s.data()) < 0) return std::nullopt;
  s.resize(std::strlen(s.c_str()));
  return s;
}

class Reader {
 public:
  explicit Reader(const std::filesystem::path& file) : file_(file), fid_(open(file), H5Fclose) {}

  [[nodiscard]] hid_t fid() const { return fid_.get(); }

  std::optional<std::string> string_attribute(const char* name) const {
    return read_attribute(name, H5T_STRING, string_value);
  }

  std::optional<std::int64_t> integer_attribute(const char* name) const {
    return read_attribute(name, H5T_INTEGER, [](hid_t attr, hid_t) -> std::optional<std::int64_t> {
      std::int64_t v = 0;
      if (H5Aread(attr, H5T_NATIVE_INT64, &v) < 0) return std::nullopt;
      return v;
    });
  }

  [[nodiscard]] bool has_column(const std::string& name) const {
    return H5Lexists(fid_.get(), ("/episodes/" + name).c_str(), H5P_DEFAULT) > 0;
  }

  // A numeric column converted to double; nullopt when absent or not numeric.
  std::optional<std::vector<double>> numbers(const std::string& name) const {
    if (!has_column(name)) return std::nullopt;
    const Handle ds(H5Dopen2(fid_.get(), ("/episodes/" + name).c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) return std::nullopt;
    const Handle type(H5Dget_type(ds.get()), H5Tclose);
    const H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) return std::nullopt;
    const std::size_t n = length(ds.get(), name);
    std::vector<double> out(n);
    if (n > 0 &&
        H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
      throw TrajectoryFileError(file_.string() + ": cannot read /episodes/" + name);
    }
    return out;
  }

  // A text column (variable- or fixed-length strings); nullopt when absent or not text.
  std::optional<std::vector<std::string>> strings(const std::string& name) const {
    if (!has_column(name)) return std::nullopt;
    const Handle ds(H5Dopen2(fid_.get(), ("/episodes/" + name).c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) return std::nullopt;
    const Handle type(H5Dget_type(ds.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
    const std::size_t n = length(ds.get(), name);
    std::vector<std::string> out(n);
    if (n == 0) return out;
    if (H5Tis_variable_str(type.get()) > 0) {
      const Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      std::vector<char*> raw(n, nullptr);
      if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) {
        throw TrajectoryFileError(file_.string() + ": cannot read /episodes/" + name);
      }
      for (std::size_t i = 0; i < n; ++i) out[i] = raw[i] != nullptr ? raw[i] : "";
      const Handle space(H5Dget_space(ds.get()), H5Sclose);
#if H5_VERSION_GE(1, 12, 0)
      H5Treclaim(mem.get(), space.get(), H5P_DEFAULT, raw.data());
#else
      H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, raw.data());
#endif
    } else {
      const std::size_t size = H5Tget_size(type.get());
      std::vector<char> raw(n * size);
      if (H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) {
        throw TrajectoryFileError(file_.string() + ": cannot read /episodes/" + name);
      }
      for (std::size_t i = 0; i < n; ++i) {
        const char* p = raw.data() + i * size;
        out[i] = std::string(p, strnlen(p, size));
      }
    }
    return out;
  }

 private:
  // `read(attribute, its type)` on the file's attribute `name` when it exists and its type is of
  // class `type_class`; nullopt otherwise.
  template <typename Read>
  auto read_attribute(const char* name, H5T_class_t type_class, Read read) const
      -> decltype(read(hid_t{}, hid_t{})) {
    if (H5Aexists(fid_.get(), name) <= 0) return std::nullopt;
    const Handle attr(H5Aopen(fid_.get(), name, H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) return std::nullopt;
    const Handle type(H5Aget_type(attr.get()), H5Tclose);
    if (H5Tget_class(type.get()) != type_class) return std::nullopt;
    return read(attr.get(), type.get());
  }

  static hid_t open(const std::filesystem::path& file) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
      throw TrajectoryFileError(file.string() + ": no such file");
    if (H5Fis_hdf5(file.c_str()) <= 0)
      throw TrajectoryFileError(file.string() + ": not an HDF5 file");
    const hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id < 0) throw TrajectoryFileError(file.string() + ": HDF5 cannot open it");
    return id;
  }

  std::size_t length(hid_t ds, const std::string& name) const {
    const Handle space(H5Dget_space(ds), H5Sclose);
    if (H5Sget_simple_extent_ndims(space.get()) != 1) {
      throw TrajectoryFileError(file_.string() + ": /episodes/" + name + " is not one-dimensional");
    }
    hsize_t dims[1] = {0};
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    return static_cast<std::size_t>(dims[0]);
  }

  std::filesystem::path file_;
  Handle fid_;
};

ValueStats stats_of(const std::vector<double>& v) {
  ValueStats s;
  double sum = 0, sq = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    ++s.count;
    sum += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  if (s.count == 0) {
    s.mean = s.std = s.min = s.max = kNaN;
    return s;
  }
  s.mean = sum / static_cast<double>(s.count);
  for (double x : v) {
    if (std::isfinite(x)) sq += (x - s.mean) * (x - s.mean);
  }
  s.std = std::sqrt(sq / static_cast<double>(s.count));
  return s;
}

Json stats_json(const ValueStats& s) {
  Json j = Json::object();
  j["count"] = s.count;
  j["mean"] = s.mean;
  j["std"] = s.std;
  j["min"] = s.min;
  j["max"] = s.max;
  return j;
}

// The outcome counts, under the same keys for the whole file and for each task
// (TrajectorySummary and TaskTrajectorySummary name them alike).
template <typename Summary>
void add_outcome_counts(Json& j, const Summary& s) {
  j["evaluated"] = s.evaluated;
  j["compiled"] = s.compiled;
  j["correct"] = s.correct;
  j["timed"] = s.timed;
}

std::string num(double v, int significant = 4) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

std::string percent(double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}

double ratio(std::int64_t a, std::int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : kNaN;
}

}  // namespace

TrajectorySummary summarize_trajectories(const std::filesystem::path& file) {
  const QuietHdf5 quiet;
  const Reader r(file);
  TrajectorySummary s;
  s.file = file;
  if (H5Lexists(r.fid(), "/episodes", H5P_DEFAULT) <= 0) {
    throw TrajectoryFileError(
        file.string() + ": not a trajectory file (no /episodes group; see docs/trajectories.md)");
  }
  s.format = r.string_attribute("format").value_or("");
  s.format_version = r.integer_attribute("format_version").value_or(0);
  s.run_id = r.string_attribute("run_id").value_or("");
  s.vocabulary_name = r.string_attribute("vocabulary_name").value_or("");
  s.created_by = r.string_attribute("created_by").value_or("");
  s.rows_attribute = r.integer_attribute("rows").value_or(-1);

  const auto reward = r.numbers("reward");
  if (!reward) {
    throw TrajectoryFileError(file.string() +
                              ": no numeric /episodes/reward column (see docs/trajectories.md)");
  }
  std::size_t n = reward->size();
  std::size_t longest = n;
  auto count_rows = [&](std::size_t size) {
    n = std::min(n, size);
    longest = std::max(longest, size);
  };
  // A column the summary can do without: a missing one is listed, a present one bounds the rows.
  auto optional_column = [&](const char* name, auto column) {
    if (!column)
      s.missing_columns.emplace_back(name);
    else
      count_rows(column->size());
    return column;
  };
  auto number_column = [&](const char* name) { return optional_column(name, r.numbers(name)); };
  auto string_column = [&](const char* name) { return optional_column(name, r.strings(name)); };
  const auto truncated = number_column("truncated");
  const auto evaluated = number_column("evaluated");
  const auto compiled = number_column("compiled");
  const auto correct = number_column("correct");
  const auto timed = number_column("timed");
  const auto gpu = number_column("gpu_available");
  const auto speedup = number_column("speedup");
  const auto length = number_column("length");
  auto task = r.strings("task");
  if (!task) task = r.strings("task_uri");
  if (task)
    count_rows(task->size());
  else
    s.missing_columns.emplace_back("task");
  const auto error = string_column("error");
  const auto policy = string_column("policy_id");

  if (s.rows_attribute >= 0) {
    if (static_cast<std::size_t>(s.rows_attribute) < n) {
      s.notes.push_back(
          std::to_string(n - static_cast<std::size_t>(s.rows_attribute)) +
          " row(s) past the `rows` attribute ignored (an append cut short by a kill)");
      n = static_cast<std::size_t>(s.rows_attribute);
    } else if (static_cast<std::size_t>(s.rows_attribute) > n) {
      s.notes.push_back("the `rows` attribute says " + std::to_string(s.rows_attribute) +
                        " but the shortest column has " + std::to_string(n) + " rows; read " +
                        std::to_string(n));
    }
  } else if (n < longest) {
    s.notes.push_back("no `rows` attribute; columns differ in length, read the shortest (" +
                      std::to_string(n) + ")");
  }
  s.episodes = static_cast<std::int64_t>(n);

  auto flag = [](const std::optional<std::vector<double>>& c, std::size_t i, bool fallback) {
    return c ? (*c)[i] != 0 : fallback;
  };
  std::vector<double> rewards(reward->begin(), reward->begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<double> lengths, speedups;
  double log_sum = 0;
  std::int64_t log_count = 0, faster = 0;
  std::map<std::string, std::size_t> task_index;
  std::map<std::string, std::vector<double>> task_rewards;
  for (std::size_t i = 0; i < n; ++i) {
    const bool is_truncated = flag(truncated, i, false);
    const bool is_evaluated = flag(evaluated, i, !is_truncated);
    const bool is_compiled = is_evaluated && flag(compiled, i, false);
    const bool is_correct = is_evaluated && flag(correct, i, false);
    const bool is_timed = is_evaluated && flag(timed, i, false);
    s.truncated += is_truncated ? 1 : 0;
    s.evaluated += is_evaluated ? 1 : 0;
    s.compiled += is_compiled ? 1 : 0;
    s.correct += is_correct ? 1 : 0;
    s.timed += is_timed ? 1 : 0;
    if (is_evaluated && flag(gpu, i, false)) s.gpu = true;
    if (length) lengths.push_back((*length)[i]);
    double sp = kNaN;
    if (is_correct && is_timed && speedup && std::isfinite((*speedup)[i]) && (*speedup)[i] > 0) {
      sp = (*speedup)[i];
      speedups.push_back(sp);
      log_sum += std::log(sp);
      ++log_count;
      if (sp > 1) ++faster;
    }
    if (is_evaluated && error) ++s.errors[(*error)[i].empty() ? std::string("none") : (*error)[i]];
    if (policy) ++s.policies[(*policy)[i]];
    if (task) {
      const std::string& name = (*task)[i];
      auto [it, added] = task_index.emplace(name, s.tasks.size());
      if (added) {
        TaskTrajectorySummary t;
        t.task = name;
        t.best_speedup = kNaN;
        s.tasks.push_back(std::move(t));
      }
      TaskTrajectorySummary& t = s.tasks[it->second];
      ++t.episodes;
      t.evaluated += is_evaluated ? 1 : 0;
      t.compiled += is_compiled ? 1 : 0;
      t.correct += is_correct ? 1 : 0;
      t.timed += is_timed ? 1 : 0;
      if (std::isfinite(sp) && !(t.best_speedup >= sp)) t.best_speedup = sp;
      task_rewards[name].push_back(rewards[i]);
    }
  }
  for (TaskTrajectorySummary& t : s.tasks) t.reward = stats_of(task_rewards[t.task]);
  std::sort(s.tasks.begin(), s.tasks.end(),
            [](const auto& a, const auto& b) { return a.task < b.task; });
  // Without the gpu_available column, correctness is known only if something was correct.
  if (!gpu && s.correct > 0) s.gpu = true;
  s.compile_rate = ratio(s.compiled, s.evaluated);
  s.correct_rate = s.gpu ? ratio(s.correct, s.evaluated) : kNaN;
  s.reward = stats_of(rewards);
  s.length = stats_of(lengths);
  s.speedup = stats_of(speedups);
  s.speedup_geomean = log_count > 0 ? std::exp(log_sum / static_cast<double>(log_count)) : kNaN;
  s.faster_share = ratio(faster, s.timed);
  return s;
}

Json TrajectorySummary::to_json(bool per_task) const {
  Json j = Json::object();
  j["file"] = file.string();
  j["format"] = format;
  j["format_version"] = format_version;
  j["run_id"] = run_id;
  j["vocabulary_name"] = vocabulary_name;
  j["created_by"] = created_by;
  j["rows_attribute"] = rows_attribute >= 0 ? Json(rows_attribute) : Json();
  j["episodes"] = episodes;
  j["tasks"] = static_cast<std::int64_t>(tasks.size());
  j["truncated"] = truncated;
  add_outcome_counts(j, *this);
  j["gpu"] = gpu;
  j["compile_rate"] = compile_rate;
  j["correct_rate"] = correct_rate;
  j["reward"] = stats_json(reward);
  j["length"] = stats_json(length);
  j["speedup"] = stats_json(speedup);
  j["speedup_geomean"] = speedup_geomean;
  j["faster_share"] = faster_share;
  Json e = Json::object();
  for (const auto& [k, v] : errors) e[k] = v;
  j["errors"] = std::move(e);
  Json p = Json::object();
  for (const auto& [k, v] : policies) p[k] = v;
  j["policies"] = std::move(p);
  Json missing = Json::array();
  for (const std::string& m : missing_columns) missing.push_back(m);
  j["missing_columns"] = std::move(missing);
  Json ns = Json::array();
  for (const std::string& m : notes) ns.push_back(m);
  j["notes"] = std::move(ns);
  if (per_task) {
    Json ts = Json::array();
    for (const TaskTrajectorySummary& t : this->tasks) {
      Json tj = Json::object();
      tj["task"] = t.task;
      tj["episodes"] = t.episodes;
      add_outcome_counts(tj, t);
      tj["compile_rate"] = ratio(t.compiled, t.evaluated);
      tj["correct_rate"] = gpu ? ratio(t.correct, t.evaluated) : kNaN;
      tj["reward"] = stats_json(t.reward);
      tj["best_speedup"] = t.best_speedup;
      ts.push_back(std::move(tj));
    }
    j["per_task"] = std::move(ts);
  }
  return j;
}

namespace {

// Strings compared with runs of digits as numbers: "grpo:step=9" < "grpo:step=10".
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      const std::string_view x = std::string_view(a).substr(i, ei - i);
      const std::string_view y = std::string_view(b).substr(j, ej - j);
      const std::size_t zx = x.find_first_not_of('0'), zy = y.find_first_not_of('0');
      const std::string_view nx = zx == std::string_view::npos ? std::string_view() : x.substr(zx);
      const std::string_view ny = zy == std::string_view::npos ? std::string_view() : y.substr(zy);
      if (nx.size() != ny.size()) return nx.size() < ny.size();
      if (nx != ny) return nx < ny;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::string TrajectorySummary::to_text(bool per_task) const {
  std::ostringstream o;
  o << file.string() << "\n";
  o << "format          " << (format.empty() ? std::string("(no format attribute)") : format)
    << " v" << format_version;
  if (!created_by.empty()) o << ", created by " << created_by;
  o << "\n";
  if (!run_id.empty()) o << "run             " << run_id << "\n";
  if (!vocabulary_name.empty()) o << "vocabulary      " << vocabulary_name << "\n";
  o << "episodes        " << episodes << " (" << evaluated << " evaluated, " << truncated
    << " truncated)";
  if (rows_attribute >= 0 && rows_attribute != episodes) o << ", rows attribute " << rows_attribute;
  o << "\n";
  o << "tasks           " << tasks.size() << "\n";
  if (!policies.empty()) {
    // In natural order (step=10 after step=9); an RL file has one id per update, so past
    // kListedPolicies only the first and last few are named.
    std::vector<std::pair<std::string, std::int64_t>> ids(policies.begin(), policies.end());
    std::sort(ids.begin(), ids.end(),
              [](const auto& a, const auto& b) { return natural_less(a.first, b.first); });
    constexpr std::size_t kListedPolicies = 8;
    const auto name = [&](std::size_t i) {
      return (ids[i].first.empty() ? std::string("(none)") : ids[i].first) + " (" +
             std::to_string(ids[i].second) + ")";
    };
    o << "policies        ";
    if (ids.size() <= kListedPolicies) {
      for (std::size_t i = 0; i < ids.size(); ++i) o << (i > 0 ? " " : "") << name(i);
    } else {
      o << ids.size() << ": " << name(0) << " " << name(1) << " " << name(2) << " ... "
        << name(ids.size() - 2) << " " << name(ids.size() - 1) << " (--json lists all)";
    }
    o << "\n";
  }
  o << "compile rate    " << percent(compile_rate) << " (" << compiled << " of " << evaluated
    << " evaluated)\n";
  o << "correct rate    "
    << (gpu ? percent(correct_rate) + " (" + std::to_string(correct) + " of " +
                  std::to_string(evaluated) + ")"
            : std::string("n/a (no GPU stages: compile only)"))
    << "\n";
  o << "reward          mean " << num(reward.mean) << "  std " << num(reward.std) << "  min "
    << num(reward.min) << "  max " << num(reward.max) << "\n";
  if (length.count > 0) {
    o << "length          mean " << num(length.mean) << "  min " << num(length.min) << "  max "
      << num(length.max) << " tokens\n";
  }
  if (speedup.count > 0) {
    o << "speedup         geomean " << num(speedup_geomean) << "x over cuSPARSE (" << speedup.count
      << " timed correct kernels), max " << num(speedup.max) << "x, faster than cuSPARSE "
      << percent(faster_share) << "\n";
  }
  if (!errors.empty()) {
    o << "errors         ";
    for (const auto& [k, v] : errors) o << " " << k << "=" << v;
    o << "\n";
  }
  if (!missing_columns.empty()) {
    o << "missing columns";
    for (const std::string& m : missing_columns) o << " " << m;
    o << "\n";
  }
  for (const std::string& note : notes) o << "note            " << note << "\n";
  if (per_task && !tasks.empty()) {
    std::size_t width = 4;
    for (const auto& t : tasks) width = std::max(width, t.task.size());
    o << "\n"
      << "task" << std::string(width - 4 + 2, ' ')
      << "episodes  compiled  correct  reward mean    max  best speedup\n";
    for (const auto& t : tasks) {
      char line[256];
      std::snprintf(
          line, sizeof line, "%8lld  %8s  %7s  %11s  %5s  %12s", static_cast<long long>(t.episodes),
          percent(ratio(t.compiled, t.evaluated)).c_str(),
          gpu ? percent(ratio(t.correct, t.evaluated)).c_str() : "n/a", num(t.reward.mean).c_str(),
          num(t.reward.max).c_str(), num(t.best_speedup).c_str());
      o << t.task << std::string(width - t.task.size() + 2, ' ') << line << "\n";
    }
  }
  return o.str();
}

}  // namespace sparserl::experiments
