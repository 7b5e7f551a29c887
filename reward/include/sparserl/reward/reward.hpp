// HierarchicalReward: the method's reward as a pure function of an EvalResult.
//
//   R = R_compile + 1[compiled] * R_test + 1[correct] * r_eff * shape(speedup)
//       - r_pen * 1[resource_limit]
//
// clipped to [clip_min, clip_max]. R_compile is +0.5 when the program compiled and -0.5 otherwise;
// R_test is +0.5 when it passed the correctness check and -0.5 when the GPU stages ran and it
// failed; shape is speedup - 1 (the method), log2(speedup), or tiers (CUDA Agent style). Every
// weight is in RewardConfig.
//
// What counts as compiled (the compile stage produced a cubin), by error kind:
//   never:   bad_program, static_check, compile_error
//   always:  launch_error, illegal_address, wrong_answer, unwritten_output, input_mutated, no_gpu
//   by EvalResult::compiled (the stage it happened in): none, resource_limit, timeout, crash,
//            internal_error (a compile worker's timeout or crash is "not compiled"; a GPU
//            worker's is "compiled, failed the test")
// What counts as tested: compiled and the GPU stages were attempted; a compiled program whose test
// failed gets R_test's failure value, one never tested (no GPU, --compile-only) gets 0 for the
// term. Correct means error == none and EvalResult::correct; the speed term needs EvalResult::timed
// and a positive finite speedup, otherwise it is 0.
//
// Without a GPU (EvalResult::gpu_available == false) the reward is the compile stage alone,
// R_compile - r_pen * 1[resource_limit], and a one-line notice goes to stderr once per process.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/reward/eval_result.hpp"

namespace sparserl::reward {

// The reward prints one notice on stderr the first time it scores a result without a GPU. A caller
// that has already told its user (the experiment runner, at start) calls this so that no second
// notice appears.
void compile_only_notice_given();

enum class SpeedShape {
  linear,  // speedup - 1 (the method's default)
  log2,    // log2(speedup): symmetric in faster / slower
  tiers,   // the value of the highest tier whose threshold the speedup reaches (0 below all)
};
std::string_view to_string(SpeedShape shape);
std::optional<SpeedShape> parse_speed_shape(std::string_view text);  // "linear", "log2", "tiers"

struct RewardTier {
  double min_speedup = 1.0;  // reached when speedup >= min_speedup
  double value = 1.0;        // shape(speedup) for this tier
};

struct RewardConfig {
  double compile_pass = 0.5, compile_fail = -0.5;  // R_compile
  double test_pass = 0.5, test_fail = -0.5;        // R_test
  double r_eff = 0.2;                              // weight of shape(speedup)
  double r_pen = 0.2;                              // resource-limit penalty
  SpeedShape shape = SpeedShape::linear;
  // For SpeedShape::tiers, ascending thresholds. Default: faster than cuSPARSE 1, 1.5x 2, 2x 3.
  std::vector<RewardTier> tiers = {{1.0, 1.0}, {1.5, 2.0}, {2.0, 3.0}};
  double clip_min = -1.0, clip_max = 3.0;  // the total is clipped into [clip_min, clip_max]

  // nullopt when valid, else what is wrong (clip_min > clip_max, tiers not ascending, NaN weights).
  [[nodiscard]] std::optional<std::string> validate() const;
};

// Each term of one reward, and the facts it was computed from.
struct RewardBreakdown {
  bool compiled = false;
  bool tested = false;  // the GPU stages ran (so R_test applied)
  bool correct = false;
  bool resource_limit = false;
  bool compile_only = false;  // no GPU: the reward is the compile stage alone
  double speedup = 0;         // as used (0 when not timed)
  double compile = 0;         // R_compile
  double test = 0;            // 1[compiled] * R_test (0 when not tested)
  double efficiency = 0;      // 1[correct] * r_eff * shape(speedup)
  double penalty = 0;         // r_pen * 1[resource_limit] (subtracted)
  double unclipped = 0;
  double total = 0;  // clipped

  // "total=1.04 compile=0.5 test=0.5 efficiency=0.04 penalty=0 (speedup 1.2, linear)".
  [[nodiscard]] std::string str() const;
};

class HierarchicalReward {
 public:
  // Throws std::invalid_argument with validate()'s message for an invalid config.
  explicit HierarchicalReward(RewardConfig config = {});

  [[nodiscard]] RewardBreakdown breakdown(const EvalResult& result) const;
  [[nodiscard]] double operator()(const EvalResult& result) const {
    return breakdown(result).total;
  }
  [[nodiscard]] double shape(double speedup) const;  // the configured shape on its own
  [[nodiscard]] const RewardConfig& config() const { return config_; }

 private:
  RewardConfig config_;
};

// The compiled / tested rules above, on their own.
bool counts_as_compiled(const EvalResult& result);
bool counts_as_tested(const EvalResult& result);

}  // namespace sparserl::reward
