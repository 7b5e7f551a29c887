// The knobs of the learned agents, as plain structs without LibTorch: the policy's shape, how it
// samples, its optimiser, and one struct per learning algorithm with the defaults of the method
// (SparseRL) or of TRL / verl where the method is silent. Each field is declared once as a knob
// (datasets/knobs.hpp: key, default, range, help) - the policy's, the sampler's and the optimiser's
// in config.cpp, each algorithm's in the algorithm's own file (algorithm.hpp) - and those
// declarations give the experiment config its agent sections, validate the structs (errors name the
// key) and write and read a checkpoint's "key = value" lines (to_key_values / apply_key_value), so
// a resumed run uses the same values.
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "sparserl/datasets/knobs.hpp"
#include "sparserl/env/action_mask.hpp"

namespace sparserl::agents {

// What the policy reads of the matrix (issue 26's ablations of the observation):
//   full      the K sampled nonzeros' sinusoidal embedding and the feature vector (the method)
//   features  the feature vector alone: the nonzero slots are masked out as keys
//   none      nothing: every prefix slot masked, as in pretraining - one program for every matrix
// The prefix keeps its slots either way, so the shapes (and checkpoints' tensors) are the same.
enum class MatrixInput { full, features, none };
std::string_view to_string(MatrixInput input);

// A decoder-only, pre-norm transformer. The sequence it reads:
//   [K matrix slots][1 feature slot][<bos>][code tokens ...]
// where the K slots hold the observation's sinusoidal nonzero embeddings [K x D] projected to
// d_model, the feature slot the projected feature vector, then the program's tokens. Positions are
// learned.
struct PolicyConfig {
  int layers = 2;
  int heads = 2;
  int d_model = 64;
  int d_ff = 256;
  int max_tokens = 1024;   // code tokens after <bos> (the env's max_tokens)
  int nnz_samples = 128;   // K: the observation's sampled nonzeros
  int embedding_dim = 64;  // D: the width of the observation's embedding
  int feature_dim = 0;     // F: 0 = env::feature_names().size()
  int vocab_size = 0;      // 0 = the vocabulary's size
  double dropout = 0.0;
  bool tie_embeddings = true;  // the output layer shares the token embedding (GPT-2, nanoGPT)
  MatrixInput matrix_input = MatrixInput::full;

  // Named presets: "tiny" (CI, ~0.3M parameters), "small" (~4M), "medium" (~28M).
  static PolicyConfig preset(std::string_view name);

  [[nodiscard]] int prefix_length() const { return nnz_samples + 1; }  // K + feature
  [[nodiscard]] int max_sequence_length() const { return prefix_length() + 1 + max_tokens; }
  // nullopt when valid, else "policy.heads = 3: d_model = 64 must be a multiple of heads".
  [[nodiscard]] std::optional<std::string> validate() const;
};

// Which network the agent runs: the transformer above, trained from scratch ("small"), or a decoder
// of the Llama / Qwen2 family loaded from a Hugging Face folder ("hf": torch/causal_lm.hpp) - the
// matrix observation entering as a soft prompt (trained projections of the nonzeros' embedding and
// the features, before the text prompt) or written out as text - fine-tuned in full or with LoRA.
// The hf fields apply to kind = hf only.
enum class ModelKind { small, hf };
std::string_view to_string(ModelKind kind);
enum class PromptForm { soft, text };
std::string_view to_string(PromptForm form);

// The projections of a decoder layer LoRA may adapt, by their Hugging Face names.
const std::vector<std::string>& lora_target_names();

struct ModelConfig {
  ModelKind kind = ModelKind::small;
  std::string path;            // the model folder (config.json, safetensors, tokenizer.json)
  std::string dtype = "auto";  // compute dtype: auto (config.json's, bfloat16 unless float32)
  int lora_rank = 0;           // 0: full fine-tuning
  double lora_alpha = 16.0;    // the adapter's output is scaled by alpha / rank (PEFT)
  double lora_dropout = 0.0;
  std::vector<std::string> lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
  bool gradient_checkpointing = false;
  PromptForm prompt = PromptForm::soft;
  // nullopt when valid, else "model.path: kind = hf needs the model folder".
  [[nodiscard]] std::optional<std::string> validate() const;
};

// How a token is drawn from the policy's logits. The action mask always applies first (forbidden
// tokens get -inf), then temperature, top-k and top-p. Log-probabilities reported for learning are
// those of the masked, temperature-scaled distribution without top-k / top-p (as TRL and verl do):
// keep top_k = 0 and top_p = 1 for RL.
struct SamplingConfig {
  double temperature = 1.0;
  int top_k = 0;        // 0: off
  double top_p = 1.0;   // 1: off
  bool greedy = false;  // argmax of the masked logits (temperature, top-k, top-p ignored)
  // On a CUDA device (and a LibTorch built with CUDA), generate()'s decode steps replay CUDA
  // graphs (torch/decode_graphs.hpp) instead of issuing each kernel; false issues them one by one.
  // The draws are those of the same distribution either way (the logits agree to rounding).
  bool decode_graphs = true;
  // generate() enqueues each decode step (its input is the draw, already on the device) before it
  // reads the step's draws back, and fills the next step's masks while the device decodes; the
  // masks go up and the draws come back through page-locked buffers without blocking on CUDA. The
  // same operations on the device in the same order: the same draws. false reads each step's draws
  // back before its decode step (the order before); so does a generation with a timing lane
  // (PolicyAgent::set_timing_lane), which lets the GPU go while the masks are filled. On by default
  // since its CUDA path ran on a GPU host (H200, 2026-11-28: the same tokens digest as read back
  // first; small preset 81-88k against 47-54k tokens/s, docs/agents.md).
  bool overlap_steps = true;
  // On a CUDA device, the overlapped steps replay each step's draws (the masked sampling, the
  // log-probability, the read-back's stack, the next step's inputs) from one CUDA graph instead of
  // issuing their dozen kernels one by one (torch/decode_graphs.hpp, DrawGraph): the same kernels,
  // the same draws. false issues them one by one.
  bool draw_graphs = true;
  [[nodiscard]] std::optional<std::string> validate() const;
};

enum class LrSchedule { constant, cosine, linear };
std::string_view to_string(LrSchedule schedule);

// AdamW with warm-up and decay; biases, norms and embeddings are not weight-decayed.
struct OptimizerConfig {
  double lr = 3e-4;
  double beta1 = 0.9, beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;  // <= 0: no clipping
  int warmup_steps = 0;
  LrSchedule schedule = LrSchedule::constant;
  int decay_steps = 0;  // cosine / linear: steps to reach min_lr_ratio * lr (after warm-up)
  double min_lr_ratio = 0.1;
  [[nodiscard]] double lr_at(std::int64_t step) const;  // step counts from 0
  [[nodiscard]] std::optional<std::string> validate() const;
};

// KL estimators of KL(pi || pi_ref) from a sample of pi, per token, with d = log pi - log pi_ref
// (Schulman, "Approximating KL divergence"):
//   k1 = d                       unbiased, high variance, can be negative
//   k2 = d^2 / 2                 biased, low variance
//   k3 = exp(-d) - 1 + d         unbiased, low variance, >= 0 (verl's low_var_kl, clamped to <= 10)
enum class KlEstimator { k1, k2, k3 };
std::string_view to_string(KlEstimator estimator);

// REINFORCE with the leave-one-out baseline (RLOO, Ahmadian et al. 2024; TRL's RLOOTrainer): for G
// samples of one task, A_i = R_i - mean_{j != i} R_j, where R = reward - kl_coef * sum_t KL_t.
// Loss = -mean_i(A_i * sum_t log pi(a_it)) (divided by the length when normalize_by_length).
struct ReinforceConfig {
  double kl_coef = 0.05;  // TRL RLOOConfig.kl_coef
  KlEstimator kl_estimator = KlEstimator::k1;
  bool normalize_advantages = false;  // whiten A over the batch
  bool normalize_by_length = false;
  int minibatches = 1;  // gradient accumulation; one optimiser step per update
};

// Where PPO's value estimates come from:
//   shared    a value head on the policy's own trunk (TRL's PPOTrainer of 2023, one network)
//   separate  a critic network of its own: a copy of the policy (trunk and value head) made when
//             RL starts - so actor and critic both start from the SFT model, as the method has
//             it - trained by the value loss alone with its own AdamW (verl's critic worker)
enum class PpoCritic { shared, separate };
std::string_view to_string(PpoCritic critic);

// PPO for language models (Ziegler et al. 2019; TRL PPOTrainer, verl): a value head on the shared
// trunk or a separate critic, per-token reward r_t = -kl_coef * KL_t (+ the episode reward at the
// last token), GAE, whitened advantages, clipped ratio and clipped value loss, several epochs over
// minibatches.
struct PpoConfig {
  double gamma = 1.0, lambda = 0.95;
  double clip_ratio = 0.2;  // epsilon of the ratio
  double value_clip = 0.2;  // epsilon of the value (TRL cliprange_value); <= 0: no clipping
  double vf_coef = 0.1;     // TRL PPOConfig.vf_coef
  double entropy_coef = 0.0;
  double kl_coef = 0.05;                       // TRL PPOConfig.kl_coef
  KlEstimator kl_estimator = KlEstimator::k1;  // TRL: "k1" or "k3"
  bool whiten_advantages = true;
  int epochs = 4;       // TRL num_ppo_epochs
  int minibatches = 4;  // TRL num_mini_batches
  // The first N updates train the value head alone (trunk and policy frozen, no policy loss):
  // the critic starts from zeros, and its errors as advantages, whitened over the batch, move
  // a near-deterministic SFT policy to garbage within one update (seen on the GPU: compile rate
  // 100% -> 0% after the first update). CUDA Agent needed a warm-up stage for the same reason.
  int critic_warmup_updates = 0;
  // The value head's learning rate as a multiple of optimizer.lr (its own AdamW group when not 1):
  // at an LLM-sized policy lr (TRL: 3e-6) a critic from zeros would take hundreds of updates to
  // reach the returns; a separate critic lr is the usual remedy (the head is one linear layer).
  double value_lr_scale = 1.0;
  // Whether the value loss trains the shared trunk too (TRL's value head) or the value head alone
  // (false: the head reads the trunk's features but its loss moves only the head - the nearest a
  // shared-trunk policy gets to verl's separate critic, and the policy's update is then the same
  // as with vf_coef = 0).
  bool value_trunk_gradients = true;
  // A separate critic (see PpoCritic) takes the value loss itself - vf_coef and
  // value_trunk_gradients are the shared trunk's knobs and do not apply - and steps at lr x
  // value_lr_scale with its own gradient clipping; critic_warmup_updates trains it alone.
  PpoCritic critic = PpoCritic::shared;
};

// How a per-token loss becomes one number (verl's loss_agg_mode):
//   token_mean            sum over every token of the batch / number of tokens (DAPO, verl default)
//   seq_mean_token_mean   mean over sequences of each sequence's token mean (the GRPO paper)
//   seq_mean_token_sum    mean over sequences of each sequence's token sum (Dr. GRPO-like)
enum class LossAggregation { token_mean, seq_mean_token_mean, seq_mean_token_sum };
std::string_view to_string(LossAggregation aggregation);

// GRPO (Shao et al. 2024; TRL GRPOTrainer, verl): G samples per task, A = (R - mean_g) / (std_g +
// eps) (or R - mean_g without scaling), the clipped ratio with epsilon low / high (DAPO's
// clip-higher when they differ), beta * k3 KL to the reference in the loss.
struct GrpoConfig {
  double epsilon_low = 0.2, epsilon_high = 0.2;
  double beta = 0.04;         // the KL weight (TRL's long-time default; 0 drops the reference)
  bool scale_rewards = true;  // divide by the group's standard deviation (unbiased, as torch.std)
  double std_eps = 1e-4;      // TRL adds 1e-4
  LossAggregation aggregation = LossAggregation::token_mean;
  int epochs = 1;  // TRL num_iterations
  int minibatches = 1;
  // DAPO's dynamic sampling as a filter (verl's algorithm.filter_groups): groups whose rewards are
  // all equal - advantage 0 for every member - are left out of the update. Nothing is sampled again
  // to refill the batch, so every algorithm spends the same number of sampled programs.
  bool dynamic_sampling = false;
};

// The knobs of every learning algorithm, each as the algorithm's own struct (PpoConfig for ppo, a
// test's struct for a test's algorithm): a value that copies with the AgentConfig, so that adding
// an algorithm adds no field here. A struct never set reads as its defaults.
class AlgorithmSettings {
 public:
  template <typename Settings>
  Settings& get() {
    auto [found, fresh] = values_.try_emplace(std::type_index(typeid(Settings)));
    if (fresh) found->second = Settings{};
    return std::any_cast<Settings&>(found->second);
  }
  template <typename Settings>
  const Settings& get() const {
    static const Settings defaults{};
    const auto found = values_.find(std::type_index(typeid(Settings)));
    return found == values_.end() ? defaults : std::any_cast<const Settings&>(found->second);
  }

 private:
  std::map<std::type_index, std::any> values_;
};

// Everything one PolicyAgent is built from (and what its checkpoints record).
struct AgentConfig {
  PolicyConfig policy;
  ModelConfig model;
  OptimizerConfig optimizer;
  SamplingConfig sampling;                     // act() and generate() unless told otherwise
  env::MaskMode mask = env::MaskMode::syntax;  // the env's mask (replayed for update(episodes))
  std::string algorithm = "sft";  // what update() runs: a registered algorithm (algorithm.hpp)
  AlgorithmSettings settings;     // every algorithm's knobs: settings.get<PpoConfig>().epochs
  std::string device = "auto";    // "auto" (CUDA when available), "cpu", "cuda", "cuda:1"
  std::uint64_t seed = 0;
  // The first knob out of its range ("ppo.epochs: value 0 is outside [1, 1000000]"), an unknown
  // algorithm, or a shape that does not fit; nullopt when the config is valid.
  [[nodiscard]] std::optional<std::string> validate() const;
};

// The knobs of the parts, paths relative to the part ("dropout", "lr", "temperature").
const datasets::Knobs<PolicyConfig>& policy_knobs();
const datasets::Knobs<SamplingConfig>& sampling_knobs();
const datasets::Knobs<OptimizerConfig>& optimizer_knobs();
const datasets::Knobs<ModelConfig>& model_knobs();
// Every knob of an AgentConfig, by the path checkpoint.txt writes it under: "policy.dropout",
// "model.lora_rank",
// "optimizer.lr", "sampling.top_k", "agent.algorithm", "agent.device", ... and each registered
// algorithm's under its name ("grpo.epsilon_high").
datasets::Knobs<AgentConfig> agent_knobs();

// "section.key" -> value text, in a stable order, for checkpoints and run logs.
std::map<std::string, std::string> to_key_values(const AgentConfig& config);
// Sets one key from its text; std::invalid_argument naming the key and the value otherwise.
void apply_key_value(AgentConfig& config, std::string_view key, std::string_view value);

}  // namespace sparserl::agents
