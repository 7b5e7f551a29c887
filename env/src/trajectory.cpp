// The HDF5 trajectory file: a column table (name, type, doc, how to read it from an Episode and how
// to put it back), a writer that appends one row to every column and flushes, and a reader. All
// HDF5 handles are owned by small RAII wrappers; the library's own error printing is silenced and
// its failures become TrajectoryError naming the file and the call.
#include "sparserl/env/trajectory.hpp"

#include <hdf5.h>

#include <functional>
#include <variant>

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

std::vector<Column> make_columns() {
  std::vector<Column> c;
  const auto str = [&c](const char* name, const char* doc,
                        std::function<std::string(const Record&)> get,
                        std::function<void(Record&, std::string)> set) {
    c.push_back({{name, ColumnType::str, doc},
                 [get](const Record& r) { return Cell(get(r)); },
                 [set](Record& r, const Cell& v) { set(r, as_string(v)); }});
  };
  const auto i64 = [&c](const char* name, ColumnType type, const char* doc,
                        std::function<std::int64_t(const Record&)> get,
                        std::function<void(Record&, std::int64_t)> set) {
    c.push_back({{name, type, doc},
                 [get](const Record& r) { return Cell(get(r)); },
                 [set](Record& r, const Cell& v) { set(r, as_int(v)); }});
  };
  const auto u64 = [&c](const char* name, const char* doc,
                        std::function<std::uint64_t(const Record&)> get,
                        std::function<void(Record&, std::uint64_t)> set) {
    c.push_back({{name, ColumnType::u64, doc},
                 [get](const Record& r) { return Cell(get(r)); },
                 [set](Record& r, const Cell& v) { set(r, as_u64(v)); }});
  };
  const auto f64 = [&c](const char* name, const char* doc, std::function<double(const Record&)> get,
                        std::function<void(Record&, double)> set) {
    c.push_back({{name, ColumnType::f64, doc},
                 [get](const Record& r) { return Cell(get(r)); },
                 [set](Record& r, const Cell& v) { set(r, as_double(v)); }});
  };
  const auto flag = [&c](const char* name, const char* doc, std::function<bool(const Record&)> get,
                         std::function<void(Record&, bool)> set) {
    c.push_back({{name, ColumnType::u8, doc},
                 [get](const Record& r) { return Cell(static_cast<std::int64_t>(get(r) ? 1 : 0)); },
                 [set](Record& r, const Cell& v) { set(r, as_int(v) != 0); }});
  };
  using E = reward::EvalResult;
  // Identity of the episode.
  str(
      "run_id", "the run that wrote the row", [](const Record& r) { return r.run_id; },
      [](Record& r, std::string v) { r.run_id = std::move(v); });
  str(
      "policy_id", "the acting policy (\"random:seed=3\", \"ppo:step=1200\")",
      [](const Record& r) { return r.episode.policy_id; },
      [](Record& r, std::string v) { r.episode.policy_id = std::move(v); });
  str(
      "task", "Task::str(): \"URI op dtype[ k=K]\"",
      [](const Record& r) { return r.episode.task.str(); },
      [](Record& r, std::string v) {
        const std::string uri = r.episode.task.uri;
        r.episode.task = datasets::Task::parse(v);
        if (!uri.empty()) r.episode.task.uri = uri;
      });
  str(
      "task_uri", "the matrix URI (suitesparse-v1/..., gen-v1/..., file:...)",
      [](const Record& r) { return r.episode.task.uri; },
      [](Record& r, std::string v) { r.episode.task.uri = std::move(v); });
  str(
      "op", "spmv or spmm",
      [](const Record& r) { return std::string(datasets::to_string(r.episode.task.op)); },
      [](Record&, std::string) {});
  str(
      "dtype", "f32 or f64",
      [](const Record& r) { return std::string(datasets::to_string(r.episode.task.dtype)); },
      [](Record&, std::string) {});
  i64(
      "k", ColumnType::i64, "dense columns (1 for SpMV)",
      [](const Record& r) { return r.episode.task.k; }, [](Record&, std::int64_t) {});
  i64(
      "env_id", ColumnType::i32, "the environment of a VectorEnv",
      [](const Record& r) { return r.episode.env_id; },
      [](Record& r, std::int64_t v) { r.episode.env_id = static_cast<int>(v); });
  u64(
      "env_seed", "the environment's seed (base seed + env_id)",
      [](const Record& r) { return r.episode.env_seed; },
      [](Record& r, std::uint64_t v) { r.episode.env_seed = v; });
  u64(
      "episode_index", "episodes since the env seed was set",
      [](const Record& r) { return r.episode.episode_index; },
      [](Record& r, std::uint64_t v) { r.episode.episode_index = v; });
  u64(
      "episode_seed", "the seed the observation was sampled with (replay needs it)",
      [](const Record& r) { return r.episode.episode_seed; },
      [](Record& r, std::uint64_t v) { r.episode.episode_seed = v; });
  str(
      "observation_digest", "SHA-256 of the sampled (row, col) indices",
      [](const Record& r) { return r.episode.observation_digest; },
      [](Record& r, std::string v) { r.episode.observation_digest = std::move(v); });
  // The actions.
  c.push_back({{"tokens", ColumnType::vlen_i32, "token ids, <eos> included when terminated"},
               [](const Record& r) {
                 return Cell(
                     std::vector<std::int32_t>(r.episode.tokens.begin(), r.episode.tokens.end()));
               },
               [](Record& r, const Cell& v) {
                 const auto& t = std::get<std::vector<std::int32_t>>(v);
                 r.episode.tokens.assign(t.begin(), t.end());
               }});
  c.push_back(
      {{"log_probs", ColumnType::vlen_f32, "log-probability of each token under the acting policy"},
       [](const Record& r) { return Cell(r.episode.log_probs); },
       [](Record& r, const Cell& v) { r.episode.log_probs = std::get<std::vector<float>>(v); }});
  c.push_back(
      {{"values", ColumnType::vlen_f32, "the policy's value estimate at each token (0: none)"},
       [](const Record& r) { return Cell(r.episode.values); },
       [](Record& r, const Cell& v) { r.episode.values = std::get<std::vector<float>>(v); }});
  i64(
      "length", ColumnType::i32, "number of tokens",
      [](const Record& r) { return static_cast<std::int64_t>(r.episode.tokens.size()); },
      [](Record&, std::int64_t) {});
  str(
      "source", "the decoded program", [](const Record& r) { return r.episode.source; },
      [](Record& r, std::string v) { r.episode.source = std::move(v); });
  // The end.
  flag(
      "terminated", "ended with <eos> (evaluated)",
      [](const Record& r) { return r.episode.terminated; },
      [](Record& r, bool v) { r.episode.terminated = v; });
  flag(
      "truncated", "cut at max_tokens (not evaluated)",
      [](const Record& r) { return r.episode.truncated; },
      [](Record& r, bool v) { r.episode.truncated = v; });
  flag(
      "evaluated", "an EvalResult exists (the eval columns below are meaningful)",
      [](const Record& r) { return r.episode.eval.has_value(); },
      [](Record& r, bool v) {
        if (v) (void)eval_of(r);
      });
  // The reward.
  f64(
      "reward", "the episode's reward", [](const Record& r) { return r.episode.reward; },
      [](Record& r, double v) { r.episode.reward = v; });
  f64(
      "reward_compile", "R_compile", [](const Record& r) { return r.episode.breakdown.compile; },
      [](Record& r, double v) { r.episode.breakdown.compile = v; });
  f64(
      "reward_test", "1[compiled] R_test", [](const Record& r) { return r.episode.breakdown.test; },
      [](Record& r, double v) { r.episode.breakdown.test = v; });
  f64(
      "reward_efficiency", "1[correct] r_eff shape(speedup)",
      [](const Record& r) { return r.episode.breakdown.efficiency; },
      [](Record& r, double v) { r.episode.breakdown.efficiency = v; });
  f64(
      "reward_penalty", "r_pen 1[resource limit] (subtracted)",
      [](const Record& r) { return r.episode.breakdown.penalty; },
      [](Record& r, double v) { r.episode.breakdown.penalty = v; });
  f64(
      "reward_unclipped", "the sum before clipping",
      [](const Record& r) { return r.episode.breakdown.unclipped; },
      [](Record& r, double v) { r.episode.breakdown.unclipped = v; });
  flag(
      "reward_compile_only", "no GPU: the reward is the compile stage alone",
      [](const Record& r) { return r.episode.breakdown.compile_only; },
      [](Record& r, bool v) { r.episode.breakdown.compile_only = v; });
  // The evaluation (every EvalResult field).
  str(
      "stage", "the last stage reached: parse, static_check, compile, run, check, time",
      [](const Record& r) { return std::string(reward::to_string(eval_of(r).stage)); },
      [](Record& r, std::string v) {
        if (auto s = reward::parse_stage(v); s && r.episode.eval) r.episode.eval->stage = *s;
      });
  str(
      "error", "the error kind (none, bad_program, static_check, compile_error, ...)",
      [](const Record& r) { return std::string(reward::to_string(eval_of(r).error)); },
      [](Record& r, std::string v) {
        if (auto e = reward::parse_error_kind(v); e && r.episode.eval) r.episode.eval->error = *e;
      });
  str(
      "message", "the evaluator's message", [](const Record& r) { return eval_of(r).message; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->message = std::move(v);
      });
  str(
      "static_reason", "the static check's reason",
      [](const Record& r) { return eval_of(r).static_reason; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->static_reason = std::move(v);
      });
  const auto eval_flag = [&flag](const char* name, const char* doc, bool E::*field) {
    flag(
        name, doc, [field](const Record& r) { return eval_of(r).*field; },
        [field](Record& r, bool v) {
          if (r.episode.eval) r.episode.eval.value().*field = v;
        });
  };
  eval_flag("compiled", "the compile stage produced a cubin", &E::compiled);
  eval_flag("correct", "the output matched the fp64 reference", &E::correct);
  eval_flag("timed", "timed against cuSPARSE", &E::timed);
  eval_flag("gpu_available", "the GPU stages could run", &E::gpu_available);
  eval_flag("result_cached", "answered from the result cache", &E::result_cached);
  f64(
      "compile_ms", "NVRTC wall time",
      [](const Record& r) { return eval_of(r).compile.compile_ms; },
      [](Record& r, double v) {
        if (r.episode.eval) r.episode.eval->compile.compile_ms = v;
      });
  i64(
      "max_registers", ColumnType::i32, "registers per thread (largest kernel)",
      [](const Record& r) { return eval_of(r).compile.max_registers; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->compile.max_registers = static_cast<int>(v);
      });
  i64(
      "static_smem_bytes", ColumnType::i32, "static shared memory (largest kernel)",
      [](const Record& r) { return eval_of(r).compile.static_smem_bytes; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->compile.static_smem_bytes = static_cast<int>(v);
      });
  i64(
      "spill_bytes", ColumnType::i32, "spill stores + loads",
      [](const Record& r) { return eval_of(r).compile.spill_bytes; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->compile.spill_bytes = static_cast<int>(v);
      });
  i64(
      "local_bytes", ColumnType::i32, "stack frame per thread",
      [](const Record& r) { return eval_of(r).compile.local_bytes; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->compile.local_bytes = static_cast<int>(v);
      });
  str(
      "arch", "the architecture compiled for",
      [](const Record& r) { return eval_of(r).compile.arch; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->compile.arch = std::move(v);
      });
  str(
      "compile_log", "the compiler log", [](const Record& r) { return eval_of(r).compile.log; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->compile.log = std::move(v);
      });
  flag(
      "compile_cached", "answered from the compile cache",
      [](const Record& r) { return eval_of(r).compile.cached; },
      [](Record& r, bool v) {
        if (r.episode.eval) r.episode.eval->compile.cached = v;
      });
  i64(
      "check_inputs", ColumnType::i32, "random inputs checked",
      [](const Record& r) { return eval_of(r).check.inputs; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->check.inputs = static_cast<int>(v);
      });
  f64(
      "max_error_ratio", "max |y - ref| / tolerance",
      [](const Record& r) { return eval_of(r).check.max_error_ratio; },
      [](Record& r, double v) {
        if (r.episode.eval) r.episode.eval->check.max_error_ratio = v;
      });
  i64(
      "bad_outputs", ColumnType::i64, "outputs outside tolerance",
      [](const Record& r) { return eval_of(r).check.bad_outputs; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->check.bad_outputs = v;
      });
  i64(
      "first_bad_row", ColumnType::i64, "first wrong row (-1: none)",
      [](const Record& r) { return eval_of(r).check.first_bad_row; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->check.first_bad_row = v;
      });
  i64(
      "unchecked_outputs", ColumnType::i64, "outputs outside the dtype's range, not checked",
      [](const Record& r) { return eval_of(r).check.unchecked_outputs; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->check.unchecked_outputs = v;
      });
  const auto timing = [&f64](const char* name, const char* doc,
                             double reward::TimingFigures::*field) {
    f64(
        name, doc, [field](const Record& r) { return eval_of(r).timing.*field; },
        [field](Record& r, double v) {
          if (r.episode.eval) r.episode.eval.value().timing.*field = v;
        });
  };
  timing("median_us", "candidate kernel time per run, median (us)",
         &reward::TimingFigures::median_us);
  timing("p10_us", "candidate, 10th percentile (us)", &reward::TimingFigures::p10_us);
  timing("p90_us", "candidate, 90th percentile (us)", &reward::TimingFigures::p90_us);
  i64(
      "launches_per_run", ColumnType::i32, "kernels launched per run",
      [](const Record& r) { return eval_of(r).timing.launches_per_run; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->timing.launches_per_run = static_cast<int>(v);
      });
  i64(
      "repetitions", ColumnType::i32, "timed repetitions",
      [](const Record& r) { return eval_of(r).timing.repetitions; },
      [](Record& r, std::int64_t v) {
        if (r.episode.eval) r.episode.eval->timing.repetitions = static_cast<int>(v);
      });
  timing("baseline_median_us", "cuSPARSE median (us)", &reward::TimingFigures::baseline_median_us);
  timing("baseline_p10_us", "cuSPARSE 10th percentile (us)",
         &reward::TimingFigures::baseline_p10_us);
  timing("baseline_p90_us", "cuSPARSE 90th percentile (us)",
         &reward::TimingFigures::baseline_p90_us);
  str(
      "baseline_algorithm", "the cuSPARSE algorithm timed",
      [](const Record& r) { return eval_of(r).timing.baseline_algorithm; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->timing.baseline_algorithm = std::move(v);
      });
  str(
      "baseline_paths", "every cuSPARSE path tried, with its median (us) when it was chosen",
      [](const Record& r) { return eval_of(r).timing.baseline_paths; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->timing.baseline_paths = std::move(v);
      });
  timing("speedup", "baseline median / candidate median", &reward::TimingFigures::speedup);
  timing("gflops", "2 nnz K / candidate median", &reward::TimingFigures::gflops);
  timing("bandwidth_gbs", "compulsory bytes / candidate median",
         &reward::TimingFigures::bandwidth_gbs);
  timing("bandwidth_fraction", "of the device's measured copy bandwidth",
         &reward::TimingFigures::bandwidth_fraction);
  timing("baseline_gflops", "cuSPARSE GFLOP/s", &reward::TimingFigures::baseline_gflops);
  timing("baseline_bandwidth_fraction", "cuSPARSE bandwidth fraction",
         &reward::TimingFigures::baseline_bandwidth_fraction);
  f64(
      "conversion_ms", "format conversion + upload",
      [](const Record& r) { return eval_of(r).conversion_ms; },
      [](Record& r, double v) {
        if (r.episode.eval) r.episode.eval->conversion_ms = v;
      });
  f64(
      "eval_wall_ms", "the whole evaluation as the evaluator saw it",
      [](const Record& r) { return eval_of(r).wall_ms; },
      [](Record& r, double v) {
        if (r.episode.eval) r.episode.eval->wall_ms = v;
      });
  str(
      "device", "the GPU's name", [](const Record& r) { return eval_of(r).device; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->device = std::move(v);
      });
  str(
      "program_digest", "content digest of the program text",
      [](const Record& r) { return eval_of(r).program_digest; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->program_digest = std::move(v);
      });
  str(
      "matrix_digest", "content digest of the matrix",
      [](const Record& r) { return eval_of(r).matrix_digest; },
      [](Record& r, std::string v) {
        if (r.episode.eval) r.episode.eval->matrix_digest = std::move(v);
      });
  str(
      "eval_json", "the whole EvalResult as JSON (EvalResult::to_json); empty when not evaluated",
      [](const Record& r) { return r.episode.eval ? r.episode.eval->to_json() : std::string(); },
      [](Record&, std::string) {});
  // Timings of the episode.
  f64(
      "episode_seconds", "reset to the final result, wall",
      [](const Record& r) { return r.episode.episode_seconds; },
      [](Record& r, double v) { r.episode.episode_seconds = v; });
  f64(
      "evaluation_seconds", "evaluation submit to result, wall",
      [](const Record& r) { return r.episode.evaluation_seconds; },
      [](Record& r, double v) { r.episode.evaluation_seconds = v; });
  return c;
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

// The file type and the memory type of a column.
Handle file_type(ColumnType type) {
  switch (type) {
    case ColumnType::i32:
      return Handle(H5Tcopy(H5T_STD_I32LE), H5Tclose);
    case ColumnType::i64:
      return Handle(H5Tcopy(H5T_STD_I64LE), H5Tclose);
    case ColumnType::u64:
      return Handle(H5Tcopy(H5T_STD_U64LE), H5Tclose);
    case ColumnType::u8:
      return Handle(H5Tcopy(H5T_STD_U8LE), H5Tclose);
    case ColumnType::f64:
      return Handle(H5Tcopy(H5T_IEEE_F64LE), H5Tclose);
    case ColumnType::str:
      return string_type();
    case ColumnType::vlen_i32:
      return Handle(H5Tvlen_create(H5T_STD_I32LE), H5Tclose);
    case ColumnType::vlen_f32:
      return Handle(H5Tvlen_create(H5T_IEEE_F32LE), H5Tclose);
  }
  return {};
}

Handle memory_type(ColumnType type) {
  switch (type) {
    case ColumnType::i32:
      return Handle(H5Tcopy(H5T_NATIVE_INT32), H5Tclose);
    case ColumnType::i64:
      return Handle(H5Tcopy(H5T_NATIVE_INT64), H5Tclose);
    case ColumnType::u64:
      return Handle(H5Tcopy(H5T_NATIVE_UINT64), H5Tclose);
    case ColumnType::u8:
      return Handle(H5Tcopy(H5T_NATIVE_UINT8), H5Tclose);
    case ColumnType::f64:
      return Handle(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose);
    case ColumnType::str:
      return string_type();
    case ColumnType::vlen_i32:
      return Handle(H5Tvlen_create(H5T_NATIVE_INT32), H5Tclose);
    case ColumnType::vlen_f32:
      return Handle(H5Tvlen_create(H5T_NATIVE_FLOAT), H5Tclose);
  }
  return {};
}

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
  switch (type) {
    case ColumnType::i32:
      return "int32";
    case ColumnType::i64:
      return "int64";
    case ColumnType::u64:
      return "uint64";
    case ColumnType::u8:
      return "uint8 (0/1)";
    case ColumnType::f64:
      return "float64";
    case ColumnType::str:
      return "string (vlen UTF-8)";
    case ColumnType::vlen_i32:
      return "vlen int32";
    case ColumnType::vlen_f32:
      return "vlen float32";
  }
  return "?";
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
    herr_t status = -1;
    switch (c.info.type) {
      case ColumnType::i32: {
        const auto v = static_cast<std::int32_t>(as_int(cell));
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &v);
        break;
      }
      case ColumnType::i64: {
        const std::int64_t v = as_int(cell);
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &v);
        break;
      }
      case ColumnType::u64: {
        const std::uint64_t v = as_u64(cell);
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &v);
        break;
      }
      case ColumnType::u8: {
        const auto v = static_cast<std::uint8_t>(as_int(cell));
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &v);
        break;
      }
      case ColumnType::f64: {
        const double v = as_double(cell);
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &v);
        break;
      }
      case ColumnType::str: {
        const std::string s = as_string(cell);
        const char* p = s.c_str();
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &p);
        break;
      }
      case ColumnType::vlen_i32: {
        const auto& v = std::get<std::vector<std::int32_t>>(cell);
        hvl_t h{v.size(), const_cast<std::int32_t*>(v.data())};
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &h);
        break;
      }
      case ColumnType::vlen_f32: {
        const auto& v = std::get<std::vector<float>>(cell);
        hvl_t h{v.size(), const_cast<float*>(v.data())};
        status = H5Dwrite(ds, mt, mspace.get(), fspace.get(), H5P_DEFAULT, &h);
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
    switch (c.info.type) {
      case ColumnType::i32: {
        std::vector<std::int32_t> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) c.set(records[r], Cell(static_cast<std::int64_t>(v[r])));
        break;
      }
      case ColumnType::i64: {
        std::vector<std::int64_t> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) c.set(records[r], Cell(v[r]));
        break;
      }
      case ColumnType::u64: {
        std::vector<std::uint64_t> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) c.set(records[r], Cell(v[r]));
        break;
      }
      case ColumnType::u8: {
        std::vector<std::uint8_t> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) c.set(records[r], Cell(static_cast<std::int64_t>(v[r])));
        break;
      }
      case ColumnType::f64: {
        std::vector<double> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) c.set(records[r], Cell(v[r]));
        break;
      }
      case ColumnType::str: {
        std::vector<char*> v(n, nullptr);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r)
          c.set(records[r], Cell(std::string(v[r] != nullptr ? v[r] : "")));
        H5Dvlen_reclaim(mt.get(), mspace.get(), H5P_DEFAULT, v.data());
        break;
      }
      case ColumnType::vlen_i32: {
        std::vector<hvl_t> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) {
          const auto* p = static_cast<const std::int32_t*>(v[r].p);
          c.set(records[r], Cell(std::vector<std::int32_t>(p, p + v[r].len)));
        }
        H5Dvlen_reclaim(mt.get(), mspace.get(), H5P_DEFAULT, v.data());
        break;
      }
      case ColumnType::vlen_f32: {
        std::vector<hvl_t> v(n);
        read(v.data());
        for (hsize_t r = 0; r < n; ++r) {
          const auto* p = static_cast<const float*>(v[r].p);
          c.set(records[r], Cell(std::vector<float>(p, p + v[r].len)));
        }
        H5Dvlen_reclaim(mt.get(), mspace.get(), H5P_DEFAULT, v.data());
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
