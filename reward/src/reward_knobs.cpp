// The reward's and the GPU protocol's knob declarations (reward_knobs.hpp).
#include "sparserl/reward/reward_knobs.hpp"

#include <string>
#include <vector>

namespace sparserl::reward {

namespace {

using datasets::KnobBinding;
using datasets::KnobValue;

// One side of RewardConfig::tiers as a list of numbers: the thresholds or the values. Setting one
// side keeps the other's entries (new pairs start at 0), so setting both gives the pairs.
KnobBinding<RewardConfig> tier_list(std::string path, double RewardTier::*side, std::string help,
                                    std::optional<double> min, std::optional<double> max) {
  const auto get = [side](const RewardConfig& c) {
    std::vector<double> out;
    for (const RewardTier& t : c.tiers) out.push_back(t.*side);
    return out;
  };
  const auto set = [side](RewardConfig& c, const std::vector<double>& values) {
    c.tiers.resize(values.size(), RewardTier{0.0, 0.0});
    for (std::size_t i = 0; i < values.size(); ++i) c.tiers[i].*side = values[i];
  };
  return {
      .spec =
          {std::move(path), datasets::KnobType::real_list, {}, std::move(help), min, max, {}, {}},
      .get = [get](const RewardConfig& c) { return KnobValue(get(c)); },
      .set = [set](RewardConfig& c,
                   const KnobValue& v) { set(c, std::get<std::vector<double>>(v)); },
      .text =
          [get](const RewardConfig& c) {
            std::string out;
            for (double v : get(c)) out += (out.empty() ? "" : ",") + datasets::knob_text::real(v);
            return out;
          },
      .parse =
          [set](RewardConfig& c, std::string_view text) {
            std::vector<double> values;
            for (std::size_t start = 0; start < text.size();) {
              const std::size_t comma = std::min(text.find(',', start), text.size());
              values.push_back(datasets::knob_text::parse_real(text.substr(start, comma - start)));
              start = comma + 1;
            }
            set(c, values);
          }};
}

}  // namespace

const datasets::Knobs<GpuProtocol>& gpu_protocol_knobs() {
  using P = GpuProtocol;
  static const datasets::Knobs<P> knobs =
      datasets::Knobs<P>()
          .choice("baseline", &P::baseline,
                  "speedup denominator: best = the fastest correct cuSPARSE path for the matrix "
                  "(CSR ALG1/2, COO, sliced ELL, BSR; SpMM: CSR, COO, blocked ELL, BSR); csr = CSR "
                  "algorithms only (the baseline before bench-v2, to reproduce older figures)",
                  {BaselineMode::best, BaselineMode::csr})
          .integer("check.seed", &P::seed,
                   "seeds the random inputs of every evaluation (with the cubin and matrix)", 0,
                   9.2e18)
          .integer("check.random_inputs", &P::random_inputs,
                   "fresh random inputs (values in [-1, 1]) checked per evaluation", 1, 64)
          .boolean("timing.enabled", &P::time,
                   "time correct kernels against cuSPARSE (false: the speed term is 0)")
          .integer("timing.warmup", &P::warmup_runs, "untimed runs of each before timing", 0, 1000)
          .integer("timing.repetitions", &P::timed_runs,
                   "timed repetitions of each, interleaved; the median is reported", 1, 100000)
          .boolean("timing.flush_l2", &P::flush_l2, "flush the L2 cache before every repetition");
  return knobs;
}

const datasets::Knobs<RewardConfig>& reward_knobs() {
  using R = RewardConfig;
  static const datasets::Knobs<R> knobs =
      datasets::Knobs<R>()
          .real("compile_pass", &R::compile_pass, "R_compile when the program compiled")
          .real("compile_fail", &R::compile_fail, "R_compile when it did not")
          .real("test_pass", &R::test_pass, "R_test when the output was correct")
          .real("test_fail", &R::test_fail, "R_test when a compiled program failed on the GPU")
          .real("r_eff", &R::r_eff, "weight of shape(speedup)")
          .real("r_pen", &R::r_pen, "penalty for exceeding a resource limit")
          .choice("shape", &R::shape, "speed shape: speedup - 1, log2(speedup), or tiers",
                  {SpeedShape::linear, SpeedShape::log2, SpeedShape::tiers})
          .add(tier_list("tier_speedups", &RewardTier::min_speedup,
                         "tiers: ascending speedup thresholds", 0, 1e6))
          .add(tier_list("tier_values", &RewardTier::value, "tiers: shape value of each threshold",
                         std::nullopt, std::nullopt))
          .real("clip_min", &R::clip_min, "lower clip of the total")
          .real("clip_max", &R::clip_max, "upper clip of the total");
  return knobs;
}

}  // namespace sparserl::reward
