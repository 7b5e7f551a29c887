// The HDF5 trajectory file: a column table (name, type, doc, how to read it from an Episode and how
// to put it back), a writer that appends one row to every column and flushes, and a reader. All
// HDF5 handles are owned by small RAII wrappers; the library's own error printing is silenced and
// its failures become TrajectoryError naming the file and the call.
#include "sparserl/env/trajectory.hpp"

#include <hdf5.h>

#include <functional>
#include <type_traits>
#include <utility>
#include <variant>

#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::env {
namespace {

// --- the columns -----------------------------------------------------------------------------

struct Record {
  Episode episode;
  std::string run_id;
};

using Cell = std::variant<std::int64_t, std::uint64_t, double, std::string,
                          std::vector<std::int32_t>, std::vector<float>>;

struct Column {
  ColumnInfo info;
  std::function<Cell(const Record&)> get;
  std::function<void(Record&, const Cell&)> set;
};

std::int64_t as_int(const Cell& c) {
  if (std::holds_alternative<std::int64_t>(c)) return std::get<std::int64_t>(c);
  if (std::holds_alternative<std::uint64_t>(c))
    return static_cast<std::int64_t>(std::get<std::uint64_t>(c));
  return 0;
}
double as_double(const Cell& c) {
  return std::holds_alternative<double>(c) ? std::get<double>(c) : 0.0;
}
std::uint64_t as_u64(const Cell& c) {
  return std::holds_alternative<std::uint64_t>(c) ? std::get<std::uint64_t>(c)
                                                  : static_cast<std::uint64_t>(as_int(c));
}
std::string as_string(const Cell& c) {
  return std::holds_alternative<std::string>(c) ? std::get<std::string>(c) : std::string();
}

// The EvalResult of a record, created on first write when reading back.
reward::EvalResult& eval_of(Record& r) {
  if (!r.episode.eval) r.episode.eval = reward::EvalResult{};
  return *r.episode.eval;
}
const reward::EvalResult& eval_of(const Record& r) {
  static const reward::EvalResult none;
  return r.episode.eval ? *r.episode.eval : none;
}

// How a field of type T is stored: its column type, its cell, and the value a cell reads back as.
template <class T>
constexpr ColumnType column_type_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return ColumnType::u8;
  } else if constexpr (std::is_same_v<T, int>) {
    return ColumnType::i32;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return ColumnType::i64;
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return ColumnType::u64;
  } else if constexpr (std::is_same_v<T, double>) {
    return ColumnType::f64;
  } else {
    static_assert(std::is_same_v<T, std::string>,
                  "a scalar column is a number, a flag or a string");
    return ColumnType::str;
  }
}

template <class T>
Cell to_cell(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return Cell(std::int64_t{value ? 1 : 0});
  } else if constexpr (std::is_same_v<T, int>) {
    return Cell(static_cast<std::int64_t>(value));
  } else {
    return Cell(value);
  }
}

template <class T>
T from_cell(const Cell& cell) {
  if constexpr (std::is_same_v<T, bool>) {
    return as_int(cell) != 0;
  } else if constexpr (std::is_same_v<T, int>) {
    return static_cast<int>(as_int(cell));
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return as_int(cell);
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return as_u64(cell);
  } else if constexpr (std::is_same_v<T, double>) {
    return as_double(cell);
  } else {
    return as_string(cell);
  }
}

// The member a chain of member pointers reaches: at(e, &Episode::task, &Task::uri) is e.task.uri.
template <class Object>
Object& at(Object& object) {
  return object;
}
template <class Object, class Member, class... Path>
decltype(auto) at(Object& object, Member member, Path... path) {
  return at(object.*member, path...);
}

// The column table as it is declared, in file order.
class ColumnTable {
 public:
  // A column computed from the record; `set` puts a value read back into a record (none: the column
  // is derived from others, and reading it back changes nothing).
  template <class T>
  void add(const char* name, const char* doc, std::function<T(const Record&)> get,
           std::function<void(Record&, T)> set = nullptr) {
    columns_.push_back({{name, column_type_of<T>(), doc},
                        [get](const Record& r) { return to_cell<T>(get(r)); },
                        [set](Record& r, const Cell& v) {
                          if (set) set(r, from_cell<T>(v));
                        }});
  }

  // A field of the episode, reached through member pointers (&Episode::task, &Task::uri).
  template <class... Path>
  void episode_field(const char* name, const char* doc, Path... path) {
    using T = std::remove_cvref_t<decltype(at(std::declval<Episode&>(), path...))>;
    add<T>(
        name, doc, [path...](const Record& r) { return at(r.episode, path...); },
        [path...](Record& r, T v) { at(r.episode, path...) = std::move(v); });
  }

  // A field of the episode's EvalResult: its default where there is none, and written back only
  // into a record that has one (the `evaluated` column, read first, creates it).
  template <class... Path>
  void eval_field(const char* name, const char* doc, Path... path) {
    using T = std::remove_cvref_t<decltype(at(std::declval<reward::EvalResult&>(), path...))>;
    add<T>(
        name, doc, [path...](const Record& r) { return at(eval_of(r), path...); },
        [path...](Record& r, T v) {
          if (r.episode.eval) at(*r.episode.eval, path...) = std::move(v);
        });
  }

  void push(Column column) { columns_.push_back(std::move(column)); }
  std::vector<Column> take() { return std::move(columns_); }

 private:
  std::vector<Column> columns_;
};

void add_identity_columns(ColumnTable& t) {
  t.add<std::string>(
      "run_id", "the run that wrote the row", [](const Record& r) { return r.run_id; },
      [](Record& r, std::string v) { r.run_id = std::move(v); });
  t.episode_field("policy_id", "the acting policy (\"random:seed=3\", \"ppo:step=1200\")",
                  &Episode::policy_id);
  t.add<std::string>(
      "task", "Task::str(): \"URI op dtype[ k=K]\"",
      [](const Record& r) { return r.episode.task.str(); },
      [](Record& r, std::string v) {
        const std::string uri = r.episode.task.uri;
        r.episode.task = datasets::Task::parse(v);
        if (!uri.empty()) r.episode.task.uri = uri;
      });
  t.episode_field("task_uri", "the matrix URI (suitesparse-v1/..., gen-v1/..., file:...)",
                  &Episode::task, &datasets::Task::uri);
  t.add<std::string>("op", "spmv or spmm", [](const Record& r) {
    return std::string(datasets::to_string(r.episode.task.op));
  });
  t.add<std::string>("dtype", "f32 or f64", [](const Record& r) {
    return std::string(datasets::to_string(r.episode.task.dtype));
  });
  t.add<std::int64_t>("k", "dense columns (1 for SpMV)",
                      [](const Record& r) { return r.episode.task.k; });
  t.episode_field("env_id", "the environment of a VectorEnv", &Episode::env_id);
  t.episode_field("env_seed", "the environment's seed (base seed + env_id)", &Episode::env_seed);
  t.episode_field("episode_index", "episodes since the env seed was set", &Episode::episode_index);
  t.episode_field("episode_seed", "the seed the observation was sampled with (replay needs it)",
                  &Episode::episode_seed);
  t.episode_field("observation_digest", "SHA-256 of the sampled (row, col) indices",
                  &Episode::observation_digest);
}

void add_action_columns(ColumnTable& t) {
  t.push({{"tokens", ColumnType::vlen_i32, "token ids, <eos> included when terminated"},
          [](const Record& r) {
            return Cell(
                std::vector<std::int32_t>(r.episode.tokens.begin(), r.episode.tokens.end()));
          },
          [](Record& r, const Cell& v) {
            const auto& ids = std::get<std::vector<std::int32_t>>(v);
            r.episode.tokens.assign(ids.begin(), ids.end());
          }});
  t.push(
      {{"log_probs", ColumnType::vlen_f32, "log-probability of each token under the acting policy"},
       [](const Record& r) { return Cell(r.episode.log_probs); },
       [](Record& r, const Cell& v) { r.episode.log_probs = std::get<std::vector<float>>(v); }});
  t.push({{"values", ColumnType::vlen_f32, "the policy's value estimate at each token (0: none)"},
          [](const Record& r) { return Cell(r.episode.values); },
          [](Record& r, const Cell& v) { r.episode.values = std::get<std::vector<float>>(v); }});
  t.add<int>("length", "number of tokens",
             [](const Record& r) { return static_cast<int>(r.episode.tokens.size()); });
  t.episode_field("source", "the decoded program", &Episode::source);
}

void add_end_and_reward_columns(ColumnTable& t) {
  using B = reward::RewardBreakdown;
  t.episode_field("terminated", "ended with <eos> (evaluated)", &Episode::terminated);
  t.episode_field("truncated", "cut at max_tokens (not evaluated)", &Episode::truncated);
  t.add<bool>(
      "evaluated", "an EvalResult exists (the eval columns below are meaningful)",
      [](const Record& r) { return r.episode.eval.has_value(); },
      [](Record& r, bool v) {
        if (v) (void)eval_of(r);
      });
  t.episode_field("reward", "the episode's reward", &Episode::reward);
  t.episode_field("reward_compile", "R_compile", &Episode::breakdown, &B::compile);
  t.episode_field("reward_test", "1[compiled] R_test", &Episode::breakdown, &B::test);
  t.episode_field("reward_efficiency", "1[correct] r_eff shape(speedup)", &Episode::breakdown,
                  &B::efficiency);
  t.episode_field("reward_penalty", "r_pen 1[resource limit] (subtracted)", &Episode::breakdown,
                  &B::penalty);
  t.episode_field("reward_unclipped", "the sum before clipping", &Episode::breakdown,
                  &B::unclipped);
  t.episode_field("reward_compile_only", "no GPU: the reward is the compile stage alone",
                  &Episode::breakdown, &B::compile_only);
}

// The EvalResult's timing figures.
void add_timing_columns(ColumnTable& t) {
  using E = reward::EvalResult;
  using T = reward::TimingFigures;
  t.eval_field("median_us", "candidate kernel time per run, median (us)", &E::timing,
               &T::median_us);
  t.eval_field("p10_us", "candidate, 10th percentile (us)", &E::timing, &T::p10_us);
  t.eval_field("p90_us", "candidate, 90th percentile (us)", &E::timing, &T::p90_us);
  t.eval_field("launches_per_run", "kernels launched per run", &E::timing, &T::launches_per_run);
  t.eval_field("repetitions", "timed repetitions", &E::timing, &T::repetitions);
  t.eval_field("baseline_median_us", "cuSPARSE median (us)", &E::timing, &T::baseline_median_us);
  t.eval_field("baseline_p10_us", "cuSPARSE 10th percentile (us)", &E::timing, &T::baseline_p10_us);
  t.eval_field("baseline_p90_us", "cuSPARSE 90th percentile (us)", &E::timing, &T::baseline_p90_us);
  t.eval_field("baseline_algorithm", "the cuSPARSE algorithm timed", &E::timing,
               &T::baseline_algorithm);
  t.eval_field("baseline_paths",
               "every cuSPARSE path tried, with its median (us) when it was chosen", &E::timing,
               &T::baseline_paths);
  t.eval_field("speedup", "baseline median / candidate median", &E::timing, &T::speedup);
  t.eval_field("gflops", "2 nnz K / candidate median", &E::timing, &T::gflops);
  t.eval_field("bandwidth_gbs", "compulsory bytes / candidate median", &E::timing,
               &T::bandwidth_gbs);
  t.eval_field("bandwidth_fraction", "of the device's measured copy bandwidth", &E::timing,
               &T::bandwidth_fraction);
  t.eval_field("baseline_gflops", "cuSPARSE GFLOP/s", &E::timing, &T::baseline_gflops);
  t.eval_field("baseline_bandwidth_fraction", "cuSPARSE bandwidth fraction", &E::timing,
               &T::baseline_bandwidth_fraction);
}

// Every EvalResult field.
void add_evaluation_columns(ColumnTable& t) {
  using E = reward::EvalResult;
  using C = reward::CompileFigures;
  using K = reward::CheckFigures;
  t.add<std::string>(
      "stage", "the last stage reached: parse, static_check, compile, run, check, time",
      [](const Record& r) { return std::string(reward::to_string(eval_of(r).stage)); },
      [](Record& r, std::string v) {
        if (auto s = reward::parse_stage(v); s && r.episode.eval) r.episode.eval->stage = *s;
      });
  t.add<std::string>(
      "error", "the error kind (none, bad_program, static_check, compile_error, ...)",
      [](const Record& r) { return std::string(reward::to_string(eval_of(r).error)); },
      [](Record& r, std::string v) {
        if (auto e = reward::parse_error_kind(v); e && r.episode.eval) r.episode.eval->error = *e;
      });
  t.eval_field("message", "the evaluator's message", &E::message);
  t.eval_field("static_reason", "the static check's reason", &E::static_reason);
  t.eval_field("compiled", "the compile stage produced a cubin", &E::compiled);
  t.eval_field("correct", "the output matched the fp64 reference", &E::correct);
  t.eval_field("timed", "timed against cuSPARSE", &E::timed);
  t.eval_field("gpu_available", "the GPU stages could run", &E::gpu_available);
  t.eval_field("result_cached", "answered from the result cache", &E::result_cached);
  t.eval_field("compile_ms", "NVRTC wall time", &E::compile, &C::compile_ms);
  t.eval_field("max_registers", "registers per thread (largest kernel)", &E::compile,
               &C::max_registers);
  t.eval_field("static_smem_bytes", "static shared memory (largest kernel)", &E::compile,
               &C::static_smem_bytes);
  t.eval_field("spill_bytes", "spill stores + loads", &E::compile, &C::spill_bytes);
  t.eval_field("local_bytes", "stack frame per thread", &E::compile, &C::local_bytes);
  t.eval_field("arch", "the architecture compiled for", &E::compile, &C::arch);
  t.eval_field("compile_log", "the compiler log", &E::compile, &C::log);
  t.eval_field("compile_cached", "answered from the compile cache", &E::compile, &C::cached);
  t.eval_field("check_inputs", "random inputs checked", &E::check, &K::inputs);
  t.eval_field("max_error_ratio", "max |y - ref| / tolerance", &E::check, &K::max_error_ratio);
  t.eval_field("bad_outputs", "outputs outside tolerance", &E::check, &K::bad_outputs);
  t.eval_field("first_bad_row", "first wrong row (-1: none)", &E::check, &K::first_bad_row);
  t.eval_field("unchecked_outputs", "outputs outside the dtype's range, not checked", &E::check,
               &K::unchecked_outputs);
  add_timing_columns(t);
  t.eval_field("conversion_ms", "format conversion + upload", &E::conversion_ms);
  t.eval_field("eval_wall_ms", "the whole evaluation as the evaluator saw it", &E::wall_ms);
  t.eval_field("device", "the GPU's name", &E::device);
  t.eval_field("program_digest", "content digest of the program text", &E::program_digest);
  t.eval_field("matrix_digest", "content digest of the matrix", &E::matrix_digest);
  t.add<std::string>(
      "eval_json", "the whole EvalResult as JSON (EvalResult::to_json); empty when not evaluated",
      [](const Record& r) { return r.episode.eval ? r.episode.eval->to_json() : std::string(); });
}

std::vector<Column> make_columns() {
  ColumnTable t;
  add_identity_columns(t);
  add_action_columns(t);
  add_end_and_reward_columns(t);
  add_evaluation_columns(t);
  t.episode_field("episode_seconds", "reset to the final result, wall", &Episode::episode_seconds);
  t.episode_field("evaluation_seconds", "evaluation submit to result, wall",
                  &Episode::evaluation_seconds);
  return t.take();
}

const std::vector<Column>& columns() {
  static const std::vector<Column> table = make_columns();
  return table;
}

// --- HDF5 plumbing ---------------------------------------------------------------------------

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = -1;
  }
  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// HDF5 prints its error stack on stderr by default; errors here become exceptions instead.
void silence_hdf5() {
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}
  hid_t operator()(hid_t id, const std::string& what) const {
    if (id < 0) throw TrajectoryError("HDF5 trajectory file " + file_ + ": " + what + " failed");
    return id;
  }
  void ok(herr_t status, const std::string& what) const {
    if (status < 0)
      throw TrajectoryError("HDF5 trajectory file " + file_ + ": " + what + " failed");
  }
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  std::string file_;
};

Handle string_type() {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return Handle(t, H5Tclose);
}

// The HDF5 type of a column's elements in the file (fixed, little-endian) or in memory (native).
Handle element_type(ColumnType type, bool in_file) {
  const auto copy = [](hid_t t) { return Handle(H5Tcopy(t), H5Tclose); };
  const auto vlen = [](hid_t t) { return Handle(H5Tvlen_create(t), H5Tclose); };
  switch (type) {
    case ColumnType::i32:
      return copy(in_file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
    case ColumnType::i64:
      return copy(in_file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
    case ColumnType::u64:
      return copy(in_file ? H5T_STD_U64LE : H5T_NATIVE_UINT64);
    case ColumnType::u8:
      return copy(in_file ? H5T_STD_U8LE : H5T_NATIVE_UINT8);
    case ColumnType::f64:
      return copy(in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
    case ColumnType::str:
      return string_type();
    case ColumnType::vlen_i32:
      return vlen(in_file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
    case ColumnType::vlen_f32:
      return vlen(in_file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT);
  }
  return {};
}

Handle file_type(ColumnType type) { return element_type(type, true); }
Handle memory_type(ColumnType type) { return element_type(type, false); }

constexpr hsize_t kChunkRows = 64;

void write_string_attribute(hid_t object, const char* name, const std::string& value,
                            const Checker& check) {
  if (H5Aexists(object, name) > 0)
    check.ok(H5Adelete(object, name), std::string("deleting attribute ") + name);
  Handle type = string_type();
  Handle space(check(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose);
  Handle attr(check(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    std::string("creating attribute ") + name),
              H5Aclose);
  const char* data = value.c_str();
  check.ok(H5Awrite(attr.get(), type.get(), &data), std::string("writing attribute ") + name);
}

void write_int_attribute(hid_t object, const char* name, std::int64_t value, const Checker& check) {
  Handle attr;
  if (H5Aexists(object, name) > 0) {
    attr =
        Handle(check(H5Aopen(object, name, H5P_DEFAULT), std::string("opening attribute ") + name),
               H5Aclose);
  } else {
    Handle space(check(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose);
    attr =
        Handle(check(H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     std::string("creating attribute ") + name),
               H5Aclose);
  }
  check.ok(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value),
           std::string("writing attribute ") + name);
}

std::optional<std::string> read_string_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  Handle attr(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) return std::nullopt;
  Handle type = string_type();
  char* data = nullptr;
  if (H5Aread(attr.get(), type.get(), &data) < 0 || data == nullptr) return std::nullopt;
  std::string value(data);
  H5free_memory(data);
  return value;
}

std::optional<std::int64_t> read_int_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  Handle attr(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  std::int64_t value = 0;
  if (!attr.valid() || H5Aread(attr.get(), H5T_NATIVE_INT64, &value) < 0) return std::nullopt;
  return value;
}

hsize_t dataset_length(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  hsize_t dims = 0;
  H5Sget_simple_extent_dims(space.get(), &dims, nullptr);
  return dims;
}

}  // namespace

std::string_view to_string(ColumnType type) {
  static constexpr auto kNames = datasets::enum_names<ColumnType::i32, ColumnType::vlen_f32>(
      {"int32", "int64", "uint64", "uint8 (0/1)", "float64", "string (vlen UTF-8)", "vlen int32",
       "vlen float32"});
  return kNames.name(type);
}

const std::vector<ColumnInfo>& trajectory_columns() {
  static const std::vector<ColumnInfo> infos = [] {
    std::vector<ColumnInfo> v;
    for (const Column& c : columns()) v.push_back(c.info);
    return v;
  }();
  return infos;
}

// --- writer ----------------------------------------------------------------------------------

struct TrajectoryWriter::Impl {
  std::filesystem::path path;
  TrajectoryFileInfo info;
  Checker check;
  Handle file, group;
  std::vector<Handle> datasets, memtypes;
  hsize_t rows = 0;

  explicit Impl(std::filesystem::path p) : path(std::move(p)), check(path.string()) {}
};

TrajectoryWriter::TrajectoryWriter(const std::filesystem::path& file, TrajectoryFileInfo info,
                                   bool append)
    : impl_(std::make_unique<Impl>(file)) {
  silence_hdf5();
  Impl& m = *impl_;
  m.info = std::move(info);
  const Checker& check = m.check;
  const bool reopen = append && std::filesystem::exists(file);
  if (reopen) {
    m.file = Handle(check(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "opening for append"),
                    H5Fclose);
    const auto format = read_string_attribute(m.file.get(), "format");
    const auto version = read_int_attribute(m.file.get(), "format_version");
    if (format != std::string(kTrajectoryFormat) || version != kTrajectoryFormatVersion) {
      throw TrajectoryError(file.string() + " is not a " + std::string(kTrajectoryFormat) +
                            " file of version " + std::to_string(kTrajectoryFormatVersion) +
                            ": refusing to append");
    }
    const auto digest = read_string_attribute(m.file.get(), "vocabulary_digest");
    if (digest.value_or("") != m.info.vocabulary_digest) {
      throw TrajectoryError(file.string() + " was written with vocabulary digest " +
                            digest.value_or("?") + ", this run uses " + m.info.vocabulary_digest +
                            ": refusing to append");
    }
    m.group = Handle(check(H5Gopen2(m.file.get(), "episodes", H5P_DEFAULT), "opening /episodes"),
                     H5Gclose);
    m.rows = static_cast<hsize_t>(read_int_attribute(m.file.get(), "rows").value_or(0));
  } else {
    m.file =
        Handle(check(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "creating"),
               H5Fclose);
    m.group =
        Handle(check(H5Gcreate2(m.file.get(), "episodes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     "creating /episodes"),
               H5Gclose);
    write_string_attribute(m.file.get(), "format", std::string(kTrajectoryFormat), check);
    write_int_attribute(m.file.get(), "format_version", kTrajectoryFormatVersion, check);
    write_string_attribute(m.file.get(), "run_id", m.info.run_id, check);
    write_string_attribute(m.file.get(), "config", m.info.config, check);
    write_string_attribute(m.file.get(), "vocabulary_name", m.info.vocabulary_name, check);
    write_string_attribute(m.file.get(), "vocabulary_digest", m.info.vocabulary_digest, check);
    write_string_attribute(m.file.get(), "created_by", m.info.created_by, check);
    write_int_attribute(m.file.get(), "rows", 0, check);
  }
  for (const Column& c : columns()) {
    m.memtypes.push_back(memory_type(c.info.type));
    if (reopen) {
      m.datasets.emplace_back(check(H5Dopen2(m.group.get(), c.info.name.c_str(), H5P_DEFAULT),
                                    "opening dataset " + c.info.name),
                              H5Dclose);
      continue;
    }
    const hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = kChunkRows;
    Handle space(check(H5Screate_simple(1, &dims, &maxdims), "H5Screate_simple"), H5Sclose);
    Handle props(check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"), H5Pclose);
    check.ok(H5Pset_chunk(props.get(), 1, &chunk), "H5Pset_chunk");
    Handle type = file_type(c.info.type);
    m.datasets.emplace_back(check(H5Dcreate2(m.group.get(), c.info.name.c_str(), type.get(),
                                             space.get(), H5P_DEFAULT, props.get(), H5P_DEFAULT),
                                  "creating dataset " + c.info.name),
                            H5Dclose);
  }
  check.ok(H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

TrajectoryWriter::~TrajectoryWriter() {
  try {
    close();
  } catch (...) {
    // A destructor must not throw; the rows written so far are already flushed.
  }
}

void TrajectoryWriter::close() {
  if (!impl_ || !impl_->file.valid()) return;
  impl_->datasets.clear();
  impl_->group.reset();
  impl_->file.reset();
}

std::int64_t TrajectoryWriter::rows() const { return static_cast<std::int64_t>(impl_->rows); }
const std::filesystem::path& TrajectoryWriter::path() const { return impl_->path; }

void TrajectoryWriter::append(const Episode& episode, std::string_view policy_id) {
  Impl& m = *impl_;
  if (!m.file.valid()) throw TrajectoryError("trajectory file " + m.path.string() + " is closed");
  const Checker& check = m.check;
  Record record{episode, m.info.run_id};
  if (!policy_id.empty()) record.episode.policy_id = std::string(policy_id);
  const hsize_t row = m.rows;
  const hsize_t new_size = row + 1, count = 1;
  for (std::size_t i = 0; i < columns().size(); ++i) {
    const Column& c = columns()[i];
    const hid_t ds = m.datasets[i].get();
    check.ok(H5Dset_extent(ds, &new_size), "extending " + c.info.name);
    Handle fspace(check(H5Dget_space(ds), "H5Dget_space"), H5Sclose);
    check.ok(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &row, nullptr, &count, nullptr),
             "H5Sselect_hyperslab");
    Handle mspace(check(H5Screate_simple(1, &count, nullptr), "H5Screate_simple"), H5Sclose);
    const Cell cell = c.get(record);
    const hid_t mt = m.memtypes[i].get();
    const auto write = [&](const auto& value) {
      return H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &value);
    };
    herr_t status = -1;
    switch (c.info.type) {
      case ColumnType::i32:
        status = write(static_cast<std::int32_t>(as_int(cell)));
        break;
      case ColumnType::i64:
        status = write(as_int(cell));
        break;
      case ColumnType::u64:
        status = write(as_u64(cell));
        break;
      case ColumnType::u8:
        status = write(static_cast<std::uint8_t>(as_int(cell)));
        break;
      case ColumnType::f64:
        status = write(as_double(cell));
        break;
      case ColumnType::str: {
        const std::string text = as_string(cell);
        status = write(text.c_str());
        break;
      }
      case ColumnType::vlen_i32: {
        const auto& v = std::get<std::vector<std::int32_t>>(cell);
        status = write(hvl_t{v.size(), const_cast<std::int32_t*>(v.data())});
        break;
      }
      case ColumnType::vlen_f32: {
        const auto& v = std::get<std::vector<float>>(cell);
        status = write(hvl_t{v.size(), const_cast<float*>(v.data())});
        break;
      }
    }
    check.ok(status, "writing row " + std::to_string(row) + " of " + c.info.name);
  }
  m.rows = new_size;
  write_int_attribute(m.file.get(), "rows", static_cast<std::int64_t>(m.rows), check);
  check.ok(H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

// --- reader ----------------------------------------------------------------------------------

TrajectoryFile read_trajectories(const std::filesystem::path& path) {
  silence_hdf5();
  const Checker check(path.string());
  if (!std::filesystem::exists(path))
    throw TrajectoryError("trajectory file " + path.string() + " does not exist");
  Handle file(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "opening"), H5Fclose);
  TrajectoryFile out;
  const auto format = read_string_attribute(file.get(), "format");
  if (format != std::string(kTrajectoryFormat)) {
    throw TrajectoryError(path.string() + " is not a trajectory file (attribute format is '" +
                          format.value_or("") + "', expected '" + std::string(kTrajectoryFormat) +
                          "')");
  }
  out.format_version =
      static_cast<int>(read_int_attribute(file.get(), "format_version").value_or(0));
  out.info.run_id = read_string_attribute(file.get(), "run_id").value_or("");
  out.info.config = read_string_attribute(file.get(), "config").value_or("");
  out.info.vocabulary_name = read_string_attribute(file.get(), "vocabulary_name").value_or("");
  out.info.vocabulary_digest = read_string_attribute(file.get(), "vocabulary_digest").value_or("");
  out.info.created_by = read_string_attribute(file.get(), "created_by").value_or("");
  out.rows = read_int_attribute(file.get(), "rows").value_or(0);
  Handle group(check(H5Gopen2(file.get(), "episodes", H5P_DEFAULT), "opening /episodes"), H5Gclose);
  // Rows complete in every column: the `rows` attribute, capped by the shortest column.
  std::vector<Handle> datasets;
  hsize_t n = static_cast<hsize_t>(std::max<std::int64_t>(out.rows, 0));
  for (const Column& c : columns()) {
    datasets.emplace_back(check(H5Dopen2(group.get(), c.info.name.c_str(), H5P_DEFAULT),
                                "opening dataset " + c.info.name),
                          H5Dclose);
    n = std::min(n, dataset_length(datasets.back().get()));
  }
  std::vector<Record> records(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < columns().size() && n > 0; ++i) {
    const Column& c = columns()[i];
    const hid_t ds = datasets[i].get();
    Handle mt = memory_type(c.info.type);
    Handle fspace(check(H5Dget_space(ds), "H5Dget_space"), H5Sclose);
    const hsize_t start = 0;
    check.ok(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr),
             "select");
    Handle mspace(check(H5Screate_simple(1, &n, nullptr), "H5Screate_simple"), H5Sclose);
    const auto read = [&](void* buffer) {
      check.ok(H5Dread(ds, mt.get(), mspace.get(), fspace.get(), H5P_DEFAULT, buffer),
               "reading " + c.info.name);
    };
    // Reads the whole column as T, hands each row's value to the column as a Cell and returns the
    // buffer (strings and vlen arrays are freed by H5Dvlen_reclaim).
    const auto read_rows = [&]<class T>(std::type_identity<T>, auto cell_of) {
      std::vector<T> v(n);
      read(v.data());
      for (hsize_t r = 0; r < n; ++r) c.set(records[r], cell_of(v[r]));
      return v;
    };
    const auto reclaim = [&](auto& v) {
      H5Dvlen_reclaim(mt.get(), mspace.get(), H5P_DEFAULT, v.data());
    };
    const auto widened = [](auto x) { return Cell(static_cast<std::int64_t>(x)); };
    const auto as_is = [](auto x) { return Cell(x); };
    const auto array_of = []<class T>(std::type_identity<T>) {
      return [](const hvl_t& h) {
        const auto* p = static_cast<const T*>(h.p);
        return Cell(std::vector<T>(p, p + h.len));
      };
    };
    switch (c.info.type) {
      case ColumnType::i32:
        read_rows(std::type_identity<std::int32_t>{}, widened);
        break;
      case ColumnType::i64:
        read_rows(std::type_identity<std::int64_t>{}, as_is);
        break;
      case ColumnType::u64:
        read_rows(std::type_identity<std::uint64_t>{}, as_is);
        break;
      case ColumnType::u8:
        read_rows(std::type_identity<std::uint8_t>{}, widened);
        break;
      case ColumnType::f64:
        read_rows(std::type_identity<double>{}, as_is);
        break;
      case ColumnType::str: {
        auto v = read_rows(std::type_identity<char*>{},
                           [](const char* p) { return Cell(std::string(p != nullptr ? p : "")); });
        reclaim(v);
        break;
      }
      case ColumnType::vlen_i32: {
        auto v =
            read_rows(std::type_identity<hvl_t>{}, array_of(std::type_identity<std::int32_t>{}));
        reclaim(v);
        break;
      }
      case ColumnType::vlen_f32: {
        auto v = read_rows(std::type_identity<hvl_t>{}, array_of(std::type_identity<float>{}));
        reclaim(v);
        break;
      }
    }
  }
  out.episodes.reserve(records.size());
  for (Record& r : records) {
    out.run_ids.push_back(std::move(r.run_id));
    out.episodes.push_back(std::move(r.episode));
  }
  return out;
}

// --- recording wrapper -------------------------------------------------------------------------

RecordingEnv::RecordingEnv(SparseCudaEnv& env, TrajectoryWriter& writer, std::string policy_id)
    : env_(env), writer_(writer), policy_id_(std::move(policy_id)) {}

ResetResult RecordingEnv::reset(std::optional<std::uint64_t> seed, const ResetOptions& options) {
  return env_.reset(seed, options);
}

StepResult RecordingEnv::step(TokenId token, StepAnnotation annotation) {
  StepResult r = env_.step(token, annotation);
  if (r.done() && env_.last_episode() != nullptr) writer_.append(*env_.last_episode(), policy_id_);
  return r;
}

}  // namespace sparserl::env
