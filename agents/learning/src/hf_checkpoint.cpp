// Model folders in and out of a CausalLmPolicy (causal_lm.hpp): weights matched by Hugging Face
// name against the module's parameters - every parameter must be found with its shape, and a tensor
// the architecture does not have is refused rather than ignored, so a folder of another family or
// shape fails at load and not as wrong logits - and the export transformers reads back: config.json
// and safetensors with LoRA merged, in the config's dtype, plus the policy's own tensors beside.
#include <torch/torch.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "sparserl/agents/hf_model.hpp"
#include "sparserl/agents/safetensors.hpp"
#include "sparserl/agents/torch/causal_lm.hpp"
#include "sparserl/env/bpe_tokenizer.hpp"
#include "sparserl/env/observation.hpp"

namespace sparserl::agents {

namespace {

namespace fs = std::filesystem;

torch::ScalarType scalar_type_of(TensorDtype dtype) {
  switch (dtype) {
    case TensorDtype::f32:
      return torch::kFloat;
    case TensorDtype::bf16:
      return torch::kBFloat16;
    case TensorDtype::f16:
      return torch::kHalf;
  }
  return torch::kFloat;
}

TensorDtype file_dtype_of(const std::string& torch_dtype) {
  if (torch_dtype == "bfloat16") return TensorDtype::bf16;
  if (torch_dtype == "float16") return TensorDtype::f16;
  return TensorDtype::f32;
}

std::string shape_text(c10::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// A CPU tensor holding a copy of the file's bytes (the mapping may be unaligned).
torch::Tensor read_tensor(const TensorEntry& entry, std::span<const std::byte> data) {
  torch::Tensor out =
      torch::empty(entry.shape, torch::TensorOptions().dtype(scalar_type_of(entry.dtype)));
  std::memcpy(out.data_ptr(), data.data(), data.size());
  return out;
}

// Copies `value` into `parameter` (dtype and device converted), refusing another shape.
void assign(torch::Tensor& parameter, const torch::Tensor& value, const fs::path& file,
            const std::string& name, const std::string& hint) {
  if (parameter.sizes() != value.sizes()) {
    throw std::runtime_error(file.string() + ": tensor '" + name + "' has shape " +
                             shape_text(value.sizes()) + ", but " + hint + " gives " +
                             shape_text(parameter.sizes()));
  }
  parameter.copy_(value);
}

bool is_hf_name(const std::string& name) {
  return (name.rfind("model.", 0) == 0 || name.rfind("lm_head.", 0) == 0) &&
         name.find(".lora_") == std::string::npos;
}

std::vector<TensorToWrite> to_write(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                    TensorDtype dtype, std::vector<torch::Tensor>& keep) {
  std::vector<TensorToWrite> out;
  for (const auto& [name, tensor] : named) {
    keep.push_back(tensor.detach().to(torch::kCPU, scalar_type_of(dtype)).contiguous());
    const torch::Tensor& t = keep.back();
    out.push_back({name,
                   dtype,
                   t.sizes().vec(),
                   {static_cast<const std::byte*>(t.data_ptr()),
                    static_cast<std::size_t>(t.numel()) * element_size(dtype)}});
  }
  return out;
}

void load_policy_tensors(CausalLmPolicyImpl& policy, const fs::path& file) {
  const SafetensorsFile tensors(file);
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& [name, parameter] : policy.policy_tensors()) {
    const TensorEntry* entry = tensors.find(name);
    if (entry == nullptr) {
      throw std::runtime_error(file.string() + ": tensor '" + name +
                               "' is missing (saved with another prompt form?)");
    }
    assign(parameter, read_tensor(*entry, tensors.data(*entry)), file, name,
           "the policy's options");
    used.insert(name);
  }
  for (const TensorEntry& entry : tensors.tensors()) {
    if (!used.contains(entry.name)) {
      throw std::runtime_error(file.string() + ": tensor '" + entry.name +
                               "' is not part of this policy (saved with another prompt form?)");
    }
  }
}

}  // namespace

CausalLmOptions causal_lm_options(const AgentConfig& config, const HfModelConfig& model,
                                  torch::Device device) {
  const ModelConfig& m = config.model;
  CausalLmOptions o;
  o.device = device;
  const bool fp32 = m.dtype == "float32" || (m.dtype == "auto" && model.torch_dtype == "float32");
  o.dtype = fp32 ? torch::kFloat : torch::kBFloat16;
  o.lora_rank = m.lora_rank;
  o.lora_alpha = m.lora_alpha;
  o.lora_dropout = m.lora_dropout;
  o.lora_targets = m.lora_targets;
  o.gradient_checkpointing = m.gradient_checkpointing;
  o.soft_prompt = m.prompt == PromptForm::soft;
  o.nnz_samples = config.policy.nnz_samples;
  o.embedding_dim = config.policy.embedding_dim;
  o.feature_dim = config.policy.feature_dim > 0 ? config.policy.feature_dim
                                                : static_cast<int>(env::feature_names().size());
  return o;
}

void load_hf_weights(CausalLmPolicyImpl& policy, const fs::path& folder) {
  const SafetensorsCheckpoint weights(folder);
  const HfModelConfig& config = policy.config();
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : policy.named_parameters()) {
    const std::string& name = item.key();
    if (!is_hf_name(name)) continue;
    const auto found = weights.find(name);
    if (!found) {
      throw std::runtime_error(
          folder.string() + ": tensor '" + name +
          "' is missing from the weights (config.json: " + std::string(to_string(config.family)) +
          ", " + (config.tie_word_embeddings ? "tied" : "untied") + " embeddings, " +
          std::to_string(config.num_hidden_layers) + " layers)");
    }
    assign(item.value(), read_tensor(*found->entry, found->data()), found->file->path(), name,
           "config.json");
    used.insert(name);
  }
  for (const std::string& name : weights.names()) {
    if (used.contains(name)) continue;
    // Tolerated as transformers does: the tied head's copy, old rotary buffers.
    if (name == "lm_head.weight" && config.tie_word_embeddings) continue;
    if (name.size() > 20 && name.compare(name.size() - 20, 20, "rotary_emb.inv_freq") == 0) {
      continue;
    }
    throw std::runtime_error(folder.string() + ": tensor '" + name + "' is not part of a " +
                             std::string(to_string(config.family)) +
                             " model of this config.json (another architecture or shape?)");
  }
}

CausalLmPolicy load_causal_lm(const fs::path& folder, const CausalLmOptions& options,
                              std::uint64_t seed) {
  CausalLmPolicy policy(read_hf_config(folder / "config.json"), options);
  load_hf_weights(*policy, folder);
  policy->initialize_policy_parts(seed);
  if (fs::exists(folder / kPolicyTensorsFile)) {
    load_policy_tensors(*policy, folder / kPolicyTensorsFile);
  }
  return policy;
}

void write_hf_weights(const CausalLmPolicyImpl& policy, const fs::path& folder,
                      std::uint64_t max_shard_bytes) {
  const HfModelConfig& config = policy.config();
  std::vector<torch::Tensor> keep;
  const std::vector<TensorToWrite> weights =
      to_write(policy.hf_tensors(), file_dtype_of(config.torch_dtype), keep);
  // transformers refuses a safetensors file whose metadata lacks format = pt.
  write_safetensors_folder(folder, weights, {{"format", "pt"}}, max_shard_bytes);
  write_hf_config(config, folder / "config.json");
}

void save_causal_lm(const CausalLmPolicyImpl& policy, const fs::path& folder,
                    std::uint64_t max_shard_bytes, const fs::path& files_from) {
  fs::create_directories(folder);
  if (!files_from.empty() && !fs::equivalent(files_from, folder)) {
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                             "generation_config.json", "vocab.json", "merges.txt"}) {
      if (fs::exists(files_from / name)) {
        fs::copy_file(files_from / name, folder / name, fs::copy_options::overwrite_existing);
      }
    }
  }
  write_hf_weights(policy, folder, max_shard_bytes);
  std::vector<torch::Tensor> keep;
  const std::vector<TensorToWrite> own = to_write(policy.policy_tensors(), TensorDtype::f32, keep);
  write_safetensors(folder / kPolicyTensorsFile, own, {{"format", "pt"}});
}

HfModelConfig init_hf_model(const fs::path& config_file, const fs::path& tokenizer_file,
                            const fs::path& folder, std::uint64_t seed) {
  HfModelConfig config = read_hf_config(config_file);
  const env::BpeTokenizer tokenizer = env::BpeTokenizer::load(tokenizer_file);
  if (!tokenizer.eos()) {
    throw std::invalid_argument(tokenizer_file.string() +
                                ": the tokenizer has no eos token (a completion ends with one)");
  }
  if (config.vocab_size < static_cast<std::int64_t>(tokenizer.size())) {
    throw std::invalid_argument(
        config_file.string() + ": vocab_size = " + std::to_string(config.vocab_size) + ", but " +
        tokenizer_file.string() + " has " + std::to_string(tokenizer.size()) + " tokens");
  }
  // The special ids the folder's tokenizer will be read with (config.json's win, load_folder).
  config.eos_token_ids = {*tokenizer.eos()};
  config.bos_token_id = tokenizer.bos();
  config.pad_token_id = tokenizer.pad();
  // An id the tokenizer lacks is written as null: a reader would give Llama its bos 1 otherwise.
  nlohmann::json source = config.source_json.empty() ? nlohmann::json::object()
                                                     : nlohmann::json::parse(config.source_json);
  if (!config.bos_token_id) source["bos_token_id"] = nullptr;
  if (!config.pad_token_id) source["pad_token_id"] = nullptr;
  config.source_json = source.dump();
  CausalLmOptions options;
  options.dtype = config.torch_dtype == "float32" ? torch::kFloat : torch::kBFloat16;
  options.soft_prompt = false;  // the policy's own parts are the agent's, drawn from its seed
  CausalLmPolicy policy(config, options);
  policy->initialize_weights(seed);
  fs::create_directories(folder);
  write_hf_weights(*policy, folder, 0);
  fs::copy_file(tokenizer_file, folder / "tokenizer.json", fs::copy_options::overwrite_existing);
  return config;
}

namespace {

// A copy of `policy` with the same options but `frozen`; under LoRA the copy's base parameters
// are the source's tensors (set_ shares their storage: the base is frozen in both), the rest is
// copied.
CausalLmPolicy copy_policy(const CausalLmPolicyImpl& policy, bool frozen) {
  CausalLmOptions options = policy.options();
  options.frozen = frozen;
  if (frozen) options.gradient_checkpointing = false;
  CausalLmPolicy copy(policy.config(), options);
  torch::NoGradGuard no_grad;
  const bool share_base = options.lora_rank > 0;
  auto source = policy.named_parameters();
  for (auto& item : copy->named_parameters()) {
    const torch::Tensor& from = source[item.key()];
    if (share_base && is_hf_name(item.key())) {
      item.value().set_(from);
    } else {
      item.value().copy_(from);
    }
  }
  if (frozen) copy->eval();
  return copy;
}

}  // namespace

CausalLmPolicy frozen_copy(const CausalLmPolicyImpl& policy) {
  if (policy.options().lora_rank > 0) return copy_policy(policy, true);
  CausalLmOptions options = policy.options();
  options.frozen = true;
  options.gradient_checkpointing = false;
  CausalLmPolicy copy(policy.config(), options);
  torch::NoGradGuard no_grad;
  auto parameters = copy->named_parameters();
  for (const auto& [name, tensor] : policy.hf_tensors()) parameters[name].copy_(tensor);
  for (const auto& [name, tensor] : policy.policy_tensors()) parameters[name].copy_(tensor);
  copy->eval();
  return copy;
}

std::shared_ptr<PolicyNetworkImpl> CausalLmPolicyImpl::frozen_copy() const {
  return agents::frozen_copy(*this).ptr();
}

std::shared_ptr<PolicyNetworkImpl> CausalLmPolicyImpl::trainable_copy() const {
  CausalLmPolicy copy = copy_policy(*this, false);
  copy->train();
  return copy.ptr();
}

namespace {

// The archive key of a parameter: its name with '.' spelled "__" (an archive's keys are its own
// hierarchy's names).
std::string state_key(const std::string& name) {
  std::string key;
  for (const char c : name) key += c == '.' ? std::string("__") : std::string(1, c);
  return key;
}

// The parameters a checkpoint holds: all of them, or under LoRA all but the frozen base.
bool in_state(const CausalLmOptions& options, const std::string& name) {
  return options.lora_rank == 0 || !is_hf_name(name);
}

}  // namespace

void CausalLmPolicyImpl::save_state(torch::serialize::OutputArchive& archive) const {
  for (const auto& item : named_parameters()) {
    if (in_state(options_, item.key())) archive.write(state_key(item.key()), item.value());
  }
}

void CausalLmPolicyImpl::load_state(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    if (!in_state(options_, item.key())) continue;
    torch::Tensor value;
    if (!archive.try_read(state_key(item.key()), value)) {
      throw std::runtime_error("the checkpoint has no tensor '" + item.key() +
                               "' (saved with another LoRA rank, targets or prompt form?)");
    }
    if (value.sizes() != item.value().sizes()) {
      throw std::runtime_error("the checkpoint's tensor '" + item.key() + "' has shape " +
                               shape_text(value.sizes()) + ", this policy's " +
                               shape_text(item.value().sizes()));
    }
    item.value().copy_(value);
  }
}

}  // namespace sparserl::agents
