// The reward formula, term by term, with the compiled / tested / correct rules of reward.hpp.
#include "sparserl/reward/reward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::reward {
namespace {

std::once_flag g_compile_only_notice;

void announce_compile_only() {
  std::call_once(g_compile_only_notice, [] {
    std::fputs(
        "sparserl: no GPU available: rewards are the compile stage alone (R_compile minus the "
        "resource penalty); correctness and speed are not measured\n",
        stderr);
  });
}

std::string number(double v) {
  std::ostringstream out;
  out.precision(6);
  out << v;
  return out.str();
}

}  // namespace

void compile_only_notice_given() {
  std::call_once(g_compile_only_notice, [] {});
}

namespace {

constexpr auto kSpeedShapeNames =
    datasets::enum_names<SpeedShape::linear, SpeedShape::tiers>({"linear", "log2", "tiers"});

}  // namespace

std::string_view to_string(SpeedShape shape) { return kSpeedShapeNames.name(shape); }
std::optional<SpeedShape> parse_speed_shape(std::string_view text) {
  return kSpeedShapeNames.parse(text);
}

std::optional<std::string> RewardConfig::validate() const {
  for (double w :
       {compile_pass, compile_fail, test_pass, test_fail, r_eff, r_pen, clip_min, clip_max}) {
    if (!std::isfinite(w)) return std::string("reward weights and clip bounds must be finite");
  }
  if (clip_min > clip_max) {
    return "clip_min (" + number(clip_min) + ") is greater than clip_max (" + number(clip_max) +
           ")";
  }
  if (shape == SpeedShape::tiers) {
    if (tiers.empty()) return std::string("shape = tiers needs at least one tier");
    for (std::size_t i = 0; i < tiers.size(); ++i) {
      if (!std::isfinite(tiers[i].min_speedup) || !std::isfinite(tiers[i].value) ||
          tiers[i].min_speedup <= 0) {
        return "tier " + std::to_string(i) + ": min_speedup must be positive and values finite";
      }
      if (i > 0 && tiers[i].min_speedup <= tiers[i - 1].min_speedup) {
        return "tiers must be in ascending order of min_speedup (tier " + std::to_string(i) +
               " is not above tier " + std::to_string(i - 1) + ")";
      }
    }
  }
  return std::nullopt;
}

bool counts_as_compiled(const EvalResult& r) {
  switch (r.error) {
    case ErrorKind::bad_program:
    case ErrorKind::static_check:
    case ErrorKind::compile_error:
      return false;
    case ErrorKind::launch_error:
    case ErrorKind::illegal_address:
    case ErrorKind::wrong_answer:
    case ErrorKind::unwritten_output:
    case ErrorKind::input_mutated:
    case ErrorKind::no_gpu:
      return true;
    case ErrorKind::none:
    case ErrorKind::resource_limit:
    case ErrorKind::timeout:
    case ErrorKind::crash:
    case ErrorKind::internal_error:
      return r.compiled;
  }
  return r.compiled;
}

bool counts_as_tested(const EvalResult& r) {
  if (!r.gpu_available || !counts_as_compiled(r)) return false;
  switch (r.error) {
    case ErrorKind::launch_error:
    case ErrorKind::illegal_address:
    case ErrorKind::wrong_answer:
    case ErrorKind::unwritten_output:
    case ErrorKind::input_mutated:
      return true;
    case ErrorKind::timeout:
    case ErrorKind::crash:
      // Compiled, so the failure happened on the GPU side: the test was attempted and failed.
      return true;
    case ErrorKind::none:
      return r.correct || r.stage >= Stage::check;
    default:
      return false;
  }
}

HierarchicalReward::HierarchicalReward(RewardConfig config) : config_(std::move(config)) {
  if (auto problem = config_.validate()) throw std::invalid_argument("reward config: " + *problem);
}

double HierarchicalReward::shape(double speedup) const {
  if (!std::isfinite(speedup) || speedup <= 0) return 0;
  switch (config_.shape) {
    case SpeedShape::linear:
      return speedup - 1;
    case SpeedShape::log2:
      return std::log2(speedup);
    case SpeedShape::tiers: {
      double value = 0;
      for (const RewardTier& t : config_.tiers) {
        if (speedup >= t.min_speedup) value = t.value;
      }
      return value;
    }
  }
  return 0;
}

RewardBreakdown HierarchicalReward::breakdown(const EvalResult& r) const {
  RewardBreakdown b;
  b.compiled = counts_as_compiled(r);
  b.resource_limit = r.error == ErrorKind::resource_limit;
  b.compile = b.compiled ? config_.compile_pass : config_.compile_fail;
  b.penalty = b.resource_limit ? config_.r_pen : 0;
  if (!r.gpu_available) {
    announce_compile_only();
    b.compile_only = true;
  } else {
    b.tested = counts_as_tested(r);
    b.correct = b.tested && r.error == ErrorKind::none && r.correct;
    if (b.tested) b.test = b.correct ? config_.test_pass : config_.test_fail;
    if (b.correct && r.timed && std::isfinite(r.timing.speedup) && r.timing.speedup > 0) {
      b.speedup = r.timing.speedup;
      b.efficiency = config_.r_eff * shape(b.speedup);
    }
  }
  b.unclipped = b.compile + b.test + b.efficiency - b.penalty;
  b.total = std::clamp(b.unclipped, config_.clip_min, config_.clip_max);
  return b;
}

std::string RewardBreakdown::str() const {
  std::string s = "total=" + number(total) + " compile=" + number(compile) +
                  " test=" + number(test) + " efficiency=" + number(efficiency) +
                  " penalty=" + number(penalty);
  if (unclipped != total) s += " (clipped from " + number(unclipped) + ")";
  if (compile_only) s += " (compile stage only: no GPU)";
  if (speedup > 0) s += " (speedup " + number(speedup) + ")";
  return s;
}

}  // namespace sparserl::reward
