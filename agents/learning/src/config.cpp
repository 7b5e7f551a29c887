// The agents' configuration: presets of the policy's size, the knobs of the policy, the sampler and
// the optimiser (each declared once: key, range, help; the default is the struct's), the knob table
// of a whole AgentConfig - those, the agent's own and every registered algorithm's - that
// validation, checkpoints and the experiment config all walk, the learning-rate schedule and the
// names of the enums. No LibTorch here.
#include "sparserl/agents/config.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparserl/agents/algorithm.hpp"
#include "sparserl/datasets/enum_names.hpp"

namespace sparserl::agents {

namespace {

using datasets::Knobs;
using datasets::KnobValue;

// "PREFIX.PATH: why" for the knob check of a part that is validated on its own.
std::optional<std::string> under(const std::string& prefix, std::optional<std::string> problem) {
  if (!problem) return problem;
  return prefix + "." + *problem;
}

std::optional<std::string> device_name(const KnobValue& value) {
  const auto& device = std::get<std::string>(value);
  if (device == "auto" || device == "cpu" || device.rfind("cuda", 0) == 0) return std::nullopt;
  return "'" + device + "': expected auto, cpu, cuda or cuda:N";
}

}  // namespace

const Knobs<PolicyConfig>& policy_knobs() {
  static const Knobs<PolicyConfig> knobs =
      Knobs<PolicyConfig>()
          .integer("layers", &PolicyConfig::layers, "transformer blocks", 1)
          .integer("heads", &PolicyConfig::heads, "attention heads; d_model must be a multiple", 1)
          .integer("d_model", &PolicyConfig::d_model, "model width", 1)
          .integer("d_ff", &PolicyConfig::d_ff, "feed-forward width", 1)
          .integer("max_tokens", &PolicyConfig::max_tokens,
                   "code tokens after <bos> (the env's max_tokens)", 1)
          .integer("nnz_samples", &PolicyConfig::nnz_samples,
                   "K: the observation's sampled nonzeros", 1)
          .integer("embedding_dim", &PolicyConfig::embedding_dim,
                   "D: the width of the observation's embedding", 1)
          .integer("feature_dim", &PolicyConfig::feature_dim,
                   "F: features of the observation (0: the env's feature count)", 0, 1e6)
          .integer("vocab_size", &PolicyConfig::vocab_size,
                   "tokens of the vocabulary (0: the vocabulary's size)", 0, 1e7)
          .real("dropout", &PolicyConfig::dropout,
                "dropout in training (0 keeps resumed CPU runs exact)", 0, 0.9)
          .boolean("tie_embeddings", &PolicyConfig::tie_embeddings,
                   "the output layer shares the token embedding")
          .choice("matrix_input", &PolicyConfig::matrix_input,
                  "what the policy reads of the matrix: full (the sampled nonzeros' sinusoidal "
                  "embedding and the features), features (the features alone), none (no matrix: "
                  "one program for every matrix); the ablations of docs/study.md",
                  {MatrixInput::full, MatrixInput::features, MatrixInput::none});
  return knobs;
}

const Knobs<SamplingConfig>& sampling_knobs() {
  static const Knobs<SamplingConfig> knobs =
      Knobs<SamplingConfig>()
          .real("temperature", &SamplingConfig::temperature, "softmax temperature", 1e-6, 100)
          .integer("top_k", &SamplingConfig::top_k, "keep the k most likely tokens (0: off)", 0,
                   1e9)
          .real("top_p", &SamplingConfig::top_p, "nucleus sampling mass (1: off)", 1e-9, 1)
          .boolean("greedy", &SamplingConfig::greedy,
                   "argmax of the masked logits (temperature, top_k and top_p do not apply)")
          .boolean("decode_graphs", &SamplingConfig::decode_graphs,
                   "on a CUDA device, generation replays each decode step from a CUDA graph "
                   "instead of issuing its kernels one by one (false: one by one)")
          .boolean("overlap_steps", &SamplingConfig::overlap_steps,
                   "generation enqueues each decode step before reading the step's draws back "
                   "and fills the next masks while the device decodes (the same draws; false: "
                   "reads back first)")
          .boolean("draw_graphs", &SamplingConfig::draw_graphs,
                   "on a CUDA device, the overlapped steps replay each step's draws (masked "
                   "sampling, log-probability, the next step's inputs) from one CUDA graph "
                   "instead of issuing their kernels one by one (the same draws; false: one by "
                   "one)");
  return knobs;
}

const Knobs<OptimizerConfig>& optimizer_knobs() {
  static const Knobs<OptimizerConfig> knobs =
      Knobs<OptimizerConfig>()
          .real("lr", &OptimizerConfig::lr, "peak learning rate", 1e-12, 10)
          .real("beta1", &OptimizerConfig::beta1, "first moment decay", 0, 0.999999)
          .real("beta2", &OptimizerConfig::beta2, "second moment decay", 0, 0.999999)
          .real("eps", &OptimizerConfig::eps, "denominator epsilon", 1e-30, 1)
          .real("weight_decay", &OptimizerConfig::weight_decay, "decoupled weight decay", 0, 10)
          .real("max_grad_norm", &OptimizerConfig::max_grad_norm,
                "gradient clipping by global norm (0: none)", 0, 1e9)
          .integer("warmup_steps", &OptimizerConfig::warmup_steps, "linear warm-up steps", 0, 1e12)
          .choice("schedule", &OptimizerConfig::schedule, "learning-rate schedule after warm-up",
                  {LrSchedule::constant, LrSchedule::cosine, LrSchedule::linear})
          .integer("decay_steps", &OptimizerConfig::decay_steps,
                   "cosine / linear: steps to reach min_lr_ratio * lr", 0, 1e12)
          .real("min_lr_ratio", &OptimizerConfig::min_lr_ratio,
                "cosine / linear decay ends at this fraction of lr", 0, 1);
  return knobs;
}

const std::vector<std::string>& lora_target_names() {
  static const std::vector<std::string> names = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                 "gate_proj", "up_proj", "down_proj"};
  return names;
}

const Knobs<ModelConfig>& model_knobs() {
  static const Knobs<ModelConfig> knobs =
      Knobs<ModelConfig>()
          .choice("kind", &ModelConfig::kind,
                  "the network: small (the transformer of [policy], from scratch) or hf (a Llama / "
                  "Qwen2 decoder from a Hugging Face folder)",
                  {ModelKind::small, ModelKind::hf})
          .string("path", &ModelConfig::path,
                  "hf: the model folder (config.json, model.safetensors or shards, tokenizer.json)")
          .string("dtype", &ModelConfig::dtype,
                  "hf: compute dtype; trainable weights keep fp32 master copies (auto: bfloat16 "
                  "unless config.json's dtype is float32)",
                  {"auto", "float32", "bfloat16"})
          .integer("lora_rank", &ModelConfig::lora_rank, "hf: LoRA rank (0: full fine-tuning)", 0,
                   4096)
          .real("lora_alpha", &ModelConfig::lora_alpha, "hf: LoRA's output scale is alpha / rank",
                1e-6, 1e6)
          .real("lora_dropout", &ModelConfig::lora_dropout, "hf: dropout on LoRA's input", 0, 0.9)
          .string_list("lora_targets", &ModelConfig::lora_targets,
                       "hf: the projections LoRA adapts, in every decoder layer",
                       lora_target_names())
          .boolean("gradient_checkpointing", &ModelConfig::gradient_checkpointing,
                   "hf: keep each decoder layer's input only and recompute the layer in the "
                   "backward pass")
          .choice("prompt", &ModelConfig::prompt,
                  "hf: the matrix as a soft prompt (trained projections of the nonzeros' embedding "
                  "and the features) or as text (nonzero indices written out)",
                  {PromptForm::soft, PromptForm::text});
  return knobs;
}

Knobs<AgentConfig> agent_knobs() {
  Knobs<AgentConfig> knobs;
  knobs.nest("policy", &AgentConfig::policy, policy_knobs())
      .nest("model", &AgentConfig::model, model_knobs())
      .nest("optimizer", &AgentConfig::optimizer, optimizer_knobs())
      .nest("sampling", &AgentConfig::sampling, sampling_knobs())
      .choice("agent.mask", &AgentConfig::mask,
              "the env's action mask, replayed to score episodes (update(episodes))",
              {env::MaskMode::none, env::MaskMode::syntax})
      .string("agent.algorithm", &AgentConfig::algorithm, "the algorithm update() runs",
              AlgorithmRegistry::names())
      .string("agent.device", &AgentConfig::device,
              "where the policy runs: auto (CUDA when LibTorch sees it), cpu, cuda, cuda:N")
      .validate(device_name)
      .integer("agent.seed", &AgentConfig::seed, "weights, sampling and data order");
  for (const std::string& name : AlgorithmRegistry::names()) {
    knobs.nest(
        name, [](auto& config) -> auto& { return config; }, AlgorithmRegistry::find(name)->knobs());
  }
  return knobs;
}

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
  if (auto problem = under("policy", policy_knobs().check(*this))) return problem;
  if (d_model % heads != 0) {
    return "policy.heads = " + std::to_string(heads) + ": d_model = " + std::to_string(d_model) +
           " must be a multiple of heads";
  }
  return std::nullopt;
}

std::optional<std::string> ModelConfig::validate() const {
  if (auto problem = under("model", model_knobs().check(*this))) return problem;
  if (kind == ModelKind::hf && path.empty()) return "model.path: kind = hf needs the model folder";
  if (kind == ModelKind::hf && lora_rank > 0 && lora_targets.empty()) {
    return "model.lora_targets: lora_rank = " + std::to_string(lora_rank) +
           " needs at least one projection";
  }
  return std::nullopt;
}

std::optional<std::string> SamplingConfig::validate() const {
  return under("sampling", sampling_knobs().check(*this));
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
  return under("optimizer", optimizer_knobs().check(*this));
}

std::optional<std::string> AgentConfig::validate() const {
  if (auto problem = policy.validate()) return problem;
  if (auto problem = model.validate()) return problem;
  if (auto problem = agent_knobs().check(*this)) return problem;
  if (mask == env::MaskMode::syntax && policy.max_tokens < env::kMinSyntaxTokens) {
    return "policy.max_tokens = " + std::to_string(policy.max_tokens) +
           ": the syntax mask needs at least " + std::to_string(env::kMinSyntaxTokens);
  }
  return std::nullopt;
}

std::string_view to_string(LrSchedule schedule) {
  static constexpr auto kNames = datasets::enum_names<LrSchedule::constant, LrSchedule::linear>(
      {"constant", "cosine", "linear"});
  return kNames.name(schedule);
}

std::string_view to_string(ModelKind kind) {
  static constexpr auto kNames =
      datasets::enum_names<ModelKind::small, ModelKind::hf>({"small", "hf"});
  return kNames.name(kind);
}

std::string_view to_string(MatrixInput input) {
  static constexpr auto kNames =
      datasets::enum_names<MatrixInput::full, MatrixInput::none>({"full", "features", "none"});
  return kNames.name(input);
}

std::string_view to_string(PromptForm form) {
  static constexpr auto kNames =
      datasets::enum_names<PromptForm::soft, PromptForm::text>({"soft", "text"});
  return kNames.name(form);
}

std::string_view to_string(KlEstimator estimator) {
  static constexpr auto kNames =
      datasets::enum_names<KlEstimator::k1, KlEstimator::k3>({"k1", "k2", "k3"});
  return kNames.name(estimator);
}

std::string_view to_string(PpoCritic critic) {
  static constexpr auto kNames =
      datasets::enum_names<PpoCritic::shared, PpoCritic::separate>({"shared", "separate"});
  return kNames.name(critic);
}

std::string_view to_string(LossAggregation aggregation) {
  static constexpr auto kNames =
      datasets::enum_names<LossAggregation::token_mean, LossAggregation::seq_mean_token_sum>(
          {"token_mean", "seq_mean_token_mean", "seq_mean_token_sum"});
  return kNames.name(aggregation);
}

std::map<std::string, std::string> to_key_values(const AgentConfig& config) {
  return agent_knobs().to_text(config);
}

void apply_key_value(AgentConfig& config, std::string_view key, std::string_view value) {
  const Knobs<AgentConfig> knobs = agent_knobs();
  if (knobs.find(key) == nullptr) {
    throw std::invalid_argument("agent config: unknown key '" + std::string(key) + "'");
  }
  try {
    knobs.set_text(config, key, value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("agent config ") + e.what());
  }
}

}  // namespace sparserl::agents
