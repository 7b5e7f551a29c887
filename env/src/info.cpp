// The info dictionary and the flattening of EvalResult and RewardBreakdown into it. The EvalResult
// keys follow EvalResult::to_json() field for field; tests/env/env_test.cpp checks that none is
// missing. to_json() is nlohmann-json's, written as EvalResult's (NaN as null, invalid UTF-8 as
// U+FFFD).
#include "sparserl/env/info.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace sparserl::env {
namespace {

[[noreturn]] void missing(std::string_view key, std::string_view type) {
  throw std::out_of_range("info has no " + std::string(type) + " value under '" + std::string(key) +
                          "'");
}

}  // namespace

void Info::set_value(std::string key, InfoValue value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

const InfoValue* Info::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool Info::get_bool(std::string_view key) const {
  const InfoValue* v = find(key);
  if (v == nullptr || !std::holds_alternative<bool>(*v)) missing(key, "boolean");
  return std::get<bool>(*v);
}

std::int64_t Info::get_int(std::string_view key) const {
  const InfoValue* v = find(key);
  if (v == nullptr || !std::holds_alternative<std::int64_t>(*v)) missing(key, "integer");
  return std::get<std::int64_t>(*v);
}

double Info::get_double(std::string_view key) const {
  const InfoValue* v = find(key);
  if (v != nullptr && std::holds_alternative<double>(*v)) return std::get<double>(*v);
  if (v != nullptr && std::holds_alternative<std::int64_t>(*v)) {
    return static_cast<double>(std::get<std::int64_t>(*v));
  }
  missing(key, "number");
}

const std::string& Info::get_string(std::string_view key) const {
  const InfoValue* v = find(key);
  if (v == nullptr || !std::holds_alternative<std::string>(*v)) missing(key, "string");
  return std::get<std::string>(*v);
}

std::string Info::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : entries_) {
    std::visit([&j, &key = key](const auto& v) { j[key] = v; }, value);
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void add_eval_result(Info& info, const reward::EvalResult& r) {
  info.set("eval.stage", std::string(reward::to_string(r.stage)));
  info.set("eval.error", std::string(reward::to_string(r.error)));
  info.set("eval.ok", r.ok());
  info.set("eval.message", r.message);
  info.set("eval.static_reason", r.static_reason);
  info.set("eval.compiled", r.compiled);
  info.set("eval.correct", r.correct);
  info.set("eval.timed", r.timed);
  info.set("eval.gpu_available", r.gpu_available);
  info.set("eval.compile.compile_ms", r.compile.compile_ms);
  info.set("eval.compile.max_registers", r.compile.max_registers);
  info.set("eval.compile.static_smem_bytes", r.compile.static_smem_bytes);
  info.set("eval.compile.spill_bytes", r.compile.spill_bytes);
  info.set("eval.compile.local_bytes", r.compile.local_bytes);
  info.set("eval.compile.arch", r.compile.arch);
  info.set("eval.compile.log", r.compile.log);
  info.set("eval.compile.cached", r.compile.cached);
  info.set("eval.check.inputs", r.check.inputs);
  info.set("eval.check.max_error_ratio", r.check.max_error_ratio);
  info.set("eval.check.bad_outputs", r.check.bad_outputs);
  info.set("eval.check.first_bad_row", r.check.first_bad_row);
  info.set("eval.check.unchecked_outputs", r.check.unchecked_outputs);
  info.set("eval.timing.median_us", r.timing.median_us);
  info.set("eval.timing.p10_us", r.timing.p10_us);
  info.set("eval.timing.p90_us", r.timing.p90_us);
  info.set("eval.timing.launches_per_run", r.timing.launches_per_run);
  info.set("eval.timing.repetitions", r.timing.repetitions);
  info.set("eval.timing.baseline_median_us", r.timing.baseline_median_us);
  info.set("eval.timing.baseline_p10_us", r.timing.baseline_p10_us);
  info.set("eval.timing.baseline_p90_us", r.timing.baseline_p90_us);
  info.set("eval.timing.baseline_algorithm", r.timing.baseline_algorithm);
  info.set("eval.timing.baseline_paths", r.timing.baseline_paths);
  info.set("eval.timing.speedup", r.timing.speedup);
  info.set("eval.timing.gflops", r.timing.gflops);
  info.set("eval.timing.bandwidth_gbs", r.timing.bandwidth_gbs);
  info.set("eval.timing.bandwidth_fraction", r.timing.bandwidth_fraction);
  info.set("eval.timing.baseline_gflops", r.timing.baseline_gflops);
  info.set("eval.timing.baseline_bandwidth_fraction", r.timing.baseline_bandwidth_fraction);
  info.set("eval.conversion_ms", r.conversion_ms);
  info.set("eval.wall_ms", r.wall_ms);
  info.set("eval.device", r.device);
  info.set("eval.device_pci_bus_id", r.device_pci_bus_id);
  info.set("eval.program_digest", r.program_digest);
  info.set("eval.matrix_digest", r.matrix_digest);
  info.set("eval.result_cached", r.result_cached);
}

void add_reward_breakdown(Info& info, const reward::RewardBreakdown& b) {
  info.set("reward.total", b.total);
  info.set("reward.compile", b.compile);
  info.set("reward.test", b.test);
  info.set("reward.efficiency", b.efficiency);
  info.set("reward.penalty", b.penalty);
  info.set("reward.unclipped", b.unclipped);
  info.set("reward.speedup", b.speedup);
  info.set("reward.compiled", b.compiled);
  info.set("reward.tested", b.tested);
  info.set("reward.correct", b.correct);
  info.set("reward.resource_limit", b.resource_limit);
  info.set("reward.compile_only", b.compile_only);
}

}  // namespace sparserl::env
