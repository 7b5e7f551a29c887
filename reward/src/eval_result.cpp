// Names of the evaluation stages and error kinds, and EvalResult's JSON form. The JSON key names
// are a published interface (`sparserl check --json`, the environment's info, run logs): they are
// the C++ field names, nested objects for the compile / check / timing figures, and never change
// silently. nlohmann-json writes it: non-finite doubles become null (JSON has no NaN), a double
// keeps its '.0' ("12.0"), control characters are escaped, and bytes that are not UTF-8 (a compiler
// log) become U+FFFD.
#include "sparserl/reward/eval_result.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::reward {

namespace {

constexpr auto kStageNames = datasets::enum_names<Stage::parse, Stage::time>(
    {"parse", "static_check", "compile", "run", "check", "time"});
constexpr auto kErrorKindNames = datasets::enum_names<ErrorKind::none, ErrorKind::internal_error>(
    {"none", "bad_program", "static_check", "compile_error", "resource_limit", "launch_error",
     "illegal_address", "timeout", "crash", "wrong_answer", "unwritten_output", "input_mutated",
     "no_gpu", "internal_error"});

}  // namespace

std::string_view to_string(Stage stage) { return kStageNames.name(stage, "unknown"); }
std::string_view to_string(ErrorKind kind) { return kErrorKindNames.name(kind, "unknown"); }
std::optional<ErrorKind> parse_error_kind(std::string_view text) {
  return kErrorKindNames.parse(text);
}
std::optional<Stage> parse_stage(std::string_view text) { return kStageNames.parse(text); }

double EvalResult::phase_ms(std::string_view name) const {
  double ms = 0;
  for (const PhaseTime& p : phases) {
    if (p.name == name) ms += p.ms;
  }
  return ms;
}

double longest_candidate_wait_ms(const EvalResult& r) {
  return std::max({r.phase_ms("gpu.run"), r.phase_ms("gpu.timed"), r.phase_ms("gpu.timed_batch_mismatch")});
}

std::string EvalResult::to_json() const {
  nlohmann::ordered_json phase_object = nlohmann::ordered_json::object();
  for (const PhaseTime& p : phases) phase_object[p.name] = p.ms;
  const nlohmann::ordered_json j = {
      {"stage", to_string(stage)},
      {"error", to_string(error)},
      {"ok", ok()},
      {"message", message},
      {"static_reason", static_reason},
      {"compiled", compiled},
      {"correct", correct},
      {"timed", timed},
      {"gpu_available", gpu_available},
      {"compile",
       {
           {"compile_ms", compile.compile_ms},
           {"max_registers", compile.max_registers},
           {"static_smem_bytes", compile.static_smem_bytes},
           {"spill_bytes", compile.spill_bytes},
           {"local_bytes", compile.local_bytes},
           {"arch", compile.arch},
           {"log", compile.log},
           {"cached", compile.cached},
       }},
      {"check",
       {
           {"inputs", check.inputs},
           {"max_error_ratio", check.max_error_ratio},
           {"bad_outputs", check.bad_outputs},
           {"first_bad_row", check.first_bad_row},
           {"unchecked_outputs", check.unchecked_outputs},
       }},
      {"timing",
       {
           {"median_us", timing.median_us},
           {"p10_us", timing.p10_us},
           {"p90_us", timing.p90_us},
           {"launches_per_run", timing.launches_per_run},
           {"repetitions", timing.repetitions},
           {"baseline_median_us", timing.baseline_median_us},
           {"baseline_p10_us", timing.baseline_p10_us},
           {"baseline_p90_us", timing.baseline_p90_us},
           {"baseline_algorithm", timing.baseline_algorithm},
           {"baseline_paths", timing.baseline_paths},
           {"speedup", timing.speedup},
           {"gflops", timing.gflops},
           {"bandwidth_gbs", timing.bandwidth_gbs},
           {"bandwidth_fraction", timing.bandwidth_fraction},
           {"baseline_gflops", timing.baseline_gflops},
           {"baseline_bandwidth_fraction", timing.baseline_bandwidth_fraction},
       }},
      {"conversion_ms", conversion_ms},
      {"wall_ms", wall_ms},
      {"device", device},
      {"device_pci_bus_id", device_pci_bus_id},
      {"program_digest", program_digest},
      {"matrix_digest", matrix_digest},
      {"result_cached", result_cached},
      {"phases_ms", phase_object},
  };
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace sparserl::reward
