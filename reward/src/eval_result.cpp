// Names of the evaluation stages and error kinds, and EvalResult's JSON form. The JSON key names
// are a published interface (`sparserl check --json`, the environment's info, run logs): they are
// the C++ field names, nested objects for the compile / check / timing figures, and never change
// silently. Non-finite doubles become null (JSON has no NaN), strings are escaped byte-exactly
// (control bytes as \u00XX, other bytes as they are).
#include "sparserl/reward/eval_result.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace sparserl::reward {

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

namespace {

constexpr std::array<std::pair<Stage, std::string_view>, 6> kStages = {{
    {Stage::parse, "parse"},
    {Stage::static_check, "static_check"},
    {Stage::compile, "compile"},
    {Stage::run, "run"},
    {Stage::check, "check"},
    {Stage::time, "time"},
}};

constexpr std::array<std::pair<ErrorKind, std::string_view>, 14> kErrorKinds = {{
    {ErrorKind::none, "none"},
    {ErrorKind::bad_program, "bad_program"},
    {ErrorKind::static_check, "static_check"},
    {ErrorKind::compile_error, "compile_error"},
    {ErrorKind::resource_limit, "resource_limit"},
    {ErrorKind::launch_error, "launch_error"},
    {ErrorKind::illegal_address, "illegal_address"},
    {ErrorKind::timeout, "timeout"},
    {ErrorKind::crash, "crash"},
    {ErrorKind::wrong_answer, "wrong_answer"},
    {ErrorKind::unwritten_output, "unwritten_output"},
    {ErrorKind::input_mutated, "input_mutated"},
    {ErrorKind::no_gpu, "no_gpu"},
    {ErrorKind::internal_error, "internal_error"},
}};

// A tiny JSON object writer: keys in insertion order, comma handling, nested objects.
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_ += '{'; }
  ~JsonObject() { out_ += '}'; }
  JsonObject(const JsonObject&) = delete;
  JsonObject& operator=(const JsonObject&) = delete;

  void field(std::string_view key, std::string_view value) {
    name(key);
    quote(value);
  }
  void field(std::string_view key, const std::string& value) {
    field(key, std::string_view(value));
  }
  void field(std::string_view key, const char* value) { field(key, std::string_view(value)); }
  void field(std::string_view key, bool value) {
    name(key);
    out_ += value ? "true" : "false";
  }
  void field(std::string_view key, int value) { field(key, static_cast<std::int64_t>(value)); }
  void field(std::string_view key, std::int64_t value) {
    name(key);
    out_ += std::to_string(value);
  }
  void field(std::string_view key, double value) {
    name(key);
    if (!std::isfinite(value)) {
      out_ += "null";
      return;
    }
    std::array<char, 32> buf{};
    auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    out_.append(buf.data(), ec == std::errc() ? ptr : buf.data());
  }
  // Starts a nested object under `key`; the returned object closes it when destroyed.
  JsonObject object(std::string_view key) {
    name(key);
    return JsonObject(out_);
  }

 private:
  void name(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    quote(key);
    out_ += ':';
  }
  void quote(std::string_view text) { append_json_string(out_, text); }

  std::string& out_;
  bool first_ = true;
};

}  // namespace

std::string_view to_string(Stage stage) {
  for (const auto& [s, name] : kStages) {
    if (s == stage) return name;
  }
  return "unknown";
}

std::string_view to_string(ErrorKind kind) {
  for (const auto& [k, name] : kErrorKinds) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<ErrorKind> parse_error_kind(std::string_view text) {
  for (const auto& [k, name] : kErrorKinds) {
    if (name == text) return k;
  }
  return std::nullopt;
}

std::optional<Stage> parse_stage(std::string_view text) {
  for (const auto& [s, name] : kStages) {
    if (name == text) return s;
  }
  return std::nullopt;
}

std::string EvalResult::to_json() const {
  std::string out;
  out.reserve(1024 + message.size() + compile.log.size());
  {
    JsonObject o(out);
    o.field("stage", to_string(stage));
    o.field("error", to_string(error));
    o.field("ok", ok());
    o.field("message", message);
    o.field("static_reason", static_reason);
    o.field("compiled", compiled);
    o.field("correct", correct);
    o.field("timed", timed);
    o.field("gpu_available", gpu_available);
    {
      JsonObject c = o.object("compile");
      c.field("compile_ms", compile.compile_ms);
      c.field("max_registers", compile.max_registers);
      c.field("static_smem_bytes", compile.static_smem_bytes);
      c.field("spill_bytes", compile.spill_bytes);
      c.field("local_bytes", compile.local_bytes);
      c.field("arch", compile.arch);
      c.field("log", compile.log);
      c.field("cached", compile.cached);
    }
    {
      JsonObject k = o.object("check");
      k.field("inputs", check.inputs);
      k.field("max_error_ratio", check.max_error_ratio);
      k.field("bad_outputs", check.bad_outputs);
      k.field("first_bad_row", check.first_bad_row);
      k.field("unchecked_outputs", check.unchecked_outputs);
    }
    {
      JsonObject t = o.object("timing");
      t.field("median_us", timing.median_us);
      t.field("p10_us", timing.p10_us);
      t.field("p90_us", timing.p90_us);
      t.field("launches_per_run", timing.launches_per_run);
      t.field("repetitions", timing.repetitions);
      t.field("baseline_median_us", timing.baseline_median_us);
      t.field("baseline_p10_us", timing.baseline_p10_us);
      t.field("baseline_p90_us", timing.baseline_p90_us);
      t.field("baseline_algorithm", timing.baseline_algorithm);
      t.field("baseline_paths", timing.baseline_paths);
      t.field("speedup", timing.speedup);
      t.field("gflops", timing.gflops);
      t.field("bandwidth_gbs", timing.bandwidth_gbs);
      t.field("bandwidth_fraction", timing.bandwidth_fraction);
      t.field("baseline_gflops", timing.baseline_gflops);
      t.field("baseline_bandwidth_fraction", timing.baseline_bandwidth_fraction);
    }
    o.field("conversion_ms", conversion_ms);
    o.field("wall_ms", wall_ms);
    o.field("device", device);
    o.field("program_digest", program_digest);
    o.field("matrix_digest", matrix_digest);
    o.field("result_cached", result_cached);
  }
  return out;
}

}  // namespace sparserl::reward
