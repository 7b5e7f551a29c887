// PolicyAgent: act() with a per-row key-value cache, batched generation under the action mask, and
// update() handed to the configured algorithm (the registry's, algorithm.hpp) with the statistics
// every RL update reports added. The Learner it wraps is in learner.cpp, the shared math in
// learning_math.cpp, checkpoints in checkpoint.cpp, and the algorithms in pretrain.cpp, sft.cpp,
// reinforce.cpp, ppo.cpp and grpo.cpp.
#include "sparserl/agents/policy_agent.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sparserl/agents/algorithm.hpp"
#include "sparserl/agents/row_pool.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/agents/torch/decode_graphs.hpp"
#include "sparserl/agents/torch/learner.hpp"
#include "sparserl/agents/training.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/reward/timing_lane.hpp"

namespace sparserl::agents {

namespace {

constexpr std::size_t kObservedCapacity = 65536;

torch::Tensor uniforms(CounterRng& rng, std::int64_t n) {
  std::vector<double> u(static_cast<std::size_t>(n));
  for (double& x : u) x = rng.uniform_open();
  return torch::tensor(u, torch::kDouble);
}

void fnv1a(const torch::Tensor& flat_bytes, std::uint64_t& hash) {
  const auto* data = flat_bytes.data_ptr<std::uint8_t>();
  for (std::int64_t i = 0; i < flat_bytes.numel(); ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ULL;
  }
}

// Runs the rows that start over - <bos> and the episode's tokens so far - into act()'s cache, and
// puts their logits and values into rows `restart` of `logits` and `values` (created when no row
// advanced).
void prefill_rows(Learner& l, std::span<const env::Observation> observations,
                  const std::vector<std::int64_t>& restart, torch::Tensor& logits,
                  torch::Tensor& values) {
  const auto batch = static_cast<std::int64_t>(observations.size());
  const auto vocab = static_cast<std::int64_t>(l.vocabulary->size());
  std::vector<const env::MatrixObservation*> matrices;
  std::vector<const std::vector<env::TokenId>*> sequences;
  for (auto b : restart) {
    matrices.push_back(observations[static_cast<std::size_t>(b)].matrix.get());
    sequences.push_back(&observations[static_cast<std::size_t>(b)].tokens);
  }
  // sequence_batch's inputs are <bos> + tokens[:-1]; the cache must see every token, so feed
  // <bos> + tokens: collate tokens plus one dummy and use the inputs.
  std::vector<std::vector<env::TokenId>> extended;
  for (const auto* s : sequences) {
    extended.push_back(*s);
    extended.back().push_back(l.vocabulary->pad());
  }
  std::vector<const std::vector<env::TokenId>*> pointers;
  for (const auto& s : extended) pointers.push_back(&s);
  const SequenceBatch seq = l.sequence_batch(matrices, pointers, {});
  KvCache fresh;
  const PolicyOutput out = l.policy->prefill(seq.prefix, seq.inputs, seq.valid, fresh);
  const torch::Tensor rows = torch::tensor(restart, torch::kLong).to(l.device);
  if (l.act_cache.empty() && static_cast<std::int64_t>(restart.size()) == batch) {
    l.act_cache = std::move(fresh);
    logits = out.logits;
    values = out.values;
  } else {
    if (l.act_cache.empty()) l.act_cache = l.policy->empty_cache(batch, fresh.capacity(), l.device);
    if (!logits.defined()) {
      logits = torch::zeros({batch, vocab}, out.logits.options());
      values = torch::zeros({batch}, out.values.options());
    }
    l.act_cache.assign_rows(rows, fresh);
    logits.index_copy_(0, rows, out.logits);
    values.index_copy_(0, rows, out.values);
  }
}

}  // namespace

// ---- PolicyAgent --------------------------------------------------------------------------------

PolicyAgent::PolicyAgent(AgentConfig config, std::shared_ptr<const env::Vocabulary> vocabulary)
    : learner_(std::make_unique<Learner>(std::move(config), std::move(vocabulary))) {}

PolicyAgent::PolicyAgent(std::unique_ptr<Learner> learner) : learner_(std::move(learner)) {}

PolicyAgent::~PolicyAgent() = default;

std::string PolicyAgent::name() const { return learner_->config.algorithm; }

std::string PolicyAgent::policy_id() const {
  return name() + ":step=" + std::to_string(learner_->counters.optimizer_steps);
}

const AgentConfig& PolicyAgent::config() const { return learner_->config; }
const env::Vocabulary& PolicyAgent::vocabulary() const { return *learner_->vocabulary; }
const std::shared_ptr<const env::Vocabulary>& PolicyAgent::vocabulary_ptr() const {
  return learner_->vocabulary;
}
const TokenSpace& PolicyAgent::tokens() const { return *learner_->tokens; }
const std::shared_ptr<const TokenSpace>& PolicyAgent::tokens_ptr() const {
  return learner_->tokens;
}
const AgentCounters& PolicyAgent::counters() const { return learner_->counters; }
const GenerationProfile& PolicyAgent::last_generation() const { return learner_->last_generation; }

void PolicyAgent::export_model(const std::filesystem::path& folder,
                               std::uint64_t max_shard_bytes) const {
  const auto* model = dynamic_cast<const CausalLmPolicyImpl*>(learner_->policy.get());
  if (model == nullptr) {
    throw std::logic_error("export_model: model.kind = small has no Hugging Face form");
  }
  save_causal_lm(*model, folder, max_shard_bytes, learner_->config.model.path);
}
std::int64_t PolicyAgent::parameter_count() const { return learner_->policy->parameter_count(); }
void PolicyAgent::set_timing_lane(std::shared_ptr<reward::TimingLaneLock> lane) {
  timing_lane_ = std::move(lane);
}

void PolicyAgent::set_old_log_probs_recorded(bool recorded) {
  learner_->old_log_probs_recorded = recorded;
}

std::string PolicyAgent::device() const { return learner_->device.str(); }
bool PolicyAgent::has_reference() const { return !learner_->reference.is_empty(); }

void PolicyAgent::set_reference_to_current() {
  learner_->reference = PolicyNetwork(learner_->policy->frozen_copy());
}

void PolicyAgent::set_algorithm(const std::string& algorithm) {
  learner_->algorithm = AlgorithmRegistry::make(algorithm);
  learner_->config.algorithm = algorithm;
}

void PolicyAgent::set_optimizer(const OptimizerConfig& optimizer) {
  if (auto error = optimizer.validate()) throw std::invalid_argument(*error);
  learner_->config.optimizer = optimizer;
  learner_->make_optimizer();
}

void PolicyAgent::join(std::shared_ptr<ProcessGroup> group) {
  learner_->ranks = group && group->size() > 1 ? std::move(group) : nullptr;
  learner_->broadcast_weights();
}

const std::shared_ptr<ProcessGroup>& PolicyAgent::process_group() const { return learner_->ranks; }

bool PolicyAgent::main_rank() const { return !learner_->ranks || learner_->ranks->main(); }

std::string PolicyAgent::weights_digest() const {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const auto& item : learner_->policy->named_parameters()) {
    fnv1a(item.value().detach().to(torch::kCPU).contiguous().view(torch::kUInt8).flatten(), hash);
  }
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

env::ActionBatch PolicyAgent::act(std::span<const env::Observation> observations) {
  Learner& l = *learner_;
  if (l.config.model.kind != ModelKind::small) {
    // The env's step() path and its observations' masks are the closed vocabulary's.
    throw std::logic_error(
        "act: model.kind = hf acts through generate() (the RL stage, the evaluation); "
        "SparseCudaEnv's step() and its action masks are the closed vocabulary's");
  }
  torch::NoGradGuard no_grad;
  l.policy->eval();
  const auto batch = static_cast<std::int64_t>(observations.size());
  env::ActionBatch actions;
  if (batch == 0) return actions;
  const auto vocab = static_cast<std::int64_t>(l.vocabulary->size());
  if (static_cast<std::int64_t>(l.act_rows.size()) != batch || l.act_cache.batch() != batch) {
    l.act_rows.assign(static_cast<std::size_t>(batch), ActRow{});
    l.act_cache = KvCache{};
  }

  // Which rows continue their cached episode by one token, and which start over.
  std::vector<std::int64_t> advance, restart;
  std::vector<std::int64_t> step_tokens(static_cast<std::size_t>(batch), l.vocabulary->pad());
  std::vector<std::uint8_t> masks(static_cast<std::size_t>(batch * vocab));
  std::vector<std::uint8_t> idle(static_cast<std::size_t>(batch), 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const env::Observation& o = observations[static_cast<std::size_t>(b)];
    if (o.action_mask.size() != static_cast<std::size_t>(vocab)) {
      throw std::invalid_argument("act: observation " + std::to_string(b) + " has a mask of " +
                                  std::to_string(o.action_mask.size()) +
                                  " tokens, the vocabulary " + std::to_string(vocab));
    }
    ActRow& row = l.act_rows[static_cast<std::size_t>(b)];
    if (std::none_of(o.action_mask.begin(), o.action_mask.end(),
                     [](std::uint8_t m) { return m != 0; })) {
      // An ended episode (VectorEnv's next_step auto-reset ignores the action): answer <pad>.
      idle[static_cast<std::size_t>(b)] = 1;
      std::fill(masks.begin() + b * vocab, masks.begin() + (b + 1) * vocab, std::uint8_t{1});
      row = ActRow{};
      continue;
    }
    if (!o.matrix)
      throw std::invalid_argument("act: observation " + std::to_string(b) + " has no matrix");
    std::copy(o.action_mask.begin(), o.action_mask.end(), masks.begin() + b * vocab);
    const bool continues = !l.act_cache.empty() && row.matrix == o.matrix &&
                           o.tokens.size() == row.tokens.size() + 1 &&
                           std::equal(row.tokens.begin(), row.tokens.end(), o.tokens.begin());
    if (continues) {
      advance.push_back(b);
      step_tokens[static_cast<std::size_t>(b)] = o.tokens.back();
    } else {
      restart.push_back(b);
      if (o.tokens.empty()) {
        const std::string digest = env::observation_digest(*o.matrix);
        if (l.observed.emplace(digest, o.matrix).second) {
          l.observed_order.push_back(digest);
          if (l.observed_order.size() > kObservedCapacity) {
            l.observed.erase(l.observed_order.front());
            l.observed_order.pop_front();
          }
        }
      }
    }
    row.matrix = o.matrix;
    row.tokens = o.tokens;
  }

  if (advance.empty() && restart.empty()) {  // every row idle
    for (std::int64_t b = 0; b < batch; ++b) {
      actions.tokens.push_back(l.vocabulary->pad());
      actions.log_probs.push_back(0.0f);
      actions.values.push_back(0.0f);
    }
    return actions;
  }
  torch::Tensor logits, values;
  if (!advance.empty()) {
    torch::Tensor active = torch::zeros({batch}, torch::kBool);
    for (auto b : advance) active[b] = true;
    const PolicyOutput out = l.policy->decode_step(
        torch::tensor(step_tokens, torch::kLong).to(l.device), active.to(l.device), l.act_cache);
    logits = out.logits;
    values = out.values;
  }
  if (!restart.empty()) prefill_rows(l, observations, restart, logits, values);

  const torch::Tensor mask =
      torch::from_blob(masks.data(), {batch, vocab}, torch::kUInt8).to(torch::kBool).to(l.device);
  const SamplingConfig& sampling = l.config.sampling;
  const torch::Tensor masked = apply_action_mask(logits, mask);
  torch::Tensor chosen;
  double temperature = sampling.temperature;
  if (sampling.greedy) {
    chosen = masked.argmax(-1);
    temperature = 1.0;
  } else {
    chosen = sample_from_logits(filter_logits(masked, sampling), uniforms(l.rng, batch));
  }
  const torch::Tensor log_probs =
      torch::log_softmax(masked / temperature, -1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
  const torch::Tensor chosen_cpu = chosen.to(torch::kCPU);
  const torch::Tensor log_probs_cpu = log_probs.to(torch::kCPU).to(torch::kFloat);
  const torch::Tensor values_cpu = values.to(torch::kCPU).to(torch::kFloat);
  for (std::int64_t b = 0; b < batch; ++b) {
    if (idle[static_cast<std::size_t>(b)]) {
      actions.tokens.push_back(l.vocabulary->pad());
      actions.log_probs.push_back(0.0f);
      actions.values.push_back(0.0f);
      continue;
    }
    const auto token = static_cast<env::TokenId>(chosen_cpu[b].item<std::int64_t>());
    const bool allowed =
        observations[static_cast<std::size_t>(b)].action_mask[static_cast<std::size_t>(token)] != 0;
    if (!allowed || !std::isfinite(log_probs_cpu[b].item<float>())) {
      throw std::runtime_error(
          "act: the policy's logits are not finite (it drew " + l.vocabulary->describe(token) +
          (allowed ? std::string(" with a log-probability that is not finite")
                   : std::string(", which the action mask forbids")) +
          " at row " + std::to_string(b) + "): training diverged, or an input is not finite");
    }
    actions.tokens.push_back(token);
    actions.log_probs.push_back(log_probs_cpu[b].item<float>());
    actions.values.push_back(values_cpu[b].item<float>());
    ++l.counters.generated_tokens;
  }
  return actions;
}

namespace {

// generate()'s turns on the GPU's timing lane (PolicyAgent::set_timing_lane; none: no-ops): held
// from hold() to release(), which first waits for the kernels launched meanwhile; let go at the end
// (an exception included) if still held.
class LaneTurns {
 public:
  LaneTurns(reward::TimingLaneLock* lane, bool cuda) : lane_(lane), cuda_(cuda) {}
  LaneTurns(const LaneTurns&) = delete;
  LaneTurns& operator=(const LaneTurns&) = delete;
  ~LaneTurns() {
    try {
      release();
    } catch (...) {  // an exception already in flight is the one to report
    }
  }
  void hold() {
    if (lane_ == nullptr) return;
    lane_->lock();
    held_ = true;
  }
  void release() {
    if (!held_) return;
    held_ = false;
    struct Unlock {
      reward::TimingLaneLock* lane;
      ~Unlock() { lane->unlock(); }
    } unlock{lane_};
    if (cuda_) torch::cuda::synchronize();
  }

 private:
  reward::TimingLaneLock* lane_;
  bool cuda_;
  bool held_ = false;
};

// PolicyNetworkImpl::begin_inference() / end_inference() around a scope in which the weights do
// not change (a generate() call).
class InferenceCopies {
 public:
  explicit InferenceCopies(PolicyNetworkImpl& network) : network_(network) {
    network_.begin_inference();
  }
  ~InferenceCopies() { network_.end_inference(); }
  InferenceCopies(const InferenceCopies&) = delete;
  InferenceCopies& operator=(const InferenceCopies&) = delete;

 private:
  PolicyNetworkImpl& network_;
};

// The rows' action masks during generate(): each row's mask, the bytes of the step's masks (the
// caller's buffer), the rows still writing, and what each row drew at the last step (those that
// then ended included). Each row's mask is advanced past its draw where the next step's is filled,
// while the device runs the decode step; the rows on mask_threads() threads (the masks are
// independent; a BPE tokenizer's shared cache is locked). The draws do not depend on the order.
struct RowMasks {
  RowMasks(const TokenSpace& tokens, env::MaskMode mode, int max_tokens, std::int64_t count,
           std::span<std::uint8_t> buffer)
      : space(tokens),
        rows(count),
        vocab(static_cast<std::int64_t>(tokens.size())),
        bytes(buffer),
        active(static_cast<std::size_t>(count), 1),
        drew(static_cast<std::size_t>(count), 0),
        drawn(static_cast<std::size_t>(count), tokens.pad()),
        threads(mask_threads(tokens, count)) {
    if (bytes.size() != static_cast<std::size_t>(count * vocab)) {
      throw std::logic_error("generate: a mask buffer of the wrong size");
    }
    masks.reserve(static_cast<std::size_t>(count));
    for (std::int64_t r = 0; r < count; ++r) masks.push_back(tokens.mask(mode, max_tokens));
  }
  std::span<std::uint8_t> row(std::int64_t r) {
    return bytes.subspan(static_cast<std::size_t>(r * vocab), static_cast<std::size_t>(vocab));
  }
  // The next step's masks; finished rows allow everything (their draw is discarded).
  void fill_next() {
    threads.run(rows, [&](std::int64_t r) {
      const auto i = static_cast<std::size_t>(r);
      if (drew[i]) masks[i]->advance(drawn[i]);
      if (active[i]) {
        masks[i]->fill(row(r));
      } else {
        std::ranges::fill(row(r), std::uint8_t{1});
      }
    });
    std::ranges::fill(drew, std::uint8_t{0});
  }
  // Row r's draw, checked against the row's mask as filled for it (fill() agrees with allows() on
  // every token) and for a finite log-probability (greedy argmax takes a NaN for the largest
  // logit, so a policy gone NaN would otherwise write the first allowed token at every step);
  // `written` is what the row wrote before it, for the message.
  void record(std::int64_t r, env::TokenId token, float log_prob,
              std::span<const env::TokenId> written) {
    if (token < 0 || token >= vocab || bytes[static_cast<std::size_t>(r * vocab + token)] == 0 ||
        !std::isfinite(log_prob)) {
      throw std::runtime_error(forbidden_draw(r, token, written));
    }
    drew[static_cast<std::size_t>(r)] = 1;
    drawn[static_cast<std::size_t>(r)] = token;
  }
  // What a draw outside the mask says: a mask that allowed nothing is the mask's dead end (a bug
  // of the grammar, whatever the policy); otherwise the masked logits held no finite value to draw
  // from - the policy's outputs are not finite there. The row's last tokens locate it.
  std::string forbidden_draw(std::int64_t r, env::TokenId token,
                             std::span<const env::TokenId> written) const {
    const auto row_bytes =
        bytes.subspan(static_cast<std::size_t>(r * vocab), static_cast<std::size_t>(vocab));
    const auto allowed = std::count(row_bytes.begin(), row_bytes.end(), std::uint8_t{1});
    std::string tail;
    const std::size_t from = written.size() > 16 ? written.size() - 16 : 0;
    for (std::size_t i = from; i < written.size(); ++i) {
      tail += (tail.empty() ? "" : " ") + space.describe(written[i]);
    }
    const std::string where = "row " + std::to_string(r) + " after " +
                              std::to_string(written.size()) +
                              " tokens (last: " + (tail.empty() ? std::string("none") : tail) + ")";
    if (allowed == 0) {
      return "generate: the action mask allows no token at " + where +
             ": a dead end of the mask, not of the policy";
    }
    const bool in_mask = token >= 0 && token < vocab && row_bytes[static_cast<std::size_t>(token)];
    return "generate: the policy drew " + space.describe(token) +
           (in_mask ? std::string(" with a log-probability that is not finite")
                    : ", which its mask forbids") +
           " (" + std::to_string(allowed) + " tokens allowed), at " + where +
           ": its logits there are not finite (training diverged, or an input is not finite)";
  }

  const TokenSpace& space;
  const std::int64_t rows, vocab;
  std::vector<std::unique_ptr<CompletionMask>> masks;
  std::span<std::uint8_t> bytes;
  std::vector<std::uint8_t> active, drew;
  std::vector<env::TokenId> drawn;
  RowPool threads;
};

double seconds_since(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

// What generate()'s two step loops share: the call's settings, the rows' masks and completions,
// and the steps of one step that do not depend on the order (filling the masks, drawing on the
// device, recording the draws on the host).
struct GenerationSteps {
  Learner& l;
  const TokenSpace& space;
  const SamplingConfig& sampling;
  RowWindow window;
  std::int64_t rows = 0;
  int max_tokens = 0;
  bool keep_masks = false;
  std::uint64_t first_draw = 0;
  RowMasks& masks;
  std::vector<Completion>& out;
  GenerationProfile& profile;
  int steps = 0;

  void fill_masks() {
    const auto start = std::chrono::steady_clock::now();
    masks.fill_next();
    profile.mask_seconds += seconds_since(start);
    profile.row_steps += std::count(masks.active.begin(), masks.active.end(), std::uint8_t{1});
  }
  // Step t's uniforms into `u` (none when greedy). Data parallel: step t's draw for row r is draw
  // (t x total + offset + r) from the call's first, as in one process generating every rank's rows.
  void draw_uniforms(int t, std::span<double> u) {
    if (sampling.greedy) return;
    if (window.total > 0) {
      l.rng.counter = first_draw + static_cast<std::uint64_t>(t * window.total + window.offset);
    }
    for (double& x : u) x = l.rng.uniform_open();
  }
  // Step t's draws on the device: the tokens [rows] (int64) and, stacked for one read-back, the
  // tokens (exact as floats below 2^24), their log-probabilities and the values [3, rows].
  std::pair<torch::Tensor, torch::Tensor> draw(const PolicyOutput& step, const torch::Tensor& mask,
                                               const torch::Tensor& uniforms) const {
    const torch::Tensor masked = apply_action_mask(step.logits, mask);
    const torch::Tensor chosen =
        sampling.greedy ? masked.argmax(-1)
                        : sample_from_logits(filter_logits(masked, sampling), uniforms);
    const double temperature = sampling.greedy ? 1.0 : sampling.temperature;
    // x / 1 is x: no kernel for it.
    const torch::Tensor scaled = temperature == 1.0 ? masked : masked / temperature;
    const torch::Tensor log_probs =
        torch::log_softmax(scaled, -1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
    return {chosen, torch::stack({chosen.to(torch::kFloat), log_probs.to(torch::kFloat),
                                  step.values.to(torch::kFloat)})};
  }
  // The step's draws read back (tokens, log-probabilities, values; `rows` each) into the rows
  // still writing; those that drew <eos> end. Returns whether any row goes on; `next` (when given)
  // gets each row's next input (<pad> for the rows that ended).
  bool record(const float* drawn, std::vector<std::int64_t>* next) {
    const float* lp_data = drawn + rows;
    const float* v_data = lp_data + rows;
    bool any = false;
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (!masks.active[i]) continue;
      Completion& c = out[i];
      const auto token = static_cast<env::TokenId>(std::lround(drawn[r]));
      masks.record(r, token, lp_data[r], c.tokens);
      c.tokens.push_back(token);
      c.log_probs.push_back(lp_data[r]);
      c.values.push_back(v_data[r]);
      if (keep_masks) {
        const auto row = masks.row(r);
        c.action_masks.insert(c.action_masks.end(), row.begin(), row.end());
      }
      ++l.counters.generated_tokens;
      if (token == space.eos()) {
        c.terminated = true;
        masks.active[i] = 0;
      } else {
        if (next != nullptr) (*next)[i] = token;
        any = true;
      }
    }
    return any;
  }
};

// The steps as generate() took them first: the step's masks uploaded (waiting for the decode step
// they were filled beside), the draws, their read-back, then the next decode step enqueued with
// the tokens uploaded from the host. Holds the timing lane from the masks' upload to the end of
// the step's decode (LaneTurns).
void read_back_steps(GenerationSteps& g, PolicyOutput step, GenerationDecoder& decoder,
                     LaneTurns& lane) {
  const auto rows = g.rows, vocab = g.masks.vocab;
  const torch::Device device = g.l.device;
  std::vector<double> u(static_cast<std::size_t>(rows));
  for (int t = 0; t < g.max_tokens; ++t) {
    g.fill_masks();
    lane.hold();
    // Bytes travel as they are and become booleans where the logits are: no LibTorch op on the
    // host per step (each an OpenMP region over every core, which several processes on one host
    // spin against each other: docs/study.md).
    const auto upload_start = std::chrono::steady_clock::now();
    const torch::Tensor mask = torch::from_blob(g.masks.bytes.data(), {rows, vocab}, torch::kUInt8)
                                   .to(device)
                                   .to(torch::kBool);
    g.profile.upload_seconds += seconds_since(upload_start);
    g.draw_uniforms(t, u);
    const torch::Tensor uniforms = torch::from_blob(u.data(), {rows}, torch::kDouble).clone();
    ++g.steps;
    const torch::Tensor stacked = g.draw(step, mask, uniforms).second;
    const auto readback_start = std::chrono::steady_clock::now();
    const torch::Tensor drawn = stacked.to(torch::kCPU).contiguous();
    g.profile.readback_seconds += seconds_since(readback_start);
    std::vector<std::int64_t> next(static_cast<std::size_t>(rows), g.space.pad());
    if (!g.record(drawn.data_ptr<float>(), &next) || t + 1 == g.max_tokens) {
      lane.release();
      break;
    }
    // The next tokens and which rows go on, in one upload (a copy on the CPU too: `upload` ends
    // with this step).
    std::vector<std::int64_t> upload(next);
    upload.insert(upload.end(), g.masks.active.begin(), g.masks.active.end());
    const torch::Tensor uploaded =
        torch::from_blob(upload.data(), {2, rows}, torch::kLong)
            .to(device, torch::kLong, /*non_blocking=*/false, /*copy=*/true);
    const auto decode_start = std::chrono::steady_clock::now();
    step = decoder.step(uploaded[0], uploaded[1].to(torch::kBool), g.masks.active);
    g.profile.decode_seconds += seconds_since(decode_start);
    lane.release();
  }
}

// The steps overlapped (SamplingConfig::overlap_steps): step t's draws stay on the device, where
// they become the next decode step's input (a row goes on unless it drew <eos>), and that step is
// enqueued before the host waits for the draws' read-back; the host then records them and fills
// step t + 1's masks while the device runs the decode step. The masks and uniforms go up, and the
// draws come back, through `link` without blocking. The same operations as read_back_steps() in
// the same order on the device, so the same draws; where every row has ended before max_tokens,
// one decode step more runs (enqueued before the host knew), its outputs unused.
void overlapped_steps(GenerationSteps& g, PolicyOutput step, GenerationDecoder& decoder,
                      StepTransfers& link) {
  const torch::Device device = g.l.device;
  const auto on = torch::TensorOptions().device(device);
  // The masks and uniforms the draws read: StepTransfers' device buffers, the same every step.
  torch::Tensor mask, uniforms;
  // A step's draws, stacked for the read-back, and the next decode step's inputs: as
  // read_back_steps() uploads them, a row goes on unless it drew <eos>, and a row that ended reads
  // <pad>. The rows still writing are the state carried from step to step.
  DrawGraph draws(
      [&g, &mask, &uniforms](const torch::Tensor& logits, const torch::Tensor& values,
                             const torch::Tensor& going) -> std::vector<torch::Tensor> {
        const auto [chosen, stacked] = g.draw({logits, values}, mask, uniforms);
        const torch::Tensor still = going.logical_and(chosen.ne(g.space.eos()));
        return {stacked, torch::where(still, chosen, g.space.pad()), still};
      },
      torch::ones({g.rows}, on.dtype(torch::kBool)), g.sampling.draw_graphs);
  for (int t = 0; t < g.max_tokens; ++t) {
    g.fill_masks();
    const auto upload_start = std::chrono::steady_clock::now();
    mask = link.upload_masks();
    g.draw_uniforms(t, link.uniforms());
    uniforms = g.sampling.greedy ? torch::Tensor() : link.upload_uniforms();
    g.profile.upload_seconds += seconds_since(upload_start);
    ++g.steps;
    const std::vector<torch::Tensor> drawn_step = draws.run(step.logits, step.values);
    link.read_back(drawn_step[0]);
    const bool last = t + 1 == g.max_tokens;
    if (!last) {
      const auto decode_start = std::chrono::steady_clock::now();
      step = decoder.enqueue(drawn_step[1], drawn_step[2]);
      g.profile.decode_seconds += seconds_since(decode_start);
    }
    const auto readback_start = std::chrono::steady_clock::now();
    const float* drawn = link.draws();
    g.profile.readback_seconds += seconds_since(readback_start);
    const bool any = g.record(drawn, nullptr);
    if (!last) decoder.advance(g.masks.active);
    if (!any || last) break;
  }
  g.profile.draw_graphs = draws.replayed();
}

}  // namespace

std::vector<Completion> PolicyAgent::generate(
    std::span<const std::shared_ptr<const env::MatrixObservation>> prompts, int samples,
    const SamplingConfig& sampling, RowWindow window) {
  if (auto error = sampling.validate()) throw std::invalid_argument(*error);
  if (samples < 1)
    throw std::invalid_argument("generate: samples = " + std::to_string(samples) +
                                ", expected >= 1");
  Learner& l = *learner_;
  torch::NoGradGuard no_grad;
  l.policy->eval();
  const auto rows = static_cast<std::int64_t>(prompts.size()) * samples;
  std::vector<Completion> out(static_cast<std::size_t>(rows));
  if (rows == 0) return out;
  const TokenSpace& space = *l.tokens;
  const auto vocab = static_cast<std::int64_t>(space.size());
  if (vocab > (std::int64_t{1} << 24)) {  // the step's read-back carries token ids as floats
    throw std::invalid_argument("generate: a vocabulary of " + std::to_string(vocab) +
                                " tokens; at most 2^24 are supported");
  }
  const int max_tokens = l.config.policy.max_tokens;
  if (window.total > 0 && window.offset + rows > window.total) {
    throw std::invalid_argument("generate: rows " + std::to_string(window.offset) + " + " +
                                std::to_string(rows) + " of " + std::to_string(window.total));
  }
  std::vector<const env::MatrixObservation*> matrices;
  for (const auto& p : prompts) {
    for (int s = 0; s < samples; ++s) matrices.push_back(p.get());
  }
  // Overlapped steps need the device to themselves: with a timing lane (the evaluator timing on
  // this GPU meanwhile), the host lets it go while it fills the masks, which the overlapped steps
  // do while the device decodes.
  const bool overlap = sampling.overlap_steps && !timing_lane_;
  std::unique_ptr<StepTransfers> link;
  std::vector<std::uint8_t> mask_bytes;
  if (overlap) {
    link = std::make_unique<StepTransfers>(l.device, rows, vocab);
  } else {
    mask_bytes.assign(static_cast<std::size_t>(rows * vocab), 0);
  }
  RowMasks row_masks(space, l.config.mask, max_tokens, rows,
                     link ? link->mask_bytes() : std::span<std::uint8_t>(mask_bytes));
  GenerationProfile profile;
  // The masks travel with the completions for the update, but not a BPE vocabulary's (tens of
  // thousands of bytes per token): the update replays those from the tokens.
  GenerationSteps g{l,
                    space,
                    sampling,
                    window,
                    rows,
                    max_tokens,
                    l.config.mask != env::MaskMode::none && space.kind() == "closed",
                    l.rng.counter,
                    row_masks,
                    out,
                    profile};
  const auto generation_start = std::chrono::steady_clock::now();
  // The weights hold still until this call returns: the network may keep inference copies.
  const InferenceCopies inference(*l.policy);
  // The GPU's timing lane, when the evaluator times on this GPU meanwhile: held while this
  // function's kernels run (a step's kernels have finished when it is let go).
  LaneTurns lane(timing_lane_.get(), l.device.is_cuda());
  lane.hold();
  const PrefixBatch prefix = l.prefix_batch(matrices);
  const auto [start, start_valid] = l.prompt_batch(matrices);
  KvCache cache;
  const PolicyOutput first = l.policy->prefill(prefix, start, start_valid, cache);
  // The decode steps (at most max_tokens - 1 follow), from CUDA graphs where asked and possible.
  GenerationDecoder decoder(*l.policy, cache, max_tokens - 1, sampling.decode_graphs);
  lane.release();
  if (link) {
    overlapped_steps(g, first, decoder, *link);
  } else {
    read_back_steps(g, first, decoder, lane);
  }
  if (window.total > 0 && !sampling.greedy) {
    // The generator ends where one process's would: after the longest rank's last step.
    std::int64_t longest = g.steps;
    if (l.distributed()) {
      longest = static_cast<std::int64_t>(l.ranks->max({static_cast<double>(g.steps)})[0]);
    }
    l.rng.counter = g.first_draw + static_cast<std::uint64_t>(longest * window.total);
  }
  profile.steps = g.steps;
  profile.graphs = decoder.graphs();
  profile.capture_seconds = decoder.capture_seconds();
  profile.overlapped = overlap;
  profile.seconds = seconds_since(generation_start);
  l.last_generation = profile;
  return out;
}

env::Statistics PolicyAgent::update_rollouts(std::span<const Rollout> rollouts) {
  Learner& l = *learner_;
  if (rollouts.empty()) throw std::invalid_argument("update: no rollouts");
  const auto start = std::chrono::steady_clock::now();
  // The reference is the policy as RL found it, unless a stage set one before.
  if (l.algorithm->wants_reference(l.config) && l.reference.is_empty()) set_reference_to_current();
  // Several ranks: where these rollouts sit among every rank's (l.rows, for the minibatches) and
  // every rank's outcomes, so that the statistics are those of the whole batch.
  std::vector<Rollout> everyone;
  std::span<const Rollout> all = rollouts;
  if (l.distributed()) {
    everyone = share_rollout_outcomes(l, rollouts);
    all = everyone;
  }
  env::Statistics stats;
  try {
    stats = l.algorithm->update(l, rollouts);
  } catch (...) {
    l.rows = {};
    throw;
  }
  l.rows = {};
  std::int64_t tokens = 0;
  for (const Rollout& r : all) tokens += static_cast<std::int64_t>(r.completion.tokens.size());
  ++l.counters.updates;
  l.counters.samples += static_cast<std::int64_t>(all.size());
  l.counters.tokens += tokens;
  const env::Statistics rollout = rollout_statistics(all);
  stats.insert(stats.end(), rollout.begin(), rollout.end());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.emplace_back("perf/update_seconds", seconds);
  stats.emplace_back("global_step", static_cast<double>(l.counters.optimizer_steps));
  return stats;
}

env::Statistics PolicyAgent::update(std::span<const env::Episode> episodes) {
  Learner& l = *learner_;
  std::vector<Rollout> rollouts;
  std::map<std::string, int> groups;
  for (const env::Episode& e : episodes) {
    std::shared_ptr<const env::MatrixObservation> matrix = e.matrix;
    if (!matrix) {
      auto found = l.observed.find(e.observation_digest);
      if (found == l.observed.end()) {
        throw std::invalid_argument(
            "update: episode " + std::to_string(e.episode_index) + " of " + e.task.str() +
            " (env " + std::to_string(e.env_id) +
            ") was not acted on by this agent: its matrix observation is unknown");
      }
      matrix = found->second;
    }
    if (e.tokens.empty()) continue;
    const std::string group_key =
        e.group >= 0 ? "#" + std::to_string(e.group) : "task " + e.task.str();
    Rollout r;
    r.task = e.task;
    r.matrix = std::move(matrix);
    r.group = groups.try_emplace(group_key, static_cast<int>(groups.size())).first->second;
    r.completion.tokens = e.tokens;
    r.completion.log_probs = e.log_probs;
    r.completion.values = e.values;
    r.completion.action_masks = e.action_masks;
    r.completion.terminated = e.terminated;
    r.reward = e.reward;
    r.evaluated = e.eval.has_value();
    if (e.eval) {
      r.compiled = e.eval->compiled;
      r.correct = e.eval->correct;
      r.speedup = e.eval->correct && e.eval->timed ? e.eval->timing.speedup : 0.0;
    }
    rollouts.push_back(std::move(r));
  }
  return update_rollouts(rollouts);
}

env::Statistics PolicyAgent::pretrain_step(std::span<const std::vector<env::TokenId>> programs) {
  return agents::pretrain_step(*learner_, programs);
}

env::Statistics PolicyAgent::sft_step(std::span<const SftExample> examples) {
  return agents::sft_step(*learner_, examples);
}

double PolicyAgent::sft_loss(std::span<const SftExample> examples) {
  return agents::sft_loss(*learner_, examples);
}

}  // namespace sparserl::agents
