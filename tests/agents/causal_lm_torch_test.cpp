// The Llama / Qwen2 decoder (causal_lm.hpp) on tiny random models the test writes as Hugging Face
// folders: logits equal an independent plain C++ reference (fp32 and bf16 files, sharded or not,
// unpadded, right- and left-padded batches); prefill + decode_step with the key-value cache equal
// the full forward pass, with a soft prompt of partly sampled nonzeros; save -> load -> save is
// byte-identical; a fresh LoRA adapter leaves the logits unchanged, training moves only adapters
// and heads, and the merged export reproduces the adapted logits; checkpointed gradients equal the
// plain ones (dropout on); bf16 compute stays near fp32; a folder that does not fit its config is
// refused naming the tensor; the [agent.model] knobs map onto the decoder's options.
#include <torch/torch.h>

#include <fstream>
#include <set>

#include "agents_torch_test_support.hpp"
#include "catch.hpp"
#include "hf_test_models.hpp"
#include "sparserl/agents/policy_agent.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/env/observation.hpp"
#include "test_support.hpp"

namespace {

using namespace sparserl;
using namespace sparserl::agents;
using agents::testing::reference_logits;
using agents::testing::tiny_model;
using agents::testing::TinyModel;
using agents::testing::write_model;
namespace fs = std::filesystem;

constexpr int kNnz = 4, kWidth = 8, kFeatures = 5;

CausalLmOptions text_options() {
  CausalLmOptions o;
  o.soft_prompt = false;
  return o;
}

CausalLmOptions soft_options() {
  CausalLmOptions o;
  o.nnz_samples = kNnz, o.embedding_dim = kWidth, o.feature_dim = kFeatures;
  return o;
}

// A tiny model of `family` written to a fresh folder named `name`.
fs::path model_folder(const std::string& name, HfFamily family,
                      TensorDtype dtype = TensorDtype::f32, std::uint64_t shard = 0,
                      TinyModel* out = nullptr) {
  const fs::path dir = sparserl::testing::scratch_dir(name);
  TinyModel m = tiny_model(family);
  write_model(m, dir, dtype, shard);
  if (out != nullptr) *out = m;
  return dir;
}

std::vector<std::int64_t> random_ids(std::size_t n, std::int64_t vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> ids(n);
  for (auto& id : ids) id = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(vocab));
  return ids;
}

torch::Tensor row(const std::vector<std::int64_t>& ids) {
  return torch::tensor(ids, torch::kLong).unsqueeze(0);
}

double max_difference(const torch::Tensor& logits, const agents::testing::Matrix& reference) {
  double worst = 0;
  for (std::size_t t = 0; t < reference.size(); ++t) {
    for (std::size_t v = 0; v < reference[t].size(); ++v) {
      const double got =
          logits[static_cast<std::int64_t>(t)][static_cast<std::int64_t>(v)].item<double>();
      worst = std::max(worst, std::abs(got - reference[t][v]));
    }
  }
  return worst;
}

// Soft-prompt inputs of 3 rows: all K nonzeros sampled, no matrix at all, 2 of K sampled (the
// unsampled rows hold noise, which must not matter).
PrefixBatch soft_prefix(std::uint64_t seed) {
  torch::manual_seed(static_cast<std::int64_t>(seed));
  PrefixBatch p;
  p.embedding = torch::randn({3, kNnz, kWidth});
  p.valid = torch::tensor({1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}, torch::kBool).view({3, kNnz});
  p.features = torch::rand({3, kFeatures});
  p.feature_valid = torch::tensor({1, 0, 1}, torch::kBool);
  return p;
}

torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& tokens) {
  const std::int64_t t = tokens.size(1) - 1;
  return torch::nn::functional::cross_entropy(logits.narrow(1, 0, t).reshape({-1, logits.size(2)}),
                                              tokens.narrow(1, 1, t).reshape(-1));
}

// Whether the autograd graph behind `output` runs a checkpointed layer.
bool graph_has_checkpoint(const torch::Tensor& output) {
  std::vector<torch::autograd::Node*> todo = {output.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    if (node->name().find("CheckpointedLayer") != std::string::npos) return true;
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return false;
}

}  // namespace

TEST_CASE("HF decoders give the logits of a plain C++ reference", "[agents][hf]") {
  for (const HfFamily family : {HfFamily::qwen2, HfFamily::llama}) {
    for (const TensorDtype dtype : {TensorDtype::f32, TensorDtype::bf16}) {
      for (const std::uint64_t shard : {std::uint64_t{0}, std::uint64_t{4000}}) {
        INFO(to_string(family) << " " << to_string(dtype) << " shard " << shard);
        TinyModel m;
        const fs::path dir = model_folder("hf_reference", family, dtype, shard, &m);
        CHECK(SafetensorsCheckpoint(dir).sharded() == (shard > 0));
        CausalLmPolicy policy = load_causal_lm(dir, text_options(), 1);
        policy->eval();
        torch::NoGradGuard no_grad;
        const std::vector<std::vector<std::int64_t>> prompts = {
            random_ids(9, m.config.vocab_size, 1), random_ids(4, m.config.vocab_size, 2),
            random_ids(1, m.config.vocab_size, 3)};
        std::vector<torch::Tensor> single;
        for (const auto& ids : prompts) {
          single.push_back(policy->lm_logits(
              row(ids), torch::ones({1, static_cast<std::int64_t>(ids.size())}))[0]);
          CHECK(max_difference(single.back(), reference_logits(m, ids)) < 1e-4);
        }
        // Batched with right and with left padding: every valid position as unpadded.
        const std::int64_t longest = 9;
        for (const bool left : {false, true}) {
          torch::Tensor ids = torch::zeros({3, longest}, torch::kLong);
          torch::Tensor mask = torch::zeros({3, longest}, torch::kLong);
          for (std::int64_t r = 0; r < 3; ++r) {
            const auto n = static_cast<std::int64_t>(prompts[static_cast<std::size_t>(r)].size());
            const std::int64_t start = left ? longest - n : 0;
            ids[r].narrow(0, start, n).copy_(torch::tensor(prompts[static_cast<std::size_t>(r)]));
            mask[r].narrow(0, start, n).fill_(1);
          }
          const torch::Tensor batched = policy->lm_logits(ids, mask);
          for (std::int64_t r = 0; r < 3; ++r) {
            const std::int64_t n = single[static_cast<std::size_t>(r)].size(0);
            const torch::Tensor valid = batched[r].narrow(0, left ? longest - n : 0, n);
            CHECK(torch::allclose(valid, single[static_cast<std::size_t>(r)], 1e-5, 1e-5));
          }
        }
      }
    }
  }
}

TEST_CASE("HF decoders: the key-value cache equals the full forward pass", "[agents][hf]") {
  const fs::path dir = model_folder("hf_cache", HfFamily::llama);
  CausalLmPolicy policy = load_causal_lm(dir, soft_options(), 3);
  policy->eval();
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(policy->named_parameters()["value_head.weight"], 0.0, 0.5);
  const PrefixBatch prefix = soft_prefix(4);
  const std::vector<std::vector<std::int64_t>> sequences = {
      random_ids(7, 53, 11), random_ids(3, 53, 12), random_ids(5, 53, 13)};
  torch::Tensor tokens = torch::zeros({3, 7}, torch::kLong);
  torch::Tensor valid = torch::zeros({3, 7}, torch::kBool);
  for (std::int64_t r = 0; r < 3; ++r) {
    const auto& s = sequences[static_cast<std::size_t>(r)];
    tokens[r].narrow(0, 0, static_cast<std::int64_t>(s.size())).copy_(torch::tensor(s));
    valid[r].narrow(0, 0, static_cast<std::int64_t>(s.size())).fill_(true);
  }
  const PolicyOutput full = policy->forward(prefix, tokens, valid);
  CHECK(torch::equal(policy->values(prefix, tokens, valid), full.values));
  CHECK(full.values.abs().sum().item<float>() > 0);

  // Unsampled soft-prompt entries carry noise that must change nothing.
  PrefixBatch noisy = prefix;
  noisy.embedding = prefix.embedding * prefix.valid.unsqueeze(2);
  CHECK(torch::allclose(policy->forward(noisy, tokens, valid).logits, full.logits, 1e-6, 1e-6));

  // From the first token, one token at a time; rows stop after their last token.
  KvCache cache;
  PolicyOutput step = policy->prefill(prefix, tokens.narrow(1, 0, 1), valid.narrow(1, 0, 1), cache);
  for (std::int64_t t = 0; t < 7; ++t) {
    for (std::int64_t r = 0; r < 3; ++r) {
      if (t >= static_cast<std::int64_t>(sequences[static_cast<std::size_t>(r)].size())) continue;
      INFO("row " << r << " token " << t);
      CHECK(torch::allclose(step.logits[r], full.logits[r][t], 1e-4, 1e-4));
      CHECK(step.values[r].item<float>() == Approx(full.values[r][t].item<float>()).margin(1e-4));
    }
    if (t + 1 == 7) break;
    torch::Tensor active = torch::zeros({3}, torch::kBool);
    torch::Tensor next = torch::zeros({3}, torch::kLong);
    for (std::int64_t r = 0; r < 3; ++r) {
      const auto n = static_cast<std::int64_t>(sequences[static_cast<std::size_t>(r)].size());
      if (t + 1 < n) {
        active[r] = true;
        next[r] = tokens[r][t + 1];
      }
    }
    step = policy->decode_step(next, active, cache);
  }

  // Text-only form, left-padded prefill, then one step: as the unpadded full pass.
  CausalLmPolicy text = load_causal_lm(dir, text_options(), 3);
  text->eval();
  const auto& s = sequences[0];
  const torch::Tensor whole = text->lm_logits(row(s), torch::ones({1, 7}))[0];
  torch::Tensor left = torch::zeros({1, 6}, torch::kLong);
  left[0].narrow(0, 2, 4).copy_(torch::tensor(std::vector<std::int64_t>(s.begin(), s.begin() + 4)));
  const torch::Tensor left_valid = (torch::arange(6) >= 2).unsqueeze(0);
  KvCache text_cache;
  const PolicyOutput first = text->prefill({}, left, left_valid, text_cache);
  CHECK(torch::allclose(first.logits[0], whole[3], 1e-4, 1e-4));
  const PolicyOutput second =
      text->decode_step(torch::tensor({s[4]}), torch::ones({1}, torch::kBool), text_cache);
  CHECK(torch::allclose(second.logits[0], whole[4], 1e-4, 1e-4));
}

TEST_CASE("HF decoders: save -> load -> save is byte-identical", "[agents][hf]") {
  TinyModel m;
  const fs::path source =
      model_folder("hf_round_trip_source", HfFamily::qwen2, TensorDtype::bf16, 0, &m);
  const fs::path a = sparserl::testing::scratch_dir("hf_round_trip_a");
  const fs::path b = sparserl::testing::scratch_dir("hf_round_trip_b");
  std::ofstream(source / "tokenizer.json") << R"({"model": {"type": "BPE"}})";
  CausalLmPolicy first = load_causal_lm(source, soft_options(), 9);
  save_causal_lm(*first, a, 3000, source);
  CausalLmPolicy second = load_causal_lm(a, soft_options(), 10);  // heads from the file, not seed
  save_causal_lm(*second, b, 3000);
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(a)) names.insert(entry.path().filename());
  CHECK(names.contains("config.json"));
  CHECK(names.contains("model.safetensors.index.json"));
  CHECK(names.contains(kPolicyTensorsFile));
  CHECK(sparserl::testing::read_bytes(a / "tokenizer.json") ==
        sparserl::testing::read_bytes(source / "tokenizer.json"));
  CHECK_FALSE(fs::exists(b / "tokenizer.json"));  // saved without files_from
  names.erase("tokenizer.json");
  for (const std::string& name : names) {
    INFO(name);
    REQUIRE(fs::exists(b / name));
    CHECK(sparserl::testing::read_bytes(a / name) == sparserl::testing::read_bytes(b / name));
  }
  // Each weight as the source file held it (bf16 in, bf16 out).
  const SafetensorsCheckpoint original(source), saved(a);
  CHECK(original.names() == saved.names());
  for (const std::string& name : original.names()) {
    const auto x = original.find(name), y = saved.find(name);
    CHECK(std::equal(x->data().begin(), x->data().end(), y->data().begin(), y->data().end()));
  }
  CHECK(read_hf_config(a).torch_dtype == "bfloat16");
  first->eval(), second->eval();
  const PrefixBatch prefix = soft_prefix(2);
  const torch::Tensor tokens = torch::tensor({{3, 4, 5}, {6, 7, 8}, {9, 10, 11}});
  const torch::Tensor valid = torch::ones({3, 3}, torch::kBool);
  torch::NoGradGuard no_grad;
  CHECK(torch::equal(first->forward(prefix, tokens, valid).logits,
                     second->forward(prefix, tokens, valid).logits));
}

TEST_CASE("LoRA: a fresh adapter changes nothing and training moves only adapters and heads",
          "[agents][hf]") {
  const fs::path dir = model_folder("hf_lora", HfFamily::qwen2);
  CausalLmOptions lora = soft_options();
  lora.lora_rank = 4, lora.lora_alpha = 8, lora.lora_targets = lora_target_names();
  CausalLmPolicy plain = load_causal_lm(dir, soft_options(), 5);
  CausalLmPolicy adapted = load_causal_lm(dir, lora, 5);
  plain->eval(), adapted->eval();
  const PrefixBatch prefix = soft_prefix(7);
  const torch::Tensor tokens = torch::randint(61, {3, 6}, torch::kLong);
  const torch::Tensor valid = torch::ones({3, 6}, torch::kBool);
  {
    torch::NoGradGuard no_grad;
    CHECK(torch::equal(plain->forward(prefix, tokens, valid).logits,
                       adapted->forward(prefix, tokens, valid).logits));
  }
  // Trainable: the adapters of 7 projections x 2 layers, the soft prompt, the value head.
  const HfModelConfig& c = adapted->config();
  const std::int64_t d = c.hidden_size, q = 32, kv = 16, f = c.intermediate_size, r = 4;
  const std::int64_t per_layer =
      r * (d + q) + 2 * r * (d + kv) + r * (q + d) + 2 * r * (d + f) + r * (f + d);
  const std::int64_t heads = kWidth * d + d + kFeatures * d + d + d + 1;
  CHECK(adapted->trainable_parameter_count() == 2 * per_layer + heads);

  std::map<std::string, torch::Tensor> before;
  for (const auto& item : adapted->named_parameters()) before[item.key()] = item.value().clone();
  std::vector<torch::Tensor> trainable;
  for (const auto& p : adapted->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  torch::optim::AdamW optimizer(trainable, torch::optim::AdamWOptions(1e-2));
  adapted->train();
  for (int s = 0; s < 3; ++s) {
    optimizer.zero_grad();
    next_token_loss(adapted->forward(prefix, tokens, valid).logits, tokens).backward();
    optimizer.step();
  }
  for (const auto& item : adapted->named_parameters()) {
    INFO(item.key());
    const bool moved = !torch::equal(item.value(), before[item.key()]);
    const bool hf =
        item.key().rfind("model.", 0) == 0 && item.key().find(".lora_") == std::string::npos;
    if (hf) CHECK_FALSE(moved);
    if (item.key().find(".lora_B.") != std::string::npos) CHECK(moved);
  }
  // The merged export is the adapted model.
  adapted->eval();
  const fs::path merged = sparserl::testing::scratch_dir("hf_lora_merged");
  save_causal_lm(*adapted, merged);
  CausalLmPolicy reloaded = load_causal_lm(merged, soft_options(), 99);
  reloaded->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = adapted->forward(prefix, tokens, valid).logits;
  CHECK_FALSE(torch::allclose(expected, plain->forward(prefix, tokens, valid).logits, 1e-3, 1e-3));
  CHECK(torch::allclose(reloaded->forward(prefix, tokens, valid).logits, expected, 1e-5, 1e-5));
  CausalLmPolicy reference = frozen_copy(*adapted);
  CHECK(torch::allclose(reference->forward(prefix, tokens, valid).logits, expected, 1e-5, 1e-5));
  CHECK(reference->trainable_parameter_count() == 0);
}

TEST_CASE("gradient checkpointing gives the gradients of the plain backward pass", "[agents][hf]") {
  const fs::path dir = model_folder("hf_checkpointing", HfFamily::llama);
  for (const bool lora : {true, false}) {
    INFO((lora ? "LoRA with dropout" : "full fine-tuning"));
    CausalLmOptions o = soft_options();
    if (lora) o.lora_rank = 2, o.lora_dropout = 0.3, o.lora_targets = lora_target_names();
    CausalLmPolicy plain = load_causal_lm(dir, o, 4);
    o.gradient_checkpointing = true;
    CausalLmPolicy checkpointed = load_causal_lm(dir, o, 4);
    agents::testing::draw_shared(*plain, *checkpointed, {".lora_B.", "value_head."}, 0.3);
    const PrefixBatch prefix = soft_prefix(5);
    const torch::Tensor tokens = torch::randint(53, {3, 5}, torch::kLong);
    const torch::Tensor valid = torch::ones({3, 5}, torch::kBool);
    auto gradients = [&](CausalLmPolicy& policy) {
      policy->train();
      policy->zero_grad();
      torch::manual_seed(42);  // the same dropout draws for both
      const PolicyOutput out = policy->forward(prefix, tokens, valid);
      (next_token_loss(out.logits, tokens) + out.values.pow(2).mean()).backward();
      std::map<std::string, torch::Tensor> grads;
      for (const auto& item : policy->named_parameters()) {
        if (item.value().requires_grad()) grads[item.key()] = item.value().grad().clone();
      }
      return std::make_pair(grads, graph_has_checkpoint(out.logits));
    };
    const auto [expected, plain_checkpointed] = gradients(plain);
    const auto [got, used_checkpoint] = gradients(checkpointed);
    CHECK_FALSE(plain_checkpointed);
    CHECK(used_checkpoint);
    REQUIRE(expected.size() == got.size());
    for (const auto& [name, grad] : expected) {
      INFO(name);
      CHECK(grad.abs().sum().item<double>() > 0);
      CHECK(torch::allclose(got.at(name), grad, 1e-5, 1e-6));
    }
  }
}

TEST_CASE("HF decoders in bf16: fp32 master weights, logits near fp32", "[agents][hf]") {
  const fs::path dir = model_folder("hf_bf16", HfFamily::qwen2);
  CausalLmOptions bf16 = soft_options();
  bf16.dtype = torch::kBFloat16;
  CausalLmPolicy full = load_causal_lm(dir, bf16, 3);
  for (const auto& p : full->parameters()) CHECK(p.scalar_type() == torch::kFloat);
  bf16.lora_rank = 2;
  CausalLmPolicy lora = load_causal_lm(dir, bf16, 3);
  for (const auto& item : lora->named_parameters()) {
    INFO(item.key());
    CHECK(item.value().scalar_type() ==
          (item.value().requires_grad() ? torch::kFloat : torch::kBFloat16));
  }
  CausalLmPolicy fp32 = load_causal_lm(dir, soft_options(), 3);
  full->eval(), fp32->eval();
  torch::NoGradGuard no_grad;
  const PrefixBatch prefix = soft_prefix(6);
  const torch::Tensor tokens = torch::randint(61, {3, 8}, torch::kLong);
  const torch::Tensor valid = torch::ones({3, 8}, torch::kBool);
  const torch::Tensor reference = fp32->forward(prefix, tokens, valid).logits;
  const torch::Tensor low = full->forward(prefix, tokens, valid).logits;
  CHECK(low.scalar_type() == torch::kFloat);
  const double scale = reference.abs().max().item<double>();
  CHECK((low - reference).abs().max().item<double>() < 0.05 * scale);
  CHECK_FALSE(torch::equal(low, reference));
  KvCache cache;
  const PolicyOutput last = full->prefill(prefix, tokens, valid, cache);
  CHECK(cache.keys[0].scalar_type() == torch::kBFloat16);
  CHECK(torch::allclose(last.logits, low.select(1, 7), 0.02, 0.02 * scale));
}

TEST_CASE(
    "HF decoders in bf16: inference copies of the weights change no logit and end with the call",
    "[agents][hf]") {
  // begin_inference() casts the fp32 master weights once (generate() holds the weights still); the
  // logits of a prefill and of decode steps are bit for bit those of the per-call casts, LoRA
  // projections keep their path, and after end_inference() a changed weight is read again.
  const fs::path dir = model_folder("hf_inference_copies", HfFamily::qwen2);
  for (const int lora : {0, 2}) {
    INFO("LoRA rank " << lora);
    CausalLmOptions bf16 = soft_options();
    bf16.dtype = torch::kBFloat16;
    bf16.lora_rank = lora;
    CausalLmPolicy policy = load_causal_lm(dir, bf16, 3);
    policy->eval();
    torch::NoGradGuard no_grad;
    const PrefixBatch prefix = soft_prefix(6);
    const torch::Tensor tokens = torch::randint(61, {3, 8}, torch::kLong);
    const torch::Tensor valid = torch::ones({3, 8}, torch::kBool);
    const torch::Tensor next = torch::randint(61, {3}, torch::kLong);
    const torch::Tensor active = torch::ones({3}, torch::kBool);
    const auto run = [&] {
      KvCache cache;
      const PolicyOutput first = policy->prefill(prefix, tokens, valid, cache);
      const PolicyOutput second = policy->decode_step(next, active, cache);
      return std::pair{first.logits, second.logits};
    };
    const auto [plain_first, plain_second] = run();
    policy->begin_inference();
    const auto [copied_first, copied_second] = run();
    policy->end_inference();
    CHECK(torch::equal(plain_first, copied_first));
    CHECK(torch::equal(plain_second, copied_second));
    // After end_inference() the weights are read again: a changed projection changes the logits.
    policy->decoder_layers()[0]->named_parameters()["mlp.down_proj.weight"].mul_(2.0);
    CHECK_FALSE(torch::equal(run().first, plain_first));
  }
}

TEST_CASE("HF decoders refuse a folder that does not fit its config", "[agents][hf]") {
  auto refusal = [](const fs::path& dir, const CausalLmOptions& options) -> std::string {
    try {
      (void)load_causal_lm(dir, options, 1);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(accepted)";
  };
  TinyModel m = tiny_model(HfFamily::qwen2);
  m.weights.erase("model.norm.weight");
  const fs::path missing = sparserl::testing::scratch_dir("hf_refuse_missing");
  write_model(m, missing, TensorDtype::f32);
  CHECK_THAT(
      refusal(missing, text_options()),
      sparserl::testing::has_substring("tensor 'model.norm.weight' is missing from the weights"));

  m = tiny_model(HfFamily::qwen2);
  m.weights["model.layers.0.self_attn.o_proj.bias"] = std::vector<float>(32, 0.0f);
  m.shapes["model.layers.0.self_attn.o_proj.bias"] = {32};
  const fs::path extra = sparserl::testing::scratch_dir("hf_refuse_extra");
  write_model(m, extra, TensorDtype::f32);
  CHECK_THAT(refusal(extra, text_options()),
             sparserl::testing::has_substring(
                 "tensor 'model.layers.0.self_attn.o_proj.bias' is not part of a qwen2"));

  m = tiny_model(HfFamily::llama);
  m.config.intermediate_size = 44;
  const fs::path shape = sparserl::testing::scratch_dir("hf_refuse_shape");
  write_model(m, shape, TensorDtype::f32);
  CHECK_THAT(refusal(shape, text_options()),
             sparserl::testing::has_substring(
                 "model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has "
                 "shape [40, 24], but config.json gives [44, 24]"));

  CausalLmOptions unknown = text_options();
  unknown.lora_rank = 2, unknown.lora_targets = {"qkv"};
  CHECK_THAT(refusal(model_folder("hf_refuse_target", HfFamily::llama), unknown),
             sparserl::testing::has_substring("no projection named 'qkv'"));
  CHECK_THAT(refusal(model_folder("hf_refuse_prompt", HfFamily::llama), CausalLmOptions{}),
             sparserl::testing::has_substring("soft prompt needs nnz_samples"));
}

TEST_CASE("HF decoders initialised from a seed are reproducible", "[agents][hf]") {
  const TinyModel m = tiny_model(HfFamily::llama);
  CausalLmPolicy a(m.config, soft_options()), b(m.config, soft_options()),
      c(m.config, soft_options());
  a->initialize_weights(3), b->initialize_weights(3), c->initialize_weights(4);
  auto digest = [](CausalLmPolicy& p) {
    double s = 0;
    for (const auto& t : p->parameters())
      s += t.to(torch::kDouble).sum().item<double>() * 1.0001 + t.abs().sum().item<double>();
    return s;
  };
  CHECK(digest(a) == digest(b));
  CHECK(digest(a) != digest(c));
  CHECK(a->named_parameters()["model.norm.weight"].eq(1).all().item<bool>());
  CHECK(a->named_parameters()["value_head.weight"].eq(0).all().item<bool>());
  CHECK(a->parameter_count() ==
        m.config.parameter_count() + kWidth * 24 + 24 + kFeatures * 24 + 24 + 24 + 1);
}

TEST_CASE("[agent.model] knobs: lists, checks and the decoder's options", "[agents][hf]") {
  AgentConfig c;
  apply_key_value(c, "model.lora_targets", "q_proj,down_proj");
  CHECK(c.model.lora_targets == std::vector<std::string>{"q_proj", "down_proj"});
  CHECK(to_key_values(c).at("model.lora_targets") == "q_proj,down_proj");
  CHECK_THROWS_WITH(apply_key_value(c, "model.lora_targets", "q_proj,qkv"),
                    sparserl::testing::has_substring("key 'model.lora_targets'") &&
                        sparserl::testing::has_substring("'qkv'"));
  apply_key_value(c, "model.lora_targets", "");
  CHECK(c.model.lora_targets.empty());
  c.model.kind = ModelKind::hf;
  CHECK(c.validate() == std::optional<std::string>("model.path: kind = hf needs the model folder"));
  c.model.path = "folder";
  c.model.lora_rank = 4;
  CHECK(c.validate() == std::optional<std::string>(
                            "model.lora_targets: lora_rank = 4 needs at least one projection"));
  c.model.lora_targets = {"v_proj"};
  c.model.gradient_checkpointing = true;
  c.model.prompt = PromptForm::text;
  CHECK_FALSE(c.validate().has_value());

  HfModelConfig hf = tiny_model(HfFamily::qwen2).config;
  hf.torch_dtype = "bfloat16";
  CausalLmOptions o = causal_lm_options(c, hf, torch::kCPU);
  CHECK(o.dtype == torch::kBFloat16);
  CHECK(o.lora_rank == 4);
  CHECK(o.lora_targets == c.model.lora_targets);
  CHECK(o.gradient_checkpointing);
  CHECK_FALSE(o.soft_prompt);
  CHECK(o.nnz_samples == c.policy.nnz_samples);
  CHECK(o.feature_dim == static_cast<int>(env::feature_names().size()));
  hf.torch_dtype = "float32";
  CHECK(causal_lm_options(c, hf, torch::kCPU).dtype == torch::kFloat);
  c.model.dtype = "bfloat16";
  CHECK(causal_lm_options(c, hf, torch::kCPU).dtype == torch::kBFloat16);

  // An agent of a folder that is not there is refused naming the file it looked for.
  c.device = "cpu";
  CHECK_THROWS_WITH(PolicyAgent(c, agents::testing::vocabulary()),
                    sparserl::testing::has_substring("folder/config.json"));
}
