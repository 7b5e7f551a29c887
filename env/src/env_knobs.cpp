// The environment's knob declarations (env_knobs.hpp).
#include "sparserl/env/env_knobs.hpp"

#include <string>

namespace sparserl::env {

namespace {

std::optional<std::string> multiple_of_4(const datasets::KnobValue& value) {
  const std::int64_t v = std::get<std::int64_t>(value);
  if (v % 4 == 0) return std::nullopt;
  return "value " + std::to_string(v) +
         " is not a multiple of 4 (half of it per index, sin and cos)";
}

// EnvConfig::truncation_reward is optional: unset, an episode cut at max_tokens gets
// reward.compile_fail, which is therefore the knob's value until it is set.
datasets::KnobBinding<EnvConfig> truncation_reward() {
  const auto value = [](const EnvConfig& c) {
    return c.truncation_reward.value_or(c.reward.compile_fail);
  };
  return {.spec = {"truncation_reward",
                   datasets::KnobType::real,
                   {},
                   "reward of an episode cut at max_tokens without <eos> (EnvConfig's default is "
                   "reward.compile_fail: keep them equal unless you mean otherwise)",
                   {},
                   {},
                   {},
                   {}},
          .get = [value](const EnvConfig& c) { return datasets::KnobValue(value(c)); },
          .set = [](EnvConfig& c,
                    const datasets::KnobValue& v) { c.truncation_reward = std::get<double>(v); },
          .text = [value](const EnvConfig& c) { return datasets::knob_text::real(value(c)); },
          .parse =
              [](EnvConfig& c, std::string_view text) {
                c.truncation_reward = datasets::knob_text::parse_real(text);
              }};
}

}  // namespace

const datasets::Knobs<ObservationConfig>& observation_knobs() {
  using C = ObservationConfig;
  static const datasets::Knobs<C> knobs =
      datasets::Knobs<C>()
          .integer("nnz_samples", &C::nnz_samples, "K: nonzeros sampled into the observation", 1,
                   65536)
          .integer("embedding_dim", &C::embedding_dim,
                   "D: width of the sinusoidal embedding [PE(row) | PE(col)]", 4, 4096)
          .validate(multiple_of_4)
          .choice("index_scaling", &C::scaling,
                  "positions fed to the embedding: the raw index (the method) or index / extent * "
                  "index_scale",
                  {IndexScaling::raw, IndexScaling::normalized})
          .real("index_scale", &C::scale, "normalized scaling: index / extent * index_scale", 1e-9,
                1e12)
          .choice("stratification", &C::stratification,
                  "how the K nonzeros are drawn: one per block of nnz/K entries, or one per block "
                  "of rows",
                  {Stratification::nonzeros, Stratification::rows});
  return knobs;
}

const datasets::Knobs<EnvConfig>& env_knobs() {
  static const datasets::Knobs<EnvConfig> knobs =
      datasets::Knobs<EnvConfig>()
          .integer("max_tokens", &EnvConfig::max_tokens,
                   "tokens per episode, <eos> included (design-space programs need up to ~2300)", 1,
                   1 << 20)
          .choice("mask", &EnvConfig::mask,
                  "action mask: none, or syntax (lexically valid tokens, balanced brackets, kernel "
                  "declarations as the ABI spells them, <eos> only where the program can end)",
                  {MaskMode::none, MaskMode::syntax})
          .nest("", &EnvConfig::observation, observation_knobs())
          .add(truncation_reward());
  return knobs;
}

}  // namespace sparserl::env
