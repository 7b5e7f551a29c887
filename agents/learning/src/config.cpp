// The agents' configuration: presets of the policy's size, validation that names the wrong field,
// the learning-rate schedule, the names of the enums, and the "key = value" form checkpoints store.
// No LibTorch here. The key table below is the single list of every AgentConfig field: writing and
// reading a checkpoint both walk it, so a field cannot be saved and forgotten on load.
#include "sparserl/agents/config.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparserl::agents {

namespace {

std::string fmt_double(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

double parse_double(std::string_view key, std::string_view text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(std::string(text), &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("agent config key '" + std::string(key) +
                              "': expected a number, got '" + std::string(text) + "'");
}

std::int64_t parse_int(std::string_view key, std::string_view text) {
  std::int64_t v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw std::invalid_argument("agent config key '" + std::string(key) +
                                "': expected an integer, got '" + std::string(text) + "'");
  }
  return v;
}

bool parse_bool(std::string_view key, std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw std::invalid_argument("agent config key '" + std::string(key) +
                              "': expected true or false, got '" + std::string(text) + "'");
}

template <typename Enum>
Enum parse_enum(std::string_view key, std::string_view text,
                std::optional<Enum> (*parse)(std::string_view), std::string_view choices) {
  if (auto v = parse(text)) return *v;
  throw std::invalid_argument("agent config key '" + std::string(key) + "': expected one of " +
                              std::string(choices) + ", got '" + std::string(text) + "'");
}

struct Field {
  std::string key;
  std::function<std::string(const AgentConfig&)> get;
  std::function<void(AgentConfig&, std::string_view)> set;
};

#define SPARSERL_INT_FIELD(KEY, MEMBER)                                  \
  Field {                                                                \
    KEY, [](const AgentConfig& c) { return std::to_string(c.MEMBER); },  \
        [](AgentConfig& c, std::string_view v) {                         \
          c.MEMBER = static_cast<decltype(c.MEMBER)>(parse_int(KEY, v)); \
        }                                                                \
  }
#define SPARSERL_REAL_FIELD(KEY, MEMBER)                                            \
  Field {                                                                           \
    KEY, [](const AgentConfig& c) { return fmt_double(c.MEMBER); },                 \
        [](AgentConfig& c, std::string_view v) { c.MEMBER = parse_double(KEY, v); } \
  }
#define SPARSERL_BOOL_FIELD(KEY, MEMBER)                                                \
  Field {                                                                               \
    KEY, [](const AgentConfig& c) { return std::string(c.MEMBER ? "true" : "false"); }, \
        [](AgentConfig& c, std::string_view v) { c.MEMBER = parse_bool(KEY, v); }       \
  }
#define SPARSERL_ENUM_FIELD(KEY, MEMBER, PARSE, CHOICES)                                           \
  Field {                                                                                          \
    KEY, [](const AgentConfig& c) { return std::string(to_string(c.MEMBER)); },                    \
        [](AgentConfig& c, std::string_view v) { c.MEMBER = parse_enum(KEY, v, &PARSE, CHOICES); } \
  }

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      SPARSERL_INT_FIELD("policy.layers", policy.layers),
      SPARSERL_INT_FIELD("policy.heads", policy.heads),
      SPARSERL_INT_FIELD("policy.d_model", policy.d_model),
      SPARSERL_INT_FIELD("policy.d_ff", policy.d_ff),
      SPARSERL_INT_FIELD("policy.max_tokens", policy.max_tokens),
      SPARSERL_INT_FIELD("policy.nnz_samples", policy.nnz_samples),
      SPARSERL_INT_FIELD("policy.embedding_dim", policy.embedding_dim),
      SPARSERL_INT_FIELD("policy.feature_dim", policy.feature_dim),
      SPARSERL_INT_FIELD("policy.vocab_size", policy.vocab_size),
      SPARSERL_REAL_FIELD("policy.dropout", policy.dropout),
      SPARSERL_BOOL_FIELD("policy.tie_embeddings", policy.tie_embeddings),
      SPARSERL_REAL_FIELD("optimizer.lr", optimizer.lr),
      SPARSERL_REAL_FIELD("optimizer.beta1", optimizer.beta1),
      SPARSERL_REAL_FIELD("optimizer.beta2", optimizer.beta2),
      SPARSERL_REAL_FIELD("optimizer.eps", optimizer.eps),
      SPARSERL_REAL_FIELD("optimizer.weight_decay", optimizer.weight_decay),
      SPARSERL_REAL_FIELD("optimizer.max_grad_norm", optimizer.max_grad_norm),
      SPARSERL_INT_FIELD("optimizer.warmup_steps", optimizer.warmup_steps),
      SPARSERL_ENUM_FIELD("optimizer.schedule", optimizer.schedule, parse_lr_schedule,
                          "constant, cosine, linear"),
      SPARSERL_INT_FIELD("optimizer.decay_steps", optimizer.decay_steps),
      SPARSERL_REAL_FIELD("optimizer.min_lr_ratio", optimizer.min_lr_ratio),
      SPARSERL_REAL_FIELD("sampling.temperature", sampling.temperature),
      SPARSERL_INT_FIELD("sampling.top_k", sampling.top_k),
      SPARSERL_REAL_FIELD("sampling.top_p", sampling.top_p),
      SPARSERL_BOOL_FIELD("sampling.greedy", sampling.greedy),
      SPARSERL_ENUM_FIELD("agent.mask", mask, env::parse_mask_mode, "none, syntax"),
      SPARSERL_ENUM_FIELD("agent.algorithm", algorithm, parse_algorithm,
                          "sft, reinforce, ppo, grpo"),
      Field{"agent.device", [](const AgentConfig& c) { return c.device; },
            [](AgentConfig& c, std::string_view v) { c.device = std::string(v); }},
      Field{"agent.seed", [](const AgentConfig& c) { return std::to_string(c.seed); },
            [](AgentConfig& c, std::string_view v) {
              std::uint64_t s = 0;
              const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), s);
              if (error != std::errc() || end != v.data() + v.size()) {
                throw std::invalid_argument(
                    "agent config key 'agent.seed': expected an unsigned integer, got '" +
                    std::string(v) + "'");
              }
              c.seed = s;
            }},
      SPARSERL_REAL_FIELD("reinforce.kl_coef", reinforce.kl_coef),
      SPARSERL_ENUM_FIELD("reinforce.kl_estimator", reinforce.kl_estimator, parse_kl_estimator,
                          "k1, k2, k3"),
      SPARSERL_BOOL_FIELD("reinforce.normalize_advantages", reinforce.normalize_advantages),
      SPARSERL_BOOL_FIELD("reinforce.normalize_by_length", reinforce.normalize_by_length),
      SPARSERL_INT_FIELD("reinforce.minibatches", reinforce.minibatches),
      SPARSERL_REAL_FIELD("ppo.gamma", ppo.gamma),
      SPARSERL_REAL_FIELD("ppo.lambda", ppo.lambda),
      SPARSERL_REAL_FIELD("ppo.clip_ratio", ppo.clip_ratio),
      SPARSERL_REAL_FIELD("ppo.value_clip", ppo.value_clip),
      SPARSERL_REAL_FIELD("ppo.vf_coef", ppo.vf_coef),
      SPARSERL_REAL_FIELD("ppo.entropy_coef", ppo.entropy_coef),
      SPARSERL_REAL_FIELD("ppo.kl_coef", ppo.kl_coef),
      SPARSERL_ENUM_FIELD("ppo.kl_estimator", ppo.kl_estimator, parse_kl_estimator, "k1, k2, k3"),
      SPARSERL_BOOL_FIELD("ppo.whiten_advantages", ppo.whiten_advantages),
      SPARSERL_INT_FIELD("ppo.epochs", ppo.epochs),
      SPARSERL_INT_FIELD("ppo.minibatches", ppo.minibatches),
      SPARSERL_INT_FIELD("ppo.critic_warmup_updates", ppo.critic_warmup_updates),
      SPARSERL_REAL_FIELD("ppo.value_lr_scale", ppo.value_lr_scale),
      SPARSERL_BOOL_FIELD("ppo.value_trunk_gradients", ppo.value_trunk_gradients),
      SPARSERL_ENUM_FIELD("ppo.critic", ppo.critic, parse_ppo_critic, "shared, separate"),
      SPARSERL_REAL_FIELD("grpo.epsilon_low", grpo.epsilon_low),
      SPARSERL_REAL_FIELD("grpo.epsilon_high", grpo.epsilon_high),
      SPARSERL_REAL_FIELD("grpo.beta", grpo.beta),
      SPARSERL_BOOL_FIELD("grpo.scale_rewards", grpo.scale_rewards),
      SPARSERL_REAL_FIELD("grpo.std_eps", grpo.std_eps),
      SPARSERL_ENUM_FIELD("grpo.aggregation", grpo.aggregation, parse_loss_aggregation,
                          "token_mean, seq_mean_token_mean, seq_mean_token_sum"),
      SPARSERL_INT_FIELD("grpo.epochs", grpo.epochs),
      SPARSERL_INT_FIELD("grpo.minibatches", grpo.minibatches),
  };
  return table;
}

#undef SPARSERL_INT_FIELD
#undef SPARSERL_REAL_FIELD
#undef SPARSERL_BOOL_FIELD
#undef SPARSERL_ENUM_FIELD

std::optional<std::string> positive(std::string_view key, double value) {
  if (value > 0) return std::nullopt;
  return std::string(key) + " = " + fmt_double(value) + ": must be positive";
}

std::optional<std::string> in_range(std::string_view key, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return std::nullopt;
  return std::string(key) + " = " + fmt_double(value) + ": must be in [" + fmt_double(lo) + ", " +
         fmt_double(hi) + "]";
}

template <typename... Checks>
std::optional<std::string> first_error(Checks... checks) {
  std::optional<std::string> found;
  ((found = found ? found : checks), ...);
  return found;
}

}  // namespace

PolicyConfig PolicyConfig::preset(std::string_view name) {
  PolicyConfig c;
  if (name == "tiny") {
    c.layers = 2, c.heads = 2, c.d_model = 64, c.d_ff = 256;
  } else if (name == "small") {
    c.layers = 4, c.heads = 4, c.d_model = 256, c.d_ff = 1024;
  } else if (name == "medium") {
    c.layers = 8, c.heads = 8, c.d_model = 512, c.d_ff = 2048;
  } else {
    throw std::invalid_argument("policy preset '" + std::string(name) +
                                "': expected tiny, small or medium");
  }
  return c;
}

std::optional<std::string> PolicyConfig::validate() const {
  if (auto e = first_error(positive("policy.layers", layers), positive("policy.heads", heads),
                           positive("policy.d_model", d_model), positive("policy.d_ff", d_ff),
                           positive("policy.max_tokens", max_tokens),
                           positive("policy.nnz_samples", nnz_samples),
                           positive("policy.embedding_dim", embedding_dim),
                           in_range("policy.dropout", dropout, 0.0, 0.9),
                           in_range("policy.feature_dim", feature_dim, 0, 1e6),
                           in_range("policy.vocab_size", vocab_size, 0, 1e7))) {
    return e;
  }
  if (d_model % heads != 0) {
    return "policy.heads = " + std::to_string(heads) + ": d_model = " + std::to_string(d_model) +
           " must be a multiple of heads";
  }
  return std::nullopt;
}

std::optional<std::string> SamplingConfig::validate() const {
  return first_error(positive("sampling.temperature", temperature),
                     in_range("sampling.top_k", top_k, 0, 1e9),
                     in_range("sampling.top_p", top_p, 1e-9, 1.0));
}

double OptimizerConfig::lr_at(std::int64_t step) const {
  if (warmup_steps > 0 && step < warmup_steps) {
    return lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  }
  if (schedule == LrSchedule::constant || decay_steps <= 0) return lr;
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  if (schedule == LrSchedule::cosine) {
    return lr * (min_lr_ratio +
                 (1.0 - min_lr_ratio) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
  }
  return lr * (1.0 - (1.0 - min_lr_ratio) * progress);
}

std::optional<std::string> OptimizerConfig::validate() const {
  return first_error(
      positive("optimizer.lr", lr), in_range("optimizer.beta1", beta1, 0.0, 0.999999),
      in_range("optimizer.beta2", beta2, 0.0, 0.999999), positive("optimizer.eps", eps),
      in_range("optimizer.weight_decay", weight_decay, 0.0, 10.0),
      in_range("optimizer.warmup_steps", warmup_steps, 0, 1e12),
      in_range("optimizer.decay_steps", decay_steps, 0, 1e12),
      in_range("optimizer.min_lr_ratio", min_lr_ratio, 0.0, 1.0));
}

std::optional<std::string> ReinforceConfig::validate() const {
  return first_error(in_range("reinforce.kl_coef", kl_coef, 0.0, 1e6),
                     in_range("reinforce.minibatches", minibatches, 1, 1e6));
}

std::optional<std::string> PpoConfig::validate() const {
  return first_error(
      in_range("ppo.gamma", gamma, 0.0, 1.0), in_range("ppo.lambda", lambda, 0.0, 1.0),
      positive("ppo.clip_ratio", clip_ratio), in_range("ppo.vf_coef", vf_coef, 0.0, 1e6),
      in_range("ppo.entropy_coef", entropy_coef, -1e6, 1e6),
      in_range("ppo.kl_coef", kl_coef, 0.0, 1e6), in_range("ppo.epochs", epochs, 1, 1e6),
      in_range("ppo.minibatches", minibatches, 1, 1e6),
      in_range("ppo.critic_warmup_updates", critic_warmup_updates, 0, 1e9),
      positive("ppo.value_lr_scale", value_lr_scale));
}

std::optional<std::string> GrpoConfig::validate() const {
  return first_error(
      positive("grpo.epsilon_low", epsilon_low), positive("grpo.epsilon_high", epsilon_high),
      in_range("grpo.beta", beta, 0.0, 1e6), positive("grpo.std_eps", std_eps),
      in_range("grpo.epochs", epochs, 1, 1e6), in_range("grpo.minibatches", minibatches, 1, 1e6));
}

std::optional<std::string> AgentConfig::validate() const {
  if (auto e = first_error(policy.validate(), optimizer.validate(), sampling.validate(),
                           reinforce.validate(), ppo.validate(), grpo.validate())) {
    return e;
  }
  if (mask == env::MaskMode::syntax && policy.max_tokens < env::kMinSyntaxTokens) {
    return "policy.max_tokens = " + std::to_string(policy.max_tokens) +
           ": the syntax mask needs at least " + std::to_string(env::kMinSyntaxTokens);
  }
  if (device != "auto" && device != "cpu" && device.rfind("cuda", 0) != 0) {
    return "agent.device = '" + device + "': expected auto, cpu, cuda or cuda:N";
  }
  return std::nullopt;
}

std::string_view to_string(LrSchedule schedule) {
  switch (schedule) {
    case LrSchedule::constant:
      return "constant";
    case LrSchedule::cosine:
      return "cosine";
    case LrSchedule::linear:
      return "linear";
  }
  return "constant";
}

std::optional<LrSchedule> parse_lr_schedule(std::string_view text) {
  for (auto s : {LrSchedule::constant, LrSchedule::cosine, LrSchedule::linear}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

std::string_view to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::sft:
      return "sft";
    case Algorithm::reinforce:
      return "reinforce";
    case Algorithm::ppo:
      return "ppo";
    case Algorithm::grpo:
      return "grpo";
  }
  return "sft";
}

std::optional<Algorithm> parse_algorithm(std::string_view text) {
  for (auto a : {Algorithm::sft, Algorithm::reinforce, Algorithm::ppo, Algorithm::grpo}) {
    if (to_string(a) == text) return a;
  }
  return std::nullopt;
}

std::string_view to_string(KlEstimator estimator) {
  switch (estimator) {
    case KlEstimator::k1:
      return "k1";
    case KlEstimator::k2:
      return "k2";
    case KlEstimator::k3:
      return "k3";
  }
  return "k1";
}

std::optional<KlEstimator> parse_kl_estimator(std::string_view text) {
  for (auto k : {KlEstimator::k1, KlEstimator::k2, KlEstimator::k3}) {
    if (to_string(k) == text) return k;
  }
  return std::nullopt;
}

std::string_view to_string(PpoCritic critic) {
  return critic == PpoCritic::separate ? "separate" : "shared";
}

std::optional<PpoCritic> parse_ppo_critic(std::string_view text) {
  for (auto c : {PpoCritic::shared, PpoCritic::separate}) {
    if (to_string(c) == text) return c;
  }
  return std::nullopt;
}

std::string_view to_string(LossAggregation aggregation) {
  switch (aggregation) {
    case LossAggregation::token_mean:
      return "token_mean";
    case LossAggregation::seq_mean_token_mean:
      return "seq_mean_token_mean";
    case LossAggregation::seq_mean_token_sum:
      return "seq_mean_token_sum";
  }
  return "token_mean";
}

std::optional<LossAggregation> parse_loss_aggregation(std::string_view text) {
  for (auto a : {LossAggregation::token_mean, LossAggregation::seq_mean_token_mean,
                 LossAggregation::seq_mean_token_sum}) {
    if (to_string(a) == text) return a;
  }
  return std::nullopt;
}

std::map<std::string, std::string> to_key_values(const AgentConfig& config) {
  std::map<std::string, std::string> out;
  for (const Field& f : fields()) out[f.key] = f.get(config);
  return out;
}

void apply_key_value(AgentConfig& config, std::string_view key, std::string_view value) {
  for (const Field& f : fields()) {
    if (f.key == key) {
      f.set(config, value);
      return;
    }
  }
  throw std::invalid_argument("agent config: unknown key '" + std::string(key) + "'");
}

}  // namespace sparserl::agents
